"""Charts of a real ledger and of the gates' decisions on it.

:func:`lesson_timeline` draws which lessons went into which run (a ledger, no statistics);
:func:`attribution_forest` the estimates and intervals of several methods side by side,
coloured by a gate's decision; :func:`gate_decisions` each gate's decision per lesson
side by side (or gate by gate over runs, for a replay).  They draw frames they are given
and never estimate anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import altair as alt
import polars as pl

from cogstats._validation import ParameterError, check_int
from cogstats.charts._frames import (
    natural_key,
    require_columns,
    select_as,
    verdict_frame,
    verdict_scale,
)
from cogstats.ledger import Ledger, escape_id, escape_ids

__all__ = ["attribution_forest", "gate_decisions", "lesson_timeline"]


def _lesson_order(order: Sequence[str] | None, present: list[str]) -> list[str]:
    """Return the lessons to draw as shown (``present`` is shown already; ``order`` not)."""
    if order is None:
        return present
    order = list(order)
    if not all(isinstance(f, str) for f in order):
        raise ParameterError(f"lessons must be a sequence of lesson ids; got {order!r}")
    return list(map(escape_id, order))


def lesson_timeline(
    ledger: Ledger,
    *,
    lessons: Sequence[str] | None = None,
    verdicts: pl.DataFrame | None = None,
    title: str | None = None,
    width: int = 480,
    step: int = 12,
) -> alt.Chart:
    """Which lessons went into which run: one row per lesson, one tick per run.

    Parameters
    ----------
    ledger : Ledger
        The runs, in ledger order (the x axis is the run's position, 1-based).
    lessons : sequence of str, optional
        The lessons to draw, in this order (default: every lesson, in order of first
        appearance).  A ledger with hundreds of lessons needs a selection.
    verdicts : polars.DataFrame, optional
        ``fact_id`` and ``decision`` (``reason`` too) of one gate, to colour the ticks by
        its decision on the lesson.
    title : str, optional
        Chart title.
    width : int
        Plot width in pixels.
    step : int
        Height of one lesson's row in pixels.

    Returns
    -------
    altair.Chart
        ``tick`` marks, one data row per (run, lesson) injection drawn.

    Examples
    --------
    >>> from cogstats import Ledger
    >>> ledger = Ledger.from_records([
    ...     {"run_id": "r1", "score": 0.5, "fact_ids": ["a", "b"]},
    ...     {"run_id": "r2", "score": 0.7, "fact_ids": ["a"]},
    ... ])
    >>> chart = lesson_timeline(ledger)
    >>> chart.mark.type, len(chart.data)
    ('tick', 3)
    """
    if not isinstance(ledger, Ledger):
        raise ParameterError(f"ledger must be a cogstats Ledger; got {type(ledger).__name__}")
    check_int("width", width, minimum=1)
    check_int("step", step, minimum=1)
    order = _lesson_order(lessons, list(map(escape_id, ledger.fact_ids)))
    frame = escape_ids(
        pl.DataFrame(
            {
                "run": pl.Series(range(1, len(ledger) + 1), dtype=pl.Int64),
                "run_id": pl.Series(ledger.run_ids, dtype=pl.String),
                "score": pl.Series(ledger.scores, dtype=pl.Float64),
                "fact_id": ledger.frame["fact_ids"],
            }
        )
        .explode("fact_id")
        .drop_nulls("fact_id")
        .unique(["run", "fact_id"], maintain_order=True)
    ).filter(pl.col("fact_id").is_in(pl.Series(order, dtype=pl.String).implode()))
    enc: dict[str, Any] = {
        "x": alt.X(
            "run:Q",
            title="run (position in the ledger)",
            scale=alt.Scale(domain=[0.5, len(ledger) + 0.5], nice=False),
            axis=alt.Axis(tickMinStep=1),
        ),
        "y": alt.Y("fact_id:N", title="lesson", sort=order),
        "tooltip": ["fact_id:N", "run:Q", "run_id:N", "score:Q"],
    }
    if verdicts is not None:
        require_columns(
            verdicts, ["fact_id", "decision"], builder="lesson_timeline", argument="verdicts"
        )
        keep = ["fact_id", "decision", *(["reason"] if "reason" in verdicts.columns else [])]
        labels = verdict_frame(escape_ids(verdicts.select(keep))).select("fact_id", "verdict")
        frame = frame.join(labels.unique("fact_id"), on="fact_id", how="left").with_columns(
            pl.col("verdict").fill_null("not judged")
        )
        enc["color"] = alt.Color(
            "verdict:N",
            title="decision",
            scale=verdict_scale(frame["verdict"].unique().to_list()),
        )
        enc["tooltip"].append("verdict:N")
    chart = (
        alt.Chart(frame)
        .mark_tick(thickness=2)
        .encode(**enc)
        .properties(width=width, height=alt.Step(step))
    )
    return chart.properties(title=title) if title is not None else chart


def attribution_forest(
    attributions: pl.DataFrame,
    *,
    color: str = "verdict",
    lessons: Sequence[str] | None = None,
    color_title: str = "decision",
    title: str | None = None,
    width: int = 200,
    step: int = 14,
    clip: bool = True,
) -> alt.FacetChart:
    """Draw a forest plot per method: each lesson's estimate and interval, coloured by decision.

    Parameters
    ----------
    attributions : polars.DataFrame
        Rows of several methods (``fact_id``, ``method``, ``estimate``, ``ci_low``,
        ``ci_high``) and the ``color`` column, e.g.
        :attr:`cogstats.reports.audit.LedgerAudit.attribution`.  Rows without an
        estimate are left out (the subtitle counts them).
    color : str
        Column that colours the marks; with ``decision`` (and ``reason``) columns the
        default ``"verdict"`` is made from them (``evict: harmful`` etc.).
    lessons : sequence of str, optional
        Lessons to draw, in this order (default: all, by id, ``L2`` before ``L10``).
    color_title : str
        Legend title.
    title : str, optional
        Chart title.
    width : int
        Width of one method's panel in pixels.
    step : int
        Height of one lesson's row in pixels.
    clip : bool
        Fit the x axis to the estimates (plus a margin) and cut longer intervals at its
        edge, so that one unidentified lesson's huge interval does not squeeze the rest.

    Returns
    -------
    altair.FacetChart
        ``rule`` (interval), ``point`` (estimate) and a zero ``rule``, one panel per
        method, shared lesson axis.

    Examples
    --------
    >>> import polars as pl
    >>> rows = pl.DataFrame({
    ...     "fact_id": ["a", "b"] * 2, "method": ["lift", "lift", "ols", "ols"],
    ...     "estimate": [0.1, -0.2, 0.08, -0.25], "ci_low": [0.0, -0.3, -0.02, -0.4],
    ...     "ci_high": [0.2, -0.1, 0.18, -0.1], "decision": ["hold", "evict"] * 2,
    ...     "reason": [None, "eval-gate:harmful"] * 2,
    ... })
    >>> chart = attribution_forest(rows)
    >>> chart.facet.column.shorthand, len(chart.data)
    ('method:N', 4)
    """
    check_int("width", width, minimum=1)
    check_int("step", step, minimum=1)
    base = ["fact_id", "method", "estimate", "ci_low", "ci_high"]
    frame = require_columns(
        attributions, base, builder="attribution_forest", argument="attributions"
    )
    if color == "verdict" and "verdict" not in frame.columns and "decision" in frame.columns:
        frame = verdict_frame(frame)
    require_columns(frame, [color], builder="attribution_forest", argument="attributions")
    data = select_as(frame, {c: c for c in base} | {"color": color}).with_columns(
        pl.col("method").cast(pl.String), pl.col("color").cast(pl.String).fill_null("none")
    )
    drawn = data.filter(pl.col("estimate").is_not_null())
    if drawn.height == 0:
        raise ParameterError("attribution_forest: attributions has no row with an estimate")
    order = _lesson_order(lessons, sorted(data["fact_id"].unique().to_list(), key=natural_key))
    drawn = drawn.filter(pl.col("fact_id").is_in(pl.Series(order, dtype=pl.String).implode()))
    skipped = data.height - data.filter(pl.col("estimate").is_not_null()).height
    notes = (
        [f"{skipped} row(s) without an estimate (not identifiable) not drawn"] if skipped else []
    )
    scale: Any = alt.Undefined
    if clip:
        lo = cast(float, drawn["estimate"].min())
        hi = cast(float, drawn["estimate"].max())
        pad = max(0.15 * (hi - lo), 0.02)
        lo, hi = min(lo - pad, 0.0), max(hi + pad, 0.0)
        scale = alt.Scale(domain=[lo, hi], nice=False, clamp=True)
        drawn = drawn.with_columns(
            pl.col("ci_low").clip(lo, hi).alias("ci_low_shown"),
            pl.col("ci_high").clip(lo, hi).alias("ci_high_shown"),
        )
        cut = drawn.filter((pl.col("ci_low") < lo) | (pl.col("ci_high") > hi)).height
        if cut:
            notes.append(f"{cut} interval(s) cut at the plot edge")
    else:
        drawn = drawn.with_columns(
            pl.col("ci_low").alias("ci_low_shown"), pl.col("ci_high").alias("ci_high_shown")
        )
    drawn = drawn.with_columns(pl.lit(0.0).alias("zero"))
    x_title = "effect on the score"
    notes.insert(0, "point: estimate; line: 95% interval")
    y = alt.Y("fact_id:N", title="lesson", sort=order)
    c = alt.Color(
        "color:N",
        title=color_title,
        scale=verdict_scale(drawn["color"].unique().to_list()),
    )
    tooltip: list[Any] = ["method:N", "fact_id:N", "estimate:Q", "ci_low:Q", "ci_high:Q"]
    tooltip.append(alt.Tooltip("color:N", title=color_title))
    layers = [
        alt.Chart()
        .mark_rule(color="#999999")
        .encode(x=alt.X("zero:Q", title=x_title, scale=scale)),
        alt.Chart()
        .mark_rule(strokeWidth=1.5)
        .encode(x=alt.X("ci_low_shown:Q"), x2="ci_high_shown:Q", y=y, color=c),
        alt.Chart()
        .mark_point(filled=True, size=34)
        .encode(x=alt.X("estimate:Q"), y=y, color=c, tooltip=tooltip),
    ]
    height = step * len(order)
    layered = alt.layer(*layers, data=drawn).properties(width=width, height=height)
    return layered.facet(
        column=alt.Column("method:N", title=None, header=alt.Header(labelFontWeight="bold"))
    ).properties(title=alt.Title(title or "", subtitle="; ".join(notes)))


def gate_decisions(
    decisions: pl.DataFrame,
    *,
    x: str = "gate",
    lessons: Sequence[str] | None = None,
    title: str | None = None,
    step: int = 14,
) -> alt.Chart:
    """Each gate's decision per lesson, side by side (a grid of coloured cells).

    Parameters
    ----------
    decisions : polars.DataFrame
        ``fact_id``, ``decision`` (``reason`` splits evictions), the ``x`` column, and
        ``why`` (shown in the tooltip and as the cell's text) when present.
    x : str
        The column across: ``"gate"`` (side by side) or e.g. ``"after_run"`` for a
        replay gate by gate (then filter to one gate first, or facet the result).
    lessons : sequence of str, optional
        Lessons to draw, in this order (default: all, by id, ``L2`` before ``L10``).
    title : str, optional
        Chart title.
    step : int
        Size of a cell in pixels.

    Returns
    -------
    altair.Chart
        ``rect`` marks, one data row per (lesson, x) decision.

    Examples
    --------
    >>> import polars as pl
    >>> d = pl.DataFrame({"fact_id": ["a", "a"], "gate": ["cycgraph", "evidence"],
    ...                   "decision": ["evict", "hold"], "reason": ["eval-gate:harmful", None],
    ...                   "why": ["harm_evidence", "insufficient_evidence"]})
    >>> chart = gate_decisions(d)
    >>> chart.mark.type, len(chart.data)
    ('rect', 2)
    """
    check_int("step", step, minimum=1)
    require_columns(
        decisions, ["fact_id", "decision", x], builder="gate_decisions", argument="decisions"
    )
    keep = ["fact_id", "decision", x]
    keep += [c for c in ("reason", "why") if c in decisions.columns]
    data = verdict_frame(escape_ids(decisions.select(keep)))
    if x != "x":
        data = data.rename({x: "x"})
    order = _lesson_order(lessons, sorted(data["fact_id"].unique().to_list(), key=natural_key))
    data = data.filter(pl.col("fact_id").is_in(pl.Series(order, dtype=pl.String).implode()))
    tooltip = ["fact_id:N", alt.Tooltip("x:N", title=x), "verdict:N"]
    tooltip += ["why:N"] if "why" in data.columns else []
    numeric = data["x"].dtype.is_numeric()
    x_title = {"gate": "gate", "after_run": "gate after run (number)"}.get(x, x)
    chart = (
        alt.Chart(data)
        .mark_rect(stroke="white", strokeWidth=1)
        .encode(
            x=alt.X(f"x:{'O' if numeric else 'N'}", title=x_title, axis=alt.Axis(labelAngle=0)),
            y=alt.Y("fact_id:N", title="lesson", sort=order),
            color=alt.Color(
                "verdict:N",
                title="decision",
                scale=verdict_scale(data["verdict"].unique().to_list()),
            ),
            tooltip=tooltip,
        )
        .properties(width=alt.Step(max(step, 60 if not numeric else step)), height=alt.Step(step))
    )
    return chart.properties(title=title) if title is not None else chart
