"""cycgraph's gate (:class:`cogstats.gates.CycgraphGate`) in the compiled kernel.

The rule is written once, in :mod:`cogstats.gates.cycgraph` (:func:`margin_outcome`,
:func:`inference_outcome`, :func:`spending_factor`, :func:`spent_pvalue`, with
:func:`cogstats.numerics.welch_evidence` and Benjamini-Hochberg's
:func:`~cogstats.estimators.multiplicity.bh_step_up`): this piece compiles those
functions and runs them lesson by lesson on the run loop's sums.  Its own are the
statistics from the sums, the t tail (:mod:`cogstats.sim._tdist`, with a side that
cannot reach its level not computed) and applying the outcomes.  The gate's parameters
are its own block :data:`BLOCK` (``margin_rule`` 1: the margin rule, 0: the inference
rule).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from cogstats._codes import STATUS_CANDIDATE, STATUS_VERIFIED
from cogstats.gates import cycgraph as rule
from cogstats.sim._kernel_common import (
    PRUNE_MARGIN,
    Block,
    KernelGate,
    apply_decision,
    bh_reject,
    compile_rule,
    tail_bound,
    welch_evidence,
)
from cogstats.sim._tdist import t_cdf

__all__ = ["BLOCK", "CODE", "PIECE", "cycgraph_gate"]

#: the gate's parameters (filled by name by :data:`PIECE`)
BLOCK = Block(
    "cycgraph",
    ints=("min_trials", "max_trials", "max_baseline_runs", "bh", "doubling", "margin_rule"),
    floats=(
        "promote_margin",
        "evict_margin",
        "promote_confidence",
        "evict_confidence",
        "noise_floor_sd",
    ),
)
MIN_TRIALS = BLOCK.i("min_trials")
MAX_TRIALS = BLOCK.i("max_trials")
MAX_BASELINE = BLOCK.i("max_baseline_runs")
BH = BLOCK.i("bh")
DOUBLING = BLOCK.i("doubling")
MARGIN_RULE = BLOCK.i("margin_rule")
PROMOTE_MARGIN = BLOCK.f("promote_margin")
EVICT_MARGIN = BLOCK.f("evict_margin")
PROMOTE_CONFIDENCE = BLOCK.f("promote_confidence")
EVICT_CONFIDENCE = BLOCK.f("evict_confidence")
NOISE_FLOOR_SD = BLOCK.f("noise_floor_sd")


def _values(gate: Any) -> dict[str, float]:
    return {
        "min_trials": gate.min_trials,
        "max_trials": gate.max_trials or 0,
        "max_baseline_runs": gate.max_baseline_runs or 0,
        "promote_margin": gate.promote_margin,
        "evict_margin": gate.evict_margin,
        "bh": int(gate.multiple_comparison == "bh"),
        "doubling": int(gate.sequential_control == "doubling"),
        "margin_rule": int(gate.decision_rule == "margin"),
        "promote_confidence": gate.promote_confidence,
        "evict_confidence": gate.evict_confidence,
        "noise_floor_sd": gate.noise_floor_sd,
    }


#: the piece as the simulator runs it (named by the gate's registry entry)
PIECE = KernelGate(BLOCK, _values)
#: its dispatch code in the run loop (derived from the block's name)
CODE = PIECE.code

margin_outcome = compile_rule(rule.margin_outcome)
inference_outcome = compile_rule(rule.inference_outcome)
spending_factor = compile_rule(rule.spending_factor)
spent_pvalue = compile_rule(rule.spent_pvalue)


@njit(cache=True, inline="always")
def cycgraph_gate(
    gi: np.ndarray,
    gf: np.ndarray,
    recheck: bool,
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
    fbuf: np.ndarray,
) -> None:
    """One pass of the gate (the margin or the inference rule, by the block).

    ``ibuf`` (3 x L int) and ``fbuf`` (2 x L float) are scratch space.
    """
    n_les = status.shape[0]
    min_trials = gi[MIN_TRIALS]
    max_trials = gi[MAX_TRIALS]
    max_base = gi[MAX_BASELINE]
    margin = gi[MARGIN_RULE] == 1
    doubling = gi[DOUBLING] == 1
    judged = ibuf[0]
    tested = ibuf[1]
    p_prom = fbuf[0]
    p_evic = fbuf[1]
    n_tested = 0
    floor_var = gf[NOISE_FLOOR_SD] ** 2
    pm = gf[PROMOTE_MARGIN]
    em = gf[EVICT_MARGIN]
    q_prom = 1.0 - gf[PROMOTE_CONFIDENCE]
    q_evic = 1.0 - gf[EVICT_CONFIDENCE]
    n_judged = 0
    for jj in range(n_les):
        j = by_age[jj]
        if status[j] == STATUS_CANDIDATE or (recheck and status[j] == STATUS_VERIFIED):
            judged[n_judged] = j
            n_judged += 1
    decision = ibuf[2]
    for ii in range(n_judged):
        j = judged[ii]
        n = n_with[j]
        nb = tot_n - n
        if margin:
            lift = 0.0
            if n > 0 and nb > 0:
                lift = s_with[j] / n - (tot_s - s_with[j]) / nb
            decision[j] = margin_outcome(n, nb, lift, min_trials, max_trials, pm, em)
            continue
        if not (n > 0 and n >= min_trials and n >= 2 and nb >= 2):  # not tested
            decision[j] = inference_outcome(n, nb, False, False, min_trials, max_trials, max_base)
            continue
        # the statistics from the run loop's sums, then the rule's Welch evidence
        s = s_with[j]
        ss = ss_with[j]
        mean_a = s / n
        sb = tot_s - s
        mean_b = sb / nb
        var_a = max((ss - s * mean_a) / (n - 1), 0.0)
        var_b = max(((tot_ss - ss) - sb * mean_b) / (nb - 1), 0.0)
        lift, se, df, _, _ = welch_evidence(n, nb, mean_a, mean_b, var_a, var_b, floor_var)
        factor = spending_factor(nb, doubling)
        # the t tail: cycgraph's confidences P(lift > margin) as 1 - p.  A side whose
        # p-value cannot reach its level is not computed: the t tail is at least the
        # normal tail (t is a scale mixture of normals), so when the normal bound times
        # the spending factor exceeds q the side is not rejected (and a p-value above q
        # changes no Benjamini-Hochberg decision).
        if se == 0.0:
            pp = 1.0 if lift > pm else 0.0
            pex = 1.0 if lift > -em else 0.0
            promote_p = 1.0 - pp
            evict_p = 1.0 - (1.0 - pex)
        else:
            t_up = (pm - lift) / se
            if tail_bound(t_up) * factor > q_prom + PRUNE_MARGIN:
                promote_p = 1.0
            else:
                promote_p = 1.0 - (1.0 - t_cdf(t_up, df))
            t_dn = (-em - lift) / se
            if tail_bound(-t_dn) * factor > q_evic + PRUNE_MARGIN:
                evict_p = 1.0
            else:
                pex = 1.0 - t_cdf(t_dn, df)
                evict_p = 1.0 - (1.0 - pex)
        tested[n_tested] = j
        p_prom[n_tested] = spent_pvalue(promote_p, factor)
        p_evic[n_tested] = spent_pvalue(evict_p, factor)
        n_tested += 1
    if n_tested > 0:
        bh = gi[BH] == 1 and n_tested > 1
        if bh:
            up = bh_reject(p_prom[:n_tested], q_prom)
            down = bh_reject(p_evic[:n_tested], q_evic)
        for i in range(n_tested):
            j = tested[i]
            if bh:
                up_i, down_i = up[i], down[i]
            else:  # BH with one hypothesis is the plain comparison p <= q
                up_i, down_i = p_prom[i] <= q_prom, p_evic[i] <= q_evic
            decision[j] = inference_outcome(
                n_with[j], tot_n - n_with[j], up_i, down_i, min_trials, max_trials, max_base
            )
    for ii in range(n_judged):
        j = judged[ii]
        apply_decision(decision[j], j, run, status, promote_run, evict_run, evict_reason)
