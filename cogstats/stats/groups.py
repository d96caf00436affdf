"""Per-lesson sufficient statistics of a ledger: the arithmetic behind the Ledger's views.

Everything here works on additive statistics (per lesson: trials, sum of scores, sum of
squared deviations from the lesson's mean; the same over all runs), so its cost is in
runs x lessons-per-run plus lessons, never runs x lessons:

* the **inclusion index**: the deduplicated (run, lesson) pairs in run order, built once;
* **with-lesson statistics**: ``np.bincount`` over those pairs.  ``bincount`` adds its
  weights one by one in input order, and the pairs are in run order, so every lesson's
  sum of scores is accumulated in run order, exactly as cycgraph's loop does (its margin
  rule compares point estimates exactly: ``0.55 - 0.50 >= 0.05`` promotes);
* **leave-one-out baselines** by subtraction: ``n_b = N - n_a``, ``S_b = S - S_a`` and
  (Chan et al.'s decomposition of the total sum of squares)
  ``SS_b = SS - SS_a - n_a n_b / N (m_a - m_b)^2``.

Subtraction is not how cycgraph adds: a baseline mean from ``(S - S_a) / n_b`` can differ
from cycgraph's run-order sum over the baseline runs in the last bits.  Two rules keep
every decision identical to the run-order computation:

1. a lesson whose baseline is the smaller part of the ledger (``n_b <= N / 2``, at most
   twice the lessons per run of them) gets its baseline in run order directly (no
   cancellation, and exact);
2. callers that compare a statistic with a threshold (the cycgraph gate) ask
   :func:`uncertainty` for a bound on how far the additive value can be from the
   run-order one, and recompute in run order (:func:`exact_stats`) the few lessons whose
   statistic lies within that bound of a threshold.

The bound is the classical one for recursive summation (Higham, *Accuracy and Stability
of Numerical Algorithms*, 2nd ed., eq. 4.4): a sum of ``n`` terms of magnitude at most 1
(scores are in [0, 1]) carries an error of at most ``(n - 1) u sum|y|`` with ``u`` the
unit roundoff; the additive baseline mean involves two such sums of at most ``N`` terms,
divided by ``n_b >= N / 2``.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "FactArrays",
    "GroupArrays",
    "GroupMoments",
    "baseline_arrays",
    "chan_merge",
    "exact_stats",
    "exact_stats_of",
    "fact_arrays",
    "facts_index",
    "first_in_run",
    "group_arrays",
    "leave_one_out",
    "uncertainty",
]

#: unit roundoff of float64
UNIT_ROUNDOFF = np.finfo(np.float64).eps / 2
#: longest run (in lesson ids) for which in-run duplicates are found by shifted compares
_SHIFT_LIMIT = 32
#: inclusion pairs per block of :func:`fact_arrays` (2 MB of float64 scores)
_BLOCK = 1 << 18


def facts_index(
    fact_lists: Sequence[Sequence[str]],
) -> tuple[tuple[str, ...], np.ndarray, np.ndarray, dict[str, int]]:
    """Distinct lesson ids (first appearance) and the deduplicated (run, lesson) pairs.

    Returns ``(fact_ids, rows, cols, position)``: ``rows``/``cols`` are int64 arrays in run
    order (within a run, in listed order), a lesson listed twice in one run appearing
    once; ``position`` maps a lesson id to its column.

    Cost: one pass over the ids in C (``map`` over the chained lists into a
    ``defaultdict`` that numbers an id on its first appearance: no list of every id is
    built, which at a million runs of 8 lessons would be 64 MB more than the arrays),
    then vectorised duplicate removal; about 0.1 s for 800,000 ids.
    """
    n = len(fact_lists)
    lengths = np.fromiter(map(len, fact_lists), dtype=np.int64, count=n)
    numbered: defaultdict[str, int] = defaultdict(itertools.count().__next__)
    total = int(lengths.sum())
    chained = itertools.chain.from_iterable(fact_lists)
    cols = np.fromiter(map(numbered.__getitem__, chained), dtype=np.int64, count=total)
    pos = dict(numbered)  # first appearance order, numbered 0, 1, ...
    ids = tuple(pos)
    rows = np.repeat(np.arange(n, dtype=np.int64), lengths)
    if cols.size:
        keep = first_in_run(rows, cols, lengths)
        if keep is not None:
            rows, cols = rows[keep], cols[keep]
    return ids, rows, cols, pos


def first_in_run(rows: np.ndarray, cols: np.ndarray, lengths: np.ndarray) -> np.ndarray | None:
    """Return a mask keeping the first listing of each lesson in each run (None: no duplicates).

    Examples
    --------
    >>> rows, cols = np.array([0, 0, 0, 1]), np.array([2, 5, 2, 2])
    >>> first_in_run(rows, cols, np.array([3, 1])).tolist()
    [True, True, False, True]
    """
    longest = int(lengths.max())
    if longest <= 1:
        return None
    if longest <= _SHIFT_LIMIT:
        dup = np.zeros(cols.size, dtype=bool)
        for s in range(1, longest):
            same = (cols[s:] == cols[:-s]) & (rows[s:] == rows[:-s])
            dup[s:] |= same
        return None if not dup.any() else ~dup
    key = rows * (int(cols.max()) + 1) + cols
    _, first = np.unique(key, return_index=True)
    if first.size == cols.size:
        return None
    keep = np.zeros(cols.size, dtype=bool)
    keep[first] = True
    return keep


_first_in_run = first_in_run  # the former private name


@dataclass(frozen=True)
class FactArrays:
    """With-lesson sufficient statistics of a ledger (one entry per lesson).

    Attributes
    ----------
    y : numpy.ndarray
        Scores in run order.
    rows, cols : numpy.ndarray
        The deduplicated (run, lesson) inclusion pairs, in run order.
    trials : numpy.ndarray
        Runs carrying each lesson (int64).
    sums : numpy.ndarray
        Sum of their scores, accumulated in run order.
    means : numpy.ndarray
        ``sums / trials`` (0.0 for a lesson without runs).
    ss : numpy.ndarray
        Sum of squared deviations from the lesson's mean (two-pass).
    total_sum, total_mean, total_ss : float
        The same over every run (``total_ss`` two-pass about ``total_mean``).
    """

    y: np.ndarray
    rows: np.ndarray
    cols: np.ndarray
    trials: np.ndarray
    sums: np.ndarray
    means: np.ndarray
    ss: np.ndarray
    total_sum: float
    total_mean: float
    total_ss: float

    @property
    def n_runs(self) -> int:
        """Runs in the ledger."""
        return int(self.y.size)


def fact_arrays(y: np.ndarray, rows: np.ndarray, cols: np.ndarray, n_facts: int) -> FactArrays:
    """With-lesson and total statistics; cost O(runs x lessons-per-run + lessons).

    Memory: nothing the size of the inclusion pairs beside ``rows`` and ``cols``.  The
    sums are accumulated a block of pairs at a time with ``np.add.at``, which adds each
    pair's term to its lesson's sum one after the other in pair order: the sequence of
    additions ``np.bincount(cols, weights=...)`` makes over the whole arrays, so the
    values are bit for bit those of ``bincount(cols, y[rows])`` and of
    ``bincount(cols, (y[rows] - means[cols]) ** 2)``.
    """
    y = np.ascontiguousarray(y, dtype=np.float64)
    trials = np.bincount(cols, minlength=n_facts).astype(np.int64)
    sums = np.zeros(trials.size)
    for a in range(0, cols.size, _BLOCK):  # run order: sequential adds
        np.add.at(sums, cols[a : a + _BLOCK], y[rows[a : a + _BLOCK]])
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(trials > 0, sums / np.maximum(trials, 1), 0.0)
    ss = np.zeros(trials.size)
    for a in range(0, cols.size, _BLOCK):
        c = cols[a : a + _BLOCK]
        dev = y[rows[a : a + _BLOCK]]
        dev -= means[c]
        np.multiply(dev, dev, out=dev)
        np.add.at(ss, c, dev)
    n = y.size
    total_sum = float(np.cumsum(y)[-1]) if n else 0.0
    total_mean = total_sum / n if n else 0.0
    dev_all = y - total_mean
    total_ss = float(np.dot(dev_all, dev_all)) if n else 0.0
    return FactArrays(y, rows, cols, trials, sums, means, ss, total_sum, total_mean, total_ss)


def _run_order_aggregate(y: np.ndarray) -> tuple[int, float, float]:
    """Return runs, mean (run-order sum) and sum of squares (two-pass), as the old ledger did."""
    n = int(y.size)
    if n == 0:
        return 0, 0.0, np.nan
    mean = float(np.cumsum(y)[-1] / n)  # np.cumsum adds left to right, like cycgraph's loop
    if n < 2:
        return n, mean, np.nan
    dev = y - mean
    return n, mean, float(np.dot(dev, dev))


def _pick(values: np.ndarray, idx: np.ndarray, fill: float) -> np.ndarray:
    """``values[idx]`` with ``fill`` where ``idx`` is -1 (a lesson not in the ledger)."""
    padded = np.concatenate([values, np.asarray([fill], dtype=values.dtype)])
    return padded[np.where(idx < 0, values.size, idx)]


def _member_mask(fa: FactArrays, j: int) -> np.ndarray:
    out = np.zeros(fa.n_runs, dtype=bool)
    out[fa.rows[fa.cols == j]] = True
    return out


def baseline_arrays(
    fa: FactArrays, idx: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Compute the leave-one-out baselines of lessons ``idx``.

    ``idx`` holds column numbers; -1 is a lesson not in the ledger, whose baseline is
    every run.

    Returns ``(runs, means, ss, exact)``: ``ss`` is the baseline's sum of squared
    deviations (NaN below 2 runs; divide by ``runs - 1`` for the variance); ``exact``
    marks baselines computed in run order (rule 1 of the module docstring).  Means are
    0.0 for an empty baseline, as in cycgraph.
    """
    idx = np.asarray(idx, dtype=np.int64)
    n = fa.n_runs
    absent = idx < 0
    n_a = _pick(fa.trials, idx, 0)
    s_a = _pick(fa.sums, idx, 0.0)
    m_a = _pick(fa.means, idx, 0.0)
    ss_a = _pick(fa.ss, idx, 0.0)
    n_b, m_b, ss_b = leave_one_out(n_a, s_a, m_a, ss_a, n, fa.total_sum, fa.total_ss)
    ss_b = np.where(n_b >= 2, ss_b, np.nan)
    # rule 1: small baselines (and the whole ledger, for absent lessons) in run order
    direct = absent | (2 * n_b <= n)
    exact = direct.copy()
    if direct.any():
        m_b = m_b.copy()
        ss_b = ss_b.copy()
        total = _run_order_aggregate(fa.y)
        for k in np.flatnonzero(direct):
            if absent[k]:
                _, m_b[k], ss_b[k] = total
            else:
                _, m_b[k], ss_b[k] = _run_order_aggregate(fa.y[~_member_mask(fa, int(idx[k]))])
    return n_b.astype(np.int64), m_b, ss_b, exact


