"""What every retrieval policy shares: the lesson table, the selection, the protocol."""

from __future__ import annotations

import html
import math
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
    "GATE_T_COLUMN",
    "GATE_T_OWN_COLUMN",
    "RETEST_ORDERS",
    "STATUSES",
    "TRIALS_COLUMN",
    "RetestSlot",
    "RetrievalPolicy",
    "Selection",
    "holdout_pick",
    "lesson_table",
    "likely_guilty",
    "likely_innocent",
    "live_lesson_table",
    "retest_eligible",
    "retest_pick",
    "split_for_retest",
    "split_lessons",
]

#: The lesson-table column that holds, per lesson, the first run of its current status
#: (the simulator's reference engine writes it; a re-test window reads it).
SINCE_COLUMN = "status_since"

#: The lesson-table column that holds, per lesson, the t statistic of the gate's last
#: look at it (null: none yet; the simulator's reference engine writes it from the gate's
#: report, a running agent from its last ``GateReport``'s ``t_stat``): the likely-innocent
#: re-test order reads it.
GATE_T_COLUMN = "gate_t"

#: The re-test orders: ``"random"``, uniform among the eligible suspects, each with a
#: logged propensity; ``"likely_innocent"``, the eligible suspect whose last gate t is
#: highest (none yet comes first: it needs a re-test to have one), ties oldest first,
#: among those with t at least ``-retest_floor``; when there is none, the likely-guilty
#: suspect with its own t (:func:`likely_guilty`), only into a place left empty.
RETEST_ORDERS: tuple[str, ...] = ("random", "likely_innocent")

#: The lesson-table column that says whether :data:`GATE_T_COLUMN` is the lesson's own t
#: (True: the gate could tell it apart from the lessons it ran with) or not (its group's
#: t, or the crater t of the runs it was in).  Below the floor of the likely-innocent
#: order, a suspect with its own t is re-tested into a place the prompt leaves empty
#: (:func:`likely_guilty`), to be convicted or cleared; one without is not (re-testing a
#: member of a crater group to tell it apart costs a likely poison's harm).
GATE_T_OWN_COLUMN = "gate_t_own"

#: The lesson-table column that holds, per lesson, its trials in the ledger (the runs that
#: carried it).  A table with it needs no ledger: policies read it instead of counting
#: the ledger's runs (a lesson store fills it; :class:`cogstats.store.LessonStore`).
TRIALS_COLUMN = "trials"

#: Who fills the columns a policy may need (named in the refusal of a table without one).
FILLED_BY = (
    "cogstats.LessonStore fills it (and the simulator's reference engine); a loop wired "
    "by hand must keep it per lesson (docs/production.md, 'A lesson store in a live agent')"
)

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
    retest_order: str = "random",
    retest_floor: float = 1.5,
    u_order: float = 0.0,
) -> tuple[pl.DataFrame, list[str]]:
    """Validate a lesson table once: (its live lessons, the suspended ids oldest first).

    Suspended lessons are out of the prompt; a policy with a re-test slot
    (:func:`retest_pick`) may inject one of them per run, at random.  With
    ``retest_window`` only the suspended lessons eligible for a re-test are returned
    (:func:`retest_eligible`: suspended within the last ``retest_window`` runs); with
    ``retest_order="likely_innocent"`` only the one of those :func:`likely_innocent`
    picks (``u_order`` its uniform).

    Examples
    --------
    >>> live, sus = split_lessons([{"id": "a", "status": "suspended", "created_at": 2},
    ...     {"id": "b", "status": "candidate", "created_at": 1}])
    >>> live["id"].to_list(), sus
    (['b'], ['a'])
    """
    live, suspended, _ = split_for_retest(
        lessons,
        retest_window=retest_window,
        context=context,
        retest_order=retest_order,
        retest_floor=retest_floor,
        u_order=u_order,
    )
    return live, suspended


