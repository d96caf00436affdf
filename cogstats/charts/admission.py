"""Charts of the admission experiment: recall, the admission ROC and the recall monitor.

Recall is drawn by defence and index, and the monitor's statistic over time.

They draw the tables :func:`cogstats.admission.run_admission` and
:func:`cogstats.admission.run_monitor` write (``defences``, ``roc``, ``paths``): the
numbers and their Monte Carlo errors are drawn as given; nothing is estimated here (the
only reshaping is picking columns, one replicate, and plus/minus a multiple of a given
standard error).
"""

from __future__ import annotations

from typing import Any

import altair as alt
import polars as pl

from cogstats._validation import ParameterError, check_int
from cogstats.charts._frames import check_multiplier, require_columns, select_as

__all__ = ["admission_roc", "monitor_statistic", "recall_by_defence"]

_INDEX_COLOURS = alt.Scale(range=["#4c78a8", "#f58518", "#54a24b", "#b279a2"])


def _interval(
    frame: pl.DataFrame, data: pl.DataFrame, column: str, name: str, multiplier: float
) -> tuple[pl.DataFrame, bool]:
    mcse = f"{column}_mcse"
    if mcse not in frame.columns:
        return data, False
    half = multiplier * frame[mcse].cast(pl.Float64).fill_nan(None)
    return (
        data.with_columns(
            (pl.col(name) - half).alias(f"{name}_low"), (pl.col(name) + half).alias(f"{name}_high")
        ),
        True,
    )


def recall_by_defence(
    defences: pl.DataFrame,
    *,
    metric: str = "recall_at_k_affected",
    mcse_multiplier: float = 2.0,
    title: str | None = None,
    width: int = 380,
    height: int = 260,
) -> alt.LayerChart:
    """One point per defence and index type with Monte Carlo error bars.

    Parameters
    ----------
    defences : polars.DataFrame
        The defences table (``AdmissionResult.defences``): ``defence``, ``index`` and
        ``metric``; ``<metric>_mcse`` (optional) adds bars of plus/minus
        ``mcse_multiplier`` standard errors.
    metric : str
        The column drawn (e.g. ``recall_at_k_affected``, ``recall_loss_affected``,
        ``poisoned_hit_rate``).
    mcse_multiplier : float
        Error-bar half-width in Monte Carlo standard errors (> 0).
    title : str, optional
        Chart title.
    width, height : int
        Plot size in pixels.

    Returns
    -------
    altair.LayerChart
        ``rule`` error bars (when the mcse column exists) and ``point`` marks; defences
        on the x axis in table order, index types side by side (colour).  One data row
        per table row.

    Examples
    --------
    >>> import polars as pl
    >>> table = pl.DataFrame({
    ...     "defence": ["clean", "read_filter", "clean", "read_filter"],
    ...     "index": ["hnsw", "hnsw", "ivf", "ivf"],
    ...     "recall_at_k_affected": [0.99, 0.93, 1.0, 0.93],
    ...     "recall_at_k_affected_mcse": [0.002, 0.01, 0.0, 0.01],
    ... })
    >>> chart = recall_by_defence(table)
    >>> [layer.mark.type for layer in chart.layer], len(chart.data)
    (['rule', 'point'], 4)
    """
    multiplier = check_multiplier(mcse_multiplier)
    check_int("width", width, minimum=1)
    check_int("height", height, minimum=1)
    if not isinstance(metric, str):
        raise ParameterError(f"metric must be a column name; got {metric!r}")
    require_columns(
        defences, ["defence", "index", metric], builder="recall_by_defence", argument="defences"
    )
    data = select_as(defences, {"defence": "defence", "index": "index", "value": metric})
    data = data.with_columns(pl.col("value").cast(pl.Float64))
    data, bars = _interval(defences, data, metric, "value", multiplier)
    order = list(dict.fromkeys(defences["defence"].to_list()))
    x = alt.X("defence:N", sort=order, title="defence")
    offset = alt.XOffset("index:N")
    colour = alt.Color("index:N", title="index", scale=_INDEX_COLOURS)
    y = alt.Y("value:Q", title=metric, scale=alt.Scale(zero=False))
    layers: list[Any] = []
    if bars:
        layers.append(
            alt.Chart()
            .mark_rule(strokeWidth=2)
            .encode(x=x, xOffset=offset, y=alt.Y("value_low:Q"), y2="value_high:Q", color=colour)
        )
    tooltip = [
        alt.Tooltip("defence:N"),
        alt.Tooltip("index:N"),
        alt.Tooltip("value:Q", title=metric, format=".4f"),
    ]
    layers.append(
        alt.Chart()
        .mark_point(filled=True, size=70)
        .encode(x=x, xOffset=offset, y=y, color=colour, tooltip=tooltip)
    )
    subtitle = f"bars: +/-{multiplier:g} Monte Carlo standard errors" if bars else ""
    return alt.LayerChart(
        layer=layers,
        data=data,
        width=width,
        height=height,
        title=alt.Title(title or metric, subtitle=subtitle),
    )


