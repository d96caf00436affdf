"""cycgraph's gate compiled: its rule run lesson by lesson on the run loop's sums.

The rule is written once, in :mod:`cogstats.gates.cycgraph.rule` (with
:func:`cogstats.numerics.welch_evidence` and Benjamini-Hochberg's
:func:`~cogstats.estimators.multiplicity.bh_step_up`): this piece compiles those functions.
Its own are the statistics from the sums, the t tail (:mod:`cogstats.kernel.tdist`, a
side that cannot reach its level not computed) and applying the outcomes.  Options come as
the gate's record (:func:`cogstats.gates.rule_options`).
"""

from __future__ import annotations

from typing import Any

from numba import njit

from cogstats.estimators.multiplicity import bh_step_up
from cogstats.gates._options import choice_code, rule_options
from cogstats.gates.cycgraph import rule
from cogstats.gates.cycgraph.gate import CycgraphGate
from cogstats.kernel import (
    PRUNE_MARGIN,
    KernelGate,
    apply_decision,
    compile_rule,
    judged,
    t_cdf,
    tail_bound,
    welch_evidence,
)

__all__ = ["PIECE", "step"]

MARGIN = choice_code(CycgraphGate, "decision_rule", "margin")
BH = choice_code(CycgraphGate, "multiple_comparison", "bh")
DOUBLING = choice_code(CycgraphGate, "sequential_control", "doubling")

is_tested = compile_rule(rule.is_tested)
margin_outcome = compile_rule(rule.margin_outcome)
inference_outcome = compile_rule(rule.inference_outcome)
spending_factor = compile_rule(rule.spending_factor)
spent_pvalue = compile_rule(rule.spent_pvalue)
#: Benjamini-Hochberg's step-up rule compiled (the one copy: inclusive
#: ``p_(k) <= (k / m) * q``, stable order)
bh_reject = compile_rule(bh_step_up, inline=False)


@njit(inline="always")
def _side_p(lift: float, se: float, df: float, margin: float, bound: float, factor: float) -> float:
    """One side's p-value before spending: ``P(T >= (margin - lift) / se)`` as 1 - cdf.

    A side whose p-value cannot reach its level ``bound`` is not computed (1.0): the t
    tail is at least the normal tail (t is a scale mixture of normals), so when the normal
    bound times the spending factor exceeds it the side is not rejected (and a p-value
    above ``q`` changes no Benjamini-Hochberg decision).
    """
    t = (margin - lift) / se
    if tail_bound(t) * factor > bound + PRUNE_MARGIN:
        return 1.0
    return 1.0 - (1.0 - t_cdf(t, df))


@njit(inline="always")
def _pvalues(
    n_with: Any, s_with: Any, ss_with: Any, tot: Any, o: Any, j: int, floor_var: float
) -> tuple[float, float, float]:
    """Lesson ``j``'s spent p-values of promotion and harm, and its spending factor.

    ``n_with``, ``s_with``, ``ss_with`` and ``tot`` are the state's sums (trials, score
    sums, sums of squares, totals).
    """
    n = n_with[j]
    nb = int(tot[0]) - n
    s = s_with[j]
    ss = ss_with[j]
    mean_a = s / n
    sb = tot[1] - s
    mean_b = sb / nb
    var_a = max((ss - s * mean_a) / (n - 1), 0.0)
    var_b = max(((tot[2] - ss) - sb * mean_b) / (nb - 1), 0.0)
    lift, se, df, _, _ = welch_evidence(n, nb, mean_a, mean_b, var_a, var_b, floor_var)
    factor = spending_factor(nb, o.sequential_control == DOUBLING)
    pm, em = o.promote_margin, o.evict_margin
    if se == 0.0:
        promote_p = 0.0 if lift > pm else 1.0
        evict_p = 1.0 if lift > -em else 0.0
    else:
        promote_p = _side_p(lift, se, df, pm, 1.0 - o.promote_confidence, factor)
        # harm: P(lift < -em) as 1 - P(T >= ...), the mirror image
        t_dn = (-em - lift) / se
        if tail_bound(-t_dn) * factor > 1.0 - o.evict_confidence + PRUNE_MARGIN:
            evict_p = 1.0
        else:
            evict_p = 1.0 - (1.0 - (1.0 - t_cdf(t_dn, df)))
    return spent_pvalue(promote_p, factor), spent_pvalue(evict_p, factor), factor


@njit
def step(st: Any, o: Any, run: int) -> None:
    """One look of the gate (the margin or the inference rule, by the options record)."""
    status, recheck, by_age, n_with, tot = st.status, st.recheck, st.by_age, st.n_with, st.tot
    s_with, ss_with, dec = st.s_with, st.ss_with, st.decided
    # 2-D scratch indexed in place: a row view costs a reference count, every look
    gibuf, gfbuf = st.gibuf, st.gfbuf
    q_prom = 1.0 - o.promote_confidence
    q_evic = 1.0 - o.evict_confidence
    tot_n = int(tot[0])
    n_judged = 0
    n_tested = 0
    for jj in range(status.shape[0]):
        j = by_age[jj]
        if judged(status, recheck, j):
            gibuf[0, n_judged] = j
            n_judged += 1
    for ii in range(n_judged):
        j = gibuf[0, ii]
        n = n_with[j]
        nb = tot_n - n
        if o.decision_rule == MARGIN:
            lift = 0.0
            if n > 0 and nb > 0:
                lift = s_with[j] / n - (tot[1] - s_with[j]) / nb
            gibuf[2, j] = margin_outcome(
                n, nb, lift, o.min_trials, o.max_trials, o.promote_margin, o.evict_margin
            )
        elif not is_tested(n, nb, o.min_trials):
            gibuf[2, j] = inference_outcome(
                n, nb, False, False, o.min_trials, o.max_trials, o.max_baseline_runs
            )
        else:
            pp, pe, _ = _pvalues(n_with, s_with, ss_with, tot, o, j, o.noise_floor_sd**2)
            gfbuf[0, n_tested] = pp
            gfbuf[1, n_tested] = pe
            gibuf[1, n_tested] = j
            n_tested += 1
    if n_tested > 0:
        bh = o.multiple_comparison == BH and n_tested > 1
        if bh:
            up = bh_reject(gfbuf[0, :n_tested], q_prom)
            down = bh_reject(gfbuf[1, :n_tested], q_evic)
        for i in range(n_tested):
            j = gibuf[1, i]
            if bh:
                up_i, down_i = up[i], down[i]
            else:  # BH with one hypothesis is the plain comparison p <= q
                up_i, down_i = gfbuf[0, i] <= q_prom, gfbuf[1, i] <= q_evic
            n = n_with[j]
            gibuf[2, j] = inference_outcome(
                n, tot_n - n, up_i, down_i, o.min_trials, o.max_trials, o.max_baseline_runs
            )
    for ii in range(n_judged):
        j = gibuf[0, ii]
        apply_decision(dec, gibuf[2, j], j, run)


#: the piece as the simulator runs it (named by the gate's registry entry)
PIECE = KernelGate(step, rule_options)
