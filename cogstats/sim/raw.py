"""The raw per-replicate arrays both engines write (one chunk of replicates)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields

import numpy as np

from cogstats._codes import (
    CANDIDATE,
    EVICTED,
    REASON_BY_CODE,
    REASON_CODE_RETIRE,
    RETIRED,
    STATUS_NAMES,
    VERIFIED,
)
from cogstats.sim.draws import LessonTable, pool_width
from cogstats.sim.spec import Scenario

__all__ = ["Event", "RawChunk", "empty_raw"]

#: One status change: (chunk replicate, run, lesson index, from code, to code, reason,
#: why); the codes are positions in :data:`cogstats._codes.STATUS_NAMES`.
Event = tuple[int, int, int, int, int, "str | None", "str | None"]

_C, _V, _E, _R = (STATUS_NAMES.index(x) for x in (CANDIDATE, VERIFIED, EVICTED, RETIRED))


@dataclass
class RawChunk:
    """What a chunk of simulated replicates produced.

    Run-level arrays are (n, runs); lesson-level (n, L); a run's injected lessons are
    ``inj[rep, run, :ninj[rep, run]]`` (lesson indices, ascending) and its logged
    propensities ``pid/pval[rep, run, :n_logged[rep, run]]``.  Decision runs are 0 when the
    decision never happened.

    ``events`` are the status changes in the order they happened (:data:`Event`), as the
    reference engine writes them; None (the compiled engine) means they follow from the
    promote / evict / retire arrays (:meth:`status_events`).
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
    events: list[Event] | None = field(default=None)

    def status_events(self) -> list[Event]:
        """Return the status changes, sorted by (replicate, run, lesson).

        Written by the reference engine; derived from the promote / evict / retire
        arrays when absent (the compiled engine, whose gates make only those changes:
        a candidate is promoted, evicted or retired, a verified lesson evicted or
        retired).  A derived event's ``why`` is None (the compiled engine does not record
        it) and a retirement's reason is the audit's ``audit:low_win_rate``.
        """
        if self.events is not None:
            return sorted(self.events, key=lambda ev: (ev[0], ev[1], ev[2]))
        parts = []
        for arr, to in ((self.promote_run, _V), (self.evict_run, _E), (self.retire_run, _R)):
            r_, j_ = np.nonzero(arr)
            frm_ = (
                np.where(self.promote_run[r_, j_] > 0, _V, _C) if to != _V else np.full(r_.size, _C)
            )
            # reason codes: 0 none (promote), 1-2 the eviction's, -1 a retirement
            code_ = (
                self.evict_reason[r_, j_] if to == _E else np.full(r_.size, 0 if to == _V else -1)
            )
            parts.append((r_, arr[r_, j_], j_, frm_, np.full(r_.size, to), code_))
        rep, run, j, frm, to_code, code = (
            np.concatenate([p[k] for p in parts]).astype(np.int64) for k in range(6)
        )
        order = np.lexsort((j, run, rep))
        reasons = [
            None if c == 0 else REASON_BY_CODE[REASON_CODE_RETIRE if c < 0 else c]
            for c in code[order].tolist()
        ]
        return list(
            zip(
                rep[order].tolist(),
                run[order].tolist(),
                j[order].tolist(),
                frm[order].tolist(),
                to_code[order].tolist(),
                reasons,
                [None] * len(reasons),
                strict=True,
            )
        )

    def _arrays(self) -> list[str]:
        return [f.name for f in fields(self) if f.name != "events"]

    def equals(self, other: RawChunk) -> bool:
        """Exact equality of every array and of the status events (``why`` aside)."""
        return not self.differences(other)

    def differences(self, other: RawChunk) -> list[str]:
        """Names of the arrays that differ (``events``: the status events, ``why`` aside).

        The compiled engine records no ``why``; the rest of each event must agree.
        """
        out = [
            name
            for name in self._arrays()
            if not np.array_equal(getattr(self, name), getattr(other, name))
        ]
        mine = [ev[:6] for ev in self.status_events()]
        theirs = [ev[:6] for ev in other.status_events()]
        if mine != theirs:
            out.append("events")
        return out


def _logs_suspects(s: Scenario) -> bool:
    """Return whether runs may log suspended lessons' propensities.

    So they may with a gate that suspends and a retrieval that re-tests: the propensity
    log then has room for every lesson.
    """
    if not getattr(s.retrieval.build(), "retests_suspended", False):
        return False
    return bool(getattr(s.gate.build(), "suspends", False))


def empty_raw(s: Scenario, lessons: LessonTable, n: int) -> RawChunk:
    """Zeroed output arrays for ``n`` replicates.

    The propensity log (``pid``, ``pval``) has a place per pool position and prompt
    place, and one per lesson more when suspended lessons can be re-tested (both engines
    then log the eligible suspects).
    """
    runs, n_les, maxf = s.runs, len(lessons.ids), s.retrieval.max_facts
    width = max(1, pool_width(s) + maxf)
    if _logs_suspects(s):  # a re-test logs the eligible suspects beside the prompt
        width += n_les
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
