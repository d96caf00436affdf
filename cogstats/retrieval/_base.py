"""What every retrieval policy shares: the lesson table, the selection, the protocol."""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable

import numpy as np
import polars as pl

from cogstats._codes import ADMITTED, LIVE_STATUSES, SUSPENDED
from cogstats._validation import ParameterError
from cogstats.ledger import Ledger
from cogstats.lessons import lesson_table as validate_lesson_table
from cogstats.lessons import live_lessons

__all__ = [
    "STATUSES",
    "RetrievalPolicy",
    "Selection",
    "lesson_table",
    "live_lesson_table",
    "retest_eligible",
    "retest_pick",
    "split_lessons",
]

#: The lesson-table column that holds, per lesson, the first run of its current status
#: (the simulator's reference engine writes it; a re-test window reads it).
SINCE_COLUMN = "status_since"

#: Lesson statuses a retrieval policy injects; null counts as verified (cycgraph's
#: backward compatibility for stores written before eval-gating).
STATUSES: tuple[str, ...] = LIVE_STATUSES


@dataclass(frozen=True)
class Selection:
    """The lessons chosen for one run.

    Attributes
    ----------
    fact_ids : tuple of str
        Injected lessons, in prompt order.
    propensities : mapping or None
        For randomized policies: every eligible lesson's probability of being injected
        (log it in the ledger's ``eligible_ids``/``propensities`` columns).  ``None`` for
        deterministic policies.
    """

    fact_ids: tuple[str, ...]
    propensities: Mapping[str, float] | None = field(default=None)

    def __post_init__(self) -> None:
        if self.propensities is not None:
            object.__setattr__(self, "propensities", MappingProxyType(dict(self.propensities)))

    def ledger_fields(self) -> dict[str, Any]:
        """``fact_ids`` (and the propensity columns) ready for :meth:`Ledger.record`."""
        out: dict[str, Any] = {"fact_ids": list(self.fact_ids)}
        if self.propensities is not None:
            out["eligible_ids"] = list(self.propensities)
            out["propensities"] = list(self.propensities.values())
        return out

    def _repr_html_(self) -> str:
        return f"<code>{html.escape(repr(self))}</code>"


@runtime_checkable
class RetrievalPolicy(Protocol):
    """A retrieval policy picks the lessons for the next run.

    ``select(lessons, ledger=None, *, rng=None, context=None) -> Selection``: ``lessons``
    is a lesson table (see :func:`lesson_table`), ``ledger`` the outcomes so far (policies
    that ignore it accept ``None``), ``rng`` a seed or generator for randomized policies,
    ``context`` facts about the coming run (e.g. ``{"family": "billing"}`` for UCB1).
    """

    def select(
        self,
        lessons: pl.DataFrame,
        ledger: Ledger | None = None,
        *,
        rng: Any = None,
        context: Mapping[str, Any] | None = None,
    ) -> Selection:  # pragma: no cover - protocol
        ...


def live_lesson_table(lessons: pl.DataFrame | Iterable[Mapping[str, Any]]) -> pl.DataFrame:
    """Validate a lesson table (:func:`cogstats.lessons.lesson_table`) and keep its live lessons.

    Retrieval injects candidates, admitted and verified lessons (null counts as
    verified); evicted and retired lessons are left out.  Policies put every non-candidate
    live lesson in the verified block.  (Formerly ``cogstats.retrieval.lesson_table``, a
    name that also meant the validated store table; that name warns.)

    Examples
    --------
    >>> t = live_lesson_table([
    ...     {"id": "a", "status": "candidate", "created_at": "2024-01-01T00:00:00Z"},
    ...     {"id": "b", "status": "evicted", "created_at": "2024-01-02T00:00:00Z"}])
    >>> t["id"].to_list(), t.dtypes[2]
    (['a'], Datetime(time_unit='us', time_zone='UTC'))
    """
    return live_lessons(validate_lesson_table(lessons))


lesson_table = live_lesson_table  # the former name, for this package's modules


