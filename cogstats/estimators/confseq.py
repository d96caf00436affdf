"""Confidence sequences: inference that stays valid however often a gate looks.

A gate that re-tests every lesson after every run and stops at the first significant
result turns a fixed-sample 5% test into a much larger false-positive rate (measured on
benchmark S4: a Welch test looked at after each of 200 runs rejects a null lesson about half
the time).  Two remedies live in the estimators (a third, group-sequential error spending
for a planned number of looks, in :mod:`cogstats.estimators.spending`):

``confseq`` (:func:`confidence_sequence`, :func:`confseq_paths`), this module
    Asymptotic confidence sequences for each lesson's effect on the score, after
    Waudby-Smith, Arbour, Sinha, Kennedy & Ramdas, "Time-uniform central limit theory and
    asymptotic confidence sequences" (arXiv:2103.06476; Annals of Statistics 2024): the
    two-sided Robbins normal-mixture boundary applied to a per-run pseudo-outcome whose mean
    is the lesson's average effect.
``anytime_ols`` (:mod:`cogstats.estimators.anytime_ols`)
    Anytime-valid tests and confidence sequences for regression coefficients, after Lindon
    et al. (2022).

The confidence-sequence mathematics
-----------------------------------
For i.i.d. increments with variance ``sigma**2`` the Gaussian mixture (over ``lambda ~
N(0, rho**2)``, in standard-deviation units) of ``exp(lambda S_t / sigma - lambda**2 t / 2)``
is the closed form ``M_t = (t rho**2 + 1)**-0.5 exp(rho**2 S_t**2 / (2 sigma**2 (t rho**2 +
1)))``, a nonnegative martingale with ``M_0 = 1`` for Gaussian increments.  Ville's
inequality, ``P(exists t: M_t >= 1/alpha) <= alpha``, gives the two-sided boundary
``|S_t / t| < sigma B_t`` with::

    B_t = sqrt( 2 (t rho**2 + 1) / (t**2 rho**2) * log( sqrt(t rho**2 + 1) / alpha ) )

which is the asymptotic confidence sequence (AsympCS) of Waudby-Smith et al. once ``sigma``
is replaced by a consistent estimate (their strong-approximation argument).  ``rho`` tunes
where the sequence is tightest; for a target time ``t*`` the paper's approximate minimiser
of the width is ``rho**2 = (-2 log alpha + log(-2 log alpha + 1)) / t*`` (option
``target_runs``).  Both the closed form of the mixture and this boundary are checked against
direct numerical integration in ``tests/reference/test_sequential_reference.py``.

Studentising.  The paper studentises with the sample variance.  Looked at from the first
runs, that is not safe here: the sample variance of two or three pseudo-outcomes can be
nearly zero, and on benchmark S4 the plain AsympCS with the sample variance excluded 0 for
about 20% of null lessons, nine in ten of them within the first 20 runs.  This module
studentises under each hypothesised value ``mu0`` instead (the score-test, or Wilson,
construction):
``mu0`` is in the sequence when ``(mean - mu0)**2 < B_t**2 (v_t + (mean - mu0)**2)``, with
``v_t`` the plug-in variance (denominator ``t``).  Solving gives, for ``B_t < 1``::

    mean +/- B_t sqrt(v_t) / sqrt(1 - B_t**2)

and the whole parameter space ``[-1, 1]`` (a lesson's effect on a score in [0, 1]) while
``B_t >= 1``.  As ``t`` grows ``B_t -> 0`` and the interval approaches the paper's
``mean +/- B_t sqrt(v_t)`` (it is ``1 / sqrt(1 - B_t**2)`` wider: about 5% at the target
time), so the asymptotic time-uniform guarantee carries over; the gain is that no handful of
similar early runs can produce a spuriously narrow interval.

p-values.  With ``rho`` held at its configured value, the smallest ``alpha`` at which 0 lies
outside the sequence at time ``t`` is ``p_t = min(1, sqrt(t rho**2 + 1) exp(-u t**2 rho**2
/ (2 (t rho**2 + 1))))`` with ``u = mean**2 / (v_t + mean**2)``; the sets are nested in
``alpha``, so ``P(exists t: p_t <= alpha) <= alpha`` and ``p_t`` is valid at any stopping
time.  ``pvalue`` is this current-time p-value (``pvalue <= 1 - confidence_level`` exactly
when the interval excludes 0); ``running_min_pvalue = min_{s <= t} p_s`` carries the same
guarantee and is ``<= alpha`` exactly when the sequence has ever excluded 0.

Measured (``tests/unit/test_sequential.py``, benchmark S4: 20 null lessons at p = 1/2, a
look after each of 200 runs, 5000 lessons): the share of lessons ever rejected is 0.016
(``confseq``, logged propensities, AIPW), 0.020 (plain IPW), 0.017 (two-sample) and 0.018
for ``anytime_ols`` (2000 lessons), against 0.51 for a Welch test looked at after every
run (0.35 over 30 equally spaced looks).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import polars as pl

from cogstats._validation import (
    ParameterError,
    check_choice,
    check_int,
    check_probability,
    check_real,
)
from cogstats.estimators._base import Attribution, check_fact_id, make_table, register
from cogstats.ledger import PROPENSITY_COLUMNS, Ledger

__all__ = [
    "SequencePaths",
    "confidence_sequence",
    "confseq_paths",
    "mixture_rho",
    "pseudo_outcome_variance",
    "resolve_rho",
    "studentised_sequence",
    "two_sample_variance",
]

PROPENSITY_MODES = ("auto", "logged", "none")
OUTCOME_MODELS = ("running_means", "none")
#: Where a lesson has no data yet, the pseudo-outcome predictions start here (mid-scale).
_PRIOR_MEAN = 0.5


# ====================================================================== shared results
@dataclass(frozen=True, eq=False)
class SequencePaths:
    """Inference for several lessons after every run: arrays of shape ``(n_runs, n_lessons)``.

    Row ``i`` is what a look after run ``i + 1`` sees.  Built by :func:`confseq_paths` and
    :func:`anytime_ols_paths`; :func:`confidence_sequence` and :func:`anytime_ols_sequence`
    turn one column into a polars frame.

    Attributes
    ----------
    n : numpy.ndarray of int
        Runs that count for the lesson so far (its time index).
    trials, baseline_runs : numpy.ndarray of int
        Of those, runs that carried the lesson and runs that did not.
    estimate : numpy.ndarray
        Point estimate of the effect (NaN before any estimate exists).
    std_error : numpy.ndarray
        Plug-in standard error of ``estimate`` (NaN where undefined).
    ci_low, ci_high : numpy.ndarray
        The confidence sequence at each run (simultaneous over all runs).
    pvalue : numpy.ndarray
        Anytime-valid two-sided p-value for effect 0 at each run.
    running_min_pvalue : numpy.ndarray
        Running minimum of ``pvalue`` down the runs.
    settings : dict
        The options the paths were computed with (``rho`` or ``phi`` resolved).
    """

    n: np.ndarray
    trials: np.ndarray
    baseline_runs: np.ndarray
    estimate: np.ndarray
    std_error: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    pvalue: np.ndarray
    running_min_pvalue: np.ndarray
    settings: dict[str, Any] = field(default_factory=dict)

    def column_frame(self, j: int, run_ids: Sequence[str] | None = None) -> pl.DataFrame:
        """Return the path of lesson column ``j`` as a frame (one row per run).

        Columns: ``run`` (1-based), ``run_id`` (when given), ``n``, ``trials``,
        ``baseline_runs``, ``estimate``, ``std_error``, ``ci_low``, ``ci_high``, ``pvalue``,
        ``running_min_pvalue``; NaN becomes null.
        """
        n_runs = self.n.shape[0]
        data: dict[str, Any] = {"run": pl.Series("run", np.arange(1, n_runs + 1), pl.Int64)}
        if run_ids is not None:
            data["run_id"] = pl.Series("run_id", list(run_ids), pl.String)
        for name in ("n", "trials", "baseline_runs"):
            data[name] = pl.Series(name, getattr(self, name)[:, j], pl.Int64)
        for name in (
            "estimate",
            "std_error",
            "ci_low",
            "ci_high",
            "pvalue",
            "running_min_pvalue",
        ):
            values = np.asarray(getattr(self, name)[:, j], dtype=np.float64)
            data[name] = pl.Series(name, values, pl.Float64, nan_to_null=True)
        return pl.DataFrame(data)


# ====================================================================== confidence sequences
def mixture_rho(target_runs: int, confidence_level: float = 0.95) -> float:
    """Mixture scale ``rho`` that makes the normal-mixture sequence tightest near ``target_runs``.

    ``rho**2 = (-2 log alpha + log(-2 log alpha + 1)) / target_runs`` with ``alpha = 1 -
    confidence_level``: the approximate minimiser of the boundary width at ``t =
    target_runs`` given by Waudby-Smith et al. (2021) (it solves the first-order condition
    ``u = log(1 + u) - 2 log alpha`` for ``u = t rho**2`` to first order).  Validated against
    a numerical minimisation of the width in the reference tests.

    Examples
    --------
    >>> round(mixture_rho(100, 0.95), 6)
    0.281712
    """
    t_star = cast(int, check_int("target_runs", target_runs, minimum=1))
    alpha = 1.0 - check_probability("confidence_level", confidence_level)
    c = -2.0 * math.log(alpha)
    return math.sqrt((c + math.log(c + 1.0)) / t_star)


def _boundary_sq(t: np.ndarray, rho: float, alpha: float) -> np.ndarray:
    """``B_t**2`` of the two-sided normal-mixture boundary, in standard-deviation units."""
    tr = t * rho * rho
    with np.errstate(divide="ignore", invalid="ignore"):
        b2 = 2.0 * (tr + 1.0) / (t * t * rho * rho) * np.log(np.sqrt(tr + 1.0) / alpha)
    return np.where(t > 0, b2, np.inf)


def _mixture_pvalue(t: np.ndarray, u: np.ndarray, rho: float) -> np.ndarray:
    """``min(1, 1 / M_t)`` for the studentised statistic ``u = z**2 / t`` (see module notes)."""
    tr = t * rho * rho
    with np.errstate(divide="ignore", invalid="ignore"):
        log_p = 0.5 * np.log1p(tr) - u * t * tr / (2.0 * (tr + 1.0))
    return np.asarray(np.where(t > 0, np.minimum(1.0, np.exp(np.minimum(log_p, 0.0))), 1.0))


def _lag(a: np.ndarray) -> np.ndarray:
    """Shift down one run (the value known before the run), zero-filled."""
    out = np.zeros_like(a)
    out[1:] = a[:-1]
    return out


def confseq_paths(
    scores: np.ndarray,
    injected: np.ndarray,
    propensities: np.ndarray | None = None,
    *,
    confidence_level: float = 0.95,
    target_runs: int = 100,
    rho: float | None = None,
    outcome_model: str = "running_means",
) -> SequencePaths:
    """Confidence sequences for many lessons, after every run, from cumulative sums.

    Parameters
    ----------
    scores : array_like
        Run scores in [0, 1], shape ``(n_runs,)`` (shared by every lesson) or ``(n_runs,
        n_lessons)`` (one score stream per column, e.g. replicates stacked side by side).
    injected : array_like of bool
        ``(n_runs, n_lessons)``: whether the lesson was injected into the run.
    propensities : array_like, optional
        ``(n_runs, n_lessons)`` logged injection probabilities, NaN where the lesson was not
        eligible.  A run counts for a lesson when its propensity is strictly between 0 and
        1 (case (a) below).  ``None`` selects the two-sample case (b).
    confidence_level : float
        ``1 - alpha`` of the sequence (simultaneous over all runs).
    target_runs : int
        Time at which the sequence is tightest (sets ``rho`` by :func:`mixture_rho`).
    rho : float, optional
        The mixture scale itself; overrides ``target_runs``.
    outcome_model : {"running_means", "none"}
        Case (a) only: ``"running_means"`` augments the weighting with predictable arm means
        (AIPW); ``"none"`` is plain inverse probability weighting (IPW).

    Returns
    -------
    SequencePaths

    Notes
    -----
    (a) Logged propensities ``p_r``.  Over the runs where the lesson was eligible, the
    pseudo-outcome is (``X_r`` injected, ``Y_r`` score)::

        phi_r = m1 - m0 + X_r (Y_r - m1) / p_r - (1 - X_r) (Y_r - m0) / (1 - p_r)

    with ``m1``, ``m0`` the mean scores of the lesson's earlier eligible runs with and
    without it (predictable: fixed before run ``r``; the mean of all earlier eligible runs,
    then 0.5, stand in while an arm is empty).  Because ``X_r`` is drawn with probability
    ``p_r`` independently of the run's potential scores, ``E[phi_r | past] = E[Y_r(1) -
    Y_r(0) | past]`` whatever ``m1``, ``m0`` are; the running means only cut the variance
    (about ``4 sigma**2`` at ``p = 1/2`` instead of ``4 E[Y**2]`` for plain IPW,
    ``phi_r = Y_r (X_r / p_r - (1 - X_r) / (1 - p_r))``, which ``outcome_model="none"``
    gives; on S4 scores that is about 37 times the variance).  The estimate is the running
    mean of ``phi`` and ``v_t`` its plug-in variance.  The target is the average effect over
    the eligible runs.

    (b) No propensities.  Each lesson's clock starts at its first injection; from then on
    every run counts, with or without the lesson.  The estimate is the difference of the two
    running means ``mean_with - mean_without`` (asymptotically linear, influence function
    ``X (Y - mu1) / pi - (1 - X) (Y - mu0) / (1 - pi)``), and the variance in the same
    studentised boundary is the larger of the pooled (``t SSW / (n1 n0)``) and the Welch
    (``t (SS1 / n1**2 + SS0 / n0**2)``) plug-ins, ``SS`` the within-arm sums of squares.
    Assumptions: runs are independent and identically distributed, and whether a run carries
    the lesson is independent of its potential scores with a fixed probability (as if
    randomised).  A time trend combined with an injection rate that changes over time breaks
    this; case (a) does not need it.  Inference starts once each arm has 2 runs.

    Runs not counting for a lesson leave its row unchanged.  Before any inference is
    possible the sequence is ``[-1, 1]`` and the p-value 1.

    Examples
    --------
    >>> rng = np.random.default_rng(3)
    >>> x = rng.random((400, 2)) < 0.5
    >>> y = np.clip(0.6 + 0.1 * x[:, 0] + rng.normal(0, 0.1, 400), 0, 1)
    >>> paths = confseq_paths(y, x, np.full((400, 2), 0.5))
    >>> bool(paths.running_min_pvalue[-1, 0] < 0.05), bool(paths.pvalue[-1, 1] > 0.05)
    (True, True)
    """
    level = check_probability("confidence_level", confidence_level)
    rho_used = resolve_rho(rho, target_runs, level)
    model = check_choice("outcome_model", outcome_model, OUTCOME_MODELS)
    x = np.asarray(injected)
    if x.ndim != 2:
        raise ParameterError(f"injected must be 2-dimensional (runs x lessons); got {x.shape}")
    x = x.astype(bool)
    y = np.asarray(scores, dtype=np.float64)
    if y.ndim == 1:
        y = y[:, None]
    if y.ndim != 2 or y.shape[0] != x.shape[0] or y.shape[1] not in (1, x.shape[1]):
        raise ParameterError(
            f"scores must have shape (n_runs,) or (n_runs, n_lessons) = {x.shape}; got "
            f"{np.shape(scores)}"
        )
    y = np.broadcast_to(y, x.shape)
    alpha = 1.0 - level
    if propensities is None:
        est, v, n, n1, n0, ready = _two_sample_stats(y, x)
    else:
        p = np.asarray(propensities, dtype=np.float64)
        if p.shape != x.shape:
            raise ParameterError(
                f"propensities must have the shape of injected {x.shape}; got {p.shape}"
            )
        est, v, n, n1, n0, ready = _pseudo_outcome_stats(y, x, p, model == "running_means")
    lo, hi, pval, se = studentised_sequence(est, v, n, ready, rho_used, alpha)
    settings = {
        "confidence_level": level,
        "target_runs": target_runs,
        "rho": rho_used,
        "outcome_model": model,
        "propensity": "none" if propensities is None else "logged",
    }
    return SequencePaths(
        n=n,
        trials=n1,
        baseline_runs=n0,
        estimate=np.where(n > 0, est, np.nan),
        std_error=se,
        ci_low=lo,
        ci_high=hi,
        pvalue=pval,
        running_min_pvalue=np.minimum.accumulate(pval, axis=0),
        settings=settings,
    )


def resolve_rho(rho: float | None, target_runs: int, level: float) -> float:
    """Return the mixture parameter: ``rho`` checked, or :func:`mixture_rho` when None.

    Examples
    --------
    >>> resolve_rho(None, 100, 0.05) == mixture_rho(100, 0.05), resolve_rho(2.0, 100, 0.05)
    (True, 2.0)
    """
    if rho is None:
        return mixture_rho(target_runs, level)
    check_int("target_runs", target_runs, minimum=1)
    return cast(float, check_real("rho", rho, minimum=0.0, exclusive_minimum=True))


def _pseudo_outcome_stats(
    y: np.ndarray, x: np.ndarray, p: np.ndarray, augment: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Compute the running mean and plug-in variance of the (A)IPW pseudo-outcome, case (a)."""
    with np.errstate(invalid="ignore"):
        elig = np.isfinite(p) & (p > 0.0) & (p < 1.0)
    e = elig.astype(np.float64)
    xf = x.astype(np.float64) * e
    pp = np.where(elig, p, 0.5)
    if augment:
        # predictable arm means from the lesson's earlier eligible runs
        s1, c1 = _lag(np.cumsum(y * xf, axis=0)), _lag(np.cumsum(xf, axis=0))
        s0, c0 = _lag(np.cumsum(y * (e - xf), axis=0)), _lag(np.cumsum(e - xf, axis=0))
        with np.errstate(invalid="ignore", divide="ignore"):
            m_all = np.where(c1 + c0 > 0, (s1 + s0) / (c1 + c0), _PRIOR_MEAN)
            m1 = np.where(c1 > 0, s1 / c1, m_all)
            m0 = np.where(c0 > 0, s0 / c0, m_all)
    else:
        m1 = m0 = np.zeros_like(y)
    phi = m1 - m0 + xf * (y - m1) / pp - (e - xf) * (y - m0) / (1.0 - pp)
    phi = phi * e
    n = np.cumsum(elig, axis=0).astype(np.int64)
    n1 = np.cumsum(xf, axis=0).astype(np.int64)
    mean, v = pseudo_outcome_variance(n, np.cumsum(phi, axis=0), np.cumsum(phi * phi, axis=0))
    return mean, v, n, n1, n - n1, n > 0


