"""Unit and statistical checks of the ``permutation`` and ``freedman_lane`` estimators.

Reference numbers come from: the documented random stream reproduced one permutation at
a time (``rng.permutation``), the direct definition of the overlap counts, statsmodels OLS
(estimates, standard errors, t, intervals, and a one-permutation-at-a-time Freedman-Lane
loop), and simulation.  Simulation tolerances: a rate estimated from ``N`` independent
Bernoulli trials with probability ``q`` has standard error ``sqrt(q (1 - q) / N)``; we allow
3.5 standard errors (two-sided normal tail 5e-4 per check), with fixed seeds.  Where the
permutation test is exact the target ``q`` is computed exactly (e.g. with ``B = 399``
permutations a one-sided test at 0.025 rejects with probability ``10 / 400``).
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
import statsmodels.api as sm

from cogstats import Ledger, attribute
from cogstats._validation import ParameterError
from cogstats.estimators import permutation as perm_module
from cogstats.estimators.permutation import _overlap_counts, _pack_columns
from tests.helpers import random_inclusion_ledger


def _ledger(y: np.ndarray, x: np.ndarray, **covariates: np.ndarray | list) -> Ledger:
    ids = [f"L{j + 1}" for j in range(x.shape[1])]
    covariates = {k: np.asarray(v).tolist() for k, v in covariates.items()}  # Python scalars
    return Ledger.from_records(
        {
            "run_id": f"r{i}",
            "score": float(y[i]),
            "fact_ids": [ids[j] for j in range(x.shape[1]) if x[i, j]],
            **{name: values[i] for name, values in covariates.items()},
        }
        for i in range(len(y))
    )


def _shift_ledger(
    gen: np.random.Generator, n: int, effects: tuple[float, ...], p: float = 0.5
) -> tuple[Ledger, np.ndarray, np.ndarray]:
    """Scores ``0.3 + 0.2 U + x @ effects`` (never clipped): the constant-shift model holds."""
    x = gen.random((n, len(effects))) < p
    x[0, :] = True  # every lesson in at least one run and out of at least one
    x[1, :] = False
    y = 0.3 + 0.2 * gen.random(n) + x @ np.asarray(effects)
    return _ledger(y, x), y, x


# ---------------------------------------------------------------------- the random stream
def test_null_distribution_is_the_documented_stream() -> None:
    """Permutation b is the b-th ``rng.permutation(n)``; the permuted score of run i is
    ``score[perm[i]]``; results do not depend on ``batch_size``."""
    ledger = random_inclusion_ledger(np.random.default_rng(5), n_runs=30, effects=(0.1, 0.0))
    result = attribute(ledger, method="permutation", rng=9, permutations=50, batch_size=7)
    y = ledger.scores
    x = ledger.design().dense() > 0
    gen = np.random.default_rng(9)
    expected = np.empty((50, x.shape[1]))
    for b in range(50):
        yp = y[gen.permutation(len(y))]
        expected[b] = [yp[x[:, j]].mean() - yp[~x[:, j]].mean() for j in range(x.shape[1])]
    np.testing.assert_allclose(result.extras["null_distribution"], expected, rtol=0, atol=1e-12)
    again = attribute(ledger, method="permutation", rng=9, permutations=50)
    assert again.to_frame().equals(result.to_frame())
    bare = attribute(ledger, method="permutation", rng=9, permutations=50, interval="none")
    np.testing.assert_allclose(
        bare.extras["null_distribution"], result.extras["null_distribution"], rtol=0, atol=1e-12
    )
    assert result.seed == 9
    fresh = np.random.default_rng(9).bit_generator.state
    assert result.extras["rng_state"]["bit_generator"] == fresh


def test_stratified_stream_uses_one_child_per_stratum() -> None:
    """With strata, stratum s (sorted labels) permutes its runs with child s of rng.spawn."""
    gen0 = np.random.default_rng(1)
    n = 24
    family = np.asarray(["b", "a", "c"] * 8)
    x = gen0.random((n, 2)) < 0.5
    x[:2] = [[True, True], [False, False]]
    y = gen0.random(n)
    ledger = _ledger(y, x, family=family)
    result = attribute(ledger, method="permutation", rng=4, permutations=30, strata="family")
    children = np.random.default_rng(4).spawn(3)
    members = [np.flatnonzero(family == level) for level in ("a", "b", "c")]
    expected = np.empty((30, 2))
    for b in range(30):
        idx = np.arange(n)
        for m, child in zip(members, children, strict=True):
            idx[m] = m[child.permutation(len(m))]
        yp = y[idx]
        expected[b] = [yp[x[:, j]].mean() - yp[~x[:, j]].mean() for j in range(2)]
    np.testing.assert_allclose(result.extras["null_distribution"], expected, rtol=0, atol=1e-12)
    assert result.extras["strata_labels"] == ["a", "b", "c"]
    # without intervals the scores themselves are permuted: the same stream, the same null
    bare = attribute(
        ledger, method="permutation", rng=4, permutations=30, strata="family", interval="none"
    )
    np.testing.assert_allclose(
        bare.extras["null_distribution"], result.extras["null_distribution"], rtol=0, atol=1e-12
    )


def test_seed_from_none_reproduces() -> None:
    ledger = random_inclusion_ledger(np.random.default_rng(2), n_runs=20, effects=(0.0,))
    first = attribute(ledger, method="permutation", permutations=30)
    assert isinstance(first.seed, int)
    again = attribute(ledger, method="permutation", permutations=30, rng=first.seed)
    assert again.to_frame().equals(first.to_frame())


# ---------------------------------------------------------------------- overlap counts
@pytest.mark.parametrize("compiled", [True, False])
@pytest.mark.parametrize(("n", "k"), [(1, 1), (3, 2), (17, 64), (65, 65), (130, 131)])
def test_overlap_counts_match_definition(
    n: int, k: int, compiled: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both counters (numba's carry-save adder, numpy's bit-sliced adder tree) equal
    ``sum_i X[i, j] X[idx[b, i], j]`` computed directly."""
    from cogstats.estimators import permutation

    monkeypatch.setattr(permutation, "_USE_NUMBA", compiled)
    gen = np.random.default_rng(n * 1000 + k)
    x = gen.random((n, k)) < 0.4
    idx = np.stack([gen.permutation(n) for _ in range(9)])
    direct = np.stack([(x & x[idx[b]]).sum(axis=0) for b in range(9)])
    np.testing.assert_array_equal(_overlap_counts(_pack_columns(x), idx, k), direct)


