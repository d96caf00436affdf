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

import polars as pl

from cogstats._validation import check_int
from cogstats.ledger import Ledger
from cogstats.retrieval._base import Selection, check_slots, lesson_table
from cogstats.retrieval._registry import register_policy

__all__ = ["FewestTrialsFirst", "InProgressFirst", "NewestFirst"]


def _split(table: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(candidates, verified-or-untagged) in store order."""
    is_cand = pl.col("status") == "candidate"
    return table.filter(is_cand.fill_null(False)), table.filter(~is_cand.fill_null(False))


def _newest_first(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.sort(["created_at", "id"], descending=[True, False], maintain_order=True)


def _with_trials(frame: pl.DataFrame, ledger: Ledger) -> pl.DataFrame:
    stats = ledger.fact_stats().select(pl.col("fact_id").alias("id"), "trials")
    return frame.join(stats, on="id", how="left", maintain_order="left").with_columns(
        pl.col("trials").fill_null(0)
    )


@dataclass(frozen=True)
class _Gated(ABC):
    max_facts: int = 10
    candidate_slots: int = 2
    rest_after_trials: int | None = None

    def __post_init__(self) -> None:
        mf, cs = check_slots(self.max_facts, self.candidate_slots)
        object.__setattr__(self, "max_facts", mf)
        object.__setattr__(self, "candidate_slots", cs)
        rest = check_int("rest_after_trials", self.rest_after_trials, minimum=1, optional=True)
        object.__setattr__(self, "rest_after_trials", rest)

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
        """Choose the lessons for the next run (deterministic; ``rng`` and ``context`` unused).

        The output is the verified block (newest first) followed by the chosen
        candidates; verified lessons fill ``max_facts`` minus the candidates taken.
        """
        table = lesson_table(lessons)
        cands, verified = _split(table)
        chosen = self._order_candidates(cands, ledger).head(self.candidate_slots)
        room = self.max_facts - chosen.height
        ver = _newest_first(verified).head(room)
        return Selection(tuple(ver["id"].to_list()) + tuple(chosen["id"].to_list()))

    def uniforms_per_run(self, n_lessons: int) -> int:
        """Pre-drawn uniforms a simulated run needs: the two coins only (deterministic)."""
        return 2

    def select_with_uniforms(
        self,
        lessons: pl.DataFrame | Any,
        ledger: Ledger | None,
        uniforms: Any,
        *,
        context: Mapping[str, Any] | None = None,
    ) -> Selection:
        """As :meth:`select` (the policy is deterministic: ``uniforms`` are unused)."""
        return self.select(lessons, ledger)


@register_policy(
    "in_progress_first",
    description="cycgraph's retrieval: candidates with most trials first, rest bench",
    compiled=True,
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

    Notes
    -----
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
    """

    def _order_candidates(self, cands: pl.DataFrame, ledger: Ledger | None) -> pl.DataFrame:
        if ledger is None:
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
    compiled=True,
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
        if ledger is not None and self.rest_after_trials is not None:
            cands = _with_trials(cands, ledger).filter(pl.col("trials") < self.rest_after_trials)
        return _newest_first(cands)


@register_policy(
    "fewest_trials_first",
    description="candidates with fewest trials first (cycgraph's earlier ordering; starves)",
    compiled=True,
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
        if ledger is None:
            cands = cands.with_columns(pl.lit(0).alias("trials"))
        else:
            cands = _with_trials(cands, ledger)
        if self.rest_after_trials is not None:
            cands = cands.filter(pl.col("trials") < self.rest_after_trials)
        return cands.sort(
            ["trials", "created_at", "id"], descending=[False, False, False], maintain_order=True
        )
