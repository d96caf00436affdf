"""Gates side by side: S1 operating characteristics per rule, benchmark figures as bars.

Draws the frames of :func:`cogstats.reports.comparison.compare_gates`: the S1 cell table
(one row per rule and (effect, run budget) cell, with ``<rate>_mcse``) and the figure
table (one row per scenario, rule and metric with ``value``, ``low``, ``high``).  No
statistics: values and intervals are drawn as the frames give them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import altair as alt
import polars as pl

from cogstats._validation import ParameterError, check_int
from cogstats.charts._frames import check_multiplier, require_columns, select_as

__all__ = [
    "FIGURE_TITLES",
    "HEADLINE_TITLES",
    "LIFECYCLE_TITLES",
    "benchmark_figures",
    "rule_operating_characteristics",
]

#: The headline figures (S2, its variants, S4): metric -> panel title (words, units).
HEADLINE_TITLES: dict[str, str] = {
    "poison_recall": "poison recall (share removed)",
    "median_removal_delay": "median delay to removal (runs)",
    "poison_time_to_eviction": "mean delay to removal (runs)",
    "false_eviction_rate": "genuine evicted as harmful (share)",
    "false_no_lift_rate": "genuine evicted as no-lift (share)",
    "regret": "regret (score per run)",
    "false_decision_rate": "null lessons decided (share)",
    "any_decision_rate": "null lessons, any decision (share)",
}
#: What happens after a verdict (suspension, re-test, exposure; the ``S2_METRICS`` of
#: :mod:`cogstats.reports.comparison` beyond the headline): metric -> panel title.
LIFECYCLE_TITLES: dict[str, str] = {
    "regret_vs_margin": "regret minus margin rule's (paired)",
    "poison_exposure": "poison exposure, mean (runs)",
    "median_poison_exposure": "poison exposure, median (runs)",
    "poison_out_last5": "poisons out of the last 5 runs (share)",
    "false_conviction_rate": "effect >= 0 evicted as harmful (share)",
    "helpful_lost_rate": "helpful lessons lost (share)",
    "median_suspended_runs": "genuine suspended, median (runs)",
}
#: Every metric :func:`benchmark_figures` draws by default -> its panel title.
FIGURE_TITLES: dict[str, str] = {**HEADLINE_TITLES, **LIFECYCLE_TITLES}
_OC = "rule_operating_characteristics"
_BARS = "benchmark_figures"


def rule_operating_characteristics(
    s1: pl.DataFrame,
    *,
    outcome: str = "correct_verdict_rate",
    rule: str = "label",
    mcse_multiplier: float = 2.0,
    columns: int = 4,
    width: int = 170,
    height: int = 160,
) -> alt.FacetChart:
    """Draw one S1 rate against the true effect, one line per rule, one panel per budget.

    Parameters
    ----------
    s1 : polars.DataFrame
        Columns ``effect``, ``runs``, the ``rule`` column and ``outcome``; an optional
        ``<outcome>_mcse`` adds error bars of plus/minus ``mcse_multiplier`` errors.
        Rows whose rate is null (the correct-verdict rate at effect 0) are left out.
    outcome : str
        The rate to draw.
    rule : str
        Column naming the contender (one colour each).
    mcse_multiplier : float
        Error-bar half-width in Monte Carlo standard errors (> 0).
    columns : int
        Panels per row.
    width, height : int
        Size of one panel in pixels.

    Returns
    -------
    altair.FacetChart
        Lines with points and ``rule`` error bars, faceted by run budget.

    Examples
    --------
    >>> import polars as pl
    >>> s1 = pl.DataFrame({"label": ["a", "a", "b", "b"], "effect": [-0.1, 0.1] * 2,
    ...     "runs": [10] * 4, "correct_verdict_rate": [0.2, 0.3, 0.5, 0.6],
    ...     "correct_verdict_rate_mcse": [0.01] * 4})
    >>> chart = rule_operating_characteristics(s1)
    >>> len(chart.data), chart.facet.shorthand
    (4, 'runs:O')
    """
    multiplier = check_multiplier(mcse_multiplier)
    for name, value in (("columns", columns), ("width", width), ("height", height)):
        check_int(name, value, minimum=1)
    require_columns(s1, ["effect", "runs", rule, outcome], builder=_OC, argument="s1")
    mcse = f"{outcome}_mcse"
    names = {"rule": rule, "effect": "effect", "runs": "runs", "rate": outcome}
    if mcse in s1.columns:
        names["mcse"] = mcse
    data = select_as(s1, names).filter(pl.col("rate").is_not_null())
    if data.height == 0:
        raise ParameterError(f"{_OC}: s1 has no non-null {outcome!r}")
    if "mcse" in data.columns:
        half = multiplier * pl.col("mcse").fill_null(0.0)
        data = data.with_columns(
            (pl.col("rate") - half).clip(0.0, 1.0).alias("low"),
            (pl.col("rate") + half).clip(0.0, 1.0).alias("high"),
        )
    order = list(dict.fromkeys(data["rule"].to_list()))
    x = alt.X("effect:Q", title="true effect of the lesson on the score")
    y = alt.Y(
        "rate:Q", title=f"{outcome.replace('_', ' ')} (share)", scale=alt.Scale(domain=[0, 1])
    )
    color = alt.Color("rule:N", title="gate", sort=order)
    layers: list[Any] = [
        alt.Chart()
        .mark_line(point=True, strokeWidth=1.5)
        .encode(x=x, y=y, color=color, tooltip=["rule:N", "effect:Q", "runs:O", "rate:Q"])
    ]
    if "low" in data.columns:
        layers.append(
            alt.Chart()
            .mark_rule(opacity=0.6)
            .encode(x=x, y=alt.Y("low:Q"), y2=alt.Y2("high:Q"), color=color)
        )
    layered = alt.layer(*layers, data=data).properties(width=width, height=height)
    return layered.facet(facet=alt.Facet("runs:O", title="run budget (runs)"), columns=columns)


def benchmark_figures(
    figures: pl.DataFrame,
    *,
    metrics: Mapping[str, str] | None = None,
    goals: pl.DataFrame | None = None,
    rule: str = "label",
    width: int = 110,
    height: int = 90,
    columns: int | None = None,
) -> alt.FacetChart:
    """Draw each figure as a bar per rule with its interval, one panel per scenario and metric.

    Parameters
    ----------
    figures : polars.DataFrame
        Columns ``scenario``, ``metric``, ``value``, ``low``, ``high`` and the ``rule``
        column, one row per scenario, rule and metric.
    metrics : mapping, optional
        Metric -> panel title, in panel order (default :data:`FIGURE_TITLES`, those the
        frame has a value of: a metric whose values are all null or NaN gets no panel).
    goals : polars.DataFrame, optional
        Targets to draw as dashed lines: columns ``where`` (the scenario), ``metric`` and
        ``target`` (rows with a null metric are skipped).
    rule : str
        Column naming the contender (one colour each).
    width, height : int
        Size of one panel in pixels.
    columns : int, optional
        For a single scenario: wrap the metric panels into rows of ``columns`` (>= 1)
        instead of one row of every metric.  Default: one row per scenario.

    Returns
    -------
    altair.FacetChart
        Bars, interval rules and target lines; rows are scenarios, columns metrics, each
        metric with its own y scale (wrapped, with ``columns``: one panel per metric).

    Examples
    --------
    >>> import polars as pl
    >>> f = pl.DataFrame({"scenario": ["s"] * 2, "label": ["a", "b"],
    ...     "metric": ["regret"] * 2, "value": [0.1, 0.2], "low": [0.09, 0.18],
    ...     "high": [0.11, 0.22]})
    >>> chart = benchmark_figures(f)
    >>> len(chart.data), chart.facet.row.shorthand
    (2, 'scenario:N')
    """
    check_int("width", width, minimum=1)
    check_int("height", height, minimum=1)
    if columns is not None:
        check_int("columns", columns, minimum=1)
    cols = ["scenario", "metric", "value", "low", "high", rule]
    require_columns(figures, cols, builder=_BARS, argument="figures")
    # a metric without a single value (not measured in these scenarios) gets no panel
    measured = pl.col("value").cast(pl.Float64).fill_nan(None).is_not_null()
    present = set(figures.filter(measured)["metric"].to_list())
    titles = {
        m: t for m, t in (FIGURE_TITLES if metrics is None else metrics).items() if m in present
    }
    if not titles:
        raise ParameterError(
            f"{_BARS}: figures has none of the metrics {sorted(metrics or FIGURE_TITLES)}; "
            f"got {sorted(present)}"
        )
    data = select_as(
        figures.filter(pl.col("metric").is_in(list(titles))),
        {c if c != rule else "rule": c for c in cols},
    ).with_columns(
        pl.col("metric").replace_strict(titles).alias("panel"),
        pl.lit(None, dtype=pl.Float64).alias("target"),
    )
    if goals is not None:
        require_columns(goals, ["where", "metric", "target"], builder=_BARS, argument="goals")
        targets = (
            goals.filter(pl.col("metric").is_in(list(titles)))
            .select(pl.col("where").alias("scenario"), "metric", "target")
            .unique(subset=["scenario", "metric"], keep="first", maintain_order=True)
        )
        data = data.drop("target").join(targets, on=["scenario", "metric"], how="left")
    order = list(dict.fromkeys(data["rule"].to_list()))
    y = alt.Y("value:Q", title=None)
    color = alt.Color("rule:N", title="gate", sort=order)
    xaxis = alt.X("rule:N", sort=order, title=None, axis=alt.Axis(labels=False, ticks=False))
    tooltip = ["scenario:N", "rule:N", "panel:N", "value:Q", "low:Q", "high:Q", "target:Q"]
    bars = alt.Chart().mark_bar().encode(x=xaxis, y=y, color=color, tooltip=tooltip)
    err = (
        alt.Chart()
        .mark_rule(color="black", strokeWidth=1.5)
        .encode(x=xaxis, y=alt.Y("low:Q"), y2=alt.Y2("high:Q"))
    )
    goal = (
        alt.Chart()
        .mark_rule(color="firebrick", strokeDash=[4, 3])
        .encode(y=alt.Y("target:Q"))
        .transform_filter("isValid(datum.target)")
    )
    layered = alt.layer(bars, err, goal, data=data).properties(width=width, height=height)
    if columns is not None:
        scenarios = sorted(set(data["scenario"].to_list()))
        if len(scenarios) != 1:
            raise ParameterError(
                f"{_BARS}: columns wraps the panels of one scenario; figures has "
                f"{len(scenarios)}: {scenarios}"
            )
        return layered.facet(
            facet=alt.Facet("panel:N", title=None, sort=list(titles.values())),
            columns=int(columns),
        ).resolve_scale(y="independent")
    return layered.facet(
        row=alt.Row("scenario:N", title=None, sort=list(dict.fromkeys(data["scenario"]))),
        column=alt.Column("panel:N", title=None, sort=list(titles.values())),
    ).resolve_scale(y="independent")
