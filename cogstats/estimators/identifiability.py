"""Which lessons' effects a regression on the ledger can separate, and the covariate design.

A lesson's coefficient in ``score ~ 1 + lessons + covariates`` is identifiable only when
its inclusion pattern carries a contrast that no other column of the design reproduces.
:func:`check_identifiability` flags, for every lesson:

* **no contrast**: the lesson is in every run or in none (its column is constant, so it is
  confounded with the intercept);
* **duplicate inclusion pattern**: another lesson went into exactly the same runs (found
  by hashing the columns), as cycgraph's recorded poisoning demo shows: the genuine L4, L5
  were injected in exactly the runs that carried the three poisons P1-P3, so no estimator
  can tell their effects apart;
* **collinear**: the lesson is (nearly) a linear combination of other lessons and the
  covariates.  The singular value decomposition of the centred design with unit-length
  columns gives every column's variance inflation factor,
  ``VIF_j = sum_k V_jk^2 / s_k^2`` (the diagonal of the inverse correlation matrix; the
  same number as ``1 / (1 - R_j^2)`` from regressing the column on all the others and an
  intercept, statsmodels' ``variance_inflation_factor``).  A lesson is flagged when its
  VIF exceeds ``vif_threshold`` or it loads on a direction whose singular value is below
  ``tol`` times the largest (exact rank deficiency, ``VIF = inf``).

``aliased_with`` lists the other flagged lessons that share the pattern or a weak
direction of the design with the lesson.  :func:`covariate_design` turns ledger covariates
into regression columns (numbers enter linearly, strings and booleans as dummies with a
reference level); the regression estimators use both.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import polars as pl
from scipy import sparse

from cogstats._validation import ParameterError, check_real, suggest
from cogstats.ledger import Ledger

__all__ = [
    "DEFAULT_TOL",
    "DEFAULT_VIF_THRESHOLD",
    "CovariateDesign",
    "check_identifiability",
    "covariate_design",
    "cross_product_identifiability",
    "group_codes",
    "identify",
    "lesson_identifiability",
    "weak_from_cross_products",
]

#: Relative singular value below which a direction of the centred, unit-column design
#: counts as exactly singular (rank deficiency).
DEFAULT_TOL = 1e-10
#: Variance inflation factor above which a lesson counts as not identifiable.
DEFAULT_VIF_THRESHOLD = 1e3


@dataclass(frozen=True)
class CovariateDesign:
    """Regression columns built from ledger covariates.

    Attributes
    ----------
    matrix : numpy.ndarray
        ``(n_runs, n_columns)`` float64, no intercept column.
    columns : tuple of str
        Column labels: the covariate name for a numeric covariate, ``name[level]`` for the
        dummy of a level of a string or boolean covariate.
    sources : tuple of str
        The covariate each column came from.
    covariates : tuple of str
        The covariates asked for, in order.
    reference_levels : dict
        For each string or boolean covariate, the level without a dummy (the smallest
        level in sorted order; ``False`` for booleans).
    """

    matrix: np.ndarray
    columns: tuple[str, ...]
    sources: tuple[str, ...]
    covariates: tuple[str, ...]
    reference_levels: dict[str, Any]


def _check_names(
    ledger: Ledger, names: Any, parameter: str, *, single: bool = False
) -> tuple[str, ...]:
    """Validate covariate names against the ledger (lists the ledger's covariates)."""
    if single:
        names = (names,)
    elif isinstance(names, str) or not isinstance(names, Sequence):
        raise ParameterError(
            f"{parameter} must be a tuple of covariate names, e.g. ('difficulty_proxy',); "
            f"got {names!r}"
        )
    out: list[str] = []
    for name in names:
        if not isinstance(name, str) or name not in ledger.covariates:
            hint = suggest(name, ledger.covariates) if isinstance(name, str) else ""
            raise ParameterError(
                f"{parameter}: {name!r} is not a covariate of the ledger{hint}; "
                f"it has {ledger.covariates!r}"
            )
        if name in ("eligible_ids", "propensities"):
            raise ParameterError(
                f"{parameter}: {name!r} holds logged propensities (lists), not a covariate "
                "a regression can adjust for"
            )
        if name in out:
            raise ParameterError(f"{parameter}: {name!r} is listed twice; got {names!r}")
        out.append(name)
    return tuple(out)


def _no_nulls(series: pl.Series, name: str, ledger: Ledger, parameter: str) -> None:
    nulls = series.is_null()
    if nulls.any():
        i = int(nulls.arg_true()[0])
        raise ParameterError(
            f"{parameter}: covariate {name!r} is null in row {i + 1} "
            f"(run_id {ledger.run_ids[i]!r}) and {int(nulls.sum()) - 1} other run(s); "
            "a regression needs every value (fill them in or leave those runs out of the ledger)"
        )


def covariate_design(
    ledger: Ledger, covariates: Sequence[str] = (), *, parameter: str = "covariates"
) -> CovariateDesign:
    """Regression columns for ledger covariates.

    Integer and float covariates enter linearly.  String and boolean covariates enter as
    fixed effects: one 0/1 dummy per level except the reference level (the first level in
    sorted order, ``False`` for booleans).  A dummy or numeric column that is constant over
    the runs is left out (the intercept carries it).

    Parameters
    ----------
    ledger : Ledger
        The runs.
    covariates : sequence of str
        Covariate names of the ledger.
    parameter : str
        The option name used in error messages.

    Raises
    ------
    ParameterError
        For a name the ledger lacks (naming it and listing the ledger's covariates), a
        list-valued column, or a null value (naming the covariate, the first row and its
        run_id; nothing is dropped silently).

    Notes
    -----
    The coding is checked against statsmodels' formula ``C(...)`` treatment coding through
    the ``ols`` reference tests (same coefficients to 1e-8).

    Examples
    --------
    >>> from cogstats import Ledger
    >>> ledger = Ledger.from_records([
    ...     {"run_id": "r1", "score": 0.5, "fact_ids": [], "d": 0.1, "family": "b"},
    ...     {"run_id": "r2", "score": 0.6, "fact_ids": [], "d": 0.3, "family": "a"},
    ...     {"run_id": "r3", "score": 0.7, "fact_ids": [], "d": 0.2, "family": "c"},
    ... ])
    >>> design = covariate_design(ledger, ("d", "family"))
    >>> design.columns, design.reference_levels
    (('d', 'family[b]', 'family[c]'), {'family': 'a'})
    >>> design.matrix.tolist()
    [[0.1, 1.0, 0.0], [0.3, 0.0, 0.0], [0.2, 0.0, 1.0]]
    """
    names = _check_names(ledger, covariates, parameter)
    n = len(ledger)
    blocks: list[np.ndarray] = []
    columns: list[str] = []
    sources: list[str] = []
    references: dict[str, Any] = {}
    for name in names:
        series = ledger.covariate(name)
        _no_nulls(series, name, ledger, parameter)
        if series.dtype.is_numeric():
            col = series.cast(pl.Float64).to_numpy().reshape(n, 1)
            if n and np.ptp(col) > 0:
                blocks.append(col)
                columns.append(name)
                sources.append(name)
            continue
        codes, levels = _codes(series)
        references[name] = levels[0] if levels else None
        if len(levels) > 1:
            dummies = (codes[:, None] == np.arange(1, len(levels))[None, :]).astype(np.float64)
            blocks.append(dummies)
            columns.extend(f"{name}[{lev}]" for lev in levels[1:])
            sources.extend([name] * (len(levels) - 1))
    matrix = np.hstack(blocks) if blocks else np.zeros((n, 0))
    return CovariateDesign(
        np.ascontiguousarray(matrix, dtype=np.float64),
        tuple(columns),
        tuple(sources),
        names,
        references,
    )


def _codes(series: pl.Series) -> tuple[np.ndarray, list[Any]]:
    values = series.to_list()
    levels = sorted(set(values))
    pos = {lev: k for k, lev in enumerate(levels)}
    return np.fromiter((pos[v] for v in values), dtype=np.int64, count=len(values)), levels


def group_codes(ledger: Ledger, name: Any, *, parameter: str) -> tuple[np.ndarray, list[Any]]:
    """Integer group codes (0..G-1, levels sorted) of a covariate used to group runs.

    Raises
    ------
    ParameterError
        For an unknown name (naming ``parameter`` and listing the ledger's covariates) or a
        null value (naming the covariate and the first row).

    Examples
    --------
    >>> from cogstats import Ledger
    >>> ledger = Ledger.from_records([
    ...     {"run_id": f"r{i}", "score": 0.5, "fact_ids": [], "family": f}
    ...     for i, f in enumerate(["b", "a", "b"])
    ... ])
    >>> codes, levels = group_codes(ledger, "family", parameter="groups")
    >>> codes.tolist(), levels
    ([1, 0, 1], ['a', 'b'])
    """
    (checked,) = _check_names(ledger, name, parameter, single=True)
    series = ledger.covariate(checked)
    _no_nulls(series, checked, ledger, parameter)
    return _codes(series)


def _frame(
    fact_ids: Sequence[str],
    identifiable: np.ndarray,
    aliased: list[list[str]],
    vif: np.ndarray,
    reason: list[str | None],
    aliased_covariates: list[list[str]],
) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "fact_id": pl.Series(list(fact_ids), dtype=pl.String),
            "identifiable": pl.Series(identifiable.tolist(), dtype=pl.Boolean),
            "aliased_with": pl.Series(aliased, dtype=pl.List(pl.String)),
            "vif": pl.Series(vif, dtype=pl.Float64, nan_to_null=True),
            "reason": pl.Series(reason, dtype=pl.String),
            "aliased_covariates": pl.Series(aliased_covariates, dtype=pl.List(pl.String)),
        }
    )


