"""The streaming runner: validate a run, update the statistics, judge, report the diff."""

from __future__ import annotations

import dataclasses
import os
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from cogstats._statelock import StateLock
from cogstats._validation import LedgerError, ParameterError
from cogstats.gates._registry import make_gate, registry_name
from cogstats.gates._report import (
    GateReport,
    Judgement,
    LessonState,
    check_candidates,
    check_statuses,
)
from cogstats.gates.streaming import _ingest, _state
from cogstats.gates.streaming._ingest import IngestResult, Marker, RunSources, SkippedLine
from cogstats.ledger import validate_record, warn_repeated
from cogstats.stats import StreamingStats

if TYPE_CHECKING:
    from cogstats.ledger import Ledger

__all__ = ["StreamingGate"]


class StreamingGate:
    """A gate that decides after every run, from running sufficient statistics.

    Parameters
    ----------
    gate : gate object
        A :class:`~cogstats.gates.CycgraphGate` (both rules, every option), an
        :class:`~cogstats.gates.EvidenceGate` on ``lift``, ``welch``, ``confseq`` or
        ``ols`` (``options={"cov": "nonrobust", "covariates": (...)}``: the classical
        covariance, which ``X'X``, ``X'y`` and ``y'y`` give), or any gate of the gate
        protocol (the package docstring): ``running_statistics()`` (or
        ``statistics(ledger)``) and ``judge(stats, statuses, candidates)``.
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
        self._name = registry_name(gate)
        if getattr(gate, "uses_lessons", False):
            raise ParameterError(
                f"StreamingGate cannot stream gate {self._name!r}: it reads the lesson table "
                "(uses_lessons); it streams cycgraph and evidence gates (lift, welch, ols, "
                "confseq) and gates with statistics and judge"
            )
        # how the gate is run: its running statistics, or the protocol's statistics(ledger)
        # (updated by add_run, else rebuilt at each look). "running": the gate judges the
        # runner's StreamingStats; "own": the gate's own statistics object, updated by its
        # add_run (which may return the updated object) or, without one, rebuilt from the
        # runs at each look (None)
        self._mode = "running"
        self._own: Any = None
        has_judge = callable(getattr(gate, "judge", None))
        if has_judge and callable(getattr(gate, "running_statistics", None)):
            first = gate.running_statistics()
            if isinstance(first, StreamingStats):
                self._mode, self._stats = "running", first
            else:
                self._mode, self._stats, self._own = "own", StreamingStats(), first
        elif has_judge and callable(getattr(gate, "statistics", None)):
            from cogstats.ledger import Ledger

            self._mode, self._stats = "own", StreamingStats()
            self._own = gate.statistics(Ledger())
        else:
            raise ParameterError(
                f"StreamingGate cannot stream gate {self._name!r}: a gate streams through "
                "running_statistics() (or statistics(ledger)) and judge(stats, statuses, "
                "candidates); it streams cycgraph and evidence gates (lift, welch, ols, "
                "confseq) and gates of that protocol (docs/gates.md, 'Writing a gate')"
            )
        self._candidates: tuple[str, ...] | None = None
        self.candidates = candidates  # validated by the setter
        self._statuses: Mapping[str, LessonState] | None = None
        self._last: dict[str, tuple[str, str | None]] = {}
        # the previous look's (candidates, decisions, reasons, the ``_last`` it updated)
        self._prev_look: tuple[tuple[str, ...], np.ndarray, np.ndarray, dict[str, Any]] | None
        self._prev_look = None
        self._markers: dict[str, Marker] = {}
        self._skipped: list[SkippedLine] = []
        self._cache: tuple[Any, Judgement] | None = None
        self._full: tuple[Judgement, GateReport] | None = None  # report() of that judgement
        self._empty: GateReport | None = None
        self._lock: StateLock | None = None  # held from open() until close()
        self._path: Path | None = None  # the state path open() opened
        # the file ingest() read each run from
        self._sources = RunSources(lambda: self._stats.index_of)
        # lesson ids validated so far (raw -> the one stored string): each distinct id is
        # checked once and held once, however many runs list it
        self._ids: dict[str, str] = {}
        self._settled = -1  # the statistics' version when save() last settled the markers

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
        ids = check_candidates(value)
        self._candidates = None if ids is None else tuple(ids)
        self._cache = None

    @property
    def statuses(self) -> Mapping[str, LessonState] | None:
        """The candidates' store statuses passed to ``gate.judge`` (None: all candidates)."""
        return self._statuses

    @statuses.setter
    def statuses(self, value: Mapping[str, LessonState] | None) -> None:
        check_statuses(value)
        self._statuses = None if value is None else dict(value)
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
            run_id, score, facts, covs = validate_record(
                rec, row=row or 1, source=source, fact_ids_required=False, ids=self._ids
            )
        except LedgerError as exc:
            if row is None:  # record(): no row to name
                raise LedgerError(exc.message, field=exc.field, source=source) from None
            raise
        self._stats.check_kinds(covs, row=row, source=source)
        try:
            check = getattr(self._gate, "check_run", None)
            if callable(check):  # the gate's own refusal of a run (before it is recorded)
                check(self._stats, covs)
            else:
                self._stats.check_regression_covariates(covs)
        except LedgerError as exc:
            raise LedgerError(exc.message, row=row, field=exc.field, source=source) from None
        if len(set(facts)) != len(facts):
            warn_repeated([(row or 1, run_id, facts)], source)
        return run_id, score, facts, covs

    def _same(self, i: int, score: float, facts: list[str], covs: dict[str, Any]) -> bool:
        """Whether run ``i`` holds exactly this content (O(lessons + covariates) of the run)."""
        stats = self._stats
        if stats.score(i) != score or stats._facts[i] != facts:
            return False
        stored = {k: v for k, v in stats.run_covariates(i).items() if v is not None}
        if stored.keys() != covs.keys():
            return False
        return all(type(v) is type(covs[k]) and v == covs[k] for k, v in stored.items())

    def _holds(self, run_id: str, score: float, facts: list[str], covs: dict[str, Any]) -> bool:
        """Whether this run is recorded exactly so already (O(lessons + covariates))."""
        i = self._stats.index_of(run_id)
        return i is not None and self._same(i, score, facts, covs)

    def _commit(self, run_id: str, score: float, facts: list[str], covs: dict[str, Any]) -> bool:
        """Record a validated run; False (nothing done) when it is recorded already, same.

        Atomic: the gate's own statistics (its ``add_run``, code outside this module) are
        updated first, so a gate that raises leaves the shared statistics without the run;
        its own object, which may be half-updated, is then dropped and rebuilt from the
        runs at the next look (``gate.statistics(ledger)``).
        """
        stats = self._stats
        i = stats.index_of(run_id)
        replaced = i is not None
        if i is not None and self._same(i, score, facts, covs):
            return False  # catch-up: a run recorded again unchanged costs O(1)
        own = None
        try:
            if self._mode == "own":
                add = getattr(self._own, "add_run", None)
                if not replaced and callable(add):
                    own = add(run_id, score, facts, covs)
                    if own is None:  # updated in place
                        own = self._own
            stats.add_run(run_id, score, facts, covs)
        except BaseException:
            if self._mode == "own":
                self._own = None  # rebuilt from the runs (without this one) at the next look
            self._cache = None
            raise
        if self._mode == "own":
            # an immutable statistics object returns its update; without add_run, or for a
            # replaced run, the statistics are rebuilt from the runs at the next look
            self._own = own
        self._cache = None
        return True

    def record(
        self, run_id: str, score: float, fact_ids: Sequence[str] = (), **covariates: Any
    ) -> GateReport:
        """Record one run and look: the decisions that changed.

        Recording a ``run_id`` again replaces that run in place (its position in run
        order stays), as :meth:`Ledger.record <cogstats.ledger.Ledger.record>` does: its
        old contribution is subtracted, its covariates are replaced (columns it no
        longer has become null for it), and the look judges the ledger with the new run.
        Recording a run exactly as it is recorded already (the same score, lesson ids
        and covariates, of the same types) changes nothing and costs O(1) (no look is
        judged again): restart catch-up by re-recording runs costs the new runs only.

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
    def _judge(self, candidates: Sequence[str] | None) -> Any:
        gate, stats = self._gate, self._stats
        if self._mode == "own":
            if self._own is None:  # statistics without add_run, or a run replaced
                self._own = gate.statistics(stats.to_ledger())
            return gate.judge(self._own, self._statuses, candidates)
        judgement = getattr(gate, "judgement", None)
        if callable(judgement):
            return judgement(stats, self._statuses, candidates)
        return gate.judge(stats, self._statuses, candidates)

    def _judgement(self, candidates: Sequence[str] | None) -> Judgement:
        key = (
            self._stats.version,
            None if candidates is None else tuple(candidates),
            id(self._statuses),
        )
        if self._cache is not None and self._cache[0] == key:
            return self._cache[1]
        out = self._judge(candidates)
        if isinstance(out, GateReport):
            out = Judgement.from_report(out)
        elif not isinstance(out, Judgement):
            raise ParameterError(
                f"a gate's judge() must return a GateReport or Judgement; got {type(out).__name__}"
            )
        self._cache = (key, out)
        return out

    def _look(self) -> GateReport:
        j = self._judgement(self._candidates)
        last = self._last
        prev = self._prev_look
        changed: list[int]
        if prev is not None and prev[3] is last and prev[0] == j.fact_ids:
            # the same candidates as the previous look, whose decisions ``last`` holds:
            # compare the arrays (a C loop) and update only the rows that changed
            rows = np.flatnonzero((j.decision != prev[1]) | (j.reason != prev[2]))
            changed = rows.tolist()
            ids = j.fact_ids
            new = zip(j.decision[rows].tolist(), j.reason[rows].tolist(), strict=True)
            for k, now in zip(changed, new, strict=True):
                last[ids[k]] = now
        else:
            changed = []
            held = ("hold", None)
            for k, now in enumerate(zip(j.decision.tolist(), j.reason.tolist(), strict=True)):
                f = j.fact_ids[k]
                if last.get(f, held) != now:
                    changed.append(k)
                    last[f] = now
        self._prev_look = (j.fact_ids, j.decision, j.reason, last)
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
        check_candidates(candidates)
        cands = self._candidates if candidates is None else tuple(candidates)
        j = self._judgement(cands)
        if self._full is None or self._full[0] is not j:
            self._full = (j, j.report())
        return self._full[1]

    # ------------------------------------------------------------------ persistence
    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        gate: Any,
        candidates: Sequence[str] | None = None,
        migrate: bool = False,
        allow_import: Sequence[str] | None = None,
    ) -> StreamingGate:
        """Open the state at ``path`` for writing: load it (else start empty), lock it.

        The exclusive lock (``path.lock``, naming this process's pid and host; see
        :mod:`cogstats._statelock`) is held until :meth:`close` (or the end of the
        ``with`` block), so a second writer of ``path`` is refused while this one lives;
        the lock of a dead process of this host is taken over with a
        :class:`~cogstats._statelock.StaleLockWarning`, another host's never.  Temporary
        files of saves killed mid-write (``path.*.tmp``) are removed.  :meth:`save`
        without a path saves to ``path``.

        Parameters
        ----------
        path : str or path
            The state file (need not exist yet).
        gate : gate object
            The gate: of a new state, or compared with the saved one (see :meth:`load`).
        candidates : sequence of str, optional
            Of a new state (a loaded state keeps its own).
        migrate, allow_import
            As :meth:`load`.

        Raises
        ------
        StateLockedError
            When another live writer holds ``path`` (naming its pid and host).
        ParameterError
            As :meth:`load`.

        Examples
        --------
        >>> import tempfile, pathlib
        >>> from cogstats.gates import CycgraphGate
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "gate.npz"
        >>> with StreamingGate.open(path, gate=CycgraphGate()) as sg:
        ...     _ = sg.record("r1", 0.5, ["a"])
        ...     _ = sg.save()
        >>> with StreamingGate.open(path, gate=CycgraphGate()) as sg:
        ...     len(sg)
        1
        """
        path = Path(path)
        lock = StateLock(path).acquire()
        try:
            for tmp in _state.stray_temporaries(path):  # no live writer: the lock is ours
                tmp.unlink(missing_ok=True)
            if path.exists():
                out = cls.load(path, gate=gate, migrate=migrate, allow_import=allow_import)
            else:
                out = cls(gate, candidates=candidates)
        except BaseException:
            lock.release()
            raise
        out._lock, out._path = lock, path
        return out

    def close(self) -> None:
        """Release the lock :meth:`open` took (nothing is saved; nothing if not open)."""
        lock, self._lock = self._lock, None
        if lock is not None:
            lock.release()

    def __enter__(self) -> StreamingGate:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def save(self, path: str | os.PathLike[str] | None = None) -> Path:
        """Write the state to one file (written to a temporary file, then renamed).

        The file is a zip archive (numpy ``.npz``) holding ``manifest.json`` (format,
        version, the gate's registry name and options, candidates, the previous look's
        decisions, ingest markers and skipped lines, the checksums of every member),
        ``runs.json`` (run ids, listed lesson ids, covariate columns) and the statistics
        as arrays (``scores``, ``lesson_*``, ``xtx``, ...).  The same state saves to the
        same bytes.  See docs/production.md, "Streaming gates".

        First, when runs were recorded since the last save, the marker of each file
        :meth:`ingest` read before moves past the lines whose runs the state already
        holds exactly as written (a service that appends each run to the file and hands
        it to :meth:`record`): a restart's ``ingest`` then reads only the runs the state
        lacks.  Reading stops at the first other line (left to ``ingest``); a file that
        is gone or replaced keeps its marker.

        Parameters
        ----------
        path : str or path, optional
            Default: the path :meth:`open` opened.  A path another live writer holds
            open is refused; else the save holds the path's lock while it writes.

        Raises
        ------
        StateLockedError
            When another live writer holds ``path`` (naming its pid and host).
        ParameterError
            When the gate's options are not JSON (numbers, strings, booleans, null,
            lists, tuples, mappings with string keys), or no path is given to a gate
            not opened by :meth:`open`.

        Examples
        --------
        >>> import tempfile, pathlib
        >>> from cogstats.gates import CycgraphGate
        >>> sg = StreamingGate(CycgraphGate(min_trials=1))
        >>> _ = sg.record("r1", 0.9, ["a"]); _ = sg.record("r2", 0.5, [])
        >>> path = sg.save(pathlib.Path(tempfile.mkdtemp()) / "gate.npz")
        >>> back = StreamingGate.load(path, gate=CycgraphGate(min_trials=1))
        >>> back.report().to_frame().equals(sg.report().to_frame()), len(back)
        (True, 2)
        """
        if path is None:
            if self._path is None:
                raise ParameterError(
                    "save() needs a path: this StreamingGate was not opened with "
                    "StreamingGate.open(path, gate=...); got path=None"
                )
            path = self._path
        path = Path(path)
        if self._markers and self._settled != self._stats.version:
            _ingest.settle(self)  # markers past the lines of runs recorded live
            self._settled = self._stats.version
        manifest, runs, arrays = self._state()
        mine = self._path is not None and self._path.resolve() == path.resolve()
        if self._lock is not None and self._lock.held and mine:
            return _state.write_state(path, manifest, runs, arrays)
        with StateLock(path):  # refused if another live writer holds it
            return _state.write_state(path, manifest, runs, arrays)

    def _state(self) -> tuple[dict[str, Any], dict[str, Any], dict[str, np.ndarray]]:
        stats = self._stats
        info, arrays = stats.to_arrays()
        manifest: dict[str, Any] = {
            "format": _state.STATE_FORMAT,
            "version": _state.STATE_VERSION,
            "cogstats_version": _state.version(),
            "gate": {
                "name": self._name,
                "options": _state.encode(_state.policy(self._gate), "gate options"),
            },
            "candidates": None if self._candidates is None else list(self._candidates),
            "runs": info["runs"],
            "lessons": info["lessons"],
            "last_decisions": {f: list(v) for f, v in self._last.items()},
            "markers": {k: dataclasses.asdict(v) for k, v in self._markers.items()},
            "skipped": [dataclasses.asdict(s) for s in self._skipped],
            "totals": info["totals"],
            "kinds": info["kinds"],
        }
        if "regression" in info:
            manifest["regression"] = info["regression"]
        runs = {k: info[k] for k in ("run_ids", "fact_ids", "covariates", "lesson_ids")}
        sources = self._sources.saved(info["run_ids"])
        if sources is not None:  # which ingested file each run came from (duplicate reports)
            runs["sources"] = sources
        return manifest, runs, arrays

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        *,
        gate: Any = None,
        migrate: bool = False,
        allow_import: Sequence[str] | None = None,
    ) -> StreamingGate:
        """Rebuild a streaming gate from :meth:`save`'s file (no history is re-read).

        The file is checked before anything is used: its checksums (every member), then
        its invariants (counts, shapes, scores in [0, 1], each lesson's trials and sums
        recomputed from the stored runs; :func:`._state.check_invariants`).  The gate is
        rebuilt from its registry name and options (``make_gate``), the statistics are
        read back as saved, so reports are identical to the saved gate's (and saving
        again gives the same bytes).  A gate saved by import path (``"module:Class"``)
        imports its module only when ``allow_import`` names it (or ``--allow-import``;
        see :mod:`cogstats._imports`).  Loading takes no lock (use :meth:`open` to write).

        Parameters
        ----------
        path : str or path
            The state file.
        gate : gate object, optional
            The gate the caller configures now: its registry name and options must equal
            the saved gate's (else a ParameterError saying what differs).  None: the
            saved gate, as saved.
        migrate : bool
            With ``gate``: on a mismatch keep the saved runs, markers and skipped lines
            and use ``gate`` (its statistics rebuilt from the runs, O(runs)).
        allow_import : sequence of str, optional
            Modules a ``"module:Class"`` gate named by the file may import.

        Raises
        ------
        ParameterError
            For a file that is not a streaming-gate state, of another version, damaged or
            inconsistent (naming what is wrong), or saved with another gate configuration
            than ``gate`` (without ``migrate=True``).

        Examples
        --------
        >>> import tempfile, pathlib
        >>> from cogstats.gates import EvidenceGate
        >>> sg = StreamingGate(EvidenceGate(method="welch"))
        >>> _ = sg.record("r1", 0.9, ["a"])
        >>> path = sg.save(pathlib.Path(tempfile.mkdtemp()) / "s.npz")
        >>> StreamingGate.load(path).gate == sg.gate
        True
        >>> new = EvidenceGate(method="welch", alpha=0.01)
        >>> StreamingGate.load(path, gate=new, migrate=True).gate == new
        True
        """
        path = Path(path)
        manifest, runs, arrays = _state.read_state(path)
        _state.check_invariants(path, manifest, runs, arrays)
        try:
            return cls._from_state(path, manifest, runs, arrays, gate, migrate, allow_import)
        except ParameterError:
            raise
        except Exception as exc:  # a damaged state the checks above let through
            raise ParameterError(
                f"{path}: damaged state file ({type(exc).__name__}: {exc})"
            ) from None

    @classmethod
    def _from_state(
        cls,
        path: Path,
        manifest: dict[str, Any],
        runs: dict[str, Any],
        arrays: dict[str, np.ndarray],
        gate: Any,
        migrate: bool,
        allow_import: Sequence[str] | None,
    ) -> StreamingGate:
        try:
            saved_name, note = _state.renamed_gate(
                manifest["gate"]["name"],
                manifest["gate"]["options"],
                manifest.get("cogstats_version"),
            )
        except ParameterError as exc:
            raise ParameterError(f"{path}: {exc}") from None
        if note is not None:
            warnings.warn(f"{path}: {note}", UserWarning, stacklevel=3)
        saved_options = manifest["gate"]["options"]
        if gate is not None:
            name = registry_name(gate)
            options = _state.encode(_state.policy(gate), "gate options")
            if (name, options) != (saved_name, saved_options):
                if not migrate:
                    raise ParameterError(
                        f"{path} was saved with gate {saved_name!r} "
                        f"{_differences(saved_options, options)}; the gate given is "
                        f"{name!r}. To keep the saved runs and markers and use the new gate "
                        "(its statistics rebuilt from the runs), load with migrate=True; to "
                        "go on with the saved gate, pass gate=None"
                    )
                old = cls.load(path, allow_import=allow_import)
                out = cls(gate, candidates=manifest["candidates"])
                for run in old._stats.runs():
                    out._commit(*run)
                out._last, out._markers = old._last, old._markers
                out._skipped = old._skipped
                out._sources.take(old._sources)
                return out
        from cogstats._imports import from_data

        # a "module:Class" gate named by the file imports only an allowed module
        with from_data(f"the state file {path}", allow_import):
            made = make_gate(saved_name, **_state.decode(saved_options))
        out = cls(made, candidates=manifest["candidates"])
        out._restore(manifest, runs, arrays)
        return out

    def _restore(
        self, manifest: Mapping[str, Any], runs: Mapping[str, Any], arrays: Mapping[str, np.ndarray]
    ) -> None:
        keeps_confseq = self._stats.confseq is not None
        arrays = _state.upgrade_arrays(manifest, arrays, confseq=keeps_confseq)
        stats = StreamingStats.from_arrays({**runs, **manifest, "confseq": keeps_confseq}, arrays)
        self._stats = stats
        if self._mode == "own":  # the gate's own statistics: rebuilt from the runs
            self._own = None
        self._last = {f: (v[0], v[1]) for f, v in manifest["last_decisions"].items()}
        self._markers = {k: Marker(**v) for k, v in manifest["markers"].items()}
        self._skipped = [SkippedLine(**s) for s in manifest["skipped"]]
        sources = runs.get("sources")
        self._sources = RunSources(lambda: self._stats.index_of)
        if isinstance(sources, dict):
            self._sources.restore(sources)
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
            Any failure of one line counts (an error raised while validating it, the
            gate's ``check_run`` included, becomes a LedgerError naming the line).

        Runs of the file recorded live by :meth:`record` move the marker too, at the next
        :meth:`save` (see there), so a restart from the saved state does not read them
        again.  A line whose recording fails (a gate's own ``add_run`` that raises
        included) records nothing: the shared statistics and the gate's own stay without
        it (the latter rebuilt from the runs), and ``on_error`` decides as for a bad line.

        A run id that an earlier *other* ingested file held is reported
        (:attr:`IngestResult.duplicates`, and a ``LedgerWarning`` naming both files); the
        line's run replaces the earlier one, as recording it again does (an identical
        run changes nothing).

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
        return _ingest.ingest(self, path, on_error)


# ---------------------------------------------------------------------- helpers
def _differences(saved: Mapping[str, Any], given: Mapping[str, Any]) -> str:
    """Name the options that differ between a saved gate and the one given."""
    keys = [k for k in dict.fromkeys([*saved, *given]) if saved.get(k) != given.get(k)]
    if not keys:
        return "(the same options)"
    shown = ", ".join(f"{k}: saved {saved.get(k)!r}, given {given.get(k)!r}" for k in keys[:5])
    return f"whose options differ ({shown})"
