"""The lesson lifecycle wiring, written once: statuses, events, the judged set, the table.

A gate's report says, per lesson judged, an *outcome* (``cogstats._codes.OUTCOMES``:
hold, promote, evict, retire, admit, suspend, release); :class:`Lifecycle` applies each
through the one outcome -> status table (:data:`cogstats.gates.OUTCOME_STATUS`) and
keeps what a lesson store holds besides the runs:

- each lesson's ``status`` and ``since`` (the first run in that status: the run it
  arrived before, or the run after the decision that moved it);
- each lesson's ``gate_t`` (its t at the gate's last look: the report's ``t_stat``,
  else its ``crater_t``; NaN before one) and ``gate_t_own`` (the report's
  ``identifiable``: the t is the lesson's own, not its group's);
- the status events (:class:`Change`: run, lesson, from, to, the outcome, its reason
  and why), in the order they happened.

**Which lessons are judged** (the simulator's scope, documented in
docs/production.md): at a look, the candidates, admitted and suspended lessons; verified
lessons too when re-checking (``recheck_verified``, or a gate's ``judges_verified``);
evicted and retired lessons never.  **When**: at run ``run`` when ``run >= from_run``
and ``(run - from_run) % every == 0`` (:class:`Cadence`).

**The lesson table a policy sees** (:meth:`Lifecycle.table`): the candidates, admitted
and verified lessons, and the suspended ones for a policy with a re-test slot
(``retests_suspended``), oldest first (by ``created_at``, then id), with the columns
``id``, ``status``, ``created_at``, ``applies_to`` (the lesson's family, or null),
``status_since``, ``gate_t`` and ``gate_t_own`` (and any extra columns the caller adds,
such as the store's ``trials``).

The simulator's reference engine (:mod:`cogstats.sim.reference`), the lesson store
(:class:`cogstats.store.LessonStore`) and ``cogstats.tune(ledger=...)``'s replay all
call this module, so that their decisions are the same by construction.
"""

from __future__ import annotations

import bisect
import inspect
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from cogstats import _codes as C
from cogstats._validation import ParameterError, check_int
from cogstats.gates import OUTCOME_STATUS

__all__ = [
    "JUDGED_STATUSES",
    "SHOWN_STATUSES",
    "Cadence",
    "Change",
    "Lifecycle",
    "takes_rng",
    "takes_statuses",
]

#: the statuses a gate judges at each look (verified too when re-checking)
JUDGED_STATUSES: tuple[str, ...] = (C.CANDIDATE, C.ADMITTED, C.SUSPENDED)
#: the statuses retrieval is shown (suspended ones only by a policy with a re-test slot)
SHOWN_STATUSES: tuple[str, ...] = (C.CANDIDATE, C.VERIFIED, C.ADMITTED)

#: the lesson table's columns and their types (the policy's view of the store)
TABLE_SCHEMA: dict[str, Any] = {
    "id": pl.String,
    "status": pl.String,
    "created_at": pl.Int64,
    "applies_to": pl.String,
    "status_since": pl.Int64,
    "gate_t": pl.Float64,
    "gate_t_own": pl.Boolean,
}


def takes_rng(gate: Any) -> bool:
    """Return whether ``gate.evaluate`` accepts ``rng`` (part of the gate protocol).

    Examples
    --------
    >>> from cogstats.gates import CycgraphGate
    >>> takes_rng(CycgraphGate())
    True
    """
    try:
        params = inspect.signature(gate.evaluate).parameters
    except (TypeError, ValueError):  # pragma: no cover - builtins without a signature
        return True
    return "rng" in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def takes_statuses(gate: Any) -> bool:
    """Return whether ``gate.evaluate`` accepts ``statuses`` (the lifecycle protocol).

    Examples
    --------
    >>> from cogstats.gates import LifecycleGate
    >>> class Mine:
    ...     def evaluate(self, ledger, candidates=None): ...
    >>> takes_statuses(Mine()), takes_statuses(LifecycleGate())
    (False, True)
    """
    try:
        params = inspect.signature(gate.evaluate).parameters
    except (TypeError, ValueError):  # pragma: no cover - builtins without a signature
        return False
    return "statuses" in params


