"""Regression estimators (ols, ridge, fraclogit, mixed) against statsmodels and closed forms.

Every reference is computed here from the same data by an independent route:
statsmodels' formula interface (pandas frame, ``C(...)`` dummies, its own column order)
for ols and mixed, the normal equations and statsmodels ``fit_regularized`` for ridge,
statsmodels ``GLM``/``Logit.get_margeff`` and finite differences for fraclogit.

Tolerances: 1e-8 relative (``RTOL``) where both sides solve the same least-squares or
likelihood problem in closed form or by IRLS to machine precision (they differ only by
column order and rounding, about 1e-12); 1e-6 where statsmodels differentiates
numerically (``get_margeff`` uses forward differences with step ~1e-8 relative, error
~1e-7) or optimizes iteratively (MixedLM REML, gradient tolerance 1e-5 on a well
conditioned problem).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import polars as pl
import pytest
import statsmodels.api as sm
import statsmodels.formula.api as smf
from scipy import special, stats
from scipy.special import expit
from statsmodels.regression.mixed_linear_model import MixedLM

from cogstats import Ledger
from cogstats._validation import ParameterError
from cogstats.estimators import MixedFallbackWarning, attribute
from cogstats.estimators.regression import (
    GCV_GRID,
    average_marginal_effects,
    glm_robust_cov,
)
from tests.helpers import random_inclusion_ledger

RTOL = 1e-8
LESSONS = [f"L{j}" for j in range(1, 7)]


@pytest.fixture(scope="module")
def ledger() -> Ledger:
    """160 runs, 6 lessons (two with effects), family shifts, a difficulty proxy."""
    return random_inclusion_ledger(
        np.random.default_rng(42), effects=(0.1, -0.05, 0.0, 0.0, 0.02, 0.0)
    )


def _pandas(ledger: Ledger) -> pd.DataFrame:
    """The ledger as a pandas frame with one 0/1 column per lesson (built independently)."""
    frame = ledger.frame
    out = pd.DataFrame(
        {
            "score": frame["score"].to_numpy(),
            "difficulty_proxy": frame["difficulty_proxy"].to_numpy(),
            "family": frame["family"].to_list(),
            "run_index": frame["run_index"].to_numpy(),
        }
    )
    for f in LESSONS:
        out[f] = [int(f in ids) for ids in frame["fact_ids"].to_list()]
    out["batch"] = out["run_index"] // 8  # 20 clusters of 8 consecutive runs
    return out


def _with_batch(ledger: Ledger) -> Ledger:
    return Ledger.from_frame(ledger.frame.with_columns((pl.col("run_index") // 8).alias("batch")))


def _col(frame: pl.DataFrame, name: str) -> np.ndarray:
    """One column of an attribution frame in LESSONS order (frames follow ledger order)."""
    order = {f: k for k, f in enumerate(frame["fact_id"].to_list())}
    values = frame[name].to_numpy()
    return np.asarray([values[order[f]] for f in LESSONS], dtype=float)


def _rows(result, ids=LESSONS):
    frame = result.to_frame()
    return {f: frame.filter(pl.col("fact_id") == f).row(0, named=True) for f in ids}


FORMULA = "score ~ " + " + ".join(LESSONS) + " + difficulty_proxy + C(family)"


# ---------------------------------------------------------------------- ols
@pytest.mark.parametrize("cov", ["nonrobust", "HC3", "cluster"])
def test_ols_matches_statsmodels_formula(ledger: Ledger, cov: str) -> None:
    """Estimates, SEs, intervals, p-values equal statsmodels' formula fit (RTOL)."""
    data = _pandas(ledger)
    kwargs: dict = {"cov_type": cov, "use_t": cov != "cluster"}
    options: dict = {}
    if cov == "cluster":
        kwargs["cov_kwds"] = {"groups": data["batch"].to_numpy()}
        options["cluster"] = "batch"
    want = smf.ols(FORMULA, data).fit(**kwargs)
    got = attribute(
        _with_batch(ledger),
        method="ols",
        covariates=("difficulty_proxy", "family"),
        cov=cov,
        **options,
    )
    ci = want.conf_int(alpha=0.05)
    for f, row in _rows(got).items():
        assert row["estimate"] == pytest.approx(want.params[f], rel=RTOL)
        assert row["std_error"] == pytest.approx(want.bse[f], rel=RTOL)
        assert row["ci_low"] == pytest.approx(ci.loc[f, 0], rel=RTOL)
        assert row["ci_high"] == pytest.approx(ci.loc[f, 1], rel=RTOL)
        assert row["pvalue"] == pytest.approx(want.pvalues[f], rel=1e-6, abs=1e-12)
        assert row["df"] == (want.df_resid if cov != "cluster" else math.inf)
        assert row["identifiable"] and row["aliased_with"] == []
    assert got.settings["reference"] == ("normal" if cov == "cluster" else "t")


