"""The lifecycle gate (:class:`cogstats.gates.LifecycleGate`, ``recommended``) compiled.

The same statistics and rule as :meth:`LifecycleGate.decide`, on the run loop's running
sums: the debiased ridge (:func:`cogstats.estimators.debiased_ridge.ridge_fit`, its
passes, the noise pooled over the ledger) on the Gram matrix of [1, covariates, lessons]
(a covariate constant so far left out, as ``covariate_design`` leaves it out), the crater
test, tier 2's level at each lesson's look (the gate's ``nominal_levels``, computed in
Python and passed in) and the rule, one lesson at a time.  The rule and the crater test
are written once, in :mod:`cogstats.gates.lifecycle_rule` (``rule_evidence``,
``lifecycle_bounds``, ``lifecycle_outcome``, ``crater_t``, ``lifecycle_look``), and
compiled here as they are; this piece's own are the loops over lessons and the special
functions: the t CDF and quantiles are :mod:`cogstats.sim._tdist` (scipy's in
production: the two agree to about 1e-13, tests/unit/test_kernel_lifecycle.py),
evaluated only where the rule reads them.

Outcomes are applied through :data:`cogstats._codes.OUTCOME_SIM_STATUS` (the generated
outcome -> status table, no copy here) and every status change is written to the event
buffer: (chunk replicate, run, lesson, from status, to status, outcome code, why code),
the why code an index into :data:`cogstats.gates.lifecycle_rule.LIFECYCLE_WHY`;
:mod:`cogstats.sim.engine` turns the buffer into the reference engine's status events.
The gate's parameters are its own block :data:`BLOCK`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import njit

from cogstats import _codes as C
from cogstats._codes import (
    STATUS_ADMITTED,
    STATUS_CANDIDATE,
    STATUS_SUSPENDED,
    STATUS_VERIFIED,
)
from cogstats.estimators import debiased_ridge as ridge
from cogstats.gates import lifecycle_rule as LR
from cogstats.sim._kernel_common import Block, KernelGate, compile_rule, gauss_jordan_into
from cogstats.sim._tdist import t_cdf, t_ppf

__all__ = [
    "BLOCK",
    "CODE",
    "EVIDENCE_ROWS",
    "PIECE",
    "judge",
    "lifecycle_gate",
    "rule",
]

#: the gate's parameters (filled by name by cogstats.sim.engine's adapter)
BLOCK = Block(
    "lifecycle",
    ints=("min_trials", "passes", "crater_max_trials", "release_min_trials"),
    floats=(
        "penalty",
        "suspect_z",
        "min_share",
        "max_information",
        "margin",
        "margin_level",
        "margin_min_df",
        "margin_min_information",
        "margin_max_information",
        "suspect_t",
        "release_t",
        "crater_level",
        "admit_margin",
        "admit_level",
        "futility_margin",
        "futility_level",
        "futility_min_information",
    ),
)


def _values(gate: Any) -> dict[str, float]:
    """Return the block's slots from the gate's options (same names)."""
    return {name: getattr(gate, name) for name in BLOCK.ints + BLOCK.floats}


#: the covariate the compiled gate knows (the scenario's difficulty proxy)
PROXY = "difficulty_proxy"


def support(gate: Any, s: Any) -> str | None:
    """Return why the kernel cannot run this gate, or None when it can.

    The kernel adjusts for the difficulty proxy only.
    """
    # the reference engine's ledger also holds the true difficulty, the run index and the
    # family: a gate asking for them runs there
    others = [c for c in gate.covariates if c != PROXY]
    if others:
        return (
            f"the compiled engine's recommended gate adjusts for {PROXY!r} only; covariates "
            f"{others} run in the reference engine"
        )
    return None


def _loop(gate: Any) -> dict[str, float]:
    return {"gram": 1}  # the run loop keeps the Gram matrix of [1, covariates, lessons]


#: the piece as the simulator runs it (named by the gate's registry entry): the
#: covariate support (the difficulty proxy only), and status events written
PIECE = KernelGate(BLOCK, _values, support, _loop, events=True)
#: its dispatch code in the run loop (derived from the block's name)
CODE = PIECE.code

MIN_TRIALS = BLOCK.i("min_trials")
PASSES = BLOCK.i("passes")
CRATER_MAX_TRIALS = BLOCK.i("crater_max_trials")
RELEASE_MIN_TRIALS = BLOCK.i("release_min_trials")
PENALTY = BLOCK.f("penalty")
SUSPECT_Z = BLOCK.f("suspect_z")
MIN_SHARE = BLOCK.f("min_share")
MAX_INFORMATION = BLOCK.f("max_information")
MARGIN = BLOCK.f("margin")
MARGIN_LEVEL = BLOCK.f("margin_level")
MARGIN_MIN_DF = BLOCK.f("margin_min_df")
MARGIN_MIN_INFO = BLOCK.f("margin_min_information")
MARGIN_MAX_INFO = BLOCK.f("margin_max_information")
SUSPECT_T = BLOCK.f("suspect_t")
RELEASE_T = BLOCK.f("release_t")
CRATER_LEVEL = BLOCK.f("crater_level")
ADMIT_MARGIN = BLOCK.f("admit_margin")
ADMIT_LEVEL = BLOCK.f("admit_level")
FUTILITY_MARGIN = BLOCK.f("futility_margin")
FUTILITY_LEVEL = BLOCK.f("futility_level")
FUTILITY_MIN_INFO = BLOCK.f("futility_min_information")

#: rows of :func:`judge`'s evidence array, named as ``LifecycleGate.decide``'s statistics
EVIDENCE_ROWS: tuple[str, ...] = (
    "t",
    "df",
    "info",
    "estimate",
    "se",
    "sigma",
    "crater_t",
    "crater_p",
    "level",
    "margin_harm",
    "margin_promote",
    "margin_bound",
    "p_promote",
    "p_evict",
    "ci_low",
    "ci_high",
)
_T, _DF, _INFO, _EST, _SE, _SIGMA, _CT, _CP, _LEVEL = range(9)
_MH, _MP, _MB, _PP, _PE, _CIL, _CIH = range(9, 16)

# the rule's status codes (gates/lifecycle_rule.py: RULE_CANDIDATE ... RULE_INACTIVE), by
# the simulator's status code
_RULE_STATUS = tuple(
    {
        C.STATUS_CANDIDATE: LR.RULE_CANDIDATE,
        C.STATUS_ADMITTED: LR.RULE_ADMITTED,
        C.STATUS_VERIFIED: LR.RULE_VERIFIED,
        C.STATUS_SUSPENDED: LR.RULE_SUSPENDED,
    }.get(code, LR.RULE_INACTIVE)
    for code in range(len(C.STATUS_NAMES))
)
#: per outcome code: the simulator status it leads to (-1 unchanged), generated in _codes
_TO_STATUS = C.OUTCOME_SIM_STATUS
#: per outcome code: the eviction reason code (0 for the outcomes that are not evictions)
_REASON_CODE = tuple(
    C.evict_reason_code(reason) if name == C.EVICT else 0
    for (name, reason), _ in sorted(C.OUTCOME_CODES.items(), key=lambda kv: kv[1])
)
_O_HARMFUL = C.OUTCOME_EVICT_HARMFUL
_O_NO_LIFT = C.OUTCOME_EVICT_NO_LIFT
_O_RETIRE = C.OUTCOME_RETIRE

lesson_inference = compile_rule(ridge.lesson_inference)
suspect_penalties = compile_rule(ridge.suspect_penalties)
#: the estimator's identifiability check and duplicate groups, compiled (inlined: a
#: separately compiled call returning an array cost S2 about a fifth of its time)
not_identifiable = compile_rule(ridge.not_identifiable)
duplicate_groups = compile_rule(ridge.duplicate_groups)
#: the rule, written once in :mod:`cogstats.gates.lifecycle_rule`, compiled (inlined)
rule_evidence = compile_rule(LR.rule_evidence)
lifecycle_bounds = compile_rule(LR.lifecycle_bounds)
lifecycle_outcome = compile_rule(LR.lifecycle_outcome)
crater_t = compile_rule(LR.crater_t)
lifecycle_look = compile_rule(LR.lifecycle_look)


@njit(cache=True)
def ridge_solve(
    gram: np.ndarray,
    zty: np.ndarray,
    yty: float,
    f: int,
    p: int,
    pen: np.ndarray,
    a: np.ndarray,
    aug: np.ndarray,
    m: np.ndarray,
    b: np.ndarray,
    gb: np.ndarray,
) -> tuple[bool, float, float]:
    """Solve one pass of the debiased ridge: ``(ok, RSS, trace of the hat matrix)``.

    The ridge inverse ``M`` into ``m`` and the coefficients into ``b`` (``gb`` = G b),
    the operations of ``debiased_ridge._one_pass`` in its order (elementwise, sequential
    sums); ``ok`` False when singular.
    """
    for i in range(p):
        for c in range(p):
            a[i, c] = gram[i, c]
    for i in range(f, p):
        a[i, i] = a[i, i] + pen[i - f]
    if not gauss_jordan_into(a, p, aug, m):
        return False, math.nan, math.nan
    for i in range(p):
        acc = 0.0
        for c in range(p):
            acc += m[i, c] * zty[c]
        b[i] = acc
    for i in range(p):
        acc = 0.0
        for c in range(p):
            acc += gram[i, c] * b[c]
        gb[i] = acc
    bg = 0.0
    for i in range(p):
        bg += b[i] * zty[i]
    bgb = 0.0
    for i in range(p):
        bgb += b[i] * gb[i]
    rss = yty - 2.0 * bg + bgb
    trace = 0.0
    for i in range(p):
        ri = 0.0
        for c in range(p):
            ri += m[i, c] * gram[c, i]
        trace += ri
    return True, rss, trace


@njit(cache=True)
def penalty_row(m: np.ndarray, b: np.ndarray, pen: np.ndarray, f: int, p: int, i: int) -> tuple:
    """Return ``((M K b)_i, (M K M)_ii)`` of column ``i`` (sequential sums, in order)."""
    mkb = 0.0
    mkm = 0.0
    for c in range(f, p):
        mkb += m[i, c] * (pen[c - f] * b[c])
        mkm += (m[i, c] * m[i, c]) * pen[c - f]
    return mkb, mkm


@njit(cache=True)
def _pass(
    gram: np.ndarray,
    zty: np.ndarray,
    yty: float,
    runs: int,
    f: int,
    p: int,
    pen: np.ndarray,
    a: np.ndarray,
    aug: np.ndarray,
    m: np.ndarray,
    b: np.ndarray,
    gb: np.ndarray,
    x: np.ndarray,
) -> bool:
    """One pass of ``debiased_ridge._one_pass``, the same operations in the same order.

    The solve is :func:`ridge_solve`, each lesson's inference the
    estimator's own :func:`~cogstats.estimators.debiased_ridge.lesson_inference` (no noise
    prior).  Writes each lesson's t, df, info, estimate, se and sigma into ``x``'s rows
    (NaN where undefined); False when singular (every row NaN).
    """
    for i in range(p - f):
        for r in range(6):
            x[r, i] = math.nan
    ok, rss, trace = ridge_solve(gram, zty, yty, f, p, pen, a, aug, m, b, gb)
    if not ok:
        return False
    for i in range(f, p):
        mkb, mkm = penalty_row(m, b, pen, f, p, i)
        est, se, t, info, df, s2 = lesson_inference(
            b[i], m[i, i], pen[i - f], mkb, mkm, rss, trace, runs, 0.0, 0.0
        )
        x[_T, i - f] = t
        x[_DF, i - f] = df
        x[_INFO, i - f] = info
        x[_EST, i - f] = est
        x[_SE, i - f] = se
        x[_SIGMA, i - f] = math.sqrt(s2)
    return True


@njit(cache=True)
def judge(
    gi: np.ndarray,
    gf: np.ndarray,
    levels: np.ndarray,
    gram: np.ndarray,
    zty: np.ndarray,
    yty: float,
    runs: int,
    f: int,
    with_ss: np.ndarray,
    status: np.ndarray,
    out: np.ndarray,
    why: np.ndarray,
    x: np.ndarray,
    ident: np.ndarray,
) -> None:
    """Judge every lesson column of the statistics: outcome and why codes, the evidence.

    ``gram`` (``p x p``, ``f`` fixed columns first), ``zty``, ``yty`` and ``runs`` are the
    ridge's statistics (``RidgeStatistics``), ``with_ss`` the lessons' sums of squared
    scores (``LifecycleStatistics.with_ss``), ``status`` the rule's status codes (0
    candidate, 1 admitted, 2 verified, 3 suspended, 4 inactive).  Writes ``out`` (outcome
    codes, ``cogstats._codes.OUTCOME_CODES``), ``why`` (indices into ``LIFECYCLE_WHY``),
    ``x`` (:data:`EVIDENCE_ROWS` x lessons) and ``ident`` (identifiable), as
    :meth:`LifecycleGate.decide` computes them.
    """
    p = gram.shape[0]
    n = p - f
    for i in range(n):
        for r in range(x.shape[0]):
            x[r, i] = math.nan
    # lessons that share an inclusion pattern are one column, their group's: rep[i] is the
    # group's first column (the estimator's own debiased_ridge.duplicate_groups)
    rep = duplicate_groups(gram, f, runs)
    pos = np.zeros(n, dtype=np.int64)
    size = np.zeros(n, dtype=np.int64)
    nr = 0
    for i in range(n):
        if rep[i] == i:
            pos[i] = nr
            nr += 1
        size[rep[i]] += 1
    pr = f + nr
    sel = np.empty(pr, dtype=np.int64)
    for c in range(f):
        sel[c] = c
    for i in range(n):
        if rep[i] == i:
            sel[f + pos[i]] = f + i
    gr = np.empty((pr, pr))
    zr = np.empty(pr)
    for r in range(pr):
        zr[r] = zty[sel[r]]
        for c in range(pr):
            gr[r, c] = gram[sel[r], sel[c]]
    # not identifiable in the reduced problem (in every run, or in none: no two columns
    # share a pattern there), as ridge_fit holds it (debiased_ridge.not_identifiable)
    ir = np.logical_not(not_identifiable(gr, f, runs))
    # the ridge's passes, on the reduced columns
    xr = np.empty((6, nr))
    k_pen = gf[PENALTY]
    pen = np.full(nr, k_pen)
    nxt = np.empty(nr)
    a = np.empty((pr, pr))
    aug = np.empty((pr, 2 * pr))
    mm = np.empty((pr, pr))
    b = np.empty(pr)
    gb = np.empty(pr)
    passes = gi[PASSES]
    susz = gf[SUSPECT_Z]
    share = gf[MIN_SHARE]
    ok = False
    for step in range(passes):
        ok = _pass(gr, zr, yty, runs, f, pr, pen, a, aug, mm, b, gb, xr)
        if not ok or step == passes - 1:
            break
        # the next pass's penalties (the estimator's own debiased_ridge.suspect_penalties)
        same = True
        for i in range(nr):
            nxt[i] = suspect_penalties(
                ir[i],
                xr[_T, i],
                xr[_INFO, i],
                gr[f + i, f + i],
                susz,
                share,
                k_pen,
                gf[MAX_INFORMATION],
            )
            if nxt[i] != pen[i]:
                same = False
        if same:
            break
        for i in range(nr):
            pen[i] = nxt[i]
    for i in range(nr):
        if not ok:
            for r in range(6):
                xr[r, i] = math.nan
        # ridge_fit: the estimate of an identifiable column, se and t where both are usable
        if not ir[i]:
            xr[_EST, i] = math.nan
        if not (ir[i] and math.isfinite(xr[_SE, i]) and xr[_SE, i] > 0.0):
            xr[_SE, i] = math.nan
            xr[_T, i] = math.nan
    # back to the lessons: a group's members carry its t, info, df and sigma, and no
    # estimate of their own (_grouped_fit)
    for i in range(n):
        j = pos[rep[i]]
        for r in range(6):
            x[r, i] = xr[r, j]
        alone = size[rep[i]] == 1
        ident[i] = alone and ir[j]
        if not alone:
            x[_EST, i] = math.nan
            x[_SE, i] = math.nan
    # the crater test: the pooled two-sample t of the raw scores with the lesson against
    # without (lifecycle_rule.crater_t), its t tail on runs - 2 degrees of freedom
    cdf = float(runs) - 2.0
    for i in range(n):
        ct = crater_t(gram[f + i, f + i], runs, zty[f + i], zty[0], with_ss[i], yty)
        if math.isfinite(ct):
            x[_CT, i] = ct
            x[_CP, i] = t_cdf(ct, cdf)
    # tier 2's level at each lesson's look (LifecycleGate.levels_at; levels[0] is 0)
    top = levels.shape[0] - 1
    for i in range(n):
        x[_LEVEL, i] = levels[int(lifecycle_look(x[_INFO, i], gf[MAX_INFORMATION], top))]
    for i in range(n):
        o, w = rule(gi, gf, x, i, gram[f + i, f + i], ident[i], status[i])
        out[i] = o
        why[i] = w


@njit(cache=True)
def rule(
    gi: np.ndarray,
    gf: np.ndarray,
    x: np.ndarray,
    i: int,
    trials_f: float,
    ident: bool,
    status: int,
) -> tuple[int, int]:
    """Return (outcome code, why code) of lesson ``i``: the lifecycle rule, compiled.

    The functions of :mod:`cogstats.gates.lifecycle_rule` on lesson ``i``'s statistics
    (``x``'s rows): :func:`~cogstats.gates.lifecycle_rule.rule_evidence`, the t tails and
    quantiles (:mod:`cogstats.sim._tdist`, evaluated only where the rule reads them),
    :func:`~cogstats.gates.lifecycle_rule.lifecycle_bounds` and
    :func:`~cogstats.gates.lifecycle_rule.lifecycle_outcome`.  Also writes the rule's
    statistics into ``x``'s rows (margin statistics, bounds, p-values, the two one-sided
    bounds).
    """
    t = x[_T, i]
    info = x[_INFO, i]
    _, dfq, finite, tier1 = rule_evidence(
        t, x[_DF, i], x[_SE, i], info, gf[MARGIN_MIN_DF], gf[MARGIN_MIN_INFO], gf[MARGIN_MAX_INFO]
    )
    # the special functions, where the rule reads them (scipy's on every lesson in the gate)
    q_margin = t_ppf(1.0 - gf[MARGIN_LEVEL], dfq) if tier1 else math.nan
    q_admit = q_futility = p_up = p_down = math.nan
    if finite:
        p_up = t_cdf(-t, dfq)
        p_down = t_cdf(t, dfq)
        q_admit = t_ppf(1.0 - gf[ADMIT_LEVEL], dfq)
        q_futility = t_ppf(1.0 - gf[FUTILITY_LEVEL], dfq)
    m_harm, m_prom, m_bound, p_prom, p_evict, ci_low, ci_high = lifecycle_bounds(
        finite,
        tier1,
        x[_EST, i],
        x[_SE, i],
        x[_SIGMA, i],
        gf[MARGIN],
        q_margin,
        q_admit,
        q_futility,
        p_up,
        p_down,
    )
    x[_MH, i] = m_harm
    x[_MP, i] = m_prom
    x[_MB, i] = m_bound
    x[_PP, i] = p_prom
    x[_PE, i] = p_evict
    x[_CIL, i] = ci_low
    x[_CIH, i] = ci_high
    return lifecycle_outcome(
        status,
        int(trials_f + 0.5),
        ident,
        finite,
        t,
        info,
        x[_CP, i],
        x[_LEVEL, i],
        m_harm,
        m_prom,
        m_bound,
        p_prom,
        p_evict,
        ci_low,
        ci_high,
        gi[MIN_TRIALS],
        gf[SUSPECT_T],
        gf[RELEASE_T],
        gi[RELEASE_MIN_TRIALS],
        gf[CRATER_LEVEL],
        gi[CRATER_MAX_TRIALS],
        gf[ADMIT_MARGIN],
        gf[FUTILITY_MARGIN],
        gf[FUTILITY_MIN_INFO],
    )


@njit(cache=True)
def lifecycle_gate(
    gi: np.ndarray,
    gf: np.ndarray,
    recheck: bool,
    nfix: int,
    cov_lo: np.ndarray,
    cov_hi: np.ndarray,
    levels: np.ndarray,
    status: np.ndarray,
    since: np.ndarray,
    n_with: np.ndarray,
    ss_with: np.ndarray,
    first_trial: np.ndarray,
    gram_full: np.ndarray,
    zty_full: np.ndarray,
    yty: float,
    runs: int,
    by_age: np.ndarray,
    run: int,
    rep: int,
    promote_run: np.ndarray,
    evict_run: np.ndarray,
    evict_reason: np.ndarray,
    retire_run: np.ndarray,
    events: np.ndarray,
    n_events: np.ndarray,
    ibuf: np.ndarray,
    gate_t: np.ndarray,
) -> None:
    """Run the lifecycle gate on the running statistics; apply its outcomes; log events.

    ``nfix`` leading columns of the running Gram matrix are the intercept and the
    covariates; a covariate whose range so far (``cov_lo``, ``cov_hi``) is one value is
    left out.  The lessons tried so far are the columns, in order of first trial (as a
    ledger lists them).  Judged: candidates, admitted and suspended lessons (verified
    ones too with ``recheck``), as the reference engine judges them.  Each change of
    status is written to ``events`` (row ``n_events[0]``, while there is room; the count
    goes on, so that the caller sees an overflow).
    """
    n_les = status.shape[0]
    act = ibuf[0]
    m_act = 0
    for j in range(n_les):
        if n_with[j] > 0:
            act[m_act] = j
            m_act += 1
    if m_act == 0:
        return
    keys = np.empty(m_act, dtype=np.int64)
    for i in range(m_act):
        keys[i] = first_trial[act[i]] * (n_les + 1) + act[i]
    order = np.argsort(keys, kind="mergesort")
    cols = np.empty(m_act, dtype=np.int64)
    for i in range(m_act):
        cols[i] = act[order[i]]
    fixed = np.empty(nfix, dtype=np.int64)
    f = 1
    fixed[0] = 0
    for c in range(nfix - 1):
        if cov_hi[c] > cov_lo[c]:
            fixed[f] = 1 + c
            f += 1
    p = f + m_act
    gram = np.empty((p, p))
    zty = np.empty(p)
    wss = np.empty(m_act)
    rst = np.empty(m_act, dtype=np.int64)
    for r in range(p):
        rr = fixed[r] if r < f else nfix + cols[r - f]
        zty[r] = zty_full[rr]
        for c in range(p):
            cc = fixed[c] if c < f else nfix + cols[c - f]
            gram[r, c] = gram_full[rr, cc]
    for i in range(m_act):
        wss[i] = ss_with[cols[i]]
        rst[i] = _RULE_STATUS[status[cols[i]]]
    out = np.empty(m_act, dtype=np.int64)
    why = np.empty(m_act, dtype=np.int64)
    x = np.empty((len(EVIDENCE_ROWS), m_act))
    ident = np.empty(m_act, dtype=np.bool_)
    judge(gi, gf, levels, gram, zty, yty, runs, f, wss, rst, out, why, x, ident)
    pos = np.full(n_les, -1, dtype=np.int64)
    for i in range(m_act):
        pos[cols[i]] = i
        # the re-test order's evidence: the lesson's t, or without one the crater t of
        # the group it ran with
        # the re-test order's evidence: the lesson's t (its group's, for a lesson that
        # shares its pattern), or without one the crater t of the runs it was in
        gate_t[0, cols[i]] = x[_T, i] if math.isfinite(x[_T, i]) else x[_CT, i]
        gate_t[1, cols[i]] = 1.0 if ident[i] else 0.0
    cap = events.shape[0]
    for jj in range(n_les):
        j = by_age[jj]
        old = status[j]
        if not (
            old in (STATUS_CANDIDATE, STATUS_ADMITTED, STATUS_SUSPENDED)
            or (recheck and old == STATUS_VERIFIED)
        ):
            continue
        i = pos[j]
        if i < 0:
            continue
        o = out[i]
        new = _TO_STATUS[o]
        if new < 0 or new == old:
            continue
        if o in (_O_HARMFUL, _O_NO_LIFT):
            evict_run[j] = run
            evict_reason[j] = _REASON_CODE[o]
        elif o == _O_RETIRE:
            retire_run[j] = run
        elif new == STATUS_VERIFIED and promote_run[j] == 0:
            promote_run[j] = run
        status[j] = new
        since[j] = run + 1
        k = n_events[0]
        if k < cap:
            events[k, 0] = rep
            events[k, 1] = run
            events[k, 2] = j
            events[k, 3] = old
            events[k, 4] = new
            events[k, 5] = o
            events[k, 6] = why[i]
        n_events[0] = k + 1
