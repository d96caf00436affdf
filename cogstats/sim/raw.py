"""The raw per-replicate arrays both engines write (one chunk of replicates)."""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from cogstats.sim.draws import LessonTable, pool_width
from cogstats.sim.spec import Scenario

__all__ = ["RawChunk", "empty_raw"]


@dataclass
class RawChunk:
    """What a chunk of simulated replicates produced.

    Run-level arrays are (n, runs); lesson-level (n, L); a run's injected lessons are
    ``inj[rep, run, :ninj[rep, run]]`` (lesson indices, ascending) and its logged
    propensities ``pid/pval[rep, run, :n_logged[rep, run]]``.  Decision runs are 0 when the
    decision never happened.
    """

    score: np.ndarray
    recorded: np.ndarray
    inj: np.ndarray
    ninj: np.ndarray
    pid: np.ndarray
    pval: np.ndarray
    n_logged: np.ndarray
    oracle: np.ndarray
    first_trial: np.ndarray
    trials: np.ndarray
    promote_run: np.ndarray
    evict_run: np.ndarray
    evict_reason: np.ndarray
    retire_run: np.ndarray

    def equals(self, other: RawChunk) -> bool:
        """Exact equality of every array (the engines' cross-check)."""
        return all(
            np.array_equal(getattr(self, f.name), getattr(other, f.name)) for f in fields(self)
        )

    def differences(self, other: RawChunk) -> list[str]:
        """Names of the arrays that differ."""
        return [
            f.name
            for f in fields(self)
            if not np.array_equal(getattr(self, f.name), getattr(other, f.name))
        ]


def empty_raw(s: Scenario, lessons: LessonTable, n: int) -> RawChunk:
    """Zeroed output arrays for ``n`` replicates."""
    runs, n_les, maxf = s.runs, len(lessons.ids), s.retrieval.max_facts
    width = max(1, pool_width(s) + maxf)
    return RawChunk(
        score=np.zeros((n, runs)),
        recorded=np.zeros((n, runs), dtype=np.bool_),
        inj=np.full((n, runs, maxf), -1, dtype=np.int64),
        ninj=np.zeros((n, runs), dtype=np.int64),
        pid=np.full((n, runs, width), -1, dtype=np.int64),
        pval=np.zeros((n, runs, width)),
        n_logged=np.zeros((n, runs), dtype=np.int64),
        oracle=np.zeros((n, runs)),
        first_trial=np.zeros((n, n_les), dtype=np.int64),
        trials=np.zeros((n, n_les), dtype=np.int64),
        promote_run=np.zeros((n, n_les), dtype=np.int64),
        evict_run=np.zeros((n, n_les), dtype=np.int64),
        evict_reason=np.zeros((n, n_les), dtype=np.int64),
        retire_run=np.zeros((n, n_les), dtype=np.int64),
    )
