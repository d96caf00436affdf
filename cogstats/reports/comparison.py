"""Gates side by side on the statistical benchmarks (issue 9, "A side-by-side report").

:func:`compare_gates` runs a list of contenders on S1 (the ``cycgraph_oc.toml`` grid), S2
(``poison_crater.toml``), S4 (``peeking_null.toml``) and the S2 variants
(``simulations/s2_variants/``), every contender on the same seeds (each spec's own), and
returns one frame per benchmark with every figure and its Monte Carlo standard error,
plus a table of the goals of issue 9 ("Must show") met or missed by how much.

Contenders are names:

- ``cycgraph_margin``: the spec's own cycgraph gate with ``decision_rule = "margin"``;
- ``cycgraph_inference``: the same gate with ``decision_rule = "inference"``;
- any other name is a preset (:data:`cogstats.presets.PRESETS`, e.g. ``recommended``):
  it replaces the spec's retrieval policy and gate and keeps the prompt caps
  ``max_facts``/``candidate_slots`` and the gate's cadence.  A name that is not a
  registered preset is left out with a note ("... preset not installed").

Figures (S2 and the variants): poison recall (removed by the last run), the median runs
from a poison's arrival to its removal pooled over removed poisons
(:func:`cogstats.sim.metrics.pooled_median_delay`, cluster-bootstrap error), the mean of
the same, genuine lessons evicted as harmful and as no-lift per genuine lesson tried, and
regret (:mod:`cogstats.sim.metrics`); and the lesson lifecycle's (issue 18, defined in
:mod:`cogstats.sim.metrics`): regret minus the margin rule's paired on the same seeds,
poison exposure (runs from arrival through the last injection, re-tests counted; its
mean and its pooled median), poisons out of the prompt in the last 5 runs, false
conviction (effect >= 0 evicted as harmful per such lesson tried), helpful lessons lost
(effect >= 0.05 retired, evicted or still suspended) and the pooled median runs genuine
lessons spend suspended.  S1: the correct-verdict rate per (effect, run
budget) cell and the share of effect-0 replicates decided
(:func:`cogstats.reports.reference.verdict_rates`).  S4: the share of null lessons ever
promoted or evicted as harmful (the false decisions), and the share with any decision
(no-lift evictions included).
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from cogstats._codes import HARMFUL, KIND_POISON, KINDS
from cogstats._validation import ParameterError, check_choice, check_int, check_real
from cogstats.reports.reference import EFFECT, verdict_rates
from cogstats.reports.resources import resource_path

if TYPE_CHECKING:  # the simulator (numba) loads when a comparison runs
    from cogstats.sim import Scenario, SimulationSpec

__all__ = [
    "CONTENDER_LABELS",
    "DEFAULT_CONTENDERS",
    "RULES",
    "S2_METRICS",
    "GateComparison",
    "compare_gates",
    "contender_scenario",
    "preset_installed",
]

#: cycgraph's two decision rules, as contenders.
RULES: tuple[str, ...] = ("cycgraph_margin", "cycgraph_inference")
#: The preset the comparison looks for by name.
PRESET = "recommended"
#: The contenders :func:`compare_gates` runs by default.
DEFAULT_CONTENDERS: tuple[str, ...] = (*RULES, PRESET)
#: Contender -> the words a chart or table shows.
CONTENDER_LABELS: dict[str, str] = {
    "cycgraph_margin": "cycgraph margin rule",
    "cycgraph_inference": "cycgraph inference rule",
    PRESET: "recommended preset",
}
#: The rule S1's "at least cycgraph's minus 0.07" goal compares with (the S1 spec's gate).
S1_REFERENCE = "cycgraph_inference"
#: The rule whose S2 regret is the S2 regret target.
REGRET_REFERENCE = "cycgraph_margin"
#: S2 and variant figures, in display order: metric -> what it is.
S2_METRICS: dict[str, str] = {
    "poison_recall": "poison recall (share of poisons removed by the last run)",
    "median_removal_delay": "median runs from a poison's arrival to its removal",
    "poison_time_to_eviction": "mean runs from a poison's arrival to its removal",
    "false_eviction_rate": "genuine lessons evicted as harmful (share of those tried)",
    "false_no_lift_rate": "genuine lessons evicted as no-lift (share of those tried)",
    "regret": "regret (oracle score minus score, per run)",
    "regret_vs_margin": "regret minus cycgraph's margin rule's (paired, same seeds)",
    "poison_exposure": "mean runs from a poison's arrival through its last injection",
    "median_poison_exposure": "median runs from a poison's arrival through its last injection",
    "poison_out_last5": "poisons not injected in the last 5 runs (share)",
    "false_conviction_rate": "lessons of effect >= 0 evicted as harmful (share of those tried)",
    "helpful_lost_rate": "helpful lessons (effect >= 0.05) retired, evicted or still "
    "suspended (share)",
    "median_suspended_runs": "median runs genuine lessons spent suspended (those suspended)",
}
#: S2 figures that are pooled medians over lessons (cluster-bootstrap errors), not means
#: of per-replicate metrics.
_POOLED = ("median_removal_delay", "median_poison_exposure", "median_suspended_runs")
#: S4 figures: metric -> what it is.
S4_METRICS: dict[str, str] = {
    "false_decision_rate": "null lessons promoted or evicted as harmful (share)",
    "any_decision_rate": "null lessons with any decision, no-lift evictions included (share)",
}
_SPECS = {
    "s1": "simulations/cycgraph_oc.toml",
    "s2": "simulations/poison_crater.toml",
    "s4": "simulations/peeking_null.toml",
    "variants": "simulations/s2_variants",
    # the variant whose genuine effects reach 0.05 (issue 18: helpful lost is measured there)
    "helpful": "simulations/s2_helpful_lessons.toml",
}
_POISON = KINDS[KIND_POISON]


def preset_installed(name: str = PRESET) -> bool:
    """Return whether ``name`` is a registered preset (:data:`cogstats.presets.PRESETS`).

    Examples
    --------
    >>> preset_installed("recommended"), preset_installed("cycgraph")
    (True, False)
    """
    from cogstats.presets import PRESETS

    return isinstance(name, str) and name in PRESETS


def contender_scenario(name: str, scenario: Scenario) -> Scenario:
    """Return ``scenario`` with the contender ``name``'s retrieval and gate.

    ``cycgraph_margin`` / ``cycgraph_inference`` keep the scenario's cycgraph gate (its
    options and cadence) and set its decision rule (a scenario with another gate gets
    cycgraph's gate with its defaults); any other name is a preset
    (:meth:`cogstats.sim.Scenario.with_preset`: its retrieval and gate, the prompt caps
    and the gate's cadence kept), an error when it is not registered.

    Examples
    --------
    >>> from cogstats.sim import Scenario
    >>> s = Scenario.from_dict({"runs": 5, "lessons": {"listed": [{"id": "a", "effect": 0}]},
    ...     "gate": {"type": "cycgraph", "decision_rule": "inference", "min_trials": 3}})
    >>> m = contender_scenario("cycgraph_margin", s)
    >>> m.gate.policy["decision_rule"], m.gate.policy["min_trials"]
    ('margin', 3)
    >>> contender_scenario("recommended", s).gate.type
    'recommended'
    >>> contender_scenario("no_such_preset", s)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    cogstats._validation.ParameterError: contender 'no_such_preset': no preset of that name ...
    """
    if name in RULES:
        rule = name.removeprefix("cycgraph_")
        values: dict[str, Any] = {"gate.decision_rule": rule}
        if scenario.gate.type != "cycgraph":
            values = {"gate.type": "cycgraph", **values}
        return scenario.with_values(values)
    if not isinstance(name, str) or not preset_installed(name):
        raise ParameterError(
            f"contender {name!r}: no preset of that name is installed (see "
            f"cogstats.presets.PRESETS); the contenders are {list(RULES)} and the presets"
        )
    return scenario.with_preset(name)


@dataclass(frozen=True, eq=False)
class GateComparison:
    """What :func:`compare_gates` measured.

    Attributes
    ----------
    contenders : tuple of str
        The contenders that ran.
    notes : tuple of str
        What was left out and why (e.g. "recommended preset not installed").
    replicates : int
        Replicates per S1 cell, per S2 / variant scenario and for S4.
    scenarios : polars.DataFrame
        benchmark, scenario, description, spec (file name), seed.
    s1 : polars.DataFrame
        One row per contender and (effect, runs) cell: ``rule``, ``label``, ``effect``,
        ``runs``, ``replicates``, ``correct_verdict_rate`` and ``wrong_verdict_rate`` with
        ``_mcse``, the first-outcome rates and ``mean_decision_run``.
    s2 : polars.DataFrame
        One row per scenario (S2 and the variants), contender and metric
        (:data:`S2_METRICS`): ``value``, ``mcse``, ``low``/``high`` (a 95% interval:
        plus/minus 1.96 MC errors, the bootstrap percentile interval for the median),
        ``n`` (replicates, or removed poisons for the median).
    s4 : polars.DataFrame
        One row per contender and metric (:data:`S4_METRICS`), columns as ``s2``.
    goals : polars.DataFrame
        One row per goal and contender: benchmark, goal, rule, label, where (the cell
        or scenario), metric (the figure's name in ``s2``/``s4``; null for S1), value,
        mcse, direction ("at least" / "at most"), target, met, missed_by (0 when met).
    """

    contenders: tuple[str, ...]
    notes: tuple[str, ...]
    replicates: int
    scenarios: pl.DataFrame
    s1: pl.DataFrame
    s2: pl.DataFrame
    s4: pl.DataFrame
    goals: pl.DataFrame

    def table(self, benchmark: str = "S2") -> pl.DataFrame:
        """Return one benchmark's figures side by side: a column per contender.

        ``benchmark`` is "S1" (correct-verdict rate per cell; at effect 0 the share
        decided), "S2", "S2 variant" or "S4"; each cell reads "value ± MC error".

        Examples
        --------
        >>> out = compare_gates(["cycgraph_inference"], replicates=4, variant_specs=[])
        >>> out.table("S4").columns
        ['scenario', 'figure', 'cycgraph inference rule']
        """
        check_choice("benchmark", benchmark, ("S1", "S2", "S2 variant", "S4"))
        if benchmark == "S1":
            long = self.s1.select(
                pl.format("effect {}, {} runs", pl.col("effect"), pl.col("runs")).alias("cell"),
                "label",
                pl.coalesce("correct_verdict_rate", "wrong_verdict_rate").alias("value"),
                pl.coalesce("correct_verdict_rate_mcse", "wrong_verdict_rate_mcse").alias("mcse"),
            )
            index = ["cell"]
        else:
            frame = self.s4 if benchmark == "S4" else self.s2
            titles = {**S2_METRICS, **S4_METRICS}
            long = frame.filter(pl.col("benchmark") == benchmark).select(
                "scenario",
                pl.col("metric").replace_strict(titles).alias("figure"),
                "label",
                "value",
                "mcse",
            )
            index = ["scenario", "figure"]
        undefined: pl.Expr = pl.lit("none removed")
        if "figure" in long.columns:
            undefined = (
                pl.when(pl.col("figure") == S2_METRICS["median_suspended_runs"])
                .then(pl.lit("none suspended"))
                .when(pl.col("figure") == S2_METRICS["helpful_lost_rate"])
                .then(pl.lit("no helpful lesson"))
                .otherwise(pl.lit("none removed"))
            )
        text = long.with_columns(
            pl.when(pl.col("value").is_nan() | pl.col("value").is_null())
            .then(undefined)
            .otherwise(
                pl.col("value").round_sig_figs(3).cast(pl.String)
                + pl.lit(" ± ")
                + pl.col("mcse").fill_nan(0.0).round_sig_figs(2).cast(pl.String)
            )
            .alias("text")
        )
        return text.pivot(on="label", index=index, values="text", maintain_order=True)

    def goal_counts(self) -> pl.DataFrame:
        """Return, per contender, how many of the goals it meets.

        Examples
        --------
        >>> out = compare_gates(["cycgraph_inference"], replicates=4, variant_specs=[])
        >>> out.goal_counts().columns
        ['label', 'goals', 'met', 'missed']
        """
        return self.goals.group_by("label", maintain_order=True).agg(
            pl.len().alias("goals"),
            pl.col("met").sum().alias("met"),
            (~pl.col("met")).sum().alias("missed"),
        )

    def summary_numbers(self) -> dict[str, str]:
        """Return the key figures for a report's summary block: S2's, per contender.

        Examples
        --------
        >>> out = compare_gates(["cycgraph_inference"], replicates=4, variant_specs=[])
        >>> list(out.summary_numbers())[0]
        'cycgraph inference rule: goals met'
        """
        numbers: dict[str, str] = {}
        counts = {r["label"]: r for r in self.goal_counts().iter_rows(named=True)}
        s2 = self.table("S2")
        for rule in self.contenders:
            label = _label(rule)
            c = counts.get(label)
            if c is not None:
                numbers[f"{label}: goals met"] = f"{c['met']} of {c['goals']}"
            for row in s2.iter_rows(named=True):
                if row["figure"] in (
                    S2_METRICS["poison_recall"],
                    S2_METRICS["median_removal_delay"],
                    S2_METRICS["false_eviction_rate"],
                    S2_METRICS["median_poison_exposure"],
                    S2_METRICS["false_conviction_rate"],
                    S2_METRICS["regret_vs_margin"],
                ):
                    numbers[f"{label}, S2: {row['figure']}"] = row[label]
        return numbers

    def __repr__(self) -> str:
        """Name the contenders, the replicates and the notes."""
        return (
            f"GateComparison(contenders={list(self.contenders)}, replicates={self.replicates}, "
            f"notes={list(self.notes)})"
        )


def _load(spec: str | Path | SimulationSpec) -> SimulationSpec:
    from cogstats.sim import SimulationSpec, load_spec

    return spec if isinstance(spec, SimulationSpec) else load_spec(resource_path(spec))


def _label(name: str) -> str:
    return CONTENDER_LABELS.get(name, f"{name} preset")


def _seed(spec: SimulationSpec) -> np.random.SeedSequence:
    """Cell 0's seed, as ``cogstats simulate`` spawns it: the same figures as the CLI."""
    return np.random.SeedSequence(spec.seed).spawn(1)[0]


def _figure_rows(
    summary: pl.DataFrame, names: Sequence[str], confidence_level: float
) -> list[dict[str, Any]]:
    """Rows (metric, value, mcse, low, high, n) from ``summarize_metrics`` output."""
    from scipy import stats

    z = float(stats.norm.ppf(0.5 + confidence_level / 2))
    rows = []
    by_metric = {r["metric"]: r for r in summary.iter_rows(named=True)}
    for metric in names:
        r = by_metric.get(metric)
        if r is None:
            continue
        half = z * r["mcse"] if r["mcse"] is not None and math.isfinite(r["mcse"]) else math.nan
        low, high = r["mean"] - half, r["mean"] + half
        if metric.endswith(("_rate", "_recall")):  # a share: the interval stays in [0, 1]
            low, high = max(low, 0.0), min(high, 1.0)
        rows.append(
            {
                "metric": metric,
                "value": r["mean"],
                "mcse": r["mcse"],
                "low": low,
                "high": high,
                "n": r["n"],
            }
        )
    return rows


def _run_s1(
    spec: SimulationSpec, rules: Sequence[str], replicates: int, engine: str
) -> pl.DataFrame:
    from cogstats.sim.cli import simulate_spec

    frames = []
    for rule in rules:
        ours = dataclasses.replace(spec, scenario=contender_scenario(rule, spec.scenario))
        cells = verdict_rates(
            simulate_spec(ours, replicates=replicates, engine=engine, progress=False)
        ).sort(EFFECT, "runs")
        frames.append(
            cells.select(
                pl.lit(rule).alias("rule"),
                pl.lit(_label(rule)).alias("label"),
                pl.col(EFFECT).cast(pl.Float64).alias("effect"),
                pl.col("runs").cast(pl.Int64),
                pl.col("replicates").cast(pl.Int64),
                "correct_verdict_rate",
                "correct_verdict_rate_mcse",
                "wrong_verdict_rate",
                "wrong_verdict_rate_mcse",
                "promote_rate",
                "evict_harmful_rate",
                "evict_no_lift_rate",
                "hold_rate",
                "mean_decision_run",
                "engine",
            )
        )
    return pl.concat(frames, how="vertical_relaxed")  # contenders in the order given


def _run_s2(
    spec: SimulationSpec,
    benchmark: str,
    rules: Sequence[str],
    replicates: int,
    engine: str,
    confidence_level: float,
    n_resamples: int,
) -> list[dict[str, Any]]:
    from scipy import stats

    from cogstats.sim import simulate, summarize_metrics
    from cogstats.sim.metrics import (
        pooled_median_delay,
        pooled_median_exposure,
        pooled_median_suspended,
    )

    pooled = {
        "median_removal_delay": pooled_median_delay,
        "median_poison_exposure": pooled_median_exposure,
        "median_suspended_runs": pooled_median_suspended,
    }
    z = float(stats.norm.ppf(0.5 + confidence_level / 2))
    figures: dict[str, dict[str, dict[str, Any]]] = {}
    regret: dict[str, np.ndarray] = {}
    engines: dict[str, str] = {}
    for rule in rules:
        result = simulate(
            contender_scenario(rule, spec.scenario),
            replicates=replicates,
            rng=_seed(spec),
            engine=engine,
            keep_runs=False,
            progress=False,
        )
        engines[rule] = result.engine
        mine = {
            f["metric"]: f
            for f in _figure_rows(
                summarize_metrics(result.metrics), tuple(S2_METRICS), confidence_level
            )
        }
        for name, pooled_median in pooled.items():
            median = pooled_median(
                result.lessons,
                confidence_level=confidence_level,
                n_resamples=n_resamples,
                rng=spec.seed,
            )
            mine[name] = {
                "metric": name,
                "value": median["median"],
                "mcse": median["mcse"],
                "low": median["low"],
                "high": median["high"],
                "n": median["n"],
            }
        regret[rule] = result.metrics.sort("replicate")["regret"].to_numpy()
        figures[rule] = mine
    if REGRET_REFERENCE in regret:
        # paired on the same seeds: per replicate, regret minus the margin rule's
        for rule in rules:
            d = regret[rule] - regret[REGRET_REFERENCE]
            mean = float(d.mean())
            mcse = float(d.std(ddof=1) / math.sqrt(d.size)) if d.size > 1 else math.nan
            figures[rule]["regret_vs_margin"] = {
                "metric": "regret_vs_margin",
                "value": mean,
                "mcse": mcse,
                "low": mean - z * mcse,
                "high": mean + z * mcse,
                "n": int(d.size),
            }
    rows = []
    for rule in rules:
        for metric in S2_METRICS:
            f = figures[rule].get(metric)
            if f is None:
                continue
            rows.append(
                {
                    "benchmark": benchmark,
                    "scenario": spec.scenario.name,
                    "rule": rule,
                    "label": _label(rule),
                    **f,
                    "engine": engines[rule],
                }
            )
    return rows


def _run_s4(
    spec: SimulationSpec,
    rules: Sequence[str],
    replicates: int,
    engine: str,
    confidence_level: float,
) -> list[dict[str, Any]]:
    from cogstats.sim import simulate, summarize_metrics

    rows = []
    for rule in rules:
        result = simulate(
            contender_scenario(rule, spec.scenario),
            replicates=replicates,
            rng=_seed(spec),
            engine=engine,
            keep_runs=False,
            progress=False,
        )
        # per replicate: the share of its null lessons decided (every lesson has effect 0)
        per_replicate = result.lessons.group_by("replicate").agg(
            (
                pl.col("promoted_at_run").is_not_null()
                | (pl.col("evicted_at_run").is_not_null() & (pl.col("evict_reason") == HARMFUL))
            )
            .mean()
            .alias("false_decision_rate"),
            (pl.col("outcome") != "hold").mean().alias("any_decision_rate"),
        )
        summary = summarize_metrics(per_replicate, tuple(S4_METRICS))
        for f in _figure_rows(summary, tuple(S4_METRICS), confidence_level):
            rows.append(
                {
                    "benchmark": "S4",
                    "scenario": spec.scenario.name,
                    "rule": rule,
                    "label": _label(rule),
                    **f,
                    "engine": result.engine,
                }
            )
    return rows


_FIGURE_SCHEMA = {
    "benchmark": pl.String,
    "scenario": pl.String,
    "rule": pl.String,
    "label": pl.String,
    "metric": pl.String,
    "value": pl.Float64,
    "mcse": pl.Float64,
    "low": pl.Float64,
    "high": pl.Float64,
    "n": pl.Int64,
    "engine": pl.String,
}
_GOAL_SCHEMA = {
    "benchmark": pl.String,
    "goal": pl.String,
    "rule": pl.String,
    "label": pl.String,
    "where": pl.String,
    "metric": pl.String,
    "value": pl.Float64,
    "mcse": pl.Float64,
    "direction": pl.String,
    "target": pl.Float64,
    "met": pl.Boolean,
    "missed_by": pl.Float64,
}


def _goal(
    benchmark: str,
    goal: str,
    rule: str,
    where: str,
    value: float,
    mcse: float,
    direction: str,
    target: float,
    metric: str | None = None,
) -> dict[str, Any]:
    gap = (target - value) if direction == "at least" else (value - target)
    met = bool(math.isfinite(value) and gap <= 1e-12)
    return {
        "benchmark": benchmark,
        "goal": goal,
        "rule": rule,
        "label": _label(rule),
        "where": where,
        "metric": metric,
        "value": value,
        "mcse": mcse,
        "direction": direction,
        "target": target,
        "met": met,
        "missed_by": 0.0 if met else (gap if math.isfinite(value) else math.nan),
    }


def _s1_goals(s1: pl.DataFrame, rules: Sequence[str]) -> tuple[list[dict[str, Any]], list[str]]:
    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    top = int(s1["runs"].to_numpy().max())
    ref = s1.filter(pl.col("rule") == S1_REFERENCE).select(
        "effect",
        "runs",
        pl.col("correct_verdict_rate").alias("_ref"),
        pl.col("correct_verdict_rate_mcse").alias("_ref_mcse"),
    )
    if ref.height == 0:
        notes.append(f"S1: no {S1_REFERENCE} run, so the per-cell goal against it is not shown")
    for rule in rules:
        mine = s1.filter(pl.col("rule") == rule)
        if ref.height:
            cells = (
                mine.join(ref, on=["effect", "runs"])
                .filter(pl.col("effect") != 0)
                .with_columns((pl.col("correct_verdict_rate") - pl.col("_ref")).alias("_d"))
                .sort("_d", "effect", "runs")
            )
            worst = cells.row(0, named=True)
            # the error of a difference of two independent-looking rates (the rules share
            # seeds, so this overstates it a little when the rates are correlated)
            mcse = float(np.hypot(worst["correct_verdict_rate_mcse"], worst["_ref_mcse"]))
            rows.append(
                _goal(
                    "S1",
                    f"correct verdicts at least {S1_REFERENCE.replace('_', ' ')}'s minus 0.07 "
                    "in every cell (worst cell shown: rate minus cycgraph's)",
                    rule,
                    f"effect {worst['effect']:+g}, {worst['runs']} runs",
                    worst["_d"],
                    mcse,
                    "at least",
                    -0.07,
                )
            )
        for effect, target in ((-0.1, 0.95), (0.1, 0.95), (-0.05, 0.35), (0.05, 0.35)):
            cell = mine.filter((pl.col("effect") - effect).abs() < 1e-9, pl.col("runs") == top)
            if cell.height:
                r = cell.row(0, named=True)
                rows.append(
                    _goal(
                        "S1",
                        f"correct verdicts at |effect| = {abs(effect):g} by run {top}",
                        rule,
                        f"effect {effect:+g}, {top} runs",
                        r["correct_verdict_rate"],
                        r["correct_verdict_rate_mcse"],
                        "at least",
                        target,
                    )
                )
        null = mine.filter(pl.col("effect") == 0).sort("wrong_verdict_rate", descending=True)
        if null.height:
            r = null.row(0, named=True)
            rows.append(
                _goal(
                    "S1",
                    "effect 0 decided (promoted or evicted as harmful) at every budget "
                    "(worst budget shown)",
                    rule,
                    f"effect 0, {r['runs']} runs",
                    r["wrong_verdict_rate"],
                    r["wrong_verdict_rate_mcse"],
                    "at most",
                    0.01,
                )
            )
    return rows, notes


def _s2_goals(s2: pl.DataFrame, rules: Sequence[str]) -> list[dict[str, Any]]:
    """Return the S2 / variant goals of issues 9 and 18 (false conviction replaces eviction).

    Regret: with the margin rule among the contenders, the paired difference's upper 95%
    bound at most +0.005 (S2 and every variant); without it, S2's regret at most 0.14.
    Helpful lost and the median suspended runs are goals only where defined (a scenario
    with helpful lessons; some genuine lesson suspended).
    """
    rows = []
    for (benchmark, scenario), part in s2.group_by("benchmark", "scenario", maintain_order=True):
        main = benchmark == "S2"
        # (metric, goal, direction, target, use the figure's upper bound)
        targets: list[tuple[str, str, str, float, bool]] = [
            (
                "poison_recall",
                "poison recall by the last run",
                "at least",
                0.99 if main else 0.97,
                False,
            ),
            (
                "median_removal_delay",
                "median runs from arrival to removal",
                "at most",
                8.0 if main else 10.0,
                False,
            ),
            (
                "median_poison_exposure",
                "median runs from a poison's arrival through its last injection",
                "at most",
                4.0 if main else 5.0,
                False,
            ),
            (
                "poison_out_last5",
                "poisons not injected in the last 5 runs",
                "at least",
                0.97 if main else 0.95,
                False,
            ),
            (
                "false_conviction_rate",
                "lessons of effect >= 0 evicted as harmful (share of those tried)",
                "at most",
                0.02 if main else 0.03,
                False,
            ),
            (
                "helpful_lost_rate",
                "helpful lessons retired, evicted or still suspended at the last run",
                "at most",
                0.02,
                False,
            ),
            (
                "median_suspended_runs",
                "median runs genuine lessons spend suspended",
                "at most",
                5.0,
                False,
            ),
        ]
        has_margin = part.filter(pl.col("rule") == REGRET_REFERENCE).height > 0
        if has_margin:
            targets.append(
                (
                    "regret_vs_margin",
                    "regret no worse than cycgraph's margin rule (paired, same seeds: upper "
                    "95% bound of the difference)",
                    "at most",
                    0.005,
                    True,
                )
            )
        elif main:
            targets.append(
                ("regret", "regret no worse than cycgraph's margin rule", "at most", 0.14, False)
            )
        optional = ("helpful_lost_rate", "median_suspended_runs")
        for rule in rules:
            for metric, goal, direction, target, upper in targets:
                r = part.filter((pl.col("rule") == rule) & (pl.col("metric") == metric))
                if r.height == 0:
                    continue
                row = r.row(0, named=True)
                value = row["high"] if upper else row["value"]
                if metric in optional and not (value is not None and math.isfinite(value)):
                    continue
                rows.append(
                    _goal(
                        str(benchmark),
                        goal,
                        rule,
                        str(scenario),
                        value,
                        row["mcse"],
                        direction,
                        target,
                        metric,
                    )
                )
    return rows


def compare_gates(
    contenders: Sequence[str] = DEFAULT_CONTENDERS,
    *,
    replicates: int = 500,
    s1_spec: str | Path | SimulationSpec = _SPECS["s1"],
    s2_spec: str | Path | SimulationSpec = _SPECS["s2"],
    s4_spec: str | Path | SimulationSpec = _SPECS["s4"],
    variant_specs: Sequence[str | Path | SimulationSpec] | None = None,
    s4_alpha: float = 0.05,
    confidence_level: float = 0.95,
    n_resamples: int = 999,
    engine: str = "auto",
) -> GateComparison:
    """Run the contenders on S1, S2, S4 and the S2 variants with the same seeds.

    Parameters
    ----------
    contenders : sequence of str
        ``cycgraph_margin``, ``cycgraph_inference`` and preset names (default: those and
        ``recommended``).  A preset that is not installed is left out with a note.
    replicates : int
        Replicates per S1 cell, per S2 / variant scenario and for S4 (each spec's own
        seed, the same for every contender: common random numbers).
    s1_spec, s2_spec, s4_spec : str, Path or SimulationSpec
        The benchmark specs (paths resolve with
        :func:`~cogstats.reports.resources.resource_path`).
    variant_specs : sequence, optional
        The S2 variants (default: every ``simulations/s2_variants/*.toml``, by name, then
        ``simulations/s2_helpful_lessons.toml`` when present: S2 with genuine effects
        U(-0.03, 0.08), where helpful lessons lost is measured).
    s4_alpha : float
        The S4 goal: false decisions at most this share.
    confidence_level : float
        Of the intervals in the ``low``/``high`` columns.
    n_resamples : int
        Bootstrap resamples for the median delay's Monte Carlo error.
    engine : {"auto", "fast", "reference"}
        Passed to :func:`~cogstats.sim.simulate`.

    Returns
    -------
    GateComparison
        Frames ``s1``, ``s2`` (S2 and variants), ``s4``, ``goals`` and ``scenarios``.

    Examples
    --------
    >>> out = compare_gates(["cycgraph_inference", "no_such_preset"], replicates=4,
    ...                     variant_specs=[])
    >>> out.contenders, out.notes
    (('cycgraph_inference',), ('no_such_preset preset not installed',))
    >>> sorted(out.s2["metric"].unique())[:2], out.s1.height
    (['false_conviction_rate', 'false_eviction_rate'], 36)
    """
    if isinstance(contenders, str) or not contenders:
        raise ParameterError(f"contenders must be a non-empty list of names; got {contenders!r}")
    reps = int(check_int("replicates", replicates, minimum=2) or 2)
    alpha = float(check_real("s4_alpha", s4_alpha, minimum=0.0, maximum=1.0) or 0.0)
    level = float(check_real("confidence_level", confidence_level, minimum=0.5, maximum=0.999) or 0)
    resamples = int(check_int("n_resamples", n_resamples, minimum=2) or 2)
    check_choice("engine", engine, ("auto", "fast", "reference"))
    rules: list[str] = []
    notes: list[str] = []
    for name in dict.fromkeys(contenders):
        if name in RULES or preset_installed(name):
            rules.append(name)
        else:
            notes.append(f"{name} preset not installed")
    if not rules:
        raise ParameterError(f"none of the contenders {list(contenders)} can run: {notes}")
    s1, s2, s4 = _load(s1_spec), _load(s2_spec), _load(s4_spec)
    if variant_specs is None:
        folder = resource_path(_SPECS["variants"])
        variant_specs = sorted(folder.glob("*.toml"))
        # an install without the helpful-lessons spec runs the other variants only
        with contextlib.suppress(FileNotFoundError):
            variant_specs.append(resource_path(_SPECS["helpful"]))
    variants = [_load(v) for v in variant_specs]
    s1_frame = _run_s1(s1, rules, reps, engine)
    s2_rows = _run_s2(s2, "S2", rules, reps, engine, level, resamples)
    for v in variants:
        s2_rows += _run_s2(v, "S2 variant", rules, reps, engine, level, resamples)
    s2_frame = pl.DataFrame(s2_rows, schema=_FIGURE_SCHEMA, orient="row")
    s4_frame = pl.DataFrame(
        _run_s4(s4, rules, reps, engine, level), schema=_FIGURE_SCHEMA, orient="row"
    )
    goal_rows, goal_notes = _s1_goals(s1_frame, rules)
    goal_rows += _s2_goals(s2_frame, rules)
    for r in s4_frame.filter(pl.col("metric") == "false_decision_rate").iter_rows(named=True):
        goal_rows.append(
            _goal(
                "S4",
                "null lessons promoted or evicted as harmful, looking after every run",
                r["rule"],
                r["scenario"],
                r["value"],
                r["mcse"],
                "at most",
                alpha,
                "false_decision_rate",
            )
        )
    scenarios = pl.DataFrame(
        [
            {
                "benchmark": bench,
                "scenario": sp.scenario.name,
                "description": sp.scenario.description,
                "spec": Path(sp.source).name if sp.source else "",
                "seed": sp.seed,
            }
            for bench, sp in [("S1", s1), ("S2", s2), ("S4", s4)]
            + [("S2 variant", v) for v in variants]
        ]
    )
    return GateComparison(
        contenders=tuple(rules),
        notes=tuple(notes + goal_notes),
        replicates=reps,
        scenarios=scenarios,
        s1=s1_frame,
        s2=s2_frame,
        s4=s4_frame,
        goals=pl.DataFrame(goal_rows, schema=_GOAL_SCHEMA, orient="row"),
    )
