"""The lesson store a live agent calls: ``select`` before a run, ``record`` after it.

A store is a folder:

- ``store.json``: the settings it was created with (:class:`StoreSettings`);
- ``journal.jsonl``: every acknowledged operation, appended and fsynced before the call
  returns (:mod:`cogstats.store.journal`);
- ``snapshot.json`` and ``snapshot-<runs>.npz``: every ``snapshot_every`` runs, the
  lifecycle (statuses, events, ``gate_t``) and the gate's statistics with the runs (a
  :class:`~cogstats.gates.StreamingGate` state file), with the journal offset they cover;
- ``store.lock``: the writer's lock (:mod:`cogstats._statelock`), held from
  :meth:`LessonStore.open` to :meth:`LessonStore.close`.

Opening reads the latest snapshot and replays the journal after it (recovery = snapshot +
journal tail), so a crash at any instruction loses no acknowledged operation and counts
none twice: an operation is acknowledged once its journal line is on disk, and a run id
recorded again with the same content is a no-op.  See docs/production.md, "A lesson
store in a live agent".
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from cogstats._statelock import StateLock, StateWriteError
from cogstats._validation import CogstatsError, LedgerError, ParameterError, check_int
from cogstats.ledger import load_json
from cogstats.store import journal as J
from cogstats.store.core import StoreCore, UnknownLessonError, run_content
from cogstats.store.lifecycle import Cadence, Change
from cogstats.store.settings import StoreSettings, StoreSettingsError

__all__ = ["Durability", "LessonStore", "ReadOnlyStoreError", "StoreWarning"]

SETTINGS_FILE = "store.json"
JOURNAL_FILE = "journal.jsonl"
SNAPSHOT_FILE = "snapshot.json"
SNAPSHOT_FORMAT = "cogstats.lesson-store.snapshot"
_SNAPSHOT_NPZ = re.compile(r"^snapshot-(\d{12})\.npz$")
# what a snapshot's StreamingGate save may leave when killed: its temporary and its lock
_SNAPSHOT_LEFTOVER = re.compile(r"^snapshot-\d{12}\.npz(\.[a-z0-9_]{8}\.tmp|\.lock)$")


#: the statuses a lesson may be added with (a lesson a store held before this one)
ADD_STATUSES = ("candidate", "verified", "admitted")


class ReadOnlyStoreError(CogstatsError, ValueError):
    """A change asked of a store opened with ``read_only=True``."""


class StoreWarning(UserWarning):
    """Something the store repaired or could not do, without losing an acknowledged run."""


@dataclass(frozen=True)
class Durability:
    """How often the store fsyncs its journal and writes a snapshot.

    Parameters
    ----------
    sync_every : int
        ``fsync`` the journal after every ``sync_every``-th operation (default 1: every
        ``record`` and ``add`` is on disk when it returns).  More batches the fsyncs: a
        crash of the machine (not of the process) may lose up to ``sync_every - 1``
        acknowledged operations, never half of one.
    snapshot_every : int
        Write a snapshot every ``snapshot_every`` runs (default 1000): a restart replays
        at most that many runs.

    Examples
    --------
    >>> Durability(sync_every=8).sync_every
    8
    """

    sync_every: int = 1
    snapshot_every: int = 1000

    def __post_init__(self) -> None:
        """Validate the fields."""
        object.__setattr__(self, "sync_every", check_int("sync_every", self.sync_every, minimum=1))
        object.__setattr__(
            self, "snapshot_every", check_int("snapshot_every", self.snapshot_every, minimum=1)
        )


def _covariates(rec: Mapping[str, Any]) -> dict[str, Any]:
    """Return a ledger record's covariates (its columns other than the run's fields)."""
    return {
        k: v for k, v in rec.items() if k not in ("run_id", "score", "fact_ids") and v is not None
    }


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _read_json(path: Path) -> Any:
    fd = J.open_regular(path, os.O_RDONLY)
    with os.fdopen(fd, "rb") as fh:
        raw = fh.read()
    try:
        return load_json(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise J.StoreCorruptError(f"{path}: not JSON ({exc})") from None


class LessonStore:
    """The lessons' statuses, the ledger of runs and the gate's statistics, on disk.

    Open one with :meth:`open`; then, per run, :meth:`select` the lessons for the prompt
    and :meth:`record` the run's score.  :meth:`lessons`, :meth:`events` and
    :meth:`ledger` show what the store holds.  The lifecycle (which lessons are judged,
    how each outcome moves a status) is :mod:`cogstats.store.lifecycle`'s, the same as
    the simulator's reference engine.

    Examples
    --------
    >>> import tempfile
    >>> path = tempfile.mkdtemp()
    >>> with LessonStore.open(path, preset="recommended", max_facts=4,
    ...                       candidate_slots=2) as store:
    ...     _ = store.add("cite-sources")
    ...     sel = store.select(context={"family": "web"}, rng=1)
    ...     changes = store.record("run-1", 0.7, sel.fact_ids,
    ...                            covariates={"difficulty_proxy": 0.3})
    ...     sel.fact_ids, changes
    (('cite-sources',), [])
    >>> with LessonStore.open(path, read_only=True) as reader:
    ...     reader.lessons().select("fact_id", "status", "trials").rows()
    [('cite-sources', 'candidate', 1)]
    """

    def __init__(self) -> None:  # use LessonStore.open
        self.path = Path()
        self.settings: StoreSettings
        self.read_only = True
        self.durability = Durability()
        self._core: StoreCore
        self._journal: J.Journal | None = None
        self._lock: StateLock | None = None
        self._snapshot_runs = 0  # when the next snapshot is due (snapshot_every after it)
        self._snapshot_at = 0  # the runs the latest snapshot written holds
        self._rng = np.random.default_rng()
        self._closed = False

    # ------------------------------------------------------------------ opening
    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        preset: str | None = None,
        gate: Any = None,
        policy: Any = None,
        max_facts: int | None = None,
        candidate_slots: int | None = None,
        cadence: Cadence | None = None,
        unknown_lessons: str | None = None,
        read_only: bool = False,
        migrate: bool = False,
        seed: int | None = None,
        durability: Durability | None = None,
    ) -> LessonStore:
        """Create or reopen the store in folder ``path``.

        Parameters
        ----------
        path : str or path
            The store's folder (created when missing, for a writer).
        preset : str, optional
            A preset's name (``"recommended"``): its retrieval policy and gate.
        gate, policy : name or object, optional
            Instead of a preset: any registered gate and policy (names, or objects).
        max_facts, candidate_slots : int, optional
            The policy's prompt caps.
        cadence : Cadence, optional
            When the gate looks (``every``, ``from_run``) and whether it re-checks
            verified lessons (``recheck_verified``); default every run, none re-checked.
        unknown_lessons : {"add", "refuse"}, optional
            What :meth:`record` does with a lesson id the store does not hold: add it as
            a candidate (the default), or refuse the run (:class:`UnknownLessonError`).
        read_only : bool
            Open for reading: no lock, no settings needed (they are read from the store),
            beside a live writer; every change is refused.
        migrate : bool
            When the settings given differ from the stored ones: keep the runs and the
            lessons and replay the lifecycle under the new settings (else refused).
        seed : int, optional
            Seeds :meth:`select`'s draws when it is given no ``rng``.
        durability : Durability, optional
            How often to fsync and snapshot (not a stored setting).

        Raises
        ------
        StoreSettingsError
            When a reopened store's stored settings differ from the ones given (naming
            each difference), or a new store is given none.
        StateLockedError
            When another live writer holds the store (naming its pid and host).
        StateWriteError
            When the folder cannot be written (read-only, full), naming the path.
        StoreCorruptError
            When a file is damaged beyond a torn last journal line.
        """
        folder = Path(path)
        given_any = any(
            v is not None
            for v in (preset, gate, policy, max_facts, candidate_slots, cadence, unknown_lessons)
        )
        self = cls()
        self.path = folder
        self.read_only = bool(read_only)
        self.durability = durability or Durability()
        self._rng = np.random.default_rng(seed)
        given: StoreSettings | None = None
        if given_any:
            cad = cadence or Cadence()
            if not isinstance(cad, Cadence):
                raise ParameterError(f"cadence must be a Cadence or None; got {cadence!r}")
            given = StoreSettings.build(
                preset=preset,
                gate=gate,
                policy=policy,
                max_facts=max_facts,
                candidate_slots=candidate_slots,
                every=cad.every,
                from_run=cad.from_run,
                recheck_verified=cad.recheck_verified,
                unknown_lessons=unknown_lessons or "add",
            )
        if self.read_only:
            self._open_reader(given)
        else:
            self._open_writer(given, migrate)
        return self

    def _open_reader(self, given: StoreSettings | None) -> None:
        if not (self.path / SETTINGS_FILE).exists():
            raise ParameterError(f"{self.path} is not a lesson store (no {SETTINGS_FILE})")
        for attempt in range(20):  # a writer may replace the snapshot while it is read
            try:
                self._load(given, migrate=False, writer=False)
                return
            except FileNotFoundError:
                if attempt == 19:
                    raise

    def _open_writer(self, given: StoreSettings | None, migrate: bool) -> None:
        folder = self.path
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StateWriteError(
                exc.errno,
                f"{folder}: cannot create the store's folder ({exc.strerror})",
                str(folder),
            ) from None
        lock = StateLock(folder / "store").acquire()
        try:
            for leftover in self._leftovers():
                leftover.unlink(missing_ok=True)
            if not (folder / SETTINGS_FILE).exists():
                if given is None:
                    raise StoreSettingsError(
                        f"{folder} holds no lesson store yet; a new store needs preset= "
                        "(e.g. 'recommended') or gate= and policy="
                    )
                J.atomic_write(folder / SETTINGS_FILE, given.to_json())
            self._load(given, migrate=migrate, writer=True)
        except BaseException:
            if self._journal is not None:
                self._journal.close()
                self._journal = None
            lock.release()
            raise
        self._lock = lock

    def _leftovers(self) -> list[Path]:
        """Return the store's own temporary files (and a killed snapshot's) in its folder."""
        out = list(J.stray_temporaries(self.path))
        for name in sorted(os.listdir(self.path)):
            if _SNAPSHOT_LEFTOVER.match(name):
                out.append(self.path / name)
        return out

    def _load(self, given: StoreSettings | None, *, migrate: bool, writer: bool) -> None:
        """Read the settings, the latest snapshot and the journal after it."""
        folder = self.path
        stored = StoreSettings.from_dict(
            _read_json(folder / SETTINGS_FILE), str(folder / SETTINGS_FILE)
        )
        snap = None
        if (folder / SNAPSHOT_FILE).exists():
            snap = _read_json(folder / SNAPSHOT_FILE)
            if not isinstance(snap, dict) or snap.get("format") != SNAPSHOT_FORMAT:
                raise J.StoreCorruptError(f"{folder / SNAPSHOT_FILE} is not a store snapshot")
            # the snapshot carries the settings it was made with (a migration commits there)
            stored = StoreSettings.from_dict(snap["settings"], str(folder / SNAPSHOT_FILE))
        if given is not None:
            diff = stored.differences(given)
            if diff and not migrate:
                raise StoreSettingsError(
                    f"{folder} was created with other settings: "
                    + "; ".join(diff)
                    + ". Open it with the stored settings (or none: they are read from the "
                    "store), or pass migrate=True to replay its runs under the new ones"
                )
        self.settings = stored
        policy, gate = stored.parts()
        core = StoreCore(gate, policy, stored.cadence)
        start = 0
        if snap is not None:
            core, start = self._from_snapshot(snap, core)
        read = J.read_journal(folder / JOURNAL_FILE, start)
        ops = read.lines
        end = read.end
        self._core = core
        for k, line in enumerate(ops):
            try:
                self._replay(line.op)
            except (LedgerError, ParameterError) as exc:
                if k != len(ops) - 1:
                    raise J.StoreCorruptError(
                        f"{folder / JOURNAL_FILE}: line at byte {line.offset} cannot be "
                        f"replayed ({exc}) and is followed by other lines"
                    ) from None
                # the last line of a writer killed before it could cut a refused run back
                end = line.offset
                if writer:
                    warnings.warn(
                        StoreWarning(
                            f"{folder / JOURNAL_FILE}: the last line was never acknowledged "
                            f"({exc}); it is cut off"
                        ),
                        stacklevel=4,
                    )
        self._snapshot_at = 0 if snap is None else int(snap["runs"])
        if writer:
            if read.torn:
                warnings.warn(
                    StoreWarning(
                        f"{folder / JOURNAL_FILE}: a torn last line ({read.torn} bytes, a "
                        "write a crash interrupted, never acknowledged) is cut off"
                    ),
                    stacklevel=4,
                )
            self._journal = J.Journal(
                folder / JOURNAL_FILE, end, sync_every=self.durability.sync_every
            )
            self._snapshot_runs = core.runs if snap is None else int(snap["runs"])
            if (
                snap is not None
                and stored.to_dict()
                != StoreSettings.from_dict(
                    _read_json(folder / SETTINGS_FILE), SETTINGS_FILE
                ).to_dict()
            ):  # a migration interrupted after its snapshot: finish it
                J.atomic_write(folder / SETTINGS_FILE, stored.to_json())
            if given is not None and migrate and stored.differences(given):
                self._migrate(given)

    def _from_snapshot(self, snap: Mapping[str, Any], core: StoreCore) -> tuple[StoreCore, int]:
        folder = self.path
        npz = folder / str(snap["gate_state"])
        if _SNAPSHOT_NPZ.match(npz.name) is None:
            raise J.StoreCorruptError(f"{folder / SNAPSHOT_FILE}: bad gate_state {npz.name!r}")
        if snap.get("engine", core.engine.kind) != core.engine.kind:
            raise J.StoreCorruptError(
                f"{folder / SNAPSHOT_FILE}: statistics of a {snap.get('engine')!r} engine; "
                f"this gate keeps a {core.engine.kind!r} one"
            )
        if _sha256(npz) != snap["gate_sha256"]:  # FileNotFoundError: replaced meanwhile
            raise J.StoreCorruptError(
                f"{npz}: its checksum differs from the one {SNAPSHOT_FILE} recorded"
            )
        core.engine.load(npz)
        core.lifecycle.restore(snap["lifecycle"])
        if core.runs != int(snap["runs"]):
            raise J.StoreCorruptError(
                f"{folder / SNAPSHOT_FILE}: {snap['runs']} runs recorded, {core.runs} in {npz}"
            )
        return core, int(snap["journal_end"])

    def _replay(self, op: Mapping[str, Any]) -> None:
        core = self._core
        kind = op.get("op")
        if kind == "add":
            status = str(op.get("status", "candidate"))
            if status not in ADD_STATUSES:
                raise J.StoreCorruptError(f"{self.path / JOURNAL_FILE}: bad status {status!r}")
            core.add(
                str(op["id"]),
                created_at=op.get("created_at"),
                family=op.get("family"),
                status=status,
            )
        elif kind == "run":
            if int(op["run"]) != core.next_run:
                raise J.StoreCorruptError(
                    f"{self.path / JOURNAL_FILE}: run {op['run']} where run {core.next_run} "
                    "was expected"
                )
            core.apply_run(
                op["run_id"],
                op["score"],
                op["fact_ids"],
                op["covariates"],
                look=bool(op.get("look", True)),
            )
        else:
            raise J.StoreCorruptError(f"{self.path / JOURNAL_FILE}: unknown operation {kind!r}")

    # ------------------------------------------------------------------ views
    @property
    def runs(self) -> int:
        """The runs recorded."""
        return self._core.runs

    @property
    def snapshot_runs(self) -> int:
        """The runs the latest snapshot holds (0: none); a restart replays the rest."""
        return self._snapshot_at

    def __len__(self) -> int:
        """Return the number of runs recorded."""
        return self._core.runs

    def __repr__(self) -> str:
        """Short text form."""
        mode = "read-only" if self.read_only else "writer"
        return (
            f"LessonStore({str(self.path)!r}, {mode}, runs={self.runs}, "
            f"lessons={len(self._core.lifecycle)}, gate={self.settings.gate['name']!r})"
        )

    @property
    def policy(self) -> Any:
        """The retrieval policy."""
        return self._core.policy

    @property
    def gate(self) -> Any:
        """The gate."""
        return self._core.gate

    def lessons(self) -> pl.DataFrame:
        """Return every lesson and what the store knows of it (a polars frame).

        Columns ``fact_id, status, since, trials, estimate, std_error, t, why, reason,
        created_at, family``: the numbers are those of the gate's last look at it.
        """
        return self._core.lessons()

    def events(self) -> pl.DataFrame:
        """Return the status events: ``run, run_id, fact_id, from, to, decision, reason, why``."""
        return self._core.events()

    def ledger(self) -> Any:
        """Return the runs as a :class:`~cogstats.ledger.Ledger` (every report, estimator)."""
        return self._core.to_ledger()

    def table(self) -> pl.DataFrame:
        """Return the lesson table the policy is shown now (``gate_t``, ``trials``, ...)."""
        return self._core.table()

    # ------------------------------------------------------------------ the calls
    def _writable(self) -> J.Journal:
        if self._closed:
            raise ReadOnlyStoreError(f"{self.path}: the store is closed")
        if self.read_only or self._journal is None:
            raise ReadOnlyStoreError(
                f"{self.path} was opened with read_only=True; open it without to change it"
            )
        return self._journal

    def add(
        self,
        fact_id: str,
        *,
        family: str | None = None,
        created_at: int | None = None,
        status: str = "candidate",
    ) -> dict[str, Any]:
        """Add a lesson as a candidate (idempotent on the id); return its row.

        ``created_at`` (an integer, default the coming run's number) orders the lessons;
        ``family`` is the lesson table's ``applies_to``; ``status`` (``"candidate"``, or
        ``"verified"`` / ``"admitted"`` for a lesson a store held before this one) its
        starting status.

        Raises
        ------
        LedgerError
            For an id the ledger would refuse (naming it).
        """
        journal = self._writable()
        _, _, ids, _ = run_content("add", 0.0, [fact_id], None)
        fid = ids[0]
        if family is not None and not isinstance(family, str):
            raise ParameterError(f"family must be a string or None; got {family!r}")
        if created_at is not None and (
            isinstance(created_at, bool) or not isinstance(created_at, int)
        ):
            raise ParameterError(f"created_at must be an integer or None; got {created_at!r}")
        if status not in ADD_STATUSES:
            raise ParameterError(
                f"status must be one of {list(ADD_STATUSES)} (a new lesson's); got {status!r}"
            )
        if fid not in self._core.lifecycle:
            op: dict[str, Any] = {"op": "add", "id": fid, "created_at": created_at}
            op["family"] = family
            if status != "candidate":
                op["status"] = status
            journal.append(op)
            self._core.add(fid, created_at=created_at, family=family, status=status)
        return self.lesson(fid)

    def lesson(self, fact_id: str) -> dict[str, Any]:
        """Return one lesson's row (as :meth:`lessons`), JSON-ready."""
        book = self._core.lifecycle
        if fact_id not in book:
            raise ParameterError(f"the store holds no lesson {fact_id!r}")
        row = self._core.lessons().filter(pl.col("fact_id") == fact_id).row(0, named=True)
        return {
            k: (None if isinstance(v, float) and not math.isfinite(v) else v)
            for k, v in row.items()
        }

    def select(self, *, context: Mapping[str, Any] | None = None, rng: Any = None) -> Any:
        """Choose the lessons for the coming run (a :class:`~cogstats.retrieval.Selection`).

        ``rng`` is an int seed or a ``numpy.random.Generator`` (default: the store's own
        generator, seeded by ``open(seed=...)``).  ``context`` is passed to the policy,
        with ``run`` (the coming run's number) added.  Nothing is written.
        """
        return self._core.select(context=context, rng=self._rng if rng is None else rng)

    def select_with_uniforms(
        self, uniforms: Any, *, context: Mapping[str, Any] | None = None
    ) -> Any:
        """As :meth:`select`, with the run's pre-drawn uniforms (the simulator's draws)."""
        return self._core.select_with_uniforms(uniforms, context=context)

    def record(
        self,
        run_id: str,
        score: float,
        fact_ids: Sequence[str] | Any = (),
        covariates: Mapping[str, Any] | None = None,
    ) -> list[Change]:
        """Record a run and apply the gate's look: the status changes it made.

        The run is on disk (its journal line fsynced, unless the fsyncs are batched) when
        this returns.  ``fact_ids`` are the lessons the run carried, whatever
        :meth:`select` proposed; a :class:`~cogstats.retrieval.Selection` is taken as is,
        its propensities logged (``eligible_ids``, ``propensities``).  A lesson id the
        store does not hold is added as a candidate (or refused: ``unknown_lessons``).

        A run id recorded before with the same content (score, lessons, covariates) is a
        no-op returning that run's changes (an agent's retry); with other content it is a
        :class:`RunConflictError` naming both (a store never rewrites history).

        Raises
        ------
        LedgerError
            For a malformed run, naming the field (nothing is written).
        RunConflictError, UnknownLessonError
            As above (nothing is written).
        StateWriteError
            When the disk refuses the journal line (full, read-only), naming the path;
            nothing is recorded and the store stays as it was.
        """
        journal = self._writable()
        covs = dict(covariates or {})
        props = getattr(fact_ids, "propensities", None)
        if hasattr(fact_ids, "fact_ids"):  # a Selection
            if props is not None:
                covs.setdefault("eligible_ids", list(props))
                covs.setdefault("propensities", list(props.values()))
            fact_ids = fact_ids.fact_ids
        if isinstance(fact_ids, str):
            raise LedgerError(
                f"fact_ids must be a list of lesson ids; got {fact_ids!r}", field="fact_ids"
            )
        run_id, score, facts, covs = run_content(run_id, score, list(fact_ids), covs)
        core = self._core
        again = core.recorded(run_id, score, facts, covs)
        if again is not None:
            return again
        new = core.unknown(facts)
        if new and self.settings.unknown_lessons == "refuse":
            raise UnknownLessonError(
                f"the run lists lessons the store does not hold: {new}; add them first "
                "(store.add), or open the store with unknown_lessons='add'",
                field="fact_ids",
            )
        core.check_run(covs)
        run = core.next_run
        op = {
            "op": "run",
            "run": run,
            "run_id": run_id,
            "score": score,
            "fact_ids": facts,
            "covariates": covs,
        }
        before = journal.end
        journal.append(op)
        try:
            changes = core.apply_run(run_id, score, facts, covs)
        except BaseException:
            # the run was written but could not be applied: take it back out and rebuild
            # the memory from the disk (the call raises: the run is not acknowledged)
            journal.truncate(before)
            self._reload()
            raise
        if core.runs - self._snapshot_runs >= self.durability.snapshot_every:
            self.snapshot()
        return changes

    def import_history(self, runs: Any) -> int:
        """Record runs from before the store as history: no look after them.

        ``runs`` is a :class:`~cogstats.ledger.Ledger` or an iterable of ``(run_id,
        score, fact_ids, covariates)``.  Each run is validated and recorded as
        :meth:`record` does (unknown lessons added as candidates, a run held already
        skipped), written to the journal without a look, all fsynced at the end, then a
        snapshot is written: an agent adopting the store keeps its ledger, and the next
        :meth:`record` looks at every lesson.  Returns the runs imported.

        Raises
        ------
        LedgerError, RunConflictError, StateWriteError
            As :meth:`record`, naming the run; the runs before it are imported.
        """
        journal = self._writable()
        core = self._core
        if hasattr(runs, "to_records"):
            rows = (
                (r["run_id"], r["score"], r["fact_ids"] or [], _covariates(r))
                for r in runs.to_records()
            )
        else:
            rows = iter(runs)
        count = 0
        try:
            for run_id, score, fact_ids, covariates in rows:
                rid, y, facts, covs = run_content(run_id, score, list(fact_ids), covariates)
                if core.recorded(rid, y, facts, covs) is not None:
                    continue
                new = core.unknown(facts)
                if new and self.settings.unknown_lessons == "refuse":
                    raise UnknownLessonError(
                        f"run {rid!r} lists lessons the store does not hold: {new}",
                        field="fact_ids",
                    )
                core.check_run(covs)
                op = {"op": "run", "run": core.next_run, "run_id": rid, "score": y}
                op.update(fact_ids=facts, covariates=covs, look=False)
                before = journal.end
                journal.append(op, sync=False)
                try:
                    core.apply_run(rid, y, facts, covs, look=False)
                except BaseException:
                    journal.truncate(before)
                    self._reload()
                    raise
                count += 1
        finally:
            if self._journal is not None:
                self._journal.sync()
        if count:
            self.snapshot()
        return count

    def _reload(self) -> None:
        journal = self._journal
        self._journal = None
        if journal is not None:
            journal.close()
        self._load(None, migrate=False, writer=True)

    # ------------------------------------------------------------------ snapshots
    def snapshot(self) -> Path | None:
        """Write a snapshot now (the statistics, the lifecycle, the journal offset).

        Returns the snapshot's description file, or None when the disk refused (a
        :class:`StoreWarning` says why; the journal still holds every run, and the next
        snapshot is tried ``snapshot_every`` runs later).
        """
        journal = self._writable()
        journal.sync()  # the snapshot's journal offset is on disk before it names it
        core = self._core
        runs = core.runs
        npz = self.path / f"snapshot-{runs:012d}.npz"
        try:
            core.engine.save(npz)
            data = {
                "format": SNAPSHOT_FORMAT,
                "version": 1,
                "engine": core.engine.kind,
                "runs": runs,
                "journal_end": journal.end,
                "gate_state": npz.name,
                "gate_sha256": _sha256(npz),
                "settings": self.settings.to_dict(),
                "lifecycle": core.lifecycle.to_dict(),
            }
            body = json.dumps(data, allow_nan=False, separators=(",", ":")).encode("utf-8")
            J.atomic_write(self.path / SNAPSHOT_FILE, body)
        except OSError as exc:
            current = self._current_snapshot()
            if npz.name != current:
                npz.unlink(missing_ok=True)
            self._snapshot_runs = runs  # try again snapshot_every runs later
            warnings.warn(
                StoreWarning(
                    f"{self.path}: no snapshot at run {runs} ({exc}); the journal holds every run"
                ),
                stacklevel=2,
            )
            return None
        self._snapshot_runs = self._snapshot_at = runs
        for name in os.listdir(self.path):  # the older snapshots' statistics
            if _SNAPSHOT_NPZ.match(name) and name != npz.name:
                (self.path / name).unlink(missing_ok=True)
        return self.path / SNAPSHOT_FILE

    def _current_snapshot(self) -> str | None:
        try:
            snap = _read_json(self.path / SNAPSHOT_FILE)
        except (OSError, ValueError):
            return None
        return snap.get("gate_state") if isinstance(snap, dict) else None

    def _migrate(self, given: StoreSettings) -> None:
        """Replay the runs and lessons under ``given`` and commit it with a snapshot."""
        old = self._core
        policy, gate = given.parts()
        core = StoreCore(gate, policy, given.cadence)
        book = old.lifecycle
        arrivals: dict[int, list[str]] = {}
        for f in book.ids:
            arrivals.setdefault(book.arrived[f], []).append(f)
        first = {}  # each lesson's status when it arrived
        for e in reversed(book.events):
            first[e.fact_id] = e.old

        def arrive(k: int) -> None:
            for f in arrivals.get(k, ()):
                status = first.get(f, book.status[f])
                core.add(f, created_at=book.created[f], family=book.family[f], status=status)

        for k, (run_id, score, facts, covs) in enumerate(old.stats.runs(), start=1):
            arrive(k)
            core.apply_run(run_id, score, facts, {c: v for c, v in covs.items() if v is not None})
        arrive(old.runs + 1)
        self._core = core
        self.settings = given
        if self.snapshot() is None:
            raise StateWriteError(
                28, f"{self.path}: the migration's snapshot could not be written", str(self.path)
            )
        J.atomic_write(self.path / SETTINGS_FILE, given.to_json())

    # ------------------------------------------------------------------ closing
    def close(self) -> None:
        """Sync the journal, release the lock (a reader: nothing to do).  Idempotent."""
        if self._closed:
            return
        self._closed = True
        journal, self._journal = self._journal, None
        lock, self._lock = self._lock, None
        try:
            if journal is not None:
                journal.close()
        finally:
            if lock is not None:
                lock.release()

    def __enter__(self) -> LessonStore:
        """Return the store (closed at the end of the ``with`` block)."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close the store."""
        self.close()

    def __del__(self) -> None:  # pragma: no cover - a dropped store
        """Release the lock of a store dropped without close()."""
        with contextlib.suppress(Exception):
            self.close()
