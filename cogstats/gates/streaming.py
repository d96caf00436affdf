"""A gate that decides after every run from running sufficient statistics.

:class:`StreamingGate` wraps a gate object (cycgraph's gate, an evidence gate, or a gate of
one's own that implements the streaming protocol below) and keeps, instead of a ledger it
re-reads, the statistics the gate's decisions need, updated run by run:

* per lesson: trials, the sum of scores (accumulated in run order, bit for bit the sum a
  :class:`~cogstats.ledger.Ledger` builds) and the sum of squared scores; over all runs the
  same;
* for regression and identifiability: ``X'X``, ``X'y`` and ``y'y`` over ``[intercept,
  covariate columns, lesson indicators]``, growing as lessons and covariate levels
  appear, and two 64-bit hash sums per lesson of the runs that carry it (equal sums: the
  same inclusion pattern);
* for confidence sequences (``confseq``): the running sums of Waudby-Smith et al.'s
  pseudo-outcomes and arm means, exactly as ``confseq_paths`` accumulates them.

``record(run_id, score, fact_ids, **covariates)`` validates a run as the ledger does,
updates the statistics (O(lessons in the run), plus O((lessons in the run + covariate
columns)^2) for ``X'X``) and looks: it returns the decisions that changed.  ``report()``
is the full report, equal to ``gate.evaluate(ledger_so_far)``.  ``save(path)`` /
:meth:`StreamingGate.load` keep the state across restarts; ``ingest(path)`` follows a
growing JSON Lines file.  See docs/production.md, "Streaming gates", for the state
format, the exactness argument and the costs.

The streaming protocol
----------------------
A gate streams through an *adapter*: an object with a ``judge(stats, candidates)`` method
that turns the running statistics (a :class:`StreamingStats`) into a
:class:`~cogstats.gates.GateReport` (or a :class:`Judgement`, which lets the streaming
gate build frames for the changed rows only).  Adapters subclass :class:`StreamingAdapter`
(its other hooks are optional) and are found in this order:

1. the gate's own ``streaming_adapter()`` method, if its class defines one;
2. :data:`STREAMING_ADAPTERS`, factories keyed by the gate's registry name (add one with
   :func:`register_streaming`).

An adapter that needs the regression statistics sets ``regression_covariates`` (a tuple
of covariate names, ``()`` for lessons only) and reads them with
:meth:`StreamingStats.regression`; one that needs exact batch arithmetic for a few
lessons (a near tie) reads their runs from the statistics (:meth:`StreamingStats.positions`,
:meth:`StreamingStats.scores`) or rebuilds the ledger (:meth:`StreamingStats.to_ledger`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import math
import os
import tempfile
import zipfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import polars as pl
from scipy import special

from cogstats import _ledger_stats
from cogstats._validation import LedgerError, ParameterError, check_choice
from cogstats.gates._registry import GATES, make_gate
from cogstats.gates._report import GateReport, report_frame
from cogstats.ledger import _column_kind, _kind, _validate_record, _warn_repeated

if TYPE_CHECKING:
    from cogstats.estimators._base import Attribution
    from cogstats.gates.cycgraph import CycgraphGate
    from cogstats.gates.evidence import EvidenceGate
    from cogstats.ledger import Ledger

__all__ = [
    "STATE_FORMAT",
    "STATE_VERSION",
    "STREAMING_ADAPTERS",
    "IngestResult",
    "Judgement",
    "RegressionStats",
    "SkippedLine",
    "StreamingAdapter",
    "StreamingGate",
    "StreamingStats",
    "register_streaming",
]

#: The ``format`` field of a saved state.
STATE_FORMAT = "cogstats.streaming-gate"
#: The ``version`` field of a saved state (a state of another version raises on load).
STATE_VERSION = 1

_U = _ledger_stats.UNIT_ROUNDOFF
#: bytes read from a JSON Lines file at a time by :meth:`StreamingGate.ingest`
_CHUNK = 1 << 22
#: bytes of a followed file's beginning whose digest the ingest marker keeps
_HEAD = 4096
#: skipped ingest lines kept in the state (the most recent)
_SKIPPED_KEPT = 1000
#: relative widening of every interval in the near-tie checks (function rounding)
_SLACK = 1e-12
#: relative uncertainty assumed for the streaming OLS estimates and standard errors
#: (they come from X'X summed in another order than the batch design)
_OLS_TOL = 1e-8
#: a residual sum of squares below this share of y'y is a (near) exact fit: batch fallback
_OLS_EXACT_FIT = 1e-4
#: a relative Cholesky pivot below this is close to the batch's singularity test (1e-12)
_OLS_PIVOT = 1e-9
#: the shift of the running sums of squares: sum (y - c)^2 with c mid-scale keeps the
#: terms at most 1/4 (scores are in [0, 1]), which tightens their rounding bounds
_SHIFT = 0.5
#: a variance inflation factor this many times the threshold is an exact dependency in
#: the batch's decomposition too (there: infinite)
_VIF_CLEAR = 1e6
_MASK64 = (1 << 64) - 1


# ====================================================================== the statistics
def _grow(a: np.ndarray, size: int) -> np.ndarray:
    """Return ``a`` with room for ``size`` rows (capacity doubles; new rows are zero)."""
    if a.shape[0] >= size:
        return a
    cap = max(size, 2 * a.shape[0], 16)
    out = np.zeros((cap, *a.shape[1:]), dtype=a.dtype)
    out[: a.shape[0]] = a
    return out


def _grow_square(a: np.ndarray, size: int) -> np.ndarray:
    if a.shape[0] >= size:
        return a
    cap = max(size, 2 * a.shape[0], 16)
    out = np.zeros((cap, cap), dtype=a.dtype)
    k = a.shape[0]
    out[:k, :k] = a
    return out


def _splitmix(x: int) -> int:
    """SplitMix64: a 64-bit hash of a run position (Python ints, wrapped to 64 bits)."""
    x = (x + 0x9E3779B97F4A7C15) & _MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    return x ^ (x >> 31)


def _run_hashes(position: int) -> np.ndarray:
    return np.array(
        [_splitmix(position * 2 + 0x5EED), _splitmix(position * 2 + 1 + 0xC0FFEE)],
        dtype=np.uint64,
    )


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


class _Regression:
    """The growing cross-products over internal columns (intercept, covariates, lessons)."""

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

    def _column(self, key: tuple[Any, ...]) -> int:
        c = self.col.get(key)
        if c is None:
            c = len(self.keys)
            self.keys.append(key)
            self.col[key] = c
            self.xtx = _grow_square(self.xtx, c + 1)
            self.xty = _grow(self.xty, c + 1)
        return c

    def fit(self, size: int) -> None:
        """Room for ``size`` lessons in the per-lesson arrays."""
        if self.lesson_col.shape[0] < size:
            old = self.lesson_col.shape[0]
            self.lesson_col = _grow(self.lesson_col, size)
            self.lesson_col[old:] = -1
        self.hsum = _grow(self.hsum, size)

    def lesson_column(self, j: int) -> int:
        if j >= self.lesson_col.shape[0]:
            self.fit(j + 1)
        c = int(self.lesson_col[j])
        if c < 0:
            c = self._column(("lesson", j))
            self.lesson_col[j] = c
        return c

    def row(self, cols: np.ndarray, covs: Mapping[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        """Nonzero columns and values of one run's design row."""
        idx = [0]
        val = [1.0]
        for name in self.covariates:
            v = covs.get(name)
            if isinstance(v, (bool, str)):
                idx.append(self._column(("level", name, v)))
                val.append(1.0)
            elif v is not None:  # a number (an adapter that allows nulls: no entry)
                idx.append(self._column(("num", name)))
                val.append(float(v))
        for j in cols.tolist():
            idx.append(self.lesson_column(j))
            val.append(1.0)
        return np.asarray(idx, dtype=np.int64), np.asarray(val)

    def add(self, cols: np.ndarray, covs: Mapping[str, Any], y: float, sign: float) -> None:
        idx, val = self.row(cols, covs)
        self.xtx[np.ix_(idx, idx)] += sign * np.outer(val, val)
        self.xty[idx] += sign * val * y
        self.yty += sign * y * y

    def note_levels(self, covs: Mapping[str, Any], sign: int) -> None:
        for name in self.covariates:
            v = covs.get(name)
            if isinstance(v, (bool, str)):
                counts = self.levels.setdefault(name, {})
                counts[v] = counts.get(v, 0) + sign
            elif v is not None and sign > 0:
                r = self.ranges.setdefault(name, [math.inf, -math.inf])
                r[0] = min(r[0], float(v))
                r[1] = max(r[1], float(v))


