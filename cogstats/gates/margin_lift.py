"""The worked example of docs/gates.md ("Writing a gate"): a gate on the mean lift.

Promote a lesson whose mean lift (its runs' mean score minus the other runs') reaches
``margin`` after ``min_trials`` trials, evict it as harmful at ``-margin``.  The whole gate
is this module: the rule written once (:func:`margin_lift_rule`, numbers or numpy arrays),
the class, and its one registry line, which names its kernel piece
(:mod:`cogstats.sim._kernel_margin_lift`, where the simulator compiles the same rule).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from cogstats import _codes as C
from cogstats._validation import ParameterError
from cogstats.gates._registry import register_gate
from cogstats.gates._report import GateReport, candidate_ids
from cogstats.ledger import Ledger
from cogstats.stats import StreamingStats

__all__ = ["MarginLift", "margin_lift_rule"]


def margin_lift_rule(
    n_a: Any, n_b: Any, mean_a: Any, mean_b: Any, min_trials: int, margin: float
) -> Any:
    """Return the outcome code per lesson: promote, evict as harmful, or hold.

    A lesson with ``n_a >= min_trials`` trials (at least one) and a baseline (``n_b >
    0``) is promoted when its lift ``mean_a - mean_b`` reaches ``margin`` and evicted as
    harmful when it reaches ``-margin``.  Codes: :data:`cogstats._codes.OUTCOME_CODES`.
    Numbers or numpy arrays, elementwise: the gate calls it on every lesson at once, the
    simulator's kernel compiles it and calls it lesson by lesson.

    Examples
    --------
    >>> margin_lift_rule(np.array([4, 4, 4, 1]), np.array([6, 6, 6, 9]),
    ...                  np.array([0.7, 0.35, 0.55, 0.9]), 0.5, 3, 0.1).tolist()
    [1, 2, 0, 0]
    """
    ready = (n_a >= min_trials) & (n_a > 0) & (n_b > 0)
    lift = mean_a - mean_b
    up = ready & (lift >= margin)
    down = ready & np.logical_not(up) & (lift <= -margin)
    return up * C.OUTCOME_PROMOTE + down * C.OUTCOME_EVICT_HARMFUL


_DECISIONS = np.array([C.HOLD, C.PROMOTE, C.EVICT, C.EVICT], dtype=object)
_REASONS = np.array([None, None, C.HARMFUL, C.NO_LIFT], dtype=object)
_SCHEMA = {
    "fact_id": pl.String,
    "decision": pl.String,
    "reason": pl.String,
    "why": pl.String,
    "trials": pl.Int64,
    "estimate": pl.Float64,
    "baseline_runs": pl.Int64,
}


@register_gate(
    "margin_lift",
    description="promote or evict on the mean lift past a margin (the guide's example)",
    kernel="cogstats.sim._kernel_margin_lift",
)
@dataclass(frozen=True)
class MarginLift:
    """Promote at a mean lift of ``margin``, evict as harmful at ``-margin``.

    Parameters
    ----------
    min_trials : int
        Trials before a lesson is judged.
    margin : float
        The lift that decides.

    Examples
    --------
    >>> from cogstats import Ledger
    >>> ledger = Ledger.from_records(
    ...     [{"run_id": f"w{i}", "score": 0.8, "fact_ids": ["a"]} for i in range(3)]
    ...     + [{"run_id": f"b{i}", "score": 0.5, "fact_ids": []} for i in range(3)]
    ... )
    >>> MarginLift().evaluate(ledger).promoted
    ('a',)
    """

    min_trials: int = 3
    margin: float = 0.1

    def running_statistics(self) -> StreamingStats:
        """Return empty running statistics (per-lesson sums) for this gate."""
        return StreamingStats()

    def statistics(self, ledger: Ledger) -> StreamingStats:
        """Return the gate's statistics of ``ledger`` (per-lesson sums)."""
        if not isinstance(ledger, Ledger):
            raise ParameterError(f"ledger must be a cogstats Ledger; got {type(ledger).__name__}")
        return StreamingStats.from_ledger(ledger)

    def evaluate(
        self,
        ledger: Ledger,
        candidates: Sequence[str] | None = None,
        *,
        rng: Any = None,
        statuses: Mapping[str, Any] | None = None,
    ) -> GateReport:
        """Judge the candidates (default: every lesson in the ledger)."""
        stats = self.statistics(ledger)
        return self.judge(stats, statuses, candidate_ids(ledger, candidates), rng=rng)

    def judge(
        self,
        stats: StreamingStats,
        statuses: Mapping[str, Any] | None = None,
        candidates: Sequence[str] | None = None,
        *,
        rng: Any = None,
    ) -> GateReport:
        """Decide on ``candidates`` from the statistics: the rule on every lesson at once."""
        ids = list(stats.fact_ids if candidates is None else candidates)
        g = stats.group_arrays(stats.lesson_index(ids))[0]
        code = margin_lift_rule(g.n_a, g.n_b, g.mean_a, g.mean_b, self.min_trials, self.margin)
        ready = (g.n_a >= self.min_trials) & (g.n_b > 0)
        why = np.where(g.n_a >= self.min_trials, C.WHY_NO_BASELINE, C.WHY_MIN_TRIALS)
        why = np.where(ready, C.WHY_INSUFFICIENT_EVIDENCE, why).astype(object)
        why[code == C.OUTCOME_PROMOTE] = C.WHY_PROMOTE_EVIDENCE
        why[code == C.OUTCOME_EVICT_HARMFUL] = C.WHY_HARM_EVIDENCE
        lift = np.where((g.n_a > 0) & (g.n_b > 0), g.mean_a - g.mean_b, np.nan)
        frame = pl.DataFrame(
            {
                "fact_id": ids,
                "decision": _DECISIONS[code].tolist(),
                "reason": _REASONS[code].tolist(),
                "why": why.tolist(),
                "trials": g.n_a,
                "estimate": lift,
                "baseline_runs": g.n_b,
            },
            schema=_SCHEMA,
            nan_to_null=True,
        )
        settings = {"min_trials": self.min_trials, "margin": self.margin}
        return GateReport("margin_lift", frame, settings)
