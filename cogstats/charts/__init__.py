"""Altair chart builders for cogstats' result frames.

Pure functions from polars frames (simulation runs and decisions, cell tables from
:func:`cogstats.sim.cli.simulate_spec` or a sweep, attribution rows, gate decisions) and
from a real :class:`~cogstats.ledger.Ledger` (fitness over runs, lesson timeline) to
altair charts.
They check their input columns, reshape for display and draw; they never estimate
anything (where a builder averages over replicates for display, its docstring says so).
Save a chart offline with ``chart.save("x.svg")`` / ``.png`` (vl-convert), or see
:func:`cogstats.reports.save_chart`.

Needs the ``notebook`` extra (altair, vl-convert-python).
"""

from cogstats.charts._frames import natural_key, require_columns
from cogstats.charts.admission import admission_roc, monitor_statistic, recall_by_defence
from cogstats.charts.audit import attribution_forest, gate_decisions, lesson_timeline
from cogstats.charts.comparison import (
    FIGURE_TITLES,
    HEADLINE_TITLES,
    LIFECYCLE_TITLES,
    benchmark_figures,
    rule_operating_characteristics,
)
from cogstats.charts.decisions import (
    VERDICT_COLORS,
    VERDICTS,
    decision_timeline,
    decisions_by_run,
)
from cogstats.charts.estimators import ACCURACY_METRICS, estimate_intervals, estimator_accuracy
from cogstats.charts.explorer import EXPLORER_METRICS, threshold_explorer
from cogstats.charts.fitness import fitness_curve
from cogstats.charts.oc import DEFAULT_OUTCOMES, REFERENCE_COLUMNS, operating_characteristics
from cogstats.charts.tradeoff import false_eviction_tradeoff, missed_poison_tradeoff, tradeoff

__all__ = [
    "ACCURACY_METRICS",
    "DEFAULT_OUTCOMES",
    "EXPLORER_METRICS",
    "FIGURE_TITLES",
    "HEADLINE_TITLES",
    "LIFECYCLE_TITLES",
    "REFERENCE_COLUMNS",
    "VERDICTS",
    "VERDICT_COLORS",
    "admission_roc",
    "attribution_forest",
    "benchmark_figures",
    "decision_timeline",
    "decisions_by_run",
    "estimate_intervals",
    "estimator_accuracy",
    "false_eviction_tradeoff",
    "fitness_curve",
    "gate_decisions",
    "lesson_timeline",
    "missed_poison_tradeoff",
    "monitor_statistic",
    "natural_key",
    "operating_characteristics",
    "recall_by_defence",
    "require_columns",
    "rule_operating_characteristics",
    "threshold_explorer",
    "tradeoff",
]