@dataclass(frozen=True)
class Cadence:
    """When the gate looks, and whether it re-checks verified lessons.

    Parameters
    ----------
    every : int
        Look every ``every`` runs (>= 1).
    from_run : int
        The first run looked at (>= 1).
    recheck_verified : bool
        Judge verified lessons too (a gate with ``judges_verified`` always does).

    Examples
    --------
    >>> c = Cadence(every=2, from_run=3)
    >>> [r for r in range(1, 9) if c.due(r)]
    [3, 5, 7]
    """

    every: int = 1
    from_run: int = 1
    recheck_verified: bool = False

    def __post_init__(self) -> None:
        """Validate the fields."""
        object.__setattr__(self, "every", check_int("every", self.every, minimum=1))
        object.__setattr__(self, "from_run", check_int("from_run", self.from_run, minimum=1))
        if not isinstance(self.recheck_verified, bool):
            raise ParameterError(
                f"recheck_verified must be True or False; got {self.recheck_verified!r}"
            )

    def due(self, run: int) -> bool:
        """Return whether the gate looks after run ``run`` (1-based)."""
        return run >= self.from_run and (run - self.from_run) % self.every == 0

    def to_dict(self) -> dict[str, Any]:
        """Return the fields as a JSON-ready dict."""
        return {
            "every": self.every,
            "from_run": self.from_run,
            "recheck_verified": self.recheck_verified,
        }


@dataclass(frozen=True)
class Change:
    """One status change: lesson ``fact_id`` went from ``old`` to ``new`` after ``run``.

    ``decision`` is the gate's outcome that moved it (or ``"add"`` for a lesson that
    arrived), ``reason`` its reason (an eviction's ``eval-gate:harmful`` ...) and
    ``why`` the report's ``why``.

    Examples
    --------
    >>> Change(4, "P1", "candidate", "suspended", "suspend", None, "crater").to_dict()["to"]
    'suspended'
    """

    run: int
    fact_id: str
    old: str
    new: str
    decision: str
    reason: str | None
    why: str | None

    def to_dict(self) -> dict[str, Any]:
        """Return the change as a JSON-ready dict (keys ``from`` and ``to``)."""
        return {
            "run": self.run,
            "fact_id": self.fact_id,
            "from": self.old,
            "to": self.new,
            "decision": self.decision,
            "reason": self.reason,
            "why": self.why,
        }


#: a judge: (lessons to judge in table order, keyword arguments for the gate) -> a report
Judge = Callable[[list[str], dict[str, Any]], Any]


