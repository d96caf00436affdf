"""cycgraph's rules, written once: plain functions of numbers or numpy arrays.

The margin rule (:func:`margin_outcome`) and the inference rule (:func:`is_tested`, the
doubling spending :func:`spending_factor` and :func:`spent_pvalue`, then
:func:`inference_outcome` from the two rejections), elementwise and without a Python loop
over lessons: :class:`~cogstats.gates.CycgraphGate` and ``StreamingGate`` call them on
arrays of candidates, and the gate's compiled piece (:mod:`cogstats.gates.cycgraph.kernel`)
compiles the very same functions with numba and calls them lesson by lesson.  Outcome
codes are :data:`cogstats._codes.OUTCOME_CODES`.  No numba here.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cogstats import _codes as C
from cogstats.numerics import floor_log2, where

__all__ = [
    "inference_outcome",
    "is_tested",
    "margin_outcome",
    "spending_factor",
    "spent_pvalue",
]


def is_tested(n: Any, n_b: Any, min_trials: int) -> Any:
    """Return whether the inference rule tests a lesson: its Welch test can run.

    ``n`` trials, at least ``min_trials`` (and one), with at least two runs on each side
    (``n``, and ``n_b`` runs without it).

    Examples
    --------
    >>> is_tested(np.array([3, 3, 1, 5]), np.array([2, 1, 9, 9]), 3).tolist()
    [True, False, False, True]
    """
    return (n >= max(min_trials, 1)) & (n >= 2) & (n_b >= 2)


def margin_outcome(
    n: Any,
    n_b: Any,
    lift: Any,
    min_trials: int,
    max_trials: int,
    promote_margin: float,
    evict_margin: float,
) -> Any:
    """Return the margin rule's outcome code per lesson (hold, promote, evict).

    A lesson with ``n >= min_trials`` trials (and at least one) and a baseline (``n_b >
    0``) is promoted when its lift reaches ``promote_margin``, evicted as harmful when
    ``-lift`` reaches ``evict_margin``; undecided at ``max_trials`` trials (0: no cap) it
    is evicted as no_lift, with or without a baseline.  Codes:
    :data:`cogstats._codes.OUTCOME_CODES` (0 hold, 1 promote, 2 evict harmful, 3 evict
    no_lift).

    Examples
    --------
    >>> margin_outcome(np.array([5, 5, 5, 1, 9]), np.array([5, 5, 5, 9, 0]),
    ...                np.array([0.06, -0.07, 0.0, 0.5, np.nan]), 3, 9, 0.05, 0.05).tolist()
    [1, 2, 0, 0, 3]
    """
    ready = n >= max(min_trials, 1)
    active = ready & (n_b > 0)
    promote = active & (lift >= promote_margin)
    harmful = active & (-lift >= evict_margin)
    out = where(promote, C.OUTCOME_PROMOTE, where(harmful, C.OUTCOME_EVICT_HARMFUL, C.OUTCOME_HOLD))
    if max_trials > 0:  # undecided at the cap, with or without a baseline
        stop = ready & (n >= max_trials) & (out == C.OUTCOME_HOLD)
        out = where(stop, C.OUTCOME_EVICT_NO_LIFT, out)
    return out


def spending_factor(n_b: Any, doubling: bool) -> Any:
    """Return cycgraph's doubling spending factor ``2**floor(log2(n_b))`` (1 without doubling).

    Examples
    --------
    >>> spending_factor(np.array([1, 2, 7, 8]), True).tolist(), float(spending_factor(9, False))
    ([1.0, 2.0, 4.0, 8.0], 1.0)
    """
    return where(doubling, 2.0 ** floor_log2(n_b), 1.0)


def spent_pvalue(p: Any, factor: Any) -> Any:
    """Return a one-sided p-value spent over the baseline bracket: ``min(1, p * factor)``.

    Examples
    --------
    >>> spent_pvalue(np.array([0.01, 0.3]), 4.0).tolist()
    [0.04, 1.0]
    """
    return np.minimum(1.0, p * factor)


def inference_outcome(
    n: Any,
    n_b: Any,
    up: Any,
    down: Any,
    min_trials: int,
    max_trials: int,
    max_baseline_runs: int,
) -> Any:
    """Return the inference rule's outcome code per lesson, from its two rejections.

    A lesson is tested with ``n >= min_trials`` trials, at least two a side (``n``,
    ``n_b``); ``up``/``down`` say whether promotion and harm were shown (its spent
    p-values against ``1 - confidence``, after Benjamini-Hochberg where the gate applies
    it): one side alone promotes or evicts as harmful, both hold.  Undecided and at a
    stopping rule (``max_trials`` trials or ``max_baseline_runs`` baseline runs; 0: none)
    it is evicted as no_lift; so is a lesson with too few runs a side at ``max_trials``.
    Codes as :func:`margin_outcome`.

    Examples
    --------
    >>> n, n_b = np.array([4, 4, 4, 4, 1]), np.array([6, 6, 6, 20, 9])
    >>> up, down = np.array([1, 0, 1, 0, 0], bool), np.array([0, 1, 1, 0, 0], bool)
    >>> inference_outcome(n, n_b, up, down, 1, 0, 20).tolist()
    [1, 2, 0, 3, 0]
    """
    ready = n >= max(min_trials, 1)
    tested = is_tested(n, n_b, min_trials)
    out = where(
        tested & up & np.logical_not(down),
        C.OUTCOME_PROMOTE,
        where(tested & down & np.logical_not(up), C.OUTCOME_EVICT_HARMFUL, C.OUTCOME_HOLD),
    )
    max_hit = (max_trials > 0) & (n >= max_trials)
    stop = max_hit | ((max_baseline_runs > 0) & (n_b >= max_baseline_runs))
    no_lift = (ready & np.logical_not(tested) & max_hit) | (
        tested & np.logical_not(up | down) & stop
    )
    return where(no_lift, C.OUTCOME_EVICT_NO_LIFT, out)