def lesson_identifiability(
    lessons: np.ndarray | sparse.sparray,
    fact_ids: Sequence[str],
    *,
    controls: np.ndarray | None = None,
    control_sources: Sequence[str] = (),
    tol: float = DEFAULT_TOL,
    vif_threshold: float = DEFAULT_VIF_THRESHOLD,
) -> pl.DataFrame:
    """Check identifiability of lesson columns next to control columns (the array-level check).

    Parameters
    ----------
    lessons : array or sparse array
        ``(n_runs, n_lessons)`` 0/1 inclusion matrix.
    fact_ids : sequence of str
        Lesson labels.
    controls : array, optional
        ``(n_runs, q)`` covariate columns (no intercept: the design is centred).
    control_sources : sequence of str
        The covariate each control column came from (reported in ``aliased_covariates``).
    tol : float
        Relative singular value tolerance for exact rank deficiency.
    vif_threshold : float
        VIF above which a lesson is flagged.

    Returns
    -------
    polars.DataFrame
        As :func:`check_identifiability`.

    Notes
    -----
    VIFs validated against statsmodels' ``variance_inflation_factor`` (1e-8 relative);
    exact dependencies against numpy's ``matrix_rank``.

    Cost.  Counts and duplicate patterns: O(runs x lessons-per-run) (the nonzero rows of
    each column, hashed).  Weak directions: with ``m`` distinct non-constant lessons plus
    controls, a design of at most ``DENSE_LIMIT`` entries (``n_runs * m``) is decomposed
    directly (SVD, O(n m^2)); a larger one through its centred cross-product matrix
    (``m x m``, built from the sparse columns in O(nnz x lessons-per-run)): a Cholesky
    factorisation gives every VIF in O(m^3) and, when a VIF exceeds the threshold, an
    eigendecomposition finds the weak directions.  The squared singular values are the
    eigenvalues; forming the cross-products squares the condition number, so on that
    path a direction counts as exactly singular when its eigenvalue is below
    ``max(tol^2, 1e3 m eps)`` times the largest (``s <= 2e-5 s_max`` for 2000 columns)
    rather than ``s <= tol s_max``: lessons flagged are the same, an almost exact
    dependency may be reported as exact.  Memory O(m^2) there.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.array([[1, 1, 0], [0, 0, 1], [1, 1, 1], [0, 0, 0]], dtype=float)
    >>> lesson_identifiability(x, ["a", "b", "c"])["identifiable"].to_list()
    [False, False, True]
    """
    tol = cast(float, check_real("tol", tol, minimum=0.0, exclusive_minimum=True))
    vif_threshold = cast(
        float, check_real("vif_threshold", vif_threshold, minimum=1.0, exclusive_minimum=True)
    )
    raw: Any = lessons
    if sparse.issparse(raw):
        csc = sparse.csc_array(raw, copy=True)  # the caller's array stays as it is
    else:
        csc = sparse.csc_array(np.asarray(raw, dtype=np.float64))
    csc.eliminate_zeros()
    csc.sort_indices()
    n, p = csc.shape
    ids = list(fact_ids)
    if len(ids) != p:
        raise ParameterError(f"fact_ids has {len(ids)} labels for {p} lesson columns")
    z = np.zeros((n, 0)) if controls is None else np.asarray(controls, dtype=np.float64)
    sources = list(control_sources) if control_sources else [f"x{k}" for k in range(z.shape[1])]

    counts = np.diff(csc.indptr)
    indptr, indices = csc.indptr, csc.indices.astype(np.int64, copy=False)
    keys = [indices[indptr[j] : indptr[j + 1]].tobytes() for j in range(p)]

    def weak(reps: list[int]) -> tuple[np.ndarray, np.ndarray | None, list[str], bool]:
        return _weak_directions(csc, reps, z, sources, n, vif_threshold)

    return identify(ids, n, counts, keys, weak, tol, vif_threshold)