class Lifecycle:
    """The lessons' statuses and their events, with the one wiring of a gate's outcomes.

    Parameters
    ----------
    recheck : bool
        Judge verified lessons too (``recheck_verified`` or the gate's
        ``judges_verified``).
    shows_suspended : bool
        Show suspended lessons to the policy (a policy with a re-test slot:
        ``retests_suspended``).
    gives_statuses : bool
        Pass ``statuses`` (each judged lesson's ``LessonState``) to the judge (a gate
        of the lifecycle protocol: :func:`takes_statuses`).
    gives_lessons : bool
        Pass ``lessons`` (every lesson that arrived, with its status) to the judge (a
        gate with ``uses_lessons``).

    Examples
    --------
    >>> from cogstats import Ledger
    >>> from cogstats.gates import CycgraphGate
    >>> book = Lifecycle()
    >>> book.add("a", 1)
    True
    >>> ledger = Ledger.from_records([{"run_id": "1", "score": 0.2, "fact_ids": []},
    ...     {"run_id": "2", "score": 0.9, "fact_ids": ["a"]}])
    >>> gate = CycgraphGate(decision_rule="margin", min_trials=1)
    >>> changes = book.look(2, lambda ids, extra: gate.evaluate(ledger, ids))
    >>> [(c.fact_id, c.old, c.new, c.why) for c in changes], book.since["a"]
    ([('a', 'candidate', 'verified', 'promote_evidence')], 3)
    """

    def __init__(
        self,
        *,
        recheck: bool = False,
        shows_suspended: bool = False,
        gives_statuses: bool = False,
        gives_lessons: bool = False,
    ) -> None:
        self.recheck = bool(recheck)
        self.shows_suspended = bool(shows_suspended)
        self.gives_statuses = bool(gives_statuses)
        self.gives_lessons = bool(gives_lessons)
        self._keys: list[tuple[int, str]] = []  # (created_at, id), sorted: table order
        self.status: dict[str, str] = {}
        self.since: dict[str, int] = {}
        self.created: dict[str, int] = {}
        self.arrived: dict[str, int] = {}  # the run each lesson arrived before
        self.family: dict[str, str | None] = {}
        self.gate_t: dict[str, float] = {}
        self.gate_own: dict[str, bool] = {}
        # each lesson's last judged row: (estimate, std_error, why); the reason of its
        # last status change
        self.last: dict[str, tuple[float | None, float | None, str | None]] = {}
        self.reason: dict[str, str | None] = {}
        self.events: list[Change] = []
        self._shown = (*SHOWN_STATUSES, C.SUSPENDED) if shows_suspended else SHOWN_STATUSES
        self._judged = (*JUDGED_STATUSES, C.VERIFIED) if recheck else JUDGED_STATUSES

    @classmethod
    def for_parts(cls, gate: Any, policy: Any, cadence: Cadence | None = None) -> Lifecycle:
        """Return the lifecycle of a gate and a retrieval policy (either may be None)."""
        recheck = bool(cadence.recheck_verified) if cadence is not None else False
        return cls(
            recheck=recheck or bool(getattr(gate, "judges_verified", False)),
            shows_suspended=bool(getattr(policy, "retests_suspended", False)),
            gives_statuses=gate is not None and takes_statuses(gate),
            gives_lessons=bool(getattr(gate, "uses_lessons", False)),
        )

    # ------------------------------------------------------------------ lessons
    def __contains__(self, fact_id: object) -> bool:
        """Return whether the lesson has arrived."""
        return fact_id in self.status

    def __len__(self) -> int:
        """Return the number of lessons that arrived."""
        return len(self.status)

    @property
    def ids(self) -> list[str]:
        """Every lesson that arrived, oldest first (``created_at``, then id)."""
        return [f for _, f in self._keys]

    def add(
        self,
        fact_id: str,
        run: int,
        *,
        created_at: int | None = None,
        family: str | None = None,
        status: str = C.CANDIDATE,
    ) -> bool:
        """Add a lesson that arrives before run ``run`` (False: it is known already).

        ``since`` is ``run``; ``created_at`` (default ``run``) orders the table.
        """
        if fact_id in self.status:
            return False
        created = int(run if created_at is None else created_at)
        bisect.insort(self._keys, (created, fact_id))
        self.status[fact_id] = status
        self.since[fact_id] = int(run)
        self.arrived[fact_id] = int(run)
        self.created[fact_id] = created
        self.family[fact_id] = family
        return True

    def discard(self, fact_ids: Iterable[str]) -> None:
        """Forget lessons just added (a run that failed before it was recorded)."""
        gone = set(fact_ids)
        self._keys = [k for k in self._keys if k[1] not in gone]
        for f in gone:
            for d in (self.status, self.since, self.arrived, self.created, self.family):
                d.pop(f, None)

    def judged(self) -> list[str]:
        """Return the lessons a look judges now, in table order (see the module notes)."""
        judged, status = self._judged, self.status
        return [f for _, f in self._keys if status[f] in judged]

    def shown(self) -> list[str]:
        """Return the lessons the policy is shown now, in table order."""
        shown, status = self._shown, self.status
        return [f for _, f in self._keys if status[f] in shown]

    def table(self, columns: Mapping[str, Sequence[Any]] | None = None) -> pl.DataFrame:
        """Return the lesson table the policy sees (see the module notes).

        ``columns`` adds columns aligned on the shown lessons (a callable's result:
        use :meth:`shown` for their ids).

        Examples
        --------
        >>> book = Lifecycle()
        >>> _ = book.add("b", 2); _ = book.add("a", 2); _ = book.add("c", 1)
        >>> book.table()["id"].to_list(), book.table().columns[-2:]
        (['c', 'a', 'b'], ['gate_t', 'gate_t_own'])
        """
        return self.table_of(self.shown(), columns)

    def table_of(
        self, ids: Sequence[str], columns: Mapping[str, Sequence[Any]] | None = None
    ) -> pl.DataFrame:
        """Return the lesson table's rows of ``ids`` (in that order), with ``columns`` added."""
        nan = math.nan
        data: dict[str, list[Any]] = {
            "id": list(ids),
            "status": [self.status[f] for f in ids],
            "created_at": [self.created[f] for f in ids],
            "applies_to": [self.family[f] for f in ids],
            "status_since": [self.since[f] for f in ids],
            "gate_t": [self.gate_t.get(f, nan) for f in ids],
            "gate_t_own": [self.gate_own.get(f, False) for f in ids],
        }
        schema: dict[str, Any] = dict(TABLE_SCHEMA)
        for name, values in (columns or {}).items():
            data[name] = list(values)
            schema[name] = None
        return pl.DataFrame(data, schema_overrides={k: v for k, v in schema.items() if v})

    def lesson_rows(self) -> list[dict[str, Any]]:
        """Every lesson that arrived (evicted ones included), oldest first, with its status."""
        return [{"id": f, "status": self.status[f], "created_at": c} for c, f in self._keys]

    def states(self, ids: Iterable[str]) -> dict[str, Any]:
        """``fact_id -> LessonState(status, since)`` of ``ids`` (what a lifecycle gate reads)."""
        from cogstats.gates import LessonState

        return {f: LessonState(self.status[f], self.since[f]) for f in ids}

    # ------------------------------------------------------------------ looks
    def look(self, run: int, judge: Judge) -> list[Change]:
        """Judge the lessons in scope after run ``run`` and apply the outcomes.

        ``judge(ids, extra)`` returns the gate's report on ``ids`` (the judged lessons,
        table order); ``extra`` holds ``statuses`` and ``lessons`` when the gate takes
        them (pass them on as keyword arguments).  Nothing is judged, and the judge not
        called, when no lesson is in scope.  Returns the status changes.
        """
        ids = self.judged()
        if not ids:
            return []
        extra: dict[str, Any] = {}
        if self.gives_statuses:
            extra["statuses"] = self.states(ids)
        if self.gives_lessons:
            from cogstats.lessons import lesson_table

            extra["lessons"] = lesson_table(self.lesson_rows())
        return self.apply(judge(ids, extra), run)

    def apply(self, report: Any, run: int) -> list[Change]:
        """Apply every row of a gate's report after run ``run``; return the changes.

        ``report`` is a :class:`~cogstats.gates.GateReport`, a frame, or a mapping of
        column lists.  Each row's ``decision`` goes through ``OUTCOME_STATUS`` (hold, and an outcome
        that leads to the status a lesson has, change nothing); a changed lesson's
        ``since`` becomes ``run + 1``.  A report with ``t_stat`` sets each row's
        ``gate_t`` (``t_stat``, else ``crater_t``; NaN when neither) and ``gate_t_own``
        (``identifiable``).

        Raises
        ------
        ValueError
            For a decision that is not an outcome, or a row of a lesson that never
            arrived (naming it).
        """
        cols = _columns(report)
        ids = cols["fact_id"]
        n = len(ids)
        decisions = cols["decision"]
        none = [None] * n
        reasons = cols.get("reason", none)
        whys = cols.get("why", none)
        if "estimate" in cols or "std_error" in cols:
            est = cols.get("estimate", none)
            ses = cols.get("std_error", none)
            last = self.last
            for f, e, se, why in zip(ids, est, ses, whys, strict=True):
                last[f] = (e, se, why)
        if "t_stat" in cols:
            tees = cols["t_stat"]
            craters = cols.get("crater_t", none)
            owns = cols.get("identifiable", none)
            for f, t, ct, own in zip(ids, tees, craters, owns, strict=True):
                v = t if t is not None else ct
                self.gate_t[f] = math.nan if v is None else float(v)
                self.gate_own[f] = bool(own)
        changes: list[Change] = []
        status, since = self.status, self.since
        for f, d, reason, why in zip(ids, decisions, reasons, whys, strict=True):
            if d not in OUTCOME_STATUS:
                raise ValueError(
                    f"a gate report's decision must be one of {list(C.OUTCOMES)}; got {d!r} "
                    f"for {f!r}"
                )
            new = OUTCOME_STATUS[d]
            old = status.get(f)
            if old is None:
                raise ValueError(
                    f"a gate report judged lesson {f!r}, which the store does not hold"
                )
            if new is None or new == old:
                continue
            status[f] = new
            since[f] = run + 1
            self.reason[f] = reason
            change = Change(run, f, old, new, d, reason, why)
            self.events.append(change)
            changes.append(change)
        return changes

    # ------------------------------------------------------------------ persistence
    def to_dict(self) -> dict[str, Any]:
        """Return the lifecycle as JSON-ready data (:meth:`restore` reads it back)."""
        return {
            "lessons": [
                {
                    "id": f,
                    "status": self.status[f],
                    "since": self.since[f],
                    "arrived": self.arrived[f],
                    "created_at": c,
                    "family": self.family[f],
                    "gate_t": _json_float(self.gate_t.get(f)),
                    "gate_t_own": self.gate_own.get(f),
                    "last": [_json_float(v) for v in self.last[f][:2]] + [self.last[f][2]]
                    if f in self.last
                    else None,
                    "reason": self.reason.get(f),
                }
                for c, f in self._keys
            ],
            "events": [e.to_dict() for e in self.events],
        }

    def restore(self, data: Mapping[str, Any]) -> None:
        """Read back :meth:`to_dict`'s data (replacing what this object holds)."""
        self._keys = []
        for d in (self.status, self.since, self.arrived, self.created, self.family):
            d.clear()
        self.gate_t.clear()
        self.gate_own.clear()
        self.last.clear()
        self.reason.clear()
        for row in data["lessons"]:
            f = row["id"]
            self.add(
                f,
                int(row["arrived"]),
                created_at=int(row["created_at"]),
                family=row["family"],
                status=row["status"],
            )
            self.since[f] = int(row["since"])
            if row.get("gate_t") is not None:
                self.gate_t[f] = _float_back(row["gate_t"])
            if row.get("gate_t_own") is not None:
                self.gate_own[f] = bool(row["gate_t_own"])
            if row.get("last") is not None:
                e, se, why = row["last"]
                self.last[f] = (
                    None if e is None else _float_back(e),
                    None if se is None else _float_back(se),
                    why,
                )
            if "reason" in row and row["reason"] is not None:
                self.reason[f] = row["reason"]
        self.events = [
            Change(
                int(e["run"]),
                e["fact_id"],
                e["from"],
                e["to"],
                e["decision"],
                e["reason"],
                e["why"],
            )
            for e in data["events"]
        ]


#: the report columns :meth:`Lifecycle.apply` reads
_READ = (
    "fact_id",
    "decision",
    "reason",
    "why",
    "t_stat",
    "crater_t",
    "identifiable",
    "estimate",
    "std_error",
)


def _columns(report: Any) -> Mapping[str, list[Any]]:
    """Return a report's columns as lists (a GateReport, a frame, or a mapping of lists)."""
    if isinstance(report, Mapping):
        return report
    frame = report.to_frame() if hasattr(report, "to_frame") else report
    return {c: frame[c].to_list() for c in _READ if c in frame.columns}


def _json_float(value: float | None) -> Any:
    """Return a float for JSON: NaN and infinities as strings (None stays None)."""
    if value is None:
        return None
    return value if math.isfinite(value) else repr(float(value))


def _float_back(value: Any) -> float:
    return float(value)
