"""The linear-model pieces that the regression estimators share.

The design a ledger becomes (lessons as indicator columns, covariates, cluster codes), the
sparse OLS and its sandwich covariances, and the Wald table of a fit: one copy, used by
:mod:`cogstats.estimators.regression` (OLS, ridge, fractional logit, mixed model), by the
partitioned (Dask) attribution and, through their public faces
(:func:`regression_table`, :func:`wald`, :func:`regression_settings`,
:data:`SINGULAR_PIVOT`, :func:`normal_solution`, :func:`sandwich`, :func:`sparse_ols`),
by the gates' running statistics.  Split out of ``regression.py`` to keep each module
under the house's line limit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import polars as pl
from scipy import linalg, sparse, special

from cogstats._validation import (
    ParameterError,
    check_real,
)
from cogstats.estimators import _sparse
from cogstats.estimators._base import make_table
from cogstats.estimators.contrasts import MeanContrasts, mean_contrasts
from cogstats.estimators.identifiability import (
    CovariateDesign,
    covariate_design,
    lesson_identifiability,
)
from cogstats.ledger import Ledger


# ---------------------------------------------------------------------- shared pieces
@dataclass(frozen=True)
class _Design:
    """The response, the lesson columns, the controls and which lessons are kept."""

    y: np.ndarray
    lessons: sparse.csc_array
    fact_ids: tuple[str, ...]
    trials: np.ndarray
    controls: CovariateDesign
    ident: pl.DataFrame
    keep: np.ndarray
    plan: MeanContrasts | None = None

    @property
    def n(self) -> int:
        return int(self.y.size)

    @property
    def reported(self) -> np.ndarray:
        """The lessons that get an estimate (those fitted, unless contrasts map them)."""
        return self.keep if self.plan is None else self.plan.reported

    def lesson_weights(self, n_columns: int) -> np.ndarray | None:
        """Map a fit's ``n_columns`` coefficients to the reported estimates; None: one each.

        The fitted lesson columns are the last ones of the design.
        """
        if self.plan is None:
            return None
        return self.plan.full_weights(n_columns - int(self.keep.sum()))

    def exog(self, extra: np.ndarray | None = None) -> np.ndarray:
        """``[1, covariate columns, extra, kept lessons]`` as a dense array."""
        blocks = [np.ones((self.n, 1)), self.controls.matrix]
        if extra is not None:
            blocks.append(extra)
        blocks.append(self.lessons[:, np.flatnonzero(self.keep)].toarray())
        return np.hstack(blocks)

    def sparse_exog(self) -> sparse.csr_array:
        """``[1, covariate columns, kept lessons]`` as a CSR array (O(nnz) memory)."""
        dense = np.hstack([np.ones((self.n, 1)), self.controls.matrix])
        kept = self.lessons[:, np.flatnonzero(self.keep)]
        return sparse.csr_array(sparse.hstack([sparse.csc_array(dense), kept], format="csr"))

    def exog_names(self, extra: Sequence[str] = ()) -> list[str]:
        kept = [f for f, k in zip(self.fact_ids, self.keep, strict=True) if k]
        return ["const", *self.controls.columns, *extra, *kept]


def _check_bool(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ParameterError(f"{name} must be True or False; got {value!r}")
    return value


def _check_vif(value: Any) -> float:
    return cast(float, check_real("vif_threshold", value, minimum=1.0, exclusive_minimum=True))


def _group_dummies(codes: np.ndarray, n_levels: int) -> np.ndarray:
    return (codes[:, None] == np.arange(1, n_levels)[None, :]).astype(np.float64)


def _prepare(
    ledger: Ledger,
    covariates: Any,
    vif_threshold: float,
    *,
    extra: np.ndarray | None = None,
    extra_source: str = "",
    contrasts: bool = True,
) -> _Design:
    """Build a regression's design: response, lessons, controls, identifiability, plan.

    With ``contrasts`` (the default), lessons that the design identifies only relative to
    each other (:func:`~cogstats.estimators.contrasts.mean_contrasts`) are fitted without
    a reference per pool and reported relative to their pool's mean.
    """
    controls = covariate_design(ledger, covariates)
    design = ledger.design()
    x = sparse.csc_array(design.matrix)
    ctrl, sources = controls.matrix, list(controls.sources)
    if extra is not None:
        ctrl = np.hstack([ctrl, extra])
        sources += [extra_source] * extra.shape[1]
    ident = lesson_identifiability(
        x, design.fact_ids, controls=ctrl, control_sources=sources, vif_threshold=vif_threshold
    )
    plan = None
    if contrasts and x.shape[0]:
        plan = mean_contrasts(x, design.fact_ids, ctrl, ident, vif_threshold=vif_threshold)
    return _Design(
        y=ledger.scores,
        lessons=x,
        fact_ids=design.fact_ids,
        trials=np.diff(x.indptr).astype(np.int64),
        controls=controls,
        ident=ident if plan is None else plan.ident,
        keep=ident["identifiable"].to_numpy().astype(bool) if plan is None else plan.fit_keep,
        plan=plan,
    )


def _expand(values: Any, keep: np.ndarray) -> np.ndarray:
    out = np.full(keep.size, np.nan)
    out[keep] = np.asarray(values, dtype=np.float64)
    return out


@dataclass(frozen=True)
class TableRows:
    """What :func:`regression_table` reads of a design: the lessons, trials, runs, checks.

    Attributes
    ----------
    fact_ids : tuple of str
        The lessons, in the table's order.
    trials : ndarray
        Each lesson's trials.
    n : int
        The runs.
    ident : polars.DataFrame
        The identifiability check (``identifiable``, ``aliased_with``, optionally
        ``relative_to``), one row a lesson.

    Examples
    --------
    >>> import numpy as np, polars as pl
    >>> ident = pl.DataFrame({"identifiable": [True], "aliased_with": [None]},
    ...                      schema={"identifiable": pl.Boolean, "aliased_with": pl.String})
    >>> rows = TableRows(("a",), np.array([3]), 5, ident)
    >>> one = np.ones(1)
    >>> regression_table("ols", rows, np.ones(1, bool), one, one, one, one, one)["trials"][0]
    3
    """

    fact_ids: tuple[str, ...]
    trials: np.ndarray
    n: int
    ident: pl.DataFrame


def regression_table(
    method: str,
    d: Any,  # a _Design or TableRows: anything with fact_ids, trials, n and ident
    keep: np.ndarray,
    est: Any,
    se: Any,
    lo: Any,
    hi: Any,
    pvalue: Any,
    extra: dict[str, Any] | None = None,
) -> pl.DataFrame:
    """Build the attribution frame; kept-lesson values spread over all lessons (NaN else)."""
    columns: dict[str, Any] = {
        "fact_id": list(d.fact_ids),
        "estimate": _expand(est, keep),
        "std_error": _expand(se, keep),
        "ci_low": _expand(lo, keep),
        "ci_high": _expand(hi, keep),
        "pvalue": _expand(pvalue, keep),
        "trials": d.trials,
        "baseline_runs": d.n - d.trials,
    }
    for name, values in (extra or {}).items():
        columns[name] = (
            _expand(values, keep)
            if isinstance(values, np.ndarray) and values.size == keep.sum()
            else values
        )
    columns["identifiable"] = d.ident["identifiable"]
    columns["aliased_with"] = d.ident["aliased_with"]
    columns["relative_to"] = (
        d.ident["relative_to"]
        if "relative_to" in d.ident.columns
        else pl.Series("relative_to", [None] * len(d.fact_ids), dtype=pl.String)
    )
    return make_table(method, columns)


def contrast_setting(d: Any) -> dict[str, str]:
    """``{"contrasts": note}`` when some lessons are relative to a pool's mean, else ``{}``."""
    plan = getattr(d, "plan", None)
    return {} if plan is None else {"contrasts": plan.note}