def identify(
    ids: list[str],
    n: int,
    counts: np.ndarray,
    keys: Sequence[Any],
    weak_directions: Any,
    tol: float,
    vif_threshold: float,
) -> pl.DataFrame:
    """Build the identifiability frame from per-lesson counts, pattern keys and weak directions.

    The inputs are per-lesson run counts, inclusion-pattern keys (equal keys: the same
    runs) and a function giving the weak directions of the centred design of the distinct
    non-constant lessons next to the controls.
    """
    p = len(ids)
    every, none = counts == n, counts == 0
    constant = every | none
    groups: dict[Any, list[int]] = {}
    for j in range(p):
        groups.setdefault(keys[j], []).append(j)
    rep = np.empty(p, dtype=np.int64)
    members: dict[int, list[int]] = {}
    for group in groups.values():
        rep[group] = group[0]
        members[group[0]] = group
    reps = [j for j in members if not constant[j]]

    # weak directions of the centred design with unit-length columns
    s, vt, col_sources, gram = weak_directions(reps)
    m = s.size
    vif_cols = np.ones(m)
    member = np.zeros((m, 0), dtype=bool)
    if m and vt is not None:
        s_max = s[0] if s.size else 0.0
        floor = max(s_max * np.finfo(float).eps * max(n, m), np.finfo(float).tiny)
        contrib = vt.T**2 / np.maximum(s, floor)[None, :] ** 2
        singular = s <= _singular_tol(tol, m, gram=gram) * s_max
        weak = singular | (s**2 < 1.0 / vif_threshold)
        vif_cols = contrib.sum(axis=1)
        exact = (contrib[:, singular] > vif_threshold).any(axis=1)
        vif_cols = np.where(exact, np.inf, vif_cols)
        member = (contrib[:, weak] > 1.0) & (vif_cols > vif_threshold)[:, None]
    elif m:
        vif_cols = s  # the Cholesky shortcut: VIFs, all below the threshold

    vif = np.full(p, np.nan)
    flagged = constant.copy()
    reason: list[str | None] = [None] * p
    for j in np.flatnonzero(every).tolist():
        reason[j] = "no contrast: in every run"
    for j in np.flatnonzero(none).tolist():
        reason[j] = "no contrast: in no run"
    rep_pos = {j: k for k, j in enumerate(reps)}
    for j in range(p):
        if constant[j]:
            continue
        k = rep_pos[int(rep[j])]
        vif[j] = vif_cols[k]
        if len(members[int(rep[j])]) > 1:
            vif[j] = np.inf
            flagged[j] = True
            reason[j] = "duplicate inclusion pattern"
        elif vif_cols[k] > vif_threshold:
            flagged[j] = True
            reason[j] = "exactly collinear" if np.isinf(vif_cols[k]) else "near collinear"

    aliased: list[list[str]] = [[] for _ in range(p)]
    aliased_cov: list[list[str]] = [[] for _ in range(p)]
    n_rep = len(reps)
    for j in range(p):
        if not flagged[j]:
            continue
        partners: set[int] = {i for i in members[int(rep[j])] if i != j}
        if constant[j]:
            aliased[j] = [ids[i] for i in sorted(partners)]
            continue
        k = rep_pos[int(rep[j])]
        if member.shape[1]:
            linked = np.asarray(member[:, member[k]].any(axis=1))
            linked[k] = False
            for c in np.flatnonzero(linked):
                if c < n_rep:
                    partners.update(members[reps[c]])
                else:
                    aliased_cov[j].append(col_sources[c])
        partners.discard(j)
        aliased[j] = [ids[i] for i in sorted(partners)]
        aliased_cov[j] = sorted(set(aliased_cov[j]))
    return _frame(ids, ~flagged, aliased, vif, reason, aliased_cov)


