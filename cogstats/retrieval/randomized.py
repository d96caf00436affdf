"""Randomized and designed candidate schedules that separate co-injected lessons.

cycgraph's in-progress-first retrieval injects candidates in fixed cohorts, so lessons
that arrive together share every run and no estimator can tell them apart.  These
policies break the cohorts:

- :class:`Randomized`: every run, a simple random sample of ``candidate_slots`` lessons
  from the active pool (every live candidate, or the oldest ``pool`` of them); each pool
  lesson's inclusion probability (``k / n``) is logged, so IPW/AIPW estimators can use it.
- :class:`Designed`: a paired balanced schedule: in the first run of each pair a random
  half of the pool (at most ``candidate_slots``) is injected, in the second run lessons
  from the complement.  Every candidate gets runs with and without it, and pairs of
  adjacent runs cancel slow difficulty drift.

A capped pool admits newcomers only when a pool lesson is decided, so pair a cap with a
gate that always reaches a verdict (``max_trials`` or ``max_baseline_runs``), or the
pool can stall on lessons of small effect.

Both keep suspended lessons out except for a re-test slot (``retest_prob``: at most one
suspended lesson per run, at random, its propensity logged) and put admitted lessons in
the verified block after the verified ones, in rotation.

Both consume a fixed number of uniforms per run (one per pool position), in pool order, so
the simulator's compiled engine and its plain-Python reference draw the same schedule.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import polars as pl

from cogstats._validation import ParameterError, check_choice, check_int, check_real
from cogstats.ledger import Ledger
from cogstats.retrieval._base import (
    RetestSlot,
    Selection,
    retest_pick,
    runs_before,
    verified_block,
)
from cogstats.retrieval._registry import register_policy

__all__ = ["Designed", "Randomized", "bernoulli_capped_propensity"]


def _pool_and_verified(
    table: pl.DataFrame, pool_size: int, ledger: Ledger | None, before: int
) -> tuple[list[str], pl.DataFrame]:
    is_cand = (pl.col("status") == "candidate").fill_null(False)
    cands = table.filter(is_cand).sort(["created_at", "id"], maintain_order=True)
    ver = verified_block(table.filter(~is_cand), ledger, before=before)
    return cands["id"].to_list()[:pool_size], ver


def _smallest(u: np.ndarray, k: int) -> np.ndarray:
    """Positions of the k smallest uniforms (stable: ties go to the earlier position)."""
    return np.sort(np.argsort(u, kind="stable")[:k])


@dataclass(frozen=True)
class _Pooled(RetestSlot):
    max_facts: int = 10
    candidate_slots: int = 2
    pool: int | None = None
    retest_prob: float = 0.5
    retest_window: int | None = None
    retest_order: str = "random"
    retest_floor: float = 1.5

    def __post_init__(self) -> None:
        self._check_retest(fills_empty=False)
        object.__setattr__(self, "pool", check_int("pool", self.pool, minimum=1, optional=True))

    def _pool_size(self, table: pl.DataFrame) -> int:
        n_cand = int((table["status"] == "candidate").fill_null(False).sum())
        return n_cand if self.pool is None else min(self.pool, n_cand)

    def select(
        self,
        lessons: pl.DataFrame | Any,
        ledger: Ledger | None = None,
        *,
        rng: Any = None,
        context: Mapping[str, Any] | None = None,
    ) -> Selection:
        """Choose the lessons for the next run, drawing one uniform per pool lesson.

        With suspended lessons one more uniform (drawn last) decides the re-test slot.
        """
        gen = np.random.default_rng(rng)
        # the likely-innocent order's uniform first (none drawn for the random order)
        u_order = float(gen.random()) if self.retest_order == "likely_innocent" else 0.0
        table, suspended, guilty = self._split(lessons, context, u_order)
        size = self._pool_size(table)
        u = gen.random(size + bool(suspended or guilty))
        before = runs_before(ledger, context)
        return self._select_pool(table, ledger, u[:size], suspended, float(u[-1]), before, guilty)

    def uniforms_per_run(self, n_lessons: int) -> int:
        """Pre-drawn uniforms a simulated run needs: two coins and one per pool position."""
        return 2 + (n_lessons if self.pool is None else min(self.pool, n_lessons))

    def select_with_uniforms(
        self,
        lessons: pl.DataFrame | Any,
        ledger: Ledger | None,
        uniforms: np.ndarray,
        *,
        context: Mapping[str, Any] | None = None,
    ) -> Selection:
        """Select as :meth:`select` does, with the run's uniforms given.

        ``uniforms[2 + i]`` is pool position ``i``'s draw; ``uniforms[0]`` decides the
        re-test slot when lessons are suspended, ``uniforms[1]`` the likely-innocent
        order's suspect among those without a t.
        """
        u = np.asarray(uniforms, dtype=float)
        table, suspended, guilty = self._split(lessons, context, float(u[1]))
        before = runs_before(ledger, context)
        return self._select_pool(table, ledger, u[2:], suspended, float(u[0]), before, guilty)

    def _select_pool(
        self,
        table: pl.DataFrame,
        ledger: Ledger | None,
        uniforms: Any,
        suspended: list[str] | None = None,
        u_retest: float = 1.0,
        before: int | None = None,
        guilty: list[str] | None = None,
    ) -> Selection:
        u = np.asarray(uniforms, dtype=float)
        size = self._pool_size(table)
        if u.shape[0] < size:
            raise ParameterError(f"uniforms must hold {size} values; got {u.shape[0]}")
        if before is None:
            before = runs_before(ledger, None)
        pool, verified = _pool_and_verified(table, size, ledger, before)
        pick: str | None = None
        retest: dict[str, float] = {}
        if self.candidate_slots > 0:
            pick, retest = retest_pick(suspended or [], u_retest, self.retest_prob)
        slots = self.candidate_slots - (pick is not None)
        chosen, props = self._choose(pool, ledger, u[: len(pool)], slots)
        room = self.max_facts - len(chosen) - (pick is not None)
        ver = verified["id"].to_list()[:room]
        fact_ids = tuple(ver) + tuple(chosen) + ((pick,) if pick is not None else ())
        if pick is None and guilty and self.candidate_slots > 0:
            # the likely-guilty suspect, only into a place left empty (logged if placed)
            late, late_props = retest_pick(guilty, u_retest, self.retest_prob)
            if late is not None and len(fact_ids) < self.max_facts:
                fact_ids += (late,)
                retest = late_props
        if props is None and not retest:
            return Selection(fact_ids)
        # a deterministic choice (Designed) given the re-test draw: propensity 1
        logged = dict(props) if props is not None else {f: 1.0 for f in chosen}
        logged.update({f: 1.0 for f in ver})
        logged.update(retest)
        return Selection(fact_ids, logged)

    def _choose(
        self, pool: list[str], ledger: Ledger | None, u: np.ndarray, slots: int
    ) -> tuple[list[str], dict[str, float] | None]:
        raise ParameterError("abstract")  # pragma: no cover


def bernoulli_capped_propensity(n: int, slots: int, p: float) -> float:
    """Inclusion probability of a pool lesson under capped Bernoulli draws.

    Each of ``n`` pool lessons is drawn with probability ``p`` and at most ``slots`` of the
    drawn (those with the smallest uniforms, a uniformly random subset of them) are kept;
    by symmetry each lesson's probability is ``E[min(B, slots)] / n``, ``B ~ Bin(n, p)``.

    Examples
    --------
    >>> round(bernoulli_capped_propensity(4, 4, 0.5), 12)
    0.5
    >>> round(bernoulli_capped_propensity(4, 1, 0.5), 6)  # P(B >= 1) / 4
    0.234375
    """
    if n == 0:
        return 0.0
    if p >= 1.0:
        return min(n, slots) / n
    if p <= 0.0:
        return 0.0
    total = 0.0
    lp, lq, lgn = math.log(p), math.log1p(-p), math.lgamma(n + 1.0)
    for k in range(n + 1):
        pmf = math.exp(
            lgn - math.lgamma(k + 1.0) - math.lgamma(n - k + 1.0) + k * lp + (n - k) * lq
        )
        total += pmf * min(k, slots)
    return total / n


@register_policy(
    "randomized",
    description="random candidate sample from the active pool, propensities logged",
    kernel="cogstats.retrieval.kernel:POOL_PIECE",
)
@dataclass(frozen=True)
class Randomized(_Pooled):
    """Simple random sampling of candidates from the active pool, propensities logged.

    Parameters
    ----------
    max_facts : int
        Lessons per run; verified lessons (newest first) fill what candidates leave.
    candidate_slots : int
        Candidates per run: ``k = min(candidate_slots, n)`` of the ``n`` pool lessons.
    pool : int, optional
        Cap the active pool at the oldest ``pool`` live candidates (default: no cap).
    inclusion : {"fixed", "bernoulli"}
        "fixed": exactly ``k = min(candidate_slots, n)`` of the ``n`` pool lessons, a simple
        random sample (propensity ``k / n``).  Note that with a full pool every run then
        carries the same number of candidates, so a regression on all lesson indicators
        with an intercept is not identified (only contrasts between lessons are).
        "bernoulli": each pool lesson is drawn independently with ``inclusion_prob`` and at
        most ``candidate_slots`` of the drawn are kept (propensity from
        :func:`bernoulli_capped_propensity`); the count varies and absolute effects are
        identified.
    inclusion_prob : float
        The Bernoulli draw probability (default 0.5).
    retest_prob : float
        The re-test slot's probability per run (default 0.5; in [0, 1]): with ``m`` suspended
        lessons a run re-tests one of them, each with propensity ``retest_prob / m``, in
        one of the candidate slots (:func:`cogstats.retrieval._base.retest_pick`; the
        draw is ``uniforms[0]``, logged with the pool's propensities).  Admitted lessons
        fill the verified block after verified ones, in rotation.
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

    Examples
    --------
    >>> lessons = [{"id": f"c{i}", "status": "candidate", "created_at": i} for i in range(4)]
    >>> sel = Randomized(max_facts=2, candidate_slots=2).select(lessons, rng=1)
    >>> len(sel.fact_ids), sel.propensities["c0"]
    (2, 0.5)
    """

    inclusion: Literal["fixed", "bernoulli"] = "fixed"
    inclusion_prob: float = 0.5

    def __post_init__(self) -> None:
        """Validate the options."""
        super().__post_init__()
        check_choice("inclusion", self.inclusion, ("fixed", "bernoulli"))
        object.__setattr__(
            self,
            "inclusion_prob",
            check_real("inclusion_prob", self.inclusion_prob, minimum=0.0, maximum=1.0),
        )

    def _choose(
        self, pool: list[str], ledger: Ledger | None, u: np.ndarray, slots: int
    ) -> tuple[list[str], dict[str, float] | None]:
        n = len(pool)
        if n == 0:
            return [], {}
        if self.inclusion == "bernoulli":
            p = float(self.inclusion_prob)
            k = min(slots, int(np.sum(u < p)))
            prop = bernoulli_capped_propensity(n, slots, p)
        else:
            k = min(slots, n)
            prop = k / n
        picked = _smallest(u, k)
        return [pool[i] for i in picked], {f: prop for f in pool}


@register_policy(
    "designed",
    description="paired balanced schedule: a random half of the pool, then its complement",
    kernel="cogstats.retrieval.kernel:POOL_PIECE",
)
@dataclass(frozen=True)
class Designed(_Pooled):
    """Paired balanced schedule: a random half of the pool, then its complement.

    The pair position is the parity of the number of recorded runs in ``ledger``: at an
    even count the policy injects a random ``min(candidate_slots, ceil(n / 2))`` of the
    ``n`` pool lessons; at an odd count, a random ``candidate_slots`` (or all) of the pool
    lessons that were not in the ledger's last run.  Inclusions are balanced and no two
    lessons share a fixed cohort.  Propensities are not logged (the second run of a pair
    depends on the first).

    Examples
    --------
    >>> from cogstats import Ledger
    >>> lessons = [{"id": f"c{i}", "status": "candidate", "created_at": i} for i in range(4)]
    >>> policy = Designed(max_facts=2, candidate_slots=2)
    >>> first = policy.select(lessons, Ledger(), rng=3).fact_ids
    >>> ledger = Ledger.from_records([{"run_id": "r1", "score": 0.5, "fact_ids": list(first)}])
    >>> second = policy.select(lessons, ledger, rng=4).fact_ids
    >>> sorted(first + second)
    ['c0', 'c1', 'c2', 'c3']
    """

    def _choose(
        self, pool: list[str], ledger: Ledger | None, u: np.ndarray, slots: int
    ) -> tuple[list[str], dict[str, float] | None]:
        n = len(pool)
        recorded = 0 if ledger is None else len(ledger)
        if recorded % 2 == 0 or ledger is None:
            k = min(slots, math.ceil(n / 2))
            return [pool[i] for i in _smallest(u, k)], None
        last = set(ledger.frame["fact_ids"][-1].to_list())
        rest = [i for i, f in enumerate(pool) if f not in last]
        picked = _smallest(u[rest], min(slots, len(rest)))
        return [pool[rest[i]] for i in picked], None
