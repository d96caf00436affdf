"""The margin-lift gate (:class:`cogstats.gates.margin_lift.MarginLift`) in the compiled kernel.

The worked example of docs/gates.md: the gate's rule is written once, in its own module
(:func:`cogstats.gates.margin_lift.margin_lift_rule`); this piece is its parameter block,
how the gate's options fill it, and the rule compiled and run lesson by lesson on the run
loop's sums.  The gate names this module in its registry line; the run loop dispatches on
:data:`CODE` (derived from the block's name).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from cogstats._codes import STATUS_CANDIDATE, STATUS_VERIFIED
from cogstats.gates import margin_lift as rule
from cogstats.sim._kernel_common import Block, KernelGate, apply_decision, compile_rule

__all__ = ["BLOCK", "CODE", "PIECE", "margin_lift_gate"]

#: the gate's parameters
BLOCK = Block("margin_lift", ints=("min_trials",), floats=("margin",))
MIN_TRIALS = BLOCK.i("min_trials")
MARGIN = BLOCK.f("margin")


def _values(gate: Any) -> dict[str, float]:
    return {"min_trials": gate.min_trials, "margin": gate.margin}


#: the piece as the simulator runs it (named by the gate's registry entry)
PIECE = KernelGate(BLOCK, _values)
#: its dispatch code in the run loop (derived from the block's name)
CODE = PIECE.code

margin_lift_rule = compile_rule(rule.margin_lift_rule)


@njit(cache=True, inline="always")
def margin_lift_gate(
    gi: np.ndarray,
    gf: np.ndarray,
    recheck: bool,
    status: np.ndarray,
    n_with: np.ndarray,
    s_with: np.ndarray,
    tot_n: int,
    tot_s: float,
    run: int,
    promote_run: np.ndarray,
    evict_run: np.ndarray,
    evict_reason: np.ndarray,
) -> None:
    """One pass of the gate over the live candidates (and verified lessons with ``recheck``)."""
    for j in range(status.shape[0]):
        if status[j] == STATUS_CANDIDATE or (recheck and status[j] == STATUS_VERIFIED):
            n = n_with[j]
            nb = tot_n - n
            mean_a = s_with[j] / max(n, 1)
            mean_b = (tot_s - s_with[j]) / max(nb, 1)
            d = margin_lift_rule(n, nb, mean_a, mean_b, gi[MIN_TRIALS], gf[MARGIN])
            apply_decision(d, j, run, status, promote_run, evict_run, evict_reason)