def admission_roc(
    roc: pl.DataFrame,
    *,
    mcse_multiplier: float = 2.0,
    title: str | None = None,
    width: int = 380,
    height: int = 280,
) -> alt.LayerChart:
    """Poison admission against benign rejection as each admission threshold moves.

    Parameters
    ----------
    roc : polars.DataFrame
        ``AdmissionResult.roc``: ``rule``, ``threshold``, ``default``,
        ``benign_rejection_rate``, ``poison_admission_rate`` and optionally their
        ``_mcse`` columns (error bars).
    mcse_multiplier : float
        Error-bar half-width in Monte Carlo standard errors (> 0).
    title : str, optional
        Chart title.
    width, height : int
        Plot size in pixels.

    Returns
    -------
    altair.LayerChart
        Error bars (``rule``, both axes), one ``line`` per rule through its thresholds
        in order, and ``point`` marks (the spec's own thresholds filled and larger).

    Examples
    --------
    >>> import polars as pl
    >>> roc = pl.DataFrame({
    ...     "rule": ["min_provenance"] * 3, "threshold": [0.0, 0.6, 0.9],
    ...     "default": [False, True, False],
    ...     "benign_rejection_rate": [0.001, 0.003, 0.3],
    ...     "poison_admission_rate": [0.05, 0.03, 0.0],
    ... })
    >>> [layer.mark.type for layer in admission_roc(roc).layer]
    ['line', 'point']
    """
    multiplier = check_multiplier(mcse_multiplier)
    check_int("width", width, minimum=1)
    check_int("height", height, minimum=1)
    cols = ["rule", "threshold", "default", "benign_rejection_rate", "poison_admission_rate"]
    require_columns(roc, cols, builder="admission_roc", argument="roc")
    data = select_as(
        roc,
        {
            "rule": "rule",
            "threshold": "threshold",
            "default": "default",
            "x": "benign_rejection_rate",
            "y": "poison_admission_rate",
        },
    )
    data, xbars = _interval(roc, data, "benign_rejection_rate", "x", multiplier)
    data, ybars = _interval(roc, data, "poison_admission_rate", "y", multiplier)
    x = alt.X("x:Q", title="benign rejection rate")
    y = alt.Y("y:Q", title="poison admission rate")
    colour = alt.Color("rule:N", title="threshold swept")
    layers: list[Any] = []
    if xbars:
        layers.append(
            alt.Chart()
            .mark_rule(opacity=0.5)
            .encode(x=alt.X("x_low:Q"), x2="x_high:Q", y=y, color=colour)
        )
    if ybars:
        layers.append(
            alt.Chart()
            .mark_rule(opacity=0.5)
            .encode(x=x, y=alt.Y("y_low:Q"), y2="y_high:Q", color=colour)
        )
    layers.append(
        alt.Chart()
        .mark_line(strokeWidth=1.5)
        .encode(x=x, y=y, color=colour, order=alt.Order("threshold:Q"))
    )
    layers.append(
        alt.Chart()
        .mark_point(strokeWidth=2)
        .encode(
            x=x,
            y=y,
            color=colour,
            fill=alt.condition(
                alt.datum.default, alt.Fill("rule:N", legend=None), alt.value("white")
            ),
            size=alt.condition(alt.datum.default, alt.value(120), alt.value(50)),
            tooltip=[
                alt.Tooltip("rule:N"),
                alt.Tooltip("threshold:Q"),
                alt.Tooltip("x:Q", title="benign rejection", format=".4f"),
                alt.Tooltip("y:Q", title="poison admission", format=".4f"),
            ],
        )
    )
    notes = ["filled: the spec's threshold"]
    if xbars or ybars:
        notes.append(f"bars: +/-{multiplier:g} Monte Carlo standard errors")
    return alt.LayerChart(
        layer=layers,
        data=data,
        width=width,
        height=height,
        title=alt.Title(title or "Admission thresholds", subtitle="; ".join(notes)),
    )