def split_for_retest(
    lessons: pl.DataFrame | Iterable[Mapping[str, Any]],
    *,
    retest_window: int | None = None,
    context: Mapping[str, Any] | None = None,
    retest_order: str = "random",
    retest_floor: float = 1.5,
    u_order: float = 0.0,
) -> tuple[pl.DataFrame, list[str], list[str]]:
    """:func:`split_lessons` with the likely-guilty suspect: (live, suspects, guilty).

    ``guilty`` is empty unless ``retest_order="likely_innocent"`` found no suspect to
    re-test first: then it holds :func:`likely_guilty`'s suspect, which a policy re-tests
    only into a place its prompt leaves empty.

    Examples
    --------
    >>> live, sus, guilty = split_for_retest(
    ...     [{"id": "a", "status": "suspended", "created_at": 1, "gate_t": -3.0,
    ...       "gate_t_own": True}], retest_order="likely_innocent", retest_floor=2.0)
    >>> sus, guilty
    ([], ['a'])
    """
    table = validate_lesson_table(lessons)
    suspended = (
        table.filter((pl.col("status") == SUSPENDED).fill_null(False))
        .sort(["created_at", "id"], maintain_order=True)["id"]
        .to_list()
    )
    if retest_order == "likely_innocent" and suspended:
        require_columns(table, (GATE_T_COLUMN, GATE_T_OWN_COLUMN), "retest_order='likely_innocent'")
    suspended = retest_eligible(table, suspended, retest_window, context)
    first = order_suspects(table, suspended, retest_order, retest_floor, u_order)
    guilty: list[str] = []
    if retest_order == "likely_innocent" and not first:
        guilty = likely_guilty(table, suspended, retest_floor)
    return live_lessons(table), first, guilty


def require_columns(lessons: pl.DataFrame, columns: Iterable[str], what: str) -> None:
    """Refuse a lesson table without a column the policy needs, naming it and its source.

    A table without ``gate_t``/``gate_t_own`` would otherwise be read as "no evidence
    yet" for every suspect, and the re-test order would degrade without a word.

    Examples
    --------
    >>> t = validate_lesson_table([{"id": "a", "status": "suspended", "created_at": 1}])
    >>> require_columns(t, ["gate_t"], "retest_order='likely_innocent'")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    cogstats._validation.ParameterError: retest_order='likely_innocent' needs the lesson ...
    """
    for col in columns:
        if col not in lessons.columns:
            raise ParameterError(
                f"{what} needs the lesson table's {col!r} column (per lesson: "
                f"{_COLUMN_MEANING.get(col, 'see cogstats.retrieval')}); got columns "
                f"{lessons.columns}. {FILLED_BY}"
            )


_COLUMN_MEANING = {
    "gate_t": "the t statistic of the gate's last look at it, NaN before one",
    "gate_t_own": "whether that t is the lesson's own (the report's identifiable)",
    "status_since": "the first run of its current status",
}


def order_suspects(
    lessons: pl.DataFrame, suspended: list[str], retest_order: str, retest_floor: float, u: float
) -> list[str]:
    """Return the suspects the re-test slot draws from, by ``retest_order``.

    ``"random"``: all of ``suspended`` (each equally likely); ``"likely_innocent"``: the
    one :func:`likely_innocent` picks (``u`` its uniform).
    """
    if retest_order == "likely_innocent":
        return likely_innocent(lessons, suspended, retest_floor, u)
    return suspended


def _evidence(lessons: pl.DataFrame) -> tuple[dict[str, Any], dict[str, Any]]:
    """Each lesson's gate t and whether it is its own (empty when the columns are absent)."""
    ids = lessons["id"].to_list()
    tee: dict[str, Any] = {}
    own: dict[str, Any] = {}
    if GATE_T_COLUMN in lessons.columns:
        tee = dict(zip(ids, lessons[GATE_T_COLUMN].to_list(), strict=True))
    if GATE_T_OWN_COLUMN in lessons.columns:
        own = dict(zip(ids, lessons[GATE_T_OWN_COLUMN].to_list(), strict=True))
    return tee, own


