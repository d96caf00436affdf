"""Lesson effects relative to the mean lesson, where absolute effects are not identified.

When every run carries the same number of lessons from a set ``S`` (a fixed-size prompt),
the indicators of ``S`` sum to that number in every run: they add up to the intercept,
so no regression can tell a lesson's absolute effect from the intercept.  What the runs
do identify is each lesson relative to the others.  :func:`mean_contrasts` finds such
sets (*pools*) and, for every lesson ``j`` of a pool, the contrast

    ``b_j - mean(b_k for k in S)``,

the lesson's effect minus the mean effect of its pool: the estimates of a pool sum to 0,
a lesson worse than the pool's average is below 0 and a better one above.  This is the
sum-to-zero (deviation) coding of the pool, not a reference-lesson contrast: no lesson is
left blank.  A lesson outside every pool keeps its absolute effect.

How the pools are found.  With ``C = [1, covariates]`` and the lesson columns ``X``
residualised on ``C``, the weak directions of ``X`` (exact null directions, and directions
whose variance inflation exceeds the threshold, as
:func:`~cogstats.estimators.identifiability.lesson_identifiability` judges them) span a
space ``N``.  Lesson ``j``'s row of the projector on ``N`` is ``1_S / |S|`` exactly when
``j`` belongs to a pool ``S`` (the pool's indicator sum is constant, or nearly so); then
``e_j - 1_S / |S|`` is orthogonal to ``N``: estimable, and well conditioned when its
variance inflation, ``c' G^+ c / c'c`` on the correlation scale, is below the threshold.
A lesson whose row is 0 keeps ``e_j`` (its absolute effect), under the same check.  Every
other lesson (duplicate inclusion patterns, other collinear groups) stays not
identifiable, with a null estimate, as before.

So a ledger whose runs carry different numbers of lessons is estimated as it always was
(absolute effects); only when too few runs vary the count (the absolute effects' variance
inflation above the threshold) or none do, the pool's lessons are reported relative to
its mean, and the output says so (``relative_to``).

The regression methods fit the design without one reference lesson per exact null
direction (a full-rank design with the same fitted values) and map its coefficients to
the contrasts (:attr:`MeanContrasts.weights`); the reference lessons are reported like
every other lesson of their pool.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl
from scipy import linalg, sparse, special

from cogstats.estimators import _sparse

__all__ = ["CONTRAST_LIMIT", "MeanContrasts", "contrast_marginal_effects", "mean_contrasts"]

#: Lessons above which the pools are not searched (the check needs a dense lessons x
#: lessons matrix and its eigendecomposition): such ledgers keep the absolute estimates.
CONTRAST_LIMIT = 4000
#: a lesson's share of the weak space below this: the lesson is outside every pool
_OUTSIDE = 1e-6
#: the largest deviation of a projector row from ``1_S / |S|``, in units of ``1 / |S|``
_POOL_TOLERANCE = 0.25
#: a contrast whose share in the exact null space exceeds this is not estimable
_ESTIMABLE = 1e-6
#: designs up to this many entries are residualised directly; larger ones by cross-products
_DENSE_ENTRIES = 4_000_000


@dataclass(frozen=True)
class MeanContrasts:
    """What a regression on a design with pools estimates, lesson by lesson.

    Attributes
    ----------
    fit_keep : numpy.ndarray
        Boolean over the ledger's lessons: the lesson columns of the full-rank design to
        fit (every non-constant lesson but one reference per exact null direction).
    reported : numpy.ndarray
        Boolean over the lessons: the lesson gets an estimate.
    weights : numpy.ndarray
        ``(reported lessons, fitted lesson columns)``: row ``r`` maps the fitted lesson
        coefficients to the ``r``-th reported lesson's estimate.
    relative_to : list of str or None
        Per lesson: None for an absolute effect (or no estimate), else what the estimate
        is relative to, e.g. ``"mean of 64 lessons"``.
    pools : tuple of tuple of str
        The lessons of each pool.
    ident : polars.DataFrame
        The identifiability frame with ``identifiable`` (= ``reported``), ``reason`` and
        ``aliased_with`` updated and a ``relative_to`` column.
    note : str
        One paragraph for the reader: which lessons are relative to which mean, and why.
    """

    fit_keep: np.ndarray
    reported: np.ndarray
    weights: np.ndarray
    relative_to: list[str | None]
    pools: tuple[tuple[str, ...], ...]
    ident: pl.DataFrame
    note: str

    def full_weights(self, n_front: int) -> np.ndarray:
        """Weights over a design's columns: ``n_front`` leading columns (intercept, ...) at 0.

        Returns ``(n_front + fitted lessons, reported lessons)``: column ``r`` gives the
        ``r``-th reported estimate as a combination of the design's coefficients.
        """
        out = np.zeros((n_front + self.weights.shape[1], self.weights.shape[0]))
        out[n_front:] = self.weights.T
        return out


def _residual_gram(x: sparse.csc_array, controls: np.ndarray) -> np.ndarray:
    """``X' M X`` with ``M`` the projection off ``[1, controls]`` (dense, lessons x lessons)."""
    n = x.shape[0]
    c = np.hstack([np.ones((n, 1)), controls])
    if n * (x.shape[1] + c.shape[1]) <= _DENSE_ENTRIES:
        dense = x.toarray()
        coef, *_ = np.linalg.lstsq(c, dense, rcond=None)
        resid = dense - c @ coef
        return np.asarray(resid.T @ resid)
    xtx = _sparse.gram(sparse.csr_array(x))
    xtc = np.asarray(x.T @ c)
    ctc_pinv = np.linalg.pinv(c.T @ c, hermitian=True)
    return np.asarray(xtx - xtc @ ctc_pinv @ xtc.T)


