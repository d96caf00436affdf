"""Estimator comparison: per-lesson estimates against the truth, and accuracy bars.

The estimates are drawn with their intervals; the bars show bias / RMSE / coverage per
method.

Both draw frames they are given (attribution rows, or one row per method of accuracy
figures); neither estimates anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import altair as alt
import polars as pl

from cogstats._validation import ParameterError, check_int, check_probability
from cogstats.charts._frames import check_multiplier, require_columns, select_as

__all__ = ["ACCURACY_METRICS", "estimate_intervals", "estimator_accuracy"]

#: Metrics :func:`estimator_accuracy` knows a reference line for (bias 0, coverage nominal).
ACCURACY_METRICS: tuple[str, ...] = ("bias", "rmse", "coverage")
_INTERVALS = "estimate_intervals"
_ACCURACY = "estimator_accuracy"


def estimate_intervals(
    attributions: pl.DataFrame | Any,
    *,
    truth: str | None = "true_effect",
    color: str = "method",
    title: str | None = None,
    width: int = 420,
    step: int | None = None,
    clip: bool = True,
) -> alt.LayerChart:
    """Each lesson's estimate and interval, one row per lesson, one mark per method.

    Parameters
    ----------
    attributions : polars.DataFrame or Attribution
        Attribution rows (``fact_id``, ``estimate``, ``ci_low``, ``ci_high`` and the
        ``color`` column), e.g. ``pl.concat`` of several ``Attribution.to_frame()``, or
        one :class:`~cogstats.estimators.Attribution` of a real ledger; the
        ``truth`` column (the lesson's true effect, from a simulation's ``lessons``) when
        ``truth`` is given; ``kind`` is shown in the tooltip when present.
    truth : str or None
        Column of the true effect, drawn as a black tick; lessons are ordered by it.
        ``None``: no truth (a real ledger); lessons are ordered by id.
    color : str
        Column that tells the estimates of one lesson apart (the method).
    title : str, optional
        Chart title.
    width : int
        Plot width in pixels.
    step : int, optional
        Height of one lesson's band in pixels (default: 6 per method, at least 14).
        Every lesson of ``attributions`` gets a band, also one no method could estimate.
    clip : bool
        Fit the x axis to the estimates and true effects (plus a margin) and cut longer
        intervals at its edge (the subtitle says how many were cut); ``False`` fits the
        axis to the intervals, where one very wide interval can squeeze the rest.

    Returns
    -------
    altair.LayerChart
        Layers: the zero line (``rule``), intervals (``rule``), estimates (``point``)
        and, with ``truth``, the true effects (``tick``).  Rows without an estimate
        (e.g. lessons a regression cannot separate, reported as null) are not drawn;
        the subtitle says how many.

    Notes
    -----
    No statistics: the estimates and intervals are drawn as given.

    Examples
    --------
    >>> import numpy as np, polars as pl
    >>> rng = np.random.default_rng(2)
    >>> est = rng.normal(0, 0.05, 6)
    >>> frame = pl.DataFrame({
    ...     "fact_id": ["a", "b", "c"] * 2, "method": ["lift"] * 3 + ["ols"] * 3,
    ...     "estimate": est, "ci_low": est - 0.1, "ci_high": est + 0.1,
    ...     "true_effect": [0.0, 0.05, -0.2] * 2,
    ... })
    >>> chart = estimate_intervals(frame)
    >>> [layer.mark.type for layer in chart.layer]
    ['rule', 'rule', 'point', 'tick']
    >>> len(chart.layer[2].data), len(chart.layer[3].data)  # 6 estimates, 3 lessons
    (6, 3)
    """
    check_int("width", width, minimum=1)
    check_int("step", step, minimum=1, optional=True)
    if not isinstance(attributions, pl.DataFrame) and hasattr(attributions, "to_frame"):
        attributions = attributions.to_frame()  # an Attribution of a real ledger
    needed = ["fact_id", "estimate", "ci_low", "ci_high", color]
    if truth is not None:
        needed.append(truth)
    require_columns(attributions, needed, builder=_INTERVALS, argument="attributions")
    names = {"fact_id": "fact_id", "estimate": "estimate", "ci_low": "ci_low"}
    names |= {"ci_high": "ci_high", "group": color}
    if truth is not None:
        names["truth"] = truth
    if "kind" in attributions.columns:
        names["kind"] = "kind"
    data = select_as(attributions, names).with_columns(pl.col("group").cast(pl.String))
    drawn = data.filter(pl.col("estimate").is_not_null())
    skipped = data.height - drawn.height
    if drawn.height == 0:
        raise ParameterError(f"{_INTERVALS}: attributions has no row with an estimate")
    order_keys = ["truth", "fact_id"] if truth is not None else ["fact_id"]
    lessons = data.unique("fact_id", keep="first").sort(order_keys, nulls_last=True)
    order = lessons["fact_id"].to_list()
    groups = sorted(drawn["group"].unique().to_list())
    band = step if step is not None else max(14, 6 * len(groups))
    y = alt.Y("fact_id:N", title="lesson", scale=alt.Scale(domain=order))
    notes = [f"{skipped} row(s) without an estimate not drawn"] if skipped else []
    x_scale: Any = alt.Undefined
    if clip:
        points = drawn["estimate"]
        if truth is not None:
            points = pl.concat([points, data["truth"].drop_nulls()])
        lo, hi = float(points.min()), float(points.max())  # type: ignore[arg-type]
        pad = max(0.1 * (hi - lo), 0.02)
        lo, hi = min(lo - pad, 0.0), max(hi + pad, 0.0)
        x_scale = alt.Scale(domain=[lo, hi], nice=False)
        cut = drawn.filter((pl.col("ci_low") < lo) | (pl.col("ci_high") > hi)).height
        if cut:
            notes.append(f"{cut} interval(s) cut at the plot edge")
    c = alt.Color("group:N", title=color, scale=alt.Scale(domain=groups))
    offset = alt.YOffset("group:N", scale=alt.Scale(domain=groups))
    tooltip = ["fact_id:N", alt.Tooltip("group:N", title=color), "estimate:Q", "ci_low:Q"]
    tooltip += ["ci_high:Q", *(["truth:Q"] if truth is not None else [])]
    tooltip += ["kind:N"] if "kind" in names else []
    x_title = "estimated effect on the score" + (" (tick: true effect)" if truth else "")
    layers: list[Any] = [
        alt.Chart(pl.DataFrame({"zero": [0.0]}))
        .mark_rule(color="#999999")
        .encode(x=alt.X("zero:Q", title=x_title, scale=x_scale)),
        alt.Chart(drawn)
        .mark_rule(strokeWidth=1.5, clip=clip)
        .encode(x=alt.X("ci_low:Q"), x2=alt.X2("ci_high:Q"), y=y, yOffset=offset, color=c),
        alt.Chart(drawn)
        .mark_point(filled=True, size=30)
        .encode(x=alt.X("estimate:Q"), y=y, yOffset=offset, color=c, tooltip=tooltip),
    ]
    if truth is not None:
        truth_rows = lessons.select("fact_id", "truth").filter(pl.col("truth").is_not_null())
        layers.append(
            alt.Chart(truth_rows)
            .mark_tick(color="black", thickness=2)
            .encode(x=alt.X("truth:Q"), y=y, tooltip=["fact_id:N", "truth:Q"])
        )
    return alt.LayerChart(
        layer=layers,
        width=width,
        # a Step height would size each method's sub-band (yOffset), so fix the total
        height=band * len(order),
        title=alt.Title(title or "", subtitle="; ".join(notes)),
    )


def estimator_accuracy(
    summary: pl.DataFrame,
    *,
    metrics: Sequence[str] = ACCURACY_METRICS,
    method: str = "method",
    group: str | None = None,
    nominal_coverage: float = 0.95,
    mcse_multiplier: float = 2.0,
    width: int = 180,
    height: int = 200,
) -> alt.FacetChart:
    """Bars of accuracy figures per method (bias, RMSE, coverage), one panel per metric.

    Parameters
    ----------
    summary : polars.DataFrame
        One row per method (and ``group`` value) with the ``method`` column and every
        column of ``metrics``; optional ``<metric>_mcse`` columns add error bars.
    metrics : sequence of str
        Columns to draw, one panel each.  ``bias`` gets a reference line at 0 and
        ``coverage`` one at ``nominal_coverage``.
    method : str
        Column naming the estimator (the x axis).
    group : str, optional
        A column splitting each method's bar (e.g. the lesson ``kind``).
    nominal_coverage : float
        The intervals' nominal level, in (0, 1).
    mcse_multiplier : float
        Error-bar half-width in Monte Carlo standard errors (> 0).
    width, height : int
        Size of one panel in pixels.

    Returns
    -------
    altair.FacetChart
        ``bar`` per method (and group), ``rule`` error bars when mcse columns exist and
        dashed ``rule`` reference lines, faceted by metric with independent y scales.

    Notes
    -----
    No statistics: the figures are drawn as given (see
    :func:`cogstats.reports.evaluation.attribution_accuracy` for one way to make them).

    Examples
    --------
    >>> import polars as pl
    >>> summary = pl.DataFrame({
    ...     "method": ["lift", "ols"], "bias": [-0.04, 0.001], "bias_mcse": [0.004, 0.003],
    ...     "rmse": [0.08, 0.05], "coverage": [0.71, 0.94],
    ... })
    >>> chart = estimator_accuracy(summary)
    >>> len(chart.data)  # 2 methods x 3 metrics
    6
    """
    metrics = list(metrics)
    if not metrics or not all(isinstance(m, str) for m in metrics):
        raise ParameterError(f"metrics must be a non-empty list of column names; got {metrics!r}")
    nominal = check_probability("nominal_coverage", nominal_coverage)
    multiplier = check_multiplier(mcse_multiplier)
    check_int("width", width, minimum=1)
    check_int("height", height, minimum=1)
    needed = [method, *metrics, *([group] if group is not None else [])]
    require_columns(summary, needed, builder=_ACCURACY, argument="summary")
    refs = {"bias": 0.0, "coverage": nominal}
    parts = []
    for metric in metrics:
        names = {"method": method, "value": metric}
        if group is not None:
            names["group"] = group
        part = select_as(summary, names).with_columns(
            pl.col("method").cast(pl.String),
            pl.col("value").cast(pl.Float64),
            pl.lit(metric).alias("metric"),
            pl.lit(refs.get(metric), dtype=pl.Float64).alias("reference"),
        )
        if group is not None:
            part = part.with_columns(pl.col("group").cast(pl.String))
        mcse = f"{metric}_mcse"
        if mcse in summary.columns:
            half = multiplier * summary[mcse].cast(pl.Float64).fill_nan(None)
            part = part.with_columns(
                (pl.col("value") - half).alias("low"), (pl.col("value") + half).alias("high")
            )
        else:
            part = part.with_columns(
                pl.lit(None, dtype=pl.Float64).alias("low"),
                pl.lit(None, dtype=pl.Float64).alias("high"),
            )
        parts.append(part)
    data = pl.concat(parts, how="vertical_relaxed")
    methods = list(dict.fromkeys(data["method"].to_list()))
    x = alt.X("method:N", title="estimator" if method == "method" else method, sort=methods)
    enc: dict[str, Any] = {"x": x}
    if group is not None:
        enc["color"] = alt.Color("group:N", title=group)
        enc["xOffset"] = alt.XOffset("group:N")
    else:
        enc["color"] = alt.Color("method:N", title=method, sort=methods, legend=None)
    tooltip = ["metric:N", "method:N", "value:Q", "low:Q", "high:Q"]
    tooltip += ["group:N"] if group is not None else []
    layers: list[Any] = [
        alt.Chart()
        .mark_bar(opacity=0.85)
        .encode(y=alt.Y("value:Q", title=None), tooltip=tooltip, **enc),
        alt.Chart()
        .mark_rule(color="black")
        .encode(
            y=alt.Y("low:Q"), y2=alt.Y2("high:Q"), **{k: v for k, v in enc.items() if k != "color"}
        )
        .transform_filter("isValid(datum.low)"),
        alt.Chart()
        .mark_rule(color="firebrick", strokeDash=[4, 3])
        .encode(y=alt.Y("reference:Q"))
        .transform_filter("isValid(datum.reference)"),
    ]
    layered = alt.layer(*layers, data=data).properties(width=width, height=height)
    return layered.facet(column=alt.Column("metric:N", sort=metrics, title=None)).resolve_scale(
        y="independent"
    )