#: Designs with at most this many entries (runs x distinct lessons and controls) are
#: checked by a direct SVD; larger ones through their cross-product matrix.
DENSE_LIMIT = 4_000_000


def _singular_tol(tol: float, m: int, *, gram: bool) -> float:
    """Relative singular-value threshold for exact rank deficiency (see the Notes above)."""
    if not gram:
        return tol
    return max(tol, float(np.sqrt(1e3 * m * np.finfo(float).eps)))


def _weak_directions(
    csc: sparse.csc_array,
    reps: list[int],
    z: np.ndarray,
    sources: list[str],
    n: int,
    vif_threshold: float,
) -> tuple[np.ndarray, np.ndarray | None, list[str], bool]:
    """Singular values and right singular vectors of the centred, unit-column design.

    Returns ``(s, vt, column_sources, from_cross_products)`` in decreasing order of ``s``;
    ``vt`` is None when the Cholesky shortcut showed every VIF below the threshold (``s``
    then holds the VIFs).
    """
    lessons = csc[:, reps] if reps else sparse.csc_array((n, 0))
    if n == 0:
        return np.zeros(0), np.zeros((0, 0)), [], False
    zc = z - z.mean(axis=0) if z.shape[1] else z
    znorm = np.sqrt((zc * zc).sum(axis=0))
    usable = znorm > 0  # constant controls carry nothing
    col_sources = ["" for _ in reps] + [src for src, u in zip(sources, usable, strict=True) if u]
    zc = zc[:, usable] / znorm[usable]
    n_l = len(reps)
    m = n_l + zc.shape[1]
    if m == 0:
        return np.zeros(0), np.zeros((0, 0)), col_sources, False
    if n * m <= DENSE_LIMIT:
        d = np.hstack([lessons.toarray(), z[:, usable]]) if n_l else z[:, usable].copy()
        d = d - d.mean(axis=0)
        d = d / np.sqrt((d * d).sum(axis=0))
        _, s, vt = np.linalg.svd(d, full_matrices=m > n)
        return np.concatenate([s, np.zeros(m - s.size)]), vt, col_sources, False
    # centred cross-products of the columns, from the sparse lessons
    from cogstats.estimators._sparse import gram as sparse_gram

    mu = np.asarray(lessons.sum(axis=0)).ravel() / n
    c_ll = sparse_gram(sparse.csr_array(lessons)) - n * np.outer(mu, mu)
    c_lz = np.asarray(lessons.T @ zc)  # zc is centred: no mean correction
    s_g, vt_g = weak_from_cross_products(c_ll, c_lz, zc.T @ zc, vif_threshold)
    return s_g, vt_g, col_sources, True