def leave_one_out(
    n_a: np.ndarray,
    s_a: np.ndarray,
    m_a: np.ndarray,
    ss_a: np.ndarray,
    runs: int,
    total_sum: float,
    total_ss: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return each lesson's leave-one-out baseline by subtraction: runs, mean, sum of squares.

    From the lesson's runs (count ``n_a``, score sum ``s_a``, mean ``m_a``, sum of
    squared deviations ``ss_a``) and every run's (``runs``, ``total_sum``, ``total_ss``):
    ``n_b = runs - n_a``, ``mean_b = (total_sum - s_a) / n_b`` (0 without a baseline) and
    Chan et al.'s decomposition ``ss_b = total_ss - ss_a - n_a n_b / runs (m_a -
    mean_b)^2`` (at least 0).  The ledger's additive baselines and the partitioned
    attribution's are this one function (the module docstring says when the ledger
    recomputes a baseline in run order instead).

    Examples
    --------
    >>> y = np.array([0.2, 0.4, 0.9, 0.7])  # the lesson is in the last two runs
    >>> n_b, mean_b, ss_b = leave_one_out(np.array([2]), np.array([1.6]), np.array([0.8]),
    ...                                   np.array([0.02]), 4, y.sum(), ((y - y.mean())**2).sum())
    >>> int(n_b[0]), round(float(mean_b[0]), 12), round(float(ss_b[0]), 12)
    (2, 0.3, 0.02)
    """
    n_b = runs - n_a
    with np.errstate(invalid="ignore", divide="ignore"):
        m_b = np.where(n_b > 0, (total_sum - s_a) / np.maximum(n_b, 1), 0.0)
        between = n_a * n_b / max(runs, 1) * (m_a - m_b) ** 2
    return n_b, m_b, np.maximum(total_ss - ss_a - between, 0.0)


def chan_merge(
    n1: np.ndarray, m1: np.ndarray, s1: np.ndarray, n2: np.ndarray, m2: np.ndarray, s2: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Merge two groups' (count, mean, sum of squared deviations): Chan, Golub and LeVeque.

    Elementwise; a group of count 0 leaves the other unchanged (mean 0 when both are).

    Examples
    --------
    >>> a, b = np.array([0.1, 0.3]), np.array([0.6, 0.2, 0.4])
    >>> n, m, ss = chan_merge(np.array([2]), np.array([a.mean()]), np.array([a.var() * 2]),
    ...                       np.array([3]), np.array([b.mean()]), np.array([b.var() * 3]))
    >>> both = np.concatenate([a, b])
    >>> int(n[0]), bool(np.isclose(m[0], both.mean())), bool(np.isclose(ss[0], both.var() * 5))
    (5, True, True)
    """
    n = n1 + n2
    with np.errstate(invalid="ignore", divide="ignore"):
        delta = m2 - m1
        mean = np.where(n > 0, m1 + delta * np.where(n > 0, n2 / np.maximum(n, 1), 0.0), 0.0)
        ss = s1 + s2 + delta * delta * np.where(n > 0, n1 * n2 / np.maximum(n, 1), 0.0)
    return n, mean, ss


