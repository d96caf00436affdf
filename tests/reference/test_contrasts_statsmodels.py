"""Fixed-size prompts: lesson effects relative to the mean lesson, against statsmodels.

When every run carries the same number of lessons, ``ols``, ``fraclogit``, ``mixed`` and
``freedman_lane`` report ``b_j - mean(b)`` over the pool (column ``relative_to``).  The
references are built here independently:

* deviation (sum-to-zero) coding: ``b = T theta`` with ``b_last = -sum(theta)``, the
  design ``[1, covariates, X T]`` fitted by statsmodels (OLS with every ``cov_type``,
  GLM Binomial, MixedLM); ``theta_j`` is lesson ``j``'s contrast and the last lesson's is
  statsmodels' ``t_test`` of ``-sum(theta)``;
* statsmodels OLS on the rank-deficient design (``method="pinv"``) and ``t_test`` of the
  estimable contrasts ``e_j - 1/p``;
* a one-permutation-at-a-time Freedman-Lane loop on deviation-coded designs.

Tolerances as in test_regression_statsmodels.py: 1e-8 relative where both sides solve
the same least-squares problem; 1e-6 for IRLS and REML (iterative) fits; 1e-9 for the
permuted t statistics.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
import statsmodels.api as sm
from scipy.special import expit
from statsmodels.regression.mixed_linear_model import MixedLM

from cogstats import Ledger, attribute
from cogstats.estimators.regression import glm_robust_cov
from tests.helpers import fixed_size_ledger

RTOL = 1e-8


def _arrays(ledger: Ledger) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """Lesson ids (sorted), their 0/1 matrix, the score, and [1, difficulty, family dummies]."""
    frame = ledger.frame
    ids = sorted(ledger.fact_ids)
    x = np.array([[f in row for f in ids] for row in frame["fact_ids"].to_list()], dtype=float)
    fam = frame["family"].to_list()
    dummies = np.column_stack([[f == lev for f in fam] for lev in ("f1", "f2")]).astype(float)
    controls = np.column_stack([np.ones(len(fam)), frame["difficulty_proxy"].to_numpy(), dummies])
    return ids, x, frame["score"].to_numpy(), controls


def _deviation(p: int, reference: int | None = None) -> np.ndarray:
    """``T`` (p x p-1): ``b = T theta`` with ``sum(b) = 0``; ``reference`` carries -sum(theta)."""
    r = p - 1 if reference is None else reference
    t = np.zeros((p, p - 1))
    others = [j for j in range(p) if j != r]
    for k, j in enumerate(others):
        t[j, k] = 1.0
    t[r, :] = -1.0
    return t


def _by_id(frame: pl.DataFrame, ids: list[str], column: str) -> np.ndarray:
    rows = dict(zip(frame["fact_id"].to_list(), frame[column].to_list(), strict=True))
    return np.asarray([rows[f] for f in ids], dtype=float)


def _deviation_fit(fit: object, q: int, p: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every lesson's contrast, standard error and p-value from a deviation-coded fit."""
    est, se, pv = np.empty(p), np.empty(p), np.empty(p)
    for j in range(p):
        r = np.zeros(q + p - 1)
        if j < p - 1:
            r[q + j] = 1.0
        else:
            r[q:] = -1.0
        test = fit.t_test(r)  # type: ignore[attr-defined]
        est[j] = float(np.squeeze(test.effect))
        se[j] = float(np.squeeze(test.sd))
        pv[j] = float(np.squeeze(test.pvalue))
    return est, se, pv


@pytest.fixture(scope="module")
def fixed() -> Ledger:
    return fixed_size_ledger(np.random.default_rng(11))


