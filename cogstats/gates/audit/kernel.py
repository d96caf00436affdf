"""The audit compiled: retire a live lesson whose win rate is below ``min_win_rate``.

After at least ``min_hits`` trials.  Wins are counted by the run loop at one threshold,
the audit's ``win_threshold`` (:attr:`~cogstats.kernel.KernelGate.win_threshold`).
"""

from __future__ import annotations

from typing import Any

from numba import njit

from cogstats._codes import STATUS_CANDIDATE, STATUS_RETIRED, STATUS_VERIFIED
from cogstats.gates._options import rule_options
from cogstats.kernel import KernelGate

__all__ = ["PIECE", "step", "support"]


def support(gate: Any, s: Any) -> str | None:
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


@njit
def step(st: Any, o: Any, run: int) -> None:
    """One pass of the audit rule over the live lessons."""
    status, n_with, wins, retire_run = st.status, st.n_with, st.wins, st.retire_run
    for j in range(status.shape[0]):
        if status[j] == STATUS_CANDIDATE or status[j] == STATUS_VERIFIED:
            h = n_with[j]
            if h >= o.min_hits and wins[j] / h < o.min_win_rate:
                status[j] = STATUS_RETIRED
                retire_run[j] = run


#: the piece as the simulator runs it (named by the gate's registry entry)
PIECE = KernelGate(step, rule_options, support, win_threshold=lambda gate: gate.win_threshold)