def likely_guilty(lessons: pl.DataFrame, suspended: list[str], floor: float) -> list[str]:
    """Return the suspect to re-test when none is likely innocent (one-element list, or empty).

    Among ``suspended`` (age order), those whose own t (:data:`GATE_T_OWN_COLUMN` true)
    is below ``-floor``, the highest t first, ties to the oldest: a suspect the gate can
    judge apart, re-tested to be convicted or cleared.  A policy puts it only into a
    place its prompt leaves empty (it displaces nothing).  A t below ``-floor`` that is
    not the suspect's own (a crater group's) is never re-tested.

    Examples
    --------
    >>> rows = [("a", -3.0, True), ("b", -2.5, True), ("g", -4.0, False)]
    >>> t = validate_lesson_table([
    ...     {"id": f, "status": "suspended", "created_at": i, "gate_t": v, "gate_t_own": o}
    ...     for i, (f, v, o) in enumerate(rows)])
    >>> likely_guilty(t, ["a", "b", "g"], 2.0), likely_guilty(t, ["g"], 2.0)
    (['b'], [])
    """
    tee, own = _evidence(lessons)
    best: str | None = None
    best_t = -math.inf
    for f in suspended:
        v = tee.get(f)
        t = math.nan if v is None else float(v)
        if bool(own.get(f)) and not math.isnan(t) and t < -floor and t > best_t:
            best, best_t = f, t
    return [] if best is None else [best]


def likely_innocent(
    lessons: pl.DataFrame, suspended: list[str], floor: float, u: float = 0.0
) -> list[str]:
    """Return the suspect to re-test first, as a one-element list (empty: none).

    ``suspended`` in age order (oldest first); each lesson's evidence is the table's
    :data:`GATE_T_COLUMN` (the gate's t at its last look) and :data:`GATE_T_OWN_COLUMN`
    (whether that t is the lesson's own).  Suspects without a t yet (null or NaN, or no
    such column) come first, one of them drawn by the uniform ``u`` (the ``int(u *
    m)``-th oldest of the ``m``: a re-test is the only way to get a t, and no name or age
    makes one of them likelier innocent); otherwise the highest t at least ``-floor``,
    ties to the oldest.  (A suspect below the floor is :func:`likely_guilty`'s.)

    Examples
    --------
    >>> rows = [("a", -0.4, True), ("b", 0.3, True), ("c", -2.5, False), ("d", -3.0, True)]
    >>> t = validate_lesson_table([
    ...     {"id": f, "status": "suspended", "created_at": i, "gate_t": v, "gate_t_own": o}
    ...     for i, (f, v, o) in enumerate(rows)])
    >>> likely_innocent(t, ["a", "b", "c"], 2.0), likely_innocent(t, ["c", "d"], 2.0)
    (['b'], [])
    >>> likely_innocent(t.drop("gate_t"), ["a", "b", "c"], 2.0, u=0.5)
    ['b']
    """
    if not suspended:
        return []
    tee, _ = _evidence(lessons)
    none_yet: list[str] = []
    best: str | None = None
    best_t = -math.inf
    for f in suspended:
        v = tee.get(f)
        t = math.nan if v is None else float(v)
        if math.isnan(t):
            none_yet.append(f)
        elif t >= -floor and t > best_t:
            best, best_t = f, t
    if none_yet:
        return [none_yet[min(int(u * len(none_yet)), len(none_yet) - 1)]]
    return [] if best is None else [best]


def check_retest_order(retest_order: Any, retest_floor: Any) -> tuple[str, float]:
    """Validate ``retest_order`` (one of :data:`RETEST_ORDERS`) and ``retest_floor`` (>= 0).

    Examples
    --------
    >>> check_retest_order("likely_innocent", 1.5)
    ('likely_innocent', 1.5)
    >>> check_retest_order("first", 1.5)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    cogstats._validation.ParameterError: retest_order must be one of [...]; got 'first'
    """
    if retest_order not in RETEST_ORDERS:
        raise ParameterError(
            f"retest_order must be one of {list(RETEST_ORDERS)}; got {retest_order!r}"
        )
    ok = isinstance(retest_floor, int | float) and not isinstance(retest_floor, bool)
    if not ok or not math.isfinite(float(retest_floor)) or float(retest_floor) < 0:
        raise ParameterError(
            f"retest_floor must be a number >= 0 (a t value: suspects with a last gate t "
            f"below -retest_floor are not re-tested); got {retest_floor!r}"
        )
    return str(retest_order), float(retest_floor)


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


