"""Known-propensity estimators ``ipw`` and ``aipw``.

Exact checks use a hand-worked ledger (the arithmetic is in each docstring) and statsmodels
(WLS/OLS with HC0 sandwich standard errors) as references, to 1e-12.  Statistical checks
simulate ledgers with known truth under a fixed seed; their tolerances come from the Monte
Carlo error and are derived in each docstring.  Tolerance conventions used below:

- bias: ``|mean(estimate - truth)| <= 3.5 * sd(estimate - truth) / sqrt(R)`` over ``R``
  replicates (a two-sided 3.5-sigma band: false alarm 4.7e-4 per check, under 1% for the
  family of checks in this file);
- coverage of nominal 95% intervals pooled over ``N = R * lessons`` intervals:
  ``|coverage - 0.95| <= 3.5 * sqrt(0.05 * 0.95 / N)`` (binomial error; the lessons of one
  ledger share runs, but with independent injections their errors are nearly
  uncorrelated, so the binomial error is the right scale).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import polars as pl
import pytest
import statsmodels.api as sm
from scipy import special, stats

from cogstats import Ledger
from cogstats._validation import LedgerError, ParameterError
from cogstats.estimators import attribute
from tests.helpers import random_inclusion_ledger

FAMILY_SHIFT = np.array([-0.1, 0.0, 0.1])
Z975 = float(stats.norm.ppf(0.975))


def logged_propensity_ledger(
    rng: np.random.Generator,
    *,
    n_runs: int = 400,
    effects: tuple[float, ...] = (0.1, -0.05, 0.0, 0.05),
    confounding: float = 0.75,
    spread: float = 0.5,
    propensity_floor: float = 0.1,
    eligible_rate: float = 0.8,
    difficulty_sd: float = 0.1,
    noise_sd: float = 0.05,
    proxy_corr: float = 0.9,
) -> tuple[Ledger, dict[str, float]]:
    """Unequal, covariate-dependent (confounded) logged propensities, with the truth.

    Run ``i`` has difficulty ``d_i ~ N(0, difficulty_sd)`` (higher = easier), a task family
    (shift -0.1, 0, 0.1) and a logged ``difficulty_proxy`` (correlation ``proxy_corr``
    with ``d``).  Lesson ``j`` is eligible with probability ``eligible_rate``; if eligible
    it is injected with ``p_ij = clip(expit(o_j + confounding * d_i / difficulty_sd),
    propensity_floor, 1 - propensity_floor)``, where the offsets ``o_j`` run evenly over
    ``[-spread, spread]`` (unequal propensities across lessons).  Easy runs get lessons
    more often, so the naive with/without difference is biased upward.
    ``score = clip01(0.5 + family + d + sum of injected effects + N(0, noise_sd))``.

    The truth returned for lesson ``j`` is its sample average effect over the runs where it
    was eligible: ``mean(clip01(s_i with j) - clip01(s_i without j))`` with everything else
    in the run held fixed (so the clipping is accounted for exactly).
    """
    eff = np.asarray(effects, dtype=float)
    k = eff.size
    ids = [f"L{j + 1}" for j in range(k)]
    fam = rng.integers(0, 3, n_runs)
    d = rng.normal(0.0, difficulty_sd, n_runs)
    z = d / difficulty_sd
    proxy = proxy_corr * z + math.sqrt(1 - proxy_corr**2) * rng.normal(size=n_runs)
    offsets = np.linspace(-spread, spread, k)
    p = np.clip(
        special.expit(offsets + confounding * z[:, None]), propensity_floor, 1 - propensity_floor
    )
    eligible = rng.random((n_runs, k)) < eligible_rate
    x = eligible & (rng.random((n_runs, k)) < p)
    linear = 0.5 + FAMILY_SHIFT[fam] + d + rng.normal(0.0, noise_sd, n_runs) + x @ eff
    score = np.clip(linear, 0.0, 1.0)
    without = linear[:, None] - x * eff
    gain = np.clip(without + eff, 0.0, 1.0) - np.clip(without, 0.0, 1.0)
    truth = {ids[j]: float(gain[eligible[:, j], j].mean()) for j in range(k)}
    records = [
        {
            "run_id": f"r{i}",
            "score": float(score[i]),
            "fact_ids": [ids[j] for j in np.flatnonzero(x[i])],
            "difficulty_proxy": float(proxy[i]),
            "family": f"f{fam[i]}",
            "eligible_ids": [ids[j] for j in np.flatnonzero(eligible[i])],
            "propensities": [float(p[i, j]) for j in np.flatnonzero(eligible[i])],
        }
        for i in range(n_runs)
    ]
    return Ledger.from_records(records), truth


def hand_ledger() -> Ledger:
    """Seven runs; lesson ``a`` is eligible in r1-r5, lesson ``b`` in r1, r3, r6.

    ====  =====  ========  ===========  ============
    run   score  injected  eligible     propensities
    ====  =====  ========  ===========  ============
    r1    0.9    a         a, b         0.5, 0.5
    r2    0.7    a         a            0.25
    r3    0.4    -         a, b         0.5, 0.5
    r4    0.6    -         a            0.75
    r5    0.8    a         a            1.0   (no contrast: excluded for a)
    r6    0.2    b         b            0.5
    r7    0.5    a         (not logged: says nothing)
    ====  =====  ========  ===========  ============
    """
    rows: list[dict[str, Any]] = [
        {"run_id": "r1", "score": 0.9, "fact_ids": ["a"], "eligible_ids": ["a", "b"],
         "propensities": [0.5, 0.5]},
        {"run_id": "r2", "score": 0.7, "fact_ids": ["a"], "eligible_ids": ["a"],
         "propensities": [0.25]},
        {"run_id": "r3", "score": 0.4, "fact_ids": [], "eligible_ids": ["a", "b"],
         "propensities": [0.5, 0.5]},
        {"run_id": "r4", "score": 0.6, "fact_ids": [], "eligible_ids": ["a"],
         "propensities": [0.75]},
        {"run_id": "r5", "score": 0.8, "fact_ids": ["a"], "eligible_ids": ["a"],
         "propensities": [1.0]},
        {"run_id": "r6", "score": 0.2, "fact_ids": ["b"], "eligible_ids": ["b"],
         "propensities": [0.5]},
        {"run_id": "r7", "score": 0.5, "fact_ids": ["a"]},
    ]  # fmt: skip
    return Ledger.from_records(rows)


# ---------------------------------------------------------------------- exact checks
def test_ipw_hajek_hand_worked() -> None:
    """Hajek difference on :func:`hand_ledger`, by hand.

    Lesson a (r1-r4; r5 has p = 1 and is excluded; r7 is not logged):
    injected r1 (w = 1/0.5 = 2), r2 (w = 1/0.25 = 4):
    ``mu1 = (2*0.9 + 4*0.7) / 6 = 4.6/6 = 23/30``;
    not injected r3 (w = 1/(1-0.5) = 2), r4 (w = 1/(1-0.75) = 4):
    ``mu0 = (2*0.4 + 4*0.6) / 6 = 3.2/6 = 16/30``; estimate ``7/30``.
    Sandwich: ``mean(A w) = mean((1-A) w) = 6/4``; the influences are
    ``2(0.9-23/30)/1.5 = 8/45``, ``4(0.7-23/30)/1.5 = -8/45``, ``-2(0.4-16/30)/1.5 = 8/45``,
    ``-4(0.6-16/30)/1.5 = -8/45``, so ``se = sqrt(4 (8/45)^2) / 4 = 4/45``.
    Lesson b (r1, r3, r6; all p = 1/2): ``mu1 = 0.2``, ``mu0 = (0.9+0.4)/2 = 0.65``,
    estimate ``-0.45``; one injected run, so no standard error.  Tolerance 1e-12.
    """
    result = attribute(hand_ledger(), method="ipw")
    a = result.row("a")
    assert a["estimate"] == pytest.approx(7 / 30, abs=1e-12)
    assert a["mean_with"] == pytest.approx(23 / 30, abs=1e-12)
    assert a["mean_without"] == pytest.approx(16 / 30, abs=1e-12)
    assert a["std_error"] == pytest.approx(4 / 45, abs=1e-12)
    assert (a["trials"], a["baseline_runs"], a["excluded_runs"]) == (2, 2, 1)
    assert a["ci_low"] == pytest.approx(7 / 30 - Z975 * 4 / 45, abs=1e-12)
    assert a["ci_high"] == pytest.approx(7 / 30 + Z975 * 4 / 45, abs=1e-12)
    assert a["pvalue"] == pytest.approx(2 * stats.norm.sf((7 / 30) / (4 / 45)), abs=1e-12)
    b = result.row("b")
    assert b["estimate"] == pytest.approx(-0.45, abs=1e-12)
    assert b["std_error"] is None and b["pvalue"] is None
    assert (b["trials"], b["baseline_runs"], b["excluded_runs"]) == (1, 2, 0)
    assert result.settings["normalize"] is True and result.settings["clip"] == 0.0


def test_ipw_horvitz_thompson_hand_worked() -> None:
    """Horvitz-Thompson on :func:`hand_ledger`, lesson a, by hand.

    Per-run contrasts ``z = A Y / p - (1-A) Y / (1-p)``: r1 1.8, r2 2.8, r3 -0.8, r4 -2.4;
    estimate ``mean(z) = 1.4/4 = 0.35``; deviations 1.45, 2.45, -1.15, -2.75 with squares
    summing to 16.99, so ``se = sqrt(16.99) / 4``.  ``mean_with = (1.8 + 2.8)/4 = 1.15``,
    ``mean_without = (0.8 + 2.4)/4 = 0.8``.  Tolerance 1e-12.
    """
    a = attribute(hand_ledger(), method="ipw", normalize=False).row("a")
    assert a["estimate"] == pytest.approx(0.35, abs=1e-12)
    assert a["std_error"] == pytest.approx(math.sqrt(16.99) / 4, abs=1e-12)
    assert a["mean_with"] == pytest.approx(1.15, abs=1e-12)
    assert a["mean_without"] == pytest.approx(0.8, abs=1e-12)


def test_ipw_clip_hand_worked() -> None:
    """``clip=0.3`` on :func:`hand_ledger`, lesson a, by hand.

    r2's 0.25 becomes 0.3 and r4's 0.75 becomes 0.7 (r1, r3 at 0.5 unchanged; r5's 1.0 is
    still excluded, not clipped in):
    ``mu1 = (2*0.9 + 0.7/0.3) / (2 + 1/0.3) = (62/15) / (16/3) = 0.775``,
    ``mu0 = (2*0.4 + 0.6/0.3) / (2 + 1/0.3) = 2.8 / (16/3) = 0.525``; estimate 0.25.
    """
    a = attribute(hand_ledger(), method="ipw", clip=0.3).row("a")
    assert a["estimate"] == pytest.approx(0.25, abs=1e-12)
    assert a["mean_with"] == pytest.approx(0.775, abs=1e-12)
    assert a["excluded_runs"] == 1


def _lesson_arrays(ledger: Ledger, fact_id: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(score, injected, propensity) over the runs where ``fact_id`` was eligible."""
    ys, a_s, ps = [], [], []
    for rec in ledger.to_records():
        if rec["eligible_ids"] and fact_id in rec["eligible_ids"]:
            p = rec["propensities"][rec["eligible_ids"].index(fact_id)]
            if 0 < p < 1:
                ys.append(rec["score"])
                a_s.append(fact_id in rec["fact_ids"])
                ps.append(p)
    return np.asarray(ys), np.asarray(a_s, dtype=float), np.asarray(ps)


