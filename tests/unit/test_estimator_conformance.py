"""One conformance suite for every estimator in the registry (scikit-learn's check_estimator
idea): same seed same result; invalid parameters raise naming the parameter; the result
has its fields and to_frame(); p-values and intervals are calibrated under the null.

Calibration: ``M`` null ledgers (random inclusion p = 1/2, run difficulty, 6 lessons of
effect 0, 160 runs) give ``n = 6 M`` p-values.  The type I error at alpha = 0.05 must lie
within ``3.5 * sqrt(alpha (1 - alpha) / n)`` of alpha (binomial Monte Carlo error; 3.5
standard errors keeps the family of checks across all methods below a 1% false alarm
rate), and 95% intervals must cover 0 with the same tolerance around 0.95.  Methods
flagged conservative (anytime-valid) are only bounded from above (error) and below
(coverage).  Seeds are fixed.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import polars as pl
import pytest

from cogstats import Ledger
from cogstats._validation import LedgerError, ParameterError
from cogstats.estimators import ATTRIBUTION_COLUMNS, METHODS, Attribution, attribute
from cogstats.estimators._base import get_spec
from cogstats.estimators.regression import MixedFallbackWarning
from tests.helpers import random_inclusion_ledger

ALPHA = 0.05
#: slow methods get fewer null ledgers (their tolerance widens accordingly)
CALIBRATION_LEDGERS: dict[str, int] = {"mixed": 60}
DEFAULT_LEDGERS = 200


@pytest.fixture(scope="module")
def ledger():
    return random_inclusion_ledger(np.random.default_rng(20261130))


@pytest.mark.parametrize("method", sorted(METHODS))
def test_same_seed_same_result(method: str, ledger) -> None:
    a = attribute(ledger, method=method, rng=11)
    b = attribute(ledger, method=method, rng=np.random.default_rng(11))
    assert a.to_frame().equals(b.to_frame())
    # another seed: a method that draws (permutations, cross-fitting folds) must change,
    # a deterministic one must not (the seed reaches the draws, and only them)
    other = attribute(ledger, method=method, rng=12)
    if get_spec(method).uses_rng:
        assert not a.to_frame().equals(other.to_frame()), "a different seed changed nothing"
        assert (a.seed, other.seed) == (11, 12)
        drawn = attribute(ledger, method=method, rng=np.random.default_rng(12))
        assert drawn.to_frame().equals(other.to_frame())
    else:
        assert a.to_frame().equals(other.to_frame())
        assert attribute(ledger, method=method).to_frame().equals(a.to_frame())


@pytest.mark.parametrize("method", sorted(METHODS))
def test_result_fields(method: str, ledger) -> None:
    result = attribute(ledger, method=method, rng=1)
    assert isinstance(result, Attribution)
    assert result.method == method
    frame = result.to_frame()
    assert isinstance(frame, pl.DataFrame)
    assert tuple(frame.columns[: len(ATTRIBUTION_COLUMNS)]) == ATTRIBUTION_COLUMNS
    assert set(frame["method"].to_list()) == {method}
    assert sorted(frame["fact_id"].to_list()) == sorted(ledger.fact_ids)
    assert set(get_spec(method).defaults) <= set(result.settings)
    assert method in result.summary() and "<table" in result._repr_html_()
    assert frame["trials"].dtype == pl.Int64


@pytest.mark.parametrize("method", sorted(METHODS))
def test_invalid_parameters_raise_naming_them(method: str, ledger) -> None:
    spec = get_spec(method)
    assert set(spec.invalid) == set(spec.defaults), "every option needs an invalid example"
    for name, bad in spec.invalid.items():
        with pytest.raises(ParameterError) as err:
            attribute(ledger, method=method, rng=1, **{name: bad})
        assert name in str(err.value), (name, str(err.value))
    with pytest.raises(ParameterError, match="unknown option 'not_an_option'"):
        attribute(ledger, method=method, not_an_option=1)


def test_unknown_method() -> None:
    with pytest.raises(ParameterError, match=r"method must be one of .*got 'lfit' \(did you mean"):
        attribute(random_inclusion_ledger(np.random.default_rng(0), n_runs=10), method="lfit")


@pytest.mark.slow
@pytest.mark.parametrize("method", sorted(METHODS))
def test_null_calibration(method: str) -> None:
    spec = get_spec(method)
    m = CALIBRATION_LEDGERS.get(method, DEFAULT_LEDGERS)
    rng = np.random.default_rng([7, *method.encode()])
    pvalues, covered = [], []
    for _ in range(m):
        ledger = random_inclusion_ledger(rng)
        frame = attribute(ledger, method=method, rng=rng).to_frame()
        pvalues.extend(frame["pvalue"].to_list())
        covered.extend(
            (lo <= 0.0 <= hi) for lo, hi in zip(frame["ci_low"], frame["ci_high"], strict=True)
        )
    p = np.asarray(pvalues, dtype=float)
    assert not np.isnan(p).any()
    n = len(p)
    tol = 3.5 * math.sqrt(ALPHA * (1 - ALPHA) / n)
    rate = float(np.mean(p <= ALPHA))
    coverage = float(np.mean(covered))
    if spec.conservative:
        assert rate <= ALPHA + tol, (rate, tol)
        assert coverage >= 1 - ALPHA - tol, (coverage, tol)
    else:
        assert abs(rate - ALPHA) <= tol, (rate, tol)
        assert abs(coverage - (1 - ALPHA)) <= tol, (coverage, tol)


# ---------------------------------------------------------------------- degenerate ledgers
def _degenerate(rows: list[tuple[float, list[str], str]], **extra: object) -> Ledger:
    """Runs (score, lessons, family) with both lessons logged at propensity 1/2."""
    return Ledger.from_records(
        {
            "run_id": f"r{i}",
            "score": score,
            "fact_ids": facts,
            "family": family,
            "eligible_ids": ["a", "b"],
            "propensities": [0.5, 0.5],
            **{k: v[i] if isinstance(v, list) else v for k, v in extra.items()},
        }
        for i, (score, facts, family) in enumerate(rows)
    )


_PATTERN = [["a"], ["b"], ["a", "b"], []]
DEGENERATE = {
    "empty": Ledger(),
    "no_lessons": _degenerate([(0.1 * i, [], f"f{i % 2}") for i in range(8)]),
    "one_run": _degenerate([(0.5, ["a"], "f0")]),
    "lesson_in_every_run": _degenerate([(0.1 * i, ["a"], f"f{i % 2}") for i in range(8)]),
    # every run the same score: effects are exactly 0 (fits would return rounding noise)
    "constant_scores": _degenerate([(0.5, _PATTERN[i % 4], f"f{i // 4}") for i in range(8)]),
    # intercept + 2 lessons, 3 runs: regressions fit exactly, with no residual df
    "exact_fit": _degenerate([(0.2, ["a"], "f0"), (0.4, ["b"], "f1"), (0.9, [], "f0")]),
    "one_family": _degenerate([(0.1 * i, _PATTERN[i % 4], "f0") for i in range(8)]),
    "one_run_per_family": _degenerate([(0.1 * i, _PATTERN[i % 4], f"f{i}") for i in range(8)]),
}
#: (case, method) -> (error class, words in the message); every other pair returns a table
DEGENERATE_ERRORS: dict[tuple[str, str], tuple[type[Exception], str]] = {
    ("empty", "ipw"): (LedgerError, "needs logged injection propensities"),
    ("empty", "aipw"): (LedgerError, "needs logged injection propensities"),
    ("empty", "mixed"): (ParameterError, "mixed needs the covariate that groups the runs"),
    ("one_run", "mixed"): (ParameterError, "single value"),
    ("one_family", "mixed"): (ParameterError, "single value over all 8 runs"),
    ("one_run_per_family", "mixed"): (ParameterError, "holds a single run"),
}
#: methods whose estimate is identified without runs lacking the lesson: confseq reads the
#: logged propensities (an inverse-probability pseudo-outcome), so it has an estimate
#: (with an interval of no use: p-value 1) for a lesson in every run
DESIGN_BASED = {"confseq"}


@pytest.mark.parametrize("case", sorted(DEGENERATE))
@pytest.mark.parametrize("method", sorted(METHODS))
def test_degenerate_ledgers(method: str, case: str) -> None:
    ledger = DEGENERATE[case]
    expected = DEGENERATE_ERRORS.get((case, method))
    if expected is not None:
        with pytest.raises(expected[0]) as err:
            attribute(ledger, method=method, rng=1)
        assert f"method {method!r}" in str(err.value), str(err.value)
        assert expected[1] in str(err.value), str(err.value)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no numpy noise leaks out
        warnings.simplefilter("ignore", MixedFallbackWarning)
        frame = attribute(ledger, method=method, rng=1).to_frame()
    assert sorted(frame["fact_id"].to_list()) == sorted(ledger.fact_ids)
    for name in ("estimate", "std_error"):
        values = frame[name].drop_nulls().to_numpy()
        assert np.isfinite(values).all(), (name, values)
    p = frame["pvalue"].drop_nulls().to_numpy()
    assert ((p >= 0) & (p <= 1)).all(), p
    assert (frame["std_error"].drop_nulls().to_numpy() >= 0).all()
    est = frame["estimate"]
    if case in ("empty", "no_lessons"):
        assert frame.height == 0
    elif case in ("one_run", "lesson_in_every_run") and method not in DESIGN_BASED:
        assert est.null_count() == frame.height  # no run without the lesson: no contrast
    elif case == "constant_scores" and method != "aipw":
        # (aipw's cross-fitted outcome model may predict off the constant on held-out
        # runs; its estimate is then unbiased noise, not exactly 0)
        assert est.drop_nulls().len() >= 1
        assert (est.drop_nulls().to_numpy() == 0.0).all(), est
        assert (frame["pvalue"].drop_nulls().to_numpy() == 1.0).all(), frame["pvalue"]
    elif case == "exact_fit" and method in ("ols", "fraclogit"):
        assert est.null_count() == 0  # both lessons estimated (the fit is exact) ...
        assert frame["std_error"].null_count() == frame.height  # ... with no inference
        assert frame["pvalue"].null_count() == frame.height


COVARIATE_METHODS = sorted(m for m in METHODS if "covariates" in get_spec(m).defaults)


@pytest.fixture(scope="module")
def covariate_ledger() -> Ledger:
    rng = np.random.default_rng(3)
    base = random_inclusion_ledger(rng, n_runs=60)
    frame = base.frame.with_columns(
        pl.lit(1.5).alias("constant"),
        pl.lit(None, dtype=pl.Float64).alias("all_null"),
    )
    return Ledger.from_frame(frame)


@pytest.mark.parametrize("method", COVARIATE_METHODS)
def test_unusable_covariates_raise_naming_them(method: str, covariate_ledger: Ledger) -> None:
    for name, words in (
        ("all_null", "'all_null'"),
        ("not_there", "'not_there'"),
        ("eligible_ids", "'eligible_ids'"),
    ):
        with pytest.raises(ParameterError) as err:
            attribute(covariate_ledger, method=method, rng=1, covariates=(name,))
        text = str(err.value)
        assert f"method {method!r}" in text and "covariates" in text and words in text, text


@pytest.mark.parametrize("method", ["ols", "ridge", "fraclogit", "freedman_lane", "mixed"])
def test_constant_covariate_is_left_out(method: str, covariate_ledger: Ledger) -> None:
    # a covariate constant over the runs is carried by the intercept (documented in
    # covariate_design): the fit is the one without it
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MixedFallbackWarning)
        plain = attribute(covariate_ledger, method=method, rng=5).to_frame()
        adjusted = attribute(
            covariate_ledger, method=method, rng=5, covariates=("constant",)
        ).to_frame()
    np.testing.assert_allclose(
        adjusted["estimate"].to_numpy(), plain["estimate"].to_numpy(), rtol=1e-10, atol=1e-12
    )


def test_cluster_needs_two_clusters(covariate_ledger: Ledger) -> None:
    frame = covariate_ledger.frame.with_columns(pl.lit("same").alias("site"))
    with pytest.raises(ParameterError, match=r"method 'ols': cluster 'site' has a single value"):
        attribute(Ledger.from_frame(frame), method="ols", cov="cluster", cluster="site")