def holdout_pick(
    block: list[str], statuses: list[str | None], u: float, prob: float
) -> tuple[list[str], dict[str, float]]:
    """Draw a holdout: at most one verified lesson of the block withheld, with propensities.

    With ``m`` verified lessons in ``block`` (status ``verified``, or null), one of them is
    withheld with probability ``prob``, each equally likely (``u < prob`` withholds; then
    ``u / prob`` picks it); each is logged with its inclusion propensity ``1 - prob / m``.
    Admitted lessons are never withheld (they are still being judged).

    Returns
    -------
    (list of str, dict)
        The block without the lesson withheld, and the verified lessons' propensities
        (empty when the block holds none).

    Examples
    --------
    >>> holdout_pick(["v1", "a1", "v2"], ["verified", "admitted", None], 0.05, 0.2)
    (['a1', 'v2'], {'v1': 0.9, 'v2': 0.9})
    >>> holdout_pick(["v1", "v2"], ["verified", "verified"], 0.5, 0.2)
    (['v1', 'v2'], {'v1': 0.9, 'v2': 0.9})
    """
    eligible = [f for f, s in zip(block, statuses, strict=True) if s in (None, "verified")]
    m = len(eligible)
    if m == 0:
        return block, {}
    props = {f: 1.0 - prob / m for f in eligible}
    if u < prob:
        out = eligible[min(int(u / prob * m), m - 1)]
        return [f for f in block if f != out], props
    return block, props


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


class RetestSlot:
    """The re-test slot's options, validated once for every policy that has one.

    A mixin for the frozen dataclass policies (``in_progress_first``, ``randomized``,
    ``designed``...): each declares the fields ``max_facts``, ``candidate_slots``,
    ``retest_prob``, ``retest_window``, ``retest_order``, ``retest_floor`` (and
    ``fill_empty`` where it fills empty places) in its own field order, and calls
    :meth:`_check_retest` from ``__post_init__``.

    Examples
    --------
    >>> from cogstats.retrieval import InProgressFirst
    >>> InProgressFirst(retest_order="likely_innocent", retest_window=5).retest_window
    5
    """

    max_facts: int
    candidate_slots: int
    retest_prob: float
    retest_window: int | None
    retest_order: str
    retest_floor: float

    #: the simulator's reference engine shows this policy its suspended lessons
    retests_suspended = True

    def _check_retest(self, *, fills_empty: bool = True) -> None:
        """Validate the slots and the re-test options in place (frozen dataclass)."""
        from cogstats._validation import check_real

        mf, cs = check_slots(self.max_facts, self.candidate_slots)
        object.__setattr__(self, "max_facts", mf)
        object.__setattr__(self, "candidate_slots", cs)
        prob = check_real("retest_prob", self.retest_prob, minimum=0.0, maximum=1.0)
        object.__setattr__(self, "retest_prob", float(prob if prob is not None else 0.5))
        fill = getattr(self, "fill_empty", False) if fills_empty else False
        window, fill = check_retest_options(self.retest_window, fill)
        object.__setattr__(self, "retest_window", window)
        if fills_empty:
            object.__setattr__(self, "fill_empty", fill)
        order, floor = check_retest_order(self.retest_order, self.retest_floor)
        object.__setattr__(self, "retest_order", order)
        object.__setattr__(self, "retest_floor", floor)

    def _split(
        self, lessons: Any, context: Mapping[str, Any] | None, u_order: float
    ) -> tuple[pl.DataFrame, list[str], list[str]]:
        """:func:`split_for_retest` with this policy's options."""
        return split_for_retest(
            lessons,
            retest_window=self.retest_window,
            context=context,
            retest_order=self.retest_order,
            retest_floor=self.retest_floor,
            u_order=u_order,
        )


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
            f"got context {dict(context) if context is not None else None!r}. {FILLED_BY}"
        )
    require_columns(lessons, (SINCE_COLUMN,), "retest_window")
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