def _pools(rows: np.ndarray, cand: np.ndarray) -> tuple[list[frozenset[int] | None], list[bool]]:
    """Each candidate's pool (indices into ``cand``), or None outside every pool; and validity.

    ``rows`` is the projector on the weak space in the original lesson coordinates.
    A lesson is valid when its row is 0 (outside) or ``1_S / |S|`` within tolerance with
    ``|S| >= 2`` and no member of ``S`` in another pool (a member outside every pool, such
    as one of a duplicate pair, stays not identifiable; the others' contrasts are checked
    for estimability afterwards).
    """
    m = cand.size
    pool: list[frozenset[int] | None] = [None] * m
    valid = [True] * m
    for j in range(m):
        r = rows[j]
        share = r[j]
        if share < _OUTSIDE:
            continue
        members = np.flatnonzero(r > share / 2.0)
        ideal = np.zeros(m)
        ideal[members] = 1.0 / members.size
        close = np.max(np.abs(r - ideal)) * members.size <= _POOL_TOLERANCE
        if members.size >= 2 and close:
            pool[j] = frozenset(members.tolist())
        else:
            valid[j] = False
    for j in range(m):
        s = pool[j]
        if s is not None and any(pool[i] is not None and pool[i] != s for i in s):
            valid[j] = False
    return pool, valid


