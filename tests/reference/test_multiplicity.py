"""Multiple-testing procedures: statsmodels, hand-worked examples, and error-rate simulations.

References: ``statsmodels.stats.multitest.multipletests`` (adjust, to 1e-15); closed-form
adjusted p-values and the e-BH, LORD++ and LOND rules worked by hand in the docstrings
(1e-12); the e-BH/BH equivalence of Wang & Ramdas (2022, Section 2); the definition of the
default spending sequence (summed independently with scipy's quad, 1e-9).  No published
numeric example was available offline, so the worked examples are derived here from the
papers' definitions.

Simulations (fixed seeds, independent p-values, a mix of nulls and non-nulls): an error
rate estimated over ``R`` replicates has Monte Carlo standard error ``sd / sqrt(R)`` (the
sd of the per-replicate false discovery proportion, or ``sqrt(r (1 - r))`` for a rate);
bounds are checked with 3.5 of those standard errors of slack (one-sided false alarm
2.3e-4 per check).
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from scipy import integrate, stats
from statsmodels.stats.multitest import multipletests

from cogstats._validation import ParameterError
from cogstats.estimators import LOND, LORDpp, adjust, benjamini_hochberg, e_bh
from cogstats.estimators.multiplicity import ADJUST_METHODS, default_gamma

HAND_P = [0.01, 0.04, 0.03, 0.2]


# ---------------------------------------------------------------------- adjust
@pytest.mark.parametrize("method", sorted(ADJUST_METHODS))
def test_adjust_equals_statsmodels(method: str) -> None:
    rng = np.random.default_rng(5)
    p = np.concatenate([rng.uniform(size=40), rng.beta(0.2, 5, size=20), [0.0, 1.0, 0.03, 0.03]])
    for alpha in (0.01, 0.05, 0.2):
        res = adjust(p, method, alpha=alpha)
        want_reject, want_adj, *_ = multipletests(p, alpha=alpha, method=ADJUST_METHODS[method])
        np.testing.assert_array_equal(res.rejected, want_reject)
        np.testing.assert_allclose(res.adjusted, want_adj, rtol=0, atol=1e-15)
        assert res.method == method and res.alpha == alpha
    assert adjust([], method).rejected.size == 0


@pytest.mark.parametrize(
    ("method", "adjusted", "rejected"),
    [
        # min(1, 4 p)
        ("bonferroni", [0.04, 0.16, 0.12, 0.8], [True, False, False, False]),
        # sorted 0.01, 0.03, 0.04, 0.2 -> 4*0.01, max(.04, 3*.03), max(.09, 2*.04), .2
        ("holm", [0.04, 0.09, 0.09, 0.2], [True, False, False, False]),
        # 4p/k: .04, .06, .0533, .2 -> step-up minimum from the top
        ("bh", [0.04, 0.16 / 3, 0.16 / 3, 0.2], [True, False, False, False]),
        # BH times c(4) = 1 + 1/2 + 1/3 + 1/4 = 25/12
        (
            "by",
            [0.04 * 25 / 12, 0.16 / 3 * 25 / 12, 0.16 / 3 * 25 / 12, 0.2 * 25 / 12],
            [False] * 4,
        ),
    ],
)
def test_adjust_hand_worked(method: str, adjusted: list[float], rejected: list[bool]) -> None:
    """p = (0.01, 0.04, 0.03, 0.2), m = 4, alpha = 0.05; the arithmetic is beside each case."""
    res = adjust(HAND_P, method, alpha=0.05)
    np.testing.assert_allclose(res.adjusted, adjusted, rtol=0, atol=1e-12)
    assert res.rejected.tolist() == rejected


def test_adjust_bh_agrees_with_benjamini_hochberg() -> None:
    rng = np.random.default_rng(11)
    for _ in range(50):
        p = rng.beta(0.5, 2, size=30)
        for q in (0.05, 0.1):
            assert adjust(p, "bh", alpha=q).rejected.tolist() == benjamini_hochberg(p, q).tolist()


def test_result_frame_and_immutability() -> None:
    res = adjust(HAND_P, "holm")
    frame = res.to_frame()
    assert frame.columns == ["hypothesis", "pvalue", "adjusted_pvalue", "rejected"]
    assert frame["rejected"].dtype == pl.Boolean and frame["hypothesis"].to_list() == [0, 1, 2, 3]
    assert frame["pvalue"].to_list() == HAND_P
    assert "holm" in res.summary() and "<table" in res._repr_html_() and res.n_rejected == 1
    with pytest.raises(ValueError, match="read-only"):
        res.adjusted[0] = 0.0
    assert e_bh([20.0, 1.0]).to_frame().columns[1] == "evalue"


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: adjust([0.1, 1.2], "bh"), "pvalues"),
        (lambda: adjust([0.1, float("nan")], "bh"), "pvalues"),
        (lambda: adjust([[0.1]], "bh"), "pvalues"),
        (lambda: adjust([0.1], "fdr_bh"), "method"),
        (lambda: adjust([0.1], "bh", alpha=1.0), "alpha"),
        (lambda: e_bh([1.0, -0.5]), "evalues"),
        (lambda: e_bh([1.0, float("nan")]), "evalues"),
        (lambda: e_bh(["x"]), "evalues"),
        (lambda: e_bh([1.0], alpha=0.0), "alpha"),
        (lambda: LORDpp(alpha=1.5), "alpha"),
        (lambda: LORDpp(alpha=0.05, w0=0.06), "w0"),
        (lambda: LORDpp(alpha=0.05, w0=0.0), "w0"),
        (lambda: LOND(gamma=[0.7, 0.6]), "gamma"),
        (lambda: LOND(gamma=[0.5, -0.1]), "gamma"),
        (lambda: LOND().test(1.5), "pvalue"),
        (lambda: LORDpp().test(float("nan")), "pvalue"),
        (lambda: LORDpp().run([0.1, -0.2]), "pvalues"),
    ],
)
def test_invalid_inputs_name_the_parameter(call, name: str) -> None:
    with pytest.raises(ParameterError, match=name):
        call()


# ---------------------------------------------------------------------- e-BH
def test_e_bh_hand_worked() -> None:
    """e-BH: reject the k* largest, k* = max{k : e_(k) >= m / (alpha k)}.

    (a) e = (40, 1, 12, 0.5), alpha = 0.1, m = 4: sorted 40, 12, 1, 0.5 against thresholds
    40/k = 40, 20, 13.33, 10: only k = 1 qualifies (40 >= 40: the comparison is
    inclusive), so only the first is rejected.  Adjusted ``min_{j >= k} m / (j e_(j))``:
    4/40 = 0.1, 4/24 = 1/6, 4/3, 2 -> 0.1, 1/6, 1, 1 (capped at 1).
    (b) e = (5, 30, 9, 9, 0), alpha = 0.2, m = 5: sorted 30, 9, 9, 5, 0 against 25/k = 25,
    12.5, 8.33, 6.25, 5: k = 1 and k = 3 qualify (k = 2 does not: step-up), so k* = 3 and
    30, 9, 9 are rejected.  Adjusted: ratios 1/6, 5/18, 5/27, 1/4, inf -> step-up minima
    1/6, 5/27, 5/27, 1/4, 1.
    (c) e = (inf, 0), alpha = 0.05: inf >= 40 rejects; 0 never does; adjusted 0 and 1.
    """
    a = e_bh([40.0, 1.0, 12.0, 0.5], alpha=0.1)
    assert a.rejected.tolist() == [True, False, False, False]
    np.testing.assert_allclose(a.adjusted, [0.1, 1.0, 1 / 6, 1.0], rtol=0, atol=1e-12)
    b = e_bh([5.0, 30.0, 9.0, 9.0, 0.0], alpha=0.2)
    assert b.rejected.tolist() == [False, True, True, True, False]
    np.testing.assert_allclose(b.adjusted, [0.25, 1 / 6, 5 / 27, 5 / 27, 1.0], atol=1e-12)
    c = e_bh([math.inf, 0.0], alpha=0.05)
    assert c.rejected.tolist() == [True, False] and c.adjusted.tolist() == [0.0, 1.0]
    assert e_bh([]).rejected.size == 0 and e_bh([0.5, 2.0]).n_rejected == 0


def test_e_bh_equals_bh_on_inverse_evalues() -> None:
    """Wang & Ramdas (2022, Section 2): e-BH at alpha is BH at alpha applied to min(1, 1/e)
    (statsmodels' fdr_bh), for rejections and adjusted values (1e-12)."""
    rng = np.random.default_rng(3)
    for _ in range(100):
        e = np.exp(rng.normal(1.0, 2.0, size=25))
        p = np.minimum(1.0, 1.0 / e)
        for alpha in (0.05, 0.2):
            res = e_bh(e, alpha=alpha)
            want_reject, want_adj, *_ = multipletests(p, alpha=alpha, method="fdr_bh")
            assert res.rejected.tolist() == want_reject.tolist()
            np.testing.assert_allclose(res.adjusted, want_adj, rtol=0, atol=1e-12)


# ---------------------------------------------------------------------- spending sequence
def _shape(x: float) -> float:
    return math.log(max(x, 2.0)) / (x * math.exp(math.sqrt(math.log(x))))


def test_default_gamma_sums_to_one() -> None:
    """sum_j gamma_j = 1: summed independently of the module (direct sum to 10^5 - 1 plus
    the tail integral by scipy's quad in the variable v = sqrt(log x), where the integrand
    is 2 v^3 exp(-v), plus the Euler-Maclaurin correction f(N)/2); tolerance 1e-9.  Also
    gamma_j / gamma_1 follows the closed form of the paper's sequence."""
    n = 100_000
    j = np.arange(1, n, dtype=float)
    head = float(np.sum(np.log(np.maximum(j, 2)) / (j * np.exp(np.sqrt(np.log(j))))))
    tail, _ = integrate.quad(lambda v: 2 * v**3 * math.exp(-v), math.sqrt(math.log(n)), np.inf)
    total = head + tail + _shape(n) / 2
    c = 1.0 / total
    assert default_gamma(np.arange(1, n)).sum() + c * (tail + _shape(n) / 2) == pytest.approx(
        1.0, abs=1e-9
    )
    for k in (1, 2, 3, 10, 1000):
        assert default_gamma(k)[0] == pytest.approx(c * _shape(k), rel=1e-9)
    assert default_gamma([0, -1]).tolist() == [0.0, 0.0]
    # the papers' rounded constants (0.0722; onlineFDR's 0.07720838) sum to less than 1
    assert 0.0722 * total < 0.07720838 * total < 1.0


# ---------------------------------------------------------------------- LORD++
def test_lordpp_hand_worked() -> None:
    """LORD++ with gamma = (1/2, 1/4, 1/8, 1/16, 1/16), alpha = 0.1, w0 = 0.05.

    ``alpha_t = gamma_t w0 + (alpha - w0) gamma_{t - tau_1} + alpha sum_{j>=2} gamma_{t - tau_j}``
    on p = (0.01, 0.03, 0.04, 0.1, 0.04, 0.08):
    t=1: 0.5*0.05 = 0.025, reject (tau_1 = 1);
    t=2: 0.25*0.05 + 0.05*0.5 = 0.0375, reject (tau_2 = 2);
    t=3: 0.125*0.05 + 0.05*0.25 + 0.1*0.5 = 0.06875, reject (tau_3 = 3);
    t=4: 0.0625*0.05 + 0.05*0.125 + 0.1*(0.25 + 0.5) = 0.084375, 0.1 is not rejected;
    t=5: 0.0625*0.05 + 0.05*0.0625 + 0.1*(0.125 + 0.25) = 0.04375, reject (tau_4 = 5);
    t=6: gamma_6 = 0; 0.05*0.0625 + 0.1*(0.0625 + 0.125 + 0.5) = 0.071875, no.
    Wealth: 0.05 - 0.33125 (sum of levels) + 0.05 + 3*0.1 = 0.06875.
    """
    rule = LORDpp(alpha=0.1, gamma=[0.5, 0.25, 0.125, 0.0625, 0.0625])
    assert rule.w0 == 0.05
    got = rule.run([0.01, 0.03, 0.04, 0.1, 0.04, 0.08])
    assert got.tolist() == [True, True, True, False, True, False]
    np.testing.assert_allclose(
        rule.levels, [0.025, 0.0375, 0.06875, 0.084375, 0.04375, 0.071875], rtol=0, atol=1e-12
    )
    assert rule.rejection_times == (1, 2, 3, 5) and rule.t == 6
    assert rule.wealth == pytest.approx(0.06875, abs=1e-12)
    assert "LORDpp" in repr(rule)


def test_lordpp_default_gamma_hand_worked() -> None:
    """Default gamma, alpha = 0.05 (w0 = 0.025), p = (0.001, 0.5, 0.002):
    alpha_1 = g1 w0 = 0.054815 * 0.025 = 0.00137 -> reject 0.001; alpha_2 = g2 w0 +
    (alpha - w0) g1 = 0.00167 -> keep 0.5; alpha_3 = g3 w0 + 0.025 g2 = 0.00046 -> keep
    0.002.  (g_j from :func:`default_gamma`, checked against its closed form above.)"""
    g = default_gamma([1, 2, 3])
    rule = LORDpp(alpha=0.05)
    assert rule.run([0.001, 0.5, 0.002]).tolist() == [True, False, False]
    want = [g[0] * 0.025, g[1] * 0.025 + 0.025 * g[0], g[2] * 0.025 + 0.025 * g[1]]
    np.testing.assert_allclose(rule.levels, want, rtol=1e-12)


# ---------------------------------------------------------------------- LOND
def test_lond_hand_worked() -> None:
    """LOND with gamma = (1/2, 1/4, 1/8, 1/16, 1/16), alpha = 0.1:
    ``alpha_t = alpha gamma_t (D(t-1) + 1)`` on p = (0.06, 0.02, 0.03, 0.01, 0.02, 0.5):
    t=1: 0.1*0.5*1 = 0.05, keep 0.06; t=2: 0.1*0.25*1 = 0.025, reject (D = 1);
    t=3: 0.1*0.125*2 = 0.025, keep 0.03; t=4: 0.1*0.0625*2 = 0.0125, reject (D = 2);
    t=5: 0.1*0.0625*3 = 0.01875, keep 0.02; t=6: gamma_6 = 0, keep.
    """
    rule = LOND(alpha=0.1, gamma=[0.5, 0.25, 0.125, 0.0625, 0.0625])
    assert rule.run([0.06, 0.02, 0.03, 0.01, 0.02, 0.5]).tolist() == [
        False,
        True,
        False,
        True,
        False,
        False,
    ]
    np.testing.assert_allclose(
        rule.levels, [0.05, 0.025, 0.025, 0.0125, 0.01875, 0.0], rtol=0, atol=1e-12
    )
    assert rule.rejection_times == (2, 4) and "LOND" in repr(rule)


@pytest.mark.parametrize("cls", [LORDpp, LOND])
def test_online_state_carries_over(cls) -> None:
    """Testing in two batches equals testing the concatenation once, and ``test`` equals
    ``run`` one at a time (the state is the rejection history)."""
    p = np.random.default_rng(9).beta(0.3, 3, size=60)
    whole = cls(alpha=0.1).run(p)
    split = cls(alpha=0.1)
    assert np.concatenate([split.run(p[:25]), split.run(p[25:])]).tolist() == whole.tolist()
    single = cls(alpha=0.1)
    assert [single.test(float(x)) for x in p] == whole.tolist()


# ---------------------------------------------------------------------- simulations
def _mixed_pvalues(
    rng: np.random.Generator, shape: tuple[int, int], n_alt: int, mu: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One-sided z-test p-values; the first ``n_alt`` columns are non-null (z ~ N(mu, 1)).
    Also the likelihood-ratio e-values ``exp(mu z - mu^2 / 2)`` (mean 1 under the null)."""
    z = rng.normal(size=shape)
    z[:, :n_alt] += mu
    null = np.ones(shape, dtype=bool)
    null[:, :n_alt] = False
    return stats.norm.sf(z), np.exp(mu * z - mu**2 / 2), null


def _fdp(rejected: np.ndarray, null: np.ndarray) -> np.ndarray:
    r = rejected.sum(axis=1)
    return (rejected & null).sum(axis=1) / np.maximum(r, 1)


def _bound(values: np.ndarray) -> float:
    return 3.5 * float(values.std(ddof=1)) / math.sqrt(values.size)


@pytest.mark.slow
def test_batch_fdr_and_fwer_by_simulation() -> None:
    """R = 4000 families of m = 20 independent p-values, 10 non-null (z ~ N(2.5, 1)),
    alpha = 0.1.

    - BH: FDR = alpha m0 / m = 0.05 exactly for independent continuous nulls (Benjamini &
      Yekutieli 2001, Theorem 5.1): two-sided check within 3.5 MC standard errors.
    - BY, e-BH (likelihood-ratio e-values): FDR <= alpha m0 / m + 3.5 MC standard errors.
    - Holm, Bonferroni: FWER <= alpha + 3.5 sqrt(alpha (1 - alpha) / R).
    - sensitivity: rejecting every p <= alpha has FDR above alpha m0 / m by more than 3.5
      MC standard errors here (about 0.095 against 0.05), so the checks can fail.
    """
    rng = np.random.default_rng(2022)
    r, m, alpha = 4000, 20, 0.1
    p, e, null = _mixed_pvalues(rng, (r, m), 10, 2.5)
    target = alpha * null[0].mean()
    rejected = {
        name: np.array([adjust(row, name, alpha=alpha).rejected for row in p])
        for name in ADJUST_METHODS
    }
    rejected["e-bh"] = np.array([e_bh(row, alpha=alpha).rejected for row in e])
    fdp = {name: _fdp(rej, null) for name, rej in rejected.items()}
    assert abs(fdp["bh"].mean() - target) <= _bound(fdp["bh"]), fdp["bh"].mean()
    for name in ("by", "e-bh"):
        assert fdp[name].mean() <= target + _bound(fdp[name]), (name, fdp[name].mean())
    fwer_tol = 3.5 * math.sqrt(alpha * (1 - alpha) / r)
    for name in ("holm", "bonferroni"):
        fwer = float((rejected[name] & null).any(axis=1).mean())
        assert fwer <= alpha + fwer_tol, (name, fwer)
    naive = _fdp(p <= alpha, null)
    assert naive.mean() > target + 3.5 * _bound(naive)


@pytest.mark.slow
@pytest.mark.parametrize("cls", [LORDpp, LOND])
def test_online_fdr_by_simulation(cls) -> None:
    """R = 1500 streams of 100 independent p-values, each non-null with probability 0.2
    (z ~ N(3, 1)), alpha = 0.1, default gamma.  FDR at t = 25, 50 and 100 must be at most
    alpha + 3.5 MC standard errors; LORD++'s wealth never goes negative.  Sensitivity:
    testing every p-value at alpha has FDR well above alpha in the same streams.
    """
    rng = np.random.default_rng(2017)
    r, t_max, alpha = 1500, 100, 0.1
    alt = rng.random((r, t_max)) < 0.2
    z = rng.normal(size=(r, t_max)) + 3.0 * alt
    p = stats.norm.sf(z)
    decisions = np.empty((r, t_max), dtype=bool)
    for i in range(r):
        rule = cls(alpha=alpha)
        decisions[i] = rule.run(p[i])
        if isinstance(rule, LORDpp):
            assert rule.wealth >= -1e-12
    for t in (25, 50, 100):
        fdp = _fdp(decisions[:, :t], ~alt[:, :t])
        assert fdp.mean() <= alpha + _bound(fdp), (t, fdp.mean())
    assert decisions[alt].mean() > 0.1  # it does discover
    naive = _fdp(p <= alpha, ~alt)
    assert naive.mean() > alpha + 3.5 * _bound(naive)


def test_benjamini_hochberg_equals_statsmodels_with_ties_and_grids() -> None:
    """The numpy step-up rule equals ``multipletests(method="fdr_bh")`` exactly, also on
    p-values that sit on the thresholds ``k q / m`` and with ties (the cycgraph gate's
    decisions depend on the inclusive comparison)."""
    rng = np.random.default_rng(12)
    for m in (1, 2, 5, 40):
        for q in (0.1, 0.05):
            thresholds = np.arange(1, m + 1) / m * q
            for _ in range(40):
                p = np.concatenate([rng.choice(thresholds, m // 2), rng.random(m - m // 2) * q])
                p = rng.permutation(p)
                want = multipletests(p, alpha=q, method="fdr_bh")[0]
                assert benjamini_hochberg(p, q).tolist() == want.tolist()
