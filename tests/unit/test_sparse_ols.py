"""OLS on the sparse design: cross-products, leverages and covariances by formula.

References: the dense textbook formulas in numpy (``X'WX``, ``h = diag(X (X'X)^-1 X')``),
statsmodels ``OLS`` on the dense design for every ``cov`` (1e-8 relative, both solve the
same least-squares problem; statsmodels by the pseudo-inverse), including a design whose
covariates are collinear (the pseudo-inverse fallback), and ``ols`` through the
cross-product identifiability path (designs above ``DENSE_LIMIT``).
"""

from __future__ import annotations

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import sparse

from cogstats import Ledger, attribute
from cogstats.estimators import _sparse
from cogstats.estimators.regression import sparse_ols
from tests.oracle.v0 import old_ols

RTOL = 1e-8


def _design(rng: np.random.Generator, n: int = 400, k: int = 15) -> np.ndarray:
    lessons = (rng.random((n, k)) < 0.2).astype(float)
    return np.column_stack([np.ones(n), rng.normal(size=n), lessons])


def test_gram_and_leverages_equal_the_dense_formulas(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(0)
    x = _design(rng)
    w = rng.random(x.shape[0])
    a = np.linalg.inv(x.T @ x)
    monkeypatch.setattr(_sparse, "PAIR_CHUNK", 500)  # many chunks
    xs = sparse.csr_array(x)
    np.testing.assert_allclose(_sparse.gram(xs), x.T @ x, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(_sparse.gram(xs, w), x.T @ (x * w[:, None]), rtol=1e-12)
    np.testing.assert_allclose(
        _sparse.leverages(xs, a), np.einsum("ij,jk,ik->i", x, a, x), rtol=1e-10
    )


@pytest.mark.filterwarnings("ignore:The design matrix is rank-deficient")
@pytest.mark.parametrize("cov", ["nonrobust", "HC3", "cluster"])
@pytest.mark.parametrize("collinear", [False, True])
def test_sparse_ols_equals_statsmodels(cov: str, collinear: bool) -> None:
    rng = np.random.default_rng(1)
    x = _design(rng)
    if collinear:  # a covariate column repeated: X'X is singular, the pinv solution
        x = np.column_stack([x[:, :2], 2.0 * x[:, 1], x[:, 2:]])
    y = np.clip(
        x[:, 2:] @ rng.normal(0, 0.05, x.shape[1] - 2) + 0.5 + rng.normal(0, 0.1, 400), 0, 1
    )
    groups = rng.integers(0, 25, 400)
    kwargs = {"cov_type": cov}
    if cov == "cluster":
        kwargs["cov_kwds"] = {"groups": groups}
    want = sm.OLS(y, x).fit(**kwargs)
    got = sparse_ols(sparse.csr_array(x), y, cov, groups if cov == "cluster" else None)
    lessons = slice(3 if collinear else 2, None)
    np.testing.assert_allclose(got.params[lessons], want.params[lessons], rtol=RTOL)
    np.testing.assert_allclose(got.bse[lessons], want.bse[lessons], rtol=RTOL)
    assert got.df_resid == want.df_resid


def test_ols_through_the_cross_product_identifiability_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The ledger-level ``ols`` with the large-design path forced: equal to the previous
    implementation (dense design, SVD check, statsmodels), estimates and SEs to 1e-8."""
    from cogstats.estimators import identifiability

    rng = np.random.default_rng(2)
    x = rng.random((500, 30)) < 0.15
    x[:, 7] = x[:, 6]  # a duplicate pair: not identifiable
    d = rng.normal(size=500)
    y = np.clip(0.5 + x @ rng.normal(0, 0.05, 30) + 0.05 * d + rng.normal(0, 0.1, 500), 0, 1)
    ledger = Ledger.from_records(
        {
            "run_id": f"r{i}",
            "score": float(y[i]),
            "fact_ids": [f"L{j}" for j in np.flatnonzero(x[i])],
            "d": float(d[i]),
        }
        for i in range(500)
    )
    want = old_ols(ledger, covariates=("d",))
    monkeypatch.setattr(identifiability, "DENSE_LIMIT", 0)
    got = attribute(ledger, method="ols", covariates=("d",)).to_frame()
    assert got["identifiable"].to_list() == want["identifiable"].to_list()
    assert got["identifiable"].sum() == 28
    for name in ("estimate", "std_error", "ci_low", "ci_high"):
        a, b = got[name].to_numpy(), want[name].to_numpy()
        assert np.array_equal(np.isnan(a), np.isnan(b)), name
        ok = ~np.isnan(a)
        np.testing.assert_allclose(a[ok], b[ok], rtol=RTOL, err_msg=name)
