"""UCB1 retrieval over lessons (the evolving-cognition recipe), with optional exploration.

Each live lesson scores ``similarity(task, applies_to) + wins / max(hits, 1) +
sqrt(exploration * ln(total) / max(hits, 1))`` (docs/reference.md, evolving-cognition section;
uses exploration 2), where ``hits`` are the recorded runs that carried the lesson,
``wins`` those that scored at least ``win_threshold``, and ``total`` the recorded runs.
The top ``max_facts`` are injected.
Because the policy picks lessons for their past wins, the runs that include a lesson are
not a random sample and naive lift is biased under it.  With ``epsilon > 0`` a run is,
with that probability, a uniformly random ``max_facts``-subset instead; each lesson's
inclusion probability ``(1 - epsilon) [in top-k] + epsilon k / n`` is then logged.
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
from cogstats.retrieval._base import Selection, live_lesson_table
from cogstats.retrieval._registry import register_policy

__all__ = ["UCB1"]


@register_policy(
    "ucb1",
    description="UCB1 over live lessons (evolving cognition), optional epsilon exploration",
    kernel="cogstats.retrieval.kernel:UCB_PIECE",
)
@dataclass(frozen=True)
class UCB1:
    """UCB1 over live lessons (flagged, retired and evicted entries are not in the table).

    Parameters
    ----------
    max_facts : int
        Lessons injected per run (the recipe's k, 3-5).
    exploration : float
        The constant inside the square root (2 in UCB1).
    win_threshold : float
        A run is a win for its lessons when its score is at least this.
    cross_similarity : float
        Similarity of a task to a lesson that applies to another family (1 for its own
        family or for lessons without ``applies_to``).
    epsilon : float
        Probability of a uniformly random run (0: deterministic UCB1, no propensities).
    min_facts : int, optional
        When set, each run's prompt size is drawn uniformly from ``min_facts .. max_facts``
        (prompt budgets vary).  With a fixed size every run carries the same number of
        lessons, so a regression on all lesson indicators with an intercept is not
        identified (only contrasts between lessons are).

    Examples
    --------
    >>> from cogstats import Ledger
    >>> lessons = [{"id": "a", "created_at": 1, "applies_to": "x"},
    ...            {"id": "b", "created_at": 2, "applies_to": "y"}]
    >>> ledger = Ledger.from_records([{"run_id": "r1", "score": 0.1, "fact_ids": ["a"]}])
    >>> UCB1(max_facts=1).select(lessons, ledger, context={"family": "y"}).fact_ids
    ('b',)
    """

    max_facts: int = 4
    exploration: float = 2.0
    win_threshold: float = 0.5
    cross_similarity: float = 0.2
    epsilon: float = 0.0
    min_facts: int | None = None

    def __post_init__(self) -> None:
        """Validate the options."""
        object.__setattr__(self, "max_facts", check_int("max_facts", self.max_facts, minimum=1))
        mn = check_int("min_facts", self.min_facts, minimum=1, optional=True)
        if mn is not None and mn > self.max_facts:
            raise ParameterError(f"min_facts must be <= max_facts ({self.max_facts}); got {mn}")
        object.__setattr__(self, "min_facts", mn)
        for name, lo, hi in (
            ("exploration", 0.0, None),
            ("win_threshold", 0.0, 1.0),
            ("cross_similarity", -1.0, 1.0),
            ("epsilon", 0.0, 1.0),
        ):
            object.__setattr__(
                self, name, check_real(name, getattr(self, name), minimum=lo, maximum=hi)
            )

    def scores(
        self, lessons: pl.DataFrame | Any, ledger: Ledger | None, family: str | None
    ) -> pl.DataFrame:
        """Compute the UCB1 score of every lesson, with its parts (similarity, win rate, bonus)."""
        table = live_lesson_table(lessons).sort(["created_at", "id"], maintain_order=True)
        ids = table["id"].to_list()
        applies = (
            table["applies_to"].to_list() if "applies_to" in table.columns else [None] * len(ids)
        )
        if ledger is not None and len(ledger):
            design = ledger.design(ids)
            hits = np.asarray(design.matrix.sum(axis=0)).ravel()
            wins = design.matrix.T @ (ledger.scores >= self.win_threshold).astype(float)
            total = len(ledger)
        else:
            hits = np.zeros(len(ids))
            wins = np.zeros(len(ids))
            total = 0
        sim = np.array(
            [1.0 if a is None or a == family else self.cross_similarity for a in applies]
        )
        denom = np.maximum(hits, 1.0)
        bonus = np.sqrt(self.exploration * math.log(max(total, 1)) / denom)
        return pl.DataFrame(
            {
                "id": ids,
                "similarity": sim,
                "win_rate": wins / denom,
                "bonus": bonus,
                "ucb": sim + wins / denom + bonus,
            }
        )

    def select(
        self,
        lessons: pl.DataFrame | Any,
        ledger: Ledger | None = None,
        *,
        rng: Any = None,
        context: Mapping[str, Any] | None = None,
    ) -> Selection:
        """Top ``max_facts`` by UCB score (or a random subset with probability epsilon)."""
        n = live_lesson_table(lessons).height
        u = np.random.default_rng(rng).random(n + 2)
        return self.select_with_uniforms(lessons, ledger, u, context=context)

    def uniforms_per_run(self, n_lessons: int) -> int:
        """Pre-drawn uniforms a simulated run needs: two coins and one per lesson."""
        return n_lessons + 2

    def select_with_uniforms(
        self,
        lessons: pl.DataFrame | Any,
        ledger: Ledger | None,
        uniforms: np.ndarray,
        *,
        context: Mapping[str, Any] | None = None,
    ) -> Selection:
        """Select as :meth:`select` does, with the uniforms given.

        ``uniforms[0]`` is the exploration coin, ``uniforms[1]`` draws the prompt size,
        ``uniforms[2:]`` one per lesson in age order (oldest first).
        """
        family = None if context is None else context.get("family")
        table = self.scores(lessons, ledger, family)
        n = table.height
        u = np.asarray(uniforms, dtype=float)
        if u.shape[0] < n + 2:
            raise ParameterError(f"uniforms must hold {n + 2} values; got {u.shape[0]}")
        kmin = self.max_facts if self.min_facts is None else self.min_facts
        span = self.max_facts - kmin + 1
        k = min(kmin + min(int(u[1] * span), span - 1), n)
        ucb = table["ucb"].to_numpy()
        # highest score first; ties to the older lesson (stable order is age order)
        order = np.argsort(-ucb, kind="stable")
        top = np.sort(order[:k])
        ids = table["id"].to_list()
        if self.epsilon > 0 and u[0] < self.epsilon:
            chosen = np.sort(np.argsort(u[2 : n + 2], kind="stable")[:k])
        else:
            chosen = top
        if self.epsilon == 0:
            return Selection(tuple(ids[i] for i in chosen))
        # inclusion probability over the exploration coin and the prompt-size draw; the
        # compiled simulation engine computes it with the same operations in this order
        sizes = [min(kk, n) for kk in range(kmin, self.max_facts + 1)]
        mean_k = 0.0
        for size in sizes:
            mean_k += size
        mean_k /= span
        rank = np.empty(n, dtype=np.int64)
        rank[order] = np.arange(n)
        props = {}
        for i, f in enumerate(ids):
            top_count = sum(1 for size in sizes if size > rank[i])
            props[f] = (1 - self.epsilon) * (top_count / span) + self.epsilon * (mean_k / n)
        return Selection(tuple(ids[i] for i in chosen), props)
