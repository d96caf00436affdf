"""The recall monitor: CUSUM run-length theory against published values and simulation.

References and tolerances:

* The normal CUSUM's ARL (:func:`cusum_arl`, Page's integral equation) against the table
  of the tabular CUSUM with k = 1/2 in Montgomery, *Introduction to Statistical Quality
  Control* (Table 9.3 of the 6th edition: h = 4 and h = 5).  The table is for the
  two-sided scheme; with no shift its ARL is half the one-sided one (the two sides alarm
  independently and symmetrically), and for shifts of half a standard deviation or more
  the lower side's alarms change it by less than 0.1%.  Tolerance 0.6%: the table prints
  three significant figures.
* Siegmund's approximation against the integral equation: within 1.5% (its known
  accuracy at these thresholds).
* Brook and Evans' Markov chain on finely discretised normal increments against the
  integral equation: within 0.5% at 1000 states, and closer with more states.
* Every theoretical ARL against simulated run lengths of the same CUSUM: within 4
  Monte Carlo standard errors of the simulated mean (sd / sqrt(runs)).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from cogstats._validation import ParameterError
from cogstats.admission import (
    RecallMonitor,
    cusum_arl,
    cusum_run_lengths,
    cusum_threshold,
    siegmund_arl,
)
from cogstats.admission.monitor import (
    binomial_cusum_arl,
    binomial_cusum_threshold,
    binomial_llr,
    markov_arl,
)

# Montgomery, Table 9.3 (k = 1/2): shift in SDs -> two-sided ARL
MONTGOMERY = {
    4.0: {0.0: 168, 0.5: 26.6, 0.75: 13.3, 1.0: 8.38, 1.5: 4.75, 2.0: 3.34, 3.0: 2.19},
    5.0: {0.0: 465, 0.5: 38.0, 0.75: 17.0, 1.0: 10.4, 1.5: 5.75, 2.0: 4.01, 3.0: 2.57},
}


@pytest.mark.parametrize("h", [4.0, 5.0])
def test_integral_equation_against_the_published_table(h: float) -> None:
    for shift, published in MONTGOMERY[h].items():
        one_sided = cusum_arl(h, 0.5, shift=shift)
        expected = 2 * published if shift == 0 else published
        assert one_sided == pytest.approx(expected, rel=0.006), (h, shift)
    assert cusum_arl(h, 0.5, nodes=200) == pytest.approx(cusum_arl(h, 0.5), rel=1e-9)


def test_siegmund_approximation() -> None:
    for h in (3.0, 4.0, 5.0, 6.0):
        assert siegmund_arl(h, 0.5) == pytest.approx(cusum_arl(h, 0.5), rel=0.015)
    assert siegmund_arl(4.0, 0.5, shift=0.5) == pytest.approx((4 + 1.166) ** 2)


def test_threshold_inverts_the_arl() -> None:
    for arl0 in (50.0, 370.0, 5000.0):
        h = cusum_threshold(arl0, 0.5)
        assert cusum_arl(h, 0.5) == pytest.approx(arl0, rel=1e-8)


@pytest.mark.parametrize(("h", "shift"), [(4.0, 0.0), (3.0, 0.0), (4.0, 1.0)])
def test_integral_equation_against_simulation(h: float, shift: float) -> None:
    runs = cusum_run_lengths(h, 0.5, runs=4000, shift=shift, rng=20261201)
    mcse = runs.std(ddof=1) / np.sqrt(runs.size)
    assert abs(runs.mean() - cusum_arl(h, 0.5, shift=shift)) < 4 * mcse


def test_markov_chain_converges_to_the_integral_equation() -> None:
    x = np.linspace(-8, 8, 3201)
    p = stats.norm.pdf(x) / stats.norm.pdf(x).sum()
    exact = cusum_arl(4.0, 0.5)
    errors = [abs(markov_arl(4.0, x - 0.5, p, states=n) / exact - 1) for n in (250, 1000)]
    assert errors[1] < 0.005 and errors[1] < errors[0]


def _binomial_run_lengths(
    h: float, n: int, p0: float, p1: float, p: float, runs: int, rng: np.random.Generator
) -> np.ndarray:
    out = np.zeros(runs, dtype=np.int64)
    active, s, t = np.arange(runs), np.zeros(runs), 0
    while active.size:
        t += 1
        s = np.maximum(0.0, s + binomial_llr(rng.binomial(n, p, active.size), n, p0, p1))
        done = s > h
        out[active[done]] = t
        active, s = active[~done], s[~done]
    return out


@pytest.mark.parametrize(("p0", "p"), [(0.02, 0.02), (0.006, 0.006), (0.02, 0.12)])
def test_binomial_cusum_against_simulation(p0: float, p: float) -> None:
    n, p1 = 8, p0 + 0.1
    h = binomial_cusum_threshold(300.0, n, p0, p1)
    theory = binomial_cusum_arl(h, n, p0, p1, p=p)
    runs = _binomial_run_lengths(h, n, p0, p1, p, 3000, np.random.default_rng(7))
    mcse = runs.std(ddof=1) / np.sqrt(runs.size)
    assert abs(runs.mean() - theory) < 4 * mcse
    if p == p0:
        assert theory >= 300.0 > binomial_cusum_arl(h - 2e-4, n, p0, p1)
    # the grid is fine enough: twice the states moves the ARL by less than 0.5%
    assert binomial_cusum_arl(h, n, p0, p1, p=p, states=1000) == pytest.approx(theory, rel=5e-3)


def test_monitor_thresholds_and_alarm() -> None:
    rng = np.random.default_rng(3)
    degraded = rng.binomial(8, 0.01, size=(40, 5))
    degraded[30:, 3] = rng.binomial(8, 0.4, size=10)
    monitor = RecallMonitor(arl0=200.0, shift=0.1, warmup=10)
    path = monitor.run(degraded, probes=8)
    assert path.alarm_stream == 3 and 30 <= path.alarm_period <= 33
    assert (path.statistic[:10] == 0).all()
    for j in range(5):  # each stream's threshold gives it ARL0 >= streams * arl0
        assert binomial_cusum_arl(path.threshold[j], 8, path.p0[j], path.p1[j]) >= 1000.0
    own = (degraded[:10].sum(axis=0) + 0.5) / 81
    pooled = (degraded[:10].sum() + 0.5) / (81 * 5 - 4)
    assert np.allclose(path.p0, np.maximum(own, pooled))
    frame = path.to_frame()
    assert frame.height == 200 and frame.filter(frame["alarm"]).height >= 1
    assert "first alarm at period" in path.summary()
    # nothing changes: no alarm in this short series
    quiet = RecallMonitor(arl0=200.0).run(rng.binomial(8, 0.01, size=(40, 5)), probes=8)
    assert quiet.alarm_period == -1 and "no alarm" in quiet.summary()


def test_monitor_validation() -> None:
    with pytest.raises(ParameterError, match="shift must be < 1.0"):
        RecallMonitor(shift=1.0)
    with pytest.raises(ParameterError, match="integer counts"):
        RecallMonitor(warmup=5).run(np.zeros((5, 2), dtype=int), probes=8)
    with pytest.raises(ParameterError, match="integer counts"):
        RecallMonitor(warmup=2).run(np.full((5, 2), 9), probes=8)
    with pytest.raises(ParameterError, match="probs summing to 1"):
        markov_arl(3.0, np.array([1.0, -1.0]), np.array([0.5, 0.6]))
