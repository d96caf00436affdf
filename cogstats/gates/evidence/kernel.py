"""The evidence gate compiled, on the Welch statistics of the run loop's sums.

Methods lift and welch; sequential fixed or group (the boundaries by trial count are the
gate's table); multiplicity none, or Bonferroni when fixed (:func:`support` says what is
covered).  The rule is written once, in :mod:`cogstats.gates.evidence.rule`: this piece
compiles it; its own are the statistics from the sums and the fixed test's t tail
(:mod:`cogstats.kernel.tdist`, where the batch gate reads the estimator's interval).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from cogstats.gates._options import choice_code, rule_options
from cogstats.gates.evidence import rule
from cogstats.gates.evidence.gate import EvidenceGate
from cogstats.kernel import (
    PRUNE_MARGIN,
    KernelGate,
    apply_decision,
    compile_rule,
    judged,
    t_cdf,
    tail_bound,
    welch_moments,
)

__all__ = ["PIECE", "step", "support"]

GROUP = choice_code(EvidenceGate, "sequential", "group")
BONFERRONI = choice_code(EvidenceGate, "multiplicity", "bonferroni")

evidence_outcome = compile_rule(rule.evidence_outcome)
group_sides = compile_rule(rule.group_sides)
side_alpha = compile_rule(rule.side_alpha)


def options(gate: Any) -> Any:
    """Return the gate's options record, with the Welch estimator's noise floor (0: lift)."""
    floor = 0.0
    if gate.method == "welch":
        floor = float(dict(gate.options).get("noise_floor_sd", 0.1))
    return rule_options(gate, noise_floor_sd=floor)


def support(gate: Any, s: Any) -> str | None:
    """Why the compiled evidence gate does not cover these settings, or None."""
    opts = dict(gate.options)
    problems = []
    if gate.method not in ("lift", "welch"):
        problems.append(f"method {gate.method!r} (compiled: lift, welch)")
    if set(opts) - {"noise_floor_sd", "promote_margin", "evict_margin"}:
        problems.append(f"options {sorted(opts)}")
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


def table(gate: Any) -> np.ndarray:
    """Return the group-sequential z boundary by trial count (infinite: no look there)."""
    if gate.sequential != "group":
        return np.zeros(1)
    out = np.full(int(gate.max_trials) + 1, np.inf)
    for n, b in gate.boundaries().items():
        out[n] = b
    return out


@njit(inline="always")
def _sides(sums: Any, bounds: np.ndarray, o: Any, j: int, alpha: float) -> tuple[bool, bool]:
    """Whether promotion and harm are shown for lesson ``j`` (it has two runs a side).

    ``sums`` is the state's (trials, score sums, sums of squares, totals), ``bounds`` its
    table (the group-sequential boundary by trials).
    """
    n_with, s_with, ss_with, tot = sums
    n = n_with[j]
    pm, em = o.promote_margin, o.evict_margin
    est, se, df = welch_moments(
        n, s_with[j], ss_with[j], int(tot[0]), tot[1], tot[2], o.noise_floor_sd**2
    )
    if o.sequential == GROUP:
        return group_sides(est, se, bounds[min(n, o.max_trials)], pm, em)
    if se == 0.0:
        return est > pm, est < -em
    # the t tail; the normal tail bounds it from below (see cogstats.kernel.tail_bound)
    z_up = (est - pm) / se
    z_dn = (-em - est) / se
    up = tail_bound(-z_up) < alpha + PRUNE_MARGIN and (1.0 - t_cdf(z_up, df) < alpha)
    down = tail_bound(-z_dn) < alpha + PRUNE_MARGIN and (1.0 - t_cdf(z_dn, df) < alpha)
    return up, down


@njit
def step(st: Any, o: Any, run: int) -> None:
    """One look of the gate; ``st.table`` holds the group-sequential boundary by trials."""
    status, recheck, by_age, n_with, tot = st.status, st.recheck, st.by_age, st.n_with, st.tot
    sums = (n_with, st.s_with, st.ss_with, tot)
    bounds, dec = st.table, st.decided
    tot_n = int(tot[0])
    looked = st.gibuf[0]
    n_judged = 0
    m = 0
    for jj in range(status.shape[0]):
        j = by_age[jj]
        if judged(status, recheck, j):
            looked[n_judged] = j
            n_judged += 1
            if n_with[j] >= o.min_trials and n_with[j] < tot_n:
                m += 1
    alpha = side_alpha(o.alpha, m, o.multiplicity == BONFERRONI)
    for ii in range(n_judged):
        j = looked[ii]
        n = n_with[j]
        nb = tot_n - n
        up = False
        down = False
        if n >= o.min_trials and nb >= 2 and n >= 2:
            up, down = _sides(sums, bounds, o, j, alpha)
        d = evidence_outcome(n, nb, up, down, o.min_trials, o.max_trials, o.max_baseline_runs)
        apply_decision(dec, d, j, run)


#: the piece as the simulator runs it (named by the gate's registry entry)
PIECE = KernelGate(step, options, support, table=table)