def mean_contrasts(
    lessons: sparse.csc_array,
    fact_ids: Sequence[str],
    controls: np.ndarray,
    ident: pl.DataFrame,
    *,
    vif_threshold: float,
    tol: float = 1e-10,
) -> MeanContrasts | None:
    """Find the pools of a lesson design and what each lesson's estimate can be.

    Parameters
    ----------
    lessons : scipy.sparse array
        ``(runs, lessons)`` 0/1 inclusion matrix.
    fact_ids : sequence of str
        The lessons' ids.
    controls : numpy.ndarray
        ``(runs, q)`` covariate columns (no intercept).
    ident : polars.DataFrame
        The design's identifiability frame
        (:func:`~cogstats.estimators.identifiability.lesson_identifiability`).
    vif_threshold : float
        Variance inflation above which an estimate is not reported.
    tol : float
        Relative singular value below which a direction is exactly singular.

    Returns
    -------
    MeanContrasts or None
        None when no lesson is collinear, no pool is found, or the ledger has more than
        :data:`CONTRAST_LIMIT` lessons: then the absolute estimates of the identifiable
        lessons are all there is.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import sparse
    >>> from cogstats.estimators.identifiability import lesson_identifiability
    >>> x = np.array([[1, 1, 0], [1, 0, 1], [0, 1, 1], [1, 1, 0], [0, 1, 1]], dtype=float)
    >>> ident = lesson_identifiability(x, ["a", "b", "c"])   # two lessons in every run
    >>> ident["identifiable"].to_list()
    [False, False, False]
    >>> plan = mean_contrasts(sparse.csc_array(x), ["a", "b", "c"], np.zeros((5, 0)), ident,
    ...                       vif_threshold=1e3)
    >>> plan.relative_to
    ['mean of 3 lessons', 'mean of 3 lessons', 'mean of 3 lessons']
    >>> plan.fit_keep.tolist()     # a is the reference left out of the fit ...
    [False, True, True]
    >>> plan.weights.round(3).tolist()   # ... a - mean = -(b - a)/3 - (c - a)/3, and so on
    [[-0.333, -0.333], [0.667, -0.333], [-0.333, 0.667]]
    """
    reasons = ident["reason"].to_list()
    if not any(r in ("exactly collinear", "near collinear") for r in reasons):
        return None
    x = sparse.csc_array(lessons)
    n = x.shape[0]
    counts = np.diff(x.indptr)
    cand = np.flatnonzero((counts > 0) & (counts < n))
    if cand.size < 2 or cand.size > CONTRAST_LIMIT:
        return None
    g = _residual_gram(sparse.csc_array(x[:, cand]), controls)
    d = np.diag(g).copy()
    spanned = d <= 1e-12 * max(float(d.max()), np.finfo(float).tiny)
    if spanned.any():  # a lesson that the covariates reproduce: it stays out
        cand, g, d = cand[~spanned], g[np.ix_(~spanned, ~spanned)], d[~spanned]
    m = cand.size
    if m < 2:
        return None
    root = np.sqrt(d)
    lam, vec = np.linalg.eigh(g / np.outer(root, root))
    lam_max = float(lam[-1])
    stol = max(tol, float(np.sqrt(1e3 * m * np.finfo(float).eps)))
    exact = lam <= stol**2 * lam_max
    weak = exact | (lam < 1.0 / vif_threshold)
    if not weak.any():
        return None
    basis, _ = np.linalg.qr(vec[:, weak] / root[:, None])
    pool, valid = _pools(basis @ basis.T, cand)
    if not any(s is not None for s in pool):
        return None
    # the contrasts, on the correlation scale: estimable and well conditioned?
    contrast = np.eye(m)
    for j in range(m):
        s = pool[j]
        if s is not None:
            contrast[j, list(s)] -= 1.0 / len(s)
    scaled = contrast / root[None, :]
    norm2 = (scaled**2).sum(axis=1)
    null_share = ((scaled @ vec[:, exact]) ** 2).sum(axis=1) / norm2
    inflation = ((scaled @ vec[:, ~exact]) ** 2 / lam[~exact][None, :]).sum(axis=1) / norm2
    ok = np.asarray(valid) & (null_share <= _ESTIMABLE) & (inflation <= vif_threshold)
    # one reference lesson per exact null direction leaves a full-rank design
    n_exact = int(exact.sum())
    refs = np.zeros(m, dtype=bool)
    if n_exact:
        _, _, piv = linalg.qr((vec[:, exact] / root[:, None]).T, pivoting=True, mode="economic")
        refs[piv[:n_exact]] = True
    return _plan(fact_ids, x, cand, pool, ok, refs, contrast, ident)


