"""Tune a gate against a real ledger: every change replays the gate over it, run by run.

:func:`replay` is the lesson store's run-by-run replay (:class:`cogstats.store.StoreCore`,
the one lifecycle wiring the store and the simulator's reference engine share): the
recorded runs are fed in order, each lesson arrives as a candidate with the first run that
lists it, and after each look every outcome is applied through the outcome -> status
table (promoted lessons are verified, evicted ones out, suspended ones judged again,
admitted ones ...), the gate judging the lessons in scope with their statuses.  The
prompts are the recorded ones: a verdict does not change which lessons later runs
carried (that would need the agent itself).  The widget shows the decisions over time
beside the baseline's and lists the lessons whose verdict differs from the baseline's,
and from the setting before the last move.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from cogstats._validation import ParameterError, check_int
from cogstats.ledger import Ledger
from cogstats.tuning._base import TunerBase, gate_entry, jupyter_chart
from cogstats.tuning.export import Chosen

__all__ = ["LedgerTuner", "Replay", "replay"]


def _text(value: str) -> str:
    """Escape text for HTML content (quotes kept: they are not in an attribute)."""
    return html.escape(value, quote=False)


_TABLE_STYLE = "font-size:85%;line-height:1.3;white-space:nowrap"


@dataclass(frozen=True)
class Replay:
    """A gate replayed over a ledger.

    Attributes
    ----------
    over_time : polars.DataFrame
        after_run, promoted, evicted, candidates: the lessons verified, out (evicted or
        retired) and the rest of those that arrived (candidates, admitted, suspended),
        after each look.
    verdicts : polars.DataFrame
        fact_id, decision (promote, evict, retire, or hold for a lesson still live),
        reason, after_run (the run of its last status change; null when it never
        changed), status (its status at the end).
    events : polars.DataFrame
        The status events (:meth:`cogstats.store.StoreCore.events`).
    """

    over_time: pl.DataFrame
    verdicts: pl.DataFrame
    events: pl.DataFrame | None = None


def look_runs(n_runs: int, max_looks: int) -> np.ndarray:
    """Return the runs after which a replay of ``max_looks`` looks looks.

    Every ``ceil(n_runs / max_looks)``-th run (every run for ledgers of at most
    ``max_looks`` runs), as :func:`replay`'s cadence.

    Examples
    --------
    >>> look_runs(5, 200).tolist(), look_runs(1000, 4).tolist()
    ([1, 2, 3, 4, 5], [250, 500, 750, 1000])
    """
    every = max(1, math.ceil(n_runs / max_looks))
    return np.arange(every, n_runs + 1, every)


#: a lesson's final status -> the verdict the tuner shows
_VERDICT = {"verified": "promote", "evicted": "evict", "retired": "retire"}


def replay(
    ledger: Ledger,
    gate: Any,
    *,
    max_looks: int | None = None,
    recheck_verified: bool = False,
    rng: Any = None,
) -> Replay:
    """Replay a gate over a ledger's history, run by run, as a lesson store would have.

    Each run is recorded in order and the gate looks after it (every run; with
    ``max_looks``, every ``ceil(runs / max_looks)``-th run); a lesson arrives as a
    candidate with the first run that lists it; every outcome is applied through the
    outcome -> status table and the next look judges the candidates, admitted and
    suspended lessons with their statuses (verified ones too with ``recheck_verified``):
    the store's lifecycle (:class:`cogstats.store.StoreCore`).  A gate the streaming
    runner cannot stream (one that reads the lesson table, or an estimator without
    running statistics) is judged by ``evaluate`` on the ledger so far, through the same
    lifecycle (O(runs) a look).

    Parameters
    ----------
    ledger : Ledger
        The recorded runs, in order.
    gate : gate object
        Anything with ``evaluate(ledger, candidates=None, *, rng=None)``.
    max_looks : int, optional
        At most this many looks, evenly spaced (default: a look after every run).
    recheck_verified : bool
        Judge verified lessons too.
    rng : optional
        Passed to a gate judged by ``evaluate`` (streamed gates do not draw).

    Returns
    -------
    Replay

    Examples
    --------
    >>> from cogstats import CycgraphGate, Ledger
    >>> ledger = Ledger.from_records(
    ...     [{"run_id": f"r{i}", "score": 0.9 if i % 2 else 0.5,
    ...       "fact_ids": ["a"] if i % 2 else ["b"]} for i in range(8)])
    >>> out = replay(ledger, CycgraphGate(decision_rule="margin", min_trials=2))
    >>> out.verdicts.rows()
    [('a', 'promote', None, 4, 'verified'), ('b', 'evict', 'eval-gate:harmful', 3, 'evicted')]
    """
    from cogstats.store import Cadence, Lifecycle, StoreCore

    if not isinstance(ledger, Ledger):
        raise ParameterError(f"ledger must be a cogstats.Ledger; got {type(ledger).__name__}")
    n = len(ledger)
    every = 1
    if max_looks is not None:
        looks = int(check_int("max_looks", max_looks, minimum=1) or 1)
        every = max(1, math.ceil(n / looks))
    cadence = Cadence(every=every, from_run=every, recheck_verified=bool(recheck_verified))
    records = ledger.to_records()
    try:
        core: Any = StoreCore(gate, None, cadence)
    except ParameterError:  # not streamable: judged by evaluate on the ledger so far
        core = _BatchCore(gate, cadence, rng)
    book: Lifecycle = core.lifecycle
    rows = []
    for k, rec in enumerate(records, start=1):
        covs = {c: v for c, v in rec.items() if c not in ("run_id", "score", "fact_ids")}
        core.apply_run(rec["run_id"], rec["score"], rec["fact_ids"] or [], covs)
        if cadence.due(k):
            counts = dict.fromkeys(("verified", "out", "rest"), 0)
            for status in book.status.values():
                key = "verified" if status == "verified" else "rest"
                counts["out" if status in ("evicted", "retired") else key] += 1
            rows.append((k, counts["verified"], counts["out"], counts["rest"]))
    over_time = pl.DataFrame(
        rows,
        schema={
            "after_run": pl.Int64,
            "promoted": pl.Int64,
            "evicted": pl.Int64,
            "candidates": pl.Int64,
        },
        orient="row",
    )
    last: dict[str, tuple[str | None, int]] = {}
    for e in book.events:
        last[e.fact_id] = (e.reason, e.run)
    verdicts = pl.DataFrame(
        [
            (
                f,
                _VERDICT.get(book.status[f], "hold"),
                last.get(f, (None, None))[0],
                last.get(f, (None, None))[1],
                book.status[f],
            )
            for f in sorted(book.status)
        ],
        schema={
            "fact_id": pl.String,
            "decision": pl.String,
            "reason": pl.String,
            "after_run": pl.Int64,
            "status": pl.String,
        },
        orient="row",
    )
    return Replay(over_time, verdicts, core.events())


class _BatchCore:
    """The lifecycle over a ledger judged by ``gate.evaluate`` (a gate that does not stream)."""

    def __init__(self, gate: Any, cadence: Any, rng: Any) -> None:
        from cogstats.store import Lifecycle

        self.gate, self.cadence, self.rng = gate, cadence, rng
        self.lifecycle = Lifecycle.for_parts(gate, None, cadence)
        self.ledger = Ledger()

    def apply_run(self, run_id: str, score: float, facts: list[str], covs: dict[str, Any]) -> Any:
        run = len(self.ledger) + 1
        for f in dict.fromkeys(facts):
            self.lifecycle.add(f, run)
        self.ledger.record(run_id, score, facts, **covs)
        if not self.cadence.due(run):
            return []

        def judge(ids: list[str], extra: dict[str, Any]) -> Any:
            from cogstats.store.lifecycle import takes_rng

            if takes_rng(self.gate):
                extra["rng"] = self.rng
            return self.gate.evaluate(self.ledger, ids, **extra)

        return self.lifecycle.look(run, judge)

    def events(self) -> pl.DataFrame:
        rows = [c.to_dict() for c in self.lifecycle.events]
        return pl.DataFrame(rows) if rows else pl.DataFrame()


class LedgerTuner(TunerBase):
    """The widget :func:`cogstats.tune` returns for a ledger (see there)."""

    def __init__(
        self,
        ledger: Any,
        *,
        gate: Any = "cycgraph",
        baseline: Any = "margin",
        max_looks: int | None = 200,
        debounce: float = 0.15,
        seed: int | None = None,
    ) -> None:
        import ipywidgets as widgets

        if not isinstance(ledger, Ledger):
            ledger = Ledger.read(ledger)
        self.ledger = ledger
        self.max_looks = (
            None if max_looks is None else int(check_int("max_looks", max_looks, minimum=1) or 1)
        )
        self.seed = seed
        g_entry, g_opts = gate_entry(gate)
        super().__init__(g_entry, g_opts, None, {}, debounce=debounce)
        if baseline == "margin":
            self._baseline: tuple[str, dict[str, Any]] = ("cycgraph", {"decision_rule": "margin"})
        else:
            b_entry, b_opts = gate_entry(baseline)
            self._baseline = (b_entry.name, b_opts)
        self._baseline_cache: dict[str, Replay] = {}
        self._previous: Replay | None = None
        self.latest: Replay | None = None
        self.baseline_result: Replay | None = None
        self.chart = jupyter_chart(self._chart(None, None))
        self.changes_html = widgets.HTML("<i>waiting for the first replay...</i>")
        self.baseline_html = widgets.HTML(self._baseline_text())
        left = widgets.VBox(
            [*self._option_boxes(), widgets.HBox([self.keep_button, self.pin_button])],
            layout=widgets.Layout(width="540px"),
        )
        right = widgets.VBox(
            [self.status, self.error, self.baseline_html, self.chart, self.changes_html],
            layout=widgets.Layout(width="480px"),
        )
        self.widget = widgets.VBox(
            [
                widgets.HTML(
                    f"<b>cogstats.tune</b>: a ledger of {len(ledger)} runs, "
                    f"{len(ledger.fact_ids)} lessons"
                ),
                widgets.HBox([left, right], layout=widgets.Layout(flex_flow="row wrap")),
                self.kept,
            ]
        )
        self.changed()

    def _baseline_text(self) -> str:
        name, opts = self._baseline
        shown = ", ".join(f"{k}={v!r}" for k, v in opts.items() if v is not None)
        return (
            f"<span style='color:#666'>baseline (grey): gate {_text(name)} ({_text(shown)})</span>"
        )

    def pin(self) -> None:
        """Pin the current settings as the baseline."""
        self._baseline = (self.gate_entry.name, self.options("gate"))
        self.baseline_html.value = self._baseline_text()
        self.changed()

    def chosen(self) -> Chosen:
        """Return the current settings (the gate and its options)."""
        return Chosen(self.gate_entry.name, self.options("gate"))

    def _request(self) -> Any:
        return (self.gate_entry.name, self.options("gate"), self._baseline)

    def _work(self, request: Any) -> tuple[Replay, Replay]:
        from cogstats.gates import make_gate

        name, options, baseline = request
        tuned = replay(
            self.ledger, make_gate(name, **options), max_looks=self.max_looks, rng=self.seed
        )
        key = repr(baseline)
        base = self._baseline_cache.get(key)
        if base is None:
            base = replay(
                self.ledger,
                make_gate(baseline[0], **baseline[1]),
                max_looks=self.max_looks,
                rng=self.seed,
            )
            self._baseline_cache = {key: base}
        return tuned, base

    def _describe(self, request: Any, result: Any) -> str:
        return f"{result[0].over_time.height} looks over {len(self.ledger)} runs"

    def _show(self, request: Any, result: Any) -> None:
        tuned, base = result
        self._previous, self.latest, self.baseline_result = self.latest, tuned, base
        self.chart.chart = self._chart(tuned, base)
        self.changes_html.value = self._changes(tuned, base, self._previous)

    def changes(self, against: str = "baseline") -> pl.DataFrame:
        """Return the lessons whose verdict differs from the baseline's (or ``"previous"``).

        Columns: fact_id, decision, after_run (tuned), then the other's.
        """
        if self.latest is None:
            raise ParameterError("no replay has finished yet (call wait() first)")
        other = self.baseline_result if against == "baseline" else self._previous
        if other is None:
            return self.latest.verdicts.head(0)
        return _diff(self.latest, other)

    def _changes(self, tuned: Replay, base: Replay, previous: Replay | None) -> str:
        parts = []
        for title, other in (("vs the baseline", base), ("since the last move", previous)):
            if other is None:
                continue
            diff = _diff(tuned, other)
            rows = "".join(
                f"<tr><td>{_text(r['fact_id'])}</td>"
                f"<td>{r['decision']} @ {r['after_run'] or '-'}</td>"
                f"<td style='color:#888'>{r['other_decision']} @ {r['other_after_run'] or '-'}"
                "</td></tr>"
                for r in diff.head(30).iter_rows(named=True)
            )
            more = f" (first 30 of {diff.height})" if diff.height > 30 else ""
            parts.append(
                f"<b>{diff.height} lesson(s) change verdict {title}{more}</b>"
                "<table class='cogstats-tune-changes' style='"
                f"{_TABLE_STYLE}'><thead><tr>"
                "<th>lesson</th><th>tuned</th><th>other</th></tr></thead>"
                f"<tbody>{rows}</tbody></table>"
            )
        counts = tuned.verdicts["decision"].value_counts().sort("decision").rows()
        head = "verdicts at the end: " + ", ".join(f"{d} {n}" for d, n in counts)
        return f"<div class='cogstats-tune-metrics'>{_text(head)}</div>" + "".join(parts)

    def _chart(self, tuned: Replay | None, base: Replay | None) -> Any:
        import altair as alt

        parts = []
        for name, res in (("baseline", base), ("tuned", tuned)):
            if res is not None:
                parts.append(
                    res.over_time.unpivot(
                        index="after_run",
                        on=["promoted", "evicted", "candidates"],
                        variable_name="status",
                        value_name="lessons",
                    ).with_columns(pl.lit(name).alias("setting"))
                )
        data = (
            pl.concat(parts)
            if parts
            else pl.DataFrame(
                schema={
                    "after_run": pl.Int64,
                    "status": pl.String,
                    "lessons": pl.Int64,
                    "setting": pl.String,
                }
            )
        )
        return (
            alt.Chart(data)
            .mark_line(interpolate="step-after")
            .encode(
                x=alt.X("after_run:Q", title="after run"),
                y=alt.Y("lessons:Q", title="lessons"),
                color=alt.Color(
                    "status:N",
                    scale=alt.Scale(
                        domain=["promoted", "evicted", "candidates"],
                        range=["#54a24b", "#e45756", "#4c78a8"],
                    ),
                ),
                strokeDash=alt.StrokeDash(
                    "setting:N",
                    scale=alt.Scale(domain=["tuned", "baseline"], range=[[1, 0], [4, 3]]),
                ),
                tooltip=["setting", "status", "after_run", "lessons"],
            )
            .properties(width=340, height=240, title="decisions over time (dashed: baseline)")
        )


def _diff(tuned: Replay, other: Replay) -> pl.DataFrame:
    o = other.verdicts.select(
        "fact_id",
        pl.col("decision").alias("other_decision"),
        pl.col("after_run").alias("other_after_run"),
    )
    return (
        tuned.verdicts.select("fact_id", "decision", "after_run")
        .join(o, on="fact_id", how="full", coalesce=True)
        .filter(pl.col("decision").ne_missing(pl.col("other_decision")))
        .sort("fact_id")
    )
