"""The recommended (lifecycle) gate compiled: its statistics and rule on the run loop's sums.

The same statistics and rule as :meth:`LifecycleGate.decide
<cogstats.gates.LifecycleGate.decide>`: the debiased ridge
(:func:`cogstats.estimators.debiased_ridge.ridge_fit`, its passes, the noise pooled over
the ledger) on the run loop's Gram matrix of [1, covariates, lessons] (a covariate constant
so far left out, as ``covariate_design`` leaves it out), the crater test, tier 2's level
at each lesson's look (the gate's ``nominal_levels``, its table) and the rule, one lesson
at a time.  Written once and compiled here: the estimator's per-lesson inference, passes,
identifiability check and duplicate groups (:mod:`cogstats.estimators.debiased_ridge`) and
the rule (:mod:`cogstats.gates.recommended.rule`).  This piece's own are the loops over
lessons, the ridge solve in the estimator's order of operations (:func:`ridge_solve`) and
the special functions (:mod:`cogstats.kernel.tdist`; scipy's in the gate: the two agree to
about 1e-13, tests/unit/test_kernel_lifecycle.py), evaluated only where the rule reads them.

Outcomes are applied through :data:`cogstats._codes.OUTCOME_SIM_STATUS` and every status
change is written to the run loop's event buffer (``st.events``: replicate, run, lesson,
from status, to status, outcome code, why code, the why code an index into
:data:`~cogstats.gates.recommended.rule.LIFECYCLE_WHY`).
"""

from __future__ import annotations

import math
from collections import namedtuple
from typing import Any

import numpy as np
from numba import njit

from cogstats import _codes as C
from cogstats._codes import STATUS_ADMITTED, STATUS_CANDIDATE, STATUS_SUSPENDED, STATUS_VERIFIED
from cogstats.estimators import debiased_ridge as ridge
from cogstats.gates._options import rule_options
from cogstats.gates.recommended import rule as LR
from cogstats.kernel import KernelGate, compile_rule, gauss_jordan_into, t_cdf, t_ppf

__all__ = ["EVIDENCE_ROWS", "PIECE", "PROXY", "Judged", "judge", "ridge_solve", "step", "support"]

#: the covariate the compiled gate knows (the scenario's difficulty proxy)
PROXY = "difficulty_proxy"


def support(gate: Any, s: Any) -> str | None:
    """Return why the kernel cannot run this gate, or None when it can.

    The kernel adjusts for the difficulty proxy only (the reference engine's ledger also
    holds the true difficulty, the run index and the family: a gate asking for them runs
    there).
    """
    others = [c for c in gate.covariates if c != PROXY]
    if others:
        return (
            f"the compiled engine's recommended gate adjusts for {PROXY!r} only; covariates "
            f"{others} run in the reference engine"
        )
    return None


def table(gate: Any) -> np.ndarray:
    """Tier 2's one-sided level by planned look (0 at look 0)."""
    return np.ascontiguousarray(gate.nominal_levels(), dtype=np.float64)


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
_MH = 9

#: what :func:`judge` writes per lesson column: outcome codes, why codes, the evidence
#: (:data:`EVIDENCE_ROWS` x lessons) and whether each lesson is identifiable
Judged = namedtuple("Judged", ["out", "why", "x", "ident"])
#: the ridge solve's scratch: the penalized Gram matrix, the elimination's augmented
#: matrix, the inverse, the coefficients and the Gram matrix times them
_Work = namedtuple("_Work", ["a", "aug", "m", "b", "gb"])

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
#: the rule, written once in :mod:`cogstats.gates.recommended.rule`, compiled (inlined)
rule_evidence = compile_rule(LR.rule_evidence)
lifecycle_bounds = compile_rule(LR.lifecycle_bounds)
lifecycle_outcome = compile_rule(LR.lifecycle_outcome)
crater_t = compile_rule(LR.crater_t)
lifecycle_look = compile_rule(LR.lifecycle_look)
Evidence = LR.Evidence


@njit
def ridge_solve(
    gram: np.ndarray, zty: np.ndarray, yty: float, f: int, pen: np.ndarray, w: Any
) -> tuple[bool, float, float]:
    """Solve one pass of the debiased ridge: ``(ok, RSS, trace of the hat matrix)``.

    The ridge inverse into ``w.m`` and the coefficients into ``w.b`` (``w.gb`` = G b), the
    operations of ``debiased_ridge._one_pass`` in its order (elementwise, sequential
    sums); ``ok`` False when singular.
    """
    p = gram.shape[0]
    a, m, b, gb = w.a, w.m, w.b, w.gb
    for i in range(p):
        for c in range(p):
            a[i, c] = gram[i, c]
    for i in range(f, p):
        a[i, i] = a[i, i] + pen[i - f]
    if not gauss_jordan_into(a, p, w.aug, m):
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


