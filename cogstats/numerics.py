"""Shared numerics: one copy of the small statistics that the library and the simulator share.

Plain Python and numpy, no numba import: production code calls these functions directly,
and the simulator's compiled kernel (:mod:`cogstats.sim._loop`) compiles the very same
functions with numba (``njit(inline="always")``), so both give the same bits without a
second copy kept equal by a test.

- :func:`welch_evidence`: lift, Welch standard error and Welch-Satterthwaite df of group
  moments, with a variance floor: the one copy of cycgraph's ``welchLift`` arithmetic
  (cycgraph's inference rule, the lift and welch estimators, the kernel's gates);
  :func:`welch_moments` is the same from sums, for one lesson.
- :func:`where` (``numpy.where``; the kernel compiles it as a scalar select) and
  :func:`floor_log2` (exact): what a rule written once needs to run both on numpy arrays
  and, compiled, on scalars.
- :func:`gauss_jordan_into`: the Gauss-Jordan inverse of the debiased ridge, in place on
  caller-provided scratch (the kernel's form; elementwise the same operations, in the same
  order, as :func:`cogstats.estimators.debiased_ridge.gauss_jordan_inverse`).
- :func:`wald`: the Wald table (interval, two-sided p-value, statistic) of estimates and
  standard errors with the t or normal reference (scipy; production only: the kernel
  tests against levels and needs no interval).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = [
    "SINGULAR",
    "floor_log2",
    "gauss_jordan_into",
    "wald",
    "welch_evidence",
    "welch_moments",
    "where",
]

#: relative pivot below which :func:`gauss_jordan_into` reports a singular matrix
SINGULAR = 1e-12


def where(cond: Any, a: Any, b: Any) -> Any:
    """Return ``a`` where ``cond`` else ``b``: :func:`numpy.where`, a scalar for scalars.

    The select a rule written once uses, so that it runs on numpy arrays in production
    and compiled on scalars in the simulator (numba's ``numpy.where`` returns a 0-d array
    for scalars; the kernel registers a scalar select for this function instead, see
    :mod:`cogstats.kernel`).  Both branches are evaluated: keep them finite
    (a safe denominator) where the compiled caller would divide by zero.

    Examples
    --------
    >>> where(np.array([True, False]), np.array([1.0, 2.0]), 0.0)
    array([1., 0.])
    >>> float(where(2 > 1, 3.0, 4.0))
    3.0
    """
    out = np.where(cond, a, b)
    return out[()] if out.ndim == 0 else out


def floor_log2(n: Any) -> Any:
    """Return ``floor(log2(max(n, 1)))`` exactly, as floats (integers below 2**53).

    cycgraph's doubling spending bracket of a baseline of ``n`` runs.  ``log2`` may round
    up just below a power of two for large ``n``; the two comparisons correct it.

    Examples
    --------
    >>> floor_log2(np.array([0, 1, 2, 3, 4, 1023, 1024, 2**49 - 1])).tolist()
    [0.0, 0.0, 1.0, 1.0, 2.0, 9.0, 10.0, 48.0]
    """
    x = np.maximum(n, 1) * 1.0
    e = np.floor(np.log2(x))
    return e - (2.0**e > x) + (2.0 ** (e + 1.0) <= x)


def welch_evidence(
    n: Any, n_b: Any, mean_a: Any, mean_b: Any, var_a: Any, var_b: Any, floor_var: float
) -> tuple[Any, Any, Any, Any, Any]:
    """Return lift, Welch standard error and df, and the two variance shares ``sa``, ``sb``.

    From group moments: ``n`` runs with the lesson (mean ``mean_a``, sample variance
    ``var_a``, at least 0) and ``n_b`` without (``mean_b``, ``var_b``), each variance
    floored at ``floor_var``; ``sa = var_a / n``, ``sb = var_b / n_b``, ``se = sqrt(sa +
    sb)`` and the Welch-Satterthwaite df (infinite when ``se`` is 0).  These are
    cycgraph's ``welchLift`` formulas, in its order of operations; numbers or numpy
    arrays (elementwise; ``n, n_b >= 2`` where the result is used).

    Examples
    --------
    >>> from scipy import stats
    >>> a, b = np.array([0.5, 0.6, 0.4]), np.array([0.7, 0.8, 0.75])
    >>> lift, se, df, sa, sb = welch_evidence(
    ...     3, 3, a.mean(), b.mean(), a.var(ddof=1), b.var(ddof=1), 0.0
    ... )
    >>> t = stats.ttest_ind(a, b, equal_var=False)
    >>> bool(abs(lift / se - t.statistic) < 1e-12), bool(abs(df - t.df) < 1e-9)
    (True, True)
    """
    va = np.maximum(var_a, floor_var)
    vb = np.maximum(var_b, floor_var)
    sa = va / n
    sb = vb / n_b
    se = np.sqrt(sa + sb)
    pos = se > 0.0
    den = where(pos, sa**2 / (n - 1) + sb**2 / (n_b - 1), 1.0)
    df = where(pos, (sa + sb) ** 2 / den, math.inf)
    return mean_a - mean_b, se, df, sa, sb


def welch_moments(
    n: int, s: float, ss: float, tot_n: int, tot_s: float, tot_ss: float, floor_var: float
) -> tuple[float, float, float]:
    """Return lift, Welch standard error and Welch-Satterthwaite df of a lesson.

    For a lesson with ``n >= 2`` trials and ``tot_n - n >= 2`` baseline runs, from the
    sufficient statistics of its runs (n, s, ss) and of all recorded runs: the group
    moments from the sums, then :func:`welch_evidence` (each variance floored at
    ``floor_var``; df infinite when the standard error is 0).  These are
    :func:`cogstats.estimators.welch_lift`'s formulas (cycgraph's ``welchLift``).

    Examples
    --------
    >>> a, b = [0.5, 0.6, 0.4], [0.7, 0.8, 0.75]
    >>> lift, se, df = welch_moments(
    ...     3, sum(a), sum(x * x for x in a), 6, sum(a + b), sum(x * x for x in a + b), 0.0
    ... )
    >>> round(float(lift), 6), round(float(se), 6), round(float(df), 4)
    (-0.25, 0.06455, 2.9412)
    """
    nb = tot_n - n
    mean_a = s / n
    sb = tot_s - s
    mean_b = sb / nb
    var_a = max((ss - s * mean_a) / (n - 1), 0.0)
    var_b = max(((tot_ss - ss) - sb * mean_b) / (nb - 1), 0.0)
    lift, se, df, _, _ = welch_evidence(n, nb, mean_a, mean_b, var_a, var_b, floor_var)
    return lift, se, df


def gauss_jordan_into(a: np.ndarray, p: int, aug: np.ndarray, out: np.ndarray) -> bool:
    """Invert the leading ``p x p`` block of ``a`` by Gauss-Jordan elimination, into ``out``.

    ``aug`` is ``p x 2p`` scratch.  Returns False (``out`` undefined) when a pivot is not
    above :data:`SINGULAR` times the largest diagonal.  Elementwise operations only (no
    BLAS reductions), so the result does not depend on the machine's BLAS; numba compiles
    it for the simulator, and in pure Python it runs on numpy arrays of any size (slowly:
    it is written for the compiled loop).

    Examples
    --------
    >>> a = np.array([[4.0, 2.0], [2.0, 3.0]])
    >>> aug, out = np.empty((2, 4)), np.empty((2, 2))
    >>> gauss_jordan_into(a, 2, aug, out), bool(np.allclose(out @ a, np.eye(2)))
    (True, True)
    >>> gauss_jordan_into(np.ones((2, 2)), 2, aug, out)
    False
    """
    scale = 0.0
    for i in range(p):
        scale = max(scale, abs(a[i, i]))
    for i in range(p):
        for c in range(2 * p):
            aug[i, c] = 0.0
        for c in range(p):
            aug[i, c] = a[i, c]
        aug[i, p + i] = 1.0
    for k in range(p):
        piv = aug[k, k]
        if not piv > SINGULAR * scale:
            return False
        for c in range(2 * p):
            aug[k, c] = aug[k, c] / piv
        for i in range(p):
            if i == k:
                continue
            fi = aug[i, k]
            for c in range(2 * p):
                aug[i, c] = aug[i, c] - fi * aug[k, c]
    for i in range(p):
        for c in range(p):
            out[i, c] = aug[i, p + c]
    return True


def wald(
    est: np.ndarray, se: np.ndarray, df: float, level: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Return the Wald table: interval low, high, two-sided p-value and statistic.

    ``est / se`` against Student's t with ``df`` degrees of freedom (finite) or the
    normal reference (``df`` infinite), at confidence ``level``; the operations of
    :mod:`cogstats.estimators.regression`'s table, in order.

    Examples
    --------
    >>> lo, hi, p, z = wald(np.array([0.2]), np.array([0.1]), math.inf, 0.95)
    >>> round(float(lo[0]), 4), round(float(hi[0]), 4), round(float(p[0]), 4), float(z[0])
    (0.004, 0.396, 0.0455, 2.0)
    """
    from scipy import special

    with np.errstate(invalid="ignore", divide="ignore"):
        stat = est / se
    if math.isfinite(df):
        q = float(special.stdtrit(df, 0.5 + level / 2))
        p = 2.0 * special.stdtr(df, -np.abs(stat))
    else:
        q = float(special.ndtri(0.5 + level / 2))
        p = 2.0 * special.ndtr(-np.abs(stat))
    return est - q * se, est + q * se, p, stat