def test_ipw_matches_statsmodels_sandwich() -> None:
    """Hajek = WLS of score on [1, A] with weights A/p + (1-A)/(1-p), HC0 standard error;
    Horvitz-Thompson = OLS of z on a constant, HC0 (statsmodels, 1e-10 relative).

    The weighted regression's slope is the difference of the two weighted means (the Hajek
    estimate) and its HC0 sandwich is the M-estimation sandwich of the two ratio
    estimators; the HC0 variance of a mean is ``sum(e^2)/n^2``.
    """
    ledger, _ = logged_propensity_ledger(np.random.default_rng(42), n_runs=300)
    hajek = attribute(ledger, method="ipw")
    ht = attribute(ledger, method="ipw", normalize=False)
    for fact_id in ledger.fact_ids:
        y, a, p = _lesson_arrays(ledger, fact_id)
        w = a / p + (1 - a) / (1 - p)
        fit = sm.WLS(y, sm.add_constant(a), weights=w).fit(cov_type="HC0")
        row = hajek.row(fact_id)
        assert row["estimate"] == pytest.approx(fit.params[1], rel=1e-10)
        assert row["std_error"] == pytest.approx(fit.bse[1], rel=1e-10)
        assert row["trials"] == int(a.sum()) and row["baseline_runs"] == int((1 - a).sum())
        z = a * y / p - (1 - a) * y / (1 - p)
        fit_ht = sm.OLS(z, np.ones_like(z)).fit(cov_type="HC0")
        row = ht.row(fact_id)
        assert row["estimate"] == pytest.approx(fit_ht.params[0], rel=1e-10)
        assert row["std_error"] == pytest.approx(fit_ht.bse[0], rel=1e-10)