def _plan(
    fact_ids: Sequence[str],
    x: sparse.csc_array,
    cand: np.ndarray,
    pool: list[frozenset[int] | None],
    ok: np.ndarray,
    refs: np.ndarray,
    contrast: np.ndarray,
    ident: pl.DataFrame,
) -> MeanContrasts:
    """Assemble :class:`MeanContrasts` from the per-candidate findings."""
    ids = list(fact_ids)
    p = x.shape[1]
    pools = sorted({s for s, good in zip(pool, ok, strict=True) if s is not None and good}, key=min)
    label = {
        s: f"mean of {len(s)} lessons"
        if len(pools) == 1
        else f"mean of pool {k + 1} ({len(s)} lessons)"
        for k, s in enumerate(pools)
    }
    fit_keep = np.zeros(p, dtype=bool)
    fit_keep[cand[~refs]] = True
    reported = np.zeros(p, dtype=bool)
    reported[cand[ok]] = True
    relative: list[str | None] = [None] * p
    reason = ident["reason"].to_list()
    aliased = ident["aliased_with"].to_list()
    for j in np.flatnonzero(ok).tolist():
        f = int(cand[j])
        reason[f], aliased[f] = None, []
        s = pool[j]
        if s is not None:
            relative[f] = label[s]
    # a lesson still not identifiable is aliased only with others still not identifiable
    unreported = {ids[f] for f in np.flatnonzero(~reported).tolist()}
    aliased = [
        [g for g in (a or []) if g in unreported] if r else a
        for a, r in zip(aliased, ~reported, strict=True)
    ]
    frame = ident.with_columns(
        pl.Series("identifiable", reported.tolist(), dtype=pl.Boolean),
        pl.Series("reason", reason, dtype=pl.String),
        pl.Series("aliased_with", aliased, dtype=pl.List(pl.String)),
        pl.Series("relative_to", relative, dtype=pl.String),
    )
    members = tuple(tuple(ids[int(cand[i])] for i in sorted(s)) for s in pools)
    notes = [
        _pool_note(x, cand[sorted(s)], "" if len(pools) == 1 else f" of pool {k + 1}")
        for k, s in enumerate(pools)
    ]
    return MeanContrasts(
        fit_keep=fit_keep,
        reported=reported,
        # the reported contrasts over the fitted lesson columns (references dropped)
        weights=contrast[np.ix_(ok, ~refs)],
        relative_to=relative,
        pools=members,
        ident=frame,
        note="; ".join(notes)
        + ": only differences between the lessons of a pool are identified, so each is "
        "estimated relative to the pool's mean lesson (its effect minus the pool's mean "
        "effect; they sum to 0 over the pool, a lesson worse than the average is below 0, "
        "a better one above); column relative_to names the pool, and relative_to null "
        "marks an absolute effect",
    )


def _pool_note(x: sparse.csc_array, members: np.ndarray, name: str) -> str:
    """How many of the pool's lessons the runs carry, e.g. "every run carries 6 of ..."."""
    per_run = np.asarray(sparse.csr_array(x[:, members]).sum(axis=1)).ravel().astype(np.int64)
    values, freq = np.unique(per_run, return_counts=True)
    top = int(values[np.argmax(freq)])
    what = f"the {members.size} lessons{name}"
    if values.size == 1:
        return f"every run carries {top} of {what}"
    others = int(per_run.size - freq.max())
    return (
        f"{int(freq.max())} of {per_run.size} runs carry {top} of {what} (the {others} other "
        "runs are too few to estimate absolute effects)"
    )


def contrast_marginal_effects(
    exog: np.ndarray, params: np.ndarray, weights: np.ndarray, cov: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Average marginal effects of log-odds contrasts in a logit model, with delta-method SEs.

    For a contrast ``delta = w' b`` the effect is ``mean_i l_i * delta`` with ``l_i =
    mu_i (1 - mu_i)`` the slope of ``expit`` at run ``i``; its gradient with respect to
    ``b`` is ``mean(l) w + delta * mean_i l_i (1 - 2 mu_i) x_i``, so ``Var = g' cov g``.

    Parameters
    ----------
    exog : array
        ``(n, k)`` design.
    params : array
        ``(k,)`` log-odds coefficients.
    weights : array
        ``(k, r)``: one contrast per column.
    cov : array
        ``(k, k)`` covariance of ``params``.

    Returns
    -------
    (ame, se) : two arrays of length ``r``

    Examples
    --------
    >>> import numpy as np
    >>> exog = np.array([[1.0, 1.0, 0.0], [1.0, 0.0, 1.0]])
    >>> w = np.array([[0.0], [0.5], [-0.5]])          # (b1 - b2) / 2
    >>> ame, se = contrast_marginal_effects(exog, np.array([0.0, 1.0, -1.0]), w, np.eye(3))
    >>> round(float(ame[0]), 6)
    0.196612
    """
    mu = special.expit(exog @ params)
    slope = mu * (1.0 - mu)
    delta = weights.T @ params
    ame = slope.mean() * delta
    curve = exog.T @ (slope * (1.0 - 2.0 * mu)) / exog.shape[0]
    grad = slope.mean() * weights + curve[:, None] * delta[None, :]
    var = np.sum((cov @ grad) * grad, axis=0)
    return ame, np.sqrt(np.maximum(var, 0.0))
