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

import numpy as np
import polars as pl
import pytest

from cogstats._validation import ParameterError
from cogstats.estimators import ATTRIBUTION_COLUMNS, METHODS, Attribution, attribute
from cogstats.estimators._base import get_spec
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