@pytest.mark.parametrize("method", ["ipw", "aipw"])
def test_missing_propensities_say_what_to_log(method: str) -> None:
    plain = Ledger.from_records(
        [{"run_id": f"r{i}", "score": 0.5, "fact_ids": ["a"] if i % 2 else []} for i in range(6)]
    )
    with pytest.raises(LedgerError, match=r"eligible_ids.*propensities") as err:
        attribute(plain, method=method, rng=0)
    assert "probability" in str(err.value) and method in str(err.value)
    half = Ledger.from_records(
        [{"run_id": "r0", "score": 0.5, "fact_ids": [], "eligible_ids": None,
          "propensities": None}]
    )  # fmt: skip
    with pytest.raises(LedgerError, match="no run has them logged"):
        attribute(half, method=method, rng=0)


def test_conflicting_duplicate_propensities_raise() -> None:
    base = [
        {"run_id": "r1", "score": 0.6, "fact_ids": ["a"], "eligible_ids": ["a"],
         "propensities": [0.5]},
        {"run_id": "r2", "score": 0.4, "fact_ids": [], "eligible_ids": ["a", "a"],
         "propensities": [0.5, 0.5]},
    ]  # fmt: skip
    # an identical duplicate counts once
    assert attribute(Ledger.from_records(base), method="ipw").row("a")["baseline_runs"] == 1
    base[1]["propensities"] = [0.5, 0.25]
    with pytest.raises(LedgerError, match=r"row 2.*listed twice"):
        attribute(Ledger.from_records(base), method="ipw")


