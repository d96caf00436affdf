"""The evidence gate (:class:`cogstats.gates.EvidenceGate`) in the compiled kernel.

On the Welch statistics: methods lift and welch; sequential fixed or group (boundaries by
trial count); multiplicity none, or Bonferroni when fixed (what the kernel covers is
:data:`PIECE`'s ``support`` to say).  The rule is written once, in
:mod:`cogstats.gates.evidence` (:func:`evidence_outcome`, :func:`group_sides`,
:func:`side_alpha`): this piece compiles it; its own are the statistics from the run
loop's sums and the fixed test's t tail (:mod:`cogstats.sim._tdist`, where the batch gate
reads the estimator's interval).  The gate's parameters are its own block :data:`BLOCK`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from cogstats._codes import STATUS_CANDIDATE, STATUS_VERIFIED
from cogstats.gates import evidence as rule
from cogstats.sim._kernel_common import (
    PRUNE_MARGIN,
    Block,
    KernelGate,
    apply_decision,
    compile_rule,
    tail_bound,
    welch_moments,
)
from cogstats.sim._tdist import t_cdf

__all__ = ["BLOCK", "CODE", "PIECE", "evidence_gate"]

#: the gate's parameters (filled by name by :data:`PIECE`)
BLOCK = Block(
    "evidence",
    ints=("min_trials", "max_trials", "max_baseline_runs", "group", "bonferroni"),
    floats=("promote_margin", "evict_margin", "alpha", "noise_floor_sd"),
)
MIN_TRIALS = BLOCK.i("min_trials")
MAX_TRIALS = BLOCK.i("max_trials")
MAX_BASELINE = BLOCK.i("max_baseline_runs")
GROUP = BLOCK.i("group")
BONFERRONI = BLOCK.i("bonferroni")
PROMOTE_MARGIN = BLOCK.f("promote_margin")
EVICT_MARGIN = BLOCK.f("evict_margin")
ALPHA = BLOCK.f("alpha")
NOISE_FLOOR_SD = BLOCK.f("noise_floor_sd")


def _values(gate: Any) -> dict[str, float]:
    floor = 0.0
    if gate.method == "welch":
        floor = float(dict(gate.options).get("noise_floor_sd", 0.1))
    return {
        "min_trials": gate.min_trials,
        "max_trials": gate.max_trials or 0,
        "max_baseline_runs": gate.max_baseline_runs or 0,
        "promote_margin": gate.promote_margin,
        "evict_margin": gate.evict_margin,
        "group": int(gate.sequential == "group"),
        "bonferroni": int(gate.multiplicity == "bonferroni"),
        "alpha": gate.alpha,
        "noise_floor_sd": floor,
    }


def _support(gate: Any, s: Any) -> str | None:
    """Why the kernel's evidence gate does not cover these settings, or None."""
    options = dict(gate.options)
    problems = []
    if gate.method not in ("lift", "welch"):
        problems.append(f"method {gate.method!r} (compiled: lift, welch)")
    if set(options) - {"noise_floor_sd", "promote_margin", "evict_margin"}:
        problems.append(f"options {sorted(options)}")
    if gate.sequential not in ("fixed", "group"):
        problems.append(f"sequential {gate.sequential!r} (compiled: fixed, group)")
    mult = gate.multiplicity
    if not (mult == "none" or (mult == "bonferroni" and gate.sequential == "fixed")):
        problems.append(f"multiplicity {mult!r}")
    if gate.hold_unidentifiable:
        problems.append("hold_unidentifiable true (compiled: false)")
    if problems:
        return "the compiled engine's evidence gate does not cover " + "; ".join(problems)
    return None


#: the piece as the simulator runs it (named by the gate's registry entry)
PIECE = KernelGate(BLOCK, _values, _support)
#: its dispatch code in the run loop (derived from the block's name)
CODE = PIECE.code


evidence_outcome = compile_rule(rule.evidence_outcome)
group_sides = compile_rule(rule.group_sides)
side_alpha = compile_rule(rule.side_alpha)


@njit(cache=True, inline="always")
def evidence_gate(
    gi: np.ndarray,
    gf: np.ndarray,
    recheck: bool,
    bounds: np.ndarray,
    status: np.ndarray,
    n_with: np.ndarray,
    s_with: np.ndarray,
    ss_with: np.ndarray,
    tot_n: int,
    tot_s: float,
    tot_ss: float,
    by_age: np.ndarray,
    run: int,
    promote_run: np.ndarray,
    evict_run: np.ndarray,
    evict_reason: np.ndarray,
    ibuf: np.ndarray,
) -> None:
    """One pass of the gate; ``bounds`` holds the group-sequential z boundary by trials."""
    n_les = status.shape[0]
    min_trials = gi[MIN_TRIALS]
    max_trials = gi[MAX_TRIALS]
    max_base = gi[MAX_BASELINE]
    group = gi[GROUP] == 1
    pm = gf[PROMOTE_MARGIN]
    em = gf[EVICT_MARGIN]
    floor_var = gf[NOISE_FLOOR_SD] ** 2
    judged = ibuf[0]
    n_judged = 0
    m = 0
    for jj in range(n_les):
        j = by_age[jj]
        if status[j] == STATUS_CANDIDATE or (recheck and status[j] == STATUS_VERIFIED):
            judged[n_judged] = j
            n_judged += 1
            if n_with[j] >= min_trials and n_with[j] < tot_n:
                m += 1
    alpha = side_alpha(gf[ALPHA], m, gi[BONFERRONI] == 1)
    for ii in range(n_judged):
        j = judged[ii]
        n = n_with[j]
        nb = tot_n - n
        up = False
        down = False
        if n >= min_trials and nb >= 2 and n >= 2:
            est, se, df = welch_moments(n, s_with[j], ss_with[j], tot_n, tot_s, tot_ss, floor_var)
            if group:
                up, down = group_sides(est, se, bounds[min(n, max_trials)], pm, em)
            elif se == 0.0:
                up = est > pm
                down = est < -em
            else:  # the t tail; the normal tail bounds it from below (see cycgraph_gate)
                z_up = (est - pm) / se
                z_dn = (-em - est) / se
                up = tail_bound(-z_up) < alpha + PRUNE_MARGIN and (1.0 - t_cdf(z_up, df) < alpha)
                down = tail_bound(-z_dn) < alpha + PRUNE_MARGIN and (1.0 - t_cdf(z_dn, df) < alpha)
        d = evidence_outcome(n, nb, up, down, min_trials, max_trials, max_base)
        apply_decision(d, j, run, status, promote_run, evict_run, evict_reason)
