"""Running sufficient statistics of a ledger, updated run by run.

:class:`StreamingStats` holds the runs as a :class:`~cogstats.ledger.Ledger` would and,
updated by each run (:meth:`StreamingStats.add_run`):

* per lesson: trials, the sum of scores (accumulated in run order, bit for bit the sum a
  :class:`~cogstats.ledger.Ledger` builds) and the sum of squared scores; over all runs the
  same;
* for regression and identifiability (when asked for): ``X'X``, ``X'y`` and ``y'y`` over
  ``[intercept, covariate columns, lesson indicators]``
  (:class:`~cogstats.stats.crossproducts.CrossProducts`);
* for confidence sequences (when asked for): the running sums of ``confseq_paths``
  (:class:`~cogstats.stats.confseq.ConfseqSums`).

Gates judge from it (``gate.judge(stats, ...)``); :class:`~cogstats.gates.StreamingGate`
keeps one per gate.  See docs/production.md, "Streaming gates", for the exactness argument.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from cogstats._validation import LedgerError, ParameterError
from cogstats.ledger import column_kind, value_kind
from cogstats.stats import groups as lesson_groups
from cogstats.stats._arrays import grow, grow_square, run_hashes
from cogstats.stats.confseq import ConfseqSums
from cogstats.stats.crossproducts import CrossProducts, RegressionStats

if TYPE_CHECKING:
    from cogstats.ledger import Ledger

__all__ = ["StreamingStats"]

_U = lesson_groups.UNIT_ROUNDOFF
#: the shift of the running sums of squares: sum (y - c)^2 with c mid-scale keeps the
#: terms at most 1/4 (scores are in [0, 1]), which tightens their rounding bounds
SHIFT = 0.5
_SHIFT = SHIFT
#: a variance inflation factor this many times the threshold is an exact dependency in
#: the batch's decomposition too (there: infinite)
_VIF_CLEAR = 1e6
#: inclusion pairs added to the per-lesson sums at a time (2 MB of float64 scores)
_BLOCK = 1 << 18


class StreamingStats:
    """The running sufficient statistics of a ledger (what a gate's ``judge`` reads).

    It holds the runs as a :class:`~cogstats.ledger.Ledger` would (ids, scores, the listed
    lesson ids, covariate columns), the lesson table (every lesson id seen, in the order
    first seen, with its trials, its sum of scores in run order, ``sum (y - 1/2)`` and
    ``sum (y - 1/2)^2``), the totals, and, where a gate asks for them, the regression
    cross-products (:meth:`regression`) and confseq's running sums (:attr:`confseq`).
    Gates read it; :meth:`add_run` changes it (a :class:`~cogstats.gates.StreamingGate`
    calls it for every run).

    Memory: beside what a ledger of the same runs holds (without its float objects: the
    scores are one array), each run's lessons as internal indices in one growing
    ``array('i')`` (4 bytes a lesson of a run) and where each run's start (8 bytes a run);
    a lesson's runs are found there when a near tie asks for them (:meth:`positions`).  A
    run's lessons are added to the per-lesson sums when the sums are next read, a block
    of runs at a time in run order (``np.add.at``: each sum is the same sequence of
    additions as one run at a time).

    Parameters
    ----------
    regression_covariates : tuple of str or None
        Covariates whose columns ``X'X`` carries (``()``: intercept and lessons only;
        None: no cross-products kept).
    confseq : bool
        Keep confseq's running sums (:class:`~cogstats.stats.confseq.ConfseqSums`).

    Attributes
    ----------
    version : int
        Increases with every change (a gate may cache on it).
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

    def __init__(
        self, regression_covariates: tuple[str, ...] | None = None, *, confseq: bool = False
    ) -> None:
        # runs, as the ledger holds them
        self._run_ids: list[str] = []
        self._index: dict[str, int] = {}
        self._y = array("d")  # the scores, in run order
        self._facts: list[list[str]] = []
        # each run's lessons (internal indices, once each, in listed order), run after
        # run: run i's are _flat[_indptr[i]:_indptr[i + 1]]
        self._flat = array("i")
        self._indptr = array("q", [0])
        self._covariates: dict[str, list[Any]] = {}
        self._kinds: dict[str, str | None] = {}
        # lessons
        self._lesson_ids: list[str] = []
        self._lpos: dict[str, int] = {}
        self._trials = np.zeros(16, dtype=np.int64)
        self._sums = np.zeros(16)
        self._sumc = np.zeros(16)
        self._sumsq = np.zeros(16)
        self._seen = bytearray()  # lesson j is in a run (trials > 0 once flushed)
        self._flushed = 0  # the runs whose lessons the per-lesson sums hold
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
        self._reg = (
            None if regression_covariates is None else CrossProducts(tuple(regression_covariates))
        )
        self.confseq: ConfseqSums | None = ConfseqSums() if confseq else None

    # ------------------------------------------------------------------ building
    @classmethod
    def from_ledger(
        cls,
        ledger: Ledger,
        regression_covariates: tuple[str, ...] | None = None,
        *,
        confseq: bool = False,
    ) -> StreamingStats:
        """Return the statistics of a ledger's runs (added in ledger order; O(runs)).

        Examples
        --------
        >>> from cogstats import Ledger
        >>> ledger = Ledger.from_records([{"run_id": "r1", "score": 0.5, "fact_ids": ["a"]}])
        >>> StreamingStats.from_ledger(ledger).trials(["a"]).tolist()
        [1]
        """
        out = cls(regression_covariates, confseq=confseq)
        out.extend(_ledger_runs(ledger))
        return out

    def extend(self, runs: Iterable[tuple[str, float, Sequence[str], Mapping[str, Any]]]) -> None:
        """Add runs ``(run_id, score, fact_ids, covariates)`` in order (:meth:`add_run`)."""
        for run_id, score, facts, covs in runs:
            self.add_run(run_id, score, facts, covs)

    def merge(self, other: StreamingStats) -> StreamingStats:
        """Return new statistics of this one's runs followed by ``other``'s.

        A run id in both: ``other``'s replaces it (in this one's position), as recording
        it again does.  Cost O(runs of both).

        Examples
        --------
        >>> a, b = StreamingStats(), StreamingStats()
        >>> a.add_run("r1", 0.5, ["x"]); b.add_run("r2", 0.7, ["x", "y"])
        >>> a.merge(b).trials(["x", "y"]).tolist()
        [2, 1]
        """
        reg = None if self._reg is None else self._reg.covariates
        out = StreamingStats(reg, confseq=self.confseq is not None)
        out.extend(self.runs())
        out.extend(other.runs())
        return out

    def runs(self) -> Iterable[tuple[str, float, list[str], dict[str, Any]]]:
        """Yield every run as ``(run_id, score, fact_ids, covariates)``, in run order."""
        for i, run_id in enumerate(self._run_ids):
            covs = {k: v[i] for k, v in self._covariates.items() if v[i] is not None}
            yield run_id, self._y[i], list(self._facts[i]), covs

    def add_run(
        self,
        run_id: str,
        score: float,
        fact_ids: Sequence[str] = (),
        covariates: Mapping[str, Any] | None = None,
    ) -> None:
        """Add a validated run (a known ``run_id``: replace that run in place).

        The run must be valid as :func:`cogstats.ledger.validate_record` returns it (a
        :class:`~cogstats.gates.StreamingGate` validates first); the covariate type
        checks are :meth:`check_kinds`.
        """
        covs = dict(covariates or {})
        facts = list(fact_ids)
        kinds = self._kinds
        for name, value in covs.items():
            kind = value_kind(value)
            if kind is None:
                continue
            known = kinds.get(name)
            kinds[name] = "float" if known == "float" or (known and kind == "float") else kind
        i = self._index.get(run_id)
        if i is None:
            pos = self._append(run_id, float(score), facts, covs)
            if self.confseq is not None:
                self.confseq.observe(self, pos)
        else:
            self._replace(i, float(score), facts, covs)
            if self.confseq is not None:  # its sums follow run order: replay every run
                self.confseq = ConfseqSums()
                for k in range(self.n_runs):
                    self.confseq.observe(self, k)

    def check_kinds(
        self, covariates: Mapping[str, Any], *, row: int | None, source: str | None
    ) -> None:
        """Refuse a covariate whose type differs from the column's so far (as the ledger)."""
        kinds = self._kinds  # of the columns as they stand (a replaced run included)
        for name, value in covariates.items():
            kind = value_kind(value)
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

    def check_regression_covariates(
        self, covariates: Mapping[str, Any], names: Sequence[str] | None = None
    ) -> None:
        """Refuse a run without a usable value for a covariate the cross-products carry."""
        names = tuple(names if names is not None else (self.regression_covariates or ()))
        for name in names:
            value = covariates.get(name)
            if value is None:
                raise LedgerError(
                    f"the gate's regression needs this covariate in every run "
                    f"(covariates={names!r}); got {value!r}",
                    field=name,
                )
            if isinstance(value, list):
                raise LedgerError(
                    "a regression covariate must be a number, string or boolean; got a list",
                    field=name,
                )

    @property
    def regression_covariates(self) -> tuple[str, ...] | None:
        """The covariates the cross-products carry (None: no cross-products kept)."""
        return None if self._reg is None else self._reg.covariates

    def index_of(self, run_id: str) -> int | None:
        """Return the position of ``run_id`` in run order (None: not recorded)."""
        return self._index.get(run_id)

    # ------------------------------------------------------------------ views
    @property
    def kinds(self) -> dict[str, str | None]:
        """The type of each covariate column so far (``"int"``, ``"str"``, ...; a copy)."""
        return dict(self._kinds)

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
        return np.frombuffer(self._y, dtype=np.float64).copy()

    def score(self, i: int) -> float:
        """Return the score of run ``i``."""
        return self._y[i]

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
    def table_ids(self) -> tuple[str, ...]:
        """Every lesson id the statistics hold a row for (first seen first).

        Absent ones included: a lesson asked about (:meth:`lesson_index`) but never in a
        run, or whose runs were replaced away.  :attr:`fact_ids` are the lessons in the
        runs so far (a ledger's ``fact_ids``); ``table_ids[j]`` is internal row ``j``.
        """
        return tuple(self._lesson_ids)

    def lesson_index(self, fact_ids: Sequence[str]) -> np.ndarray:
        """Return the internal indices of ``fact_ids`` (each added to the table if new)."""
        return np.fromiter((self._lesson(f) for f in fact_ids), dtype=np.int64, count=len(fact_ids))

    def trials(self, fact_ids: Sequence[str] | None = None) -> np.ndarray:
        """Return the runs carrying each lesson (table order, or ``fact_ids``; 0 if unknown)."""
        self._flush()
        if fact_ids is None:
            return self._trials[: len(self._lesson_ids)].copy()
        pos = self._lpos
        return np.fromiter(
            (self._trials[pos[f]] if f in pos else 0 for f in fact_ids),
            dtype=np.int64,
            count=len(fact_ids),
        )

    def positions(self, j: int) -> np.ndarray:
        """Run positions (0-based, in run order) of the runs carrying lesson ``j``.

        Cost O(runs x lessons a run): a scan of every run's lessons.
        """
        return self._runs_of([j])[0]

    def _runs_of(self, js: Sequence[int]) -> list[np.ndarray]:
        """:meth:`positions` of each lesson of ``js``, in one scan (int64 arrays)."""
        flat = np.frombuffer(self._flat, dtype=np.intc)
        indptr = np.frombuffer(self._indptr, dtype=np.int64)
        want = np.asarray(js, dtype=np.int64)
        if want.size == 1:
            hits = np.flatnonzero(flat == want[0])
        else:  # a lookup table (np.isin would sort the pairs)
            wanted = np.zeros(len(self._lesson_ids), dtype=bool)
            wanted[want] = True
            hits = np.flatnonzero(wanted[flat])
        rows = np.searchsorted(indptr, hits, side="right") - 1  # the run of each hit
        if want.size == 1:
            return [rows.astype(np.int64)]
        codes = flat[hits]
        order = np.argsort(codes, kind="stable")  # by lesson, in run order within one
        codes, rows = codes[order], rows[order].astype(np.int64)
        lo = np.searchsorted(codes, want, side="left")
        hi = np.searchsorted(codes, want, side="right")
        return [rows[a:b] for a, b in zip(lo.tolist(), hi.tolist(), strict=True)]

    def run_lessons(self, i: int) -> np.ndarray:
        """Return the internal indices of the lessons of run ``i`` (once each, listed order)."""
        return np.array(self._flat[self._indptr[i] : self._indptr[i + 1]], dtype=np.int64)

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
        ledger._scores = self._y.tolist()
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
            self._seen.append(0)
            size = j + 1
            self._trials = grow(self._trials, size)
            self._sums = grow(self._sums, size)
            self._sumc = grow(self._sumc, size)
            self._sumsq = grow(self._sumsq, size)
        return j

    def _ensure_order(self) -> None:
        if self._order is not None:
            return
        flat = np.frombuffer(self._flat, dtype=np.intc)
        first = np.full(len(self._lesson_ids), flat.size, dtype=np.int64)
        for a in range(0, flat.size, _BLOCK):  # each lesson's first pair
            b = min(a + _BLOCK, flat.size)
            np.minimum.at(first, flat[a:b], np.arange(a, b, dtype=np.int64))
        present = np.flatnonzero(first < flat.size)
        self._order = present[np.argsort(first[present], kind="stable")]
        self._order_ids = tuple(self._lesson_ids[j] for j in self._order.tolist())

    def _flush(self) -> None:
        """Add the lessons of the runs not yet in the per-lesson sums (O(their pairs)).

        In run order, a block of runs at a time: ``np.add.at`` adds each pair's term to
        its lesson's sum one after the other, so every sum is the sequence of additions
        that adding one run at a time makes (bit for bit).
        """
        n = len(self._run_ids)
        start = self._flushed
        if start >= n:
            return
        if n - start <= 4:  # a look after each record(): a run at a time, as added
            for i in range(start, n):
                cols = self.run_lessons(i)  # (each lesson once)
                score = self._y[i]
                yc = score - _SHIFT
                self._trials[cols] += 1
                self._sums[cols] += score
                self._sumc[cols] += yc
                self._sumsq[cols] += yc * yc
            self._flushed = n
            return
        flat = np.frombuffer(self._flat, dtype=np.intc)
        indptr = np.frombuffer(self._indptr, dtype=np.int64)
        y = np.frombuffer(self._y, dtype=np.float64)
        while start < n:
            stop = int(np.searchsorted(indptr, indptr[start] + _BLOCK, side="right")) - 1
            stop = min(max(stop, start + 1), n)
            cols = flat[indptr[start] : indptr[stop]]
            if cols.size:
                w = np.repeat(y[start:stop], np.diff(indptr[start : stop + 1]))
                np.add.at(self._trials, cols, 1)
                np.add.at(self._sums, cols, w)
                w -= _SHIFT
                np.add.at(self._sumc, cols, w)
                w *= w
                np.add.at(self._sumsq, cols, w)
            start = stop
        self._flushed = n

    # ------------------------------------------------------------------ mutation
    def _columns(self, facts: list[str]) -> list[int]:
        """Return the internal indices of a run's lessons (once each; new ones added)."""
        lpos = self._lpos
        try:
            cols = [lpos[f] for f in facts]
        except KeyError:  # a lesson seen for the first time
            cols = [self._lesson(f) for f in facts]
        if len(cols) > 1 and len(set(cols)) != len(cols):
            cols = list(dict.fromkeys(cols))
        return cols

    def _unpin(self, i: int) -> None:
        """Continue the run buffers in copies (a numpy view of one pins its size)."""
        end = self._indptr[i]
        self._y = array("d", self._y[:i])
        self._flat = array("i", self._flat[:end])
        self._indptr = array("q", self._indptr[: i + 1])

    def _append(self, run_id: str, score: float, facts: list[str], covs: dict[str, Any]) -> int:
        i = len(self._run_ids)
        cols = self._columns(facts)
        try:
            self._y.append(score)
            self._flat.extend(cols)
            self._indptr.append(len(self._flat))
        except BufferError:  # a view of a buffer is still held (an exception's frame)
            self._unpin(i)
            self._y.append(score)
            self._flat.extend(cols)
            self._indptr.append(len(self._flat))
        self._index[run_id] = i
        self._run_ids.append(run_id)
        self._facts.append(facts)
        columns = self._covariates
        for name, values in columns.items():
            values.append(covs.get(name))
        if len(covs) > len(columns) or not columns.keys() >= covs.keys():
            for name, value in covs.items():
                if name not in columns:
                    columns[name] = [None] * i + [value]
        seen = self._seen
        fresh = [j for j in cols if not seen[j]]
        for j in fresh:
            seen[j] = 1
        yc = score - _SHIFT
        self.total_sum += score
        self.total_sumc += yc
        self.total_sumsq += yc * yc
        if score < self.y_min:
            self.y_min = score
        if score > self.y_max:
            self.y_max = score
        if fresh and self._order is not None:
            # lessons appearing for the first time (or again): last in first-appearance order
            self._order = np.concatenate([self._order, np.asarray(fresh, dtype=np.int64)])
            self._order_ids = (*(self._order_ids or ()), *(self._lesson_ids[j] for j in fresh))
        if self._reg is not None:
            c = np.asarray(cols, dtype=np.int64)
            self._reg.add(c, covs, score, 1.0)
            self._reg.note_levels(covs, 1)
            if c.size:
                self._reg.hsum[c] += run_hashes(i)
        self.version += 1
        return i

    def _set_lessons(self, i: int, cols: list[int]) -> None:
        """Make ``cols`` the lessons of run ``i`` (O(every run's lessons) if more or fewer)."""
        a, b = self._indptr[i], self._indptr[i + 1]
        delta = len(cols) - (b - a)
        if delta == 0:
            self._flat[a:b] = array("i", cols)
            return
        self._flat = self._flat[:a] + array("i", cols) + self._flat[b:]
        ends = np.frombuffer(self._indptr, dtype=np.int64).copy()
        ends[i + 1 :] += delta
        self._indptr = array("q")
        self._indptr.frombytes(ends.tobytes())

    def _replace(self, i: int, score: float, facts: list[str], covs: dict[str, Any]) -> None:
        """Replace run ``i`` in place (sums of the lessons it touches recomputed in run order)."""
        self._flush()
        old_cols = self.run_lessons(i)
        old_covs = self.run_covariates(i)
        old_score = self._y[i]
        if self._reg is not None:
            self._reg.add(old_cols, old_covs, old_score, -1.0)
            self._reg.note_levels(old_covs, -1)
            if old_cols.size:
                self._reg.hsum[old_cols] -= run_hashes(i)
        self._y[i] = score
        self._facts[i] = facts
        for values in self._covariates.values():
            values[i] = None
        for name, value in covs.items():
            if name not in self._covariates:
                self._covariates[name] = [None] * len(self._run_ids)
            self._covariates[name][i] = value
        new = self._columns(facts)
        self._set_lessons(i, new)
        cols = np.asarray(new, dtype=np.int64)
        y = np.frombuffer(self._y, dtype=np.float64)
        touched = sorted(set(old_cols.tolist()) | set(new))
        for j, rows in zip(touched, self._runs_of(touched), strict=True):
            ya = y[rows]
            self._trials[j] = rows.size
            self._seen[j] = 1 if rows.size else 0
            self._sums[j] = float(np.cumsum(ya)[-1]) if ya.size else 0.0  # run order
            yc = ya - _SHIFT
            self._sumc[j] = float(np.cumsum(yc)[-1]) if ya.size else 0.0
            self._sumsq[j] = float(np.cumsum(yc * yc)[-1]) if ya.size else 0.0
        yc = y - _SHIFT
        self.total_sum = float(np.cumsum(y)[-1])
        self.total_sumc = float(np.cumsum(yc)[-1])
        self.total_sumsq = float(np.cumsum(yc * yc)[-1])
        self.y_min, self.y_max = float(y.min()), float(y.max())
        del y, yc
        self._order = None
        self._order_ids = None
        self._kinds = {name: column_kind(values) for name, values in self._covariates.items()}
        if self._reg is not None:
            self._reg.add(cols, covs, score, 1.0)
            self._reg.note_levels(covs, 1)
            if cols.size:
                self._reg.hsum[cols] += run_hashes(i)
            for name in self._reg.covariates:  # numeric ranges after the change
                values = [v for v in self._covariates.get(name, []) if v is not None]
                if values and not isinstance(values[0], (bool, str)):
                    self._reg.ranges[name] = [float(min(values)), float(max(values))]
        self.version += 1

    # ------------------------------------------------------------------ group statistics
    def group_arrays(
        self, idx: np.ndarray
    ) -> tuple[lesson_groups.GroupArrays, np.ndarray, np.ndarray, np.ndarray]:
        """With-lesson and leave-one-out statistics of lessons ``idx``, with error bounds.

        Returns ``(groups, lift_tol, var_a_tol, var_b_tol)``.  ``groups`` is what
        ``Ledger._group_arrays`` returns, from running sums: trials, means and baseline
        means as the ledger's additive statistics (the with-lesson mean and the additive
        baseline mean are bit for bit the ledger's), sums of squared deviations from the
        running ``sum (y - c)`` and ``sum (y - c)^2`` (``c = 0.5``) and Chan's
        decomposition for the baselines.  No statistic is marked exact.

        The tolerances bound how far each statistic may be from its run-order value
        (``cogstats.stats.groups.exact_stats``, which decides near ties).  With ``u``
        the unit roundoff, ``Q`` a running ``sum (y - c)^2`` over ``n`` runs and ``SS``
        a sum of squared deviations (recursive summation, Higham eq. 4.4; Cauchy-Schwarz
        for ``sum (y - c)``):

        * the baseline mean: the ledger's bound (``lift_tol``, of
          :func:`cogstats.stats.groups.uncertainty`);
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
        self._flush()
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
        groups = lesson_groups.GroupArrays(
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
        """Lesson ``j``'s statistics in run order (``cogstats.stats.groups.exact_stats``).

        Returns ``(n_a, mean_a, var_a, n_b, mean_b, var_b)``, bit for bit what
        ``exact_stats`` returns on the ledger of the runs so far.  Cost O(runs): the
        baseline is summed over the runs without the lesson.
        """
        self._flush()
        self.recomputed += 1
        rows = self.positions(j)
        z = np.zeros(1)
        fa = lesson_groups.FactArrays(
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
        return lesson_groups.exact_stats(fa, 0)

    def exact_means(self, j: int) -> tuple[int, float, int, float]:
        """Lesson ``j``'s trials and means as :meth:`exact_stats` has them (no variances).

        Cost O(runs), without the two sums of squares.
        """
        self._flush()
        self.recomputed += 1
        rows = self.positions(j)
        y = np.frombuffer(self._y, dtype=np.float64)
        member = np.zeros(y.size, dtype=bool)
        member[rows] = True
        n_a = int(rows.size)
        mean_a = float(self._sums[j] / n_a) if n_a else 0.0
        yb = y[~member]
        n_b = int(yb.size)
        mean_b = float(np.cumsum(yb)[-1] / n_b) if n_b else 0.0
        return n_a, mean_a, n_b, mean_b

    def _fact_arrays(self, js: Sequence[int]) -> lesson_groups.FactArrays:
        """``Ledger._fact_arrays()`` restricted to lessons ``js`` (bit for bit; O(runs))."""
        rows = self._runs_of(js) if len(js) else []
        cols = [np.full(r.size, k, dtype=np.int64) for k, r in enumerate(rows)]
        return lesson_groups.fact_arrays(
            self.scores(),
            np.concatenate(rows) if rows else np.zeros(0, np.int64),
            np.concatenate(cols) if cols else np.zeros(0, np.int64),
            len(js),
        )

    def batch_group_arrays(self, js: Sequence[int]) -> lesson_groups.GroupArrays:
        """``Ledger._group_arrays`` of lessons ``js`` (present ones), bit for bit; O(runs)."""
        self.recomputed += len(js)
        fa = self._fact_arrays(js)
        return lesson_groups.group_arrays(fa, np.arange(len(js), dtype=np.int64))

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
            When the statistics keep no cross-products (the gate did not ask).
        """
        reg = self._reg
        if reg is None:
            raise ParameterError(
                "these streaming statistics keep no regression cross-products; a gate "
                "that needs them builds its statistics with regression_covariates"
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
        move it across.  Otherwise the gate should fall back to the batch check on
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
            cross_product_identifiability,
        )

        reg_state = self._reg
        if reg_state is None:
            raise ParameterError(
                "identifiability needs the cross-products: running statistics kept with "
                "regression_covariates (a tuple); got them without"
            )
        n = reg.n
        q = reg.n_controls
        order = self.order()
        self._flush()
        counts = self._trials[order]
        keys = [tuple(r) for r in reg_state.hsum[order].tolist()]
        xtx = reg.xtx
        frame, m = cross_product_identifiability(
            list(reg.fact_ids), n, counts, keys, xtx, q, reg.sources, DEFAULT_TOL, vif_threshold
        )
        if m == 0 or (q == 0 and n * m > DENSE_LIMIT):
            return frame, True
        if q > 0 and n < xtx.shape[0]:
            # fewer runs than design columns, with covariates: the batch's dense check
            # tells an estimable lesson from a collinear one, which the factors cannot
            return frame, False
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

    # ------------------------------------------------------------------ arrays
    def to_arrays(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """Return ``(info, arrays)``: JSON values and arrays, for :meth:`from_arrays`.

        :meth:`from_arrays` restores them bit for bit (the streaming gate's state file
        holds them).

        Examples
        --------
        >>> s = StreamingStats(); s.add_run("r1", 0.5, ["a"])
        >>> info, arrays = s.to_arrays()
        >>> back = StreamingStats.from_arrays(info, arrays)
        >>> back.trials(["a"]).tolist(), back.total_sum == s.total_sum
        ([1], True)
        """
        self._flush()
        L = len(self._lesson_ids)
        info: dict[str, Any] = {
            "runs": self.n_runs,
            "lessons": L,
            "totals": {
                "total_sum": self.total_sum,
                "total_sumc": self.total_sumc,
                "total_sumsq": self.total_sumsq,
                "y_min": self.y_min if self.n_runs else None,
                "y_max": self.y_max if self.n_runs else None,
            },
            "kinds": dict(self._kinds),
            "run_ids": list(self._run_ids),
            "fact_ids": [list(f) for f in self._facts],
            "covariates": {k: list(v) for k, v in self._covariates.items()},
            "lesson_ids": list(self._lesson_ids),
            "confseq": self.confseq is not None,
        }
        arrays: dict[str, np.ndarray] = {
            "scores": np.frombuffer(self._y, dtype=np.float64).copy(),
            "lesson_trials": self._trials[:L].copy(),
            "lesson_sums": self._sums[:L].copy(),
            "lesson_sumc": self._sumc[:L].copy(),
            "lesson_sumsq": self._sumsq[:L].copy(),
            "run_lessons_indptr": np.frombuffer(self._indptr, dtype=np.int64).copy(),
            "run_lessons": np.frombuffer(self._flat, dtype=np.intc).astype(np.int64),
        }
        reg = self._reg
        if reg is not None:
            k = len(reg.keys)
            arrays["xtx"] = reg.xtx[:k, :k].copy()
            arrays["xty"] = reg.xty[:k].copy()
            arrays["lesson_column"] = reg.lesson_col[:L].copy()
            arrays["lesson_hash"] = reg.hsum[:L].copy()
            info["regression"] = {
                "covariates": list(reg.covariates),
                "yty": reg.yty,
                "columns": [list(key) for key in reg.keys],
                "ranges": reg.ranges,
                "levels": {n: [[lev, c] for lev, c in d.items()] for n, d in reg.levels.items()},
            }
        if self.confseq is not None:
            for name, value in self.confseq.arrays().items():
                arrays[f"confseq/{name}"] = value
        return info, arrays

    @classmethod
    def from_arrays(
        cls, info: Mapping[str, Any], arrays: Mapping[str, np.ndarray]
    ) -> StreamingStats:
        """Rebuild the statistics from :meth:`to_arrays`'s output (nothing is re-added)."""
        reg_info = info.get("regression")
        out = cls(
            None if reg_info is None else tuple(reg_info["covariates"]),
            confseq=bool(info.get("confseq", False)),
        )
        n = int(info["runs"])
        out._run_ids = list(info["run_ids"])
        out._index = {r: i for i, r in enumerate(out._run_ids)}
        out._facts = [list(f) for f in info["fact_ids"]]
        out._covariates = {k: list(v) for k, v in info["covariates"].items()}
        out._kinds = dict(info["kinds"])
        out._y = array("d")
        out._y.frombytes(np.ascontiguousarray(arrays["scores"][:n], dtype=np.float64).tobytes())
        lesson_ids = list(info["lesson_ids"])
        out._lesson_ids = lesson_ids
        out._lpos = {f: j for j, f in enumerate(lesson_ids)}
        L = len(lesson_ids)
        for name, attr in (
            ("lesson_trials", "_trials"),
            ("lesson_sums", "_sums"),
            ("lesson_sumc", "_sumc"),
            ("lesson_sumsq", "_sumsq"),
        ):
            buf = grow(np.zeros(0, dtype=arrays[name].dtype), max(L, 1))
            buf[:L] = arrays[name]
            setattr(out, attr, buf)
        indptr = np.ascontiguousarray(arrays["run_lessons_indptr"][: n + 1], dtype=np.int64)
        flat = arrays["run_lessons"][: int(indptr[-1])]
        out._indptr = array("q")
        out._indptr.frombytes(indptr.tobytes())
        out._flat = array("i")
        out._flat.frombytes(np.ascontiguousarray(flat, dtype=np.intc).tobytes())
        out._seen = bytearray((out._trials[:L] > 0).astype(np.uint8).tobytes())
        out._flushed = n
        totals = info["totals"]
        out.total_sum = float(totals["total_sum"])
        out.total_sumc = float(totals["total_sumc"])
        out.total_sumsq = float(totals["total_sumsq"])
        out.y_min = math.inf if totals["y_min"] is None else float(totals["y_min"])
        out.y_max = -math.inf if totals["y_max"] is None else float(totals["y_max"])
        out._order = None
        out._order_ids = None
        reg = out._reg
        if reg is not None and reg_info is not None:
            reg.keys = [tuple(k) for k in reg_info["columns"]]
            reg.col = {key: c for c, key in enumerate(reg.keys)}
            k = len(reg.keys)
            reg.xtx = grow_square(np.zeros((0, 0)), max(k, 1))
            reg.xtx[:k, :k] = arrays["xtx"]
            reg.xty = grow(np.zeros(0), max(k, 1))
            reg.xty[:k] = arrays["xty"]
            reg.yty = float(reg_info["yty"])
            reg.lesson_col = np.full(max(L, 1), -1, dtype=np.int64)
            reg.lesson_col[:L] = arrays["lesson_column"]
            reg.hsum = np.zeros((max(L, 1), 2), dtype=np.uint64)
            reg.hsum[:L] = arrays["lesson_hash"]
            reg.ranges = {n_: list(v) for n_, v in reg_info["ranges"].items()}
            reg.levels = {
                n_: {lev: c for lev, c in pairs} for n_, pairs in reg_info["levels"].items()
            }
        if out.confseq is not None:
            out.confseq.load(
                {k[len("confseq/") :]: v for k, v in arrays.items() if k.startswith("confseq/")}
            )
        out.version += 1
        return out


def _ledger_runs(ledger: Ledger) -> Iterable[tuple[str, float, list[str], dict[str, Any]]]:
    """Yield a ledger's runs as ``(run_id, score, fact_ids, covariates)``, in ledger order."""
    for rec in ledger.to_records():
        run_id = rec.pop("run_id")
        score = rec.pop("score")
        facts = list(rec.pop("fact_ids") or [])
        yield run_id, float(score), facts, {k: v for k, v in rec.items() if v is not None}
