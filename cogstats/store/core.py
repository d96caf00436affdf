"""A lesson store in memory: the lifecycle, the gate's running statistics, the policy.

:class:`StoreCore` is what :class:`~cogstats.store.LessonStore` keeps in memory and what
``tune(ledger=...)``'s replay runs: a :class:`~cogstats.store.lifecycle.Lifecycle` (the
statuses, the events, the judged set, the lesson table), an engine holding the runs and
the gate's statistics (:mod:`cogstats.store.engine`: the lifecycle gate's in-place
statistics, or a :class:`~cogstats.gates.StreamingGate` for any other gate), and the
retrieval policy.  :meth:`StoreCore.apply_run` is one run, as the simulator's reference
engine runs it: the run's new lessons arrive as candidates, the run is recorded, and
when the cadence says so the lessons in scope are judged and the outcomes applied.
Nothing here touches a disk.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl

from cogstats._validation import CogstatsError, LedgerError
from cogstats.store.lifecycle import Cadence, Change, Lifecycle

__all__ = ["RunConflictError", "StoreCore", "UnknownLessonError", "run_content"]


class RunConflictError(CogstatsError, ValueError):
    """A run id recorded before, given again with other content (names both)."""


class UnknownLessonError(LedgerError):
    """A run lists lessons the store does not hold, and the store refuses them."""


def run_content(
    run_id: str, score: Any, fact_ids: Any, covariates: Mapping[str, Any] | None
) -> tuple[str, float, list[str], dict[str, Any]]:
    """Validate a run as the ledger does: ``(run_id, score, fact_ids, covariates)``.

    Raises
    ------
    LedgerError
        Naming the field (the ledger's messages).
    """
    from cogstats.ledger import validate_record

    rec: dict[str, Any] = {"run_id": run_id, "score": score, "fact_ids": fact_ids}
    for k, v in (covariates or {}).items():
        if k in rec:
            raise LedgerError(
                f"covariates must not be named run_id, score or fact_ids; got {k!r}", field=k
            )
        rec[k] = v
    try:
        return validate_record(rec, row=1, source=None, fact_ids_required=False)
    except LedgerError as exc:
        raise LedgerError(exc.message, field=exc.field) from None


class StoreCore:
    """The in-memory store (see the module notes).

    Parameters
    ----------
    gate, policy : objects
        The gate (anything a :class:`~cogstats.gates.StreamingGate` streams) and the
        retrieval policy.
    cadence : Cadence
        When the gate looks, and whether verified lessons are re-checked.

    Examples
    --------
    >>> import cogstats
    >>> policy, gate = cogstats.recommended(max_facts=4, candidate_slots=2)
    >>> core = StoreCore(gate, policy, Cadence())
    >>> _ = core.add("a"); _ = core.add("b")
    >>> core.select(rng=1).fact_ids
    ('a', 'b')
    >>> core.apply_run("r1", 0.6, ["a", "b"], {"difficulty_proxy": 0.1})
    []
    >>> core.runs, core.lifecycle.status["a"]
    (1, 'candidate')
    """

    def __init__(self, gate: Any, policy: Any, cadence: Cadence) -> None:
        from cogstats.store.engine import engine_for

        self.gate = gate
        self.policy = policy
        self.cadence = cadence
        self.lifecycle = Lifecycle.for_parts(gate, policy, cadence)
        self.engine = engine_for(gate)
        self._ledger: Any = None  # the runs as a Ledger, for policies that read one

    # ------------------------------------------------------------------ views
    @property
    def stats(self) -> Any:
        """The runs (a :class:`~cogstats.stats.StreamingStats`)."""
        return self.engine.stats

    @property
    def runs(self) -> int:
        """The runs recorded."""
        return int(self.engine.stats.n_runs)

    @property
    def next_run(self) -> int:
        """The number of the coming run (1-based)."""
        return self.runs + 1

    def to_ledger(self) -> Any:
        """Return the runs as a :class:`~cogstats.ledger.Ledger`."""
        return self.engine.stats.to_ledger()

    def trials(self, ids: Sequence[str]) -> list[int]:
        """Return each lesson's trials (runs that carried it)."""
        return self.engine.stats.trials(list(ids)).tolist()

    def table(self) -> pl.DataFrame:
        """Return the lesson table the policy is shown, with each lesson's ``trials``."""
        book = self.lifecycle
        ids = book.shown()
        return book.table_of(ids, {"trials": self.trials(ids)})

    def context(self, context: Mapping[str, Any] | None) -> dict[str, Any]:
        """Return the policy's context of the coming run: the caller's, with ``run``."""
        ctx = dict(context or {})
        ctx["run"] = self.next_run
        return ctx

    # ------------------------------------------------------------------ operations
    def add(
        self,
        fact_id: str,
        *,
        created_at: int | None = None,
        family: str | None = None,
        status: str = "candidate",
    ) -> bool:
        """Add a lesson before the coming run (False: known already)."""
        return self.lifecycle.add(
            fact_id, self.next_run, created_at=created_at, family=family, status=status
        )

    def select(self, *, context: Mapping[str, Any] | None = None, rng: Any = None) -> Any:
        """Ask the policy for the coming run's lessons (``rng``: a seed or a Generator)."""
        from cogstats.retrieval import Selection

        table = self.table()
        if table.height == 0:
            return Selection(())
        gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
        return self.policy.select(
            table, self.ledger_for_policy(), rng=gen, context=self.context(context)
        )

    def select_with_uniforms(
        self, uniforms: Any, *, context: Mapping[str, Any] | None = None
    ) -> Any:
        """As :meth:`select`, with the run's pre-drawn uniforms (the simulator's replay)."""
        from cogstats.retrieval import Selection

        table = self.table()
        if table.height == 0:
            return Selection(())
        return self.policy.select_with_uniforms(
            table,
            self.ledger_for_policy(),
            np.asarray(uniforms, dtype=float),
            context=self.context(context),
        )

    def ledger_for_policy(self) -> Any:
        """Return the ledger a policy reads (None for one that reads the table only).

        A policy with ``needs_ledger`` False reads the table's ``trials`` column instead;
        another gets the runs so far as a ledger (cached until the next run).
        """
        if not getattr(self.policy, "needs_ledger", True):
            return None
        if self._ledger is None or len(self._ledger) != self.runs:
            self._ledger = self.to_ledger()
        return self._ledger

    def check_run(self, covariates: Mapping[str, Any]) -> None:
        """Refuse a run the statistics cannot take (before anything is written)."""
        stats = self.engine.stats
        stats.check_kinds(covariates, row=None, source=None)
        check = getattr(self.gate, "check_run", None)
        if callable(check):
            check(stats, covariates)
        else:
            stats.check_regression_covariates(covariates)

    def recorded(
        self, run_id: str, score: float, facts: Sequence[str], covs: Mapping[str, Any]
    ) -> list[Change] | None:
        """Return the changes of run ``run_id`` when it is recorded with this content, else None.

        Raises
        ------
        RunConflictError
            When ``run_id`` is recorded with other content (naming both).
        """
        stats = self.engine.stats
        i = stats.index_of(run_id)
        if i is None:
            return None
        table = stats.table_ids
        have = [table[j] for j in stats.run_lessons(i).tolist()]
        stored = {k: v for k, v in stats.run_covariates(i).items() if v is not None}
        want = {k: v for k, v in covs.items() if v is not None}
        same = (
            stats.score(i) == score
            and have == list(dict.fromkeys(facts))
            and stored.keys() == want.keys()
            and all(type(v) is type(want[k]) and v == want[k] for k, v in stored.items())
        )
        if not same:
            raise RunConflictError(
                f"run id {run_id!r} is recorded already (run {i + 1}: score "
                f"{stats.score(i)!r}, lessons {have}, covariates {stored}); got score "
                f"{score!r}, lessons {list(dict.fromkeys(facts))}, covariates {want}. A "
                "store never rewrites a recorded run: give the new run another id"
            )
        return self.changes_of(i + 1)

    def changes_of(self, run: int) -> list[Change]:
        """Return the status changes the look after run ``run`` made."""
        return [c for c in self.lifecycle.events if c.run == run]

    def unknown(self, facts: Sequence[str]) -> list[str]:
        """Return the lessons of a run the store does not hold (once each, in order)."""
        book = self.lifecycle
        return [f for f in dict.fromkeys(facts) if f not in book]

    def apply_run(
        self,
        run_id: str,
        score: float,
        facts: Sequence[str],
        covs: Mapping[str, Any],
        *,
        look: bool = True,
    ) -> list[Change]:
        """Record one validated run and look when the cadence says so; return the changes.

        The run's lessons the store does not hold arrive as candidates first.  When the
        run cannot be recorded (the gate refuses it) nothing changes.  ``look=False``
        records a run of history (imported, not looked at).
        """
        run = self.next_run
        book = self.lifecycle
        new = self.unknown(facts)
        for f in new:
            book.add(f, run)
        due = look and self.gate is not None and self.cadence.due(run)
        ids = book.judged() if due else []
        asked = (ids, self._statuses(ids)) if ids else None
        try:
            report = self.engine.record(run_id, score, facts, covs, asked)
        except BaseException:
            book.discard(new)
            raise
        return [] if report is None else book.apply(report, run)

    def _statuses(self, ids: list[str]) -> Mapping[str, Any] | None:
        """Return the statuses a look passes (None: the gate takes none).

        The lifecycle engine reads status strings: the lifecycle's own mapping; another
        gate gets each judged lesson's ``LessonState``.
        """
        book = self.lifecycle
        if not book.gives_statuses:
            return None
        if self.engine.kind == "lifecycle":
            return book.status
        return book.states(ids)

    # ------------------------------------------------------------------ frames
    def lessons(self) -> pl.DataFrame:
        """Return every lesson: status, since, trials, the last look's numbers, the reason."""
        book = self.lifecycle
        ids = book.ids
        last = [book.last.get(f, (None, None, None)) for f in ids]
        tee = [book.gate_t.get(f) for f in ids]
        return pl.DataFrame(
            {
                "fact_id": ids,
                "status": [book.status[f] for f in ids],
                "since": [book.since[f] for f in ids],
                "trials": self.trials(ids),
                "estimate": [x[0] for x in last],
                "std_error": [x[1] for x in last],
                "t": [None if t is None or t != t else t for t in tee],
                "why": [x[2] for x in last],
                "reason": [book.reason.get(f) for f in ids],
                "created_at": [book.created[f] for f in ids],
                "family": [book.family[f] for f in ids],
            },
            schema={
                "fact_id": pl.String,
                "status": pl.String,
                "since": pl.Int64,
                "trials": pl.Int64,
                "estimate": pl.Float64,
                "std_error": pl.Float64,
                "t": pl.Float64,
                "why": pl.String,
                "reason": pl.String,
                "created_at": pl.Int64,
                "family": pl.String,
            },
        )

    def events(self) -> pl.DataFrame:
        """Return the status events: run, run_id, fact_id, from, to, decision, reason, why.

        ``run`` is the store's run number (1-based, in record order) after whose look the
        status changed; ``run_id`` that run's id.
        """
        run_ids = self.engine.stats.run_ids
        rows = [
            (c.run, run_ids[c.run - 1], c.fact_id, c.old, c.new, c.decision, c.reason, c.why)
            for c in self.lifecycle.events
        ]
        schema = {
            "run": pl.Int64,
            "run_id": pl.String,
            "fact_id": pl.String,
            "from": pl.String,
            "to": pl.String,
            "decision": pl.String,
            "reason": pl.String,
            "why": pl.String,
        }
        return pl.DataFrame(rows, schema=schema, orient="row")
