"""Attributions from running statistics: lift, welch, ols and confseq without the ledger.

An evidence gate judges from :class:`~cogstats.stats.StreamingStats` with the methods
whose inference running sums give (:data:`RUNNING_METHODS`).  Each function here turns
the running sums into the :class:`~cogstats.estimators.Attribution` that the method's
estimator returns on the ledger of the same runs (decisions identical, evidence to
1e-9):

* :func:`running_lift_welch` -- the per-lesson groups (:meth:`StreamingStats.group_arrays`)
  and, for a lesson whose decision could differ within the groups' rounding bounds, the
  run-order statistics (:meth:`StreamingStats.batch_group_arrays`);
* :func:`running_ols` -- the classical OLS from ``X'X``, ``X'y``, ``y'y``; the batch
  estimator on :meth:`StreamingStats.to_ledger` where the cross-products cannot promise
  the batch's result (an untrusted identifiability check, a near-singular design, a near
  exact fit, a decision within the rounding);
* :func:`running_confseq` -- the confidence sequence from confseq's running sums;
* :func:`running_identifiability` -- the lessons' identifiability, from the
  cross-products or the batch check.

Which decision "could differ" is the gate's rule: the caller passes it as ``near``, a
function of the bounds (:class:`EstimateBounds`) and the lessons' trials that marks the
lessons to recompute.  The rule stays with the gate; the statistics live here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from cogstats._validation import ParameterError, check_choice

if TYPE_CHECKING:
    from cogstats.estimators import Attribution
    from cogstats.stats.groups import GroupArrays
    from cogstats.stats.running import StreamingStats

__all__ = [
    "RUNNING_METHODS",
    "SLACK",
    "EstimateBounds",
    "running_confseq",
    "running_identifiability",
    "running_lift_welch",
    "running_ols",
    "welch_bounds",
]

#: the methods whose evidence running sums give (ols with the classical covariance)
RUNNING_METHODS = ("lift", "welch", "ols", "confseq")
#: relative widening of every interval in the near-tie checks (function rounding)
SLACK = 1e-12
#: relative uncertainty assumed for the streaming OLS estimates and standard errors
#: (they come from X'X summed in another order than the batch design)
OLS_TOL = 1e-8
#: a residual sum of squares below this share of y'y is a (near) exact fit: batch fallback
OLS_EXACT_FIT = 1e-4
#: a relative Cholesky pivot below this is close to the batch's singularity test (1e-12)
OLS_PIVOT = 1e-9


@dataclass
class EstimateBounds:
    """Bounds, per tested lesson, on what an evidence gate compares.

    Attributes
    ----------
    est, se, df : tuple of two arrays
        Lower and upper bounds on the estimate, its standard error and its degrees of
        freedom.
    se_zero : ndarray of bool
        Where a standard error of exactly 0 cannot be ruled out.

    Examples
    --------
    >>> import numpy as np
    >>> b = EstimateBounds((np.zeros(1), np.ones(1)), (np.ones(1), np.ones(1)),
    ...                    (np.full(1, 5.0), np.full(1, 5.0)), np.zeros(1, dtype=bool))
    >>> float(b.est[1][0] - b.est[0][0])
    1.0
    """

    est: tuple[np.ndarray, np.ndarray]
    se: tuple[np.ndarray, np.ndarray]
    df: tuple[np.ndarray, np.ndarray]
    se_zero: np.ndarray

    def take(self, rows: np.ndarray) -> EstimateBounds:
        """Return the bounds of ``rows`` only.

        Examples
        --------
        >>> import numpy as np
        >>> z = np.arange(3.0)
        >>> EstimateBounds((z, z), (z, z), (z, z), z > 0).take(np.array([2])).se_zero
        array([ True])
        """
        return EstimateBounds(
            (self.est[0][rows], self.est[1][rows]),
            (self.se[0][rows], self.se[1][rows]),
            (self.df[0][rows], self.df[1][rows]),
            self.se_zero[rows],
        )


#: marks the lessons whose decision could differ within the bounds, given their trials
NearDecision = Callable[[EstimateBounds, np.ndarray], np.ndarray]


def welch_bounds(
    g: GroupArrays,
    de: np.ndarray,
    var_a_tol: np.ndarray,
    var_b_tol: np.ndarray,
    floor: float,
) -> EstimateBounds:
    """Bounds on the Welch estimate, standard error and degrees of freedom.

    Parameters
    ----------
    g : GroupArrays
        The lessons' groups (:meth:`StreamingStats.group_arrays`).
    de : ndarray
        Bound on each estimate's rounding error.
    var_a_tol, var_b_tol : ndarray
        Bounds on the with-lesson and baseline variances' rounding errors.
    floor : float
        The noise floor (a standard deviation) below which a variance is not taken.

    Examples
    --------
    >>> import numpy as np
    >>> from cogstats.stats import StreamingStats
    >>> s = StreamingStats()
    >>> for i, y in enumerate([0.9, 0.8, 0.85, 0.3, 0.4, 0.35]):
    ...     s.add_run(f"r{i}", y, ["a"] if i < 3 else [])
    >>> g, lift_tol, va, vb = s.group_arrays(s.lesson_index(["a"]))
    >>> b = welch_bounds(g, lift_tol, va, vb, 0.0)
    >>> bool(b.est[0][0] <= 0.5 <= b.est[1][0]), bool(b.se[0][0] <= b.se[1][0])
    (True, True)
    """
    floor2 = floor * floor
    na = np.maximum(g.n_a, 2).astype(float)
    nb = np.maximum(g.n_b, 2).astype(float)
    va = np.nan_to_num(g.var_a, nan=0.0)
    vb = np.nan_to_num(g.var_b, nan=0.0)
    sa = [np.maximum(va - var_a_tol, floor2) / na, np.maximum(va + var_a_tol, floor2) / na]
    sb = [np.maximum(vb - var_b_tol, floor2) / nb, np.maximum(vb + var_b_tol, floor2) / nb]
    se_lo = np.sqrt(sa[0] + sb[0])
    se_hi = np.sqrt(sa[1] + sb[1])
    dfs = []
    with np.errstate(invalid="ignore", divide="ignore"):
        for a in sa:
            for b in sb:
                dfs.append(
                    np.where(a + b > 0, (a + b) ** 2 / (a**2 / (na - 1) + b**2 / (nb - 1)), np.inf)
                )
    d = np.stack(dfs)
    df_lo, df_hi = d.min(axis=0) * (1 - 1e-9), d.max(axis=0) * (1 + 1e-9)
    est = g.mean_a - g.mean_b
    return EstimateBounds(
        (est - de, est + de),
        (se_lo * (1 - SLACK), se_hi * (1 + SLACK)),
        (df_lo, df_hi),
        se_lo <= 0,
    )


def _defaults(method: str, options: Mapping[str, Any]) -> dict[str, Any]:
    from cogstats.estimators import get_spec

    return {**get_spec(method).defaults, **options}


def running_lift_welch(
    stats: StreamingStats,
    method: str,
    options: Mapping[str, Any],
    judged: Sequence[str],
    level: float,
    held: np.ndarray,
    near: NearDecision,
) -> Attribution:
    """Return the ``lift`` or ``welch`` attribution of ``judged`` from running statistics.

    Parameters
    ----------
    stats : StreamingStats
        The running statistics.
    method : {"lift", "welch"}
        The estimator.
    options : mapping
        The estimator's options (its defaults fill the rest).
    judged : sequence of str
        The lessons to attribute.
    level : float
        The confidence level.
    held : ndarray of bool
        The lessons (of ``judged``) that are not tested: no near-tie recompute.
    near : callable
        ``near(bounds, trials)`` marks the tested lessons whose decision could differ
        within the bounds; their groups are recomputed in run order.

    Examples
    --------
    >>> import numpy as np
    >>> from cogstats.stats import StreamingStats
    >>> s = StreamingStats()
    >>> s.extend((f"r{i}", y, ["a"] * (y > 0.5), {}) for i, y in enumerate([0.9, 0.8, 0.3, 0.4]))
    >>> never = lambda bounds, trials: np.zeros(trials.size, dtype=bool)
    >>> r = running_lift_welch(s, "lift", {}, ["a"], 0.95, np.zeros(1, bool), never)
    >>> round(r.row("a")["estimate"], 6)
    0.5
    """
    from cogstats.estimators.lift import lift_from_stats, welch_from_stats

    opts = _defaults(method, options)
    idx = stats.lesson_index(judged)
    g, lift_tol, var_a_tol, var_b_tol = stats.group_arrays(idx)
    n = stats.n_runs
    floor = float(opts.get("noise_floor_sd", 0.0)) if method == "welch" else 0.0
    # the batch's baseline mean is the additive one (bit for bit ours) for lessons in
    # fewer than half the runs, the run-order one (within lift_tol of ours) otherwise
    de = np.where(2 * g.n_b <= n, lift_tol, 0.0)
    ok = (g.n_a >= 2) & (g.n_b >= 2)
    tested = ok & ~held
    fragile = np.zeros(len(judged), dtype=bool)
    if tested.any():
        t = np.flatnonzero(tested)
        bounds = welch_bounds(g, de, var_a_tol, var_b_tol, floor).take(t)
        fragile[t] = near(bounds, g.n_a[t])
    arrays = {
        "fact_id": np.asarray(judged, dtype=object),
        "n_a": g.n_a.copy(),
        "mean_a": g.mean_a.copy(),
        "var_a": g.var_a.copy(),
        "n_b": g.n_b.copy(),
        "mean_b": g.mean_b.copy(),
        "var_b": g.var_b.copy(),
    }
    if fragile.any():
        ks = np.flatnonzero(fragile)
        exact = stats.batch_group_arrays([int(idx[k]) for k in ks.tolist()])
        for name in ("n_a", "mean_a", "var_a", "n_b", "mean_b", "var_b"):
            arrays[name][ks] = getattr(exact, name)
    if method == "welch":
        return welch_from_stats(
            arrays,
            level,
            floor,
            float(opts["promote_margin"]),
            float(opts["evict_margin"]),
        )
    return lift_from_stats(arrays, level)


def running_ols(
    stats: StreamingStats,
    options: Mapping[str, Any],
    judged: Sequence[str],
    level: float,
    near: NearDecision,
) -> Attribution:
    """Return the classical ``ols`` attribution from the running cross-products.

    Falls back to the batch estimator on :meth:`StreamingStats.to_ledger` (counted in
    ``stats.fallbacks``) where the cross-products cannot promise the batch's result:
    an untrusted identifiability check, a near-singular design, a near exact fit, or a
    tested lesson whose decision could differ within the rounding (``near``).

    Parameters
    ----------
    stats : StreamingStats
        The running statistics, with the cross-products over ``options["covariates"]``.
    options : mapping
        The ``ols`` options (``cov="nonrobust"``, no clusters), as given to the batch
        estimator.
    judged : sequence of str
        The lessons the caller judges (those ``near`` is asked about).
    level : float
        The confidence level.
    near : callable
        ``near(bounds, trials)``, as for :func:`running_lift_welch`.

    Examples
    --------
    >>> import numpy as np
    >>> from cogstats.stats import StreamingStats
    >>> rng = np.random.default_rng(3)
    >>> s = StreamingStats(())
    >>> for i in range(40):
    ...     on = bool(rng.random() < 0.5)
    ...     s.add_run(f"r{i}", 0.4 + 0.3 * on + 0.05 * rng.random(), ["a"] if on else [])
    >>> never = lambda bounds, trials: np.zeros(trials.size, dtype=bool)
    >>> r = running_ols(s, {"cov": "nonrobust"}, ["a"], 0.95, never)
    >>> bool(abs(r.row("a")["estimate"] - 0.3) < 0.05)
    True
    """
    from scipy import linalg

    from cogstats.estimators import Attribution, attribute
    from cogstats.estimators.regression import (
        SINGULAR_PIVOT,
        TableRows,
        normal_solution,
        regression_settings,
        regression_table,
        wald,
    )

    opts = _defaults("ols", options)
    threshold = float(opts["vif_threshold"])

    def batch() -> Attribution:
        stats.fallbacks += 1
        return attribute(stats.to_ledger(), "ols", confidence_level=level, **options)

    reg = stats.regression()
    n = reg.n
    ident, trusted = stats.identifiability(reg, threshold)
    if not trusted:
        return batch()
    keep = ident["identifiable"].to_numpy().astype(bool)
    q = reg.n_controls
    sel = np.concatenate([np.arange(1 + q), 1 + q + np.flatnonzero(keep)])
    xtx = reg.xtx[np.ix_(sel, sel)]
    xty = reg.xty[sel]
    try:
        chol = linalg.cholesky(xtx, lower=True, check_finite=False)
        pivots = np.diag(chol) ** 2 / np.maximum(np.diag(xtx), np.finfo(float).tiny)
        clean_pivots = bool(pivots.min() > OLS_PIVOT) and OLS_PIVOT > SINGULAR_PIVOT
    except linalg.LinAlgError:
        clean_pivots = False
    if not clean_pivots:
        return batch()
    inv, params, rank = normal_solution(xtx, xty)
    df_resid = float(n - rank)
    n_keep = int(keep.sum())
    lesson = slice(sel.size - n_keep, sel.size)
    constant = stats.y_max - stats.y_min == 0
    if constant:
        est = np.zeros(n_keep)
        se = np.zeros(n_keep)
        lo = hi = np.zeros(n_keep)
        pvalue = np.ones(n_keep)
        statistic = np.full(n_keep, np.nan)
        df = df_resid
    elif df_resid <= 0:
        est = params[lesson]
        se = lo = hi = pvalue = statistic = np.full(n_keep, np.nan)
        df = 0.0
    else:
        mean = reg.xty[0] / n
        rss = max(reg.yty - float(params @ xty), 0.0)
        if rss <= OLS_EXACT_FIT * max(reg.yty - n * mean * mean, 0.0):
            return batch()  # a (near) exact fit: the residuals are rounding noise
        scale = rss / df_resid
        est = params[lesson]
        se = np.sqrt(np.maximum(scale * np.diag(inv), 0.0))[lesson]
        df = df_resid
        lo, hi, pvalue, statistic = wald(est, se, df, level)
        # decisions within the streaming rounding of a threshold: recompute in batch
        kept = [f for f, k in zip(reg.fact_ids, keep, strict=True) if k]
        pos = {f: k for k, f in enumerate(kept)}
        tested = [f for f in judged if f in pos]
        if tested:
            t = np.asarray([pos[f] for f in tested], dtype=np.int64)
            e, s = est[t], se[t]
            de = OLS_TOL * (np.abs(e) + s)
            bounds = EstimateBounds(
                (e - de, e + de),
                (s * (1 - OLS_TOL), s * (1 + OLS_TOL)),
                (np.full(t.size, df), np.full(t.size, df)),
                s == 0,
            )
            if near(bounds, stats.trials(tested)).any():
                return batch()

    p = len(reg.fact_ids)
    table = regression_table(
        "ols",
        TableRows(reg.fact_ids, stats.trials(list(reg.fact_ids)), n, ident),
        keep,
        est,
        se,
        lo,
        hi,
        pvalue,
        {"df": np.full(p, df), "statistic": statistic},
    )
    settings = regression_settings(
        covariates=tuple(opts["covariates"]),
        cov="nonrobust",
        cluster=None,
        confidence_level=level,
        vif_threshold=threshold,
        interval="wald",
        reference="t",
    )
    return Attribution("ols", table, settings)


def running_confseq(stats: StreamingStats, options: Mapping[str, Any], level: float) -> Attribution:
    """Return the ``confseq`` attribution of every lesson from confseq's running sums.

    Parameters
    ----------
    stats : StreamingStats
        The running statistics, kept with ``confseq=True``.
    options : mapping
        The ``confseq`` options (its defaults fill the rest).
    level : float
        The confidence level.

    Examples
    --------
    >>> import numpy as np
    >>> from cogstats.stats import StreamingStats
    >>> rng = np.random.default_rng(5)
    >>> s = StreamingStats(confseq=True)
    >>> for i in range(160):
    ...     on = bool(rng.random() < 0.5)
    ...     s.add_run(f"r{i}", 0.5 + 0.2 * on + 0.05 * rng.random(), ["a"] if on else [])
    >>> row = running_confseq(s, {"propensity": "none"}, 0.95).row("a")
    >>> from cogstats import attribute
    >>> batch = attribute(s.to_ledger(), method="confseq", propensity="none").row("a")
    >>> bool(row["ci_low"] > 0), row["runs"] == batch["runs"], row["ci_low"] == batch["ci_low"]
    (True, True, True)
    """
    from cogstats.estimators import Attribution, make_table
    from cogstats.estimators.confseq import (
        OUTCOME_MODELS,
        PROPENSITY_MODES,
        pseudo_outcome_variance,
        resolve_rho,
        studentised_sequence,
        two_sample_variance,
    )

    opts = _defaults("confseq", options)
    rho = resolve_rho(opts["rho"], opts["target_runs"], level)
    model = check_choice("outcome_model", opts["outcome_model"], OUTCOME_MODELS)
    propensity = check_choice("propensity", opts["propensity"], PROPENSITY_MODES)
    has = "eligible_ids" in stats.covariates and "propensities" in stats.covariates
    mode = propensity
    if propensity == "logged" and not has:
        raise ParameterError(
            "method 'confseq': propensity='logged' needs the ledger columns eligible_ids "
            f"and propensities; this ledger has covariates {stats.covariates!r} (use "
            "propensity='none' or 'auto')"
        )
    if propensity == "auto":
        mode = (
            "logged"
            if has and all(v is not None for v in stats.covariate_values("eligible_ids"))
            else "none"
        )
    sums = stats.confseq
    if sums is None:
        raise ParameterError(
            "running_confseq needs running statistics kept with confseq=True "
            "(StreamingStats(confseq=True)); got them without confseq's sums"
        )
    sums.fit(len(stats.table_ids))
    idx = stats.order()
    fact_ids = list(stats.fact_ids)
    a = sums.a
    if mode == "none":
        n1, n0 = a["b_n1"][idx], a["b_n0"][idx]
        est, v, ready = two_sample_variance(
            n1, n0, a["b_s1"][idx], a["b_s0"][idx], a["b_q1"][idx], a["b_q0"][idx]
        )
        n = n1 + n0
        n_i, n1_i, n0_i = n.astype(np.int64), n1.astype(np.int64), n0.astype(np.int64)
    else:
        pre = "a_" if model == "running_means" else "i_"
        n_f = a[pre + "n"][idx]
        est, v = pseudo_outcome_variance(n_f, a[pre + "s"][idx], a[pre + "q"][idx])
        n_i = n_f.astype(np.int64)
        n1_i = a[pre + "c1"][idx].astype(np.int64)
        n0_i = n_i - n1_i
        ready = n_i > 0
    lo, hi, pval, se = studentised_sequence(est, v, n_i, ready, rho, 1.0 - level)
    estimate = np.where(n_i > 0, est, np.nan)
    table = make_table(
        "confseq",
        {
            "fact_id": fact_ids,
            "estimate": estimate,
            "std_error": se,
            "ci_low": lo,
            "ci_high": hi,
            "pvalue": pval,
            "trials": n1_i,
            "baseline_runs": n0_i,
            "runs": n_i,
            "cs_width": hi - lo,
        },
    )
    settings = {
        "confidence_level": level,
        "target_runs": opts["target_runs"],
        "rho": rho,
        "outcome_model": model,
        "propensity": propensity,
        "propensity_used": mode,
        "interval": "confidence_sequence",
    }
    return Attribution("confseq", table, settings)


def running_identifiability(stats: StreamingStats) -> pl.DataFrame:
    """Return each lesson's identifiability (``fact_id``, ``identifiable``) from running sums.

    From the cross-products (:meth:`StreamingStats.identifiability`, the default variance
    inflation threshold) where they give the batch check's flags; otherwise the batch
    check on :meth:`StreamingStats.to_ledger` (counted in ``stats.fallbacks``).

    Examples
    --------
    >>> from cogstats.stats import StreamingStats
    >>> s = StreamingStats(())
    >>> for i, ids in enumerate([["a", "b"], ["a", "b"], ["c"], [], ["a", "b", "c"]]):
    ...     s.add_run(f"r{i}", 0.1 * i, ids)
    >>> running_identifiability(s)["identifiable"].to_list()
    [False, False, True]
    """
    from cogstats.estimators.identifiability import DEFAULT_VIF_THRESHOLD, check_identifiability

    reg = stats.regression()
    frame, trusted = stats.identifiability(reg, DEFAULT_VIF_THRESHOLD)
    if not trusted:
        stats.fallbacks += 1
        frame = check_identifiability(stats.to_ledger())
    return frame.select("fact_id", "identifiable")
