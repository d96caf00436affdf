"""Lesson lineage in the evidence: pool a lesson's ancestors, leave evicted lessons out.

A lesson table (:func:`cogstats.lessons.lesson_table`, read from a file by
:meth:`cogstats.Ledger.read_lessons`) says which lessons a lesson was consolidated from
(``consolidated_from``) and which it replaces (``supersedes``), and which lessons the
store evicted.  Two transforms of a ledger use it; both return a new
:class:`~cogstats.ledger.Ledger`, so every estimator and every gate runs on the result
unchanged:

- :func:`pool_lineage`: a lesson carries its ancestors' evidence.  Every run that carried
  an ancestor (a lesson it was consolidated from or supersedes, transitively) counts as a
  run with the descendant, and the ancestors leave the ledger.  A paraphrase of a poison,
  consolidated from it, then starts with the poison's record instead of a clean one.
- :func:`exclude_lessons`: the runs that carried an evicted lesson leave every other
  lesson's evidence (its trials and its baseline alike).  An evicted lesson then stops
  shaping the verdicts on the lessons it shared prompts with.

:class:`LineageGate` applies them inside a gate pass, so the simulator (whose reference
engine hands the lesson table, statuses included, to gates that set ``uses_lessons``) and
the command line (``cogstats gate LEDGER --lessons FILE --exclude-evicted``) can measure
and use them.  Both are options, off by default: cycgraph's gate on the plain ledger stays
exactly cycgraph's.  Retrieval already leaves evicted lessons out
(:func:`cogstats.lessons.live_lessons`), and so should a consolidation job: summarise the
live lessons only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import polars as pl

from cogstats._codes import EVICTED
from cogstats._validation import ParameterError
from cogstats.ledger import Ledger

__all__ = [
    "LineageGate",
    "evicted_lessons",
    "exclude_lessons",
    "lineage_ancestors",
    "pool_lineage",
]

#: The lineage columns of a lesson table, each a list of lesson ids (or null).
_LINEAGE = ("consolidated_from", "supersedes")
_PROPENSITY = ("eligible_ids", "propensities")


def _table(lessons: Any) -> pl.DataFrame:
    from cogstats.lessons import lesson_table

    if isinstance(lessons, pl.DataFrame) and {"id", "status", "created_at"} <= set(lessons.columns):
        return lessons
    return lesson_table(lessons)


def lineage_ancestors(lessons: pl.DataFrame | Iterable[Mapping[str, Any]]) -> dict[str, list[str]]:
    """Return every lesson's ancestors: what it was consolidated from or supersedes.

    Parameters
    ----------
    lessons : polars.DataFrame or iterable of mappings
        A lesson table (see :func:`cogstats.lessons.lesson_table`).

    Returns
    -------
    dict of str to list of str
        Lesson id -> its ancestors, transitively (the parents, their parents, ...), in the
        order they are first reached; only lessons with at least one ancestor appear.  A
        cycle in the lineage (``a`` from ``b`` from ``a``) stops at the lesson itself.

    Examples
    --------
    >>> lineage_ancestors([
    ...     {"id": "a", "created_at": 1},
    ...     {"id": "b", "created_at": 2, "consolidated_from": ["a"]},
    ...     {"id": "c", "created_at": 3, "supersedes": ["b"]},
    ... ])
    {'b': ['a'], 'c': ['b', 'a']}
    """
    table = _table(lessons)
    parents: dict[str, list[str]] = {}
    for name in _LINEAGE:
        if name not in table.columns or table.schema[name] == pl.Null:
            continue
        for lesson, ids in zip(table["id"].to_list(), table[name].to_list(), strict=True):
            for p in ids or ():
                parents.setdefault(lesson, [])
                if p not in parents[lesson] and p != lesson:
                    parents[lesson].append(p)
    out: dict[str, list[str]] = {}
    for lesson in parents:
        seen: list[str] = []
        stack = list(reversed(parents[lesson]))
        while stack:
            p = stack.pop()
            if p == lesson or p in seen:
                continue
            seen.append(p)
            stack.extend(reversed(parents.get(p, [])))
        if seen:
            out[lesson] = seen
    return out


def evicted_lessons(lessons: pl.DataFrame | Iterable[Mapping[str, Any]]) -> list[str]:
    """Return the ids the lesson table marks ``evicted``, in table order.

    Examples
    --------
    >>> evicted_lessons([{"id": "a", "status": "evicted", "created_at": 1},
    ...                  {"id": "b", "status": "candidate", "created_at": 2}])
    ['a']
    """
    table = _table(lessons)
    return table.filter(pl.col("status") == EVICTED)["id"].to_list()


def _rebuild(frame: pl.DataFrame) -> Ledger:
    return Ledger.from_frame(frame)


def pool_lineage(ledger: Ledger, lessons: pl.DataFrame | Iterable[Mapping[str, Any]]) -> Ledger:
    """Give every lesson its ancestors' evidence.

    Each run that carried an ancestor of lesson ``c`` (a lesson ``c`` was consolidated
    from or supersedes, transitively: :func:`lineage_ancestors`) counts as a run with
    ``c``; the ancestors themselves leave the runs (their evidence now belongs to their
    descendants).  An ancestor of several lessons gives its runs to each of them.

    Parameters
    ----------
    ledger : Ledger
        The runs.
    lessons : polars.DataFrame or iterable of mappings
        The lesson table with ``consolidated_from`` and/or ``supersedes``.

    Returns
    -------
    Ledger
        A new ledger, runs and scores as before; the ledger itself is not changed.  When
        a run's lessons change, the logged propensity columns (``eligible_ids``,
        ``propensities``) are dropped: they describe the draws of the ancestors, not of
        the pooled lessons, so design-based methods (``ipw``, ``aipw``, ``confseq``)
        cannot use them.

    Examples
    --------
    A paraphrase ``P2`` of a poison ``P1`` that was evicted after three bad runs: pooled,
    ``P2`` starts with ``P1``'s record.

    >>> ledger = Ledger.from_records(
    ...     [{"run_id": f"r{i}", "score": 0.2, "fact_ids": ["P1"]} for i in range(3)]
    ...     + [{"run_id": "r3", "score": 0.8, "fact_ids": []},
    ...        {"run_id": "r4", "score": 0.3, "fact_ids": ["P2"]}])
    >>> table = [{"id": "P1", "status": "evicted", "created_at": 1},
    ...          {"id": "P2", "status": "candidate", "created_at": 2,
    ...           "consolidated_from": ["P1"]}]
    >>> pooled = pool_lineage(ledger, table)
    >>> pooled.fact_stats().select("fact_id", "trials").rows()
    [('P2', 4)]
    """
    ancestors = lineage_ancestors(lessons)
    heirs: dict[str, list[str]] = {}
    for lesson, anc in ancestors.items():
        for a in anc:
            heirs.setdefault(a, []).append(lesson)
    if not heirs:
        return _rebuild(ledger.frame)
    changed = False
    new_ids: list[list[str]] = []
    for ids in ledger.frame["fact_ids"].to_list():
        out: list[str] = []
        for f in ids:
            for g in heirs.get(f, [f]):
                if g not in out:
                    out.append(g)
        changed = changed or out != list(ids)
        new_ids.append(out)
    frame = ledger.frame.with_columns(pl.Series("fact_ids", new_ids, dtype=pl.List(pl.String)))
    if changed:
        frame = frame.drop([c for c in _PROPENSITY if c in frame.columns])
    return _rebuild(frame)


def exclude_lessons(
    ledger: Ledger,
    exclude: pl.DataFrame | Iterable[str],
    *,
    statuses: Sequence[str] = (EVICTED,),
) -> Ledger:
    """Leave out the runs that carried an excluded lesson.

    Those runs leave every other lesson's evidence, its trials and its baseline alike
    (lift, regressions, gates: every consumer of the ledger), and the excluded lessons
    leave the ledger.

    Parameters
    ----------
    ledger : Ledger
        The runs.
    exclude : polars.DataFrame or iterable of str
        Lesson ids, or a lesson table: its lessons whose status is in ``statuses``.
    statuses : sequence of str
        With a lesson table, the statuses to exclude (default: ``evicted``).

    Returns
    -------
    Ledger
        A new ledger without those runs.

    Examples
    --------
    >>> ledger = Ledger.from_records([
    ...     {"run_id": "r1", "score": 0.1, "fact_ids": ["P", "L"]},
    ...     {"run_id": "r2", "score": 0.7, "fact_ids": ["L"]},
    ...     {"run_id": "r3", "score": 0.6, "fact_ids": []}])
    >>> exclude_lessons(ledger, ["P"]).run_ids
    ('r2', 'r3')
    """
    if isinstance(exclude, pl.DataFrame):
        table = _table(exclude)
        ids = table.filter(pl.col("status").is_in(list(statuses)))["id"].to_list()
    elif isinstance(exclude, str):
        raise ParameterError(
            f"exclude must be lesson ids (a list) or a lesson table; got the string {exclude!r}"
        )
    else:
        ids = list(exclude)
    if not ids:
        return _rebuild(ledger.frame)
    hit = pl.col("fact_ids").list.eval(pl.element().is_in(ids)).list.any()
    return _rebuild(ledger.frame.filter(~hit.fill_null(False)))


@dataclass(frozen=True)
class LineageGate:
    """A gate that first applies the lesson table: evicted lessons out, lineage pooled.

    Parameters
    ----------
    gate : str or gate object
        The gate that decides: a registered name or import path (built with
        ``options``), or a gate object.
    options : mapping
        Options for a named ``gate``.
    exclude_evicted : bool
        Leave out the runs that carried a lesson the table marks evicted
        (:func:`exclude_lessons`).
    pool_parents : bool
        Give each lesson its ancestors' evidence (:func:`pool_lineage`).

    Notes
    -----
    ``uses_lessons = True``: the simulator's reference engine passes the lesson table of
    every lesson that has arrived (statuses included) on every pass, and so does
    ``cogstats gate --lessons FILE``.  Without a table the inner gate decides on the
    ledger as it is.  With both options off it is the inner gate exactly.

    Examples
    --------
    >>> ledger = Ledger.from_records(
    ...     [{"run_id": f"p{i}", "score": 0.1, "fact_ids": ["P", "L"]} for i in range(2)]
    ...     + [{"run_id": f"l{i}", "score": 0.8, "fact_ids": ["L"]} for i in range(2)]
    ...     + [{"run_id": f"n{i}", "score": 0.6, "fact_ids": []} for i in range(4)])
    >>> table = [{"id": "P", "status": "evicted", "created_at": 1},
    ...          {"id": "L", "status": "candidate", "created_at": 1}]
    >>> policy = {"decision_rule": "margin", "min_trials": 2}
    >>> plain = LineageGate("cycgraph", policy, exclude_evicted=False)
    >>> plain.evaluate(ledger, ["L"], lessons=table).to_frame()["decision"].to_list()
    ['evict']
    >>> LineageGate("cycgraph", policy).evaluate(ledger, ["L"], lessons=table
    ...     ).to_frame()["decision"].to_list()
    ['promote']
    """

    gate: Any = "cycgraph"
    options: Mapping[str, Any] = field(default_factory=dict)
    exclude_evicted: bool = True
    pool_parents: bool = False
    uses_lessons: ClassVar[bool] = True

    def __post_init__(self) -> None:
        """Build the inner gate once."""
        for name in ("exclude_evicted", "pool_parents"):
            if not isinstance(getattr(self, name), bool):
                raise ParameterError(f"{name} must be True or False; got {getattr(self, name)!r}")
        if isinstance(self.gate, str):
            from cogstats.gates import make_gate

            inner = make_gate(self.gate, **dict(self.options))
        else:
            if self.options:
                raise ParameterError("options apply to a gate given by name, not to an object")
            inner = self.gate
        if not callable(getattr(inner, "evaluate", None)):
            raise ParameterError(f"gate must be a gate name or a gate object; got {inner!r}")
        object.__setattr__(self, "_inner", inner)

    @property
    def judges_verified(self) -> bool:
        """Whether the inner gate judges verified lessons too (as the audit does)."""
        return bool(getattr(self._inner, "judges_verified", False))  # type: ignore[attr-defined]

    def evaluate(
        self,
        ledger: Ledger,
        candidates: Sequence[str] | None = None,
        *,
        rng: Any = None,
        lessons: Any = None,
    ) -> Any:
        """Judge the candidates on the ledger with the lesson table applied."""
        inner = self._inner  # type: ignore[attr-defined]
        extra: dict[str, Any] = {}
        if lessons is not None:
            table = _table(lessons)
            if self.pool_parents:
                ledger = pool_lineage(ledger, table)
            if self.exclude_evicted:
                ledger = exclude_lessons(ledger, table)
            if getattr(inner, "uses_lessons", False):
                extra["lessons"] = table
        return inner.evaluate(ledger, candidates, rng=rng, **extra)