@dataclass(frozen=True)
class GroupMoments:
    """Per-lesson (count, mean, sum of squared deviations) and the same over every run.

    The mergeable form of :class:`FactArrays`: filled from any part of a ledger (a
    partition, :meth:`from_fact_arrays`) and merged part by part (:meth:`merge`, Chan et
    al.'s pairwise update), so that a ledger larger than memory is reduced to the same
    statistics a ledger in memory has (to rounding).  Lessons are positions in the
    owner's list of lesson ids.

    Examples
    --------
    >>> y, lesson = np.array([0.5, 0.7, 0.9]), np.array([0, 0])
    >>> one = GroupMoments.from_fact_arrays(fact_arrays(y[:2], np.array([0, 1]), lesson, 1))
    >>> two = GroupMoments.from_fact_arrays(fact_arrays(y[2:], np.array([0]), lesson[:1], 1))
    >>> both = one.merge(two, np.array([0]))
    >>> int(both.n[0]), round(float(both.mean[0]), 12), both.runs
    (3, 0.7, 3)
    """

    n: np.ndarray
    mean: np.ndarray
    m2: np.ndarray
    runs: int
    total_mean: float
    total_m2: float

    @classmethod
    def from_fact_arrays(cls, fa: FactArrays) -> GroupMoments:
        """Return the moments of a ledger part's statistics."""
        return cls(fa.trials, fa.means, fa.ss, fa.n_runs, fa.total_mean, fa.total_ss)

    @property
    def total_sum(self) -> float:
        """The sum of every score."""
        return self.total_mean * self.runs

    def merge(self, other: GroupMoments, where: np.ndarray) -> GroupMoments:
        """Return these moments and ``other``'s (its lesson ``k`` is lesson ``where[k]`` here).

        Lessons beyond this part's are appended (``where`` may point past them).
        """
        p = max(self.n.shape[0], int(where.max()) + 1 if where.size else 0)

        def grow(values: np.ndarray) -> np.ndarray:
            out = np.zeros(p, dtype=values.dtype)
            out[: values.shape[0]] = values
            return out

        n2, m2, s2 = np.zeros(p, np.int64), np.zeros(p), np.zeros(p)
        n2[where], m2[where], s2[where] = other.n, other.mean, other.m2
        n, mean, ss = chan_merge(grow(self.n), grow(self.mean), grow(self.m2), n2, m2, s2)
        tn, tm, ts = chan_merge(
            np.array([self.runs]),
            np.array([self.total_mean]),
            np.array([self.total_m2]),
            np.array([other.runs]),
            np.array([other.total_mean]),
            np.array([other.total_m2]),
        )
        return GroupMoments(n.astype(np.int64), mean, ss, int(tn[0]), float(tm[0]), float(ts[0]))