def monitor_statistic(
    paths: pl.DataFrame,
    *,
    replicate: int = 0,
    onset: int | None = None,
    title: str | None = None,
    width: int = 460,
    height: int = 260,
) -> alt.LayerChart:
    """Chart the monitor's CUSUM statistic by period, one line per region, for one replicate.

    Parameters
    ----------
    paths : polars.DataFrame
        ``MonitorResult.paths``: ``replicate``, ``period``, ``region``, ``affected``,
        ``statistic`` and ``threshold``.
    replicate : int
        The replicate drawn.
    onset : int, optional
        The period the poisoned writes start (a vertical rule).
    title : str, optional
        Chart title.
    width, height : int
        Plot size in pixels.

    Returns
    -------
    altair.LayerChart
        ``line`` per region (affected regions coloured, the others grey), dashed
        ``line`` thresholds of the affected regions, and the onset ``rule``.

    Examples
    --------
    >>> import polars as pl
    >>> paths = pl.DataFrame({
    ...     "replicate": [0] * 6, "period": [0, 1, 2] * 2, "region": [0] * 3 + [1] * 3,
    ...     "affected": [False] * 3 + [True] * 3,
    ...     "statistic": [0.0, 0.5, 0.0, 0.0, 4.0, 9.0], "threshold": [8.0] * 6,
    ... })
    >>> chart = monitor_statistic(paths, onset=1)
    >>> [layer.mark.type for layer in chart.layer], len(chart.data)
    (['line', 'line', 'rule'], 6)
    """
    check_int("replicate", replicate, minimum=0)
    check_int("onset", onset, minimum=0, optional=True)
    check_int("width", width, minimum=1)
    check_int("height", height, minimum=1)
    cols = ["replicate", "period", "region", "affected", "statistic", "threshold"]
    require_columns(paths, cols, builder="monitor_statistic", argument="paths")
    data = paths.filter(pl.col("replicate") == replicate)
    if data.height == 0:
        raise ParameterError(f"monitor_statistic: paths has no rows for replicate {replicate}")
    data = select_as(data, {c: c for c in cols})
    x = alt.X("period:Q", title="period")
    colour = alt.Color(
        "affected:N",
        title="region holds poison",
        scale=alt.Scale(domain=[True, False], range=["#d62728", "#bbbbbb"]),
    )
    layers: list[Any] = [
        alt.Chart()
        .mark_line(strokeWidth=1.2)
        .encode(
            x=x,
            y=alt.Y("statistic:Q", title="CUSUM statistic"),
            color=colour,
            detail="region:N",
            tooltip=["region:N", "period:Q", alt.Tooltip("statistic:Q", format=".2f")],
        ),
        alt.Chart()
        .mark_line(strokeDash=[4, 3], strokeWidth=1, color="#d62728")
        .encode(x=x, y="threshold:Q", detail="region:N")
        .transform_filter(alt.datum.affected),
    ]
    if onset is not None:
        layers.append(
            alt.Chart(pl.DataFrame({"onset": [onset]}))
            .mark_rule(color="black", strokeDash=[2, 2])
            .encode(x="onset:Q")
        )
    return alt.LayerChart(
        layer=layers,
        data=data,
        width=width,
        height=height,
        title=alt.Title(
            title or f"Recall monitor, replicate {replicate}",
            subtitle="dashed: the affected regions' thresholds; dotted: the first poisoned write",
        ),
    )