def pseudo_outcome_variance(
    n: np.ndarray, s: np.ndarray, q: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Mean and plug-in variance (denominator ``n``) of a pseudo-outcome from its sums.

    Case (a) of :func:`confseq_paths`: ``n`` runs that count, ``s`` the sum of the
    pseudo-outcomes, ``q`` the sum of their squares.  NaN where ``n`` is 0.

    Examples
    --------
    >>> mean, v = pseudo_outcome_variance(np.array([4.0]), np.array([2.0]), np.array([1.5]))
    >>> float(mean[0]), float(v[0])
    (0.5, 0.125)
    """
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = s / n
        v = np.maximum(q / n - mean * mean, 0.0)
    return mean, v


def _two_sample_stats(
    y: np.ndarray, x: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Difference of running means and its conservative variance, case (b)."""
    started = np.cumsum(x, axis=0) > 0
    e = started.astype(np.float64)
    xf = x.astype(np.float64)
    n1 = np.cumsum(xf, axis=0)
    n0 = np.cumsum(e - xf, axis=0)
    s1 = np.cumsum(y * xf, axis=0)
    s0 = np.cumsum(y * (e - xf), axis=0)
    q1 = np.cumsum(y * y * xf, axis=0)
    q0 = np.cumsum(y * y * (e - xf), axis=0)
    est, v, ready = two_sample_variance(n1, n0, s1, s0, q1, q0)
    n = n1 + n0
    return est, v, n.astype(np.int64), n1.astype(np.int64), n0.astype(np.int64), ready


def two_sample_variance(
    n1: np.ndarray,
    n0: np.ndarray,
    s1: np.ndarray,
    s0: np.ndarray,
    q1: np.ndarray,
    q0: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Difference of means and its conservative variance from the two arms' sums.

    Case (b) of :func:`confseq_paths`: ``n1``, ``s1``, ``q1`` the count, sum and sum of
    squares of the scores with the lesson, ``n0``, ``s0``, ``q0`` without it.  The
    variance, per run of ``n = n1 + n0``, is the larger of the pooled and the Welch
    forms; it is ready (not NaN) once both arms have two runs.

    Returns
    -------
    est, v, ready : ndarray
        The estimate (NaN until both arms have a run), the variance, where it is ready.

    Examples
    --------
    >>> two = lambda a, b: (np.array([a]), np.array([b]))
    >>> est, v, ready = two_sample_variance(*two(2.0, 2.0), *two(1.6, 0.8), *two(1.3, 0.34))
    >>> round(float(est[0]), 12), round(float(v[0]), 12), bool(ready[0])
    (0.4, 0.04, True)
    """
    n = n1 + n0
    with np.errstate(invalid="ignore", divide="ignore"):
        m1, m0 = s1 / n1, s0 / n0
        ss1 = np.maximum(q1 - n1 * m1 * m1, 0.0)
        ss0 = np.maximum(q0 - n0 * m0 * m0, 0.0)
        pooled = n * (ss1 + ss0) / (n1 * n0)
        welch = n * (ss1 / (n1 * n1) + ss0 / (n0 * n0))
    ready = (n1 >= 2) & (n0 >= 2)
    v = np.where(ready, np.maximum(pooled, welch), np.nan)
    est = np.where((n1 > 0) & (n0 > 0), m1 - m0, np.nan)
    return est, v, ready


def studentised_sequence(
    est: np.ndarray,
    v: np.ndarray,
    n: np.ndarray,
    ready: np.ndarray,
    rho: float,
    alpha: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Interval, p-value and standard error of the Wilson-type normal-mixture sequence."""
    t = n.astype(np.float64)
    b2 = _boundary_sq(t, rho, alpha)
    est0 = np.where(ready, est, 0.0)
    v0 = np.where(ready, v, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        half = np.sqrt(b2 * v0 / (1.0 - b2))
        total = v0 + est0 * est0
        u = np.where(total > 0, est0 * est0 / total, 0.0)
        se = np.where(ready & (t > 0), np.sqrt(v0 / t), np.nan)
    finite = ready & (b2 < 1.0)
    lo = np.where(finite, np.maximum(est0 - half, -1.0), -1.0)
    hi = np.where(finite, np.minimum(est0 + half, 1.0), 1.0)
    pval = np.where(ready, _mixture_pvalue(t, u, rho), 1.0)
    return lo, hi, pval, se


# ---------------------------------------------------------------------- ledger adapters
def _resolve_propensity_mode(ledger: Ledger, propensity: str) -> str:
    mode = check_choice("propensity", propensity, PROPENSITY_MODES)
    has = all(c in ledger.covariates for c in PROPENSITY_COLUMNS)
    if mode == "logged" and not has:
        raise ParameterError(
            "propensity='logged' needs the ledger columns eligible_ids and propensities; "
            f"this ledger has covariates {ledger.covariates!r} (use propensity='none' or "
            "'auto')"
        )
    if mode == "auto":
        if not has:
            return "none"
        logged = ledger.frame["eligible_ids"].is_not_null().all()
        return "logged" if logged else "none"
    return mode


def _propensity_matrix(ledger: Ledger, fact_ids: Sequence[str]) -> np.ndarray:
    """``(n_runs, n_lessons)`` logged propensities, NaN where a lesson was not eligible."""
    pos = {f: j for j, f in enumerate(fact_ids)}
    out = np.full((len(ledger), len(fact_ids)), np.nan)
    long = (
        ledger.frame.select(
            pl.int_range(pl.len(), dtype=pl.Int64).alias("row"), *PROPENSITY_COLUMNS
        )
        .drop_nulls(list(PROPENSITY_COLUMNS))
        .explode(list(PROPENSITY_COLUMNS))
        .drop_nulls(list(PROPENSITY_COLUMNS))
    )
    col = long["eligible_ids"].replace_strict(pos, default=-1, return_dtype=pl.Int64).to_numpy()
    keep = col >= 0
    out[long["row"].to_numpy()[keep], col[keep]] = long["propensities"].to_numpy()[keep]
    return out


def _ledger_confseq(
    ledger: Ledger,
    fact_ids: Sequence[str],
    *,
    confidence_level: float,
    target_runs: int,
    rho: float | None,
    propensity: str,
    outcome_model: str,
) -> tuple[SequencePaths, str]:
    level = check_probability("confidence_level", confidence_level)
    resolve_rho(rho, target_runs, level)
    check_choice("outcome_model", outcome_model, OUTCOME_MODELS)
    mode = _resolve_propensity_mode(ledger, propensity)
    x = ledger.design(list(fact_ids)).dense() > 0
    p = _propensity_matrix(ledger, fact_ids) if mode == "logged" else None
    paths = confseq_paths(
        ledger.scores,
        x,
        p,
        confidence_level=level,
        target_runs=target_runs,
        rho=rho,
        outcome_model=outcome_model,
    )
    return paths, mode


def confidence_sequence(
    ledger: Ledger,
    fact_id: str,
    *,
    confidence_level: float = 0.95,
    target_runs: int = 100,
    rho: float | None = None,
    propensity: str = "auto",
    outcome_model: str = "running_means",
) -> pl.DataFrame:
    """Return a lesson's confidence sequence after every run of the ledger, as a polars frame.

    Computed for all runs at once from cumulative sums (:func:`confseq_paths`); the last row
    equals the ``confseq`` estimator's row for the lesson.  Options as in the ``confseq``
    estimator (see :func:`confseq`).

    Returns
    -------
    polars.DataFrame
        One row per ledger run: ``run`` (1-based), ``run_id``, ``n`` (runs that count for
        the lesson so far), ``trials``, ``baseline_runs``, ``estimate``, ``std_error``,
        ``ci_low``, ``ci_high``, ``pvalue``, ``running_min_pvalue``.

    Examples
    --------
    >>> from cogstats import Ledger
    >>> rng = np.random.default_rng(5)
    >>> x = rng.random(160) < 0.5
    >>> y = np.clip(0.6 + 0.1 * x + rng.normal(0, 0.1, 160), 0, 1)
    >>> ledger = Ledger.from_records(
    ...     {"run_id": f"r{i}", "score": float(y[i]), "fact_ids": ["a"] * int(x[i]),
    ...      "eligible_ids": ["a"], "propensities": [0.5], "family": f"f{i % 3}"}
    ...     for i in range(160)
    ... )
    >>> frame = confidence_sequence(ledger, "a")
    >>> frame.height == len(ledger), frame["ci_low"][0], frame["ci_high"][0]
    (True, -1.0, 1.0)
    >>> bool(frame["running_min_pvalue"][-1] < 0.05)
    True
    """
    fid = check_fact_id(ledger, fact_id)
    paths, _ = _ledger_confseq(
        ledger,
        [fid],
        confidence_level=confidence_level,
        target_runs=target_runs,
        rho=rho,
        propensity=propensity,
        outcome_model=outcome_model,
    )
    return paths.column_frame(0, ledger.run_ids)


@register(
    "confseq",
    defaults={
        "confidence_level": 0.95,
        "target_runs": 100,
        "rho": None,
        "propensity": "auto",
        "outcome_model": "running_means",
    },
    description="asymptotic confidence sequence (anytime-valid) for each lesson's effect",
    invalid={
        "confidence_level": 1.5,
        "target_runs": 0,
        "rho": -1.0,
        "propensity": "sometimes",
        "outcome_model": "forest",
    },
    conservative=True,
)
def confseq(
    ledger: Ledger,
    *,
    confidence_level: float,
    target_runs: int,
    rho: float | None,
    propensity: str,
    outcome_model: str,
) -> Attribution:
    """Anytime-valid confidence sequence for every lesson's effect (Waudby-Smith et al.).

    ``estimate`` is the running mean of the lesson's pseudo-outcome (case (a): augmented
    IPW with logged propensities) or the difference of running means (case (b)); see
    :func:`confseq_paths` for both and the module notes for the boundary.  ``ci_low``,
    ``ci_high`` are the confidence sequence at the current run: they hold simultaneously
    over all runs, so a gate may look after every run.  ``pvalue`` is the anytime-valid
    two-sided p-value at the current run (smallest alpha at which 0 is outside the
    sequence now); ``running_min_pvalue`` its minimum over all earlier runs.  ``std_error``
    is the plug-in ``sqrt(v_t / t)`` (the interval is not ``estimate +/- q std_error``).

    Options: ``confidence_level``; ``target_runs`` (where the sequence is tightest) or
    ``rho`` (the mixture scale, overriding it); ``propensity`` in {"auto", "logged",
    "none"} ("auto" uses logged propensities when every run has them); ``outcome_model``
    in {"running_means", "none"} (AIPW or plain IPW in case (a)).

    Method columns: ``runs`` (runs that count for the lesson), ``cs_width``,
    ``running_min_pvalue``.  Validated by simulation in ``tests/unit/test_sequential.py``
    (benchmark S4 error rate under peeking, time-uniform coverage, power).

    Cost: O(n k) time and memory (the dense run x lesson inclusion matrix).

    Examples
    --------
    >>> from cogstats import attribute
    >>> from cogstats import Ledger
    >>> rng = np.random.default_rng(5)
    >>> x = rng.random(160) < 0.5
    >>> y = np.clip(0.6 + 0.1 * x + rng.normal(0, 0.1, 160), 0, 1)
    >>> ledger = Ledger.from_records(
    ...     {"run_id": f"r{i}", "score": float(y[i]), "fact_ids": ["a"] * int(x[i]),
    ...      "eligible_ids": ["a"], "propensities": [0.5], "family": f"f{i % 3}"}
    ...     for i in range(160)
    ... )
    >>> row = attribute(ledger, method="confseq").row("a")
    >>> bool(row["ci_low"] > 0), row["runs"]
    (True, 160)
    """
    fact_ids = list(ledger.fact_ids)
    paths, mode = _ledger_confseq(
        ledger,
        fact_ids,
        confidence_level=confidence_level,
        target_runs=target_runs,
        rho=rho,
        propensity=propensity,
        outcome_model=outcome_model,
    )
    last = -1 if len(ledger) else None
    k = len(fact_ids)

    def final(a: np.ndarray, fill: float) -> np.ndarray:
        return a[last] if last is not None else np.full(k, fill)

    lo, hi = final(paths.ci_low, -1.0), final(paths.ci_high, 1.0)
    table = make_table(
        "confseq",
        {
            "fact_id": fact_ids,
            "estimate": final(paths.estimate, np.nan),
            "std_error": final(paths.std_error, np.nan),
            "ci_low": lo,
            "ci_high": hi,
            "pvalue": final(paths.pvalue, 1.0),
            "trials": final(paths.trials, 0),
            "baseline_runs": final(paths.baseline_runs, 0),
            "runs": final(paths.n, 0),
            "cs_width": hi - lo,
            "running_min_pvalue": final(paths.running_min_pvalue, 1.0),
        },
    )
    settings = {
        **paths.settings,
        "propensity": propensity,
        "propensity_used": mode,
        "interval": "confidence_sequence",
        "pvalue": "anytime-valid, two-sided, at the current run",
    }
    return Attribution("confseq", table, settings, extras={"paths": paths})