@dataclass(frozen=True)
class GroupArrays:
    """With/without statistics of a list of lessons, aligned with it.

    ``var_a``/``var_b`` are sample variances (NaN below 2 runs); ``exact`` marks lessons
    whose every statistic was computed in run order.
    """

    n_a: np.ndarray
    mean_a: np.ndarray
    var_a: np.ndarray
    n_b: np.ndarray
    mean_b: np.ndarray
    var_b: np.ndarray
    exact: np.ndarray


def group_arrays(fa: FactArrays, idx: np.ndarray) -> GroupArrays:
    """With-lesson and leave-one-out statistics of lessons ``idx`` (-1: not in the ledger)."""
    idx = np.asarray(idx, dtype=np.int64)
    n_a = _pick(fa.trials, idx, 0).astype(np.int64)
    mean_a = _pick(fa.means, idx, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        var_a = np.where(n_a >= 2, _pick(fa.ss, idx, 0.0) / np.maximum(n_a - 1, 1), np.nan)
    n_b, mean_b, ss_b, exact = baseline_arrays(fa, idx)
    with np.errstate(invalid="ignore", divide="ignore"):
        var_b = np.where(n_b >= 2, ss_b / np.maximum(n_b - 1, 1), np.nan)
    return GroupArrays(n_a, mean_a, var_a, n_b, mean_b, var_b, exact)


def uncertainty(fa: FactArrays, groups: GroupArrays) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bounds on how far the additive statistics may be from their run-order values.

    Returns ``(lift_tol, var_a_tol, var_b_tol)``: absolute bounds on the error of
    ``mean_a - mean_b`` and of the two sample variances (zero where the statistics are
    exact).  From the recursive-summation bound (module docstring), with every score in
    [0, 1] bounding each sum by its count:

    * the baseline sum ``S - S_a`` differs from the run-order sum over the baseline by at
      most ``u (N^2 + n_a^2 + n_b^2 + N)``; divided by ``n_b`` and doubled for the
      second-order terms and the roundings of the subtraction and division;
    * the baseline sum of squares ``SS - SS_a - between`` differs from the two-pass sum
      over the baseline by at most ``4 u (N + 2) (SS + N)`` (each of the three terms is a
      sum of at most N terms bounded by ``SS + N``, the between-groups term also through
      the error of the baseline mean);
    * the with-lesson sum of squares is summed in a different order than the original
      ``np.add.reduceat`` (same terms): at most ``2 n_a u SS_a``.
    """
    n = float(fa.n_runs)
    u = UNIT_ROUNDOFF
    n_a = groups.n_a.astype(float)
    n_b = np.maximum(groups.n_b.astype(float), 1.0)
    lift_tol = 4.0 * u * (n * n + n_a * n_a + n_b * n_b + n + 2.0) / n_b
    var_b_tol = 4.0 * u * (n + 2.0) * (fa.total_ss + n) / np.maximum(n_b - 1.0, 1.0)
    with np.errstate(invalid="ignore"):
        var_a_tol = np.nan_to_num(2.0 * u * (n_a + 1.0) * groups.var_a, nan=0.0)
    zero = np.zeros_like(lift_tol)
    return (
        np.where(groups.exact, zero, lift_tol),
        var_a_tol,
        np.where(groups.exact, zero, var_b_tol),
    )


def exact_stats(fa: FactArrays, j: int) -> tuple[int, float, float, int, float, float]:
    """Statistics of one lesson computed entirely in run order, as the original ledger did.

    Returns ``(n_a, mean_a, var_a, n_b, mean_b, var_b)`` (variances NaN below 2 runs):
    the with-lesson sum sequential in run order and its squared deviations summed by
    ``np.add.reduceat`` (the original ``_with_stats``); the baseline from the runs
    without the lesson, in run order (the original ``baseline``).
    """
    return _exact(fa, j, _member_mask(fa, j))


def exact_stats_of(
    fa: FactArrays, js: Sequence[int]
) -> list[tuple[int, float, float, int, float, float]]:
    """:func:`exact_stats` of each lesson of ``js``: one scan of the pairs finds their runs.

    Examples
    --------
    >>> fa = fact_arrays(np.array([0.2, 0.4, 0.9]), np.array([0, 1, 2]), np.array([0, 1, 0]), 2)
    >>> exact_stats_of(fa, [1, 0]) == [exact_stats(fa, 1), exact_stats(fa, 0)]
    True
    """
    want = np.asarray(js, dtype=np.int64)
    wanted = np.zeros(fa.trials.size, dtype=bool)  # a lookup table (np.isin sorts the pairs)
    wanted[want] = True
    hits = np.flatnonzero(wanted[fa.cols])
    codes = fa.cols[hits]
    order = np.argsort(codes, kind="stable")  # by lesson; run order within one
    codes, runs = codes[order], fa.rows[hits][order]
    lo = np.searchsorted(codes, want, side="left").tolist()
    hi = np.searchsorted(codes, want, side="right").tolist()
    member = np.zeros(fa.n_runs, dtype=bool)
    out = []
    for j, a, b in zip(want.tolist(), lo, hi, strict=True):
        member[:] = False
        member[runs[a:b]] = True
        out.append(_exact(fa, j, member))
    return out


def _exact(
    fa: FactArrays, j: int, member: np.ndarray
) -> tuple[int, float, float, int, float, float]:
    ya = fa.y[member]
    n_a = int(ya.size)
    mean_a = float(fa.sums[j] / n_a) if n_a else 0.0
    if n_a >= 2:
        dev = ya - mean_a
        var_a = float(np.add.reduceat(dev * dev, [0])[0] / (n_a - 1))
    else:
        var_a = np.nan
    n_b, mean_b, ss_b = _run_order_aggregate(fa.y[~member])
    var_b = ss_b / (n_b - 1) if n_b >= 2 else np.nan
    return n_a, mean_a, var_a, n_b, mean_b, var_b