def test_ols_closed_form(ledger: Ledger) -> None:
    """Classical and HC3 standard errors from the textbook formulas (numpy), RTOL."""
    data = _pandas(ledger)
    y = data["score"].to_numpy()
    exog = np.column_stack([np.ones(len(y)), data[LESSONS].to_numpy(float)])
    xtx_inv = np.linalg.inv(exog.T @ exog)
    beta = xtx_inv @ exog.T @ y
    resid = y - exog @ beta
    n, k = exog.shape
    s2 = resid @ resid / (n - k)
    h = np.einsum("ij,jk,ik->i", exog, xtx_inv, exog)
    meat = exog.T @ (exog * (resid / (1 - h))[:, None] ** 2)
    hc3 = xtx_inv @ meat @ xtx_inv
    classical = attribute(ledger, method="ols", cov="nonrobust").to_frame()
    robust = attribute(ledger, method="ols").to_frame()  # default cov is HC3
    np.testing.assert_allclose(_col(classical, "estimate"), beta[1:], rtol=RTOL)
    np.testing.assert_allclose(
        _col(classical, "std_error"), np.sqrt(s2 * np.diag(xtx_inv))[1:], rtol=RTOL
    )
    np.testing.assert_allclose(_col(robust, "std_error"), np.sqrt(np.diag(hc3))[1:], rtol=RTOL)
    q = stats.t.ppf(0.975, n - k)
    np.testing.assert_allclose(
        _col(robust, "ci_high"), beta[1:] + q * np.sqrt(np.diag(hc3))[1:], rtol=RTOL
    )


def test_ols_drops_aliased_lessons_and_lists_them(ledger: Ledger) -> None:
    """A copy of L1 and a lesson in every run get null inference; the rest equal the fit
    without them (statsmodels on the reduced design, RTOL)."""
    records = ledger.to_records()
    for rec in records:
        del rec["eligible_ids"], rec["propensities"]
        rec["fact_ids"] = [*rec["fact_ids"], "ALWAYS"] + (
            ["COPY"] if "L1" in rec["fact_ids"] else []
        )
    aliased = Ledger.from_records(records)
    got = attribute(aliased, method="ols", cov="nonrobust")
    rows = _rows(got, [*LESSONS, "ALWAYS", "COPY"])
    for f in ("L1", "COPY", "ALWAYS"):
        assert rows[f]["identifiable"] is False
        assert rows[f]["estimate"] is None and rows[f]["std_error"] is None
        assert rows[f]["pvalue"] is None and rows[f]["ci_low"] is None
    assert rows["L1"]["aliased_with"] == ["COPY"] and rows["COPY"]["aliased_with"] == ["L1"]
    assert rows["ALWAYS"]["trials"] == len(aliased) and rows["ALWAYS"]["baseline_runs"] == 0
    want = smf.ols("score ~ " + " + ".join(LESSONS[1:]), _pandas(ledger)).fit()
    for f in LESSONS[1:]:
        assert rows[f]["estimate"] == pytest.approx(want.params[f], rel=RTOL)
        assert rows[f]["std_error"] == pytest.approx(want.bse[f], rel=RTOL)


