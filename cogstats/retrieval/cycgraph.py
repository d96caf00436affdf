"""cycgraph's gated lesson retrieval and its two historical variants.

:class:`InProgressFirst` reproduces ``retrieveGatedLessons`` of ``@cycgraph/memory``
0.8.0 (verified lessons newest first; candidates by trials, oldest first, with an
optional rest bench); the recorded retrieval vectors pass in order.  ``NewestFirst`` and
``FewestTrialsFirst`` are the orderings cycgraph tried before (they churn and starve,
respectively) and are kept for simulation.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from cogstats._validation import check_int, check_real
from cogstats.ledger import Ledger
from cogstats.retrieval._base import (
    TRIALS_COLUMN,
    RetestSlot,
    Selection,
    fill_candidates,
    holdout_pick,
    retest_pick,
    runs_before,
    verified_block,
)
from cogstats.retrieval._registry import register_policy

__all__ = ["FewestTrialsFirst", "InProgressFirst", "NewestFirst"]


def _newest_first(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.sort(["created_at", "id"], descending=[True, False], maintain_order=True)


def _with_trials(frame: pl.DataFrame, ledger: Ledger | None) -> pl.DataFrame:
    if TRIALS_COLUMN in frame.columns or ledger is None:  # a store's table: its trials
        return frame.with_columns(pl.col(TRIALS_COLUMN).fill_null(0))
    stats = ledger.fact_stats().select(pl.col("fact_id").alias("id"), "trials")
    return frame.join(stats, on="id", how="left", maintain_order="left").with_columns(
        pl.col("trials").fill_null(0)
    )


@dataclass(frozen=True)
class _Gated(RetestSlot, ABC):
    max_facts: int = 10
    candidate_slots: int = 2
    rest_after_trials: int | None = None
    retest_prob: float = 0.5
    retest_window: int | None = None
    fill_empty: bool = False
    retest_order: str = "random"
    retest_floor: float = 1.5
    holdout_prob: float = 0.0

    #: reads the lesson table (its ``trials`` column, when present) and the context only:
    #: a lesson store passes no ledger
    needs_ledger = False

    def __post_init__(self) -> None:
        self._check_retest()
        rest = check_int("rest_after_trials", self.rest_after_trials, minimum=1, optional=True)
        object.__setattr__(self, "rest_after_trials", rest)
        hp = check_real("holdout_prob", self.holdout_prob, minimum=0.0, maximum=1.0)
        object.__setattr__(self, "holdout_prob", float(hp if hp is not None else 0.0))

    @abstractmethod
    def _order_candidates(self, cands: pl.DataFrame, ledger: Ledger | None) -> pl.DataFrame:
        """Eligible candidates in priority order."""

    def select(
        self,
        lessons: pl.DataFrame | Any,
        ledger: Ledger | None = None,
        *,
        rng: Any = None,
        context: Mapping[str, Any] | None = None,
    ) -> Selection:
        """Choose the lessons for the next run (``context`` unused).

        The output is the verified block (verified newest first, then admitted lessons
        in rotation) followed by the chosen candidates; the block fills ``max_facts``
        minus the candidates taken.  Deterministic unless lessons are suspended: then
        one uniform from ``rng`` draws the re-test slot (see the class notes).
        """
        gen = np.random.default_rng(rng)
        if self.retest_order == "likely_innocent":  # two uniforms: the slot, the order
            u = gen.random(2)
            table, suspended, guilty = self._split(lessons, context, float(u[1]))
            u0 = float(u[0]) if suspended or guilty else 1.0
            before = runs_before(ledger, context)
            uh = float(gen.random()) if self.holdout_prob > 0 else 1.0
            return self._select(table, suspended, ledger, u0, before, guilty, uh)
        table, suspended, _ = self._split(lessons, context, 0.0)
        u0 = float(gen.random()) if suspended else 1.0
        uh = float(gen.random()) if self.holdout_prob > 0 else 1.0
        return self._select(table, suspended, ledger, u0, runs_before(ledger, context), None, uh)

    def _select(
        self,
        table: pl.DataFrame,
        suspended: list[str],
        ledger: Ledger | None,
        u0: float,
        before: int,
        guilty: list[str] | None = None,
        uh: float = 1.0,
    ) -> Selection:
        is_cand = (pl.col("status") == "candidate").fill_null(False)
        cands = table.filter(is_cand)
        pick: str | None = None
        props: dict[str, float] = {}
        if self.candidate_slots > 0:
            pick, props = retest_pick(suspended, u0, self.retest_prob)
        slots = self.candidate_slots - (pick is not None)
        chosen = self._order_candidates(cands, ledger).head(slots)
        room = self.max_facts - chosen.height - (pick is not None)
        ver = verified_block(table.filter(~is_cand), ledger, before=before).head(room)
        block = ver["id"].to_list()
        held: dict[str, float] = {}
        if self.holdout_prob > 0:
            block, held = holdout_pick(block, ver["status"].to_list(), uh, self.holdout_prob)
        fact_ids = tuple(block) + tuple(chosen["id"].to_list())
        if self.fill_empty:
            # places still empty go to further candidates (benched ones too), fewest
            # trials first: deterministic given the re-test draw
            fact_ids += tuple(fill_candidates(cands, fact_ids, ledger, room - ver.height, before))
        if pick is not None:
            fact_ids += (pick,)
        elif guilty and self.candidate_slots > 0:
            # the likely-guilty suspect, only into a place left empty (logged if placed)
            late, late_props = retest_pick(guilty, u0, self.retest_prob)
            if late is not None and len(fact_ids) < self.max_facts:
                fact_ids += (late,)
                props = late_props
        if not props and not held:
            return Selection(fact_ids)
        # the rest of the prompt is deterministic given the draws: propensity 1
        return Selection(fact_ids, {**{f: 1.0 for f in fact_ids}, **held, **props})

    def uniforms_per_run(self, n_lessons: int) -> int:
        """Pre-drawn uniforms a simulated run needs: the two coins (and the holdout's)."""
        return 3 if self.holdout_prob > 0 else 2

    def select_with_uniforms(
        self,
        lessons: pl.DataFrame | Any,
        ledger: Ledger | None,
        uniforms: Any,
        *,
        context: Mapping[str, Any] | None = None,
    ) -> Selection:
        """As :meth:`select`, with the run's uniforms given.

        ``uniforms[0]`` and ``uniforms[1]`` are used only when lessons are suspended: the
        first draws the re-test slot, the second the likely-innocent order's suspect
        among those without a t; ``uniforms[2]`` draws the holdout (``holdout_prob`` > 0).
        """
        table, suspended, guilty = self._split(lessons, context, float(uniforms[1]))
        u0 = float(uniforms[0]) if suspended or guilty else 1.0
        before = runs_before(ledger, context)
        uh = float(uniforms[2]) if self.holdout_prob > 0 else 1.0
        return self._select(table, suspended, ledger, u0, before, guilty, uh)


@register_policy(
    "in_progress_first",
    description="cycgraph's retrieval: candidates with most trials first, rest bench",
    kernel="cogstats.retrieval.kernel:ORDER_PIECE",
)
@dataclass(frozen=True)
class InProgressFirst(_Gated):
    """cycgraph's retrieval: in-progress-first candidates with an optional rest bench.

    Parameters
    ----------
    max_facts : int
        Lessons per run (default 10).
    candidate_slots : int
        Slots for candidates (default 2, clamped to ``max_facts``); verified lessons
        fill the rest, and unused candidate slots.
    rest_after_trials : int or None
        With a ledger: bench candidates once they have this many trials, so their
        leave-one-out baseline can form.
    retest_prob : float
        The re-test slot's probability per run (default 0.5; in [0, 1]).
    retest_window : int or None
        Re-test only lessons suspended within the last ``retest_window`` runs (``run -
        since < retest_window``, ``since`` the first run suspended, read from the lesson
        table's ``status_since`` column; the coming run is ``context["run"]``; the
        simulator's reference engine passes both).  Default None: every suspended lesson.
    fill_empty : bool
        Keep the prompt full (default False): places left after the candidates and the
        verified block go to further candidates, benched ones included, fewest trials
        first, then oldest, then id (deterministic, logged with propensity 1).
    retest_order : {"random", "likely_innocent"}
        How the re-test slot picks among the eligible suspects (default "random":
        uniformly, each with propensity ``retest_prob / m``); "likely_innocent": the one
        whose last gate t (the lesson table's ``gate_t``) is highest, none yet first,
        skipping those below ``-retest_floor``, re-tested with probability
        ``retest_prob`` (:func:`cogstats.retrieval._base.likely_innocent`).
    retest_floor : float
        See ``retest_order`` (default 1.5, >= 0).
    holdout_prob : float
        Holdouts of verified lessons (default 0: none): with ``m`` verified lessons in
        the prompt's verified block, a run withholds one of them with probability
        ``holdout_prob``, each equally likely, so that a verified lesson that turns
        harmful can be detected (judge verified lessons too: ``recheck_verified``).  At
        most one a run; each of the ``m`` is logged with its propensity ``1 -
        holdout_prob / m`` (:func:`cogstats.retrieval._base.holdout_pick`).  The
        simulator's compiled engine does not hold out: a scenario with holdouts runs in
        the reference engine.

    Notes
    -----
    Lesson statuses (:data:`cogstats._codes.LESSON_STATUSES`): verified (and untagged)
    lessons fill the verified block newest first, then admitted lessons in rotation
    (fewest trials first); suspended lessons are injected only through the re-test
    slot: when ``m >= 1`` lessons are suspended, each run re-tests one of them with
    probability ``retest_prob``, each with propensity ``retest_prob / m``, in one of
    the candidate slots (:func:`cogstats.retrieval._base.retest_pick`); the
    propensities are logged (``Selection.propensities``: the suspects', and 1 for the
    rest of the prompt, which is deterministic given the re-test draw), so that a gate
    can weigh the re-test runs.  Never two suspended lessons in one run.  With no
    suspended lesson the selection is cycgraph's, deterministic.  With ``retest_window``
    the ``m`` above counts only the eligible suspects (propensity ``retest_prob / m``
    each; suspects past their window are not logged: they cannot be drawn).

    With a ledger, candidates are ordered by trials (most first), then oldest first,
    then id; without one, newest first, then id.  Ids compare by code point (cycgraph
    uses ``localeCompare``, which differs only for ids that differ in letter case).

    Examples
    --------
    >>> from cogstats import Ledger
    >>> lessons = [
    ...     {"id": "v1", "status": "verified", "created_at": 1},
    ...     {"id": "c1", "status": "candidate", "created_at": 2},
    ...     {"id": "c2", "status": "candidate", "created_at": 3},
    ... ]
    >>> ledger = Ledger.from_records([{"run_id": "r1", "score": 0.5, "fact_ids": ["c1"]}])
    >>> InProgressFirst(max_facts=2, candidate_slots=1).select(lessons, ledger).fact_ids
    ('v1', 'c1')
    >>> InProgressFirst(max_facts=2, candidate_slots=1, rest_after_trials=1).select(
    ...     lessons, ledger).fact_ids
    ('v1', 'c2')
    >>> sus = lessons + [{"id": "s1", "status": "suspended", "created_at": 4}]
    >>> sel = InProgressFirst(max_facts=3, candidate_slots=2, retest_prob=1.0).select(sus, ledger)
    >>> sel.fact_ids, sel.propensities["s1"]
    (('v1', 'c1', 's1'), 1.0)
    """

    def _order_candidates(self, cands: pl.DataFrame, ledger: Ledger | None) -> pl.DataFrame:
        if ledger is None and TRIALS_COLUMN not in cands.columns:
            return _newest_first(cands)
        cands = _with_trials(cands, ledger)
        if self.rest_after_trials is not None:
            cands = cands.filter(pl.col("trials") < self.rest_after_trials)
        return cands.sort(
            ["trials", "created_at", "id"], descending=[True, False, False], maintain_order=True
        )


@register_policy(
    "newest_first",
    description="candidates newest first (cycgraph's earlier ordering; churns)",
    kernel="cogstats.retrieval.kernel:ORDER_PIECE",
)
@dataclass(frozen=True)
class NewestFirst(_Gated):
    """Candidates newest first (cycgraph's retrieval without a ledger); rest bench optional.

    Examples
    --------
    >>> lessons = [{"id": "c1", "status": "candidate", "created_at": 1},
    ...            {"id": "c2", "status": "candidate", "created_at": 2}]
    >>> NewestFirst(max_facts=1, candidate_slots=1).select(lessons).fact_ids
    ('c2',)
    """

    def _order_candidates(self, cands: pl.DataFrame, ledger: Ledger | None) -> pl.DataFrame:
        known = ledger is not None or TRIALS_COLUMN in cands.columns
        if known and self.rest_after_trials is not None:
            cands = _with_trials(cands, ledger).filter(pl.col("trials") < self.rest_after_trials)
        return _newest_first(cands)


@register_policy(
    "fewest_trials_first",
    description="candidates with fewest trials first (cycgraph's earlier ordering; starves)",
    kernel="cogstats.retrieval.kernel:ORDER_PIECE",
)
@dataclass(frozen=True)
class FewestTrialsFirst(_Gated):
    """Candidates with the fewest trials first, then oldest, then id; rest bench optional.

    Examples
    --------
    >>> from cogstats import Ledger
    >>> lessons = [{"id": "c1", "status": "candidate", "created_at": 1},
    ...            {"id": "c2", "status": "candidate", "created_at": 2}]
    >>> ledger = Ledger.from_records([{"run_id": "r1", "score": 0.5, "fact_ids": ["c1"]}])
    >>> FewestTrialsFirst(max_facts=1, candidate_slots=1).select(lessons, ledger).fact_ids
    ('c2',)
    """

    def _order_candidates(self, cands: pl.DataFrame, ledger: Ledger | None) -> pl.DataFrame:
        if ledger is None and TRIALS_COLUMN not in cands.columns:
            cands = cands.with_columns(pl.lit(0).alias("trials"))
        else:
            cands = _with_trials(cands, ledger)
        if self.rest_after_trials is not None:
            cands = cands.filter(pl.col("trials") < self.rest_after_trials)
        return cands.sort(
            ["trials", "created_at", "id"], descending=[False, False, False], maintain_order=True
        )