def check_slots(max_facts: Any, candidate_slots: Any) -> tuple[int, int]:
    """Validate ``max_facts``/``candidate_slots`` (the latter clamped to the former)."""
    from cogstats._validation import check_int

    mf = check_int("max_facts", max_facts, minimum=0)
    cs = check_int("candidate_slots", candidate_slots, minimum=0)
    if mf is None or cs is None:  # pragma: no cover - not optional
        raise ParameterError("max_facts and candidate_slots are required")
    return mf, min(cs, mf)


def split_lessons(
    lessons: pl.DataFrame | Iterable[Mapping[str, Any]],
    *,
    retest_window: int | None = None,
    context: Mapping[str, Any] | None = None,
) -> tuple[pl.DataFrame, list[str]]:
    """Validate a lesson table once: (its live lessons, the suspended ids oldest first).

    Suspended lessons are out of the prompt; a policy with a re-test slot
    (:func:`retest_pick`) may inject one of them per run, at random.  With
    ``retest_window`` only the suspended lessons eligible for a re-test are returned
    (:func:`retest_eligible`: suspended within the last ``retest_window`` runs).

    Examples
    --------
    >>> live, sus = split_lessons([{"id": "a", "status": "suspended", "created_at": 2},
    ...     {"id": "b", "status": "candidate", "created_at": 1}])
    >>> live["id"].to_list(), sus
    (['b'], ['a'])
    """
    table = validate_lesson_table(lessons)
    suspended = (
        table.filter((pl.col("status") == SUSPENDED).fill_null(False))
        .sort(["created_at", "id"], maintain_order=True)["id"]
        .to_list()
    )
    suspended = retest_eligible(table, suspended, retest_window, context)
    return live_lessons(table), suspended


def retest_pick(suspended: list[str], u: float, prob: float) -> tuple[str | None, dict[str, float]]:
    """Draw the re-test slot: at most one suspended lesson a run, with a known propensity.

    With ``m`` suspended lessons, a run re-tests one of them with probability ``prob``,
    each equally likely: every suspended lesson's propensity is ``prob / m``.  One
    uniform ``u`` decides both (``u < prob`` re-tests; then ``u / prob`` is uniform
    and picks the lesson), so that suspects are kept apart: never two in one run.

    Returns
    -------
    (str or None, dict)
        The lesson re-tested (None: none this run) and every suspended lesson's
        propensity (empty when none is suspended).

    Examples
    --------
    >>> retest_pick(["a", "b"], 0.3, 0.5)
    ('b', {'a': 0.25, 'b': 0.25})
    >>> retest_pick(["a", "b"], 0.7, 0.5)
    (None, {'a': 0.25, 'b': 0.25})
    >>> retest_pick([], 0.1, 0.5)
    (None, {})
    """
    m = len(suspended)
    if m == 0:
        return None, {}
    props = {f: prob / m for f in suspended}
    if u < prob:
        return suspended[min(int(u / prob * m), m - 1)], props
    return None, props


def check_retest_options(retest_window: Any, fill_empty: Any) -> tuple[int | None, bool]:
    """Validate ``retest_window`` (int >= 1 or None) and ``fill_empty`` (bool).

    Examples
    --------
    >>> check_retest_options(5, True)
    (5, True)
    >>> check_retest_options(0, False)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    cogstats._validation.ParameterError: retest_window must be an integer >= 1 (runs) or None; got 0
    """
    window = retest_window
    if window is not None:
        ok = isinstance(window, int | np.integer) and not isinstance(window, bool | np.bool_)
        if not ok or int(window) < 1:
            raise ParameterError(
                f"retest_window must be an integer >= 1 (runs) or None; got {retest_window!r}"
            )
        window = int(window)
    if not isinstance(fill_empty, bool | np.bool_):
        raise ParameterError(f"fill_empty must be True or False; got {fill_empty!r}")
    return window, bool(fill_empty)