def test_ols_option_errors(ledger: Ledger) -> None:
    with pytest.raises(ParameterError, match=r"covariates: 'nope' .*difficulty_proxy"):
        attribute(ledger, method="ols", covariates=("nope",))
    with pytest.raises(ParameterError, match="covariates must be a tuple"):
        attribute(ledger, method="ols", covariates="difficulty_proxy")
    with pytest.raises(ParameterError, match="cov='cluster' needs cluster"):
        attribute(ledger, method="ols", cov="cluster")
    with pytest.raises(ParameterError, match="cluster is used only with cov='cluster'"):
        attribute(ledger, method="ols", cluster="family")
    records = ledger.to_records()
    records[4]["difficulty_proxy"] = None
    holey = Ledger.from_records(records)
    with pytest.raises(
        ParameterError, match=r"'difficulty_proxy' is null in row 5 \(run_id 'r4'\)"
    ):
        attribute(holey, method="ols", covariates=("difficulty_proxy",))


# ---------------------------------------------------------------------- ridge
def _residualized(ledger: Ledger, covariates: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Lessons and score with intercept and covariates partialled out (numpy lstsq)."""
    data = _pandas(ledger)
    c = np.column_stack([np.ones(len(data))] + [data[name].to_numpy(float) for name in covariates])
    x = data[LESSONS].to_numpy(float)
    y = data["score"].to_numpy()

    def resid(a: np.ndarray) -> np.ndarray:
        return a - c @ np.linalg.lstsq(c, a, rcond=None)[0]

    return resid(x), resid(y)


@pytest.mark.parametrize("covariates", [(), ("difficulty_proxy",)])
def test_ridge_closed_form_and_statsmodels(ledger: Ledger, covariates: tuple[str, ...]) -> None:
    """b = (X~'X~ + lam I)^-1 X~'y~, and statsmodels fit_regularized(alpha=lam/n on the
    lessons, 0 on intercept and covariates, L1_wt=0): statsmodels' ridge minimizes
    RSS/(2n) + alpha/2 |b|^2, i.e. solves (X'X + n alpha I) b = X'y.  Both to 1e-8."""
    lam = 7.5
    got = attribute(ledger, method="ridge", penalty=lam, covariates=covariates).to_frame()
    xt, yt = _residualized(ledger, list(covariates))
    closed = np.linalg.solve(xt.T @ xt + lam * np.eye(len(LESSONS)), xt.T @ yt)
    np.testing.assert_allclose(_col(got, "estimate"), closed, rtol=RTOL)
    data = _pandas(ledger)
    exog = np.column_stack(
        [np.ones(len(data))] + [data[c].to_numpy(float) for c in covariates] + [data[LESSONS]]
    )
    n = len(data)
    alpha = np.r_[np.zeros(1 + len(covariates)), np.full(len(LESSONS), lam / n)]
    sm_fit = sm.OLS(data["score"].to_numpy(), exog).fit_regularized(alpha=alpha, L1_wt=0.0)
    np.testing.assert_allclose(
        _col(got, "estimate"), np.asarray(sm_fit.params)[-len(LESSONS) :], rtol=RTOL
    )


@pytest.mark.parametrize("cov", ["HC0", "HC3"])
def test_ridge_sandwich_and_gcv(ledger: Ledger, cov: str) -> None:
    """GCV picks the grid minimum of n RSS / (n - tr H)^2 computed with the explicit hat
    matrix; the SEs equal diag(A diag(w) A') with A = (X~'X~ + lam I)^-1 X~' (RTOL)."""
    result = attribute(ledger, method="ridge", cov=cov)
    got = result.to_frame()
    xt, yt = _residualized(ledger, [])
    n, p = xt.shape
    ones = np.full((n, n), 1.0 / n)
    grid = GCV_GRID * np.mean(np.sum(xt * xt, axis=0))
    scores = []
    for lam in grid:
        hat = ones + xt @ np.linalg.solve(xt.T @ xt + lam * np.eye(p), xt.T)
        rss = np.sum((yt - (hat - ones) @ yt) ** 2)
        scores.append(n * rss / (n - np.trace(hat)) ** 2)
    lam = grid[int(np.argmin(scores))]
    assert result.settings["penalty_value"] == pytest.approx(lam, rel=1e-12)
    a = np.linalg.solve(xt.T @ xt + lam * np.eye(p), xt.T)
    hat = ones + xt @ a
    resid = yt - xt @ (a @ yt)
    w = resid**2 if cov == "HC0" else (resid / (1 - np.diag(hat))) ** 2
    se = np.sqrt(np.diag(a @ np.diag(w) @ a.T))
    np.testing.assert_allclose(_col(got, "std_error"), se, rtol=RTOL)
    assert result.settings["effective_df"] == pytest.approx(np.trace(hat), rel=RTOL)
    z = _col(got, "estimate") / se
    np.testing.assert_allclose(_col(got, "pvalue"), 2 * stats.norm.sf(np.abs(z)), rtol=RTOL)


@pytest.mark.parametrize("cov", ["HC0", "HC3"])
def test_ridge_tends_to_ols_robust(ledger: Ledger, cov: str) -> None:
    """As the penalty goes to 0 the ridge estimate and sandwich SE are statsmodels' OLS
    with cov_type HC0/HC3 (penalty 1e-9 against column sums of squares ~40: relative
    difference ~1e-10; tolerance 1e-7)."""
    got = attribute(ledger, method="ridge", penalty=1e-9, cov=cov).to_frame()
    want = smf.ols("score ~ " + " + ".join(LESSONS), _pandas(ledger)).fit(cov_type=cov)
    np.testing.assert_allclose(_col(got, "estimate"), want.params[LESSONS], rtol=1e-7)
    np.testing.assert_allclose(_col(got, "std_error"), want.bse[LESSONS], rtol=1e-7)


def test_ridge_more_lessons_than_runs() -> None:
    """40 lessons, 25 runs: the closed form (here via the n x n dual form
    X~'(X~X~' + lam I)^-1 y~) to 1e-8; a lesson in every run is listed with null values."""
    rng = np.random.default_rng(9)
    x = rng.random((25, 40)) < 0.3
    y = np.clip(0.5 + 0.2 * x[:, 0] + rng.normal(0, 0.05, 25), 0, 1)
    ledger = Ledger.from_records(
        {
            "run_id": f"r{i}",
            "score": float(y[i]),
            "fact_ids": [f"L{j}" for j in np.flatnonzero(x[i])] + ["ALL"],
        }
        for i in range(25)
    )
    got = attribute(ledger, method="ridge", penalty=2.0).to_frame()
    design = ledger.design()
    xd = design.dense()[:, [design.fact_ids.index(f"L{j}") for j in range(40)]]
    xt, yt = xd - xd.mean(axis=0), y - y.mean()
    dual = xt.T @ np.linalg.solve(xt @ xt.T + 2.0 * np.eye(25), yt)
    est = dict(zip(got["fact_id"].to_list(), got["estimate"].to_list(), strict=True))
    np.testing.assert_allclose([est[f"L{j}"] for j in range(40)], dual, rtol=RTOL, atol=1e-14)
    assert est["ALL"] is None
    with pytest.raises(ParameterError, match="penalty must be > 0"):
        attribute(ledger, method="ridge", penalty=0.0)
    with pytest.raises(ParameterError, match="penalty must be a number > 0 or 'gcv'"):
        attribute(ledger, method="ridge", penalty="loo")


# ---------------------------------------------------------------------- fraclogit
def _glm(ledger: Ledger, **fit):
    data = _pandas(ledger)
    exog = np.column_stack([np.ones(len(data)), data[LESSONS].to_numpy(float)])
    model = sm.GLM(data["score"].to_numpy(), exog, family=sm.families.Binomial())
    return model.fit(**fit), exog


def test_fraclogit_coefficients_and_hc0_match_glm(ledger: Ledger) -> None:
    """Log-odds coefficients and HC0 SEs equal statsmodels GLM(cov_type="HC0"), RTOL;
    HC1 is HC0 times sqrt(n / (n - k)) (closed form)."""
    want, exog = _glm(ledger, cov_type="HC0")
    n, k = exog.shape
    hc0 = attribute(ledger, method="fraclogit", cov="HC0").to_frame()
    hc1 = attribute(ledger, method="fraclogit", cov="HC1").to_frame()
    np.testing.assert_allclose(_col(hc0, "log_odds"), want.params[1:], rtol=RTOL)
    np.testing.assert_allclose(_col(hc0, "log_odds_se"), want.bse[1:], rtol=RTOL)
    np.testing.assert_allclose(
        _col(hc1, "log_odds_se"), want.bse[1:] * math.sqrt(n / (n - k)), rtol=RTOL
    )


@pytest.mark.parametrize("kind", ["HC0", "HC1", "HC3"])
def test_glm_sandwich_is_ols_sandwich_for_gaussian_family(kind: str) -> None:
    """For a Gaussian GLM with the identity link, the GLM sandwich (scores, Hessian, GLM
    hat values) must equal statsmodels' OLS cov_HC0/1/3 exactly (RTOL): this validates
    the HC1/HC3 formulas that statsmodels' GLM does not provide."""
    rng = np.random.default_rng(3)
    exog = sm.add_constant(rng.normal(size=(80, 3)))
    y = exog @ [0.5, 1.0, -0.3, 0.0] + rng.normal(size=80) * (1 + np.abs(exog[:, 1]))
    glm = sm.GLM(y, exog).fit()
    want = getattr(sm.OLS(y, exog).fit(), f"cov_{kind}")
    np.testing.assert_allclose(glm_robust_cov(glm, kind), want, rtol=RTOL)


def test_statsmodels_glm_hc3_is_hc0() -> None:
    """The reason glm_robust_cov exists: statsmodels' GLM returns HC0 for cov_type HC3.
    If this starts failing, statsmodels fixed it and glm_robust_cov can defer to it."""
    rng = np.random.default_rng(4)
    exog = sm.add_constant(rng.random((60, 2)))
    y = expit(exog @ [0.0, 1.0, -1.0] + rng.normal(0, 0.3, 60))
    model = sm.GLM(y, exog, family=sm.families.Binomial())
    np.testing.assert_array_equal(model.fit(cov_type="HC3").bse, model.fit(cov_type="HC0").bse)


def test_fraclogit_ame_matches_logit_margeff(ledger: Ledger) -> None:
    """AME and its delta-method SE equal statsmodels Logit(...).get_margeff(dummy=True)
    on the same fractional response with cov_type HC0 (AME: RTOL; SE: 1e-6, statsmodels
    differentiates numerically)."""
    data = _pandas(ledger)
    exog = pd.concat([pd.Series(1.0, index=data.index, name="const"), data[LESSONS]], axis=1)
    logit = sm.Logit(data["score"], exog).fit(disp=0, cov_type="HC0")
    margeff = logit.get_margeff(at="overall", method="dydx", dummy=True)
    got = attribute(ledger, method="fraclogit", cov="HC0").to_frame()
    np.testing.assert_allclose(_col(got, "estimate"), margeff.margeff, rtol=RTOL)
    np.testing.assert_allclose(_col(got, "std_error"), margeff.margeff_se, rtol=1e-6)


@pytest.mark.parametrize("cov", ["HC0", "HC1", "HC3"])
def test_fraclogit_ame_finite_difference(ledger: Ledger, cov: str) -> None:
    """The AME equals the predicted mean score with each lesson set to 1 minus set to 0
    (GLM.predict on modified designs, RTOL); its SE equals the delta method with a
    central-difference gradient (step 1e-6, error ~1e-12 on a smooth function: 1e-6)."""
    fit, exog = _glm(ledger)
    result = attribute(ledger, method="fraclogit", cov=cov)
    got = result.to_frame()
    vcov = glm_robust_cov(fit, cov)
    params = np.asarray(fit.params)

    def ame(b: np.ndarray) -> np.ndarray:
        out = []
        for j in range(1, exog.shape[1]):
            on, off = exog.copy(), exog.copy()
            on[:, j], off[:, j] = 1.0, 0.0
            out.append(np.mean(expit(on @ b) - expit(off @ b)))
        return np.asarray(out)

    np.testing.assert_allclose(_col(got, "estimate"), ame(params), rtol=RTOL)
    step = 1e-6
    jac = np.column_stack(
        [
            (ame(params + step * e) - ame(params - step * e)) / (2 * step)
            for e in np.eye(len(params))
        ]
    )
    se = np.sqrt(np.diag(jac @ vcov @ jac.T))
    np.testing.assert_allclose(_col(got, "std_error"), se, rtol=1e-6)
    perm = [result.extras["exog_names"].index(name) for name in ["const", *LESSONS]]
    np.testing.assert_allclose(result.extras["cov_params"][np.ix_(perm, perm)], vcov, rtol=RTOL)
    lo = _col(got, "estimate") - stats.norm.ppf(0.975) * se
    np.testing.assert_allclose(_col(got, "ci_low"), lo, rtol=1e-6)


def test_average_marginal_effects_two_runs() -> None:
    """Hand computation: runs with x = 0 and x = 1, b = (0, 1): AME = expit(1) - 1/2."""
    ame, _ = average_marginal_effects(
        np.array([[1.0, 0.0], [1.0, 1.0]]), np.array([0.0, 1.0]), np.array([1]), np.eye(2)
    )
    assert ame[0] == pytest.approx(special.expit(1.0) - 0.5, rel=1e-15)


# ---------------------------------------------------------------------- mixed
def test_mixed_matches_mixedlm_formula(ledger: Ledger) -> None:
    """Fixed effects and SEs equal a direct statsmodels mixedlm formula fit (REML, groups
    = family) to 1e-6 (both optimize the same REML criterion; different column order)."""
    data = _pandas(ledger)
    want = smf.mixedlm(
        "score ~ " + " + ".join(LESSONS) + " + difficulty_proxy", data, groups=data["family"]
    ).fit(reml=True)
    result = attribute(ledger, method="mixed", covariates=("difficulty_proxy",))
    assert result.settings["fallback"] is False
    for f, row in _rows(result).items():
        assert row["estimate"] == pytest.approx(want.fe_params[f], rel=1e-6, abs=1e-9)
        assert row["std_error"] == pytest.approx(want.bse_fe[f], rel=1e-6)
        z = want.fe_params[f] / want.bse_fe[f]
        assert row["pvalue"] == pytest.approx(2 * stats.norm.sf(abs(z)), rel=1e-5)
        assert row["fallback"] is False
    assert result.settings["group_variance"] == pytest.approx(
        float(want.cov_re.iloc[0, 0]), rel=1e-5
    )


def _fallback_reference(ledger: Ledger):
    data = _pandas(ledger)
    return smf.ols("score ~ " + " + ".join(LESSONS) + " + C(family)", data).fit(
        cov_type="cluster", cov_kwds={"groups": pd.factorize(data["family"])[0]}, use_t=True
    )


def test_mixed_fallback_on_nonconvergence(ledger: Ledger) -> None:
    """One optimizer iteration cannot converge: the method warns, says so, and returns
    OLS with family fixed effects and cluster-robust SEs by family (statsmodels, RTOL)."""
    with pytest.warns(MixedFallbackWarning, match="did not converge"):
        result = attribute(ledger, method="mixed", max_iterations=1)
    assert result.settings["fallback"] is True
    assert "did not converge" in result.settings["fallback_reason"]
    assert any("ConvergenceWarning" in w for w in result.extras["fit_warnings"])
    want = _fallback_reference(ledger)
    for f, row in _rows(result).items():
        assert row["fallback"] is True
        assert row["estimate"] == pytest.approx(want.params[f], rel=RTOL)
        assert row["std_error"] == pytest.approx(want.bse[f], rel=RTOL)
        assert row["pvalue"] == pytest.approx(want.pvalues[f], rel=1e-6)
        assert row["df"] == 2.0  # 3 families


def test_mixed_fallback_on_singular_fit() -> None:
    """No family effect (seed 4 of this generator): statsmodels' own REML fit converges
    with the group variance exactly 0, a singular fit; the method falls back, says why,
    and its t(G - 1) inference equals statsmodels' cluster-robust OLS (RTOL)."""
    rng = np.random.default_rng(4)
    n = 120
    fam = rng.integers(0, 3, n)
    x = rng.random((n, 3)) < 0.5
    y = np.clip(0.5 + 0.05 * x[:, 0] + rng.normal(0.0, 0.1, n), 0.0, 1.0)
    exog = np.column_stack([np.ones(n), x.astype(float)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        direct = MixedLM(y, exog, groups=fam).fit(reml=True)
    assert direct.converged and float(np.asarray(direct.cov_re).ravel()[0]) == 0.0
    ids = ["a", "b", "c"]
    flat = Ledger.from_records(
        {
            "run_id": f"r{i}",
            "score": float(y[i]),
            "fact_ids": [ids[j] for j in np.flatnonzero(x[i])],
            "family": f"f{fam[i]}",
        }
        for i in range(n)
    )
    with pytest.warns(MixedFallbackWarning, match="singular"):
        result = attribute(flat, method="mixed")
    assert result.settings["fallback"] is True
    assert result.settings["group_variance"] is None
    dummies = (fam[:, None] == np.arange(1, 3)[None, :]).astype(float)
    want = sm.OLS(y, np.column_stack([exog, dummies])).fit(
        cov_type="cluster", cov_kwds={"groups": fam}, use_t=True
    )
    ci = want.conf_int(alpha=0.05)
    for j, f in enumerate(ids, start=1):
        row = result.row(f)
        assert row["estimate"] == pytest.approx(want.params[j], rel=RTOL)
        assert row["std_error"] == pytest.approx(want.bse[j], rel=RTOL)
        assert row["ci_low"] == pytest.approx(ci[j, 0], rel=RTOL)
        assert row["pvalue"] == pytest.approx(want.pvalues[j], rel=1e-6)
        assert row["df"] == 2.0


def test_mixed_fallback_on_linalg_error(ledger: Ledger, monkeypatch) -> None:
    """A LinAlgError inside MixedLM.fit triggers the same fallback."""
    from statsmodels.regression import mixed_linear_model

    def broken(*args, **kwargs):
        raise np.linalg.LinAlgError("Singular matrix")

    monkeypatch.setattr(mixed_linear_model.MixedLM, "fit", broken)
    with pytest.warns(MixedFallbackWarning, match="LinAlgError"):
        result = attribute(ledger, method="mixed")
    want = _fallback_reference(ledger)
    assert result.row("L1")["estimate"] == pytest.approx(want.params["L1"], rel=RTOL)


def test_mixed_option_errors(ledger: Ledger) -> None:
    with pytest.raises(ParameterError, match="must not contain the groups covariate 'family'"):
        attribute(ledger, method="mixed", covariates=("family",))
    with pytest.raises(ParameterError, match=r"groups: 'fam' .*'family'"):
        attribute(ledger, method="mixed", groups="fam")


def test_mixed_quiet_without_fallback(ledger: Ledger) -> None:
    """statsmodels' absolute 'boundary' warning (group variance < 0.01) is not a failure:
    no warning escapes and no fallback on the conformance-style ledger."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = attribute(ledger, method="mixed")
    assert result.settings["fallback"] is False


# ---------------------------------------------------------------------- bias by simulation
def _confounded_ledger(rng: np.random.Generator, effect: float, n: int = 160) -> Ledger:
    """Lesson L1 injected more often on hard runs: P(L1) = expit(-1.5 d / 0.1)."""
    d = rng.normal(0.0, 0.1, n)
    proxy = 0.8 * d / 0.1 + 0.6 * rng.normal(size=n)
    x = np.column_stack([rng.random(n) < expit(-1.5 * d / 0.1), rng.random((n, 3)) < 0.5])
    y = np.clip(0.5 + d + effect * x[:, 0] + rng.normal(0.0, 0.05, n), 0.0, 1.0)
    return Ledger.from_records(
        {
            "run_id": f"r{i}",
            "score": float(y[i]),
            "fact_ids": [LESSONS[j] for j in np.flatnonzero(x[i])],
            "difficulty_proxy": float(proxy[i]),
            "difficulty": float(d[i]),
        }
        for i in range(n)
    )


@pytest.mark.slow
def test_ols_with_difficulty_cuts_confounding_bias() -> None:
    """Run difficulty d ~ N(0, 0.1) raises the score and lowers L1's injection odds;
    true effect 0.05; R = 200 ledgers of 160 runs; seed fixed.

    Monte Carlo error: each bias is a mean over R replicates with standard error
    ``se = sd / sqrt(R)`` (about 0.001 here); bounds use 3.5 se.
    1. lift is biased: ``|mean| - 3.5 se > 0``.
    2. ols adjusting for the difficulty proxy (correlation 0.8) keeps at most 0.6 of
       lift's bias: ``|mean_ols| + 3.5 se_ols <= 0.6 (|mean_lift| - 3.5 se_lift)``.  The
       linear-projection approximation predicts a ratio of (1 - rho^2) / (1 - rho^2 r^2)
       ~ 0.45 with rho = 0.8 and r = corr(x_L1, d) ~ 0.55; 0.6 leaves room for the
       approximation.
    3. ols adjusting for d itself is unbiased: ``|mean| <= 3.5 se`` (clipping at 0/1 is
       more than 4 SDs away, negligible).
    """
    rng = np.random.default_rng(20260)
    reps = 200
    bias: dict[str, list[float]] = {"lift": [], "proxy": [], "exact": []}
    for _ in range(reps):
        ledger = _confounded_ledger(rng, 0.05)
        bias["lift"].append(attribute(ledger, method="lift").row("L1")["estimate"] - 0.05)
        for key, cov in (("proxy", "difficulty_proxy"), ("exact", "difficulty")):
            row = attribute(ledger, method="ols", covariates=(cov,)).row("L1")
            bias[key].append(row["estimate"] - 0.05)
    mean = {k: float(np.mean(v)) for k, v in bias.items()}
    se = {k: float(np.std(v, ddof=1) / math.sqrt(reps)) for k, v in bias.items()}
    assert abs(mean["lift"]) - 3.5 * se["lift"] > 0, (mean, se)
    assert abs(mean["proxy"]) + 3.5 * se["proxy"] <= 0.6 * (abs(mean["lift"]) - 3.5 * se["lift"]), (
        mean,
        se,
    )
    assert abs(mean["exact"]) <= 3.5 * se["exact"], (mean, se)