# ---------------------------------------------------------------------- interval inversion
@pytest.mark.parametrize("strata", [None, "family"])
def test_interval_endpoints_are_where_the_test_starts_rejecting(strata: str | None) -> None:
    """Testing ``score - delta x_j`` at ``delta = ci_low`` (same permutations) gives an
    equal-tail p-value above alpha; a shift 1e-7 further out gives one at or below alpha.
    Likewise at ``ci_high``.  Scores stay inside [0, 1] (effects 0.08, -0.05, 0)."""
    gen = np.random.default_rng(12)
    n = 50
    x = gen.random((n, 3)) < 0.5
    x[:2] = [[True] * 3, [False] * 3]
    y = 0.35 + 0.2 * gen.random(n) + x @ np.array([0.08, -0.05, 0.0])
    family = np.asarray(["a", "b"] * (n // 2))
    ledger = _ledger(y, x, family=family)
    kwargs = {"rng": 21, "permutations": 399, "strata": strata}
    result = attribute(ledger, method="permutation", **kwargs)
    alpha = 0.05
    eps = 1e-7
    for j in range(3):
        row = result.row(f"L{j + 1}")
        lo, hi = row["ci_low"], row["ci_high"]
        assert lo < row["estimate"] < hi
        for delta, outward in ((lo, -eps), (hi, eps)):
            inside = attribute(
                _ledger(y - delta * x[:, j], x, family=family), "permutation", **kwargs
            )
            outside = attribute(
                _ledger(y - (delta + outward) * x[:, j], x, family=family), "permutation", **kwargs
            )
            assert inside.row(f"L{j + 1}")["pvalue_equal_tail"] > alpha
            assert outside.row(f"L{j + 1}")["pvalue_equal_tail"] <= alpha


def test_one_sided_intervals() -> None:
    gen = np.random.default_rng(13)
    ledger, y, x = _shift_ledger(gen, 40, (0.05,))
    kwargs = {"rng": 2, "permutations": 199, "alternative": "greater"}
    row = attribute(ledger, method="permutation", **kwargs).row("L1")
    assert row["ci_high"] == math.inf
    lo = row["ci_low"]
    at = attribute(_ledger(y - lo * x[:, 0], x), "permutation", **kwargs).row("L1")
    beyond = attribute(_ledger(y - (lo - 1e-7) * x[:, 0], x), "permutation", **kwargs).row("L1")
    assert at["pvalue"] > 0.05 >= beyond["pvalue"]
    less = attribute(ledger, method="permutation", rng=2, permutations=199, alternative="less")
    assert less.row("L1")["ci_low"] == -math.inf


def test_few_permutations_give_unbounded_intervals() -> None:
    """With B = 10 the smallest equal-tail p-value is 2/11 > 0.05: nothing is rejected."""
    ledger = random_inclusion_ledger(np.random.default_rng(3), n_runs=30, effects=(0.2,))
    row = attribute(ledger, method="permutation", rng=1, permutations=10).row("L1")
    assert row["ci_low"] == -math.inf and row["ci_high"] == math.inf


@pytest.mark.slow
def test_interval_coverage_of_a_known_shift() -> None:
    """Coverage of the true shifts (0.1, -0.05, 0) over 1000 ledgers of 60 runs.

    The shift model holds exactly (unclipped scores, ``score - effect x`` iid), and with
    ``B = 399`` each tail of the inverted test rejects with probability exactly
    ``10 / 400``, so coverage is 0.95.  Each lesson is checked on its own: 1000 independent
    ledgers, tolerance ``3.5 sqrt(0.95 * 0.05 / 1000) = 0.024``.
    """
    effects = (0.1, -0.05, 0.0)
    gen = np.random.default_rng(2024)
    hits = np.zeros(3)
    m = 1000
    for _ in range(m):
        ledger, _, _ = _shift_ledger(gen, 60, effects)
        frame = attribute(ledger, method="permutation", rng=gen, permutations=399).to_frame()
        lo = frame["ci_low"].to_numpy()
        hi = frame["ci_high"].to_numpy()
        order = [int(f[1:]) - 1 for f in frame["fact_id"]]
        truth = np.asarray(effects)[order]
        hits[order] += (lo <= truth) & (truth <= hi)
    tol = 3.5 * math.sqrt(0.95 * 0.05 / m)
    assert np.all(np.abs(hits / m - 0.95) <= tol), hits / m


# ---------------------------------------------------------------------- max-T
def test_maxt_from_the_kept_null_and_not_below_raw() -> None:
    """pvalue_maxt recomputed from the kept null distribution (exact closed-form centre and
    sd, unstratified), and pvalue_maxt >= pvalue for every lesson and alternative."""
    ledger = random_inclusion_ledger(
        np.random.default_rng(8), n_runs=60, effects=(0.1, 0.0, -0.05, 0.0)
    )
    for alternative in ("two-sided", "greater", "less"):
        res = attribute(
            ledger, method="permutation", rng=5, permutations=499, alternative=alternative
        )
        frame = res.to_frame()
        null = res.extras["null_distribution"]
        z = (null - frame["null_mean"].to_numpy()) / frame["std_error"].to_numpy()
        z_obs = frame["z"].to_numpy()
        stat = {"two-sided": np.abs, "greater": lambda v: v, "less": lambda v: -v}[alternative]
        maxima = stat(z).max(axis=1)
        np.testing.assert_allclose(res.extras["max_statistic"], maxima, rtol=1e-12)
        tie = 1e-9 * ledger.scores.max() / frame["std_error"].to_numpy()
        expected = (1 + (maxima[:, None] >= stat(z_obs)[None, :] - tie).sum(axis=0)) / 500
        np.testing.assert_allclose(frame["pvalue_maxt"].to_numpy(), expected)
        assert (frame["pvalue_maxt"] >= frame["pvalue"]).all()


@pytest.mark.slow
@pytest.mark.parametrize("method", ["permutation", "freedman_lane"])
def test_maxt_family_wise_error_under_the_global_null(method: str) -> None:
    """Global null (8 lessons of effect 0, 80 runs, random inclusion): the share of ledgers
    with any pvalue_maxt <= 0.05 is the family-wise error.  With ``B = 399`` the max-T test
    rejects with probability exactly ``20 / 400 = 0.05`` for ``permutation`` (exchangeable
    scores); Freedman-Lane is approximately exact.  600 ledgers: tolerance
    ``3.5 sqrt(0.05 * 0.95 / 600) = 0.031``.  Unadjusted p-values reject somewhere in about
    ``1 - 0.95^8 = 0.34`` of the ledgers, far outside that band.
    """
    gen = np.random.default_rng([31, len(method)])
    m = 600
    any_adj = 0
    any_raw = 0
    for _ in range(m):
        ledger = random_inclusion_ledger(gen, n_runs=80, effects=(0.0,) * 8)
        frame = attribute(ledger, method=method, rng=gen, permutations=399).to_frame()
        any_adj += bool((frame["pvalue_maxt"] <= 0.05).any())
        any_raw += bool((frame["pvalue"] <= 0.05).any())
        assert (frame["pvalue_maxt"] >= frame["pvalue"]).all()
    tol = 3.5 * math.sqrt(0.05 * 0.95 / m)
    assert abs(any_adj / m - 0.05) <= tol, any_adj / m
    assert any_raw / m > 0.05 + tol, any_raw / m


# ---------------------------------------------------------------------- Freedman-Lane
def _confounded_ledger(gen: np.random.Generator, n: int = 60) -> Ledger:
    """Inclusion and score both depend on the task family; lessons have no effect."""
    fam = gen.integers(0, 3, n)
    x = gen.random((n, 3)) < np.array([0.25, 0.5, 0.75])[fam][:, None]
    x[:2] = [[True] * 3, [False] * 3]
    proxy = gen.normal(size=n)
    y = np.clip(0.5 + 0.12 * (fam - 1) + 0.03 * proxy + gen.normal(0, 0.05, n), 0, 1)
    return _ledger(y, x, family=[f"f{v}" for v in fam], proxy=proxy.tolist())


def test_freedman_lane_matches_a_statsmodels_loop() -> None:
    """One permutation at a time: reduced statsmodels OLS without the lesson, its residuals
    permuted by the b-th ``rng.permutation(n)``, full statsmodels OLS refitted; the permuted
    t-statistics equal the batched ones to 1e-9, so the p-values are identical.  Estimates,
    standard errors, t and the 95% interval equal statsmodels' full fit to 1e-10."""
    gen = np.random.default_rng(77)
    ledger = _confounded_ledger(gen, 40)
    b_count = 60
    result = attribute(
        ledger,
        method="freedman_lane",
        rng=123,
        permutations=b_count,
        covariates=("proxy", "family"),
        batch_size=7,
    )
    frame = result.to_frame()
    y = ledger.scores
    design = ledger.design()
    x = design.dense()
    fam = ledger.covariate("family").to_list()
    dummies = np.column_stack([[f == level for f in fam] for level in ("f1", "f2")]).astype(float)
    controls = np.column_stack([np.ones(len(y)), ledger.covariate("proxy").to_numpy(), dummies])
    exog = np.hstack([controls, x])
    full = sm.OLS(y, exog).fit()
    lesson_pos = controls.shape[1] + np.arange(x.shape[1])
    np.testing.assert_allclose(frame["estimate"], full.params[lesson_pos], rtol=1e-10)
    np.testing.assert_allclose(frame["std_error"], full.bse[lesson_pos], rtol=1e-10)
    np.testing.assert_allclose(frame["t"], full.tvalues[lesson_pos], rtol=1e-10)
    np.testing.assert_allclose(frame["pvalue_ols"], full.pvalues[lesson_pos], rtol=1e-8)
    ci = full.conf_int(0.05)[lesson_pos]
    np.testing.assert_allclose(frame["ci_low"], ci[:, 0], rtol=1e-10)
    np.testing.assert_allclose(frame["ci_high"], ci[:, 1], rtol=1e-10)

    reduced = []
    for j, col in enumerate(lesson_pos):
        fit = sm.OLS(y, np.delete(exog, col, axis=1)).fit()
        reduced.append((j, col, fit.fittedvalues, fit.resid))
    stream = np.random.default_rng(123)
    t_null = np.empty((b_count, x.shape[1]))
    for b in range(b_count):
        order = stream.permutation(len(y))
        for j, col, fitted, resid in reduced:
            t_null[b, j] = sm.OLS(fitted + resid[order], exog).fit().tvalues[col]
    np.testing.assert_allclose(result.extras["null_distribution"], t_null, rtol=1e-9, atol=1e-9)
    t_obs = full.tvalues[lesson_pos]
    counts = (np.abs(t_null) >= np.abs(t_obs) - 1e-9 * np.maximum(1, np.abs(t_obs))).sum(0)
    np.testing.assert_array_equal(frame["pvalue"].to_numpy(), (1 + counts) / (b_count + 1))


@pytest.mark.slow
def test_confounded_null_calibration() -> None:
    """Lessons of no effect whose inclusion and the score both follow the task family.

    Freedman-Lane with ``covariates=("family",)`` and the in/out test stratified by family
    keep the 0.05 level; the unstratified in/out test does not (the family shift reads as
    lift).  300 ledgers x 3 lessons = 900 p-values (inclusions independent given the
    family); the permutation tests with ``B = 199`` reject with probability
    ``10 / 200 = 0.05`` when exact; tolerance ``3.5 sqrt(0.05 * 0.95 / 900) = 0.025``.
    """
    gen = np.random.default_rng(55)
    p = {"fl": [], "strat": [], "naive": []}
    for _ in range(300):
        ledger = _confounded_ledger(gen)
        common = {"rng": gen, "permutations": 199}
        p["fl"] += (
            attribute(ledger, "freedman_lane", covariates=("family",), **common)
            .to_frame()["pvalue"]
            .to_list()
        )
        p["strat"] += (
            attribute(ledger, "permutation", strata="family", interval="none", **common)
            .to_frame()["pvalue"]
            .to_list()
        )
        p["naive"] += (
            attribute(ledger, "permutation", interval="none", **common)
            .to_frame()["pvalue"]
            .to_list()
        )
    tol = 3.5 * math.sqrt(0.05 * 0.95 / 900)
    rates = {k: float(np.mean(np.asarray(v) <= 0.05)) for k, v in p.items()}
    assert abs(rates["fl"] - 0.05) <= tol, rates
    assert abs(rates["strat"] - 0.05) <= tol, rates
    assert rates["naive"] > 0.05 + tol, rates


def test_freedman_lane_unidentifiable_lessons_get_null_inference() -> None:
    gen = np.random.default_rng(4)
    n = 30
    x = gen.random((n, 3)) < 0.5
    x[:, 1] = x[:, 0]  # duplicate inclusion pattern
    x[:, 2] = True  # in every run
    ledger = _ledger(gen.random(n), x)
    frame = attribute(ledger, method="freedman_lane", rng=1, permutations=20).to_frame()
    assert frame["identifiable"].to_list() == [False, False, False]
    assert frame["pvalue"].null_count() == 3 and frame["estimate"].null_count() == 3


def test_freedman_lane_collinear_covariates_raise() -> None:
    ledger = random_inclusion_ledger(np.random.default_rng(6), n_runs=30, effects=(0.0,))
    frame = ledger.frame.with_columns(twice=pl.col("difficulty_proxy") * 2)
    doubled = Ledger.from_frame(frame)
    with pytest.raises(ParameterError, match="covariates"):
        attribute(doubled, "freedman_lane", covariates=("difficulty_proxy", "twice"))


# ---------------------------------------------------------------------- edge cases, options
def test_untestable_lessons_get_null_inference() -> None:
    """A lesson in every run, and (with strata) one constant within every stratum."""
    gen = np.random.default_rng(10)
    n = 20
    fam = np.asarray(["a"] * 10 + ["b"] * 10)
    x = np.column_stack([np.ones(n, bool), fam == "a", gen.random(n) < 0.5])
    x[0, 2], x[1, 2] = True, False
    ledger = _ledger(gen.random(n), x, family=fam)
    frame = attribute(
        ledger, method="permutation", rng=1, permutations=50, strata="family"
    ).to_frame()
    assert frame["pvalue"].is_null().to_list() == [True, True, False]
    assert frame["estimate"].is_null().to_list() == [True, False, False]
    assert frame["ci_low"].is_null().to_list() == [True, True, False]


def test_interval_none_keeps_the_pvalues() -> None:
    ledger = random_inclusion_ledger(np.random.default_rng(14), n_runs=50, effects=(0.1, 0.0))
    full = attribute(ledger, method="permutation", rng=3, permutations=99).to_frame()
    bare = attribute(
        ledger, method="permutation", rng=3, permutations=99, interval="none"
    ).to_frame()
    assert bare["ci_low"].null_count() == bare.height
    assert bare.drop("ci_low", "ci_high").equals(full.drop("ci_low", "ci_high"))


def test_sparse_product_path_gives_the_same_result(monkeypatch: pytest.MonkeyPatch) -> None:
    ledger = random_inclusion_ledger(np.random.default_rng(15), n_runs=50, effects=(0.1, 0.0))
    dense = attribute(ledger, method="permutation", rng=3, permutations=99).to_frame()
    monkeypatch.setattr(perm_module, "DENSE_BYTES", 0)
    sparse_frame = attribute(ledger, method="permutation", rng=3, permutations=99).to_frame()
    for column in ("pvalue", "pvalue_maxt", "ci_low", "ci_high", "estimate"):
        np.testing.assert_allclose(sparse_frame[column], dense[column], rtol=1e-12)


def test_result_extras_and_interval_helper() -> None:
    ledger = random_inclusion_ledger(np.random.default_rng(16), n_runs=40, effects=(0.1, 0.0))
    res = attribute(ledger, method="permutation", rng=3, permutations=99)
    assert res.extras["null_distribution"].shape == (99, 2)
    assert res.extras["permutations"] == 99
    assert res.extras["null_quantiles"]["fact_id"].to_list() == list(res.fact_ids)
    assert "q0.025" in res.extras["null_quantiles"].columns
    with pytest.raises(ParameterError, match="inversion"):
        res.confidence_interval(0.9)
    fl = attribute(ledger, method="freedman_lane", rng=3, permutations=99)
    np.testing.assert_allclose(
        fl.confidence_interval(0.95)["ci_low"], fl.to_frame()["ci_low"], rtol=1e-12
    )


@pytest.mark.parametrize(
    ("options", "name"),
    [
        ({"strata": "eligible_ids"}, "strata"),
        ({"strata": 3}, "strata"),
        ({"permutations": 1.5}, "permutations"),
        ({"batch_size": -1}, "batch_size"),
    ],
)
def test_more_invalid_options(options: dict, name: str) -> None:
    ledger = random_inclusion_ledger(np.random.default_rng(17), n_runs=20, effects=(0.0,))
    with pytest.raises(ParameterError, match=name):
        attribute(ledger, method="permutation", **options)


def test_strata_with_missing_values_raise() -> None:
    ledger = Ledger.from_records(
        [
            {"run_id": "a", "score": 0.5, "fact_ids": ["x"], "g": "u"},
            {"run_id": "b", "score": 0.6, "fact_ids": [], "g": None},
        ]
    )
    with pytest.raises(ParameterError, match="strata.*row 2"):
        attribute(ledger, method="permutation", strata="g", permutations=5)
