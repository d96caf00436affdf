"""Operating characteristics: outcome rates against the true effect, one line per budget.

Draws a cell table (one row per grid cell: the effect, the run budget and the rate
columns), as :func:`cogstats.sim.cli.simulate_spec` and the sweep store write it.  The
rates are drawn as given; error bars appear only when the table carries ``<rate>_mcse``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import altair as alt
import polars as pl

from cogstats._validation import ParameterError, check_int
from cogstats.charts._frames import (
    AXIS_TITLES,
    axis_title,
    check_multiplier,
    require_columns,
    select_as,
)

__all__ = ["DEFAULT_OUTCOMES", "REFERENCE_COLUMNS", "operating_characteristics"]

#: The first-outcome rates :meth:`SimulationResult.summary_row` writes for every cell.
DEFAULT_OUTCOMES: tuple[str, ...] = (
    "promote_rate",
    "evict_harmful_rate",
    "evict_no_lift_rate",
    "hold_rate",
)
#: Columns of a ``reference`` frame (published or otherwise external rates).
REFERENCE_COLUMNS: tuple[str, ...] = ("effect", "budget", "outcome", "rate")
_BUILDER = "operating_characteristics"
#: an ordered scheme with distinct hues per budget (viridis without its pale yellow end)
_BUDGET_SCHEME = alt.SchemeParams(name="viridis", extent=[0.0, 0.8])


def _long(
    cells: pl.DataFrame, effect: str, budget: str, outcomes: Sequence[str], multiplier: float
) -> pl.DataFrame:
    parts = []
    for outcome in outcomes:
        names = {"effect": effect, "budget": budget, "rate": outcome}
        part = select_as(cells, names).with_columns(
            pl.col("effect").cast(pl.Float64),
            pl.col("rate").cast(pl.Float64),
            pl.lit(outcome).alias("outcome"),
        )
        mcse = f"{outcome}_mcse"
        if mcse in cells.columns:
            half = multiplier * cells[mcse].cast(pl.Float64).fill_nan(None)
            part = part.with_columns(
                (pl.col("rate") - half).alias("low"), (pl.col("rate") + half).alias("high")
            )
        else:
            part = part.with_columns(
                pl.lit(None, dtype=pl.Float64).alias("low"),
                pl.lit(None, dtype=pl.Float64).alias("high"),
            )
        parts.append(part)
    return pl.concat(parts, how="vertical_relaxed").with_columns(
        pl.lit("simulated").alias("source")
    )


def operating_characteristics(
    cells: pl.DataFrame,
    *,
    effect: str = "lessons.listed[0].effect",
    budget: str = "runs",
    outcomes: Sequence[str] = DEFAULT_OUTCOMES,
    reference: pl.DataFrame | None = None,
    reference_label: str = "published",
    mcse_multiplier: float = 2.0,
    columns: int = 4,
    width: int = 220,
    height: int = 200,
) -> alt.FacetChart:
    """Outcome rates against the true effect, one line per run budget, one panel per outcome.

    Parameters
    ----------
    cells : polars.DataFrame
        One row per grid cell with the ``effect`` column, the ``budget`` column and every
        column of ``outcomes`` (rates in [0, 1]).  Optional ``<outcome>_mcse`` columns
        add error bars of plus/minus ``mcse_multiplier`` standard errors.
    effect : str
        Column of the true effect (the S1 spec's grid path by default).
    budget : str
        Column of the run budget (one line each).
    outcomes : sequence of str
        Rate columns to draw, one panel each, in this order.
    reference : polars.DataFrame, optional
        External rates to overlay as hollow diamonds: columns ``effect``, ``budget``,
        ``outcome`` (one of ``outcomes``) and ``rate``; optional ``low``/``high`` draw
        its interval.  E.g. cycgraph's published table
        (:func:`cogstats.reports.reference.published_oc`).
    reference_label : str
        What the reference is, for the tooltip.
    mcse_multiplier : float
        Error-bar half-width in Monte Carlo standard errors (> 0).
    columns : int
        Panels per row.
    width, height : int
        Size of one panel in pixels.

    Returns
    -------
    altair.FacetChart
        A layered chart (``line`` with points per simulated cell, ``rule`` error bars,
        ``point`` for the reference) faceted by outcome.  Its data has one row per cell
        and outcome plus one per reference row.

    Notes
    -----
    No statistics: the rates and their Monte Carlo errors are drawn as the table gives
    them.  Checked in ``tests/unit/test_charts.py`` (row counts, encodings, errors).

    Examples
    --------
    >>> import numpy as np, polars as pl
    >>> rng = np.random.default_rng(0)
    >>> effects = [-0.1, 0.0, 0.1]
    >>> cells = pl.DataFrame({
    ...     "lessons.listed[0].effect": effects * 2,
    ...     "runs": [25] * 3 + [100] * 3,
    ...     "promote_rate": rng.uniform(size=6), "evict_harmful_rate": rng.uniform(size=6),
    ... })
    >>> chart = operating_characteristics(cells, outcomes=["promote_rate", "evict_harmful_rate"])
    >>> len(chart.data)  # 6 cells x 2 outcomes
    12
    >>> chart.facet.shorthand
    'outcome:N'
    """
    outcomes = list(outcomes)
    if not outcomes or not all(isinstance(o, str) for o in outcomes):
        raise ParameterError(f"outcomes must be a non-empty list of column names; got {outcomes!r}")
    multiplier = check_multiplier(mcse_multiplier)
    check_int("columns", columns, minimum=1)
    check_int("width", width, minimum=1)
    check_int("height", height, minimum=1)
    require_columns(cells, [effect, budget, *outcomes], builder=_BUILDER, argument="cells")
    data = _long(cells, effect, budget, outcomes, multiplier)
    has_mcse = any(f"{o}_mcse" in cells.columns for o in outcomes)
    has_ref = reference is not None
    if reference is not None:
        require_columns(reference, REFERENCE_COLUMNS, builder=_BUILDER, argument="reference")
        unknown = sorted(set(reference["outcome"].to_list()) - set(outcomes))
        if unknown:
            raise ParameterError(
                f"{_BUILDER}: reference outcome(s) {unknown} are not among outcomes {outcomes}"
            )
        kept = [*REFERENCE_COLUMNS, *(c for c in ("low", "high") if c in reference.columns)]
        ref = select_as(reference, {c: c for c in kept}).with_columns(
            pl.col("effect").cast(pl.Float64),
            pl.col("rate").cast(pl.Float64),
            pl.lit(reference_label).alias("source"),
        )
        for c in ("low", "high"):
            if c not in ref.columns:
                ref = ref.with_columns(pl.lit(None, dtype=pl.Float64).alias(c))
        data = pl.concat([data, ref.select(data.columns)], how="vertical_relaxed")
    budgets = sorted(data["budget"].unique().drop_nulls().to_list())
    x = alt.X("effect:Q", title=axis_title(effect) if effect in AXIS_TITLES else effect)
    y = alt.Y("rate:Q", title="rate (share of replicates)", scale=alt.Scale(domain=[0, 1]))
    color = alt.Color(
        "budget:O",
        title=axis_title(budget) if budget in AXIS_TITLES else budget,
        scale=alt.Scale(domain=budgets, scheme=_BUDGET_SCHEME),
    )
    tooltip = ["source:N", "outcome:N", "effect:Q", "budget:O", "rate:Q", "low:Q", "high:Q"]
    simulated = alt.datum.source == "simulated"
    layers: list[Any] = [
        alt.Chart()
        .mark_line(point=True, strokeWidth=1.5)
        .encode(x=x, y=y, color=color, tooltip=tooltip)
        .transform_filter(simulated)
    ]
    if has_mcse:
        layers.append(
            alt.Chart()
            .mark_rule(opacity=0.6)
            .encode(x=x, y=alt.Y("low:Q"), y2=alt.Y2("high:Q"), color=color)
            .transform_filter(simulated)
        )
    if has_ref:
        layers.append(
            alt.Chart()
            .mark_point(shape="diamond", filled=False, size=90, strokeWidth=2)
            .encode(x=x, y=y, color=color, tooltip=tooltip)
            .transform_filter(alt.datum.source == reference_label)
        )
        if "low" in kept:
            layers.append(
                alt.Chart()
                .mark_rule(strokeDash=[2, 2])
                .encode(x=x, y=alt.Y("low:Q"), y2=alt.Y2("high:Q"), color=color)
                .transform_filter(alt.datum.source == reference_label)
            )
    layered = alt.layer(*layers, data=data).properties(width=width, height=height)
    # panel titles in words: "evict harmful rate", not the column name evict_harmful_rate
    header = alt.Header(labelExpr="replace(datum.label, regexp('_', 'g'), ' ')")
    facet = alt.Facet("outcome:N", sort=outcomes, title=None, header=header)
    return layered.facet(facet=facet, columns=columns)
