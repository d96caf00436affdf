"""Trade-off plots: one point per grid cell, with Monte Carlo error bars and a frontier.

Draws a cell table (grid values plus metric columns and their ``<metric>_mcse``), as
:func:`cogstats.sim.cli.simulate_spec` and the sweep store write it.  Which cells are on
the frontier is an input (a boolean column), never worked out here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import altair as alt
import polars as pl

from cogstats._validation import ParameterError, check_int
from cogstats.charts._frames import axis_title, check_multiplier, require_columns, select_as

__all__ = ["false_eviction_tradeoff", "missed_poison_tradeoff", "tradeoff"]

_BUILDER = "tradeoff"
#: numeric colour columns: an ordered scheme with distinct hues (viridis, no pale yellow)
_ORDERED = alt.SchemeParams(name="viridis", extent=[0.0, 0.8])


def _kind(frame: pl.DataFrame, column: str) -> str:
    """Vega-Lite type of a column for tooltips and colours: ordinal if numeric, else nominal."""
    return "O" if frame[column].dtype.is_numeric() else "N"


def _tradeoff_data(
    cells: pl.DataFrame,
    x: str,
    y: str,
    color: str | None,
    frontier: str | None,
    label: list[str],
    multiplier: float,
) -> tuple[pl.DataFrame, dict[str, bool]]:
    """Check :func:`tradeoff`'s columns; return its data and which axes have error bars."""
    if not all(isinstance(c, str) for c in label):
        raise ParameterError(f"label must be a sequence of column names; got {label!r}")
    needed = [x, y, *([color] if color else []), *([frontier] if frontier else []), *label]
    require_columns(cells, needed, builder=_BUILDER, argument="cells")
    if frontier is not None and cells[frontier].dtype != pl.Boolean:
        raise ParameterError(
            f"{_BUILDER}: frontier column {frontier!r} must be boolean; "
            f"got dtype {cells[frontier].dtype}"
        )
    names: dict[str, str] = {"x": x, "y": y}
    if color is not None:
        names["color"] = color
    if frontier is not None:
        names["frontier"] = frontier
    extra = {f"label_{i}": c for i, c in enumerate(label)}
    data = select_as(cells, {**names, **extra}).with_columns(
        pl.col("x").cast(pl.Float64), pl.col("y").cast(pl.Float64)
    )
    errors = {}
    for axis, col in (("x", x), ("y", y)):
        mcse = f"{col}_mcse"
        if mcse in cells.columns:
            half = multiplier * cells[mcse].cast(pl.Float64).fill_nan(None)
            data = data.with_columns(
                (pl.col(axis) - half).alias(f"{axis}_low"),
                (pl.col(axis) + half).alias(f"{axis}_high"),
            )
            errors[axis] = True
    return data, errors