def weak_from_cross_products(
    c_ll: np.ndarray, c_lz: np.ndarray, c_zz: np.ndarray, vif_threshold: float
) -> tuple[np.ndarray, np.ndarray | None]:
    """Find the weak directions of the design from its centred cross-products.

    The cross-products are those of the lesson columns (``c_ll``), lessons x controls
    (``c_lz``) and unit-length controls (``c_zz``): the eigenvalues of the correlation
    matrix are the squared singular values of the centred, unit-column design.  Returns
    ``(s, vt)`` in decreasing order, or ``(vifs, None)`` when a Cholesky factorisation
    shows every VIF below the threshold.
    """
    n_l = c_ll.shape[0]
    m = n_l + c_zz.shape[0]
    lnorm = np.sqrt(np.maximum(np.diag(c_ll), 0.0))
    gram = np.empty((m, m))
    gram[:n_l, :n_l] = c_ll / np.outer(lnorm, lnorm)
    gram[:n_l, n_l:] = c_lz / lnorm[:, None]
    gram[n_l:, :n_l] = gram[:n_l, n_l:].T
    gram[n_l:, n_l:] = c_zz
    from scipy import linalg  # only large designs get here

    try:
        chol = linalg.cholesky(gram, lower=True, check_finite=False)
        inv_l, info = linalg.lapack.dtrtri(chol, lower=1)  # L^-1: diag(G^-1) = col norms^2
        if info == 0:
            vifs = (inv_l * inv_l).sum(axis=0)
            if np.all(np.isfinite(vifs)) and vifs.max() <= vif_threshold:
                return vifs, None
    except linalg.LinAlgError:
        pass
    lam, vecs = np.linalg.eigh(gram)
    order = np.argsort(lam)[::-1]
    return np.sqrt(np.maximum(lam[order], 0.0)), vecs[:, order].T