@njit
def _pass(
    gram: np.ndarray, zty: np.ndarray, yty: float, runs: int, f: int, pen: np.ndarray, w: Any
) -> Any:
    """One pass of ``debiased_ridge._one_pass``, the same operations in the same order.

    The solve is :func:`ridge_solve`, each lesson's inference the estimator's own
    :func:`~cogstats.estimators.debiased_ridge.lesson_inference` (no noise prior).  Returns
    ``(ok, x)``: each lesson's t, df, info, estimate, se and sigma (6 x lessons, NaN where
    undefined), ``ok`` False when singular (every row NaN).
    """
    p = gram.shape[0]
    x = np.full((6, p - f), math.nan)
    ok, rss, trace = ridge_solve(gram, zty, yty, f, pen, w)
    if not ok:
        return False, x
    m, b = w.m, w.b
    for i in range(f, p):
        mkb = 0.0
        mkm = 0.0
        for c in range(f, p):  # (M K b)_i and (M K M)_ii, sequential sums in order
            mkb += m[i, c] * (pen[c - f] * b[c])
            mkm += (m[i, c] * m[i, c]) * pen[c - f]
        est, se, t, info, df, s2 = lesson_inference(
            b[i], m[i, i], pen[i - f], mkb, mkm, rss, trace, runs, 0.0, 0.0
        )
        x[_T, i - f] = t
        x[_DF, i - f] = df
        x[_INFO, i - f] = info
        x[_EST, i - f] = est
        x[_SE, i - f] = se
        x[_SIGMA, i - f] = math.sqrt(s2)
    return True, x


@njit
def _reduced(gram: np.ndarray, zty: np.ndarray, f: int, runs: int) -> Any:
    """Return the statistics with each group of lessons sharing a pattern as one column.

    ``rep[i]`` is lesson column ``i``'s group's first column (the estimator's own
    :func:`~cogstats.estimators.debiased_ridge.duplicate_groups`), ``pos`` a group's column
    in the reduced statistics, ``size`` its lessons.
    """
    n = gram.shape[0] - f
    rep = duplicate_groups(gram, f, runs)
    pos = np.zeros(n, dtype=np.int64)
    size = np.zeros(n, dtype=np.int64)
    nr = 0
    for i in range(n):
        if rep[i] == i:
            pos[i] = nr
            nr += 1
        size[rep[i]] += 1
    sel = np.empty(f + nr, dtype=np.int64)
    for c in range(f):
        sel[c] = c
    for i in range(n):
        if rep[i] == i:
            sel[f + pos[i]] = f + i
    gr = np.empty((f + nr, f + nr))
    zr = np.empty(f + nr)
    for r in range(f + nr):
        zr[r] = zty[sel[r]]
        for c in range(f + nr):
            gr[r, c] = gram[sel[r], sel[c]]
    return rep, pos, size, gr, zr


@njit
def _fit(o: Any, gr: np.ndarray, zr: np.ndarray, yty: float, runs: int, f: int) -> Any:
    """Run the ridge's passes on the reduced columns: (6 x columns evidence, identifiable).

    Between passes the penalties are the estimator's own
    :func:`~cogstats.estimators.debiased_ridge.suspect_penalties`; as ``ridge_fit`` holds
    it, a column is identifiable unless it is in every run or in none, has an estimate
    only when identifiable, and a se and t only where both are usable.
    """
    pr = gr.shape[0]
    nr = pr - f
    ir = np.logical_not(not_identifiable(gr, f, runs))
    pen = np.full(nr, o.penalty)
    nxt = np.empty(nr)
    w = _Work(
        np.empty((pr, pr)), np.empty((pr, 2 * pr)), np.empty((pr, pr)), np.empty(pr), np.empty(pr)
    )
    xr = np.full((6, nr), math.nan)
    for step in range(o.passes):
        ok, xr = _pass(gr, zr, yty, runs, f, pen, w)
        if not ok or step == o.passes - 1:
            break
        same = True
        for i in range(nr):
            nxt[i] = suspect_penalties(
                ir[i],
                xr[_T, i],
                xr[_INFO, i],
                gr[f + i, f + i],
                o.suspect_z,
                o.min_share,
                o.penalty,
                o.max_information,
            )
            if nxt[i] != pen[i]:
                same = False
        if same:
            break
        pen[:] = nxt
    for i in range(nr):
        if not ir[i]:
            xr[_EST, i] = math.nan
        if not (ir[i] and math.isfinite(xr[_SE, i]) and xr[_SE, i] > 0.0):
            xr[_SE, i] = math.nan
            xr[_T, i] = math.nan
    return xr, ir