class StreamingStats:
    """The running sufficient statistics of a :class:`StreamingGate` (read by adapters).

    It holds the runs as a :class:`~cogstats.ledger.Ledger` would (ids, scores, the listed
    lesson ids, covariate columns), the lesson table (every lesson id seen, in the order
    first seen, with its trials, its sum of scores in run order, ``sum (y - 1/2)`` and
    ``sum (y - 1/2)^2``, and the positions of its runs), the totals, and, where an adapter
    asks for them, the regression cross-products (:meth:`regression`).  Adapters read it;
    only :class:`StreamingGate` changes it.

    Parameters
    ----------
    regression_covariates : tuple of str or None
        Covariates whose columns ``X'X`` carries (``()``: intercept and lessons only;
        None: no cross-products kept).

    Attributes
    ----------
    version : int
        Increases with every change (an adapter may cache on it).
    recomputed : int
        Lessons recomputed from their runs for a near tie so far (a diagnostic).
    fallbacks : int
        Looks that ran a batch estimator on :meth:`to_ledger` (a diagnostic).
    total_sum : float
        The sum of every score, in run order.

    Examples
    --------
    >>> from cogstats.gates import StreamingGate, CycgraphGate
    >>> sg = StreamingGate(CycgraphGate())
    >>> _ = sg.record("r1", 0.9, ["a"]); _ = sg.record("r2", 0.5, ["a", "b"])
    >>> stats = sg.stats
    >>> stats.n_runs, stats.fact_ids, stats.trials(["a", "b"]).tolist()
    (2, ('a', 'b'), [2, 1])
    """

    def __init__(self, regression_covariates: tuple[str, ...] | None = None) -> None:
        # runs, as the ledger holds them
        self._run_ids: list[str] = []
        self._index: dict[str, int] = {}
        self._scores: list[float] = []
        self._y = np.zeros(16)
        self._facts: list[list[str]] = []
        self._cols: list[np.ndarray] = []
        self._covariates: dict[str, list[Any]] = {}
        self._kinds: dict[str, str | None] = {}
        # lessons
        self._lesson_ids: list[str] = []
        self._lpos: dict[str, int] = {}
        self._trials = np.zeros(16, dtype=np.int64)
        self._sums = np.zeros(16)
        self._sumc = np.zeros(16)
        self._sumsq = np.zeros(16)
        self._positions: list[list[int]] = []
        # totals
        self.total_sum = 0.0
        self.total_sumc = 0.0
        self.total_sumsq = 0.0
        self.y_min = math.inf
        self.y_max = -math.inf
        self._order: np.ndarray | None = np.zeros(0, dtype=np.int64)
        self._order_ids: tuple[str, ...] | None = ()
        self.version = 0
        self.recomputed = 0  # diagnostics, not saved
        self.fallbacks = 0
        self._reg = None if regression_covariates is None else _Regression(regression_covariates)

    # ------------------------------------------------------------------ views
    @property
    def n_runs(self) -> int:
        """Runs recorded."""
        return len(self._run_ids)

    @property
    def run_ids(self) -> tuple[str, ...]:
        """Run ids in ledger order."""
        return tuple(self._run_ids)

    @property
    def covariates(self) -> list[str]:
        """Covariate column names, as ``Ledger.covariates``."""
        return list(self._covariates)

    def covariate_values(self, name: str) -> list[Any]:
        """One covariate column as a list (None where a run lacks it)."""
        return list(self._covariates[name])

    def scores(self) -> np.ndarray:
        """Scores in ledger order (a fresh float64 array, as :attr:`Ledger.scores`)."""
        return np.array(self._y[: self.n_runs])

    @property
    def fact_ids(self) -> tuple[str, ...]:
        """Lessons in the runs so far, in order of first appearance (``Ledger.fact_ids``)."""
        self._ensure_order()
        assert self._order_ids is not None
        return self._order_ids

    def order(self) -> np.ndarray:
        """Return the internal indices of :attr:`fact_ids` (into the lesson table)."""
        self._ensure_order()
        assert self._order is not None
        return self._order

    @property
    def lesson_ids(self) -> tuple[str, ...]:
        """Every lesson id in the table (first seen first), absent ones included."""
        return tuple(self._lesson_ids)

    def lesson_index(self, fact_ids: Sequence[str]) -> np.ndarray:
        """Return the internal indices of ``fact_ids`` (each added to the table if new)."""
        return np.fromiter((self._lesson(f) for f in fact_ids), dtype=np.int64, count=len(fact_ids))

    def trials(self, fact_ids: Sequence[str] | None = None) -> np.ndarray:
        """Return the runs carrying each lesson (table order, or ``fact_ids``; 0 if unknown)."""
        if fact_ids is None:
            return self._trials[: len(self._lesson_ids)].copy()
        pos = self._lpos
        return np.fromiter(
            (self._trials[pos[f]] if f in pos else 0 for f in fact_ids),
            dtype=np.int64,
            count=len(fact_ids),
        )

    def positions(self, j: int) -> np.ndarray:
        """Run positions (0-based, in run order) of the runs carrying lesson ``j``."""
        return np.asarray(self._positions[j], dtype=np.int64)

    def run_lessons(self, i: int) -> np.ndarray:
        """Return the internal indices of the lessons of run ``i`` (once each, listed order)."""
        return self._cols[i]

    def run_covariates(self, i: int) -> dict[str, Any]:
        """Return the covariates of run ``i``."""
        return {name: values[i] for name, values in self._covariates.items()}

    def to_ledger(self) -> Ledger:
        """Return the runs so far as a :class:`~cogstats.ledger.Ledger` (for batch fallbacks).

        Cost O(runs) (lists are copied; nothing is validated again).
        """
        from cogstats.ledger import Ledger

        ledger = Ledger()
        ledger._run_ids = list(self._run_ids)
        ledger._scores = list(self._scores)
        ledger._fact_ids = [list(f) for f in self._facts]
        ledger._covariates = {k: list(v) for k, v in self._covariates.items()}
        ledger._index = dict(self._index)
        return ledger

    # ------------------------------------------------------------------ lessons
    def _lesson(self, f: str) -> int:
        j = self._lpos.get(f)
        if j is None:
            j = len(self._lesson_ids)
            self._lpos[f] = j
            self._lesson_ids.append(f)
            self._positions.append([])
            size = j + 1
            self._trials = _grow(self._trials, size)
            self._sums = _grow(self._sums, size)
            self._sumc = _grow(self._sumc, size)
            self._sumsq = _grow(self._sumsq, size)
        return j

    def _ensure_order(self) -> None:
        if self._order is not None:
            return
        seen: dict[int, None] = {}
        for cols in self._cols:
            for j in cols.tolist():
                seen.setdefault(j, None)
        self._order = np.fromiter(seen, dtype=np.int64, count=len(seen))
        self._order_ids = tuple(self._lesson_ids[j] for j in seen)

    # ------------------------------------------------------------------ mutation
    def _dedup(self, facts: list[str]) -> np.ndarray:
        out: dict[int, None] = {}
        for f in facts:
            out.setdefault(self._lesson(f), None)
        return np.fromiter(out, dtype=np.int64, count=len(out))

    def _append(self, run_id: str, score: float, facts: list[str], covs: dict[str, Any]) -> int:
        i = len(self._run_ids)
        self._index[run_id] = i
        self._run_ids.append(run_id)
        self._scores.append(score)
        self._facts.append(facts)
        for values in self._covariates.values():
            values.append(None)
        for name, value in covs.items():
            if name not in self._covariates:
                self._covariates[name] = [None] * (i + 1)
            self._covariates[name][i] = value
        self._y = _grow(self._y, i + 1)
        self._y[i] = score
        cols = self._dedup(facts)
        self._cols.append(cols)
        fresh = cols[self._trials[cols] == 0] if cols.size else cols
        self._trials[cols] += 1
        self._sums[cols] += score  # run order: one add per lesson, as np.bincount does
        yc = score - _SHIFT
        self._sumc[cols] += yc
        self._sumsq[cols] += yc * yc
        for j in cols.tolist():
            self._positions[j].append(i)
        self.total_sum += score
        self.total_sumc += yc
        self.total_sumsq += yc * yc
        self.y_min = min(self.y_min, score)
        self.y_max = max(self.y_max, score)
        if fresh.size and self._order is not None:
            # lessons appearing for the first time (or again): last in first-appearance order
            self._order = np.concatenate([self._order, fresh])
            self._order_ids = (*(self._order_ids or ()), *(self._lesson_ids[j] for j in fresh))
        if self._reg is not None:
            self._reg.add(cols, covs, score, 1.0)
            self._reg.note_levels(covs, 1)
            if cols.size:
                self._reg.hsum[cols] += _run_hashes(i)
        self.version += 1
        return i

    def _replace(self, i: int, score: float, facts: list[str], covs: dict[str, Any]) -> None:
        old_cols = self._cols[i]
        old_covs = self.run_covariates(i)
        old_score = self._scores[i]
        if self._reg is not None:
            self._reg.add(old_cols, old_covs, old_score, -1.0)
            self._reg.note_levels(old_covs, -1)
            if old_cols.size:
                self._reg.hsum[old_cols] -= _run_hashes(i)
        for j in old_cols.tolist():
            self._positions[j].remove(i)
        self._trials[old_cols] -= 1
        self._scores[i] = score
        self._facts[i] = facts
        for values in self._covariates.values():
            values[i] = None
        for name, value in covs.items():
            if name not in self._covariates:
                self._covariates[name] = [None] * len(self._run_ids)
            self._covariates[name][i] = value
        self._y[i] = score
        cols = self._dedup(facts)
        self._cols[i] = cols
        self._trials[cols] += 1
        import bisect

        for j in cols.tolist():
            bisect.insort(self._positions[j], i)
        y = self._y[: self.n_runs]
        for j in set(old_cols.tolist()) | set(cols.tolist()):
            ya = y[self._positions[j]]
            self._sums[j] = float(np.cumsum(ya)[-1]) if ya.size else 0.0  # run order
            yc = ya - _SHIFT
            self._sumc[j] = float(np.cumsum(yc)[-1]) if ya.size else 0.0
            self._sumsq[j] = float(np.cumsum(yc * yc)[-1]) if ya.size else 0.0
        yc = y - _SHIFT
        self.total_sum = float(np.cumsum(y)[-1])
        self.total_sumc = float(np.cumsum(yc)[-1])
        self.total_sumsq = float(np.cumsum(yc * yc)[-1])
        self.y_min, self.y_max = float(y.min()), float(y.max())
        self._order = None
        self._order_ids = None
        self._kinds = {name: _column_kind(values) for name, values in self._covariates.items()}
        if self._reg is not None:
            self._reg.add(cols, covs, score, 1.0)
            self._reg.note_levels(covs, 1)
            if cols.size:
                self._reg.hsum[cols] += _run_hashes(i)
            for name in self._reg.covariates:  # numeric ranges after the change
                values = [v for v in self._covariates.get(name, []) if v is not None]
                if values and not isinstance(values[0], (bool, str)):
                    self._reg.ranges[name] = [float(min(values)), float(max(values))]
        self.version += 1

    # ------------------------------------------------------------------ group statistics
    def group_arrays(
        self, idx: np.ndarray
    ) -> tuple[_ledger_stats.GroupArrays, np.ndarray, np.ndarray, np.ndarray]:
        """With-lesson and leave-one-out statistics of lessons ``idx``, with error bounds.

        Returns ``(groups, lift_tol, var_a_tol, var_b_tol)``.  ``groups`` is what
        ``Ledger._group_arrays`` returns, from running sums: trials, means and baseline
        means as the ledger's additive statistics (the with-lesson mean and the additive
        baseline mean are bit for bit the ledger's), sums of squared deviations from the
        running ``sum (y - c)`` and ``sum (y - c)^2`` (``c = 0.5``) and Chan's
        decomposition for the baselines.  No statistic is marked exact.

        The tolerances bound how far each statistic may be from its run-order value
        (``cogstats._ledger_stats.exact_stats``, which decides near ties).  With ``u``
        the unit roundoff, ``Q`` a running ``sum (y - c)^2`` over ``n`` runs and ``SS``
        a sum of squared deviations (recursive summation, Higham eq. 4.4; Cauchy-Schwarz
        for ``sum (y - c)``):

        * the baseline mean: the ledger's bound (``lift_tol``, of
          :func:`cogstats._ledger_stats.uncertainty`);
        * a sum of squared deviations ``Q - S (S / n)``: ``(3 n + 9) u Q``, taken as
          ``(4 n + 8) u Q``; the run-order two-pass value is within ``(n + 2) u SS + n^3
          u^2`` of the true one;
        * the baseline's ``SS - SS_a - between``: the two sums' bounds, ``2 u SS`` for the
          subtractions and ``2 (n_a n_b / N) |m_a - m_b| (lift_tol + 2 N u)`` for the
          between-groups term;

        each doubled.

        Examples
        --------
        >>> from cogstats.gates import CycgraphGate, StreamingGate
        >>> sg = StreamingGate(CycgraphGate())
        >>> for i, s in enumerate([0.9, 0.7, 0.5, 0.6]):
        ...     _ = sg.record(f"r{i}", s, ["a"] if i < 2 else [])
        >>> g, lift_tol, var_a_tol, var_b_tol = sg.stats.group_arrays(sg.stats.order())
        >>> round(float(g.mean_a[0] - g.mean_b[0]), 12), bool(lift_tol[0] < 1e-14)
        (0.25, True)
        """
        n = self.n_runs
        n_a = self._trials[idx]
        s_a = self._sums[idx]
        sc_a = self._sumc[idx]
        q_a = self._sumsq[idx]
        nf = float(n)
        na = n_a.astype(float)
        n_b = n - n_a
        nb = n_b.astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean_a = np.where(n_a > 0, s_a / np.maximum(n_a, 1), 0.0)
            ss_a = np.maximum(q_a - sc_a * (sc_a / np.maximum(na, 1.0)), 0.0)
            var_a = np.where(n_a >= 2, ss_a / np.maximum(n_a - 1, 1), np.nan)
            mean_b = np.where(n_b > 0, (self.total_sum - s_a) / np.maximum(n_b, 1), 0.0)
            ss_total = max(
                self.total_sumsq - self.total_sumc * (self.total_sumc / max(nf, 1.0)), 0.0
            )
            between = n_a * n_b / max(n, 1) * (mean_a - mean_b) ** 2
            ss_b = np.maximum(ss_total - ss_a - between, 0.0)
            var_b = np.where(n_b >= 2, ss_b / np.maximum(n_b - 1, 1), np.nan)
        nb1 = np.maximum(nb, 1.0)
        lift_tol = 4.0 * _U * (nf * nf + na * na + nb1 * nb1 + nf + 2.0) / nb1
        u2 = _U * _U
        var_a_tol = (
            2.0
            * ((4.0 * na + 8.0) * _U * q_a + (na + 2.0) * _U * ss_a + na**3 * u2)
            / np.maximum(na - 1.0, 1.0)
        )
        var_b_tol = (
            2.0
            * (
                (4.0 * nf + 8.0) * _U * self.total_sumsq
                + (4.0 * na + 8.0) * _U * q_a
                + 2.0 * _U * ss_total
                + 2.0
                * (na * nb / max(nf, 1.0))
                * np.abs(mean_a - mean_b)
                * (lift_tol + 2 * nf * _U)
                + (nb + 2.0) * _U * ss_b
                + nb**3 * u2
            )
            / np.maximum(nb - 1.0, 1.0)
        )
        groups = _ledger_stats.GroupArrays(
            n_a.astype(np.int64),
            mean_a,
            var_a,
            n_b.astype(np.int64),
            mean_b,
            var_b,
            np.zeros(idx.size, dtype=bool),
        )
        return groups, lift_tol, var_a_tol, var_b_tol

    def exact_stats(self, j: int) -> tuple[int, float, float, int, float, float]:
        """Lesson ``j``'s statistics in run order (``cogstats._ledger_stats.exact_stats``).

        Returns ``(n_a, mean_a, var_a, n_b, mean_b, var_b)``, bit for bit what
        ``exact_stats`` returns on the ledger of the runs so far.  Cost O(runs): the
        baseline is summed over the runs without the lesson.
        """
        self.recomputed += 1
        rows = self.positions(j)
        z = np.zeros(1)
        fa = _ledger_stats.FactArrays(
            self.scores(),
            rows,
            np.zeros(rows.size, dtype=np.int64),
            np.array([rows.size]),
            np.array([self._sums[j]]),
            z,
            z,
            self.total_sum,
            0.0,
            0.0,
        )
        return _ledger_stats.exact_stats(fa, 0)

    def exact_means(self, j: int) -> tuple[int, float, int, float]:
        """Lesson ``j``'s trials and means as :meth:`exact_stats` has them (no variances).

        Cost O(runs), without the two sums of squares.
        """
        self.recomputed += 1
        rows = self.positions(j)
        y = self._y[: self.n_runs]
        member = np.zeros(y.size, dtype=bool)
        member[rows] = True
        n_a = int(rows.size)
        mean_a = float(self._sums[j] / n_a) if n_a else 0.0
        yb = y[~member]
        n_b = int(yb.size)
        mean_b = float(np.cumsum(yb)[-1] / n_b) if n_b else 0.0
        return n_a, mean_a, n_b, mean_b

    def _fact_arrays(self, js: Sequence[int]) -> _ledger_stats.FactArrays:
        """``Ledger._fact_arrays()`` restricted to lessons ``js`` (bit for bit; O(runs))."""
        rows = [self.positions(j) for j in js]
        cols = [np.full(r.size, k, dtype=np.int64) for k, r in enumerate(rows)]
        return _ledger_stats.fact_arrays(
            self.scores(),
            np.concatenate(rows) if rows else np.zeros(0, np.int64),
            np.concatenate(cols) if cols else np.zeros(0, np.int64),
            len(js),
        )

    def batch_group_arrays(self, js: Sequence[int]) -> _ledger_stats.GroupArrays:
        """``Ledger._group_arrays`` of lessons ``js`` (present ones), bit for bit; O(runs)."""
        self.recomputed += len(js)
        fa = self._fact_arrays(js)
        return _ledger_stats.group_arrays(fa, np.arange(len(js), dtype=np.int64))

    # ------------------------------------------------------------------ regression
    @property
    def has_regression(self) -> bool:
        """Whether the cross-products are kept."""
        return self._reg is not None

    def regression(self) -> RegressionStats:
        """``X'X``, ``X'y``, ``y'y`` over the batch design's columns (see :class:`RegressionStats`).

        Cost O(k^2) (a copy of the k x k block in batch order).

        Raises
        ------
        ParameterError
            When the statistics keep no cross-products (the adapter did not ask).
        """
        reg = self._reg
        if reg is None:
            raise ParameterError(
                "these streaming statistics keep no regression cross-products; an adapter "
                "that needs them sets regression_covariates"
            )
        sel = [0]
        names: list[str] = []
        sources: list[str] = []
        for name in reg.covariates:
            if name in reg.levels:
                levels = sorted(lev for lev, c in reg.levels[name].items() if c > 0)
                for lev in levels[1:]:
                    sel.append(reg.col[("level", name, lev)])
                    names.append(f"{name}[{lev}]")
                    sources.append(name)
            else:
                lo, hi = reg.ranges.get(name, [0.0, 0.0])
                if hi > lo:
                    sel.append(reg.col[("num", name)])
                    names.append(name)
                    sources.append(name)
        order = self.order()
        for j in order.tolist():
            sel.append(int(reg.lesson_col[j]))
        s = np.asarray(sel, dtype=np.int64)
        return RegressionStats(
            n=self.n_runs,
            columns=("const", *names, *self.fact_ids),
            sources=tuple(sources),
            n_controls=len(names),
            fact_ids=self.fact_ids,
            xtx=reg.xtx[np.ix_(s, s)].copy(),
            xty=reg.xty[s].copy(),
            yty=float(reg.yty),
        )

    def identifiability(
        self, reg: RegressionStats, vif_threshold: float
    ) -> tuple[pl.DataFrame, bool]:
        """:func:`~cogstats.estimators.lesson_identifiability` from the cross-products.

        Returns ``(frame, trusted)``.  Counts and duplicate inclusion patterns (equal hash
        sums of the runs carrying a lesson) are exact.  The batch check decomposes the
        dense design when it has at most ``DENSE_LIMIT`` entries and its cross-products
        otherwise; here the cross-products always.  ``trusted`` says the frame's flags
        are those of the batch check: either the batch check also works from the
        cross-products and the inputs are bit for bit the same (no covariates, a large
        design), or every lesson's variance inflation factor is below half the threshold
        or above a million times it (an exact dependency, such as a fixed number of
        lessons in every run: infinite in the batch's decomposition), so rounding cannot
        move it across.  Otherwise the adapter should fall back to the batch check on
        :meth:`to_ledger`.

        Examples
        --------
        >>> from cogstats.gates import EvidenceGate, StreamingGate
        >>> sg = StreamingGate(EvidenceGate(method="welch"))  # keeps X'X for the check
        >>> for i, ids in enumerate([["a", "b"], ["a", "b"], ["c"], [], ["a", "b", "c"]]):
        ...     _ = sg.record(f"r{i}", 0.1 * i, ids)
        >>> frame, trusted = sg.stats.identifiability(sg.stats.regression(), 1e3)
        >>> frame["reason"].to_list(), trusted
        (['duplicate inclusion pattern', 'duplicate inclusion pattern', None], True)
        """
        from cogstats.estimators.identifiability import (
            DEFAULT_TOL,
            DENSE_LIMIT,
            _identify,
            _weak_from_cross_products,
        )

        reg_state = self._reg
        assert reg_state is not None
        n = reg.n
        q = reg.n_controls
        order = self.order()
        counts = self._trials[order]
        keys = [tuple(r) for r in reg_state.hsum[order].tolist()]
        xtx = reg.xtx
        with np.errstate(invalid="ignore", divide="ignore"):
            mu = xtx[0, 1:] / n
            centred = xtx[1:, 1:] - n * np.outer(mu, mu)
        c_zz = centred[:q, :q]
        znorm = np.sqrt(np.maximum(np.diag(c_zz), 0.0))
        usable = znorm > 0
        used: dict[str, Any] = {}

        def weak(reps: list[int]) -> tuple[np.ndarray, np.ndarray | None, list[str], bool]:
            lessons = q + np.asarray(reps, dtype=np.int64)
            zu = np.flatnonzero(usable)
            c_ll = centred[np.ix_(lessons, lessons)]
            c_lz = centred[np.ix_(lessons, zu)] / znorm[zu]
            c_z = c_zz[np.ix_(zu, zu)] / np.outer(znorm[zu], znorm[zu])
            col_sources = ["" for _ in reps] + [reg.sources[k] for k in zu.tolist()]
            used["m"] = len(reps) + zu.size
            if c_ll.shape[0] + c_z.shape[0] == 0:
                return np.zeros(0), np.zeros((0, 0)), col_sources, False
            s_w, vt = _weak_from_cross_products(c_ll, c_lz, c_z, vif_threshold)
            return s_w, vt, col_sources, True

        frame = _identify(list(reg.fact_ids), n, counts, keys, weak, DEFAULT_TOL, vif_threshold)
        m = int(used.get("m", 0))
        if m == 0 or (q == 0 and n * m > DENSE_LIMIT):
            return frame, True
        # a flag is the batch's unless the factor could be on either side of the
        # threshold: it is clearly below (half) or clearly above (a million times, which
        # an exact dependency gives in both decompositions)
        unclear = [
            v
            for v, r in zip(frame["vif"].to_list(), frame["reason"].to_list(), strict=True)
            if r in (None, "near collinear")
            and v is not None
            and not math.isnan(v)
            and vif_threshold / 2.0 < v < vif_threshold * _VIF_CLEAR
        ]
        return frame, not unclear


