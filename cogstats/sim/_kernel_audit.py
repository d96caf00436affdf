"""The audit rule (:class:`cogstats.gates.AuditGate`) in the compiled kernel.

Retire a live lesson whose win rate over at least ``min_hits`` trials is below
``min_win_rate``.  Wins are counted by the run loop at its one threshold (the common
block's ``win_threshold``, which the adapter sets to the audit's).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from cogstats._codes import STATUS_CANDIDATE, STATUS_RETIRED, STATUS_VERIFIED
from cogstats.sim._kernel_common import Block, KernelGate

__all__ = ["BLOCK", "CODE", "PIECE", "audit_gate"]

#: the gate's parameters (filled by name by :data:`PIECE`)
BLOCK = Block("audit", ints=("min_hits",), floats=("min_win_rate",))
MIN_HITS = BLOCK.i("min_hits")
MIN_WIN_RATE = BLOCK.f("min_win_rate")


def _values(gate: Any) -> dict[str, float]:
    return {"min_hits": gate.min_hits, "min_win_rate": gate.min_win_rate}


def _loop(gate: Any) -> dict[str, float]:
    # the kernel counts wins at one threshold (UCB1's, when the policy is UCB1: then
    # _support has checked that the two agree)
    return {"win_threshold": gate.win_threshold}


def _support(gate: Any, s: Any) -> str | None:
    """Return why the kernel cannot run this audit gate, or None when it can.

    The kernel counts wins at one threshold, shared with UCB1's scores.
    """
    policy = s.retrieval.build()
    ucb = getattr(policy, "win_threshold", None)
    if ucb is not None and ucb != gate.win_threshold:
        return (
            f"the compiled engine counts wins at one threshold; the audit's win_threshold "
            f"({gate.win_threshold}) differs from the retrieval policy's ({ucb})"
        )
    return None


#: the piece as the simulator runs it (named by the gate's registry entry)
PIECE = KernelGate(BLOCK, _values, _support, _loop)
#: its dispatch code in the run loop (derived from the block's name)
CODE = PIECE.code


@njit(cache=True, inline="always")
def audit_gate(
    gi: np.ndarray,
    gf: np.ndarray,
    status: np.ndarray,
    n_with: np.ndarray,
    wins: np.ndarray,
    run: int,
    retire_run: np.ndarray,
) -> None:
    """One pass of the audit rule."""
    n_les = status.shape[0]
    min_hits = gi[MIN_HITS]
    rate = gf[MIN_WIN_RATE]
    for j in range(n_les):
        if status[j] == STATUS_CANDIDATE or status[j] == STATUS_VERIFIED:
            h = n_with[j]
            if h >= min_hits and wins[j] / h < rate:
                status[j] = STATUS_RETIRED
                retire_run[j] = run
