"""The evidence gate's rule, written once: plain functions of numbers or numpy arrays.

The error per side (:func:`side_alpha`), the group-sequential sides
(:func:`group_sides`) and the outcome from the two rejections (:func:`evidence_outcome`),
elementwise: :class:`~cogstats.gates.EvidenceGate` calls them on arrays of candidates,
and the gate's compiled piece (:mod:`cogstats.gates.evidence.kernel`) compiles the very
same functions and calls them lesson by lesson.  Outcome codes are
:data:`cogstats._codes.OUTCOME_CODES`.  No numba here.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cogstats import _codes as C
from cogstats.numerics import where

__all__ = ["evidence_outcome", "group_sides", "side_alpha"]


def side_alpha(alpha: float, m: int, bonferroni: bool) -> float:
    """Return the one-sided error per side: ``alpha``, divided by ``m`` under Bonferroni.

    ``m`` is the number of lessons judged together (at least one).

    Examples
    --------
    >>> side_alpha(0.05, 4, True), side_alpha(0.05, 4, False)
    (0.0125, 0.05)
    """
    if bonferroni and m > 1:
        return alpha / m
    return alpha


def group_sides(
    est: Any, se: Any, boundary: Any, promote_margin: float, evict_margin: float
) -> tuple[Any, Any]:
    """Return whether promotion and harm are shown at a group-sequential z boundary.

    ``(est - promote_margin) / se >= boundary`` and ``(-evict_margin - est) / se >=
    boundary``; a standard error of 0 shows neither (numbers or arrays).

    Examples
    --------
    >>> up, down = group_sides(np.array([0.3, -0.3, 0.3]), np.array([0.1, 0.1, 0.0]), 2.0, 0, 0)
    >>> up.tolist(), down.tolist()
    ([True, False, False], [False, True, False])
    """
    pos = se > 0.0
    safe = where(pos, se, 1.0)
    return pos & ((est - promote_margin) / safe >= boundary), pos & (
        (-evict_margin - est) / safe >= boundary
    )


def evidence_outcome(
    n: Any,
    n_b: Any,
    up: Any,
    down: Any,
    min_trials: int,
    max_trials: int,
    max_baseline_runs: int,
) -> Any:
    """Return the evidence gate's outcome code per lesson, from its two rejections.

    ``up``/``down`` (False where a lesson is not tested): one side alone promotes or
    evicts as harmful, both hold.  A lesson left on hold with ``n >= min_trials`` trials
    (at least one) at a stopping rule (``max_trials`` trials or ``max_baseline_runs``
    baseline runs; 0: none) is evicted as no_lift.  Codes:
    :data:`cogstats._codes.OUTCOME_CODES` (0 hold, 1 promote, 2 evict harmful, 3 evict
    no_lift).

    Examples
    --------
    >>> n, n_b = np.array([5, 5, 5, 9, 2]), np.array([9, 9, 9, 9, 30])
    >>> up, down = np.array([1, 0, 1, 0, 0], bool), np.array([0, 1, 1, 0, 0], bool)
    >>> evidence_outcome(n, n_b, up, down, 3, 9, 0).tolist()
    [1, 2, 0, 3, 0]
    """
    promote = up & np.logical_not(down)
    harmful = down & np.logical_not(up)
    ready = (n > 0) & (n >= min_trials)
    stop = ((max_trials > 0) & (n >= max_trials)) | (
        (max_baseline_runs > 0) & (n_b >= max_baseline_runs)
    )
    no_lift = ready & np.logical_not(promote | harmful) & stop
    return (
        promote * C.OUTCOME_PROMOTE
        + harmful * C.OUTCOME_EVICT_HARMFUL
        + no_lift * C.OUTCOME_EVICT_NO_LIFT
    )