def contrast_estimates(
    params: np.ndarray,
    weights: np.ndarray,
    *,
    cov: np.ndarray | None = None,
    fit: _OLSFit | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Estimates ``W' params`` and their standard errors, from a covariance or a sandwich fit.

    ``weights`` is ``(columns, estimates)``.  With ``fit`` (a :func:`sparse_ols` result
    whose full covariance was not formed) the variance is ``scale * w' B M B w`` from its
    bread ``B`` and meat ``M`` (``scale * w' B w`` without a meat).
    """
    est = weights.T @ params
    if cov is not None:
        var = np.einsum("ir,ij,jr->r", weights, cov, weights)
    elif fit is not None and fit.cov_params is not None:
        var = np.einsum("ir,ij,jr->r", weights, fit.cov_params, weights)
    elif fit is not None:
        bw = fit.bread @ weights
        inner = bw if fit.meat is None else fit.meat @ bw
        var = fit.scale * np.sum(bw * inner, axis=0)
    else:
        raise ValueError("contrast_estimates needs cov or fit")
    return est, np.sqrt(np.maximum(var, 0.0))


def _normal_inference(
    est: np.ndarray, se: np.ndarray, level: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    q = special.ndtri(0.5 + level / 2)  # the normal quantile (scipy.stats is slow to import)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = 2.0 * special.ndtr(-np.abs(est / se))
    return est - q * se, est + q * se, p


def _residual_df(exog: np.ndarray) -> int:
    """Return runs minus the rank of the design (statsmodels' ``df_resid``)."""
    if exog.shape[0] == 0:
        return 0
    return int(exog.shape[0] - np.linalg.matrix_rank(exog))


def _check_clusters(parameter: str, name: str | None, codes: np.ndarray) -> None:
    """Cluster-robust errors and random intercepts need at least 2 clusters (groups)."""
    levels = int(np.unique(codes).size)
    if codes.size and levels < 2:
        raise ParameterError(
            f"{parameter} {name!r} has a single value over all {codes.size} runs, "
            "so there is nothing to compare across clusters or groups; "
            + (
                "use method='ols' (no grouping), or pass groups=<another covariate>"
                if parameter == "groups"
                else "use cov='HC3', or cluster on another covariate"
            )
        )


def _constant_scores(k: int) -> tuple[np.ndarray, ...]:
    """Estimate, se, ci_low, ci_high, pvalue when every run scored the same.

    The lesson coefficients are then exactly 0 with zero variance (a fit would return
    rounding noise, and t statistics of noise over noise); as for ``lift``, a difference
    known exactly to be 0 has p-value 1.
    """
    zero = np.zeros(k)
    return zero, zero, zero, zero, np.ones(k)


def regression_settings(**kwargs: Any) -> dict[str, Any]:
    """Return an attribution's settings mapping (``covariates`` as a tuple).

    Examples
    --------
    >>> regression_settings(method="ols", covariates=["difficulty"])
    {'method': 'ols', 'covariates': ('difficulty',)}
    """
    out = dict(kwargs)
    if "covariates" in out:
        out["covariates"] = tuple(out["covariates"])
    return out


# ---------------------------------------------------------------------- sparse OLS
@dataclass(frozen=True)
class _OLSFit:
    """Coefficients, standard errors and the sandwich ``scale * bread @ meat @ bread``."""

    params: np.ndarray
    bse: np.ndarray
    cov_params: np.ndarray | None
    df_resid: float
    bread: np.ndarray
    meat: np.ndarray | None
    scale: float


def sparse_ols(
    exog: sparse.csr_array, y: np.ndarray, cov: str, groups: np.ndarray | None = None
) -> _OLSFit:
    """OLS on a sparse design by the normal equations, with statsmodels' covariances.

    ``cov``: "nonrobust" (``s^2 (X'X)^-1``, ``s^2 = e'e / (n - rank)``), "HC3"
    (``(X'X)^-1 X' diag(e_i^2 / (1 - h_i)^2) X (X'X)^-1``) or "cluster" (``(X'X)^-1 S
    (X'X)^-1`` with ``S = sum_g (X_g' e_g)(X_g' e_g)'`` times statsmodels' small-sample
    factor ``G / (G - 1) (n - 1) / (n - k)``, ``k`` columns), the formulas of statsmodels'
    ``OLS.fit(cov_type=...)``.  Hand-written rather than statsmodels because statsmodels
    needs the dense design (8.4 GB and 232 s at 100,000 runs x 2,000 lessons).
    """
    n = exog.shape[0]
    xtx = _sparse.gram(exog)
    inv, params, rank = normal_solution(xtx, exog.T @ y)
    resid = y - exog @ params
    df_resid = float(n - rank)
    if df_resid <= 0:  # an exact fit: coefficients, no covariance
        nan = np.full(len(params), np.nan)
        return _OLSFit(params, nan, None, df_resid, inv, None, math.nan)
    if cov == "nonrobust":
        return sandwich(params, inv, None, float(resid @ resid) / df_resid, df_resid)
    if cov == "HC3":
        h = _sparse.leverages(exog, inv)
        return sandwich(params, inv, _sparse.gram(exog, (resid / (1.0 - h)) ** 2), 1.0, df_resid)
    assert groups is not None
    codes = np.unique(groups, return_inverse=True)[1].ravel()
    n_groups = int(codes.max()) + 1 if codes.size else 0
    scores = cluster_scores(exog, resid, codes, n_groups)
    # statsmodels' small-sample factor counts the columns, not the rank
    scale = n_groups / (n_groups - 1.0) * ((n - 1.0) / (n - exog.shape[1]))
    return sandwich(params, inv, scores.T @ scores, scale, df_resid)


def normal_solution(xtx: np.ndarray, xty: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Solve the normal equations: ``((X'X)^-1, coefficients, rank)``.

    By Cholesky, or the pseudo-inverse when ``X'X`` is singular (collinear covariates:
    statsmodels' default ``pinv`` solution).
    """
    k = xtx.shape[0]
    try:
        chol = linalg.cholesky(xtx, lower=True, check_finite=False)
        # a pivot that keeps less than 1e-12 of its column's sum of squares (the column
        # is a combination of the earlier ones to 12 digits): singular, as numpy's
        # matrix_rank on the design would say; rounding lets Cholesky pass such matrices
        kept = np.diag(chol) ** 2 / np.maximum(np.diag(xtx), np.finfo(float).tiny)
        if kept.min() > SINGULAR_PIVOT:
            tri, info = linalg.lapack.dpotri(chol, lower=1)  # (X'X)^-1 from the factor
            if info == 0:
                inv = np.tril(tri) + np.tril(tri, -1).T
                return inv, inv @ xty, k
    except linalg.LinAlgError:
        pass
    inv = np.linalg.pinv(xtx, hermitian=True)
    return inv, inv @ xty, int(np.linalg.matrix_rank(xtx, hermitian=True))


def cluster_scores(
    exog: sparse.csr_array, resid: np.ndarray, codes: np.ndarray, n_groups: int
) -> np.ndarray:
    """``(G, k)`` per-cluster score sums ``X_g' e_g`` (cluster codes 0..G-1)."""
    n = exog.shape[0]
    g = sparse.csr_array((resid, (codes, np.arange(n))), shape=(n_groups, n), dtype=np.float64)
    return np.asarray((g @ exog).toarray())


def sandwich(
    params: np.ndarray,
    bread: np.ndarray,
    meat: np.ndarray | None,
    scale: float,
    df_resid: float,
) -> _OLSFit:
    """Compute the standard errors of ``scale * bread @ meat @ bread``.

    ``scale * bread`` without a meat; the covariance too, up to ``FULL_COV_LIMIT``
    columns.
    """
    k = bread.shape[0]
    if meat is None:
        var = scale * np.diag(bread)
        vcov = scale * bread if k <= FULL_COV_LIMIT else None
    else:
        half = bread @ meat  # the sandwich's diagonal needs one k^3 product, the whole two
        var = scale * np.einsum("ij,ji->i", half, bread)
        vcov = scale * (half @ bread) if k <= FULL_COV_LIMIT else None
        if vcov is not None:
            vcov = (vcov + vcov.T) / 2.0
    return _OLSFit(params, np.sqrt(np.maximum(var, 0.0)), vcov, df_resid, bread, meat, scale)


#: relative Cholesky pivot below which ``X'X`` counts as singular (then the pseudo-inverse)
SINGULAR_PIVOT = 1e-12

#: ``sparse_ols`` forms the full covariance matrix of the coefficients up to this many
#: columns; above, only its diagonal (the standard errors) and the pieces (bread, meat).
FULL_COV_LIMIT = 1000
