"""The compiled engine's Student t CDF against scipy.special.stdtr.

Tolerance 1e-12 absolute for df in [1, 1e4] (the doc claims 1e-14 against 40-digit
mpmath; scipy itself is accurate to a few ulps there), over a seeded random grid of t and
df including the tails.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from cogstats.kernel.tdist import t_cdf


def test_matches_scipy() -> None:
    rng = np.random.default_rng(20261130)
    df = np.exp(rng.uniform(0.0, np.log(1e4), 4000))
    t = rng.normal(size=4000) * rng.choice([0.1, 1.0, 3.0, 10.0, 40.0], size=4000)
    got = np.array([t_cdf(float(a), float(b)) for a, b in zip(t, df, strict=True)])
    want = special.stdtr(df, t)
    assert np.max(np.abs(got - want)) < 1e-12


def test_edge_cases() -> None:
    assert t_cdf(0.0, 3.0) == 0.5
    assert t_cdf(np.inf, 3.0) == 1.0
    assert t_cdf(-np.inf, 3.0) == 0.0
    # Cauchy (df = 1): 1/2 + atan(t)/pi, exact
    for t in (-7.0, -0.3, 1e-6, 2.5):
        assert abs(t_cdf(t, 1.0) - (0.5 + np.arctan(t) / np.pi)) < 1e-15
    # df = inf is the normal CDF
    assert abs(t_cdf(1.0, np.inf) - special.ndtr(1.0)) < 1e-15
