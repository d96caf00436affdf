"""Gate decisions: one replicate's timeline, and decisions per run over replicates.

Both draw a ``decisions`` frame (replicate, after_run, fact_id, decision, reason, kind,
...) as :class:`~cogstats.sim.SimulationResult` holds it.  The only aggregation is a count
per run divided by the number of replicates, for display.
"""

from __future__ import annotations

from typing import Any, cast

import altair as alt
import polars as pl

from cogstats._validation import ParameterError, check_int
from cogstats.charts._frames import VERDICTS, require_columns, verdict_frame, verdict_scale
from cogstats.ledger import escape_ids

__all__ = ["VERDICTS", "decision_timeline", "decisions_by_run"]


def decision_timeline(
    decisions: pl.DataFrame,
    *,
    title: str | None = None,
    width: int = 420,
    step: int = 12,
) -> alt.Chart:
    """When the gate decided what, for one replicate: one row per lesson.

    Parameters
    ----------
    decisions : polars.DataFrame
        ``after_run``, ``fact_id``, ``decision`` for one replicate (filter a
        simulation's ``decisions`` on ``replicate`` first); ``reason`` splits evictions
        into harmful / no_lift; ``kind`` (genuine, neutral, poison) sets the shape;
        ``true_effect`` is shown in the tooltip.
    title : str, optional
        Chart title.
    width : int
        Plot width in pixels.
    step : int
        Height of one lesson's row in pixels.

    Returns
    -------
    altair.Chart
        ``point`` marks at (run of the decision, lesson), coloured by verdict; lessons
        ordered by their first decision.  One data row per decision.

    Examples
    --------
    >>> from cogstats.sim import Scenario, simulate
    >>> scenario = Scenario.from_dict({
    ...     "runs": 12,
    ...     "lessons": {"listed": [{"id": f"L{i}", "effect": 0.02} for i in range(4)],
    ...                 "poison": [{"after_run": 3, "count": 2, "effect": -0.2}]},
    ...     "retrieval": {"max_facts": 4, "candidate_slots": 3, "rest_after_trials": 3},
    ...     "gate": {"type": "cycgraph", "decision_rule": "margin", "min_trials": 2,
    ...              "max_trials": 4},
    ... })
    >>> result = simulate(scenario, replicates=3, rng=5)
    >>> one = result.decisions.filter(result.decisions["replicate"] == 0)
    >>> chart = decision_timeline(one)
    >>> chart.mark.type, len(chart.data) == one.height
    ('point', True)
    """
    check_int("width", width, minimum=1)
    check_int("step", step, minimum=1)
    require_columns(
        decisions,
        ["after_run", "fact_id", "decision"],
        builder="decision_timeline",
        argument="decisions",
    )
    if "replicate" in decisions.columns and decisions["replicate"].n_unique() > 1:
        raise ParameterError(
            "decision_timeline: decisions holds replicates "
            f"{sorted(decisions['replicate'].unique().to_list())[:5]}...; filter it to one "
            "replicate first (decisions.filter(pl.col('replicate') == r))"
        )
    keep = ["after_run", "fact_id", "decision"]
    keep += [c for c in ("reason", "kind", "true_effect") if c in decisions.columns]
    data = verdict_frame(escape_ids(decisions.select(keep))).sort(["after_run", "fact_id"])
    order = data.unique("fact_id", keep="first", maintain_order=True)["fact_id"].to_list()
    enc: dict[str, Any] = {
        "x": alt.X("after_run:Q", title="decided after run", axis=alt.Axis(tickMinStep=1)),
        "y": alt.Y("fact_id:N", sort=order, title="lesson"),
        "color": alt.Color(
            "verdict:N", title="verdict", scale=verdict_scale(data["verdict"].unique().to_list())
        ),
        "tooltip": [c for c in (*keep, "verdict") if c not in ("reason",)],
    }
    if "kind" in data.columns:
        enc["shape"] = alt.Shape("kind:N", title="kind")
    chart = (
        alt.Chart(data)
        .mark_point(filled=True, size=70)
        .encode(**enc)
        .properties(width=width, height=alt.Step(step))
    )
    if title is not None:
        chart = chart.properties(title=title)
    return chart


def decisions_by_run(
    decisions: pl.DataFrame,
    *,
    replicates: int,
    by_kind: bool = True,
    title: str | None = None,
    width: int = 420,
    height: int = 160,
) -> alt.Chart | alt.FacetChart:
    """Decisions per replicate after each run, stacked by verdict (one panel per kind).

    Parameters
    ----------
    decisions : polars.DataFrame
        ``replicate``, ``after_run``, ``decision`` (and ``reason``; ``kind`` when
        ``by_kind``) over all replicates.
    replicates : int
        How many replicates were simulated (replicates without any decision count too,
        so this cannot be read off the frame).
    by_kind : bool
        One panel per lesson kind (needs ``kind``).
    title : str, optional
        Chart title.
    width, height : int
        Size of one panel in pixels.

    Returns
    -------
    altair.Chart or altair.FacetChart
        Stacked ``bar`` marks: x the run after which the gate decided, y the number of
        such decisions divided by ``replicates`` (display-only averaging).

    Examples
    --------
    >>> from cogstats.sim import Scenario, simulate
    >>> scenario = Scenario.from_dict({
    ...     "runs": 12,
    ...     "lessons": {"listed": [{"id": f"L{i}", "effect": 0.02} for i in range(4)],
    ...                 "poison": [{"after_run": 3, "count": 2, "effect": -0.2}]},
    ...     "retrieval": {"max_facts": 4, "candidate_slots": 3, "rest_after_trials": 3},
    ...     "gate": {"type": "cycgraph", "decision_rule": "margin", "min_trials": 2,
    ...              "max_trials": 4},
    ... })
    >>> result = simulate(scenario, replicates=10, rng=5)
    >>> chart = decisions_by_run(result.decisions, replicates=10)
    >>> round(float(chart.data["per_replicate"].sum()) * 10) == result.decisions.height
    True
    """
    n = cast(int, check_int("replicates", replicates, minimum=1))
    check_int("width", width, minimum=1)
    check_int("height", height, minimum=1)
    needed = ["replicate", "after_run", "decision", *(["kind"] if by_kind else [])]
    require_columns(
        decisions, needed, builder="decisions_by_run", argument="decisions", allow_empty=True
    )
    seen = decisions["replicate"].n_unique()
    if seen > n:
        raise ParameterError(
            f"decisions_by_run: replicates must be >= the {seen} replicates in decisions; "
            f"got {replicates!r}"
        )
    keys = ["after_run", "verdict", *(["kind"] if by_kind else [])]
    data = (
        verdict_frame(decisions)
        .group_by(keys)
        .agg((pl.len() / n).alias("per_replicate"))
        .sort(keys)
    )
    chart = (
        alt.Chart(data)
        .mark_bar()
        .encode(
            x=alt.X("after_run:O", title="decided after run"),
            y=alt.Y("per_replicate:Q", title="decisions per replicate"),
            color=alt.Color(
                "verdict:N",
                title="verdict",
                scale=verdict_scale(data["verdict"].unique().to_list()),
            ),
            tooltip=[*keys, "per_replicate:Q"],
        )
        .properties(width=width, height=height)
    )
    out: alt.Chart | alt.FacetChart = (
        chart.facet(
            row=alt.Row(
                "kind:N",
                title=None,
                header=alt.Header(labelOrient="top", labelAngle=0, labelAnchor="start"),
            )
        )
        if by_kind
        else chart
    )
    return out.properties(
        title=alt.Title(title or "", subtitle=f"mean over {n} replicates of the decisions taken")
    )