# ====================================================================== the protocol
@dataclass(frozen=True)
class Judgement:
    """One look's decisions, before they become a report.

    An adapter returns one from :meth:`StreamingAdapter.judge` (or a plain
    :class:`~cogstats.gates.GateReport`, which :meth:`from_report` wraps); the streaming
    gate compares ``decision`` and ``reason`` with the previous look and asks ``frame``
    for the changed rows only.

    Attributes
    ----------
    gate : str
        The report's gate name.
    fact_ids : tuple of str
        The candidates, in order.
    decision, reason : numpy.ndarray
        Object arrays aligned with ``fact_ids`` (reason None where there is none).
    frame : callable
        ``frame(rows)``: the decisions frame of those row positions (``None``: all).
    settings : mapping
        The report's settings.

    Examples
    --------
    >>> import polars as pl
    >>> report = GateReport("mine", pl.DataFrame({"fact_id": ["a"], "decision": ["hold"]}))
    >>> j = Judgement.from_report(report)
    >>> j.decision.tolist(), j.report().held
    (['hold'], ('a',))
    """

    gate: str
    fact_ids: tuple[str, ...]
    decision: np.ndarray
    reason: np.ndarray
    frame: Callable[[np.ndarray | None], pl.DataFrame]
    settings: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_report(cls, report: GateReport) -> Judgement:
        """Wrap a full report (its frame is sliced for the changed rows)."""
        frame = report.to_frame()

        def rows(sel: np.ndarray | None) -> pl.DataFrame:
            if sel is None:
                return frame
            return frame[sel.tolist()] if sel.size else frame.clear()

        return cls(
            report.gate,
            tuple(frame["fact_id"].to_list()),
            np.asarray(frame["decision"].to_list(), dtype=object),
            np.asarray(frame["reason"].to_list(), dtype=object),
            rows,
            report.settings,
        )

    def report(self, rows: np.ndarray | None = None) -> GateReport:
        """Return the :class:`~cogstats.gates.GateReport` of those rows (``None``: all)."""
        return GateReport(self.gate, self.frame(rows), self.settings)


class StreamingAdapter:
    """Base class of the objects that let a gate stream (the streaming protocol).

    Subclass it, implement :meth:`judge`, and make it findable: a ``streaming_adapter()``
    method on the gate class that returns one, or a factory registered with
    :func:`register_streaming` under the gate's registry name.  The other hooks are
    optional.

    Attributes
    ----------
    regression_covariates : tuple of str or None
        Set it to keep ``X'X``, ``X'y``, ``y'y`` over ``[1, these covariates' columns,
        lessons]`` (``()``: intercept and lessons; the default None keeps none).  The
        streaming gate then refuses a run without a value for one of them (a regression
        cannot use it; the batch gate would raise on the whole ledger).
    replays_on_replace : bool
        Whether :meth:`observe` state must be rebuilt from the runs when a run is
        recorded again (the default True calls :meth:`reset` then :meth:`observe` for
        every run).

    Examples
    --------
    A gate of one's own that holds every lesson, streamed:

    >>> from dataclasses import dataclass
    >>> import polars as pl
    >>> from cogstats.gates import GateReport, StreamingGate
    >>> class HoldAllAdapter(StreamingAdapter):
    ...     def judge(self, stats, candidates):
    ...         ids = list(stats.fact_ids if candidates is None else candidates)
    ...         return GateReport("hold_all", pl.DataFrame(
    ...             {"fact_id": ids, "decision": ["hold"] * len(ids)},
    ...             schema=[("fact_id", pl.String), ("decision", pl.String)]))
    >>> @dataclass(frozen=True)
    ... class HoldAll:
    ...     def evaluate(self, ledger, candidates=None, *, rng=None):
    ...         raise NotImplementedError
    ...     def streaming_adapter(self):
    ...         return HoldAllAdapter()
    >>> sg = StreamingGate(HoldAll())
    >>> _ = sg.record("r1", 0.5, ["a"])
    >>> sg.report().held
    ('a',)
    """

    regression_covariates: tuple[str, ...] | None = None
    replays_on_replace: bool = True

    def judge(self, stats: StreamingStats, candidates: Sequence[str] | None) -> Any:
        """Decide on ``candidates`` (None: ``stats.fact_ids``): a GateReport or Judgement."""
        raise NotImplementedError

    def validate(self, stats: StreamingStats, covariates: Mapping[str, Any]) -> None:
        """Refuse a run before it is recorded (raise :class:`LedgerError` naming the field)."""
        names = self.regression_covariates or ()
        for name in names:
            value = covariates.get(name)
            if value is None:
                raise LedgerError(
                    f"the gate's regression needs this covariate in every run "
                    f"(covariates={tuple(names)!r}); got {value!r}",
                    field=name,
                )
            if isinstance(value, list):
                raise LedgerError(
                    "a regression covariate must be a number, string or boolean; got a list",
                    field=name,
                )

    def observe(self, stats: StreamingStats, position: int) -> None:
        """Update own state after run ``position`` was appended (optional)."""

    def reset(self, stats: StreamingStats) -> None:
        """Forget own state (before a replay after a run was recorded again)."""

    def state(self) -> dict[str, np.ndarray]:
        """Own state as named arrays, for :meth:`StreamingGate.save` (optional)."""
        return {}

    def restore(self, state: Mapping[str, np.ndarray]) -> None:
        """Take back what :meth:`state` returned (after :meth:`StreamingGate.load`)."""


#: Adapter factories by gate registry name: ``STREAMING_ADAPTERS[name](gate) -> adapter``.
STREAMING_ADAPTERS: dict[str, Callable[[Any], StreamingAdapter]] = {}


def register_streaming(
    name: str,
) -> Callable[[Callable[[Any], StreamingAdapter]], Callable[[Any], StreamingAdapter]]:
    """Register an adapter factory for the gate registered as ``name`` (a decorator).

    The factory receives the gate object and returns a :class:`StreamingAdapter`, or
    raises :class:`~cogstats._validation.ParameterError` naming the settings it cannot
    stream.

    Examples
    --------
    >>> @register_streaming("hold_all_example")
    ... def _factory(gate):
    ...     return StreamingAdapter()
    >>> "hold_all_example" in STREAMING_ADAPTERS
    True
    >>> del STREAMING_ADAPTERS["hold_all_example"]
    """

    def deco(factory: Callable[[Any], StreamingAdapter]) -> Callable[[Any], StreamingAdapter]:
        STREAMING_ADAPTERS[name] = factory
        return factory

    return deco


def _registry_name(gate: Any) -> str:
    cls = type(gate)
    for name in GATES.builtin:
        if cls.__module__ == GATES.builtin[name]:
            entry = GATES[name]
            if entry.cls is cls:
                return name
    for name, entry in GATES._entries.items():
        if entry.cls is cls:
            return name
    return f"{cls.__module__}:{cls.__qualname__}"


def _adapter(gate: Any, name: str) -> StreamingAdapter:
    own = getattr(gate, "streaming_adapter", None)
    if callable(own):
        adapter = own()
        if not isinstance(adapter, StreamingAdapter):
            raise ParameterError(
                f"{type(gate).__name__}.streaming_adapter() must return a StreamingAdapter; "
                f"got {type(adapter).__name__}"
            )
        return adapter
    factory = STREAMING_ADAPTERS.get(name)
    if factory is None:
        raise ParameterError(
            f"StreamingGate cannot stream gate {name!r}: it streams "
            f"{sorted(STREAMING_ADAPTERS)} (see cogstats.gates.streaming: a gate streams "
            "through a StreamingAdapter, from its streaming_adapter() method or "
            "register_streaming(name))"
        )
    return factory(gate)


