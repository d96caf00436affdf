"""Debiased ridge: each lesson's effect with every co-injected lesson shrunk but its own.

A gate that looks after every run meets ledgers with more lessons than runs: at run 11 of
the poison crater (docs/benchmarks.md, S2) some 20 lessons have been tried in 11 runs.
Ordinary least squares cannot separate them; marginal lift blames every lesson that shared
a run with a poison.  This estimator fits

    score = b0 + covariates + sum_j beta_j x_j + error

by ridge regression with penalty ``k`` on every lesson coefficient (``k`` pseudo-runs at
effect 0; the intercept and the covariates are not penalized) and reports for lesson ``j``
the estimate with *its own* penalty removed: the coefficient of ``j`` in the model where
``j`` is free and the others are shrunk.  With ``M = (Z'Z + K)^-1`` and the ridge
coefficients ``b``, the Sherman-Morrison identity gives it without a refit:

    own_j = 1 - k_j M_jj,   estimate_j = b_j / own_j,   var_j = s^2 M_jj / own_j,

and ``info_j = 1 / M_jj - k_j`` is the precision (in runs, times 1/s^2) that the data
alone give lesson ``j`` after the others.  For a single lesson (no others) this is the
pooled two-sample t test exactly.

Two passes (``passes=2``, the default): the second leaves unpenalized the lessons the
first shows clearly harmful (``t < -suspect_z`` with at least ``min_share`` of their raw
information left after the others), so that a poison's effect is not shared out among the
lessons that happened to run beside it.

The residual variance is ``s^2 = RSS / (n - tr H)`` (``H`` the ridge hat matrix), with
``n - tr H`` degrees of freedom for the t reference.  An optional noise prior (a score
noise level known from earlier ledgers, ``noise_prior_sd``, worth ``noise_prior_runs``
runs) is pooled in as a conjugate prior: ``s^2 = (RSS + v0 s0^2) / (n - tr H + v0)`` on
``n - tr H + v0`` degrees of freedom.  Without it the estimator assumes nothing about the
noise.

Held as not identifiable (null inference): a lesson in every run, and lessons that share
one inclusion pattern (``G_jj = G_kk = G_jk`` in the Gram matrix); other near-collinearity
shows as a large standard error.

Every number comes from the sufficient statistics ``Z'Z``, ``Z'y``, ``y'y`` and the run
count (:class:`RidgeStatistics`), accumulated in run order, and the inverse is a
Gauss-Jordan elimination written with elementwise operations and sequential sums: the
simulator's compiled kernel (:mod:`cogstats.sim._loop`) does the same arithmetic in the
same order, so the two engines agree bit for bit, and a streaming gate can keep the
statistics instead of the ledger.  Above ``EXACT_COLUMNS`` columns (far beyond any
simulated scenario) the inverse and the products go to LAPACK and BLAS instead: the same
numbers to rounding (tested to 1e-9), about 15 times faster at 1,000 lessons.  Above
``SPARSE_LESSONS`` lessons the statistics keep ``Z'Z`` sparse and each pass solves and
inverts selectively on it (:mod:`cogstats.estimators._ridge_sparse`), without a ``p x p``
array: the same numbers to rounding (tested to 1e-9 of the largest value, with the same
gate decisions, at 200 and 2,000 lessons).

Cost: O(runs x (lessons-per-run + covariates)^2) for the statistics; dense, O(p^3) per
pass and memory O(p^2) (``p`` = 1 + covariate columns + lessons tried); sparse, O(p (s^2
+ r^2)) per pass and memory O(nonzeros + p (s + r)), ``s`` the span of lessons that run
together in order of arrival and ``r`` the lessons kept far longer than the others
(about 1 GB and 20 s single-threaded at 100,000 runs x 20,000 lessons;
benchmarks/wide_recommended.py).

Validation (tests/unit/test_recommended.py): the closed form against a direct refit
with the lesson's penalty removed (numpy least squares on the augmented system), the
single-lesson case against scipy's pooled two-sample t test, and ``penalty -> 0`` against
statsmodels OLS.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import sparse as sp
from scipy import special

from cogstats._validation import ParameterError, check_int, check_probability, check_real
from cogstats.estimators._base import Attribution, make_table, register
from cogstats.estimators._ridge_sparse import Layout, equal_patterns, layout, sparse_pass
from cogstats.ledger import Ledger
from cogstats.numerics import where

__all__ = [
    "SPARSE_LESSONS",
    "RidgeFit",
    "RidgeStatistics",
    "debiased_ridge",
    "duplicate_groups",
    "gram_diagonal",
    "gram_take",
    "lesson_inference",
    "not_identifiable",
    "ridge_fit",
    "ridge_statistics",
    "suspect_penalties",
]

#: Pivots below this (relative to the matrix's largest diagonal) count as singular.
_SINGULAR = 1e-12
#: Up to this many columns the inverse is the elementwise Gauss-Jordan elimination that
#: the compiled kernel mirrors bit for bit; above it, LAPACK (O(p^3) either way, but at
#: 1,000 lessons two passes take about 3 s one way and 0.2 s the other).
EXACT_COLUMNS = 256
#: ``1 - k_j M_jj`` below this counts as 0 on the sparse path (no information of its own)
_OWN_ROUNDING = 1e-9
#: Above this many lessons :func:`ridge_statistics` keeps the Gram matrix sparse and the
#: fit takes the sparse pass (:mod:`cogstats.estimators._ridge_sparse`): memory that grows
#: with the ledger instead of the square of the lesson count, the same numbers to rounding.
SPARSE_LESSONS = 1000


def gram_diagonal(gram: Any) -> np.ndarray:
    """Return the diagonal of a Gram matrix held dense (numpy) or sparse (scipy).

    Examples
    --------
    >>> from scipy import sparse
    >>> gram_diagonal(sparse.csr_array(np.array([[2.0, 1.0], [1.0, 3.0]]))).tolist()
    [2.0, 3.0]
    """
    if sp.issparse(gram):
        return np.asarray(gram.diagonal(), dtype=np.float64)
    return np.diag(gram).copy()


def gram_take(gram: Any, sel: np.ndarray) -> Any:
    """Return rows and columns ``sel`` of a Gram matrix, in its form (dense or sparse).

    Examples
    --------
    >>> g = np.arange(9.0).reshape(3, 3)
    >>> gram_take(g, np.array([0, 2])).tolist()
    [[0.0, 2.0], [6.0, 8.0]]
    """
    sel = np.asarray(sel, dtype=np.int64)
    if sp.issparse(gram):
        return sp.csr_array(sp.csr_array(gram)[sel, :][:, sel])
    return gram[np.ix_(sel, sel)]


@dataclass(frozen=True)
class RidgeStatistics:
    """The sufficient statistics of the regression, accumulated in run order.

    Attributes
    ----------
    gram : numpy.ndarray or scipy.sparse.csr_array
        ``Z'Z`` for ``Z = [1, covariate columns, lesson indicators]`` (``p x p``), sparse
        above ``SPARSE_LESSONS`` lessons (:func:`ridge_statistics`).
    zty : numpy.ndarray
        ``Z'y``.
    yty : float
        ``y'y``.
    runs : int
        Number of runs.
    n_fixed : int
        Unpenalized leading columns (the intercept and the covariate columns).
    fact_ids : tuple of str
        The lessons of the lesson columns, in order (of first appearance).
    covariates : tuple of str
        The covariate columns, in order.
    """

    gram: Any
    zty: np.ndarray
    yty: float
    runs: int
    n_fixed: int
    fact_ids: tuple[str, ...]
    covariates: tuple[str, ...]

    @property
    def trials(self) -> np.ndarray:
        """Runs with each lesson (the Gram matrix's lesson diagonal)."""
        f = self.n_fixed
        return np.rint(gram_diagonal(self.gram)[f:]).astype(np.int64)


@dataclass(frozen=True)
class RidgeFit:
    """Per-lesson results of :func:`ridge_fit` (arrays aligned with the lesson columns).

    Attributes
    ----------
    estimate, std_error, t : numpy.ndarray
        The debiased estimate, its standard error and their ratio (NaN when not
        identifiable or without residual degrees of freedom).
    info : numpy.ndarray
        The data's precision for each lesson after the others (runs; see the module).
    identifiable : numpy.ndarray
        False for a lesson in every run or sharing its inclusion pattern with another.
    penalized : numpy.ndarray
        Whether the lesson's coefficient was penalized in the final pass.
    df : numpy.ndarray
        Residual degrees of freedom of each lesson's t reference (the model with its own
        coefficient free; NaN below 1).
    sigma : numpy.ndarray
        The residual standard deviation of that model.
    """

    estimate: np.ndarray
    std_error: np.ndarray
    t: np.ndarray
    info: np.ndarray
    identifiable: np.ndarray
    penalized: np.ndarray
    df: np.ndarray
    sigma: np.ndarray


def _seqsum(x: np.ndarray) -> float:
    """Sum in index order (the order the compiled kernel adds in)."""
    if x.size == 0:
        return 0.0
    return float(np.cumsum(x)[-1])


def gauss_jordan_inverse(a: np.ndarray) -> np.ndarray | None:
    """Inverse of a symmetric positive definite matrix by Gauss-Jordan elimination.

    Written with elementwise operations only (no BLAS reductions), in the order of
    ``cogstats.sim._loop``'s copy, so that both give the same bits.  Returns None when
    a pivot is not positive (relative to the largest diagonal).

    Examples
    --------
    >>> a = np.array([[4.0, 2.0], [2.0, 3.0]])
    >>> np.allclose(gauss_jordan_inverse(a) @ a, np.eye(2))
    True
    """
    p = a.shape[0]
    aug = np.zeros((p, 2 * p))
    aug[:, :p] = a
    aug[np.arange(p), p + np.arange(p)] = 1.0
    scale = float(np.max(np.abs(np.diag(a)))) if p else 0.0
    for k in range(p):
        piv = aug[k, k]
        if not piv > _SINGULAR * scale:
            return None
        aug[k, :] = aug[k, :] / piv
        factors = aug[:, k].copy()
        factors[k] = 0.0
        aug -= factors[:, None] * aug[k][None, :]
    return aug[:, p:].copy()


def ridge_statistics(
    ledger: Ledger, covariates: Sequence[str] = (), *, sparse: bool | None = None
) -> RidgeStatistics:
    """Return the sufficient statistics of ``score ~ 1 + covariates + lessons``.

    Covariates are coded by :func:`~cogstats.estimators.identifiability.covariate_design`
    (numbers linearly, strings and booleans as dummies; constant columns left out).
    ``sparse`` keeps the Gram matrix as a ``scipy.sparse.csr_array`` (default: above
    ``SPARSE_LESSONS`` lessons), which :func:`ridge_fit` fits without a ``p x p`` array.

    Examples
    --------
    >>> from cogstats import Ledger
    >>> ledger = Ledger.from_records([
    ...     {"run_id": "r1", "score": 0.9, "fact_ids": ["a"]},
    ...     {"run_id": "r2", "score": 0.5, "fact_ids": []},
    ... ])
    >>> st = ridge_statistics(ledger)
    >>> st.gram.tolist(), st.zty.tolist(), st.trials.tolist()
    ([[2.0, 1.0], [1.0, 1.0]], [1.4, 0.9], [1])
    """
    from cogstats.estimators.identifiability import covariate_design

    y = np.asarray(ledger.scores, dtype=np.float64)
    n = len(y)
    design = covariate_design(ledger, tuple(covariates))
    fixed = np.ones((n, 1 + len(design.columns)))
    if design.columns:
        fixed[:, 1:] = design.matrix
    ids, rows, cols = ledger._facts_index()
    n_les = len(ids)
    f = fixed.shape[1]
    p = f + n_les
    if sparse is None:
        sparse = n_les > SPARSE_LESSONS
    fixed_gram = np.zeros((f, f))
    cross = np.zeros((f, n_les))
    zty = np.zeros(p)
    for a in range(f):
        for b in range(a, f):
            fixed_gram[a, b] = fixed_gram[b, a] = _seqsum(fixed[:, a] * fixed[:, b])
        zty[a] = _seqsum(fixed[:, a] * y)
        if n_les:
            # bincount adds its weights in input order: run order, as the kernel does
            cross[a] = np.bincount(cols, weights=fixed[rows, a], minlength=n_les)
    x = sp.csr_array((np.ones(len(rows)), (rows, cols)), shape=(n, n_les), dtype=np.float64)
    co = sp.csr_array(x.T @ x)  # co-occurrence counts: exact in any order
    if n_les:
        zty[f:] = np.bincount(cols, weights=y[rows], minlength=n_les)
    gram: Any
    if sparse:
        blocks = [[sp.csr_array(fixed_gram), sp.csr_array(cross)], [sp.csr_array(cross.T), co]]
        gram = sp.csr_array(sp.block_array(blocks, format="csr"))
        gram.sort_indices()
    else:
        gram = np.zeros((p, p))
        gram[:f, :f] = fixed_gram
        gram[:f, f:] = cross
        gram[f:, :f] = cross.T
        gram[f:, f:] = co.toarray()
    return RidgeStatistics(
        gram=gram,
        zty=zty,
        yty=_seqsum(y * y),
        runs=n,
        n_fixed=f,
        fact_ids=tuple(ids),
        covariates=tuple(design.columns),
    )


def not_identifiable(gram: np.ndarray, f: int, runs: int) -> np.ndarray:
    """Per lesson column, whether it is held as not identifiable.

    A lesson in every run or in none, or one sharing its inclusion pattern with another
    lesson (``G_jj = G_kk = G_jk`` in the Gram matrix), has no effect of its own.  Plain
    numpy and loops, so that the simulator's kernel compiles this very function
    (the recommended gate's compiled piece).

    Examples
    --------
    >>> g = np.array([[4.0, 2, 2, 1], [2, 2, 2, 1], [2, 2, 2, 1], [1, 1, 1, 1]])
    >>> not_identifiable(g, 1, 4).tolist()
    [True, True, False]
    """
    m = gram.shape[0] - f
    bad = np.zeros(m, dtype=np.bool_)
    diag = np.diag(gram)[f:]
    for i in range(m):
        if diag[i] >= runs or diag[i] <= 0:
            bad[i] = True
            continue
        for j in range(i + 1, m):
            if diag[j] == diag[i] and gram[f + i, f + j] == diag[i]:
                bad[i] = True
                bad[j] = True
    return bad


def duplicate_groups(gram: np.ndarray, f: int, runs: int) -> np.ndarray:
    """Per lesson column, the first column with the same inclusion pattern (itself if none).

    Two lesson columns share a pattern when their runs are the same (``G_jj = G_kk =
    G_jk`` in the Gram matrix); a lesson in every run or in none is its own group (it is
    not identifiable whatever is merged).  Plain numpy and loops, so that the simulator's
    kernel compiles this very function (:mod:`cogstats.gates.recommended.kernel`).

    Examples
    --------
    >>> g = np.array([[4.0, 2, 2, 1], [2, 2, 2, 1], [2, 2, 2, 1], [1, 1, 1, 1]])
    >>> duplicate_groups(g, 1, 4).tolist()
    [0, 0, 2]
    """
    m = gram.shape[0] - f
    rep = np.arange(m)
    diag = np.diag(gram)[f:]
    for i in range(m):
        if rep[i] != i or diag[i] >= runs or diag[i] <= 0:
            continue
        for j in range(i + 1, m):
            if rep[j] == j and diag[j] == diag[i] and gram[f + i, f + j] == diag[i]:
                rep[j] = i
    return rep


def _groups(stats: RidgeStatistics) -> np.ndarray:
    """:func:`duplicate_groups` of the statistics, from the sparse pattern when sparse."""
    if not sp.issparse(stats.gram):
        return duplicate_groups(stats.gram, stats.n_fixed, stats.runs)
    i, j, _ = equal_patterns(stats.gram, stats.n_fixed, stats.runs)
    rep = np.arange(stats.gram.shape[0] - stats.n_fixed)
    np.minimum.at(rep, j, i)  # equal patterns are cliques: the smallest member of each
    return rep


def _not_identifiable(stats: RidgeStatistics) -> np.ndarray:
    """:func:`not_identifiable` of the statistics, from the sparse pattern when sparse."""
    if not sp.issparse(stats.gram):
        return not_identifiable(stats.gram, stats.n_fixed, stats.runs)
    i, j, bad = equal_patterns(stats.gram, stats.n_fixed, stats.runs)
    bad = bad.copy()
    bad[i] = True
    bad[j] = True
    return bad


def _grouped_fit(stats: RidgeStatistics, rep: np.ndarray, **options: Any) -> RidgeFit:
    """Fit with every group of lessons that share a pattern merged into one column.

    The group's column is its members' common indicator: the fit on the reduced
    statistics is the fit of ``score ~ 1 + covariates + one coefficient per group`` (the
    group's total effect, free in its own test, the others shrunk).  Members of a group
    of two or more stay not identifiable (no estimate or standard error of their own) but
    carry the group's ``t``, ``info``, ``df`` and ``sigma``: a lenient test of the group
    can act on them all.
    """
    f = stats.n_fixed
    m = rep.shape[0]
    keep = np.flatnonzero(rep == np.arange(m))
    sel = np.concatenate([np.arange(f), f + keep])
    reduced = RidgeStatistics(
        gram=gram_take(stats.gram, sel),
        zty=stats.zty[sel],
        yty=stats.yty,
        runs=stats.runs,
        n_fixed=f,
        fact_ids=tuple(stats.fact_ids[i] for i in keep) if stats.fact_ids else (),
        covariates=stats.covariates,
    )
    fit = ridge_fit(reduced, **options)
    pos = np.zeros(m, dtype=np.int64)
    pos[keep] = np.arange(keep.shape[0])
    at = pos[rep]
    size = np.bincount(rep, minlength=m)[rep]
    alone = size == 1
    nan = np.full(m, np.nan)
    return RidgeFit(
        estimate=np.where(alone, fit.estimate[at], nan),
        std_error=np.where(alone, fit.std_error[at], nan),
        t=fit.t[at],
        info=fit.info[at],
        identifiable=alone & fit.identifiable[at],
        penalized=fit.penalized[at],
        df=fit.df[at],
        sigma=fit.sigma[at],
    )


def _one_pass(
    st: RidgeStatistics,
    penalties: np.ndarray,
    prior_ss: float,
    prior_runs: float,
    lay: Layout | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """Fit one pass: per lesson (estimate, se, t, info, df, sigma), or None if singular.

    Each lesson's inference is that of the model with its own coefficient free, its
    residual sum of squares and degrees of freedom included.  A sparse Gram matrix takes
    the sparse pass on ``lay`` (its :func:`~cogstats.estimators._ridge_sparse.layout`).
    """
    f = st.n_fixed
    p = st.gram.shape[0]
    if sp.issparse(st.gram):
        got = sparse_pass(st.gram, f, penalties, st.zty, lay or layout(st.gram, f), _SINGULAR)
        if got is None:
            return None
        b, mdiag, mkb, mkm, trace = got
        # a lesson the data do not separate from the others (one in every run) has
        # k_j M_jj = 1 exactly; the dense inverse rounds to it, these solves to within 1e-12
        lesson = mdiag[f:]
        none = penalties * lesson > 1.0 - _OWN_ROUNDING
        lesson[none] = 1.0 / penalties[none]
        rss = st.yty - 2.0 * float(b @ st.zty) + float(b @ (st.gram @ b))
        return _lesson_out(st, b, mdiag, penalties, mkb, mkm, rss, trace, prior_runs, prior_ss)
    a = st.gram.copy()
    for i in range(f, p):
        a[i, i] = a[i, i] + penalties[i - f]
    kvec = np.zeros(p)
    kvec[f:] = penalties
    if p <= EXACT_COLUMNS:
        m = gauss_jordan_inverse(a)
        if m is None:
            return None
        b = np.cumsum(m * st.zty[None, :], axis=1)[:, -1]
        gb = np.cumsum(st.gram * b[None, :], axis=1)[:, -1]
        rss = st.yty - 2.0 * _seqsum(b * st.zty) + _seqsum(b * gb)
        trace = _seqsum(np.cumsum(m * st.gram.T, axis=1)[:, -1])
        # for the model with lesson j's penalty removed (Sherman-Morrison): with c_j =
        # k_j b_j / own_j, RSS_j = RSS - 2 c_j (M K b)_j + c_j^2 (M_jj - (M K M)_jj) and
        # tr H_j = tr H + k_j (M_jj - (M K M)_jj) / own_j
        mkb = np.cumsum(m * (kvec * b)[None, :], axis=1)[:, -1]
        mkm = np.cumsum((m * m) * kvec[None, :], axis=1)[:, -1]
    else:  # LAPACK and BLAS: the same numbers to rounding, orders of magnitude faster
        try:  # positive definite with no pivot below the singular threshold, else singular
            chol = np.linalg.cholesky(a)
        except np.linalg.LinAlgError:
            return None
        if not np.min(np.diag(chol) ** 2) > _SINGULAR * float(np.max(np.diag(a))):
            return None
        m = np.linalg.inv(a)
        b = m @ st.zty
        rss = st.yty - 2.0 * float(b @ st.zty) + float(b @ (st.gram @ b))
        trace = float(np.sum(m * st.gram.T))
        mkb = m @ (kvec * b)
        mkm = (m * m) @ kvec
    return _lesson_out(st, b, np.diag(m), penalties, mkb, mkm, rss, trace, prior_runs, prior_ss)


def _lesson_out(
    st: RidgeStatistics,
    b: np.ndarray,
    mdiag: np.ndarray,
    penalties: np.ndarray,
    mkb: np.ndarray,
    mkm: np.ndarray,
    rss: float,
    trace: float,
    prior_runs: float,
    prior_ss: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each lesson's inference (:func:`lesson_inference`) from one pass's quantities."""
    f = st.n_fixed
    with np.errstate(divide="ignore", invalid="ignore"):
        est, se, t, info, df, s2 = lesson_inference(
            b[f:],
            mdiag[f:],
            penalties,
            mkb[f:],
            mkm[f:],
            rss,
            trace,
            st.runs,
            prior_runs,
            prior_ss,
        )
    return est, se, t, info, df, np.sqrt(s2)


# ---------------------------------------------------------------------- written once
# Plain functions of numbers or numpy arrays (elementwise): ridge_fit calls them on every
# lesson at once, and the simulator's kernel (the recommended gate's piece) compiles the
# very same functions and calls them lesson by lesson.


def lesson_inference(
    b: Any,
    mjj: Any,
    pen: Any,
    mkb: Any,
    mkm: Any,
    rss: float,
    trace: float,
    runs: float,
    prior_runs: float,
    prior_ss: float,
) -> tuple[Any, Any, Any, Any, Any, Any]:
    """Return each lesson's debiased estimate, se, t, info, df and residual variance.

    From one pass of the ridge (the module docstring): the lesson's ridge coefficient
    ``b``, ``M_jj``, its penalty ``k_j``, ``(M K b)_j``, ``(M K M)_jj``, the pass's RSS
    and hat-matrix trace, and the noise prior.  With ``c_j = k_j b_j / own_j``
    (Sherman-Morrison, ``own_j = 1 - k_j M_jj``): ``RSS_j = RSS - 2 c_j (M K b)_j + c_j^2
    (M_jj - (M K M)_jj)`` and ``tr H_j = tr H + k_j (M_jj - (M K M)_jj) / own_j``.  NaN
    where undefined (``own_j <= 0``, ``M_jj <= 0``, fewer than one degree of freedom; t
    also where se is 0).  Numbers or numpy arrays, elementwise.

    Examples
    --------
    >>> est, se, t, info, df, s2 = lesson_inference(
    ...     0.1, 0.25, 0.0, 0.0, 0.0, 2.0, 2.0, 10, 0.0, 0.0)  # an unpenalized lesson
    >>> float(est), float(df), float(s2), float(info)
    (0.1, 8.0, 0.25, 4.0)
    """
    info = where(mjj > 0.0, 1.0 / where(mjj > 0.0, mjj, 1.0) - pen, np.nan)
    own = 1.0 - pen * mjj
    ok = (own > 0.0) & (mjj > 0.0)
    safe_own = where(ok, own, 1.0)
    c = where(ok, pen * b / safe_own, 0.0)
    gap = mjj - mkm
    rss_j = rss - 2.0 * c * mkb + c * c * gap
    df = runs - (trace + where(ok, pen * gap / safe_own, 0.0)) + prior_runs
    ok = ok & (df >= 1.0)
    s2 = where(ok, (np.maximum(rss_j, 0.0) + prior_ss) / where(ok, df, 1.0), np.nan)
    est = where(ok, b / safe_own, np.nan)
    se = where(ok, np.sqrt(where(ok, s2 * mjj / safe_own, 0.0)), np.nan)
    pos = ok & (se > 0.0)
    t = where(pos, est / where(pos, se, 1.0), np.nan)
    return est, se, t, info, where(ok, df, np.nan), s2


def suspect_penalties(
    identifiable: Any,
    t: Any,
    info: Any,
    raw_info: Any,
    suspect_z: float,
    min_share: float,
    penalty: float,
    helpful_min_info: float = np.inf,
) -> Any:
    """Return each lesson's penalty in the next pass: 0 for a clear suspect, else ``penalty``.

    A clear suspect is identifiable, has ``t < -suspect_z`` and keeps at least
    ``min_share`` of its raw information (its trials, ``raw_info``) after the others.
    A lesson as clearly helpful (``t > suspect_z``, the same share) whose information
    after the others is at least ``helpful_min_info`` runs is left unpenalized too
    (default infinite: never).  Shrunk, a strong lesson's effect is shared out among the
    lessons that ran beside it and, where a prompt holds a fixed number of lessons,
    charged to the lessons that displaced it, so that a null lesson looks harmful: on
    400-run ledgers with two lessons at -0.15, four at +0.05..+0.10 and 24 null ones, 3-6
    a run, the null lessons' mean estimate was -0.008 against ordinary least squares'
    -0.002, and 6 of 192 were convicted.  The information floor, because early in a
    ledger a lesson that missed a crater looks helpful: freed on its t alone, it took
    part of the blame off the poisons (the lifecycle preset's single-poison regret rose
    by 0.0015).

    Examples
    --------
    >>> suspect_penalties(np.array([True, True, False]), np.array([-4.0, -1.0, -4.0]),
    ...                   np.array([5.0, 5.0, 5.0]), np.array([8.0, 8.0, 8.0]),
    ...                   2.5, 0.3, 40.0).tolist()
    [0.0, 40.0, 40.0]
    >>> suspect_penalties(np.array([True, True]), np.array([4.0, 4.0]), np.array([6.0, 4.0]),
    ...                   np.array([8.0, 8.0]), 2.5, 0.3, 40.0, 5.0).tolist()
    [0.0, 40.0]
    """
    clear = (t < -suspect_z) | ((t > suspect_z) & (info >= helpful_min_info))
    strong = identifiable & clear & (info >= min_share * raw_info)
    return where(strong, 0.0, penalty)


def ridge_fit(
    stats: RidgeStatistics,
    *,
    penalty: float = 40.0,
    passes: int = 2,
    suspect_z: float = 2.5,
    min_share: float = 0.3,
    noise_prior_sd: float | None = None,
    noise_prior_runs: float = 0.0,
    group_duplicates: bool = False,
    helpful_min_info: float = np.inf,
) -> RidgeFit:
    """Debiased ridge estimates from sufficient statistics (see the module docstring).

    Parameters
    ----------
    stats : RidgeStatistics
        From :func:`ridge_statistics` (or kept by a streaming gate).
    penalty : float
        Ridge penalty ``k`` on each lesson coefficient, in pseudo-runs (> 0).
    passes : int
        1: every lesson penalized; 2 or more: after each pass, lessons shown clearly
        harmful (``t < -suspect_z``, info share at least ``min_share``) are left
        unpenalized in the next.
    suspect_z, min_share : float
        See ``passes``.
    noise_prior_sd, noise_prior_runs : float
        An optional conjugate prior on the noise: its standard deviation and its weight in
        runs (both or neither).
    group_duplicates : bool
        Merge the lessons that share an inclusion pattern into one column (their group's
        effect; :func:`duplicate_groups`) instead of penalizing each: the members stay
        not identifiable but carry the group's ``t`` (default False: each member
        penalized, no ``t``).  With the members penalized, a group that hurts is shrunk
        and its harm leaks into the free coefficient of every lesson that ran beside it.
    helpful_min_info : float
        Also leave unpenalized, after a pass, the lessons shown clearly helpful
        (``t > suspect_z``, the same share) with at least this information, in runs
        (:func:`suspect_penalties`).  Default infinite (the first recommended gate's
        fit); the lifecycle gate sets its ``max_information``.

    Returns
    -------
    RidgeFit

    Examples
    --------
    >>> from cogstats import Ledger
    >>> ledger = Ledger.from_records(
    ...     {"run_id": f"r{i}", "score": 0.5 + 0.2 * (i % 2) + 0.01 * (i % 3),
    ...      "fact_ids": ["a"] if i % 2 else []} for i in range(10))
    >>> fit = ridge_fit(ridge_statistics(ledger))  # one lesson: the two-sample t test
    >>> round(float(fit.estimate[0]), 6), round(float(fit.df[0]), 9)
    (0.198, 8.0)
    """
    if group_duplicates:
        rep = _groups(stats)
        if not np.array_equal(rep, np.arange(rep.shape[0])):
            return _grouped_fit(
                stats,
                rep,
                penalty=penalty,
                passes=passes,
                suspect_z=suspect_z,
                min_share=min_share,
                noise_prior_sd=noise_prior_sd,
                noise_prior_runs=noise_prior_runs,
                helpful_min_info=helpful_min_info,
            )
    opts = check_options(penalty, passes, suspect_z, min_share, noise_prior_sd, noise_prior_runs)
    k = float(opts["penalty"])  # type: ignore[arg-type]
    passes = int(opts["passes"])  # type: ignore[call-overload]
    f = stats.n_fixed
    m = stats.gram.shape[0] - f
    prior_runs = float(noise_prior_runs)
    prior_ss = 0.0 if noise_prior_sd is None else prior_runs * float(noise_prior_sd) ** 2
    wide = sp.issparse(stats.gram)
    ident = ~_not_identifiable(stats)
    pen = np.full(m, k)
    raw_info = gram_diagonal(stats.gram)[f:] if m else np.zeros(0)
    lay = layout(stats.gram, f) if wide else None
    out = None
    for step in range(passes):
        out = _one_pass(stats, pen, prior_ss, prior_runs, lay)
        if out is None or step == passes - 1:
            break
        t, info = out[2], out[3]
        with np.errstate(invalid="ignore"):
            new = suspect_penalties(
                ident, t, info, raw_info, suspect_z, min_share, k, float(helpful_min_info)
            )
        if np.array_equal(new, pen):
            break
        pen = new
    nan = np.full(m, np.nan)
    if out is None:  # singular with every lesson penalized: the covariates are collinear
        return RidgeFit(nan, nan, nan, nan, ident, pen > 0, nan, nan)
    est, se, t, info, df, sigma = out
    keep = ident & np.isfinite(se) & (se > 0)
    return RidgeFit(
        estimate=np.where(ident, est, np.nan),
        std_error=np.where(keep, se, np.nan),
        t=np.where(keep, t, np.nan),
        info=info,
        identifiable=ident,
        penalized=pen > 0,
        df=df,
        sigma=sigma,
    )


def _real(
    name: str, value: Any, *, minimum: float | None = None, maximum: float | None = None
) -> float:
    """Return a validated real number (``check_real`` without the optional None)."""
    out = check_real(name, value, minimum=minimum, maximum=maximum)
    if out is None:  # pragma: no cover - not optional
        raise ParameterError(f"{name} is required")
    return float(out)


def _check_prior(sd: float | None, runs: float) -> tuple[float | None, float]:
    runs = _real("noise_prior_runs", runs, minimum=0.0)
    if sd is None:
        if runs:
            raise ParameterError(
                f"noise_prior_runs is {runs:g} but noise_prior_sd is not set; set both "
                "(a noise level known from earlier ledgers and its weight in runs) or neither"
            )
        return None, 0.0
    sd = _real("noise_prior_sd", sd, minimum=0.0)
    if not sd > 0 or not runs > 0:
        raise ParameterError(
            f"noise_prior_sd must be > 0 with noise_prior_runs > 0; got {sd!r} and {runs!r}"
        )
    return sd, runs


def check_options(
    penalty: float,
    passes: int,
    suspect_z: float,
    min_share: float,
    noise_prior_sd: float | None,
    noise_prior_runs: float,
) -> dict[str, object]:
    """Validate the options shared by the estimator and the recommended gate."""
    k = _real("penalty", penalty, minimum=0.0)
    if not k > 0:
        raise ParameterError(f"penalty must be > 0 (pseudo-runs per lesson); got {penalty!r}")
    sd, runs = _check_prior(noise_prior_sd, noise_prior_runs)
    return {
        "penalty": k,
        "passes": int(check_int("passes", passes, minimum=1) or 1),
        "suspect_z": _real("suspect_z", suspect_z, minimum=0.0),
        "min_share": _real("min_share", min_share, minimum=0.0, maximum=1.0),
        "noise_prior_sd": sd,
        "noise_prior_runs": runs,
    }


@register(
    "debiased_ridge",
    defaults={
        "covariates": (),
        "penalty": 40.0,
        "passes": 2,
        "suspect_z": 2.5,
        "min_share": 0.3,
        "noise_prior_sd": None,
        "noise_prior_runs": 0.0,
        "confidence_level": 0.95,
    },
    description="ridge on every co-injected lesson, each lesson's own penalty removed",
    invalid={
        "covariates": ("no_such_covariate",),
        "penalty": 0.0,
        "passes": 0,
        "suspect_z": -1.0,
        "min_share": 1.5,
        "noise_prior_sd": -0.1,
        "noise_prior_runs": 5.0,
        "confidence_level": 1.5,
    },
)
def debiased_ridge(
    ledger: Ledger,
    *,
    covariates: Sequence[str],
    penalty: float,
    passes: int,
    suspect_z: float,
    min_share: float,
    noise_prior_sd: float | None,
    noise_prior_runs: float,
    confidence_level: float,
) -> Attribution:
    """Attribute with the debiased ridge (see the module docstring).

    Parameters
    ----------
    ledger : Ledger
        The runs.
    covariates : tuple of str
        Ledger covariates to adjust for (e.g. a difficulty proxy).
    penalty, passes, suspect_z, min_share, noise_prior_sd, noise_prior_runs
        See :func:`ridge_fit`.
    confidence_level : float
        Of the t intervals.

    Returns
    -------
    Attribution
        Columns ``df``, ``t``, ``info``, ``penalized``, ``identifiable`` after the fixed
        ones; ``pvalue`` is the two-sided t p-value of effect = 0.

    Examples
    --------
    >>> import numpy as np
    >>> from cogstats import Ledger, attribute
    >>> rng = np.random.default_rng(3)
    >>> x = rng.random((60, 3)) < 0.5
    >>> y = np.clip(0.5 - 0.2 * x[:, 0] + rng.normal(0, 0.05, 60), 0, 1)
    >>> ledger = Ledger.from_records(
    ...     {"run_id": f"r{i}", "score": float(y[i]),
    ...      "fact_ids": [f for f, on in zip("abc", x[i]) if on]} for i in range(60))
    >>> a = attribute(ledger, method="debiased_ridge").to_frame()
    >>> a.filter(a["pvalue"] < 0.01)["fact_id"].to_list()
    ['a']
    """
    level = check_probability("confidence_level", confidence_level)
    opts = check_options(penalty, passes, suspect_z, min_share, noise_prior_sd, noise_prior_runs)
    stats = ridge_statistics(ledger, tuple(covariates))
    fit = ridge_fit(stats, **opts)  # type: ignore[arg-type]
    trials = stats.trials
    with np.errstate(invalid="ignore"):
        df = np.where(np.isfinite(fit.df), fit.df, 1.0)
        q = np.where(np.isfinite(fit.df), special.stdtrit(df, 0.5 + level / 2), np.nan)
        pvalue = np.where(np.isfinite(fit.t), 2.0 * special.stdtr(df, -np.abs(fit.t)), np.nan)
    table = make_table(
        "debiased_ridge",
        {
            "fact_id": list(stats.fact_ids),
            "estimate": fit.estimate,
            "std_error": fit.std_error,
            "ci_low": fit.estimate - q * fit.std_error,
            "ci_high": fit.estimate + q * fit.std_error,
            "pvalue": np.asarray(pvalue, dtype=float),
            "trials": trials,
            "baseline_runs": stats.runs - trials,
            "df": fit.df,
            "t": fit.t,
            "info": fit.info,
            "penalized": fit.penalized,
            "identifiable": fit.identifiable,
        },
    )
    settings = {
        "covariates": stats.covariates,
        "confidence_level": level,
        "interval": "t",
        **opts,
    }
    return Attribution("debiased_ridge", table, settings)