def _with_trials(frame: pl.DataFrame, ledger: Ledger | None) -> pl.DataFrame:
    """``frame`` with each lesson's trials: its ``trials`` column, else counted in ``ledger``."""
    if TRIALS_COLUMN in frame.columns:
        return frame.with_columns(pl.col(TRIALS_COLUMN).fill_null(0))
    if ledger is not None and len(ledger):
        stats = ledger.fact_stats().select(pl.col("fact_id").alias("id"), "trials")
        return frame.join(stats, on="id", how="left", maintain_order="left").with_columns(
            pl.col("trials").fill_null(0)
        )
    return frame.with_columns(pl.lit(0).alias("trials"))


def runs_before(ledger: Ledger | None, context: Mapping[str, Any] | None) -> int:
    """Return the number of runs before the coming one.

    ``context["run"] - 1`` when the context gives the run (the simulator passes it; a
    run whose empty prompt was not recorded still counts), else the runs in ``ledger``.

    Examples
    --------
    >>> runs_before(None, {"run": 5}), runs_before(None, None)
    (4, 0)
    """
    run = None if context is None else context.get("run")
    if isinstance(run, int | np.integer) and not isinstance(run, bool):
        return int(run) - 1
    return 0 if ledger is None else len(ledger)


def fill_candidates(
    cands: pl.DataFrame,
    taken: Iterable[str],
    ledger: Ledger | None,
    room: int,
    before: int | None = None,
) -> list[str]:
    """Return up to ``room`` candidates not yet ``taken``: fewest trials, oldest, id first.

    The places a prompt has left after its candidates and verified block go to further
    candidates (benched ones included), deterministically, so that over runs every
    candidate gets its turn; only those with at least as many runs without them as with
    them (of the ``before`` runs so far, default the runs in ``ledger``; a baseline kept:
    a full prompt must not put a lesson in every run, where nothing can be learned about
    it).

    Examples
    --------
    >>> from cogstats import Ledger
    >>> cands = pl.DataFrame({"id": ["a", "b"], "created_at": [1, 2]})
    >>> ledger = Ledger.from_records([{"run_id": "r1", "score": 0.5, "fact_ids": ["a"]}])
    >>> fill_candidates(cands, [], ledger, 2)  # 'a': 1 run with, 0 without
    ['b']
    """
    if room <= 0 or cands.height == 0:
        return []
    taken = set(taken)
    rest = cands.filter(~pl.col("id").is_in(list(taken)))
    if rest.height == 0:
        return []
    rest = _with_trials(rest, ledger)
    runs = runs_before(ledger, None) if before is None else before
    rest = rest.filter(pl.lit(runs) >= 2 * pl.col("trials"))
    rest = rest.sort(["trials", "created_at", "id"], maintain_order=True)
    return list(rest["id"].head(room).to_list())


def verified_block(
    table: pl.DataFrame,
    ledger: Ledger | None,
    *,
    newest_first: bool = True,
    before: int | None = None,
) -> pl.DataFrame:
    """Return the non-candidate live lessons in prompt-fill order: verified, then admitted.

    Verified (and untagged) lessons come first, newest first (cycgraph's order;
    ``newest_first=False`` keeps store order); admitted lessons, screened but not shown
    to help, fill what room is left in rotation: fewest trials in ``ledger`` first, then
    oldest, then id, so that over runs every admitted lesson gets its turn, each only
    while it has at least as many runs without it as with it (of the ``before`` runs
    so far, default the runs in ``ledger``: it is still being judged, a baseline
    kept).  Without admitted lessons this is the verified block cycgraph builds.
    """
    is_cand = (pl.col("status") == "candidate").fill_null(False)
    is_adm = (pl.col("status") == ADMITTED).fill_null(False)
    ver = table.filter(~is_cand & ~is_adm)
    if newest_first:
        ver = ver.sort(["created_at", "id"], descending=[True, False], maintain_order=True)
    adm = table.filter(is_adm)
    if adm.height == 0:
        return ver
    adm = _with_trials(adm, ledger)
    runs = runs_before(ledger, None) if before is None else before
    adm = adm.filter(pl.lit(runs) >= 2 * pl.col("trials"))
    adm = adm.sort(["trials", "created_at", "id"], maintain_order=True)
    if TRIALS_COLUMN not in table.columns:
        adm = adm.drop("trials")
    return pl.concat([ver, adm], how="diagonal_relaxed")