def test_aipw_closed_form_without_features() -> None:
    """``aipw`` with ``folds=1`` and no features on :func:`hand_ledger`, lesson a, by hand.

    The outcome models are the arm means: ``m1 = (0.9+0.7)/2 = 0.8``, ``m0 = (0.4+0.6)/2
    = 0.5``.  Scores ``phi = m1 - m0 + A(Y-m1)/p - (1-A)(Y-m0)/(1-p)``: r1 0.3 + 0.1/0.5 =
    0.5, r2 0.3 - 0.1/0.25 = -0.1, r3 0.3 + 0.1/0.5 = 0.5, r4 0.3 - 0.1/0.25 = -0.1;
    estimate 0.2; sd (n-1) = sqrt(4 * 0.09 / 3) = sqrt(0.12), se = sqrt(0.12)/2 =
    sqrt(0.03).  Arm means: ``mean(m1 + A(Y-m1)/p) = (1.0+0.4+0.8+0.8)/4 = 0.75``,
    ``mean(m0 + (1-A)(Y-m0)/(1-p)) = (0.5+0.5+0.3+0.9)/4 = 0.55``.  Lesson b has one
    injected run (< 2): null row.  Tolerance 1e-12.
    """
    result = attribute(hand_ledger(), method="aipw", folds=1, lesson_indicators=False, rng=0)
    a = result.row("a")
    assert a["estimate"] == pytest.approx(0.2, abs=1e-12)
    assert a["std_error"] == pytest.approx(math.sqrt(0.03), abs=1e-12)
    assert a["mean_with"] == pytest.approx(0.75, abs=1e-12)
    assert a["mean_without"] == pytest.approx(0.55, abs=1e-12)
    assert (a["trials"], a["baseline_runs"], a["excluded_runs"]) == (2, 2, 1)
    b = result.row("b")
    assert b["estimate"] is None and b["std_error"] is None and b["trials"] == 1
    assert result.extras["features"]["a"] == ["intercept"]