@njit
def judge(
    o: Any,
    levels: np.ndarray,
    gram: np.ndarray,
    zty: np.ndarray,
    yty: float,
    runs: int,
    f: int,
    with_ss: np.ndarray,
    status: np.ndarray,
    res: Any,
) -> None:
    """Judge every lesson column of the statistics: outcome and why codes, the evidence.

    ``gram`` (``p x p``, ``f`` fixed columns first), ``zty``, ``yty`` and ``runs`` are the
    ridge's statistics (``RidgeStatistics``), ``with_ss`` the lessons' sums of squared
    scores (``LifecycleStatistics.with_ss``), ``status`` their ``cogstats._codes.STATUS_*``
    codes, ``levels`` tier 2's levels by look.  Writes ``res`` (a :data:`Judged`): outcome
    codes (``cogstats._codes.OUTCOME_CODES``), why codes (indices into
    ``LIFECYCLE_WHY``), the evidence (:data:`EVIDENCE_ROWS` x lessons) and whether each
    lesson is identifiable, as :meth:`LifecycleGate.decide` computes them.
    """
    x, ident = res.x, res.ident
    n = gram.shape[0] - f
    x[:, :n] = math.nan
    rep, pos, size, gr, zr = _reduced(gram, zty, f, runs)
    xr, ir = _fit(o, gr, zr, yty, runs, f)
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
    # without (rule.crater_t), its t tail on runs - 2 degrees of freedom
    cdf = float(runs) - 2.0
    top = levels.shape[0] - 1
    for i in range(n):
        ct = crater_t(gram[f + i, f + i], runs, zty[f + i], zty[0], with_ss[i], yty)
        if math.isfinite(ct):
            x[_CT, i] = ct
            x[_CP, i] = t_cdf(ct, cdf)
        # tier 2's level at the lesson's look (LifecycleGate.levels_at; levels[0] is 0)
        x[_LEVEL, i] = levels[int(lifecycle_look(x[_INFO, i], o.max_information, top))]
    outs, whys = res.out, res.why
    for i in range(n):
        out, why = rule(o, x, i, gram[f + i, f + i], ident[i], status[i])
        outs[i] = out
        whys[i] = why


@njit
def rule(o: Any, x: np.ndarray, i: int, trials_f: float, ident: bool, status: int) -> Any:
    """Return (outcome code, why code) of lesson ``i``: the lifecycle rule, compiled.

    The functions of :mod:`cogstats.gates.recommended.rule` on lesson ``i``'s statistics
    (``x``'s rows): :func:`~cogstats.gates.recommended.rule.rule_evidence`, the t tails
    and quantiles (:mod:`cogstats.kernel.tdist`, evaluated only where the rule reads
    them), :func:`~cogstats.gates.recommended.rule.lifecycle_bounds` and
    :func:`~cogstats.gates.recommended.rule.lifecycle_outcome`.  Also writes the rule's
    statistics into ``x``'s rows (margin statistics, bounds, p-values, the two one-sided
    bounds).
    """
    t = x[_T, i]
    _, dfq, finite, tier1 = rule_evidence(t, x[_DF, i], x[_SE, i], x[_INFO, i], o)
    # the special functions, where the rule reads them (scipy's on every lesson in the gate)
    q_margin = t_ppf(1.0 - o.margin_level, dfq) if tier1 else math.nan
    q_admit = q_futility = p_up = p_down = math.nan
    if finite:
        p_up = t_cdf(-t, dfq)
        p_down = t_cdf(t, dfq)
        q_admit = t_ppf(1.0 - o.admit_level, dfq)
        q_futility = t_ppf(1.0 - o.futility_level, dfq)
    bounds = lifecycle_bounds(
        finite,
        tier1,
        x[_EST, i],
        x[_SE, i],
        x[_SIGMA, i],
        o.margin,
        q_margin,
        q_admit,
        q_futility,
        p_up,
        p_down,
    )
    m_harm, m_prom, m_bound, p_prom, p_evict, ci_low, ci_high = bounds
    x[_MH, i] = m_harm
    x[_MH + 1, i] = m_prom
    x[_MH + 2, i] = m_bound
    x[_MH + 3, i] = p_prom
    x[_MH + 4, i] = p_evict
    x[_MH + 5, i] = ci_low
    x[_MH + 6, i] = ci_high
    ev = Evidence(
        status,
        int(trials_f + 0.5),
        ident,
        finite,
        t,
        x[_INFO, i],
        x[_CP, i],
        x[_LEVEL, i],
        m_harm,
        m_prom,
        m_bound,
        p_prom,
        p_evict,
        ci_low,
        ci_high,
    )
    return lifecycle_outcome(ev, o)