def tradeoff(
    cells: pl.DataFrame,
    *,
    x: str,
    y: str,
    color: str | None = None,
    frontier: str | None = None,
    label: Sequence[str] = (),
    mcse_multiplier: float = 2.0,
    title: str | None = None,
    width: int = 420,
    height: int = 300,
) -> alt.LayerChart:
    """One point per cell at (``x``, ``y``), with error bars and the frontier highlighted.

    Parameters
    ----------
    cells : polars.DataFrame
        One row per cell with the ``x`` and ``y`` metric columns; ``<x>_mcse`` and
        ``<y>_mcse`` (optional) give error bars of plus/minus ``mcse_multiplier``
        standard errors; ``color``, ``frontier`` and ``label`` columns when given.
    x, y : str
        The metric columns (lower is better for both on the usual trade-offs).
    color : str, optional
        A column whose values colour the points (e.g. a grid axis such as
        ``"gate.min_trials"``); numeric columns get an ordered scale.
    frontier : str, optional
        A boolean column: true for the cells on the frontier.  They are drawn filled and
        joined by a line in order of ``x``; the others hollow.
    label : sequence of str
        Further columns shown in the tooltip (e.g. every grid axis).
    mcse_multiplier : float
        Error-bar half-width in Monte Carlo standard errors (> 0).
    title : str, optional
        Chart title.
    width, height : int
        Plot size in pixels.

    Returns
    -------
    altair.LayerChart
        Layers: horizontal and vertical error bars (``rule``, when the mcse columns
        exist), the frontier line (``line``, with ``frontier``) and the cells (``point``).
        One data row per cell.

    Notes
    -----
    No statistics: metrics, their Monte Carlo errors and the frontier are inputs.

    Examples
    --------
    >>> import numpy as np, polars as pl
    >>> rng = np.random.default_rng(1)
    >>> cells = pl.DataFrame({
    ...     "gate.min_trials": [2, 3, 4, 6],
    ...     "time_to_verdict": [3.0, 4.0, 5.5, 7.0],
    ...     "time_to_verdict_mcse": rng.uniform(0.05, 0.1, 4),
    ...     "false_eviction_rate": [0.2, 0.12, 0.13, 0.05],
    ...     "false_eviction_rate_mcse": rng.uniform(0.005, 0.01, 4),
    ...     "on_frontier": [True, True, False, True],
    ... })
    >>> chart = tradeoff(cells, x="time_to_verdict", y="false_eviction_rate",
    ...                  color="gate.min_trials", frontier="on_frontier")
    >>> [layer.mark.type for layer in chart.layer]
    ['rule', 'rule', 'line', 'point']
    >>> len(chart.data)
    4
    """
    multiplier = check_multiplier(mcse_multiplier)
    check_int("width", width, minimum=1)
    check_int("height", height, minimum=1)
    label = list(label)
    data, errors = _tradeoff_data(cells, x, y, color, frontier, label, multiplier)
    ex = alt.X("x:Q", title=axis_title(x), scale=alt.Scale(zero=False))
    ey = alt.Y("y:Q", title=axis_title(y), scale=alt.Scale(zero=False))
    enc_color: Any = alt.Undefined
    enc_fill: Any = alt.value("#4c78a8")
    if color is not None:
        kind = _kind(cells, color)
        scale = alt.Scale(scheme=_ORDERED) if kind == "O" else alt.Undefined
        enc_color = alt.Color(
            f"color:{kind}",
            title=axis_title(color),
            scale=scale,
            legend=alt.Legend(titleLimit=400, labelLimit=400),
        )
        enc_fill = alt.Fill(f"color:{kind}", legend=None, scale=scale)
    tooltip: list[Any] = [alt.Tooltip("x:Q", title=x), alt.Tooltip("y:Q", title=y)]
    if color is not None:
        tooltip.append(alt.Tooltip(f"color:{_kind(cells, color)}", title=color))
    tooltip += [alt.Tooltip(f"label_{i}:{_kind(cells, c)}", title=c) for i, c in enumerate(label)]
    layers: list[Any] = []
    if errors.get("x"):
        layers.append(
            alt.Chart()
            .mark_rule(opacity=0.5)
            .encode(x=alt.X("x_low:Q"), x2=alt.X2("x_high:Q"), y=ey, color=enc_color)
        )
    if errors.get("y"):
        layers.append(
            alt.Chart()
            .mark_rule(opacity=0.5)
            .encode(x=ex, y=alt.Y("y_low:Q"), y2=alt.Y2("y_high:Q"), color=enc_color)
        )
    point_enc: dict[str, Any] = {"x": ex, "y": ey, "color": enc_color, "tooltip": tooltip}
    if frontier is not None:
        layers.append(
            alt.Chart()
            .mark_line(color="black", strokeWidth=1.5, strokeDash=[6, 3])
            .encode(x=ex, y=ey, order=alt.Order("x:Q"))
            .transform_filter(alt.datum.frontier)
        )
        point_enc["fill"] = alt.condition(alt.datum.frontier, enc_fill, alt.value("white"))
        point_enc["size"] = alt.condition(alt.datum.frontier, alt.value(110), alt.value(60))
    layers.append(alt.Chart().mark_point(filled=False, strokeWidth=2).encode(**point_enc))
    notes = []
    if errors:
        notes.append(f"bars: +/-{multiplier:g} Monte Carlo standard errors")
    if frontier is not None:
        notes.append(f"filled, joined by the dashed line: the frontier ({frontier})")
    return alt.LayerChart(
        layer=layers,
        data=data,
        width=width,
        height=height,
        title=alt.Title(title or "", subtitle="; ".join(notes)),
    )


def false_eviction_tradeoff(
    cells: pl.DataFrame, *, x: str = "time_to_verdict", **options: Any
) -> alt.LayerChart:
    """Chart the false eviction rate against time to verdict, one point per cell.

    A :func:`tradeoff` with ``y="false_eviction_rate"`` (non-poison lessons evicted as
    harmful / non-poison lessons tried, :mod:`cogstats.sim.metrics`); ``options`` go to
    :func:`tradeoff`.

    Examples
    --------
    >>> import polars as pl
    >>> cells = pl.DataFrame({"time_to_verdict": [3.0, 6.0], "false_eviction_rate": [0.2, 0.1]})
    >>> false_eviction_tradeoff(cells).layer[-1].mark.type
    'point'
    """
    return tradeoff(cells, x=x, y="false_eviction_rate", **options)


def missed_poison_tradeoff(
    cells: pl.DataFrame, *, x: str = "time_to_verdict", **options: Any
) -> alt.LayerChart:
    """Missed poison (1 - poison recall) against time to verdict, one point per cell.

    Uses the table's ``missed_poison`` column, or adds it as ``1 - poison_recall`` (with
    ``missed_poison_mcse`` equal to ``poison_recall_mcse``), the spelling of
    :func:`cogstats.sweep.with_derived`, and calls :func:`tradeoff`.  Pass
    ``x="poison_time_to_eviction"`` to plot against the poisons' own time to eviction.

    Examples
    --------
    >>> import polars as pl
    >>> cells = pl.DataFrame({"time_to_verdict": [3.0, 6.0], "poison_recall": [0.9, 1.0]})
    >>> chart = missed_poison_tradeoff(cells)
    >>> sorted(chart.data["y"].to_list())
    [0.0, 0.09999999999999998]
    """
    if isinstance(cells, pl.DataFrame) and "missed_poison" in cells.columns:
        return tradeoff(cells, x=x, y="missed_poison", **options)
    require_columns(cells, [x, "poison_recall"], builder="missed_poison_tradeoff", argument="cells")
    extra = [(1.0 - pl.col("poison_recall").cast(pl.Float64)).alias("missed_poison")]
    if "poison_recall_mcse" in cells.columns:
        extra.append(pl.col("poison_recall_mcse").alias("missed_poison_mcse"))
    return tradeoff(cells.with_columns(extra), x=x, y="missed_poison", **options)