def test_aipw_no_cross_fitting_matches_statsmodels_ols() -> None:
    """``folds=1``: the AIPW estimate rebuilt from statsmodels OLS predictions (per arm, on
    an intercept, the other lessons' indicators, the proxy and family dummies f1, f2)
    equals cogstats' to 1e-10, and its standard error is ``sd(phi, ddof=1)/sqrt(n)``."""
    ledger, _ = logged_propensity_ledger(np.random.default_rng(7), n_runs=300)
    result = attribute(
        ledger, method="aipw", folds=1, covariates=["difficulty_proxy", "family"], rng=0
    )
    records = ledger.to_records()
    for fact_id in ledger.fact_ids:
        others = [f for f in ledger.fact_ids if f != fact_id]
        xs, ys, a_s, ps = [], [], [], []
        for rec in records:
            if rec["eligible_ids"] and fact_id in rec["eligible_ids"]:
                xs.append(
                    [1.0]
                    + [float(o in rec["fact_ids"]) for o in others]
                    + [rec["difficulty_proxy"], rec["family"] == "f1", rec["family"] == "f2"]
                )
                ys.append(rec["score"])
                a_s.append(fact_id in rec["fact_ids"])
                ps.append(rec["propensities"][rec["eligible_ids"].index(fact_id)])
        x, y, a, p = np.asarray(xs, float), np.asarray(ys), np.asarray(a_s), np.asarray(ps)
        m1 = sm.OLS(y[a], x[a]).fit().predict(x)
        m0 = sm.OLS(y[~a], x[~a]).fit().predict(x)
        phi = m1 - m0 + a * (y - m1) / p - (~a) * (y - m0) / (1 - p)
        row = result.row(fact_id)
        assert row["estimate"] == pytest.approx(phi.mean(), rel=1e-10)
        assert row["std_error"] == pytest.approx(phi.std(ddof=1) / np.sqrt(len(phi)), rel=1e-10)
        assert result.extras["features"][fact_id][-3:] == [
            "difficulty_proxy",
            "family=f1",
            "family=f2",
        ]


def test_aipw_folds_draw_from_rng() -> None:
    ledger, _ = logged_propensity_ledger(np.random.default_rng(3), n_runs=200)
    one = attribute(ledger, method="aipw", folds=1, rng=1).to_frame()
    assert one.equals(attribute(ledger, method="aipw", folds=1, rng=2).to_frame())
    two_a = attribute(ledger, method="aipw", folds=2, rng=1)
    two_b = attribute(ledger, method="aipw", folds=2, rng=2)
    assert not np.allclose(two_a.to_frame()["estimate"], two_b.to_frame()["estimate"])
    assert two_a.seed == 1 and two_a.settings["folds"] == 2


def test_aipw_covariate_errors_name_the_option() -> None:
    ledger, _ = logged_propensity_ledger(np.random.default_rng(3), n_runs=50)
    with pytest.raises(ParameterError, match=r"covariates must name .*'difficulty_proxy'"):
        attribute(ledger, method="aipw", covariates=["difficulty"], rng=0)
    with pytest.raises(ParameterError, match="covariates must be a list"):
        attribute(ledger, method="aipw", covariates="difficulty_proxy", rng=0)
    with pytest.raises(ParameterError, match="covariates must name"):
        attribute(ledger, method="aipw", covariates=["propensities"], rng=0)
    records = ledger.to_records()
    records[0]["difficulty_proxy"] = None
    with pytest.raises(ParameterError, match=r"covariates: 'difficulty_proxy' is missing in 1"):
        attribute(Ledger.from_records(records), method="aipw", covariates=["difficulty_proxy"])


