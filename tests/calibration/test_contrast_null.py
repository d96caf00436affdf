"""Fixed-size prompts: null contrasts reject at the nominal 5% (additive simulated ledgers).

Every run carries 4 of 12 lessons (``tests.helpers.fixed_size_ledger``, additive truth,
no clipping); the effects are -0.08, -0.08, +0.16 and nine zeros, so the mean lesson's
effect is 0 and the nine zero-effect lessons have null contrasts ``b_j - mean(b) = 0``.
Each method runs on ``R`` independent ledgers with a fixed seed; the rejection rate at
0.05 pools the ``9 R`` null tests, and its Monte Carlo standard error comes from the
spread of the per-ledger rejection shares (the nine tests of one ledger are correlated),
``sd(share) / sqrt(R)``.  The rate must be within 3.5 such standard errors of 0.05, and
the planted lessons' mean estimates within 3.5 of their own standard errors of the
truth (no bias: ``-0.08`` and ``+0.16``, the mean being 0).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from cogstats import attribute
from tests.helpers import fixed_size_ledger

ALPHA = 0.05
EFFECTS = (-0.08, -0.08, 0.16) + (0.0,) * 9
NULLS = [f"M{j:02d}" for j in range(4, 13)]


def _calibrate(method: str, replicates: int, seed: int, link: str = "identity", **options):
    gen = np.random.default_rng(seed)
    shares, planted = [], []
    effects = EFFECTS if link == "identity" else tuple(6 * e for e in EFFECTS)
    for _ in range(replicates):
        ledger = fixed_size_ledger(gen, n_runs=160, effects=effects, link=link)
        frame = attribute(ledger, method, rng=gen, **options).to_frame()
        by = dict(zip(frame["fact_id"].to_list(), frame.iter_rows(named=True), strict=True))
        assert all(by[f]["relative_to"] == "mean of 12 lessons" for f in by)
        shares.append(np.mean([by[f]["pvalue"] <= ALPHA for f in NULLS]))
        planted.append([by[f]["estimate"] for f in ("M01", "M02", "M03")])
    shares_a = np.asarray(shares)
    rate = float(shares_a.mean())
    mcse = float(shares_a.std(ddof=1) / math.sqrt(replicates))
    return rate, mcse, np.asarray(planted)


def _check(rate: float, mcse: float, planted: np.ndarray, truth: tuple[float, ...]) -> None:
    assert abs(rate - ALPHA) <= 3.5 * mcse, (rate, mcse)
    mean = planted.mean(axis=0)
    se = planted.std(axis=0, ddof=1) / math.sqrt(planted.shape[0])
    assert np.all(np.abs(mean - np.asarray(truth)) <= 3.5 * se), (mean, se)


@pytest.mark.parametrize("cov", ["HC3", "nonrobust"])
def test_ols_null_contrasts(cov: str) -> None:
    rate, mcse, planted = _calibrate(
        "ols", 400, 101, cov=cov, covariates=("difficulty_proxy", "family")
    )
    _check(rate, mcse, planted, EFFECTS[:3])


@pytest.mark.slow
def test_freedman_lane_null_contrasts() -> None:
    """B = 99 permutations: an exact test rejects at p <= 0.05 with probability 5/100."""
    rate, mcse, planted = _calibrate(
        "freedman_lane", 200, 102, permutations=99, covariates=("difficulty_proxy", "family")
    )
    _check(rate, mcse, planted, EFFECTS[:3])


@pytest.mark.slow
def test_mixed_null_contrasts() -> None:
    """Random intercept per family (the families do shift the score)."""
    rate, mcse, planted = _calibrate("mixed", 150, 103, covariates=("difficulty_proxy",))
    _check(rate, mcse, planted, EFFECTS[:3])


@pytest.mark.slow
def test_fraclogit_null_contrasts() -> None:
    """Logit-additive ledgers (score = Binomial(20, expit(eta)) / 20): the log-odds
    contrasts of the zero-effect lessons are null, and so their marginal effects.  With
    160 runs and 16 parameters the HC1 sandwich is calibrated; the default HC3 is valid
    but conservative (measured 0.036 with this seed), as it is for absolute effects."""
    options = {"link": "logit", "covariates": ("difficulty_proxy", "family")}
    rate, mcse, planted = _calibrate("fraclogit", 300, 104, cov="HC1", **options)
    assert abs(rate - ALPHA) <= 3.5 * mcse, (rate, mcse)
    assert np.all(planted.mean(axis=0)[:2] < 0) and planted.mean(axis=0)[2] > 0
    rate, mcse, _ = _calibrate("fraclogit", 300, 104, **options)
    assert rate <= ALPHA + 3.5 * mcse, (rate, mcse)