def cross_product_identifiability(
    ids: list[str],
    n: int,
    counts: np.ndarray,
    keys: Sequence[Any],
    xtx: np.ndarray,
    n_controls: int,
    sources: Sequence[str],
    tol: float,
    vif_threshold: float,
) -> tuple[pl.DataFrame, int]:
    """Run :func:`identify` on the cross-products ``X'X`` of ``[1, controls, lessons]``.

    The design is centred through ``X'X`` itself: the weak directions are those of the
    centred lesson columns beside the unit-length controls that vary
    (:func:`weak_from_cross_products`).

    Parameters
    ----------
    ids : list of str
        The lessons, in the order of their columns.
    n : int
        The runs.
    counts : ndarray
        Each lesson's runs.
    keys : sequence
        Each lesson's inclusion-pattern key (equal keys: the same runs).
    xtx : ndarray
        ``X'X`` over ``[intercept, n_controls control columns, lessons]``.
    n_controls : int
        The control columns.
    sources : sequence of str
        The covariate each control column comes from.
    tol, vif_threshold : float
        As for :func:`check_identifiability`.

    Returns
    -------
    frame : polars.DataFrame
        :func:`identify`'s frame.
    columns : int
        The columns the weak-direction check decomposed (0: none asked).

    Examples
    --------
    >>> x = np.array([[1, 1, 1], [1, 1, 1], [1, 0, 0], [1, 0, 0], [1, 0, 1]], dtype=float)
    >>> frame, m = cross_product_identifiability(
    ...     ["a", "b"], 5, np.array([2, 3]), ["ka", "kb"], x.T @ x, 0, [], 1e-10, 1e3)
    >>> frame["identifiable"].to_list(), m
    ([True, True], 2)
    """
    q = n_controls
    with np.errstate(invalid="ignore", divide="ignore"):
        mu = xtx[0, 1:] / n
        centred = xtx[1:, 1:] - n * np.outer(mu, mu)
    c_zz = centred[:q, :q]
    znorm = np.sqrt(np.maximum(np.diag(c_zz), 0.0))
    usable = znorm > 0
    used = [0]

    def weak(reps: list[int]) -> tuple[np.ndarray, np.ndarray | None, list[str], bool]:
        lessons = q + np.asarray(reps, dtype=np.int64)
        zu = np.flatnonzero(usable)
        c_ll = centred[np.ix_(lessons, lessons)]
        c_lz = centred[np.ix_(lessons, zu)] / znorm[zu]
        c_z = c_zz[np.ix_(zu, zu)] / np.outer(znorm[zu], znorm[zu])
        col_sources = ["" for _ in reps] + [sources[k] for k in zu.tolist()]
        used[0] = len(reps) + zu.size
        if c_ll.shape[0] + c_z.shape[0] == 0:
            return np.zeros(0), np.zeros((0, 0)), col_sources, False
        s_w, vt = weak_from_cross_products(c_ll, c_lz, c_z, vif_threshold)
        return s_w, vt, col_sources, True

    frame = identify(ids, n, counts, keys, weak, tol, vif_threshold)
    return frame, used[0]