def test_lessons_never_eligible_get_null_rows() -> None:
    """A lesson injected only in runs without logged propensities has no eligible runs."""
    records = [*hand_ledger().to_records(), {"run_id": "r8", "score": 0.3, "fact_ids": ["c"]}]
    for method in ("ipw", "aipw"):
        row = attribute(Ledger.from_records(records), method=method, rng=0).row("c")
        assert (row["trials"], row["baseline_runs"], row["estimate"]) == (0, 0, None)


# ---------------------------------------------------------------------- simulation checks
def _collect(
    ledgers: list[tuple[Ledger, dict[str, float]]], runs: dict[str, tuple[str, dict[str, Any]]]
) -> dict[str, dict[str, np.ndarray]]:
    """Errors, standard errors and coverage per estimator: arrays of shape (R, lessons)."""
    out: dict[str, dict[str, list[np.ndarray]]] = {
        name: {"err": [], "se": [], "cover": []} for name in runs
    }
    rng = np.random.default_rng(2026)
    for ledger, truth in ledgers:
        for name, (method, options) in runs.items():
            frame = attribute(ledger, method=method, rng=rng, **options).to_frame()
            frame = frame.sort("fact_id")
            t = np.array([truth[f] for f in frame["fact_id"]])
            lo, hi = frame["ci_low"].to_numpy(), frame["ci_high"].to_numpy()
            out[name]["err"].append(frame["estimate"].to_numpy() - t)
            out[name]["se"].append(frame["std_error"].to_numpy())
            out[name]["cover"].append((lo <= t) & (t <= hi))
    return {n: {k: np.asarray(v) for k, v in d.items()} for n, d in out.items()}


def _assert_unbiased(err: np.ndarray, name: str, allowance: np.ndarray | float = 0.0) -> None:
    r = err.shape[0]
    mcse = err.std(axis=0, ddof=1) / math.sqrt(r)
    bias = err.mean(axis=0)
    assert np.all(np.abs(bias) <= 3.5 * mcse + allowance), (name, bias, mcse, allowance)


def _assert_covers(cover: np.ndarray, name: str) -> float:
    n = cover.size
    rate = float(cover.mean())
    tol = 3.5 * math.sqrt(0.05 * 0.95 / n)
    assert abs(rate - 0.95) <= tol, (name, rate, tol)
    return rate


@pytest.mark.slow
def test_randomized_inclusion_unbiased_and_covered() -> None:
    """Randomized inclusion, p = 1/2 logged (``random_inclusion_ledger``), R = 300 ledgers of
    200 runs, effects (0.08, 0, -0.06, 0.04), difficulty and noise sd 0.05.

    Truth = the effects: the score is clipped to [0, 1] but the largest mean score is
    0.5 + 0.1 + 0.12 = 0.72 with sd sqrt(0.05^2 + 0.05^2) = 0.071, so the clipped mass
    ``E[(s - 1)^+] < 1e-6`` (3.96 sd), far below the Monte Carlo error (about 1e-3).  With
    p = 1/2 the Hajek estimate is the difference of means: exactly unbiased.  Tolerances as
    in the module docstring (3.5 MC standard errors; coverage over 1200 intervals:
    +-0.022).  Estimators: ipw, aipw (lesson indicators only), aipw with the difficulty
    proxy and family as covariates.
    """
    effects = (0.08, 0.0, -0.06, 0.04)
    truth = {f"L{j + 1}": e for j, e in enumerate(effects)}
    rng = np.random.default_rng(20261130)
    ledgers = [
        (
            random_inclusion_ledger(
                rng, n_runs=200, effects=effects, noise_sd=0.05, difficulty_sd=0.05
            ),
            truth,
        )
        for _ in range(300)
    ]
    res = _collect(
        ledgers,
        {
            "ipw": ("ipw", {}),
            "aipw": ("aipw", {}),
            "aipw_cov": ("aipw", {"covariates": ["difficulty_proxy", "family"]}),
        },
    )
    for name, r in res.items():
        _assert_unbiased(r["err"], name)
        _assert_covers(r["cover"], name)


