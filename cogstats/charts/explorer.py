"""An interactive threshold explorer over a precomputed sweep.

Sliders and dropdowns pick a cell of the grid; the charts show where it sits among all
cells.

The widgets are Vega-Lite parameters bound to HTML inputs (altair ``alt.param(bind=...)``):
moving one re-filters the precomputed table in the browser, so the exported page needs no
kernel.  Nothing is estimated here: the metrics and their Monte Carlo errors are the
sweep's.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import altair as alt
import polars as pl

from cogstats._validation import ParameterError, check_int
from cogstats.charts._frames import require_columns

__all__ = ["EXPLORER_METRICS", "threshold_explorer"]

#: Metric column -> what it is, in words with units (the panels of the explorer).
EXPLORER_METRICS: dict[str, str] = {
    "false_eviction_rate": "false eviction (share of genuine lessons tried)",
    "missed_poison": "missed poison (share of poisons still live at the end)",
    "time_to_verdict": "time to verdict (runs from arrival to first decision)",
}
_SHORT = {
    "false_eviction_rate": "false eviction",
    "missed_poison": "missed poison",
    "time_to_verdict": "time to verdict (runs)",
    "poison_time_to_eviction": "time to evict poison (runs)",
    "poison_recall": "poison recall",
    "regret": "regret",
}
_LABELS = {
    "gate.min_trials": "min trials",
    "gate.decision_rule": "decision rule",
    "gate.promote_margin": "promote margin",
    "gate.evict_margin": "evict margin",
    "retrieval.rest_after_trials": "rest after trials",
    "gate.max_trials": "max trials",
}


def _label(axis: str) -> str:
    return _LABELS.get(axis, axis.split(".")[-1].replace("_", " "))


def _free_axes(table: pl.DataFrame, axes: Sequence[str]) -> list[str]:
    """Axes that vary on their own (an axis zipped to an earlier one gets no widget)."""
    free: list[str] = []
    for axis in axes:
        if table[axis].n_unique() < 2:
            continue
        tied = any(table.select(a, axis).unique().height == table[a].n_unique() for a in free)
        if not tied:
            free.append(axis)
    return free


def _binding(values: list[Any], label: str) -> Any:
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
        steps = {round(b - a, 12) for a, b in itertools.pairwise(values)}
        if len(steps) == 1 and all(float(v).is_integer() for v in values):
            return alt.binding_range(
                min=values[0], max=values[-1], step=next(iter(steps)), name=f"{label} "
            )
    return alt.binding_select(options=values, name=f"{label} ")


def threshold_explorer(
    table: pl.DataFrame,
    *,
    axes: Sequence[str],
    metrics: Sequence[str] = tuple(EXPLORER_METRICS),
    width: int = 300,
    height: int = 220,
) -> alt.HConcatChart:
    """Widgets for the grid axes; each metric against time to verdict, the chosen cell red.

    Parameters
    ----------
    table : polars.DataFrame
        A sweep's cell table (one row per cell: the ``axes`` columns and the
        ``metrics``; ``missed_poison`` as :func:`cogstats.sweep.with_derived` adds it).
    axes : sequence of str
        Grid columns.  Each that varies on its own gets a widget: a slider for evenly
        spaced integers, a dropdown otherwise; an axis zipped to an earlier one (the
        evict margin moving with the promote margin) follows it.
    metrics : sequence of str
        Metric columns; the first two are drawn against the last (one panel each), and
        a table lists every metric of the chosen cell.
    width, height : int
        Size of one panel in pixels.

    Returns
    -------
    altair.HConcatChart
        Render it with :func:`cogstats.reports.interactive_chart` (the JavaScript is
        inlined, so the page works offline).

    Examples
    --------
    >>> import polars as pl
    >>> table = pl.DataFrame({
    ...     "gate.min_trials": [2, 2, 4, 4], "gate.decision_rule": ["margin", "inference"] * 2,
    ...     "false_eviction_rate": [0.2, 0.05, 0.1, 0.02], "missed_poison": [0.0, 0.3, 0.01, 0.4],
    ...     "time_to_verdict": [3.0, 9.0, 5.0, 12.0],
    ... })
    >>> chart = threshold_explorer(table, axes=["gate.min_trials", "gate.decision_rule"])
    >>> sorted(p.name for p in chart.params)
    ['axis_0', 'axis_1']
    >>> len(chart.data)
    4
    """
    check_int("width", width, minimum=1)
    check_int("height", height, minimum=1)
    metrics = list(metrics)
    if len(metrics) < 2 or not all(isinstance(m, str) for m in metrics):
        raise ParameterError(f"metrics must name at least two metric columns; got {metrics!r}")
    axes = list(axes)
    require_columns(table, [*axes, *metrics], builder="threshold_explorer", argument="table")
    free = _free_axes(table, axes)
    if not free:
        raise ParameterError("threshold_explorer: no grid axis varies in table")
    names = {a: f"a{i}" for i, a in enumerate(axes)}
    short = {m: _SHORT.get(m, m.replace("_", " ").replace(".", " ")) for m in metrics}
    data = table.select(
        *(pl.col(a).alias(names[a]) for a in axes),
        *(pl.col(m).cast(pl.Float64).fill_nan(None).alias(short[m]) for m in metrics),
    )
    params = []
    tests = []
    first = table.sort(free).row(0, named=True)
    for i, axis in enumerate(free):
        values = sorted(table[axis].unique().to_list())
        param = alt.param(name=f"axis_{i}", value=first[axis], bind=_binding(values, _label(axis)))
        params.append(param)
        field = f"datum.{names[axis]}"
        if table[axis].dtype.is_float():
            tests.append(f"abs({field} - axis_{i}) < 1e-9")
        else:
            tests.append(f"{field} == axis_{i}")
    chosen = " && ".join(tests)
    x_metric = metrics[-1]
    tooltip: list[Any] = [alt.Tooltip(f"{names[a]}:N", title=_label(a)) for a in axes]
    tooltip += [alt.Tooltip(f"{short[m]}:Q", title=short[m], format=".3f") for m in metrics]
    panels = []
    for metric in metrics[:-1]:
        x = alt.X(f"{short[x_metric]}:Q", title=EXPLORER_METRICS.get(x_metric, short[x_metric]))
        y = alt.Y(f"{short[metric]}:Q", title=EXPLORER_METRICS.get(metric, short[metric]))
        every = (
            alt.Chart().mark_point(color="#9e9e9e", opacity=0.6).encode(x=x, y=y, tooltip=tooltip)
        )
        picked = (
            alt.Chart()
            .mark_point(color="#c62828", filled=True, size=220, opacity=1)
            .encode(x=x, y=y, tooltip=tooltip)
            .transform_filter(chosen)
        )
        panels.append(alt.layer(every, picked).properties(width=width, height=height))
    rows = (
        alt.Chart()
        .transform_filter(chosen)
        .transform_fold(list[Any](short.values()), as_=["metric", "value"])
        .transform_calculate(
            shown="isValid(datum.value) ? format(datum.value, '.3f') : 'no verdict'"
        )
        .mark_text(align="left", fontSize=13)
        .encode(
            y=alt.Y(
                "metric:N", title=None, sort=list(short.values()), axis=alt.Axis(labelLimit=260)
            ),
            text=alt.Text("shown:N"),
        )
        .properties(width=80, height=height, title="chosen cell")
    )
    return alt.hconcat(*panels, rows, data=data).add_params(*params)