# ====================================================================== cycgraph
class _CycgraphAdapter(StreamingAdapter):
    """cycgraph's gate from running sums, near ties recomputed in run order."""

    replays_on_replace = False

    def __init__(self, gate: CycgraphGate) -> None:
        self.gate = gate
        from cogstats.gates import cycgraph

        self._mod = cycgraph
        self._settings = gate.to_policy()

    def judge(self, stats: StreamingStats, candidates: Sequence[str] | None) -> Judgement:
        gate = self.gate
        if candidates is None:
            idx = stats.order()
            ids = stats.fact_ids
        else:
            ids = tuple(candidates)
            idx = stats.lesson_index(ids)
        g, lift_tol, var_a_tol, var_b_tol = stats.group_arrays(idx)
        d = gate._decide_core(g)
        fragile = gate._near_thresholds(g, d, lift_tol, var_a_tol, var_b_tol)
        if fragile.size:
            fields_ = {
                k: getattr(g, k).copy()
                for k in ("n_a", "mean_a", "var_a", "n_b", "mean_b", "var_b")
            }
            trials = g.n_a
            exact_mask = g.exact.copy()
            margin = gate.decision_rule == "margin"
            for k in fragile.tolist():
                if trials[k] == 0:
                    continue  # not in the ledger: nothing to test (the batch skips it too)
                if margin:  # the margin rule compares means only
                    _, mean_a, _, mean_b = stats.exact_means(int(idx[k]))
                    fields_["mean_a"][k], fields_["mean_b"][k] = mean_a, mean_b
                else:
                    exact = stats.exact_stats(int(idx[k]))
                    for name, value in zip(fields_, exact, strict=True):
                        fields_[name][k] = value
                exact_mask[k] = True
            g = _ledger_stats.GroupArrays(**fields_, exact=exact_mask)
            d = gate._decide_core(g)
        mod = self._mod
        decision = mod._DECISION_NAMES[d["decision"]]
        reason = mod._REASON_NAMES[d["reason"]]

        def frame(rows: np.ndarray | None) -> pl.DataFrame:
            if rows is None:
                return mod._frame(ids, g, d)
            return _cycgraph_rows(mod, ids, g, d, rows)

        return _FastJudgement("cycgraph", tuple(ids), decision, reason, frame, self._settings)


def _cycgraph_rows(
    mod: Any,
    ids: Sequence[str],
    g: _ledger_stats.GroupArrays,
    d: dict[str, np.ndarray],
    rows: np.ndarray,
) -> pl.DataFrame:
    """``cycgraph._frame`` for a few rows (the changed ones), built column by column."""
    schema = mod._SCHEMA
    tested = d["tested"][rows]
    k = rows.size
    nan = np.full(k, np.nan)

    def floats(name: str, values: np.ndarray) -> pl.Series:
        return pl.Series(name, values, dtype=pl.Float64, nan_to_null=True)

    cols = [
        pl.Series("fact_id", [ids[r] for r in rows.tolist()], dtype=pl.String),
        pl.Series("decision", mod._DECISION_NAMES[d["decision"][rows]].tolist(), dtype=pl.String),
        pl.Series("reason", mod._REASON_NAMES[d["reason"][rows]].tolist(), dtype=pl.String),
        pl.Series("why", d["why"][rows].tolist(), dtype=pl.String),
        pl.Series("trials", g.n_a[rows], dtype=pl.Int64),
        floats("estimate", d["estimate"][rows] if "estimate" in d else nan),
        floats("std_error", d["std_error"][rows] if "std_error" in d else nan),
        pl.Series("baseline_runs", g.n_b[rows], dtype=pl.Int64),
    ]
    for name in ("lift", "se", "df", "p_promote", "p_evict"):
        cols.append(floats(name, np.where(tested, d[name][rows], np.nan) if name in d else nan))
    if "alpha_bracket" in d:
        pairs = zip(d["alpha_bracket"][rows].tolist(), tested.tolist(), strict=True)
        bracket = [b if t else None for b, t in pairs]
    else:
        bracket = [None] * k
    cols.append(pl.Series("alpha_bracket", bracket, dtype=pl.Int64))
    frame = pl.DataFrame(cols)
    assert frame.columns == list(schema)
    return frame


class _FastJudgement(Judgement):
    """A judgement whose row frames have the report's exact schema.

    The adapter builds them, so the report of the changed rows skips the schema checks
    (about 0.1 ms a look).
    """

    def report(self, rows: np.ndarray | None = None) -> GateReport:
        """Return the :class:`~cogstats.gates.GateReport` of those rows (``None``: all)."""
        if rows is None:
            return GateReport(self.gate, self.frame(None), self.settings)
        report = object.__new__(GateReport)
        object.__setattr__(report, "gate", self.gate)
        object.__setattr__(report, "decisions", self.frame(rows))
        object.__setattr__(report, "settings", MappingProxyType(dict(self.settings)))
        return report


@register_streaming("cycgraph")
def _cycgraph_factory(gate: Any) -> StreamingAdapter:
    return _CycgraphAdapter(gate)


# ====================================================================== evidence
_EVIDENCE_METHODS = ("lift", "welch", "ols", "confseq")


