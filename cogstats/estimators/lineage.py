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

:func:`apply_lessons` applies both; :class:`cogstats.gates.LineageGate` applies them
inside a gate pass, so the simulator (whose reference engine hands the lesson table,
statuses included, to gates that set ``uses_lessons``) and the command line (``cogstats
gate LEDGER --lessons FILE --exclude-evicted``) can measure and use them. Both are
options, off by default: cycgraph's gate on the plain ledger stays exactly cycgraph's.
Retrieval already leaves evicted lessons out (:func:`cogstats.lessons.live_lessons`),
and so should a consolidation job: summarise the live lessons only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import polars as pl

from cogstats._codes import EVICTED
from cogstats._validation import ParameterError
from cogstats.ledger import Ledger

__all__ = [
    "apply_lessons",
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


def apply_lessons(
    ledger: Ledger,
    lessons: pl.DataFrame | Iterable[Mapping[str, Any]],
    *,
    exclude_evicted: bool = True,
    pool_parents: bool = False,
) -> tuple[Ledger, pl.DataFrame]:
    """Apply a lesson table to a ledger: lineage pooled, then evicted lessons' runs out.

    Parameters
    ----------
    ledger : Ledger
        The run outcomes.
    lessons : polars.DataFrame or iterable of mappings
        A lesson table (see :func:`cogstats.lessons.lesson_table`).
    exclude_evicted : bool
        Leave out the runs that carried an evicted lesson (:func:`exclude_lessons`).
    pool_parents : bool
        Give each lesson its ancestors' evidence (:func:`pool_lineage`), first.

    Returns
    -------
    tuple
        The ledger to decide on and the validated lesson table.

    Examples
    --------
    >>> ledger = Ledger.from_records([
    ...     {"run_id": "r1", "score": 0.1, "fact_ids": ["P", "L"]},
    ...     {"run_id": "r2", "score": 0.8, "fact_ids": ["L"]}])
    >>> table = [{"id": "P", "status": "evicted", "created_at": 1},
    ...          {"id": "L", "status": "candidate", "created_at": 1}]
    >>> kept, t = apply_lessons(ledger, table)
    >>> kept.run_ids, t.height
    (('r2',), 2)
    """
    table = _table(lessons)
    if pool_parents:
        ledger = pool_lineage(ledger, table)
    if exclude_evicted:
        ledger = exclude_lessons(ledger, table)
    return ledger, table
