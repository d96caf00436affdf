"""Suspect-first randomized retrieval (``suspect_first``), the ``recommended`` preset's.

Every run each candidate is drawn with probability ``inclusion_prob`` (1/2: runs with and
without it, so that its effect is identified and no two lessons share a fixed cohort), in
priority order until ``candidate_slots`` are taken:

1. suspects: candidates whose Welch statistic against the runs without them is below
   ``-suspect_z`` (two or more runs on each side), most suspicious first, so that a lesson
   that seems to hurt gets the trials that convict or clear it;
2. fresh candidates, with fewer than ``fresh_trials`` trials, oldest first (a lesson
   arriving with a poisoning wave is tried at once, whatever the store holds);
3. the others, lowest Welch statistic first (a lesson that has looked bad is tried
   before one that has looked good; ties oldest first).

Verified lessons fill the remaining places (newest first, as cycgraph).  The order
depends on past scores (suspects first), so the policy logs no propensities; the
recommended gate's regression does not need them.

The Welch statistic is computed from the sums a lesson store keeps (trials, sum and sum of
squares of the scores with the lesson; the totals), in the same arithmetic as the
simulator's kernel.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from cogstats._validation import ParameterError, check_int, check_real
from cogstats.ledger import Ledger
from cogstats.retrieval._base import (
    RetestSlot,
    Selection,
    fill_candidates,
    retest_pick,
    runs_before,
    verified_block,
)
from cogstats.retrieval._registry import register_policy

__all__ = ["SuspectFirst", "welch_z"]


def welch_z(n: int, s: float, ss: float, tot_n: int, tot_s: float, tot_ss: float) -> float:
    """Return the Welch t of a lesson against the runs without it (0 below two a side).

    ``n`` runs with the lesson, score sum ``s`` and sum of squares ``ss``; totals
    ``tot_*`` over every run.  The kernel's ``_welch`` with no variance floor, in the
    same order of operations.

    Examples
    --------
    >>> from scipy import stats
    >>> a, b = [0.5, 0.6, 0.4], [0.7, 0.8, 0.75]
    >>> z = welch_z(3, sum(a), sum(x * x for x in a), 6, sum(a + b), sum(x * x for x in a + b))
    >>> bool(abs(z - stats.ttest_ind(a, b, equal_var=False).statistic) < 1e-12)
    True
    """
    nb = tot_n - n
    if n < 2 or nb < 2:
        return 0.0
    mean_a = s / n
    sb = tot_s - s
    mean_b = sb / nb
    va = max(max((ss - s * mean_a) / (n - 1), 0.0), 0.0)
    vb = max(max(((tot_ss - ss) - sb * mean_b) / (nb - 1), 0.0), 0.0)
    se = math.sqrt(va / n + vb / nb)
    if not se > 0.0:
        return 0.0
    return (mean_a - mean_b) / se


def _sums(ledger: Ledger | None) -> tuple[dict[str, tuple[int, float, float]], int, float, float]:
    """Per-lesson (trials, sum, sum of squares) and the totals, added in run order."""
    if ledger is None or len(ledger) == 0:
        return {}, 0, 0.0, 0.0
    y = np.asarray(ledger.scores, dtype=np.float64)
    ids, rows, cols = ledger._facts_index()
    n = np.bincount(cols, minlength=len(ids))
    s = np.bincount(cols, weights=y[rows], minlength=len(ids))
    ss = np.bincount(cols, weights=(y * y)[rows], minlength=len(ids))
    tot_s = float(np.cumsum(y)[-1])
    tot_ss = float(np.cumsum(y * y)[-1])
    stats = {f: (int(n[i]), float(s[i]), float(ss[i])) for i, f in enumerate(ids)}
    return stats, len(y), tot_s, tot_ss


@register_policy(
    "suspect_first",
    description="randomized candidate inclusion, suspects first (the recommended preset's)",
    kernel="cogstats.sim._kernel_policies:SUSPECT_PIECE",
)
@dataclass(frozen=True)
class SuspectFirst(RetestSlot):
    """Randomized candidate inclusion, suspects first (see the module docstring).

    Parameters
    ----------
    max_facts : int
        Lessons per run; verified lessons (newest first) fill what candidates leave.
    candidate_slots : int
        Candidates per run at most.
    inclusion_prob : float
        Each candidate's draw probability, in priority order (in (0, 1)).
    suspect_z : float
        A candidate whose Welch statistic is below ``-suspect_z`` goes first, before the
        fresh ones (>= 0).
    fresh_trials : int
        Candidates with fewer trials come next (>= 0).
    retest_prob : float
        The re-test slot's probability per run (default 0.5; in [0, 1]): with ``m`` suspended
        lessons (status ``suspended``, out of the prompt) a run re-tests one of them, each
        with propensity ``retest_prob / m``, in one of the candidate slots
        (:func:`cogstats.retrieval._base.retest_pick`, drawn from ``uniforms[0]``); the
        suspects' propensities are logged.  Admitted lessons fill the verified block
        after verified ones, in rotation.
    retest_window : int or None
        Re-test only lessons suspended within the last ``retest_window`` runs (the lesson
        table's ``status_since`` and ``context["run"]``, see
        :func:`cogstats.retrieval._base.retest_eligible`); ``m`` then counts the eligible
        ones.  Default None: every suspended lesson.
    retest_order : {"random", "likely_innocent"}
        How the re-test slot picks among the eligible suspects: uniformly (default), or
        the one whose last gate t is highest (:func:`cogstats.retrieval._base.likely_innocent`,
        skipping those below ``-retest_floor``), re-tested with probability ``retest_prob``.
    retest_floor : float
        See ``retest_order`` (default 1.5, >= 0).
    fill_empty : bool
        Keep the prompt full (default False): places left after the drawn candidates and
        the verified block go to the candidates not drawn, fewest trials first, then
        oldest, then id.

    Examples
    --------
    >>> lessons = [{"id": f"c{i}", "status": "candidate", "created_at": i} for i in range(6)]
    >>> sel = SuspectFirst(max_facts=4, candidate_slots=2).select(lessons, rng=2)
    >>> len(sel.fact_ids) <= 2
    True
    """

    max_facts: int = 10
    candidate_slots: int = 2
    inclusion_prob: float = 0.5
    suspect_z: float = 2.0
    fresh_trials: int = 2
    retest_prob: float = 0.5
    retest_window: int | None = None
    retest_order: str = "random"
    retest_floor: float = 1.5
    fill_empty: bool = False

    def __post_init__(self) -> None:
        """Validate the options."""
        self._check_retest()
        p = float(
            check_real("inclusion_prob", self.inclusion_prob, minimum=0.0, maximum=1.0) or 0.0
        )
        if not 0 < p < 1:
            raise ParameterError(
                f"inclusion_prob must be in (0, 1) (runs with and without); got {p!r}"
            )
        object.__setattr__(self, "inclusion_prob", float(p))
        object.__setattr__(
            self, "suspect_z", float(check_real("suspect_z", self.suspect_z, minimum=0.0) or 0.0)
        )
        object.__setattr__(
            self, "fresh_trials", check_int("fresh_trials", self.fresh_trials, minimum=0)
        )

    def uniforms_per_run(self, n_lessons: int) -> int:
        """Return how many pre-drawn uniforms a simulated run needs.

        Two coins, then one draw per candidate position.
        """
        return 2 + n_lessons

    def select(
        self,
        lessons: pl.DataFrame | Any,
        ledger: Ledger | None = None,
        *,
        rng: Any = None,
        context: Mapping[str, Any] | None = None,
    ) -> Selection:
        """Choose the lessons for the next run (draws from ``rng``)."""
        gen = np.random.default_rng(rng)
        # the likely-innocent order's uniform first (none drawn for the random order)
        u_order = float(gen.random()) if self.retest_order == "likely_innocent" else 0.0
        table, suspended, guilty = self._split(lessons, context, u_order)
        n = int((table["status"] == "candidate").fill_null(False).sum())
        u = gen.random(2 + n)
        before = runs_before(ledger, context)
        return self._choose(table, ledger, u, suspended, before, guilty)

    def select_with_uniforms(
        self,
        lessons: pl.DataFrame | Any,
        ledger: Ledger | None,
        uniforms: np.ndarray,
        *,
        context: Mapping[str, Any] | None = None,
    ) -> Selection:
        """Choose as :meth:`select` does, with the run's uniforms given.

        ``uniforms[2 + i]`` is the draw of candidate ``i`` (candidates oldest first);
        ``uniforms[0]`` decides the re-test slot when lessons are suspended, ``uniforms[1]``
        the likely-innocent order's suspect among those without a t.
        """
        table, suspended, guilty = self._split(lessons, context, float(uniforms[1]))
        u = np.asarray(uniforms, dtype=float)
        before = runs_before(ledger, context)
        return self._choose(table, ledger, u, suspended, before, guilty)

    def _choose(
        self,
        table: pl.DataFrame,
        ledger: Ledger | None,
        u: np.ndarray,
        suspended: list[str],
        before: int,
        guilty: list[str] | None = None,
    ) -> Selection:
        is_cand = (pl.col("status") == "candidate").fill_null(False)
        cands = table.filter(is_cand).sort(["created_at", "id"], maintain_order=True)["id"]
        verified = verified_block(table.filter(~is_cand), ledger, before=before)["id"]
        pick: str | None = None
        retest: dict[str, float] = {}
        if self.candidate_slots > 0:
            pick, retest = retest_pick(suspended, float(u[0]), self.retest_prob)
        slots = self.candidate_slots - (pick is not None)
        sums, tot_n, tot_s, tot_ss = _sums(ledger)
        suspects: list[int] = []
        fresh: list[int] = []
        rest: list[int] = []
        ids = cands.to_list()
        z = np.zeros(len(ids))
        for i, f in enumerate(ids):
            n, s, ss = sums.get(f, (0, 0.0, 0.0))
            z[i] = welch_z(n, s, ss, tot_n, tot_s, tot_ss)
            if z[i] < -self.suspect_z:
                suspects.append(i)
            elif n < self.fresh_trials:
                fresh.append(i)
            else:
                rest.append(i)
        suspects.sort(key=lambda i: (z[i], i))
        rest.sort(key=lambda i: (z[i], i))
        chosen: list[int] = []
        for i in (*suspects, *fresh, *rest):
            if len(chosen) >= slots:
                break
            if u[2 + i] < self.inclusion_prob:
                chosen.append(i)
        room = self.max_facts - len(chosen) - (pick is not None)
        ver = verified.to_list()[: max(room, 0)]
        fact_ids = tuple(ver) + tuple(ids[i] for i in sorted(chosen))
        if self.fill_empty:
            # places still empty go to the candidates not drawn, fewest trials first
            # (deterministic given the draws; the policy logs no design propensities)
            cand_rows = table.filter(is_cand)
            fact_ids += tuple(fill_candidates(cand_rows, fact_ids, ledger, room - len(ver), before))
        if pick is None and guilty and self.candidate_slots > 0:
            # the likely-guilty suspect, only into a place left empty (logged if placed)
            late, late_props = retest_pick(guilty, float(u[0]), self.retest_prob)
            if late is not None and len(fact_ids) < self.max_facts:
                pick, retest = late, late_props
        if pick is None and not retest:
            return Selection(fact_ids)
        # the rest is logged with propensity 1 (the ledger asks a propensity of every
        # injected lesson; the suspect-first order is not a known design)
        logged = {f: 1.0 for f in fact_ids}
        logged.update(retest)
        return Selection(fact_ids + ((pick,) if pick is not None else ()), logged)