@pytest.mark.parametrize("cov", ["nonrobust", "HC3", "cluster"])
def test_ols_equals_deviation_coding(fixed: Ledger, cov: str) -> None:
    """Every lesson gets ``b_j - mean(b)``, equal to statsmodels' deviation-coded fit."""
    ledger = fixed
    options: dict = {"cov": cov, "covariates": ("difficulty_proxy", "family")}
    if cov == "cluster":
        batch = (pl.int_range(pl.len()) // 12).alias("batch")
        ledger = Ledger.from_frame(fixed.frame.with_columns(batch))
        options["cluster"] = "batch"
    frame = attribute(ledger, "ols", **options).to_frame()
    ids, x, y, controls = _arrays(ledger)
    p, q = x.shape[1], controls.shape[1]
    exog = np.hstack([controls, x @ _deviation(p)])
    if cov == "cluster":
        groups = ledger.covariate("batch").to_numpy()
        fit = sm.OLS(y, exog).fit(cov_type="cluster", cov_kwds={"groups": groups})
    else:
        fit = sm.OLS(y, exog).fit(cov_type=cov, use_t=True)  # as ols: t with residual df
    est, se, pv = _deviation_fit(fit, q, p)
    np.testing.assert_allclose(_by_id(frame, ids, "estimate"), est, rtol=RTOL, atol=1e-12)
    np.testing.assert_allclose(_by_id(frame, ids, "std_error"), se, rtol=RTOL)
    np.testing.assert_allclose(_by_id(frame, ids, "pvalue"), pv, rtol=1e-6, atol=1e-12)
    assert frame["relative_to"].to_list() == ["mean of 12 lessons"] * 12
    assert frame["identifiable"].all()
    assert abs(float(frame["estimate"].sum())) < 1e-12
    # the planted lessons: harmful below 0, helpful above (truth: -0.08, -0.08, +0.16)
    truth = {"M01": -0.08, "M02": -0.08, "M03": 0.16}
    for f, effect in truth.items():
        row = frame.filter(pl.col("fact_id") == f).row(0, named=True)
        assert row["ci_low"] < effect < row["ci_high"]
        assert np.sign(row["estimate"]) == np.sign(effect) and row["pvalue"] < 1e-6


def test_ridge_on_fixed_size_prompts_is_relative_to_the_mean(fixed: Ledger) -> None:
    """Ridge's estimates lie in the design's row space: they sum to 0 over the pool."""
    result = attribute(fixed, "ridge", covariates=("difficulty_proxy", "family"))
    frame = result.to_frame()
    assert frame["relative_to"].to_list() == ["mean of 12 lessons"] * 12
    assert abs(float(frame["estimate"].sum())) < 1e-12
    assert "relative to the pool's mean lesson" in result.settings["contrasts"]


def test_ols_equals_pinv_contrasts(fixed: Ledger) -> None:
    """The same contrasts from statsmodels' pseudo-inverse fit of the rank-deficient design."""
    frame = attribute(
        fixed, "ols", cov="nonrobust", covariates=("difficulty_proxy", "family")
    ).to_frame()
    ids, x, y, controls = _arrays(fixed)
    p, q = x.shape[1], controls.shape[1]
    fit = sm.OLS(y, np.hstack([controls, x])).fit(method="pinv")
    contrasts = np.hstack([np.zeros((p, q)), np.eye(p) - 1.0 / p])
    test = fit.t_test(contrasts)
    np.testing.assert_allclose(_by_id(frame, ids, "estimate"), test.effect, rtol=RTOL, atol=1e-12)
    np.testing.assert_allclose(_by_id(frame, ids, "std_error"), np.ravel(test.sd), rtol=RTOL)


def test_two_pools_and_a_free_lesson() -> None:
    """Two pools of constant count and one lesson in about half the runs (absolute)."""
    gen = np.random.default_rng(5)
    n = 300
    a_ids = [f"A{j}" for j in range(6)]
    b_ids = [f"B{j}" for j in range(5)]
    effect = {"A0": -0.1, "A3": 0.05, "B1": 0.08, "free": -0.06}
    records = []
    for i in range(n):
        facts = [a_ids[j] for j in gen.choice(6, 2, replace=False)]
        facts += [b_ids[int(gen.integers(5))]]
        if gen.random() < 0.5:
            facts.append("free")
        score = 0.5 + sum(effect.get(f, 0.0) for f in facts) + gen.normal(0, 0.04)
        records.append({"run_id": f"r{i}", "score": float(score), "fact_ids": facts})
    ledger = Ledger.from_records(records)
    frame = attribute(ledger, "ols", cov="HC3").to_frame()
    rel = dict(zip(frame["fact_id"].to_list(), frame["relative_to"].to_list(), strict=True))
    assert {rel[f] for f in a_ids} == {"mean of pool 1 (6 lessons)"}
    assert {rel[f] for f in b_ids} == {"mean of pool 2 (5 lessons)"}
    assert rel["free"] is None
    ids = [*a_ids, *b_ids, "free"]
    x = np.array([[f in r["fact_ids"] for f in ids] for r in records], dtype=float)
    y = np.array([r["score"] for r in records])
    ta, tb = _deviation(6), _deviation(5)
    exog = np.hstack([np.ones((n, 1)), x[:, :6] @ ta, x[:, 6:11] @ tb, x[:, 11:]])
    fit = sm.OLS(y, exog).fit(cov_type="HC3")
    rows = np.zeros((12, exog.shape[1]))
    rows[:6, 1:6] = ta
    rows[6:11, 6:10] = tb
    rows[11, 10] = 1.0
    test = fit.t_test(rows)
    np.testing.assert_allclose(_by_id(frame, ids, "estimate"), test.effect, rtol=RTOL, atol=1e-12)
    np.testing.assert_allclose(_by_id(frame, ids, "std_error"), np.ravel(test.sd), rtol=RTOL)
    for pool in (a_ids, b_ids):
        assert abs(float(frame.filter(pl.col("fact_id").is_in(pool))["estimate"].sum())) < 1e-12


def test_runs_with_fewer_lessons_give_absolute_effects() -> None:
    """A third of the runs carry one lesson fewer: the absolute effects are estimated."""
    ledger = fixed_size_ledger(np.random.default_rng(3), short_runs=80)
    frame = attribute(ledger, "ols", covariates=("difficulty_proxy", "family")).to_frame()
    assert frame["relative_to"].null_count() == frame.height
    ids, x, y, controls = _arrays(ledger)
    fit = sm.OLS(y, np.hstack([controls, x])).fit(cov_type="HC3")
    q = controls.shape[1]
    np.testing.assert_allclose(_by_id(frame, ids, "estimate"), fit.params[q:], rtol=RTOL)
    np.testing.assert_allclose(_by_id(frame, ids, "std_error"), fit.bse[q:], rtol=RTOL)


def test_one_short_run_gives_absolute_effects_within_the_vif_threshold() -> None:
    """One run of 240 carries a lesson fewer: the absolute effects' variance inflation is
    about 60, within the default threshold (1000): absolute effects.  With
    ``vif_threshold=40`` they are too inflated and the contrasts, well determined, are
    reported instead; they equal statsmodels' ``t_test`` of ``e_j - 1/p`` on the
    (full-rank) design."""
    ledger = fixed_size_ledger(np.random.default_rng(4), short_runs=1)
    options = {"covariates": ("difficulty_proxy", "family")}
    assert attribute(ledger, "ols", **options).to_frame()["relative_to"].null_count() == 12
    result = attribute(ledger, "ols", vif_threshold=40.0, **options)
    frame = result.to_frame()
    assert frame["relative_to"].to_list() == ["mean of 12 lessons"] * 12
    assert "239 of 240 runs carry 4 of the 12 lessons" in result.settings["contrasts"]
    ids, x, y, controls = _arrays(ledger)
    p, q = x.shape[1], controls.shape[1]
    fit = sm.OLS(y, np.hstack([controls, x])).fit(cov_type="HC3")
    test = fit.t_test(np.hstack([np.zeros((p, q)), np.eye(p) - 1.0 / p]))
    np.testing.assert_allclose(_by_id(frame, ids, "estimate"), test.effect, rtol=1e-6)
    np.testing.assert_allclose(_by_id(frame, ids, "std_error"), np.ravel(test.sd), rtol=1e-6)


def test_duplicate_pair_inside_a_pool() -> None:
    """M01 and M02 always together: they stay not identifiable; the others are relative to
    the mean of all 12 (estimable: the pair enters the mean only through its sum)."""
    ledger = fixed_size_ledger(np.random.default_rng(8), pair=True, effects=(0.0,) * 12)
    frame = attribute(ledger, "ols", cov="nonrobust").to_frame()
    by = {r["fact_id"]: r for r in frame.iter_rows(named=True)}
    assert not by["M01"]["identifiable"] and by["M01"]["estimate"] is None
    assert by["M01"]["aliased_with"] == ["M02"]
    ids = [f"M{j:02d}" for j in range(3, 13)]
    assert all(by[f]["relative_to"] == "mean of 12 lessons" for f in ids)
    all_ids, x, y, _ = _arrays(ledger)
    fit = sm.OLS(y, np.hstack([np.ones((len(y), 1)), x])).fit(method="pinv")
    rows = np.hstack([np.zeros((12, 1)), np.eye(12) - 1.0 / 12])[2:]
    test = fit.t_test(rows)
    np.testing.assert_allclose(_by_id(frame, all_ids[2:], "estimate"), test.effect, rtol=RTOL)
    np.testing.assert_allclose(
        _by_id(frame, all_ids[2:], "std_error"), np.ravel(test.sd), rtol=RTOL
    )


def test_fraclogit_contrasts() -> None:
    """Log-odds contrasts and their HC0 errors equal statsmodels' deviation-coded GLM;
    the score-scale estimate is ``mean(mu (1 - mu)) * contrast`` with the delta method's
    error (gradient checked by finite differences)."""
    ledger = fixed_size_ledger(
        np.random.default_rng(21), link="logit", effects=(-0.6, -0.6, 1.2) + (0.0,) * 9
    )
    frame = attribute(
        ledger, "fraclogit", cov="HC0", covariates=("difficulty_proxy", "family")
    ).to_frame()
    ids, x, y, controls = _arrays(ledger)
    p, q = x.shape[1], controls.shape[1]
    exog = np.hstack([controls, x @ _deviation(p)])
    glm = sm.GLM(y, exog, family=sm.families.Binomial()).fit(cov_type="HC0")
    est, se, _ = _deviation_fit(glm, q, p)
    np.testing.assert_allclose(_by_id(frame, ids, "log_odds"), est, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(_by_id(frame, ids, "log_odds_se"), se, rtol=1e-6)
    cov = glm_robust_cov(glm, "HC0")
    params = np.asarray(glm.params)
    rows = []
    for j in range(p):
        r = np.zeros(exog.shape[1])
        if j < p - 1:
            r[q + j] = 1.0
        else:
            r[q:] = -1.0
        rows.append(r)

    def ame(b: np.ndarray, r: np.ndarray) -> float:
        mu = expit(exog @ b)
        return float(np.mean(mu * (1 - mu)) * (r @ b))

    want, want_se = [], []
    for r in rows:
        grad = np.array(
            [(ame(params + h, r) - ame(params - h, r)) / 2e-6 for h in np.eye(len(params)) * 1e-6]
        )
        want.append(ame(params, r))
        want_se.append(float(np.sqrt(grad @ cov @ grad)))
    np.testing.assert_allclose(_by_id(frame, ids, "estimate"), want, rtol=1e-6, atol=1e-10)
    np.testing.assert_allclose(_by_id(frame, ids, "std_error"), want_se, rtol=1e-5)
    assert frame["relative_to"].to_list() == ["mean of 12 lessons"] * 12
    by = dict(zip(frame["fact_id"].to_list(), frame["estimate"].to_list(), strict=True))
    assert by["M01"] < 0 and by["M02"] < 0 and by["M03"] > 0


def test_mixed_contrasts() -> None:
    """MixedLM (REML, random intercept per family) on the deviation-coded design."""
    ledger = fixed_size_ledger(np.random.default_rng(31), n_runs=300)
    result = attribute(ledger, "mixed", covariates=("difficulty_proxy",))
    assert result.settings["fallback"] is False
    frame = result.to_frame()
    ids, x, y, controls = _arrays(ledger)
    p = x.shape[1]
    exog = np.hstack([controls[:, :2], x @ _deviation(p)])
    codes = np.unique(ledger.covariate("family").to_list(), return_inverse=True)[1]
    fit = MixedLM(y, exog, groups=codes).fit(reml=True)
    k = exog.shape[1]
    cov = np.asarray(fit.cov_params())[:k, :k]
    r = np.zeros((p, k))
    r[: p - 1, 2:] = np.eye(p - 1)
    r[p - 1, 2:] = -1.0
    est = r @ np.asarray(fit.fe_params)
    se = np.sqrt(np.einsum("ij,jk,ik->i", r, cov, r))
    np.testing.assert_allclose(_by_id(frame, ids, "estimate"), est, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(_by_id(frame, ids, "std_error"), se, rtol=1e-5)
    assert frame["relative_to"].to_list() == ["mean of 12 lessons"] * 12


def test_freedman_lane_contrasts_match_a_statsmodels_loop() -> None:
    """For every lesson, a deviation coding that keeps it as a coefficient (the reference
    is another lesson): reduced fit without that column, its residuals permuted by the b-th
    ``rng.permutation(n)``, the full model refitted; the permuted t statistics equal the
    batched ones to 1e-9 and the p-values are identical."""
    ledger = fixed_size_ledger(np.random.default_rng(41), n_runs=60, effects=(0.0,) * 6)
    b_count = 40
    result = attribute(
        ledger,
        "freedman_lane",
        rng=7,
        permutations=b_count,
        covariates=("difficulty_proxy", "family"),
    )
    frame = result.to_frame()
    ids, x, y, controls = _arrays(ledger)
    p, q = x.shape[1], controls.shape[1]
    order = {f: k for k, f in enumerate(frame["fact_id"].to_list())}
    stream = np.random.default_rng(7)
    perms = [stream.permutation(len(y)) for _ in range(b_count)]
    for j, f in enumerate(ids):
        reference = (j + 1) % p
        t = _deviation(p, reference)
        exog = np.hstack([controls, x @ t])
        col = q + int(np.flatnonzero(t[j] == 1.0)[0])
        full = sm.OLS(y, exog).fit()
        row = frame.row(order[f], named=True)
        assert row["relative_to"] == "mean of 6 lessons"
        np.testing.assert_allclose(row["estimate"], full.params[col], rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(row["std_error"], full.bse[col], rtol=1e-10)
        np.testing.assert_allclose(row["t"], full.tvalues[col], rtol=1e-9, atol=1e-12)
        reduced = sm.OLS(y, np.delete(exog, col, axis=1)).fit()
        t_null = np.array(
            [
                sm.OLS(reduced.fittedvalues + reduced.resid[o], exog).fit().tvalues[col]
                for o in perms
            ]
        )
        got = result.extras["null_distribution"][:, order[f]]
        np.testing.assert_allclose(got, t_null, rtol=1e-9, atol=1e-9)
        t_obs = full.tvalues[col]
        count = (np.abs(t_null) >= np.abs(t_obs) - 1e-9 * max(1, abs(t_obs))).sum()
        assert row["pvalue"] == (1 + count) / (b_count + 1)


def test_simulated_accuracy_scores_contrasts_against_relative_truth() -> None:
    """A simulation whose prompts always hold 2 of 4 lessons: the rows carry relative_to,
    their truth is the lesson's effect minus the pool's mean effect, and the intervals
    cover it (at least nominally: HC3)."""
    from cogstats.reports.evaluation import attribution_accuracy, compare_attributions
    from cogstats.sim import Scenario, simulate

    effects = {"a": 0.1, "b": 0.0, "c": -0.06, "d": 0.0}
    scenario = Scenario.from_dict(
        {
            "runs": 60,
            "gate": {"type": "none"},
            "retrieval": {"policy": "randomized", "max_facts": 2, "candidate_slots": 2},
            "lessons": {"listed": [{"id": k, "effect": v} for k, v in effects.items()]},
        }
    )
    result = simulate(scenario, replicates=120, rng=4)
    truth = result.lessons.filter(pl.col("replicate") == 0)
    rows = compare_attributions(result.ledger(0), {"ols": {}}, truth=truth, rng=1)
    mean = sum(effects.values()) / 4
    got = dict(zip(rows["fact_id"].to_list(), rows["true_effect"].to_list(), strict=True))
    assert got == pytest.approx({k: v - mean for k, v in effects.items()})
    assert rows["true_effect_absolute"].to_list() == [effects[f] for f in rows["fact_id"]]
    acc = attribution_accuracy(result, {"ols": {}}, rng=1).row(0, named=True)
    assert acc["estimated_share"] == 1.0
    assert acc["coverage"] >= 0.95 - 3.5 * acc["coverage_mcse"]
