"""The recommended gate (:class:`cogstats.gates.RecommendedGate`) in the compiled kernel.

The debiased ridge of :mod:`cogstats.estimators.debiased_ridge` on the running Gram
matrix of [1, covariates, lessons] (filled by the run loop), its passes, and the t test
against the level spent at each lesson's information.  Written once and compiled here:
the inverse (:func:`cogstats.numerics.gauss_jordan_into`), each lesson's inference and the
passes' penalties (:func:`~cogstats.estimators.debiased_ridge.lesson_inference`,
:func:`~cogstats.estimators.debiased_ridge.suspect_penalties`), the identifiability check
(:func:`~cogstats.estimators.debiased_ridge.not_identifiable`) and the rule
(:func:`cogstats.gates.recommended.information_look`,
:func:`cogstats.gates.recommended.ridge_outcome`); this piece's own are the pass's matrix
products in elementwise loops (the estimator's order of operations, :func:`ridge_solve`,
shared with the lifecycle piece) and the t tail (:mod:`cogstats.sim._tdist`).  The gate's
parameters are its own block :data:`BLOCK`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import njit

from cogstats._codes import STATUS_CANDIDATE, STATUS_VERIFIED
from cogstats.estimators import debiased_ridge as ridge
from cogstats.gates import recommended as rule
from cogstats.sim._kernel_common import (
    Block,
    KernelGate,
    apply_decision,
    compile_rule,
    gauss_jordan_into,
)
from cogstats.sim._tdist import t_cdf

__all__ = [
    "BLOCK",
    "CODE",
    "PIECE",
    "PROXY",
    "penalty_row",
    "recommended_gate",
    "ridge_pass",
    "ridge_solve",
    "support",
]

#: the gate's parameters (filled by name by :data:`PIECE`)
BLOCK = Block(
    "recommended",
    ints=("min_trials", "max_trials", "passes"),
    floats=(
        "penalty",
        "suspect_z",
        "min_share",
        "max_information",
        "prior_runs",
        "prior_ss",
    ),
)
MIN_TRIALS = BLOCK.i("min_trials")
MAX_TRIALS = BLOCK.i("max_trials")
PASSES = BLOCK.i("passes")
PENALTY = BLOCK.f("penalty")
SUSPECT_Z = BLOCK.f("suspect_z")
MIN_SHARE = BLOCK.f("min_share")
MAX_INFORMATION = BLOCK.f("max_information")
PRIOR_RUNS = BLOCK.f("prior_runs")
PRIOR_SS = BLOCK.f("prior_ss")


def _values(gate: Any) -> dict[str, float]:
    runs = float(gate.noise_prior_runs)
    return {
        "min_trials": gate.min_trials,
        "max_trials": gate.max_trials or 0,
        "passes": gate.passes,
        "penalty": gate.penalty,
        "suspect_z": gate.suspect_z,
        "min_share": gate.min_share,
        "max_information": gate.max_information,
        "prior_runs": runs,
        "prior_ss": 0.0 if gate.noise_prior_sd is None else runs * gate.noise_prior_sd**2,
    }


#: the covariate the compiled ridge gates know (the scenario's difficulty proxy)
PROXY = "difficulty_proxy"


def support(gate: Any, s: Any) -> str | None:
    """Return why the kernel cannot run this ridge gate, or None when it can.

    The kernel's ridge gates (this one and the lifecycle gate) adjust for the difficulty
    proxy only.
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


#: the piece as the simulator runs it (named by the gate's registry entry)
PIECE = KernelGate(BLOCK, _values, support, _loop)

lesson_inference = compile_rule(ridge.lesson_inference)
suspect_penalties = compile_rule(ridge.suspect_penalties)
#: the estimator's identifiability check and duplicate groups, compiled (inlined: a
#: separately compiled call returning an array cost S2 about a fifth of its time)
not_identifiable = compile_rule(ridge.not_identifiable)
duplicate_groups = compile_rule(ridge.duplicate_groups)
information_look = compile_rule(rule.information_look)
ridge_outcome = compile_rule(rule.ridge_outcome)
#: its dispatch code in the run loop (derived from the block's name)
CODE = PIECE.code


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
    sums); ``ok`` False when singular.  Shared by this piece and the lifecycle piece.
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
def ridge_pass(
    gram: np.ndarray,
    zty: np.ndarray,
    yty: float,
    runs: int,
    f: int,
    p: int,
    pen: np.ndarray,
    prior_ss: float,
    prior_runs: float,
    a: np.ndarray,
    aug: np.ndarray,
    m: np.ndarray,
    b: np.ndarray,
    gb: np.ndarray,
    t_out: np.ndarray,
    info: np.ndarray,
    df_out: np.ndarray,
) -> bool:
    """Run one pass of the debiased ridge (:func:`cogstats.estimators.ridge_fit`'s pass).

    The pass runs on the compact statistics (``p`` columns, ``f`` fixed), the same
    operations in the same order (:func:`ridge_solve`), each lesson's inference by the
    estimator's own :func:`~cogstats.estimators.debiased_ridge.lesson_inference`, compiled;
    writes each lesson's t, info and df (NaN where undefined); False when singular.
    """
    for i in range(p - f):
        t_out[i] = math.nan
        info[i] = math.nan
        df_out[i] = math.nan
    ok, rss, trace = ridge_solve(gram, zty, yty, f, p, pen, a, aug, m, b, gb)
    if not ok:
        return False
    for i in range(f, p):
        mkb, mkm = penalty_row(m, b, pen, f, p, i)
        _, _, t, li, df, _ = lesson_inference(
            b[i], m[i, i], pen[i - f], mkb, mkm, rss, trace, runs, prior_runs, prior_ss
        )
        info[i - f] = li
        t_out[i - f] = t
        df_out[i - f] = df
    return True


