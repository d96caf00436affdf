"""cycgraph's gate (:class:`cogstats.gates.CycgraphGate`) in the compiled kernel.

The margin rule (lift against the margins) and the inference rule (one-sided Welch
p-values against the margins, optional Benjamini-Hochberg across the lessons judged
together and the doubling spending factor), both with the trials rules.  The gate's
parameters are its own block :data:`BLOCK`.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from cogstats._codes import (
    DECISION_EVICT_HARMFUL,
    DECISION_EVICT_NO_LIFT,
    DECISION_HOLD,
    DECISION_PROMOTE,
    GATE_MARGIN,
    STATUS_CANDIDATE,
    STATUS_VERIFIED,
)
from cogstats.sim._kernel_common import (
    PRUNE_MARGIN,
    Block,
    apply_decision,
    bh_reject,
    tail_bound,
    welch_moments,
)
from cogstats.sim._tdist import t_cdf

__all__ = ["BLOCK", "cycgraph_gate"]

#: the gate's parameters (filled by name by cogstats.sim.engine's adapter)
BLOCK = Block(
    "cycgraph",
    ints=("min_trials", "max_trials", "max_baseline_runs", "bh", "doubling"),
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
PROMOTE_MARGIN = BLOCK.f("promote_margin")
EVICT_MARGIN = BLOCK.f("evict_margin")
PROMOTE_CONFIDENCE = BLOCK.f("promote_confidence")
EVICT_CONFIDENCE = BLOCK.f("evict_confidence")
NOISE_FLOOR_SD = BLOCK.f("noise_floor_sd")


@njit(cache=True, inline="always")
def cycgraph_gate(
    gate: int,
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
    """One pass of the gate (``gate``: ``GATE_MARGIN`` or ``GATE_INFERENCE``).

    ``ibuf`` (3 x L int) and ``fbuf`` (2 x L float) are scratch space.
    """
    n_les = status.shape[0]
    min_trials = gi[MIN_TRIALS]
    max_trials = gi[MAX_TRIALS]
    max_base = gi[MAX_BASELINE]
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
        decision[judged[ii]] = DECISION_HOLD
    for ii in range(n_judged):
        j = judged[ii]
        n = n_with[j]
        nb = tot_n - n
        max_hit = max_trials > 0 and n >= max_trials
        if n == 0 or n < min_trials:
            continue
        if gate == GATE_MARGIN:
            if nb == 0:
                if max_hit:
                    decision[j] = DECISION_EVICT_NO_LIFT
                continue
            lift = s_with[j] / n - (tot_s - s_with[j]) / nb
            if lift >= pm:
                decision[j] = DECISION_PROMOTE
            elif -lift >= em:
                decision[j] = DECISION_EVICT_HARMFUL
            elif max_hit:
                decision[j] = DECISION_EVICT_NO_LIFT
            continue
        if n < 2 or nb < 2:
            if max_hit:
                decision[j] = DECISION_EVICT_NO_LIFT
            continue
        lift, se, df = welch_moments(n, s_with[j], ss_with[j], tot_n, tot_s, tot_ss, floor_var)
        factor = 1.0
        if gi[DOUBLING] == 1:
            k = 0
            v = nb
            while v > 1:
                v >>= 1
                k += 1
            factor = 2.0**k
        if se == 0.0:
            pp = 1.0 if lift > pm else 0.0
            pex = 1.0 if lift > -em else 0.0
            promote_p = 1.0 - pp
            evict_p = 1.0 - (1.0 - pex)
        else:
            # A side whose p-value cannot reach its level is not computed: the t tail is
            # at least the normal tail (t is a scale mixture of normals), so when the
            # normal bound times the spending factor exceeds q the side is not rejected
            # (and a p-value above q changes no Benjamini-Hochberg decision).
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
        if gi[DOUBLING] == 1:
            promote_p = min(1.0, promote_p * factor)
            evict_p = min(1.0, evict_p * factor)
        tested[n_tested] = j
        p_prom[n_tested] = promote_p
        p_evic[n_tested] = evict_p
        n_tested += 1
    if n_tested > 0:
        bh = gi[BH] == 1 and n_tested > 1
        if bh:
            up = bh_reject(p_prom[:n_tested], q_prom)
            down = bh_reject(p_evic[:n_tested], q_evic)
        for i in range(n_tested):
            j = tested[i]
            nb = tot_n - n_with[j]
            if bh:
                up_i, down_i = up[i], down[i]
            else:  # BH with one hypothesis is the plain comparison p <= q
                up_i, down_i = p_prom[i] <= q_prom, p_evic[i] <= q_evic
            if up_i and down_i:
                continue
            if up_i:
                decision[j] = DECISION_PROMOTE
            elif down_i:
                decision[j] = DECISION_EVICT_HARMFUL
            elif (max_trials > 0 and n_with[j] >= max_trials) or (max_base > 0 and nb >= max_base):
                decision[j] = DECISION_EVICT_NO_LIFT
    for ii in range(n_judged):
        j = judged[ii]
        apply_decision(decision[j], j, run, status, promote_run, evict_run, evict_reason)
