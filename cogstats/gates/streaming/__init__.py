"""A gate that decides after every run from running sufficient statistics.

:class:`StreamingGate` runs a gate object (cycgraph's gate, an evidence gate, or a gate of
one's own of the gate protocol) and keeps, instead of a ledger it re-reads, the statistics
the gate's decisions need (a :class:`~cogstats.stats.StreamingStats`), updated run by run:

* per lesson: trials, the sum of scores (accumulated in run order, bit for bit the sum a
  :class:`~cogstats.ledger.Ledger` builds) and the sum of squared scores; over all runs the
  same;
* for regression and identifiability: ``X'X``, ``X'y`` and ``y'y`` over ``[intercept,
  covariate columns, lesson indicators]``, growing as lessons and covariate levels
  appear, and two 64-bit hash sums per lesson of the runs that carry it (equal sums: the
  same inclusion pattern);
* for confidence sequences (``confseq``): the running sums of Waudby-Smith et al.'s
  pseudo-outcomes and arm means, exactly as ``confseq_paths`` accumulates them.

``record(run_id, score, fact_ids, **covariates)`` validates a run as the ledger does
(:func:`cogstats.ledger.validate_record`), updates the statistics (O(lessons in the run),
plus O((lessons in the run + covariate columns)^2) for ``X'X``) and looks
(``gate.judge``): it returns the decisions that changed.  ``report()`` is the full
report, equal to ``gate.evaluate(ledger_so_far)``.  ``save(path)`` /
:meth:`StreamingGate.load` keep the state across restarts (:mod:`._state`);
``ingest(path)`` follows a growing JSON Lines file (:mod:`._ingest`).  See
docs/production.md, "Streaming gates", for the state format, the exactness argument and
the costs.

The gate protocol
-----------------
A gate streams when it has ``judge(stats, statuses=None, candidates=None, *, rng=None)``
(a :class:`~cogstats.gates.GateReport`; or ``judgement(...)``, a :class:`Judgement` that
lets the runner build frames for the changed rows only) and either
``running_statistics()`` (an empty :class:`~cogstats.stats.StreamingStats` configured for
the gate: the built-in gates) or ``statistics(ledger)`` (its own statistics object; one
with ``add_run(run_id, score, fact_ids, covariates)`` is updated run by run, another is
rebuilt from the runs at each look).  A gate may refuse a run before it is recorded with
``check_run(stats, covariates)`` (raise :class:`~cogstats._validation.LedgerError` naming
the field; default: a covariate its cross-products carry must be in every run).
"""

from __future__ import annotations

from cogstats._statelock import StaleLockWarning, StateLockedError
from cogstats.gates._report import Judgement
from cogstats.gates.streaming._ingest import DuplicateRun, IngestResult, SkippedLine
from cogstats.gates.streaming._runner import StreamingGate
from cogstats.gates.streaming._state import STATE_FORMAT, STATE_VERSION
from cogstats.stats import RegressionStats, StreamingStats

__all__ = [
    "STATE_FORMAT",
    "STATE_VERSION",
    "DuplicateRun",
    "IngestResult",
    "Judgement",
    "RegressionStats",
    "SkippedLine",
    "StaleLockWarning",
    "StateLockedError",
    "StreamingGate",
    "StreamingStats",
]
