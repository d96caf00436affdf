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
  batch design's columns;
* :class:`ConfseqSums` -- confseq's running sums.

The per-lesson group arrays of a :class:`~cogstats.ledger.Ledger` (the batch path) are
``cogstats._ledger_stats``'s, which these reproduce.

Examples
--------
>>> from cogstats.stats import StreamingStats
>>> s = StreamingStats()
>>> s.add_run("r1", 0.9, ["a"]); s.add_run("r2", 0.5, ["a", "b"])
>>> s.fact_ids, s.trials(["a", "b"]).tolist()
(('a', 'b'), [2, 1])
"""

from __future__ import annotations

from cogstats.stats.confseq import ConfseqSums
from cogstats.stats.crossproducts import CrossProducts, RegressionStats
from cogstats.stats.running import StreamingStats

__all__ = ["ConfseqSums", "CrossProducts", "RegressionStats", "StreamingStats"]