def _widen(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return lo - _SLACK * np.abs(lo) - 1e-15, hi + _SLACK * np.abs(hi) + 1e-15


def _ratio_range(
    num_lo: np.ndarray, num_hi: np.ndarray, den_lo: np.ndarray, den_hi: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Range of ``num / den`` over the box (``den > 0``)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        c = np.stack([num_lo / den_lo, num_lo / den_hi, num_hi / den_lo, num_hi / den_hi])
    return c.min(axis=0), c.max(axis=0)


@dataclass
class _Intervals:
    """Bounds, per tested lesson, on what an evidence gate compares."""

    est: tuple[np.ndarray, np.ndarray]
    se: tuple[np.ndarray, np.ndarray]
    df: tuple[np.ndarray, np.ndarray]
    se_zero: np.ndarray  # a standard error of exactly 0 cannot be ruled out


def _near_decision(
    gate: EvidenceGate,
    iv: _Intervals,
    trials: np.ndarray,
    level: float,
    m_judged: int,
) -> np.ndarray:
    """Mark the tested lessons whose decision could differ within the bounds."""
    pm, em = float(gate.promote_margin), float(gate.evict_margin)
    est_lo, est_hi = iv.est
    se_lo, se_hi = iv.se
    df_lo, df_hi = iv.df
    near = iv.se_zero.copy()
    safe_lo = np.where(se_lo > 0, se_lo, np.nan)
    t_up = _ratio_range(est_lo - pm, est_hi - pm, safe_lo, se_hi)
    t_down = _ratio_range(-em - est_hi, -em - est_lo, safe_lo, se_hi)
    if gate.sequential == "group":
        alpha = gate.alpha / (m_judged if gate.multiplicity == "bonferroni" else 1)
        bounds = gate._boundaries(alpha)
        top = int(gate.max_trials or 0)
        b = np.asarray([bounds[min(int(n), top)] for n in trials.tolist()], dtype=float)
        for lo, hi in (t_up, t_down):
            lo, hi = _widen(lo, hi)
            near |= (lo <= b) & (b <= hi)
        return near
    if gate.multiplicity in ("none", "bonferroni"):
        q = 0.5 + level / 2

        def quantile(df: np.ndarray) -> np.ndarray:
            with np.errstate(invalid="ignore"):
                out = special.stdtrit(df, q)
            return np.asarray(np.where(np.isinf(df), special.ndtri(q), out))

        q_small, q_big = quantile(df_hi), quantile(df_lo)  # the quantile falls as df grows
        # ci_low > pm  <=>  (est - pm) / se > q ;  ci_high < -em  <=>  (-em - est) / se > q
        for lo, hi in (t_up, t_down):
            lo, hi = _widen(lo, hi)
            near |= (lo <= q_big * (1 + _SLACK)) & (q_small * (1 - _SLACK) <= hi)
        return near
    m = int(trials.size)
    for lo_t, hi_t in (t_up, t_down):
        corners = []
        for t in (lo_t, hi_t):
            for df in (df_lo, df_hi):
                with np.errstate(invalid="ignore"):
                    finite = np.isfinite(df)
                    p = np.where(
                        finite,
                        special.stdtr(np.where(finite, df, 1.0), -t),
                        special.ndtr(-t),
                    )
                corners.append(p)
        c = np.stack(corners)
        p_lo, p_hi = _widen(c.min(axis=0), c.max(axis=0))
        near |= _threshold_between(p_lo, p_hi, gate.multiplicity, gate.alpha, m)
    return near


def _threshold_between(
    p_lo: np.ndarray, p_hi: np.ndarray, method: str, alpha: float, m: int
) -> np.ndarray:
    """Whether a rejection threshold of ``method`` over ``m`` tests lies in ``[p_lo, p_hi]``."""
    if m == 0:
        return np.zeros(p_lo.size, dtype=bool)
    with np.errstate(invalid="ignore", divide="ignore"):
        if method == "holm":  # thresholds alpha / k, k = 1..m
            k_lo = np.ceil(alpha / p_hi)
            k_hi = np.floor(np.where(p_lo > 0, alpha / p_lo, np.inf))
        else:  # bh, by: j * c, j = 1..m
            c = alpha / m
            if method == "by":
                c = c / float(np.sum(1.0 / np.arange(1, m + 1)))
            k_lo = np.ceil(p_lo / c)
            k_hi = np.floor(p_hi / c)
    k_lo = np.maximum(k_lo, 1)
    k_hi = np.minimum(k_hi, m)
    return np.asarray((k_lo <= k_hi) | np.isnan(p_lo) | np.isnan(p_hi))


class _EvidenceAdapter(StreamingAdapter):
    """An :class:`~cogstats.gates.EvidenceGate` on lift, welch, ols or confseq, streamed."""

    def __init__(self, gate: EvidenceGate) -> None:
        from cogstats.gates import evidence

        self.gate = gate
        self._mod = evidence
        method = gate.method
        if method not in _EVIDENCE_METHODS:
            raise ParameterError(
                f"StreamingGate streams EvidenceGate with method in {list(_EVIDENCE_METHODS)} "
                f"(ols with options={{'cov': 'nonrobust'}}); got method {method!r}"
            )
        opts = dict(gate.options)
        if method == "ols":
            cov = opts.get("cov", "HC3")
            if cov != "nonrobust":
                raise ParameterError(
                    "StreamingGate streams method 'ols' with the classical covariance only, "
                    "which running sums give (X'X, X'y, y'y): set options={'cov': "
                    f"'nonrobust', ...}}; got cov={cov!r}"
                    + (" (the default)" if "cov" not in opts else "")
                )
            if opts.get("cluster") is not None:
                raise ParameterError(
                    "StreamingGate streams method 'ols' without clusters; got "
                    f"cluster={opts['cluster']!r}"
                )
            covs = opts.get("covariates", ())
            if isinstance(covs, str) or not isinstance(covs, Sequence):
                raise ParameterError(
                    "options covariates must be a tuple of covariate names, e.g. "
                    f"('difficulty_proxy',); got {covs!r}"
                )
            for name in covs:
                if name in ("eligible_ids", "propensities"):
                    raise ParameterError(
                        f"covariates: {name!r} holds logged propensities (lists), not a "
                        "covariate a regression can adjust for"
                    )
            self.regression_covariates = tuple(covs)
        elif gate.hold_unidentifiable:
            self.regression_covariates = ()
        self._confseq = _ConfseqState() if method == "confseq" else None
        self.replays_on_replace = self._confseq is not None

    # ---- confseq state
    def observe(self, stats: StreamingStats, position: int) -> None:
        if self._confseq is not None:
            self._confseq.observe(stats, position)

    def reset(self, stats: StreamingStats) -> None:
        if self._confseq is not None:
            self._confseq = _ConfseqState()

    def state(self) -> dict[str, np.ndarray]:
        return {} if self._confseq is None else self._confseq.arrays()

    def restore(self, state: Mapping[str, np.ndarray]) -> None:
        if self._confseq is not None:
            self._confseq.load(state)

    # ---- decisions
    def judge(self, stats: StreamingStats, candidates: Sequence[str] | None) -> GateReport:
        """Run the shell of ``EvidenceGate.evaluate`` on the streaming statistics."""
        gate = self.gate
        C = _codes()
        ids = list(stats.fact_ids if candidates is None else candidates)
        present = stats.fact_ids
        trials_present = dict(zip(present, stats.trials(list(present)).tolist(), strict=True))
        n_runs = stats.n_runs
        judged = [
            f
            for f in ids
            if trials_present.get(f, 0) >= gate.min_trials and trials_present.get(f, 0) < n_runs
        ]
        m = max(1, len(judged))
        rows: dict[str, dict[str, Any]] = {}
        for f in ids:
            n = int(trials_present.get(f, 0))
            rows[f] = {
                "fact_id": f,
                "decision": "hold",
                "reason": None,
                "why": C.WHY_MIN_TRIALS if n < gate.min_trials else C.WHY_NO_BASELINE,
                "trials": n,
                "baseline_runs": n_runs - n,
            }
        if judged:
            level = gate._level(m)
            result, identifiable = self._attribution(stats, judged, level, m)
            gate._apply(result, identifiable, judged, m, rows)
        for f in ids:
            gate._stopping_rules(rows[f])
        frame = report_frame([rows[f] for f in ids], self._mod._SCHEMA)
        return GateReport("evidence", frame, gate.to_policy())

    def _identifiable(self, stats: StreamingStats) -> dict[str, bool]:
        if not self.gate.hold_unidentifiable:
            return {}
        from cogstats.estimators.identifiability import DEFAULT_VIF_THRESHOLD, check_identifiability

        reg = stats.regression()
        frame, trusted = stats.identifiability(reg, DEFAULT_VIF_THRESHOLD)
        if not trusted:
            stats.fallbacks += 1
            frame = check_identifiability(stats.to_ledger())
        return dict(zip(frame["fact_id"], frame["identifiable"], strict=True))

    def _attribution(
        self, stats: StreamingStats, judged: list[str], level: float, m: int
    ) -> tuple[Attribution, dict[str, bool]]:
        method = self.gate.method
        if method == "ols":
            result = self._ols(stats, judged, level, m)
            frame = result.to_frame()
            ident = {
                f: bool(v) if v is not None else True
                for f, v in zip(frame["fact_id"], frame["identifiable"], strict=True)
            }
            return result, ident
        identifiable = self._identifiable(stats)
        if method == "confseq":
            assert self._confseq is not None
            return self._confseq.attribution(stats, self.gate, level), identifiable
        return self._lift_welch(stats, judged, level, m, identifiable), identifiable

    # ---- lift / welch
    def _lift_welch(
        self,
        stats: StreamingStats,
        judged: list[str],
        level: float,
        m: int,
        identifiable: Mapping[str, bool],
    ) -> Attribution:
        from cogstats.estimators.lift import _lift_from_stats, _welch_from_stats

        gate = self.gate
        opts = {**_method_defaults("welch" if gate.method == "welch" else "lift"), **gate.options}
        idx = stats.lesson_index(judged)
        g, lift_tol, var_a_tol, var_b_tol = stats.group_arrays(idx)
        n = stats.n_runs
        floor = float(opts.get("noise_floor_sd", 0.0)) if gate.method == "welch" else 0.0
        # the batch's baseline mean is the additive one (bit for bit ours) for lessons in
        # fewer than half the runs, the run-order one (within lift_tol of ours) otherwise
        de = np.where(2 * g.n_b <= n, lift_tol, 0.0)
        ok = (g.n_a >= 2) & (g.n_b >= 2)
        held = np.asarray(
            [gate.hold_unidentifiable and not identifiable.get(f, True) for f in judged]
        )
        tested = ok & ~held
        fragile = np.zeros(len(judged), dtype=bool)
        if tested.any():
            iv = _welch_intervals(g, de, var_a_tol, var_b_tol, floor)
            t = np.flatnonzero(tested)
            sub = _Intervals(
                (iv.est[0][t], iv.est[1][t]),
                (iv.se[0][t], iv.se[1][t]),
                (iv.df[0][t], iv.df[1][t]),
                iv.se_zero[t],
            )
            fragile[t] = _near_decision(gate, sub, g.n_a[t], level, m)
        arrays = {
            "fact_id": np.asarray(judged, dtype=object),
            "n_a": g.n_a.copy(),
            "mean_a": g.mean_a.copy(),
            "var_a": g.var_a.copy(),
            "n_b": g.n_b.copy(),
            "mean_b": g.mean_b.copy(),
            "var_b": g.var_b.copy(),
        }
        if fragile.any():
            ks = np.flatnonzero(fragile)
            exact = stats.batch_group_arrays([int(idx[k]) for k in ks.tolist()])
            for name in ("n_a", "mean_a", "var_a", "n_b", "mean_b", "var_b"):
                arrays[name][ks] = getattr(exact, name)
        if gate.method == "welch":
            return _welch_from_stats(
                arrays,
                level,
                floor,
                float(opts["promote_margin"]),
                float(opts["evict_margin"]),
            )
        return _lift_from_stats(arrays, level)

    # ---- ols
    def _ols(self, stats: StreamingStats, judged: list[str], level: float, m: int) -> Attribution:
        from scipy import linalg

        from cogstats.estimators._base import Attribution, attribute
        from cogstats.estimators.regression import (
            _SINGULAR_PIVOT,
            _settings,
            _table,
            _wald,
            normal_solution,
        )

        gate = self.gate
        opts = {**_method_defaults("ols"), **gate.options}
        threshold = float(opts["vif_threshold"])

        def batch() -> Attribution:
            stats.fallbacks += 1
            return attribute(stats.to_ledger(), "ols", confidence_level=level, **dict(gate.options))

        reg = stats.regression()
        n = reg.n
        ident, trusted = stats.identifiability(reg, threshold)
        if not trusted:
            return batch()
        keep = ident["identifiable"].to_numpy().astype(bool)
        q = reg.n_controls
        sel = np.concatenate([np.arange(1 + q), 1 + q + np.flatnonzero(keep)])
        xtx = reg.xtx[np.ix_(sel, sel)]
        xty = reg.xty[sel]
        try:
            chol = linalg.cholesky(xtx, lower=True, check_finite=False)
            pivots = np.diag(chol) ** 2 / np.maximum(np.diag(xtx), np.finfo(float).tiny)
            clean_pivots = bool(pivots.min() > _OLS_PIVOT) and _OLS_PIVOT > _SINGULAR_PIVOT
        except linalg.LinAlgError:
            clean_pivots = False
        if not clean_pivots:
            return batch()
        inv, params, rank = normal_solution(xtx, xty)
        df_resid = float(n - rank)
        n_keep = int(keep.sum())
        lesson = slice(sel.size - n_keep, sel.size)
        constant = stats.y_max - stats.y_min == 0
        if constant:
            est = np.zeros(n_keep)
            se = np.zeros(n_keep)
            lo = hi = np.zeros(n_keep)
            pvalue = np.ones(n_keep)
            statistic = np.full(n_keep, np.nan)
            df = df_resid
        elif df_resid <= 0:
            est = params[lesson]
            se = lo = hi = pvalue = statistic = np.full(n_keep, np.nan)
            df = 0.0
        else:
            mean = reg.xty[0] / n
            rss = max(reg.yty - float(params @ xty), 0.0)
            if rss <= _OLS_EXACT_FIT * max(reg.yty - n * mean * mean, 0.0):
                return batch()  # a (near) exact fit: the residuals are rounding noise
            scale = rss / df_resid
            est = params[lesson]
            se = np.sqrt(np.maximum(scale * np.diag(inv), 0.0))[lesson]
            df = df_resid
            lo, hi, pvalue, statistic = _wald(est, se, df, level)
            # decisions within the streaming rounding of a threshold: recompute in batch
            kept = [f for f, k in zip(reg.fact_ids, keep, strict=True) if k]
            pos = {f: k for k, f in enumerate(kept)}
            tested = [f for f in judged if f in pos]
            if tested:
                t = np.asarray([pos[f] for f in tested], dtype=np.int64)
                e, s = est[t], se[t]
                de = _OLS_TOL * (np.abs(e) + s)
                iv = _Intervals(
                    (e - de, e + de),
                    (s * (1 - _OLS_TOL), s * (1 + _OLS_TOL)),
                    (np.full(t.size, df), np.full(t.size, df)),
                    s == 0,
                )
                trials = stats.trials(tested)
                if _near_decision(self.gate, iv, trials, level, m).any():
                    return batch()

        @dataclass(frozen=True)
        class _D:
            fact_ids: tuple[str, ...]
            trials: np.ndarray
            n: int
            ident: pl.DataFrame

        p = len(reg.fact_ids)
        table = _table(
            "ols",
            _D(reg.fact_ids, stats.trials(list(reg.fact_ids)), n, ident),
            keep,
            est,
            se,
            lo,
            hi,
            pvalue,
            {"df": np.full(p, df), "statistic": statistic},
        )
        settings = _settings(
            covariates=tuple(opts["covariates"]),
            cov="nonrobust",
            cluster=None,
            confidence_level=level,
            vif_threshold=threshold,
            interval="wald",
            reference="t",
        )
        return Attribution("ols", table, settings)


def _codes() -> Any:
    from cogstats import _codes as C

    return C


def _method_defaults(method: str) -> dict[str, Any]:
    from cogstats.estimators._base import get_spec

    return dict(get_spec(method).defaults)


def _welch_intervals(
    g: _ledger_stats.GroupArrays,
    de: np.ndarray,
    var_a_tol: np.ndarray,
    var_b_tol: np.ndarray,
    floor: float,
) -> _Intervals:
    """Bounds on the Welch estimate, standard error and degrees of freedom."""
    floor2 = floor * floor
    na = np.maximum(g.n_a, 2).astype(float)
    nb = np.maximum(g.n_b, 2).astype(float)
    va = np.nan_to_num(g.var_a, nan=0.0)
    vb = np.nan_to_num(g.var_b, nan=0.0)
    sa = [np.maximum(va - var_a_tol, floor2) / na, np.maximum(va + var_a_tol, floor2) / na]
    sb = [np.maximum(vb - var_b_tol, floor2) / nb, np.maximum(vb + var_b_tol, floor2) / nb]
    se_lo = np.sqrt(sa[0] + sb[0])
    se_hi = np.sqrt(sa[1] + sb[1])
    dfs = []
    with np.errstate(invalid="ignore", divide="ignore"):
        for a in sa:
            for b in sb:
                dfs.append(
                    np.where(a + b > 0, (a + b) ** 2 / (a**2 / (na - 1) + b**2 / (nb - 1)), np.inf)
                )
    d = np.stack(dfs)
    df_lo, df_hi = d.min(axis=0) * (1 - 1e-9), d.max(axis=0) * (1 + 1e-9)
    est = g.mean_a - g.mean_b
    return _Intervals(
        (est - de, est + de),
        (se_lo * (1 - _SLACK), se_hi * (1 + _SLACK)),
        (df_lo, df_hi),
        se_lo <= 0,
    )


# ---------------------------------------------------------------------- confseq
class _ConfseqState:
    """Running sums of ``confseq_paths``, both cases, per lesson (internal index).

    Every sum is accumulated as ``np.cumsum`` accumulates the batch's columns (runs that
    do not count for a lesson add an exact zero there), so the final row is bit for bit
    the batch's.  Case (b) (no propensities) updates every started lesson on every run:
    O(lessons) a run, vectorised.
    """

    _NAMES = (
        "started",
        "b_n1",
        "b_n0",
        "b_s1",
        "b_s0",
        "b_q1",
        "b_q0",
        "a_c1",
        "a_c0",
        "a_s1",
        "a_s0",
        "a_n",
        "a_s",
        "a_q",
        "i_c1",
        "i_c0",
        "i_s1",
        "i_s0",
        "i_n",
        "i_s",
        "i_q",
    )

    def __init__(self) -> None:
        self.size = 0
        self.a: dict[str, np.ndarray] = {
            name: np.zeros(16, dtype=bool if name == "started" else float) for name in self._NAMES
        }

    def _fit(self, size: int) -> None:
        if size > self.size:
            for name in self._NAMES:
                self.a[name] = _grow(self.a[name], size)
            self.size = size

    def arrays(self) -> dict[str, np.ndarray]:
        return {name: self.a[name][: self.size].copy() for name in self._NAMES}

    def load(self, state: Mapping[str, np.ndarray]) -> None:
        size = int(state["started"].size) if "started" in state else 0
        self._fit(max(size, 1))
        for name in self._NAMES:
            if name in state:
                self.a[name][:size] = state[name]
        self.size = max(size, self.size)

    def observe(self, stats: StreamingStats, i: int) -> None:
        L = len(stats._lesson_ids)
        self._fit(L)
        a = self.a
        y = float(stats._y[i])
        cols = stats._cols[i]
        # case (b): each lesson's clock starts at its first injection
        a["started"][cols] = True
        inrun = np.zeros(L, dtype=bool)
        inrun[cols] = True
        base = a["started"][:L] & ~inrun
        a["b_n1"][cols] += 1.0
        a["b_s1"][cols] += y
        a["b_q1"][cols] += y * y
        a["b_n0"][:L][base] += 1.0
        a["b_s0"][:L][base] += y
        a["b_q0"][:L][base] += y * y
        # case (a): logged propensities (both the augmented and the plain IPW sums)
        ids = stats._covariates.get("eligible_ids")
        ps = stats._covariates.get("propensities")
        if ids is None or ps is None or ids[i] is None or ps[i] is None:
            return
        pos: dict[int, float] = {}
        for f, pr in zip(ids[i], ps[i], strict=True):
            pos[stats._lesson(f)] = float(pr)  # a repeated id: the last one counts
        self._fit(len(stats._lesson_ids))
        a = self.a
        js = np.fromiter(pos, dtype=np.int64, count=len(pos))
        p = np.fromiter(pos.values(), dtype=float, count=len(pos))
        elig = np.isfinite(p) & (p > 0.0) & (p < 1.0)
        js, p = js[elig], p[elig]
        if not js.size:
            return
        member = set(cols.tolist())
        xf = np.asarray([1.0 if j in member else 0.0 for j in js.tolist()])
        e = np.ones(js.size)
        for prefix, augment in (("a_", True), ("i_", False)):
            c1, c0 = a[prefix + "c1"], a[prefix + "c0"]
            s1, s0 = a[prefix + "s1"], a[prefix + "s0"]
            if augment:
                with np.errstate(invalid="ignore", divide="ignore"):
                    m_all = np.where(
                        c1[js] + c0[js] > 0, (s1[js] + s0[js]) / (c1[js] + c0[js]), 0.5
                    )
                    m1 = np.where(c1[js] > 0, s1[js] / c1[js], m_all)
                    m0 = np.where(c0[js] > 0, s0[js] / c0[js], m_all)
            else:
                m1 = m0 = np.zeros(js.size)
            phi = m1 - m0 + xf * (y - m1) / p - (e - xf) * (y - m0) / (1.0 - p)
            phi = phi * e
            s1[js] += y * xf
            c1[js] += xf
            s0[js] += y * (e - xf)
            c0[js] += e - xf
            a[prefix + "n"][js] += 1.0
            a[prefix + "s"][js] += phi
            a[prefix + "q"][js] += phi * phi

    def attribution(self, stats: StreamingStats, gate: EvidenceGate, level: float) -> Attribution:
        from cogstats.estimators._base import Attribution, make_table
        from cogstats.estimators.confseq import (
            OUTCOME_MODELS,
            PROPENSITY_MODES,
            _resolve_rho,
            _studentised_sequence,
        )

        opts = {**_method_defaults("confseq"), **gate.options}
        rho = _resolve_rho(opts["rho"], opts["target_runs"], level)
        model = check_choice("outcome_model", opts["outcome_model"], OUTCOME_MODELS)
        propensity = check_choice("propensity", opts["propensity"], PROPENSITY_MODES)
        has = "eligible_ids" in stats._covariates and "propensities" in stats._covariates
        mode = propensity
        if propensity == "logged" and not has:
            raise ParameterError(
                "method 'confseq': propensity='logged' needs the ledger columns eligible_ids "
                f"and propensities; this ledger has covariates {stats.covariates!r} (use "
                "propensity='none' or 'auto')"
            )
        if propensity == "auto":
            mode = (
                "logged"
                if has and all(v is not None for v in stats._covariates["eligible_ids"])
                else "none"
            )
        self._fit(len(stats._lesson_ids))
        idx = stats.order()
        fact_ids = list(stats.fact_ids)
        if mode == "none":
            a = self.a
            n1, n0 = a["b_n1"][idx], a["b_n0"][idx]
            s1, s0, q1, q0 = a["b_s1"][idx], a["b_s0"][idx], a["b_q1"][idx], a["b_q0"][idx]
            n = n1 + n0
            with np.errstate(invalid="ignore", divide="ignore"):
                m1, m0 = s1 / n1, s0 / n0
                ss1 = np.maximum(q1 - n1 * m1 * m1, 0.0)
                ss0 = np.maximum(q0 - n0 * m0 * m0, 0.0)
                pooled = n * (ss1 + ss0) / (n1 * n0)
                welch = n * (ss1 / (n1 * n1) + ss0 / (n0 * n0))
            ready = (n1 >= 2) & (n0 >= 2)
            v = np.where(ready, np.maximum(pooled, welch), np.nan)
            est = np.where((n1 > 0) & (n0 > 0), m1 - m0, np.nan)
            n_i, n1_i, n0_i = n.astype(np.int64), n1.astype(np.int64), n0.astype(np.int64)
        else:
            pre = "a_" if model == "running_means" else "i_"
            n_f = self.a[pre + "n"][idx]
            s, q = self.a[pre + "s"][idx], self.a[pre + "q"][idx]
            c1 = self.a[pre + "c1"][idx]
            with np.errstate(invalid="ignore", divide="ignore"):
                est = s / n_f
                v = np.maximum(q / n_f - est * est, 0.0)
            n_i = n_f.astype(np.int64)
            n1_i = c1.astype(np.int64)
            n0_i = n_i - n1_i
            ready = n_i > 0
        lo, hi, pval, se = _studentised_sequence(est, v, n_i, ready, rho, 1.0 - level)
        estimate = np.where(n_i > 0, est, np.nan)
        table = make_table(
            "confseq",
            {
                "fact_id": fact_ids,
                "estimate": estimate,
                "std_error": se,
                "ci_low": lo,
                "ci_high": hi,
                "pvalue": pval,
                "trials": n1_i,
                "baseline_runs": n0_i,
                "runs": n_i,
                "cs_width": hi - lo,
            },
        )
        settings = {
            "confidence_level": level,
            "target_runs": opts["target_runs"],
            "rho": rho,
            "outcome_model": model,
            "propensity": propensity,
            "propensity_used": mode,
            "interval": "confidence_sequence",
        }
        return Attribution("confseq", table, settings)


@register_streaming("evidence")
def _evidence_factory(gate: Any) -> StreamingAdapter:
    return _EvidenceAdapter(gate)


# ====================================================================== the gate
@dataclass(frozen=True)
class SkippedLine:
    """A JSON Lines line that :meth:`StreamingGate.ingest` skipped (``on_error="skip"``).

    Attributes
    ----------
    path : str
        The file.
    line : int
        1-based line number.
    offset : int
        Byte offset of the line's start.
    error : str
        The error, naming the field.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from cogstats.gates import CycgraphGate, StreamingGate
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "runs.jsonl"
    >>> _ = path.write_text('{"run_id": "r1", "score": 2}' + chr(10))
    >>> skipped = StreamingGate(CycgraphGate()).ingest(path, on_error="skip").skipped
    >>> skipped[0].line, "score" in skipped[0].error
    (1, True)
    """

    path: str
    line: int
    offset: int
    error: str


@dataclass(frozen=True)
class IngestResult:
    """What one :meth:`StreamingGate.ingest` call did.

    Attributes
    ----------
    recorded : int
        Runs recorded (a repeated run id replaces its run and counts here too).
    lines : int
        Complete lines read (blank ones included).
    skipped : tuple of SkippedLine
        Bad lines skipped in this call (``on_error="skip"``).
    changed : GateReport
        Decisions that changed between the previous look and the look after the last line.
    offset, line : int
        The marker after the call: the byte offset and line count read so far.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from cogstats.gates import CycgraphGate, StreamingGate
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "runs.jsonl"
    >>> nl = chr(10)
    >>> _ = path.write_text('{"run_id": "r1", "score": 0.5}' + nl + nl + '{"run_id": "r2"')
    >>> result = StreamingGate(CycgraphGate()).ingest(path)  # the last line is incomplete
    >>> result.recorded, result.lines, result.offset
    (1, 2, 32)
    """

    recorded: int
    lines: int
    skipped: tuple[SkippedLine, ...]
    changed: GateReport
    offset: int
    line: int


@dataclass
class _Marker:
    offset: int = 0
    line: int = 0
    head: str = ""  # sha256 of the file's first head_len bytes
    head_len: int = 0


class StreamingGate:
    """A gate that decides after every run, from running sufficient statistics.

    Parameters
    ----------
    gate : gate object
        A :class:`~cogstats.gates.CycgraphGate` (both rules, every option), an
        :class:`~cogstats.gates.EvidenceGate` on ``lift``, ``welch``, ``confseq`` or
        ``ols`` (``options={"cov": "nonrobust", "covariates": (...)}``: the classical
        covariance, which ``X'X``, ``X'y`` and ``y'y`` give), or any gate with a
        streaming adapter (module docstring).
    candidates : sequence of str, optional
        The lessons each look judges, in order (default: every lesson in the runs so
        far, as ``gate.evaluate(ledger)`` does).  Settable later (:attr:`candidates`),
        e.g. by a service that retires decided lessons.

    Raises
    ------
    ParameterError
        For a gate or setting it cannot stream (naming what it supports).

    Notes
    -----
    **Exactness.**  :meth:`report` equals ``gate.evaluate(ledger, candidates)`` on a
    :class:`~cogstats.ledger.Ledger` of the runs recorded so far: the same lessons,
    decisions, reasons, ``why``, trials and baseline runs; every number to 1e-9 relative
    (1e-10 absolute for a difference of nearly equal numbers, such as an interval end
    near 0; the sums of squares come from running sums, not two passes).  Where a decision compares
    a number with a threshold and the number lies within its rounding bound of it (an
    exact tie such as ``0.55 - 0.50 >= 0.05``), the number is recomputed from the runs
    exactly as the batch gate computes it (cycgraph: in run order, as
    ``CycgraphGate`` does; welch/lift: the ledger's additive statistics; ols and
    identifiability: the batch estimator on :meth:`StreamingStats.to_ledger`), so the
    decisions are the batch gate's.  Point estimates that tie exactly (two lessons with
    the same mean) may differ from the batch's in the last bits (1e-12).

    One writer at a time: a StreamingGate is not thread-safe (a service serialises its
    calls, e.g. one consumer of the run queue).

    **Costs** (``L`` lessons judged, ``r`` lessons in a run, ``c`` covariate columns):
    ``record`` updates O(r) statistics (O((r + c)^2) for ``X'X``; ``confseq`` O(L)) and
    looks in O(L) (a vectorised pass: every run changes every lesson's baseline, and
    Benjamini-Hochberg couples the lessons, so every tested p-value is recomputed); an
    evidence gate's look also builds its report row by row (O(L) Python) and, with
    identifiability or ``ols``, solves O(k^3) with ``k`` columns.  A near tie costs
    O(runs) for each lesson recomputed.  Recording a run again costs O(runs) (sums of
    the lessons it touches are recomputed in run order; ``confseq`` replays every run).

    Examples
    --------
    >>> import numpy as np
    >>> from cogstats import Ledger
    >>> from cogstats.gates import CycgraphGate, StreamingGate
    >>> rng = np.random.default_rng(0)
    >>> gate = CycgraphGate(min_trials=3)
    >>> sg = StreamingGate(gate)
    >>> runs = [(f"r{i}", float(rng.integers(0, 21) * 0.05), ["good"] if i % 2 else ["bad"])
    ...         for i in range(40)]
    >>> changes = [sg.record(run_id, score, facts) for run_id, score, facts in runs]
    >>> ledger = Ledger.from_records(
    ...     {"run_id": r, "score": s, "fact_ids": f} for r, s, f in runs)
    >>> cols = ["fact_id", "decision", "reason", "why", "trials", "baseline_runs"]
    >>> sg.report().to_frame()[cols].equals(gate.evaluate(ledger).to_frame()[cols])
    True
    >>> import math
    >>> all(math.isclose(a, b, rel_tol=1e-9) for a, b in zip(
    ...     sg.report().to_frame()["lift"].drop_nulls(),
    ...     gate.evaluate(ledger).to_frame()["lift"].drop_nulls()))
    True
    """

    def __init__(self, gate: Any, *, candidates: Sequence[str] | None = None) -> None:
        if isinstance(gate, type) or not callable(getattr(gate, "evaluate", None)):
            raise ParameterError(
                "gate must be a gate object with an evaluate(ledger, candidates=None) method, "
                f"e.g. CycgraphGate(); got {gate!r}"
            )
        self._gate = gate
        self._name = _registry_name(gate)
        if getattr(gate, "uses_lessons", False) and not callable(
            getattr(gate, "streaming_adapter", None)
        ):
            raise ParameterError(
                f"StreamingGate cannot stream gate {self._name!r}: it reads the lesson table "
                "(uses_lessons); it streams cycgraph and evidence gates (lift, welch, ols, "
                "confseq) and gates with a streaming adapter"
            )
        self._adapter = _adapter(gate, self._name)
        self._stats = StreamingStats(self._adapter.regression_covariates)
        self._candidates: tuple[str, ...] | None = None
        self.candidates = candidates  # validated by the setter
        self._last: dict[str, tuple[str, str | None]] = {}
        self._markers: dict[str, _Marker] = {}
        self._skipped: list[SkippedLine] = []
        self._cache: tuple[Any, Judgement] | None = None
        self._full: tuple[Judgement, GateReport] | None = None  # report() of that judgement
        self._empty: GateReport | None = None

    # ------------------------------------------------------------------ properties
    @property
    def gate(self) -> Any:
        """The wrapped gate."""
        return self._gate

    @property
    def stats(self) -> StreamingStats:
        """The running statistics (read-only for callers)."""
        return self._stats

    @property
    def candidates(self) -> tuple[str, ...] | None:
        """The lessons each look judges (None: every lesson in the runs so far)."""
        return self._candidates

    @candidates.setter
    def candidates(self, value: Sequence[str] | None) -> None:
        if value is None:
            self._candidates = None
        else:
            if isinstance(value, str):
                raise ParameterError(f"candidates must be a sequence of lesson ids; got {value!r}")
            ids = list(value)
            for k, f in enumerate(ids):
                if not isinstance(f, str):
                    raise ParameterError(f"candidates[{k}] must be a lesson id string; got {f!r}")
            if len(set(ids)) != len(ids):
                raise ParameterError("candidates must not repeat a lesson id")
            self._candidates = tuple(ids)
        self._cache = None

    def __len__(self) -> int:
        """Return the number of runs recorded."""
        return self._stats.n_runs

    def __repr__(self) -> str:
        """Short text form."""
        return (
            f"StreamingGate(gate={self._name!r}, runs={self._stats.n_runs}, "
            f"lessons={len(self._stats.fact_ids)})"
        )

    def to_ledger(self) -> Ledger:
        """Return the runs recorded so far as a :class:`~cogstats.ledger.Ledger`.

        Examples
        --------
        >>> from cogstats.gates import CycgraphGate
        >>> sg = StreamingGate(CycgraphGate())
        >>> _ = sg.record("r1", 0.5, ["a"])
        >>> sg.to_ledger()
        Ledger(runs=1, facts=1, covariates=[])
        """
        return self._stats.to_ledger()

    # ------------------------------------------------------------------ recording
    def _validate(
        self,
        rec: Mapping[str, Any],
        *,
        row: int | None,
        source: str | None,
    ) -> tuple[str, float, list[str], dict[str, Any]]:
        try:
            run_id, score, facts, covs = _validate_record(
                rec, row=row or 1, source=source, fact_ids_required=False
            )
        except LedgerError as exc:
            if row is None:  # record(): no row to name
                raise LedgerError(exc.message, field=exc.field, source=source) from None
            raise
        kinds = self._stats._kinds  # of the columns as they stand (a replaced run included)
        for name, value in covs.items():
            kind = _kind(value)
            if kind is None:
                continue
            known = kinds.get(name)
            if known is not None and known != kind and {known, kind} != {"int", "float"}:
                raise LedgerError(
                    f"covariate holds {kind} here but {known} in earlier rows; "
                    "one column holds one type",
                    row=row,
                    field=name,
                    source=source,
                )
        try:
            self._adapter.validate(self._stats, covs)
        except LedgerError as exc:
            raise LedgerError(exc.message, row=row, field=exc.field, source=source) from None
        if len(set(facts)) != len(facts):
            _warn_repeated([(row or 1, run_id, facts)], source)
        return run_id, score, facts, covs

    def _commit(self, run_id: str, score: float, facts: list[str], covs: dict[str, Any]) -> None:
        stats = self._stats
        kinds = stats._kinds
        for name, value in covs.items():
            kind = _kind(value)
            if kind is None:
                continue
            known = kinds.get(name)
            kinds[name] = "float" if known == "float" or (known and kind == "float") else kind
        i = stats._index.get(run_id)
        if i is None:
            pos = stats._append(run_id, score, facts, covs)
            self._adapter.observe(stats, pos)
        else:
            stats._replace(i, score, facts, covs)
            if self._adapter.replays_on_replace:
                self._adapter.reset(stats)
                for k in range(stats.n_runs):
                    self._adapter.observe(stats, k)
        self._cache = None

    def record(
        self, run_id: str, score: float, fact_ids: Sequence[str] = (), **covariates: Any
    ) -> GateReport:
        """Record one run and look: the decisions that changed.

        Recording a ``run_id`` again replaces that run in place (its position in run
        order stays), as :meth:`Ledger.record <cogstats.ledger.Ledger.record>` does: its
        old contribution is subtracted, its covariates are replaced (columns it no
        longer has become null for it), and the look judges the ledger with the new run.

        Parameters
        ----------
        run_id : str
            The run.
        score : float
            In [0, 1].
        fact_ids : sequence of str
            Lessons injected into the run (a repeat counts once and warns, as in the
            ledger).
        **covariates
            Covariates of the run (numbers, strings, booleans, null; ``eligible_ids`` and
            ``propensities`` for logged propensities).

        Returns
        -------
        GateReport
            The rows, in candidate order, whose ``decision`` or ``reason`` differs from
            the previous look (:meth:`record` or :meth:`ingest`; :meth:`report` does not
            count).  A lesson never judged before counts as previously held.  The
            columns are those of the gate's report.

        Raises
        ------
        LedgerError
            For a malformed run, naming the field (the ledger's messages); nothing is
            recorded.

        Examples
        --------
        >>> from cogstats.gates import CycgraphGate
        >>> sg = StreamingGate(CycgraphGate(decision_rule="margin", min_trials=1))
        >>> _ = sg.record("r1", 0.4, [])
        >>> sg.record("r2", 0.9, ["a"]).promoted
        ('a',)
        >>> sg.record("r3", 0.9, ["a"]).to_frame().height  # nothing changed
        0
        """
        rec = {"run_id": run_id, "score": score, "fact_ids": list(fact_ids), **covariates}
        parsed = self._validate(rec, row=None, source=None)
        self._commit(*parsed)
        return self._look()

    # ------------------------------------------------------------------ judging
    def _judgement(self, candidates: Sequence[str] | None) -> Judgement:
        key = (self._stats.version, None if candidates is None else tuple(candidates))
        if self._cache is not None and self._cache[0] == key:
            return self._cache[1]
        out = self._adapter.judge(self._stats, candidates)
        if isinstance(out, GateReport):
            out = Judgement.from_report(out)
        elif not isinstance(out, Judgement):
            raise ParameterError(
                f"a streaming adapter's judge() must return a GateReport or Judgement; got "
                f"{type(out).__name__}"
            )
        self._cache = (key, out)
        return out

    def _look(self) -> GateReport:
        j = self._judgement(self._candidates)
        last = self._last
        changed: list[int] = []
        held = ("hold", None)
        for k, now in enumerate(zip(j.decision.tolist(), j.reason.tolist(), strict=True)):
            f = j.fact_ids[k]
            if last.get(f, held) != now:
                changed.append(k)
                last[f] = now
        if not changed:
            if self._empty is None or self._empty.gate != j.gate:
                self._empty = j.report(np.zeros(0, dtype=np.int64))
            return self._empty
        return j.report(np.asarray(changed, dtype=np.int64))

    def report(self, candidates: Sequence[str] | None = None) -> GateReport:
        """Return the full current report: ``gate.evaluate(ledger_so_far, candidates)``.

        Parameters
        ----------
        candidates : sequence of str, optional
            Lessons to judge (default: :attr:`candidates`, else every lesson in the runs
            so far, in order of first appearance).

        Returns
        -------
        GateReport
            As the batch gate's.  Cached until the next run or change of candidates.

        Examples
        --------
        >>> from cogstats.gates import CycgraphGate
        >>> sg = StreamingGate(CycgraphGate(decision_rule="margin", min_trials=1))
        >>> _ = sg.record("r1", 0.9, ["a"]); _ = sg.record("r2", 0.6, ["b"])
        >>> sg.report().to_frame().select("fact_id", "decision", "why").rows()
        [('a', 'promote', 'promote_evidence'), ('b', 'evict', 'harm_evidence')]
        """
        if candidates is not None:
            _check_candidates(candidates)
        cands = self._candidates if candidates is None else tuple(candidates)
        j = self._judgement(cands)
        if self._full is None or self._full[0] is not j:
            self._full = (j, j.report())
        return self._full[1]

    # ------------------------------------------------------------------ persistence
    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the state to one file (written to a temporary file, then renamed).

        The file is a zip archive (numpy ``.npz``) holding ``manifest.json`` (format,
        version, the gate's registry name and options, candidates, the previous look's
        decisions, ingest markers and skipped lines), ``runs.json`` (run ids, listed
        lesson ids, covariate columns) and the statistics as arrays (``scores``,
        ``lesson_*``, ``xtx``, ...; the adapter's under ``adapter/``).  See
        docs/production.md, "Streaming gates".

        Raises
        ------
        ParameterError
            When the gate's options are not JSON (numbers, strings, booleans, null,
            lists, tuples, mappings with string keys).

        Examples
        --------
        >>> import tempfile, pathlib
        >>> from cogstats.gates import CycgraphGate
        >>> sg = StreamingGate(CycgraphGate(min_trials=1))
        >>> _ = sg.record("r1", 0.9, ["a"]); _ = sg.record("r2", 0.5, [])
        >>> path = sg.save(pathlib.Path(tempfile.mkdtemp()) / "gate.npz")
        >>> back = StreamingGate.load(path)
        >>> back.report().to_frame().equals(sg.report().to_frame()), len(back)
        (True, 2)
        """
        path = Path(path)
        stats = self._stats
        policy = _policy(self._gate)
        manifest = {
            "format": STATE_FORMAT,
            "version": STATE_VERSION,
            "cogstats_version": _version(),
            "gate": {"name": self._name, "options": _encode(policy, "gate options")},
            "candidates": None if self._candidates is None else list(self._candidates),
            "runs": stats.n_runs,
            "lessons": len(stats._lesson_ids),
            "last_decisions": {f: list(v) for f, v in self._last.items()},
            "markers": {k: dataclasses.asdict(v) for k, v in self._markers.items()},
            "skipped": [dataclasses.asdict(s) for s in self._skipped],
            "totals": {
                "total_sum": stats.total_sum,
                "total_sumc": stats.total_sumc,
                "total_sumsq": stats.total_sumsq,
                "y_min": stats.y_min if stats.n_runs else None,
                "y_max": stats.y_max if stats.n_runs else None,
            },
            "kinds": stats._kinds,
        }
        runs = {
            "run_ids": stats._run_ids,
            "fact_ids": stats._facts,
            "covariates": stats._covariates,
            "lesson_ids": stats._lesson_ids,
        }
        L = len(stats._lesson_ids)
        arrays: dict[str, np.ndarray] = {
            "scores": stats._y[: stats.n_runs].copy(),
            "lesson_trials": stats._trials[:L].copy(),
            "lesson_sums": stats._sums[:L].copy(),
            "lesson_sumc": stats._sumc[:L].copy(),
            "lesson_sumsq": stats._sumsq[:L].copy(),
            "run_lessons_indptr": np.concatenate(
                [[0], np.cumsum([c.size for c in stats._cols])]
            ).astype(np.int64),
            "run_lessons": np.concatenate(stats._cols).astype(np.int64)
            if stats._cols
            else np.zeros(0, np.int64),
        }
        reg = stats._reg
        if reg is not None:
            k = len(reg.keys)
            arrays["xtx"] = reg.xtx[:k, :k].copy()
            arrays["xty"] = reg.xty[:k].copy()
            arrays["lesson_column"] = reg.lesson_col[:L].copy()
            arrays["lesson_hash"] = reg.hsum[:L].copy()
            manifest["regression"] = {
                "covariates": list(reg.covariates),
                "yty": reg.yty,
                "columns": [list(key) for key in reg.keys],
                "ranges": reg.ranges,
                "levels": {n: [[lev, c] for lev, c in d.items()] for n, d in reg.levels.items()},
            }
        for name, value in self._adapter.state().items():
            arrays[f"adapter/{name}"] = value
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as fh:
                with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_STORED) as zf:
                    zf.writestr("manifest.json", json.dumps(manifest, allow_nan=False))
                    zf.writestr("runs.json", json.dumps(runs, allow_nan=False))
                    for name, value in arrays.items():
                        buf = io.BytesIO()
                        np.save(buf, value, allow_pickle=False)
                        zf.writestr(f"{name}.npy", buf.getvalue())
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return path

    @classmethod
    def load(
        cls, path: str | os.PathLike[str], *, allow_import: Sequence[str] | None = None
    ) -> StreamingGate:
        """Rebuild a streaming gate from :meth:`save`'s file (no history is re-read).

        The gate is rebuilt from its registry name and options (``make_gate``), the
        statistics are read back as saved, so reports are identical to the saved gate's.
        A gate saved by import path (``"module:Class"``) imports its module only when
        ``allow_import`` names it (or ``--allow-import``; see :mod:`cogstats._imports`).

        Raises
        ------
        ParameterError
            For a file that is not a streaming-gate state, or of another version.

        Examples
        --------
        >>> import tempfile, pathlib
        >>> from cogstats.gates import EvidenceGate
        >>> sg = StreamingGate(EvidenceGate(method="welch"))
        >>> _ = sg.record("r1", 0.9, ["a"])
        >>> back = StreamingGate.load(sg.save(pathlib.Path(tempfile.mkdtemp()) / "s.npz"))
        >>> back.gate == sg.gate
        True
        """
        path = Path(path)
        try:
            zf = zipfile.ZipFile(path)
        except (OSError, zipfile.BadZipFile) as exc:
            raise ParameterError(f"{path}: not a streaming-gate state file ({exc})") from None
        with zf:
            names = set(zf.namelist())
            if "manifest.json" not in names or "runs.json" not in names:
                raise ParameterError(f"{path}: not a streaming-gate state file (no manifest)")
            manifest = json.loads(zf.read("manifest.json"))
            if manifest.get("format") != STATE_FORMAT:
                raise ParameterError(
                    f"{path}: format {manifest.get('format')!r} is not {STATE_FORMAT!r}"
                )
            if manifest.get("version") != STATE_VERSION:
                raise ParameterError(
                    f"{path}: state version {manifest.get('version')!r}; this cogstats reads "
                    f"version {STATE_VERSION}"
                )
            runs = json.loads(zf.read("runs.json"))
            arrays = {
                n[: -len(".npy")]: np.load(io.BytesIO(zf.read(n)), allow_pickle=False)
                for n in names
                if n.endswith(".npy")
            }
        from cogstats._imports import from_data

        # a "module:Class" gate named by the file imports only an allowed module
        with from_data(f"the state file {path}", allow_import):
            gate = make_gate(manifest["gate"]["name"], **_decode(manifest["gate"]["options"]))
        out = cls(gate, candidates=manifest["candidates"])
        out._restore(manifest, runs, arrays)
        return out

    def _restore(
        self, manifest: Mapping[str, Any], runs: Mapping[str, Any], arrays: Mapping[str, np.ndarray]
    ) -> None:
        stats = self._stats
        n = int(manifest["runs"])
        stats._run_ids = list(runs["run_ids"])
        stats._index = {r: i for i, r in enumerate(stats._run_ids)}
        stats._facts = [list(f) for f in runs["fact_ids"]]
        stats._covariates = {k: list(v) for k, v in runs["covariates"].items()}
        stats._kinds = dict(manifest["kinds"])
        scores = arrays["scores"].astype(float)
        stats._scores = scores.tolist()
        stats._y = _grow(np.zeros(0), max(n, 1))
        stats._y[:n] = scores
        lesson_ids = list(runs["lesson_ids"])
        stats._lesson_ids = lesson_ids
        stats._lpos = {f: j for j, f in enumerate(lesson_ids)}
        L = len(lesson_ids)
        for name, attr in (
            ("lesson_trials", "_trials"),
            ("lesson_sums", "_sums"),
            ("lesson_sumc", "_sumc"),
            ("lesson_sumsq", "_sumsq"),
        ):
            buf = _grow(np.zeros(0, dtype=arrays[name].dtype), max(L, 1))
            buf[:L] = arrays[name]
            setattr(stats, attr, buf)
        indptr = arrays["run_lessons_indptr"]
        flat = arrays["run_lessons"]
        stats._cols = [flat[indptr[i] : indptr[i + 1]].copy() for i in range(n)]
        positions: list[list[int]] = [[] for _ in range(L)]
        for i, cols in enumerate(stats._cols):
            for j in cols.tolist():
                positions[j].append(i)
        stats._positions = positions
        totals = manifest["totals"]
        stats.total_sum = float(totals["total_sum"])
        stats.total_sumc = float(totals["total_sumc"])
        stats.total_sumsq = float(totals["total_sumsq"])
        stats.y_min = math.inf if totals["y_min"] is None else float(totals["y_min"])
        stats.y_max = -math.inf if totals["y_max"] is None else float(totals["y_max"])
        stats._order = None
        stats._order_ids = None
        reg = stats._reg
        if reg is not None:
            info = manifest["regression"]
            reg.keys = [_key(k) for k in info["columns"]]
            reg.col = {key: c for c, key in enumerate(reg.keys)}
            k = len(reg.keys)
            reg.xtx = _grow_square(np.zeros((0, 0)), max(k, 1))
            reg.xtx[:k, :k] = arrays["xtx"]
            reg.xty = _grow(np.zeros(0), max(k, 1))
            reg.xty[:k] = arrays["xty"]
            reg.yty = float(info["yty"])
            reg.lesson_col = np.full(max(L, 1), -1, dtype=np.int64)
            reg.lesson_col[:L] = arrays["lesson_column"]
            reg.hsum = np.zeros((max(L, 1), 2), dtype=np.uint64)
            reg.hsum[:L] = arrays["lesson_hash"]
            reg.ranges = {n_: list(v) for n_, v in info["ranges"].items()}
            reg.levels = {n_: {lev: c for lev, c in pairs} for n_, pairs in info["levels"].items()}
        self._adapter.restore(
            {k[len("adapter/") :]: v for k, v in arrays.items() if k.startswith("adapter/")}
        )
        stats.version += 1
        self._last = {f: (v[0], v[1]) for f, v in manifest["last_decisions"].items()}
        self._markers = {k: _Marker(**v) for k, v in manifest["markers"].items()}
        self._skipped = [SkippedLine(**s) for s in manifest["skipped"]]
        self._cache = None

    # ------------------------------------------------------------------ ingest
    @property
    def skipped(self) -> tuple[SkippedLine, ...]:
        """Lines :meth:`ingest` skipped (the most recent 1000, kept in the state)."""
        return tuple(self._skipped)

    def marker(self, path: str | os.PathLike[str]) -> tuple[int, int]:
        """Return ``(byte offset, lines read)`` of :meth:`ingest`'s marker for ``path``.

        Examples
        --------
        >>> import tempfile, pathlib
        >>> from cogstats.gates import CycgraphGate
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "runs.jsonl"
        >>> _ = path.write_text('{"run_id": "r1", "score": 0.5}' + chr(10))
        >>> sg = StreamingGate(CycgraphGate())
        >>> _ = sg.ingest(path)
        >>> sg.marker(path)
        (31, 1)
        """
        m = self._markers.get(str(Path(path).resolve()))
        return (0, 0) if m is None else (m.offset, m.line)

    def ingest(
        self,
        path: str | os.PathLike[str],
        *,
        on_error: Literal["raise", "skip"] = "raise",
    ) -> IngestResult:
        r"""Record the runs of a JSON Lines file from where the last call stopped, then look.

        Each complete line (ending in a newline) after the file's marker is parsed and
        validated as :meth:`Ledger.read <cogstats.ledger.Ledger.read>` reads JSON Lines
        (``run_id``, ``score``, optional ``fact_ids``, covariates) and recorded as by
        :meth:`record` (a repeated run id replaces its run); a trailing line without its
        newline is left for the next call (a writer may be in the middle of it).  The
        marker (byte offset, line count, a digest of the file's first 4 KB) advances with
        every line and is saved with the state, so calling ``ingest`` again on the grown
        file reads only the new lines and never counts a run twice.  One look follows
        the last line (not one per line: call :meth:`record` per run for that).

        Parameters
        ----------
        path : str or path
            The JSON Lines file (UTF-8).
        on_error : {"raise", "skip"}
            A bad line (malformed JSON, a bad field, a type conflict): ``"raise"`` records
            the lines before it, leaves the marker at the start of the bad line and
            raises :class:`LedgerError` naming the file, line and field, so the next call
            starts there again (fix the line, or call with ``"skip"``); ``"skip"`` records
            it in :attr:`skipped` (and in the result) and goes on, so it is never retried.

        Returns
        -------
        IngestResult

        Raises
        ------
        LedgerError
            For a bad line with ``on_error="raise"``.
        ParameterError
            When the file is shorter than the marker or its first bytes changed (it was
            truncated or replaced: the marker no longer describes it).

        Examples
        --------
        >>> import tempfile, pathlib, json
        >>> from cogstats.gates import CycgraphGate
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "runs.jsonl"
        >>> _ = path.write_text("".join(json.dumps({"run_id": f"r{i}", "score": 0.5,
        ...     "fact_ids": ["a"]}) + "\n" for i in range(3)))
        >>> sg = StreamingGate(CycgraphGate())
        >>> sg.ingest(path).recorded
        3
        >>> with path.open("a") as fh:
        ...     _ = fh.write('{"run_id": "r3", "score": 0.7}\n')
        >>> sg.ingest(path).recorded, len(sg)
        (1, 4)
        """
        check_choice("on_error", on_error, ("raise", "skip"))
        p = Path(path)
        key = str(p.resolve())
        src = str(p)
        mark = self._markers.get(key, _Marker())
        counts = [0, 0]  # runs recorded, lines read
        skipped: list[SkippedLine] = []
        with p.open("rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size < mark.offset:
                raise ParameterError(
                    f"{src} has {size} bytes but the ingest marker is at byte {mark.offset}: "
                    "the file was truncated or replaced; ingest it under another name or "
                    "start a new StreamingGate"
                )
            if mark.head_len:
                head = fh.read(mark.head_len)
                if hashlib.sha256(head).hexdigest() != mark.head:
                    raise ParameterError(
                        f"{src}: its first bytes changed since the last ingest (the marker is "
                        f"at byte {mark.offset}); the file was replaced, so the marker does "
                        "not describe it"
                    )
            fh.seek(mark.offset)
            offset, line = mark.offset, mark.line
            try:
                self._read_lines(fh, key, src, on_error, offset, line, skipped, counts)
            finally:
                self._finish_marker(key, p)
        mark = self._markers[key]
        changed = self._look()
        return IngestResult(counts[0], counts[1], tuple(skipped), changed, mark.offset, mark.line)

    def _read_lines(
        self,
        fh: Any,
        key: str,
        src: str,
        on_error: str,
        offset: int,
        line: int,
        skipped: list[SkippedLine],
        counts: list[int],
    ) -> None:
        mark = self._markers.setdefault(key, _Marker())
        pending = b""
        while True:
            chunk = fh.read(_CHUNK)
            if not chunk:
                break
            data = pending + chunk
            start = 0
            while True:
                nl = data.find(b"\n", start)
                if nl < 0:
                    break
                raw = data[start:nl]
                try:
                    parsed = self._parse_line(raw, line + 1, offset, src)
                except LedgerError as exc:
                    if on_error == "raise":
                        raise  # the marker stays at the start of the bad line
                    skip = SkippedLine(src, line + 1, offset, str(exc))
                    skipped.append(skip)
                    self._skipped.append(skip)
                    del self._skipped[:-_SKIPPED_KEPT]
                    parsed = None
                if parsed is not None:
                    self._commit(*parsed)
                    counts[0] += 1
                counts[1] += 1
                line += 1
                offset += nl + 1 - start
                start = nl + 1
                mark.offset, mark.line = offset, line
            pending = data[start:]

    def _finish_marker(self, key: str, path: Path) -> None:
        """Store the digest of the file's first bytes that the marker has passed."""
        mark = self._markers.setdefault(key, _Marker())
        want = min(mark.offset, _HEAD)
        if want != mark.head_len:
            with path.open("rb") as fh:
                mark.head = hashlib.sha256(fh.read(want)).hexdigest()
            mark.head_len = want

    def _parse_line(
        self, raw: bytes, line: int, offset: int, src: str
    ) -> tuple[str, float, list[str], dict[str, Any]] | None:
        from cogstats._ledger_io import _DuplicateKey, _object

        if raw.endswith(b"\r"):
            raw = raw[:-1]
        if offset == 0 and raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        where = f" (line {line}, byte offset {offset})"
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise LedgerError(
                f"not UTF-8 text at byte offset {offset + exc.start}{where}", row=line, source=src
            ) from None
        if not text.strip():
            return None
        try:
            rec = json.loads(text, object_pairs_hook=_object)
        except json.JSONDecodeError as exc:
            raise LedgerError(
                f"malformed JSON ({exc.msg} at column {exc.colno}){where}", row=line, source=src
            ) from None
        except _DuplicateKey as exc:
            raise LedgerError(
                f"the key appears twice in one JSON object; which one counts is ambiguous{where}",
                row=line,
                field=exc.key,
                source=src,
            ) from None
        if not isinstance(rec, dict):
            raise LedgerError(
                f"each line must be a JSON object; got {type(rec).__name__}{where}",
                row=line,
                source=src,
            )
        try:
            return self._validate(rec, row=line, source=src)
        except LedgerError as exc:
            raise LedgerError(exc.message + where, row=line, field=exc.field, source=src) from None


# ---------------------------------------------------------------------- helpers
def _check_candidates(candidates: Sequence[str]) -> None:
    if isinstance(candidates, str):
        raise ParameterError(f"candidates must be a sequence of lesson ids; got {candidates!r}")
    ids = list(candidates)
    for k, f in enumerate(ids):
        if not isinstance(f, str):
            raise ParameterError(f"candidates[{k}] must be a lesson id string; got {f!r}")
    if len(set(ids)) != len(ids):
        raise ParameterError("candidates must not repeat a lesson id")


def _policy(gate: Any) -> dict[str, Any]:
    to_policy = getattr(gate, "to_policy", None)
    if callable(to_policy):
        return dict(to_policy())
    if dataclasses.is_dataclass(gate):
        return {f.name: getattr(gate, f.name) for f in dataclasses.fields(gate) if f.init}
    raise ParameterError(
        f"cannot save the options of {type(gate).__name__}: a gate's options are its "
        "dataclass fields or its to_policy()"
    )


def _encode(value: Any, where: str) -> Any:
    """JSON-ready options (tuples tagged so that they come back as tuples)."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            return {"__float__": repr(value)}
        return value
    if isinstance(value, tuple):
        return {"__tuple__": [_encode(v, where) for v in value]}
    if isinstance(value, list):
        return [_encode(v, where) for v in value]
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise ParameterError(f"{where}: mapping keys must be strings; got {k!r}")
            out[k] = _encode(v, where)
        return out
    raise ParameterError(
        f"{where} must be JSON values (numbers, strings, booleans, null, lists, tuples, "
        f"mappings) to be saved; got {type(value).__name__} {value!r}"
    )


def _decode(value: Any) -> Any:
    if isinstance(value, list):
        return [_decode(v) for v in value]
    if isinstance(value, dict):
        if set(value) == {"__tuple__"}:
            return tuple(_decode(v) for v in value["__tuple__"])
        if set(value) == {"__float__"}:
            return float(value["__float__"])
        return {k: _decode(v) for k, v in value.items()}
    return value


def _key(k: list[Any]) -> tuple[Any, ...]:
    return tuple(k)


def _version() -> str:
    try:
        from cogstats._version import __version__

        return __version__
    except ImportError:  # pragma: no cover
        return "unknown"