def retest_eligible(
    lessons: pl.DataFrame,
    suspended: list[str],
    window: int | None,
    context: Mapping[str, Any] | None,
) -> list[str]:
    """Return the suspended lessons the re-test slot may draw (order kept).

    ``window`` None: every suspended lesson.  Otherwise only those suspended within the
    last ``window`` runs: with ``since`` the first run of the lesson's suspension (the
    table's ``status_since`` column) and ``run`` the coming run (``context["run"]``),
    eligible when ``run - since < window``, i.e. in the suspension's first ``window``
    runs.

    Examples
    --------
    >>> t = validate_lesson_table([
    ...     {"id": "a", "status": "suspended", "created_at": 1, "status_since": 2},
    ...     {"id": "b", "status": "suspended", "created_at": 2, "status_since": 6}])
    >>> retest_eligible(t, ["a", "b"], 5, {"run": 7})
    ['b']
    >>> retest_eligible(t, ["a", "b"], None, None)
    ['a', 'b']
    """
    if window is None or not suspended:
        return suspended
    run = None if context is None else context.get("run")
    if isinstance(run, bool) or not isinstance(run, int | np.integer):
        raise ParameterError(
            "retest_window needs the coming run's number as context['run'] (an integer); "
            f"got context {dict(context) if context is not None else None!r}"
        )
    if SINCE_COLUMN not in lessons.columns:
        raise ParameterError(
            f"retest_window needs the lesson table's {SINCE_COLUMN!r} column (the first run "
            f"of each lesson's status); got columns {lessons.columns}"
        )
    since = dict(zip(lessons["id"].to_list(), lessons[SINCE_COLUMN].to_list(), strict=True))
    out = []
    for f in suspended:
        s = since.get(f)
        if s is None:
            raise ParameterError(
                f"retest_window: suspended lesson {f!r} has no {SINCE_COLUMN!r}; got None"
            )
        if int(run) - int(s) < window:
            out.append(f)
    return out


def fill_candidates(
    cands: pl.DataFrame, taken: Iterable[str], ledger: Ledger | None, room: int
) -> list[str]:
    """Return up to ``room`` candidates not yet ``taken``: fewest trials, oldest, id first.

    The places a prompt has left after its candidates and verified block go to further
    candidates (benched ones included), deterministically, so that over runs every
    candidate gets its turn.
    """
    if room <= 0 or cands.height == 0:
        return []
    taken = set(taken)
    rest = cands.filter(~pl.col("id").is_in(list(taken)))
    if rest.height == 0:
        return []
    if ledger is not None and len(ledger):
        stats = ledger.fact_stats().select(pl.col("fact_id").alias("id"), "trials")
        rest = rest.join(stats, on="id", how="left", maintain_order="left").with_columns(
            pl.col("trials").fill_null(0)
        )
    else:
        rest = rest.with_columns(pl.lit(0).alias("trials"))
    rest = rest.sort(["trials", "created_at", "id"], maintain_order=True)
    return list(rest["id"].head(room).to_list())


def verified_block(
    table: pl.DataFrame, ledger: Ledger | None, *, newest_first: bool = True
) -> pl.DataFrame:
    """Return the non-candidate live lessons in prompt-fill order: verified, then admitted.

    Verified (and untagged) lessons come first, newest first (cycgraph's order;
    ``newest_first=False`` keeps store order); admitted lessons, screened but not shown
    to help, fill what room is left in rotation: fewest trials in ``ledger`` first, then
    oldest, then id, so that over runs every admitted lesson gets its turn.  Without
    admitted lessons this is the verified block cycgraph builds.
    """
    is_cand = (pl.col("status") == "candidate").fill_null(False)
    is_adm = (pl.col("status") == ADMITTED).fill_null(False)
    ver = table.filter(~is_cand & ~is_adm)
    if newest_first:
        ver = ver.sort(["created_at", "id"], descending=[True, False], maintain_order=True)
    adm = table.filter(is_adm)
    if adm.height == 0:
        return ver
    if ledger is not None and len(ledger):
        stats = ledger.fact_stats().select(pl.col("fact_id").alias("id"), "trials")
        adm = adm.join(stats, on="id", how="left", maintain_order="left").with_columns(
            pl.col("trials").fill_null(0)
        )
    else:
        adm = adm.with_columns(pl.lit(0).alias("trials"))
    adm = adm.sort(["trials", "created_at", "id"], maintain_order=True).drop("trials")
    return pl.concat([ver, adm], how="diagonal_relaxed")