def check_identifiability(
    ledger: Ledger,
    fact_ids: Sequence[str] | None = None,
    *,
    covariates: Sequence[str] = (),
    tol: float = DEFAULT_TOL,
    vif_threshold: float = DEFAULT_VIF_THRESHOLD,
    mean_contrasts: bool = False,
) -> pl.DataFrame:
    """Which lessons' effects ``score ~ 1 + lessons + covariates`` can separate.

    Parameters
    ----------
    ledger : Ledger
        The runs.
    fact_ids : sequence of str, optional
        Lessons to put in the design (default: every lesson of the ledger).
    covariates : sequence of str
        Ledger covariates in the design, coded as :func:`covariate_design` does.
    tol : float
        A direction of the centred design with unit-length columns whose singular value
        is below ``tol`` times the largest counts as exact rank deficiency.
    vif_threshold : float
        A lesson whose variance inflation factor exceeds this (> 1) is not identifiable.
    mean_contrasts : bool
        Judge as the regression methods do on fixed-size prompts: a lesson of a pool
        (lessons whose indicators add up to the intercept) whose contrast with the pool's
        mean lesson is estimable counts as identifiable, and a ``relative_to`` column
        names the pool (null: an absolute effect;
        :func:`~cogstats.estimators.contrasts.mean_contrasts`).  Default False: absolute
        effects only.

    Returns
    -------
    polars.DataFrame
        One row per lesson: ``fact_id``, ``identifiable`` (bool), ``aliased_with``
        (list of the other non-identifiable lessons with the same inclusion pattern or in
        the same (near-)collinear group), ``vif`` (``inf`` for exact duplicates and exact
        rank deficiency; null for a lesson in every run or in none), ``reason`` (null when
        identifiable), ``aliased_covariates`` (covariates in the lesson's collinear group).

    Notes
    -----
    The VIFs are validated against statsmodels' ``variance_inflation_factor`` and the
    flags against cycgraph's recorded poisoning demo (tests/unit/test_identifiability.py).

    Examples
    --------
    >>> from cogstats import Ledger
    >>> ledger = Ledger.from_records([
    ...     {"run_id": "r1", "score": 0.9, "fact_ids": ["a", "b", "c"]},
    ...     {"run_id": "r2", "score": 0.4, "fact_ids": ["a", "b"]},
    ...     {"run_id": "r3", "score": 0.6, "fact_ids": ["c"]},
    ...     {"run_id": "r4", "score": 0.5, "fact_ids": []},
    ... ])
    >>> check_identifiability(ledger).select("fact_id", "identifiable", "aliased_with").rows()
    [('a', False, ['b']), ('b', False, ['a']), ('c', True, [])]
    >>> fixed = Ledger.from_records([   # every run carries two of the three lessons
    ...     {"run_id": f"r{i}", "score": 0.5 + 0.1 * (i % 3), "fact_ids": pair}
    ...     for i, pair in enumerate([["a", "b"], ["a", "c"], ["b", "c"]] * 2)
    ... ])
    >>> check_identifiability(fixed)["identifiable"].to_list()
    [False, False, False]
    >>> check_identifiability(fixed, mean_contrasts=True)["relative_to"].to_list()
    ['mean of 3 lessons', 'mean of 3 lessons', 'mean of 3 lessons']
    """
    design = ledger.design(None if fact_ids is None else list(fact_ids))
    controls = covariate_design(ledger, covariates)
    frame = lesson_identifiability(
        design.matrix,
        design.fact_ids,
        controls=controls.matrix,
        control_sources=controls.sources,
        tol=tol,
        vif_threshold=vif_threshold,
    )
    if not mean_contrasts:
        return frame
    from cogstats.estimators.contrasts import mean_contrasts as find_pools

    plan = None
    if len(ledger):
        plan = find_pools(
            sparse.csc_array(design.matrix),
            design.fact_ids,
            controls.matrix,
            frame,
            vif_threshold=vif_threshold,
            tol=tol,
        )
    if plan is not None:
        return plan.ident
    return frame.with_columns(pl.lit(None, dtype=pl.String).alias("relative_to"))