@njit
def _columns(st: Any) -> Any:
    """Return the lessons tried so far, in order of first trial (as a ledger lists them).

    Returns the lesson indices and the Gram matrix and ``Z'y`` of ``[1, covariates,
    those lessons]``, a covariate whose range so far is one value left out; ``f`` fixed
    columns.
    """
    n_with, first_trial, nfix = st.n_with, st.first_trial, st.nfix
    cov_range, gram_full, zty_full = st.cov_range, st.gram, st.zty
    n_les = n_with.shape[0]
    act = st.gibuf[0]
    m = 0
    for j in range(n_les):
        if n_with[j] > 0:
            act[m] = j
            m += 1
    keys = np.empty(m, dtype=np.int64)
    for i in range(m):
        keys[i] = first_trial[act[i]] * (n_les + 1) + act[i]
    order = np.argsort(keys, kind="mergesort")
    cols = np.empty(m, dtype=np.int64)
    for i in range(m):
        cols[i] = act[order[i]]
    fixed = np.empty(nfix, dtype=np.int64)
    f = 1
    fixed[0] = 0
    for c in range(nfix - 1):
        if cov_range[1, c] > cov_range[0, c]:
            fixed[f] = 1 + c
            f += 1
    p = f + m
    gram = np.empty((p, p))
    zty = np.empty(p)
    for r in range(p):
        rr = fixed[r] if r < f else nfix + cols[r - f]
        zty[r] = zty_full[rr]
        for c in range(p):
            cc = fixed[c] if c < f else nfix + cols[c - f]
            gram[r, c] = gram_full[rr, cc]
    return cols, gram, zty, f


@njit
def step(st: Any, o: Any, run: int) -> None:
    """Run the gate on the running statistics; apply its outcomes; log the events.

    Judged: candidates, admitted and suspended lessons (verified ones too with
    ``st.recheck``), as the reference engine judges them.  Each change of status is
    written to ``st.events`` (row ``st.n_events[0]``, while there is room; the count goes
    on, so that the caller sees an overflow).
    """
    cols, gram, zty, f = _columns(st)
    m = cols.shape[0]
    if m == 0:
        return
    ss_with, status, gate_t, tot = st.ss_with, st.status, st.gate_t, st.tot
    wss = np.empty(m)
    codes = np.empty(m, dtype=np.int64)
    for i in range(m):
        wss[i] = ss_with[cols[i]]
        codes[i] = status[cols[i]]
    res = Judged(
        np.empty(m, dtype=np.int64),
        np.empty(m, dtype=np.int64),
        np.empty((len(EVIDENCE_ROWS), m)),
        np.empty(m, dtype=np.bool_),
    )
    judge(o, st.table, gram, zty, tot[2], int(tot[0]), f, wss, codes, res)
    pos = np.full(status.shape[0], -1, dtype=np.int64)
    x, ident = res.x, res.ident
    for i in range(m):
        pos[cols[i]] = i
        # the re-test order's evidence: the lesson's t (its group's, for a lesson that
        # shares its pattern), or without one the crater t of the runs it was in
        t = x[_T, i]
        gate_t[0, cols[i]] = t if math.isfinite(t) else x[_CT, i]
        gate_t[1, cols[i]] = 1.0 if ident[i] else 0.0
    _apply(st, run, pos, res)


@njit
def _apply(st: Any, run: int, pos: np.ndarray, res: Any) -> None:
    """Apply each judged lesson's outcome (oldest first) and write its status event."""
    status, since, by_age, recheck, rep = st.status, st.since, st.by_age, st.recheck, st.rep
    dec = st.decided
    promote_run, evict_run, evict_reason = dec.promote_run, dec.evict_run, dec.evict_reason
    retire_run, events, n_events = st.retire_run, st.events, st.n_events
    out, why = res.out, res.why
    cap = events.shape[0]
    for jj in range(status.shape[0]):
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


#: the piece as the simulator runs it (named by the gate's registry entry): the covariate
#: support (the difficulty proxy only), the Gram matrix read, tier 2's levels as its
#: table, and status events written
PIECE = KernelGate(step, rule_options, support, gram=True, table=table, events=True)
