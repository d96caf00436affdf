"""Cross-products ``X'X``, ``X'y``, ``y'y`` over the batch design's columns, kept run by run.

:class:`CrossProducts` grows as lessons and covariate levels appear (internal column
order: intercept, covariate columns as first seen, lessons as first seen) and keeps two
64-bit hash sums per lesson of the runs that carry it (equal sums: the same inclusion
pattern).  :class:`RegressionStats` is its view in the batch design's column order, which
:meth:`cogstats.stats.StreamingStats.regression` returns.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from cogstats.stats._arrays import grow, grow_square

__all__ = ["CrossProductSums", "CrossProducts", "RegressionStats"]


@dataclass(frozen=True)
class RegressionStats:
    """``X'X``, ``X'y`` and ``y'y`` of the runs so far, in the batch design's column order.

    The columns are those of :func:`cogstats.estimators.ols` on the ledger of the runs so
    far: the intercept, the covariate columns coded as
    :func:`~cogstats.estimators.identifiability.covariate_design` codes them (numbers
    linearly, left out when constant; strings and booleans as dummies of every level but
    the first in sorted order), then one 0/1 indicator per lesson in order of first
    appearance.  Entries between lesson indicators are exact counts; the others are
    sums in run order (the batch design sums them in another order: last bits differ).

    Attributes
    ----------
    n : int
        Runs.
    columns : tuple of str
        ``"const"``, the covariate column names (``name`` or ``name[level]``), the lesson
        ids.
    sources : tuple of str
        The covariate of each covariate column.
    n_controls : int
        Covariate columns (the lessons start at ``1 + n_controls``).
    fact_ids : tuple of str
        The lesson columns.
    xtx, xty : numpy.ndarray
        ``X'X`` (k x k) and ``X'y`` (k).
    yty : float
        ``y'y``.

    Examples
    --------
    >>> from cogstats.gates import StreamingGate, EvidenceGate
    >>> sg = StreamingGate(EvidenceGate(method="ols", options={"cov": "nonrobust"}))
    >>> _ = sg.record("r1", 0.5, ["a"]); _ = sg.record("r2", 0.7, ["a", "b"])
    >>> reg = sg.stats.regression()
    >>> reg.columns, reg.xtx.tolist()
    (('const', 'a', 'b'), [[2.0, 2.0, 1.0], [2.0, 2.0, 1.0], [1.0, 1.0, 1.0]])
    """

    n: int
    columns: tuple[str, ...]
    sources: tuple[str, ...]
    n_controls: int
    fact_ids: tuple[str, ...]
    xtx: np.ndarray
    xty: np.ndarray
    yty: float


@dataclass(frozen=True)
class CrossProductSums:
    """``X'X``, ``X'y`` and ``y'y`` of a part of a ledger over fixed columns, mergeable.

    What one partition contributes to a regression's normal equations; two parts merge
    by adding (:meth:`merge`), in any grouping (the partitioned attribution reduces them in
    a tree).

    Examples
    --------
    >>> x, y = np.array([[1.0, 0.0], [1.0, 1.0]]), np.array([0.5, 0.7])
    >>> a = CrossProductSums(x[:1].T @ x[:1], x[:1].T @ y[:1], float(y[:1] @ y[:1]))
    >>> b = CrossProductSums(x[1:].T @ x[1:], x[1:].T @ y[1:], float(y[1:] @ y[1:]))
    >>> a.merge(b).xtx.tolist(), round(a.merge(b).yty, 12)
    ([[2.0, 1.0], [1.0, 1.0]], 0.74)
    """

    xtx: np.ndarray
    xty: np.ndarray
    yty: float

    def merge(self, other: CrossProductSums) -> CrossProductSums:
        """Return the sums of both parts."""
        return CrossProductSums(self.xtx + other.xtx, self.xty + other.xty, self.yty + other.yty)


class CrossProducts:
    """The growing cross-products over internal columns (intercept, covariates, lessons).

    Parameters
    ----------
    covariates : tuple of str
        The covariates whose columns the design carries.

    Examples
    --------
    >>> import numpy as np
    >>> cp = CrossProducts(())
    >>> cp.add(np.array([0]), {}, 0.5, 1.0); cp.add(np.array([0, 1]), {}, 0.7, 1.0)
    >>> cp.xtx[:3, :3].tolist()
    [[2.0, 2.0, 1.0], [2.0, 2.0, 1.0], [1.0, 1.0, 1.0]]
    """

    def __init__(self, covariates: tuple[str, ...]) -> None:
        self.covariates = covariates
        self.keys: list[tuple[Any, ...]] = [("const",)]
        self.col: dict[tuple[Any, ...], int] = {("const",): 0}
        self.xtx = np.zeros((16, 16))
        self.xty = np.zeros(16)
        self.yty = 0.0
        self.lesson_col = np.full(16, -1, dtype=np.int64)
        self.hsum = np.zeros((16, 2), dtype=np.uint64)
        # numeric covariate ranges and categorical level counts (which columns exist)
        self.ranges: dict[str, list[float]] = {}
        self.levels: dict[str, dict[Any, int]] = {}

    def column(self, key: tuple[Any, ...]) -> int:
        """Return the internal column of ``key`` (added if new)."""
        c = self.col.get(key)
        if c is None:
            c = len(self.keys)
            self.keys.append(key)
            self.col[key] = c
            self.xtx = grow_square(self.xtx, c + 1)
            self.xty = grow(self.xty, c + 1)
        return c

    def fit(self, size: int) -> None:
        """Room for ``size`` lessons in the per-lesson arrays."""
        if self.lesson_col.shape[0] < size:
            old = self.lesson_col.shape[0]
            self.lesson_col = grow(self.lesson_col, size)
            self.lesson_col[old:] = -1
        self.hsum = grow(self.hsum, size)

    def lesson_column(self, j: int) -> int:
        """Return the internal column of lesson ``j`` (added if new)."""
        if j >= self.lesson_col.shape[0]:
            self.fit(j + 1)
        c = int(self.lesson_col[j])
        if c < 0:
            c = self.column(("lesson", j))
            self.lesson_col[j] = c
        return c

    def row(self, cols: np.ndarray, covs: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        """Nonzero columns and values of one run's design row."""
        idx = [0]
        val = [1.0]
        for name in self.covariates:
            v = covs.get(name)
            if isinstance(v, (bool, str)):
                idx.append(self.column(("level", name, v)))
                val.append(1.0)
            elif v is not None:  # a number (a gate that allows nulls: no entry)
                idx.append(self.column(("num", name)))
                val.append(float(v))
        for j in cols.tolist():
            idx.append(self.lesson_column(j))
            val.append(1.0)
        return np.asarray(idx, dtype=np.int64), np.asarray(val)

    def add(self, cols: np.ndarray, covs: Mapping[str, Any], y: float, sign: float) -> None:
        """Add (``sign=1``) or subtract (``-1``) one run's row."""
        idx, val = self.row(cols, covs)
        self.xtx[np.ix_(idx, idx)] += sign * np.outer(val, val)
        self.xty[idx] += sign * val * y
        self.yty += sign * y * y

    def note_levels(self, covs: Mapping[str, Any], sign: int) -> None:
        """Count a run's categorical levels and widen the numeric ranges."""
        for name in self.covariates:
            v = covs.get(name)
            if isinstance(v, (bool, str)):
                counts = self.levels.setdefault(name, {})
                counts[v] = counts.get(v, 0) + sign
            elif v is not None and sign > 0:
                r = self.ranges.setdefault(name, [math.inf, -math.inf])
                r[0] = min(r[0], float(v))
                r[1] = max(r[1], float(v))
