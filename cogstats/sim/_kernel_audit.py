"""The audit rule (:class:`cogstats.gates.AuditGate`) in the compiled kernel.

Retire a live lesson whose win rate over at least ``min_hits`` trials is below
``min_win_rate``.  Wins are counted by the run loop at its one threshold (the common
block's ``win_threshold``, which the adapter sets to the audit's).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from cogstats._codes import STATUS_CANDIDATE, STATUS_RETIRED, STATUS_VERIFIED
from cogstats.sim._kernel_common import Block

__all__ = ["BLOCK", "audit_gate"]

#: the gate's parameters (filled by name by cogstats.sim.engine's adapter)
BLOCK = Block("audit", ints=("min_hits",), floats=("min_win_rate",))
MIN_HITS = BLOCK.i("min_hits")
MIN_WIN_RATE = BLOCK.f("min_win_rate")


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