@pytest.mark.slow
def test_confounded_propensities_lift_biased_ipw_aipw_not() -> None:
    """Unequal, confounded propensities (:func:`logged_propensity_ledger` defaults: 400 runs,
    p in [0.1, 0.9] rising with the run's easiness), R = 250 ledgers.

    - naive ``lift`` is biased upward: its mean error must exceed 20 MC standard errors
      (measured about 0.06, i.e. about 75 MC standard errors).
    - Horvitz-Thompson (``normalize=False``) and AIPW are unbiased: 3.5 MC standard errors.
    - Hajek is a ratio estimator, unbiased only to first order; its second-order bias is
      ``(E[(1-A)(Y-mu0)/(1-p)^2] - E[A(Y-mu1)/p^2]) / n`` (delta method on the two ratios,
      about 7e-4 here, about 0.7 MC standard errors), estimated by plug-in in every
      replicate and allowed on top of the 3.5 MC standard errors.
    - coverage of ipw and aipw (pooled over 1000 intervals: +-0.024).
    - AIPW with the proxy and family as covariates has a smaller mean squared error than
      IPW: the paired per-replicate difference of squared errors (averaged over lessons)
      must be positive by 3.5 of its standard errors (measured variance ratio about 0.2).
    """
    rng = np.random.default_rng(1130)
    ledgers = [logged_propensity_ledger(rng) for _ in range(250)]
    res = _collect(
        ledgers,
        {
            "lift": ("lift", {}),
            "ipw": ("ipw", {}),
            "ht": ("ipw", {"normalize": False}),
            "aipw": ("aipw", {}),
            "aipw_cov": ("aipw", {"covariates": ["difficulty_proxy", "family"]}),
        },
    )
    lift_err = res["lift"]["err"]
    lift_mcse = lift_err.std(axis=0, ddof=1) / math.sqrt(lift_err.shape[0])
    assert np.all(lift_err.mean(axis=0) > 20 * lift_mcse), (lift_err.mean(axis=0), lift_mcse)
    for name in ("ht", "aipw", "aipw_cov"):
        _assert_unbiased(res[name]["err"], name)
    _assert_unbiased(res["ipw"]["err"], "ipw", np.abs(_hajek_second_order_bias(ledgers)))
    for name in ("ipw", "ht", "aipw", "aipw_cov"):
        _assert_covers(res[name]["cover"], name)
    diff = (res["ipw"]["err"] ** 2 - res["aipw_cov"]["err"] ** 2).mean(axis=1)
    assert diff.mean() > 3.5 * diff.std(ddof=1) / math.sqrt(diff.size), diff.mean()
    assert np.nanmean(res["aipw_cov"]["se"]) < np.nanmean(res["ipw"]["se"])


def _hajek_second_order_bias(ledgers: list[tuple[Ledger, dict[str, float]]]) -> np.ndarray:
    """Mean over replicates of the plug-in delta-method bias of the Hajek difference, per
    lesson in sorted order (see the test docstring)."""
    out = []
    for ledger, _ in ledgers:
        frame = attribute(ledger, method="ipw").to_frame().sort("fact_id")
        row = []
        for f, mu1, mu0 in zip(
            frame["fact_id"], frame["mean_with"], frame["mean_without"], strict=True
        ):
            y, a, p = _lesson_arrays(ledger, f)
            b1 = np.mean(a * (y - mu1) / p**2)
            b0 = np.mean((1 - a) * (y - mu0) / (1 - p) ** 2)
            row.append((b0 - b1) / y.size)
        out.append(row)
    return np.asarray(out).mean(axis=0)


def test_randomized_ledger_runs_with_all_estimators() -> None:
    """The conformance ledger (p = 1/2 for all lessons) works for both, with no exclusions."""
    ledger = random_inclusion_ledger(np.random.default_rng(0))
    for method in ("ipw", "aipw"):
        frame = attribute(ledger, method=method, rng=0).to_frame()
        assert frame["excluded_runs"].to_list() == [0] * frame.height
        assert (frame["trials"] + frame["baseline_runs"]).to_list() == [len(ledger)] * 6
        assert frame.select(pl.col("std_error").is_null().any()).item() is False
