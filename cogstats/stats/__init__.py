"""Shared sufficient statistics: what a gate's rule reads, filled from a ledger or a stream.

One package for the statistics that the gates, the streaming runner and the partitioned
path build (issue 17):

* :class:`StreamingStats` -- the runs and, per lesson, trials, the run-order sum of scores,
  the shifted sums and sums of squares (the per-lesson groups: with-lesson and
  leave-one-out means and variances, with rounding bounds and the exact run-order
  recompute for near ties), updated run by run (:meth:`StreamingStats.add_run`), built
  from a ledger (:meth:`StreamingStats.from_ledger`), merged, saved to and restored from
  arrays (:meth:`StreamingStats.to_arrays` / :meth:`StreamingStats.from_arrays`);
* :class:`CrossProducts` / :class:`RegressionStats` -- ``X'X``, ``X'y``, ``y'y`` over the
  batch design's columns; :class:`CrossProductSums` -- a part's, over fixed columns,
  merged by adding (the partitioned attribution's second pass);
* :class:`ConfseqSums` -- confseq's running sums.

* :mod:`cogstats.stats.groups` -- the per-lesson group arrays of a
  :class:`~cogstats.ledger.Ledger` (the batch path: inclusion index, with-lesson and
  leave-one-out statistics, rounding bounds, the exact run-order recompute), which the
  running statistics reproduce, and their
  mergeable form :class:`GroupMoments` (per-lesson count, mean, sum of squares, merged
  by Chan et al.'s update; the partitioned attribution's first pass) with the one
  leave-one-out baseline (:func:`~cogstats.stats.groups.leave_one_out`).

Examples
--------
>>> from cogstats.stats import StreamingStats
>>> s = StreamingStats()
>>> s.add_run("r1", 0.9, ["a"]); s.add_run("r2", 0.5, ["a", "b"])
>>> s.fact_ids, s.trials(["a", "b"]).tolist()
(('a', 'b'), [2, 1])
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cogstats._lazy import attach

if TYPE_CHECKING:  # the real names, for type checkers and IDEs
    from cogstats.stats.confseq import ConfseqSums
    from cogstats.stats.crossproducts import CrossProducts, CrossProductSums, RegressionStats
    from cogstats.stats.groups import FactArrays, GroupArrays, GroupMoments
    from cogstats.stats.running import StreamingStats

#: public name -> module that defines it (loaded on first use: the ledger imports
#: :mod:`cogstats.stats.groups` without the running statistics, which import the ledger)
_LAZY: dict[str, str] = {
    "ConfseqSums": "cogstats.stats.confseq",
    "CrossProducts": "cogstats.stats.crossproducts",
    "CrossProductSums": "cogstats.stats.crossproducts",
    "RegressionStats": "cogstats.stats.crossproducts",
    "FactArrays": "cogstats.stats.groups",
    "GroupArrays": "cogstats.stats.groups",
    "GroupMoments": "cogstats.stats.groups",
    "StreamingStats": "cogstats.stats.running",
}

__all__ = sorted(_LAZY)

__getattr__, __dir__ = attach("cogstats.stats", _LAZY, globals())
