"""A recall monitor: a CUSUM on benign-query recall, with its run-length theory.

Poisoned vectors that a read filter hides still cost recall (see
:mod:`cogstats.admission.defences`), so a drop in benign-query recall while no poisoned
result is served is a symptom worth an alarm.  The monitor watches one stream per
region: after every period, ``probes`` fresh benign probe queries per region are answered
by the index (through the defence) and by exact search, and the stream's observation is
the number of *degraded* probes: those whose recall at ``k`` is below 1 (they lost at
least one true neighbour).  Fresh probes are independent given the index, so the count
is binomial.

**The detector** (:class:`RecallMonitor`) is Page's CUSUM of log-likelihood ratios for
that binomial count: in control a probe is degraded with probability ``p0``, learnt in
``warmup`` periods (Jeffreys' estimate ``(degraded + 1/2) / (probes + 1)`` per region,
floored at the same estimate pooled over all regions, so that a region that happened to
be quiet in a short warm-up does not get a rate far below its true one), and the alarm
is for ``p1 = p0 + shift``.  The statistic is
``S_t = max(0, S_{t-1} + d_t log(p1/p0) + (n - d_t) log((1-p1)/(1-p0)))`` and it alarms at
the first ``S_t > h``.  Two simpler statistics fail here, measured: a normal CUSUM on
standardised mean recall (a good index misses almost nothing, so recall sits at 1 with
near-zero variance in the warm-up and one stray miss looks like many standard
deviations), and a binomial count of missed neighbours (an ANN search that goes astray
misses all ``k`` neighbours of one probe at once, so missed slots are not independent).

**Run length to a false alarm.**  :func:`markov_arl` computes the average run length
(ARL) of any CUSUM ``S' = max(0, S + X)`` with a discrete increment ``X`` by Brook and
Evans' Markov chain (the statistic rounded to a grid of ``states`` points on [0, h]);
:func:`binomial_cusum_arl` applies it to the monitor, and the threshold is chosen so
that each region's in-control ARL is ``streams * arl0`` (the first alarm over all
regions then comes after about ``arl0`` periods: exact when run lengths are geometric,
close otherwise).  For the classical normal CUSUM ``S' = max(0, S + X - k)``,
``X ~ N(mu, 1)``, the ARL solves Page's integral equation

    L(s) = 1 + L(0) Phi(k - s - mu) + int_0^h L(y) phi(y + k - s - mu) dy,

which :func:`cusum_arl` solves by Nystrom's method on Gauss-Legendre nodes (the kernel is
smooth, so a few dozen nodes give many digits); :func:`siegmund_arl` is Siegmund's
closed-form approximation, ``(exp(-2 D b) + 2 D b - 1) / (2 D^2)`` with ``D = mu - k``
and ``b = h + 1.166``.  None of these is in scipy or statsmodels, hence the hand-written
solvers.  They are checked against each other (the Markov chain on finely discretised
normal increments converges to the integral equation), against published values (one-sided
``k = 0.5``: ARL0 about 336 at ``h = 4`` and 930 at ``h = 5``, half of the two-sided
scheme's 168 and 465 in Montgomery's textbook table) and against simulation
(tests/unit/test_admission_monitor.py).
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
from scipy import optimize, sparse, stats
from scipy.sparse import linalg as sparse_linalg

from cogstats._results import format_settings
from cogstats._validation import ParameterError, check_int, check_real

__all__ = [
    "MonitorPath",
    "RecallMonitor",
    "binomial_cusum_arl",
    "binomial_cusum_threshold",
    "binomial_llr",
    "cusum_arl",
    "cusum_run_lengths",
    "cusum_threshold",
    "markov_arl",
    "siegmund_arl",
]


def cusum_arl(h: float, k: float, *, shift: float = 0.0, nodes: int | None = None) -> float:
    """Average run length of the one-sided CUSUM on N(shift, 1) increments (exact, numeric).

    Solves Page's integral equation by Nystrom's method (see the module docstring) for
    ``S_n = max(0, S_{n-1} + X_n - k)`` started at 0, alarm at ``S_n > h``.  For a drop
    detector fed ``-z``, ``shift`` is minus the drop.

    Parameters
    ----------
    h : float
        Decision threshold (> 0).
    k : float
        Allowance (reference value).
    shift : float
        Mean of the increments.
    nodes : int, optional
        Gauss-Legendre nodes (default ``max(48, 8 h)``).

    Examples
    --------
    >>> round(cusum_arl(4.0, 0.5), 1), round(cusum_arl(5.0, 0.5), 1)
    (335.4, 930.9)
    >>> round(cusum_arl(4.0, 0.5, shift=1.0), 2)
    8.38
    """
    h = float(check_real("h", h, minimum=0.0, exclusive_minimum=True) or 0)
    k = float(check_real("k", k) or 0)
    mu = float(check_real("shift", shift) or 0)
    n = int(check_int("nodes", nodes, minimum=4, optional=True) or max(48, math.ceil(8 * h)))
    x, w = np.polynomial.legendre.leggauss(n)
    y = h / 2 * (x + 1)
    w = w * h / 2
    s = np.concatenate([y, [0.0]])  # evaluation points: the nodes, then 0
    kernel = w[None, :] * stats.norm.pdf(y[None, :] + k - s[:, None] - mu)
    a = np.eye(n + 1)
    a[:, :n] -= kernel
    a[:, n] -= stats.norm.cdf(k - s - mu)
    values = np.linalg.solve(a, np.ones(n + 1))
    return float(values[n])


def siegmund_arl(h: float, k: float, *, shift: float = 0.0) -> float:
    """Siegmund's approximation of the one-sided CUSUM's average run length.

    Examples
    --------
    >>> round(siegmund_arl(4.0, 0.5), 1)
    338.1
    """
    h = float(check_real("h", h, minimum=0.0, exclusive_minimum=True) or 0)
    k = float(check_real("k", k) or 0)
    drift = float(check_real("shift", shift) or 0) - k
    b = h + 1.166
    if abs(drift) < 1e-12:
        return b * b
    return (math.exp(-2 * drift * b) + 2 * drift * b - 1) / (2 * drift * drift)


def cusum_threshold(arl0: float, k: float) -> float:
    """Find the threshold ``h`` whose in-control ARL (:func:`cusum_arl`) is ``arl0``.

    Examples
    --------
    >>> round(cusum_threshold(cusum_arl(5.0, 0.5), 0.5), 6)
    5.0
    """
    arl0 = float(check_real("arl0", arl0, minimum=1.0, exclusive_minimum=True) or 0)
    k = float(check_real("k", k, minimum=0.0, exclusive_minimum=True) or 0)

    def gap(h: float) -> float:
        return math.log(cusum_arl(h, k)) - math.log(arl0)

    high = 1.0
    while gap(high) < 0:
        high *= 2
    return float(optimize.brentq(gap, 1e-6, high, xtol=1e-10))


def cusum_run_lengths(
    h: float, k: float, *, runs: int, shift: float = 0.0, rng: Any = None
) -> np.ndarray:
    """Simulate run lengths of the one-sided CUSUM on i.i.d. N(shift, 1) increments.

    Examples
    --------
    >>> rl = cusum_run_lengths(4.0, 0.5, runs=2000, rng=0)
    >>> bool(abs(rl.mean() - cusum_arl(4.0, 0.5)) < 4 * rl.std(ddof=1) / len(rl) ** 0.5)
    True
    """
    h = float(check_real("h", h, minimum=0.0, exclusive_minimum=True) or 0)
    k = float(check_real("k", k) or 0)
    runs = int(check_int("runs", runs, minimum=1) or 1)
    g = np.random.default_rng(rng)
    out = np.zeros(runs, dtype=np.int64)
    active = np.arange(runs)
    s = np.zeros(runs)
    t = 0
    while active.size:
        t += 1
        s = np.maximum(0.0, s + g.normal(shift, 1.0, active.size) - k)
        done = s > h
        out[active[done]] = t
        active, s = active[~done], s[~done]
    return out


def markov_arl(h: float, values: np.ndarray, probs: np.ndarray, *, states: int = 1000) -> float:
    """ARL of ``S' = max(0, S + X)`` from ``S = 0``, alarm at ``S > h``, for a discrete ``X``.

    Brook and Evans' Markov chain: the statistic is rounded to the grid ``j h / states``
    (``j = 0 .. states - 1``) after every step, and the ARL solves ``(I - Q) L = 1``.

    Parameters
    ----------
    h : float
        Threshold (> 0).
    values, probs : numpy.ndarray
        The increment's support and probabilities (summing to 1).
    states : int
        Grid points (the rounding error shrinks like ``1 / states``).

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import stats
    >>> x = np.linspace(-8, 8, 3201)
    >>> p = stats.norm.pdf(x) / stats.norm.pdf(x).sum()  # N(0, 1), finely discretised
    >>> abs(markov_arl(4.0, x - 0.5, p, states=1000) / cusum_arl(4.0, 0.5) - 1) < 0.005
    True
    """
    h = float(check_real("h", h, minimum=0.0, exclusive_minimum=True) or 0)
    states = int(check_int("states", states, minimum=2) or 2)
    values = np.asarray(values, dtype=np.float64)
    probs = np.asarray(probs, dtype=np.float64)
    if values.shape != probs.shape or values.ndim != 1 or abs(probs.sum() - 1) > 1e-9:
        raise ParameterError("values and probs must be 1-d of one length, probs summing to 1")
    width = h / states
    level = np.arange(states) * width
    after = np.maximum(0.0, level[:, None] + values[None, :])
    target = np.rint(after / width).astype(np.int64).ravel()
    stay = ((after <= h).ravel()) & (target < states)
    rows = np.repeat(np.arange(states), values.size)[stay]
    # transitions among the transient states (duplicates summed); a sparse solve, as a
    # discrete increment reaches few states from each one
    q = sparse.csr_matrix(
        (np.tile(probs, states)[stay], (rows, target[stay])), shape=(states, states)
    )
    arl = sparse_linalg.spsolve(
        (sparse.identity(states, format="csr") - q).tocsc(), np.ones(states)
    )
    return float(arl[0])


def binomial_llr(misses: Any, slots: int, p0: Any, p1: Any) -> np.ndarray:
    """Log-likelihood ratio of ``misses`` out of ``slots`` for rate ``p1`` against ``p0``.

    Examples
    --------
    >>> float(binomial_llr(np.array(1), 10, 0.01, 0.1).round(4))  # log(10) + 9 log(0.9/0.99)
    1.4448
    """
    m = np.asarray(misses, dtype=np.float64)
    p0 = np.asarray(p0, dtype=np.float64)
    p1 = np.asarray(p1, dtype=np.float64)
    return m * np.log(p1 / p0) + (slots - m) * np.log((1 - p1) / (1 - p0))


def binomial_cusum_arl(
    h: float, slots: int, p0: float, p1: float, *, p: float | None = None, states: int = 500
) -> float:
    """Compute the ARL of the binomial LLR CUSUM (``p0`` against ``p1``).

    Each of ``slots`` trials fails with rate ``p``, which defaults to ``p0`` (the run
    length to a false alarm).

    Examples
    --------
    >>> round(binomial_cusum_arl(5.0, 80, 6e-4, 0.0206), 1)
    834.5
    """
    slots = int(check_int("slots", slots, minimum=1) or 1)
    p0 = float(
        check_real(
            "p0", p0, minimum=0.0, maximum=1.0, exclusive_minimum=True, exclusive_maximum=True
        )
        or 0
    )
    p1 = float(
        check_real(
            "p1", p1, minimum=p0, maximum=1.0, exclusive_minimum=True, exclusive_maximum=True
        )
        or 0
    )
    rate = p0 if p is None else float(_closed_probability("p", p))
    m = np.arange(slots + 1)
    return markov_arl(
        h, binomial_llr(m, slots, p0, p1), stats.binom.pmf(m, slots, rate), states=states
    )


def _closed_probability(name: str, value: Any) -> float:
    """Check a probability in [0, 1]."""
    return float(check_real(name, value, minimum=0.0, maximum=1.0) or 0)


def binomial_cusum_threshold(
    arl0: float, slots: int, p0: float, p1: float, *, states: int = 500
) -> float:
    """Find the smallest threshold (to 1e-4) whose in-control ARL is at least ``arl0``.

    The increments are discrete, so the ARL (:func:`binomial_cusum_arl`) is a step
    function of ``h`` and the threshold's ARL can exceed ``arl0`` (conservative).

    Examples
    --------
    >>> h = binomial_cusum_threshold(1000.0, 80, 6e-4, 0.0206)
    >>> binomial_cusum_arl(h, 80, 6e-4, 0.0206) >= 1000 > binomial_cusum_arl(h - 2e-4, 80,
    ...     6e-4, 0.0206)
    True
    """
    arl0 = float(check_real("arl0", arl0, minimum=1.0, exclusive_minimum=True) or 0)

    def arl(h: float) -> float:
        return binomial_cusum_arl(h, slots, p0, p1, states=states)

    low, high = 0.0, 1.0
    while arl(high) < arl0:
        low, high = high, 2 * high
    # bisection on a monotone step function (brentq assumes continuity)
    while high - low > 1e-4:
        mid = (low + high) / 2
        if arl(mid) >= arl0:
            high = mid
        else:
            low = mid
    return high


@dataclass(frozen=True, repr=False, eq=False)
class MonitorPath:
    """The monitor run over one series of degraded-probe counts (``(periods, streams)``).

    Attributes
    ----------
    degraded : numpy.ndarray
        Probes that lost at least one true neighbour, per period and stream.
    probes : int
        Probes per period and stream.
    statistic : numpy.ndarray
        The CUSUM statistic (0 during the warm-up).
    p0, p1 : numpy.ndarray
        ``(streams,)`` in-control degraded share learnt in the warm-up, and the alarm share.
    threshold : numpy.ndarray
        ``(streams,)`` decision thresholds.
    alarm_period : int
        First period whose statistic exceeds its threshold in any stream (-1: none).
    alarm_stream : int
        The stream that alarmed first (the one furthest above its threshold; -1: none).
    settings : mapping
        arl0, shift, warmup, streams.

    Examples
    --------
    >>> import numpy as np
    >>> path = RecallMonitor(arl0=100, warmup=3).run(np.zeros((6, 2), dtype=int), probes=8)
    >>> path.alarm_period, path.to_frame().height
    (-1, 12)
    """

    degraded: np.ndarray
    probes: int
    statistic: np.ndarray
    p0: np.ndarray
    p1: np.ndarray
    threshold: np.ndarray
    alarm_period: int
    alarm_stream: int
    settings: dict[str, Any]

    def to_frame(self) -> pl.DataFrame:
        """period, stream, degraded, statistic, threshold, alarm (statistic above it)."""
        periods, streams = self.degraded.shape
        return pl.DataFrame(
            {
                "period": np.repeat(np.arange(periods), streams),
                "stream": np.tile(np.arange(streams), periods),
                "degraded": self.degraded.ravel(),
                "statistic": self.statistic.ravel(),
                "threshold": np.tile(self.threshold, periods),
                "alarm": (self.statistic > self.threshold).ravel(),
            }
        )

    def summary(self) -> str:
        """One line: settings and the first alarm."""
        alarm = (
            f"first alarm at period {self.alarm_period} (stream {self.alarm_stream})"
            if self.alarm_period >= 0
            else "no alarm"
        )
        return f"MonitorPath({format_settings(self.settings)}): {alarm}"

    def __repr__(self) -> str:
        """Show the summary."""
        return self.summary()

    def _repr_html_(self) -> str:
        return "<pre>" + html.escape(self.summary()) + "</pre>"


@dataclass(frozen=True)
class RecallMonitor:
    """Binomial CUSUM on degraded probes (recall below 1), one statistic per stream (region).

    Attributes
    ----------
    arl0 : float
        Periods to a false alarm on average over all streams together (each stream is
        tuned to ``streams * arl0``).
    shift : float
        The rise in the degraded-probe share to detect: the alarm share is ``p0 + shift``.
    warmup : int
        Periods used to learn each stream's degraded share ``p0`` (its own Jeffreys
        estimate, floored at the pooled one).
    states : int
        Grid points of the Markov chain that sets the thresholds.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(1)
    >>> degraded = rng.binomial(8, 0.01, size=(60, 3))  # 8 probes per period, 3 regions
    >>> degraded[40:, 1] = rng.binomial(8, 0.3, size=20)  # region 1 degrades from period 40
    >>> path = RecallMonitor(arl0=500, shift=0.1, warmup=20).run(degraded, probes=8)
    >>> path.alarm_stream, 40 <= path.alarm_period < 45
    (1, True)
    """

    arl0: float = 500.0
    shift: float = 0.1
    warmup: int = 10
    states: int = 500

    def __post_init__(self) -> None:
        """Check the monitor's settings."""
        check_real("arl0", self.arl0, minimum=1.0, exclusive_minimum=True)
        check_real(
            "shift",
            self.shift,
            minimum=0.0,
            maximum=1.0,
            exclusive_minimum=True,
            exclusive_maximum=True,
        )
        check_int("warmup", self.warmup, minimum=1)
        check_int("states", self.states, minimum=10)

    def run(self, degraded: np.ndarray, probes: int) -> MonitorPath:
        """Run the monitor over ``(periods, streams)`` (or ``(periods,)``) degraded counts.

        Causal: the rates and thresholds come from the first ``warmup`` periods, and the
        statistic at period ``t`` uses counts up to ``t`` only.
        """
        d = np.asarray(degraded)
        if d.ndim == 1:
            d = d[:, None]
        probes = int(check_int("probes", probes, minimum=1) or 1)
        if (
            d.ndim != 2
            or d.shape[0] <= self.warmup
            or not np.issubdtype(d.dtype, np.integer)
            or (d < 0).any()
            or (d > probes).any()
        ):
            raise ParameterError(
                f"degraded must be integer counts in [0, probes={probes}] of shape (periods, "
                f"streams) with more than warmup={self.warmup} periods; got shape {d.shape}"
            )
        streams = d.shape[1]
        base = d[: self.warmup].sum(axis=0)
        # each stream's own rate, never below the pooled rate: a stream that happened to
        # be quiet in a short warm-up would otherwise get a rate far below its true one
        own = (base + 0.5) / (self.warmup * probes + 1.0)
        pooled = (base.sum() + 0.5) / (self.warmup * probes * streams + 1.0)
        p0 = np.maximum(own, pooled)
        p1 = np.minimum(p0 + self.shift, 1.0 - 1e-9)
        cache: dict[tuple[float, float], float] = {}
        threshold = np.empty(streams)
        for j in range(streams):
            key = (float(p0[j]), float(p1[j]))
            if key not in cache:
                cache[key] = binomial_cusum_threshold(
                    self.arl0 * streams, probes, key[0], key[1], states=self.states
                )
            threshold[j] = cache[key]
        llr = binomial_llr(d, probes, p0[None, :], p1[None, :])
        stat = np.zeros(d.shape)
        for t in range(self.warmup, d.shape[0]):
            stat[t] = np.maximum(0.0, stat[t - 1] + llr[t])
        over = np.flatnonzero((stat > threshold).any(axis=1))
        alarm = int(over[0]) if over.size else -1
        stream = int(np.argmax(stat[alarm] - threshold)) if alarm >= 0 else -1
        return MonitorPath(
            degraded=d.astype(np.int64),
            probes=probes,
            statistic=stat,
            p0=p0,
            p1=p1,
            threshold=threshold,
            alarm_period=alarm,
            alarm_stream=stream,
            settings={
                "arl0": self.arl0,
                "shift": self.shift,
                "warmup": self.warmup,
                "streams": streams,
            },
        )