@njit(cache=True)
def recommended_gate(
    gi: np.ndarray,
    gf: np.ndarray,
    recheck: bool,
    nfix: int,
    levels: np.ndarray,
    status: np.ndarray,
    n_with: np.ndarray,
    first_trial: np.ndarray,
    gram_full: np.ndarray,
    zty_full: np.ndarray,
    yty: float,
    runs: int,
    by_age: np.ndarray,
    run: int,
    promote_run: np.ndarray,
    evict_run: np.ndarray,
    evict_reason: np.ndarray,
    ibuf: np.ndarray,
) -> None:
    """Run :class:`~cogstats.gates.RecommendedGate` on the running Gram matrix.

    ``nfix`` columns come first (the intercept and the covariates).  The debiased ridge
    over the lessons tried so far (in order of first trial, as a ledger
    lists them), then a t test against the level spent at each lesson's age (recorded runs
    since its first trial).
    """
    n_les = status.shape[0]
    f = nfix
    # the lessons tried so far, in order of first appearance (first trial run, index)
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
    p = f + m_act
    gram = np.empty((p, p))
    zty = np.empty(p)
    for r in range(p):
        rr = r if r < f else f + cols[r - f]
        zty[r] = zty_full[rr]
        for c in range(p):
            cc = c if c < f else f + cols[c - f]
            gram[r, c] = gram_full[rr, cc]
    # not identifiable: in every run, or sharing an inclusion pattern (the estimator's own)
    ident = np.logical_not(not_identifiable(gram, f, runs))
    k_pen = gf[PENALTY]
    pen = np.full(m_act, k_pen)
    new = np.empty(m_act)
    a = np.empty((p, p))
    aug = np.empty((p, 2 * p))
    mm = np.empty((p, p))
    b = np.empty(p)
    gb = np.empty(p)
    t = np.empty(m_act)
    info = np.empty(m_act)
    dfs = np.empty(m_act)
    passes = gi[PASSES]
    susz = gf[SUSPECT_Z]
    share = gf[MIN_SHARE]
    ok = False
    for step in range(passes):
        ok = ridge_pass(
            gram,
            zty,
            yty,
            runs,
            f,
            p,
            pen,
            gf[PRIOR_SS],
            gf[PRIOR_RUNS],
            a,
            aug,
            mm,
            b,
            gb,
            t,
            info,
            dfs,
        )
        if not ok or step == passes - 1:
            break
        same = True
        for i in range(m_act):
            new[i] = suspect_penalties(
                ident[i], t[i], info[i], gram[f + i, f + i], susz, share, k_pen, math.inf
            )
            if new[i] != pen[i]:
                same = False
        if same:
            break
        for i in range(m_act):
            pen[i] = new[i]
    pos = np.full(n_les, -1, dtype=np.int64)
    for i in range(m_act):
        pos[cols[i]] = i
    min_trials = gi[MIN_TRIALS]
    max_trials = gi[MAX_TRIALS]
    top = levels.shape[0] - 1
    for jj in range(n_les):
        j = by_age[jj]
        if not (status[j] == STATUS_CANDIDATE or (recheck and status[j] == STATUS_VERIFIED)):
            continue
        i = pos[j]
        if i < 0:
            continue
        ti = t[i]
        look = int(information_look(info[i], gf[MAX_INFORMATION], top))
        level = levels[look]
        # the t tails (this runner's special function; scipy's stdtr in the batch gate)
        up = t_cdf(-ti, dfs[i]) if ok and ident[i] and math.isfinite(ti) else 1.0
        down = t_cdf(ti, dfs[i]) if ok and ident[i] and math.isfinite(ti) else 1.0
        d = ridge_outcome(
            n_with[j], ok and ident[i], ti, up, down, level, look, top, min_trials, max_trials
        )
        apply_decision(d, j, run, status, promote_run, evict_run, evict_reason)
