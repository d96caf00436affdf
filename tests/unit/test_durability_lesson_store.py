"""The lesson store under faults: kill -9, a second writer, a reader beside the writer, a
symlinked lock, a neighbour's temporary files, a full disk, a read-only folder.

Each case ends with the store valid and nothing acknowledged lost or counted twice; the
expected statuses and events come from the in-memory core run without a stop.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from cogstats.store import (
    Cadence,
    LessonStore,
    StateLockedError,
    StateWriteError,
    StoreCore,
)

ROOT = Path(__file__).resolve().parents[2]
LESSONS = [f"L{j:02d}" for j in range(14)]


def _world(n: int, seed: int = 29) -> tuple[list[list[Any]], dict[int, list[str]]]:
    """``n`` runs (run_id, score, lessons, covariates) and the lessons added before each."""
    rng = np.random.default_rng(seed)
    adds = {0: LESSONS[:6], n // 5: [*LESSONS[6:12], "P1"], n // 2: [*LESSONS[12:], "P2"]}
    live: list[str] = []
    runs = []
    for i in range(n):
        live += adds.get(i, [])
        facts = [f for f in live if rng.random() < 0.35][:6]
        d = float(rng.normal(0, 0.1))
        harm = 0.2 * sum(f.startswith("P") for f in facts)
        y = float(np.clip(0.6 + d - harm + rng.normal(0, 0.04), 0, 1))
        runs.append([f"run-{i:04d}", y, facts, {"difficulty_proxy": d}])
    return runs, adds


def _expected(runs: list[list[Any]], adds: dict[int, list[str]]) -> StoreCore:
    """The store's decisions without a stop: the in-memory core."""
    import cogstats

    policy, gate = cogstats.recommended(max_facts=6, candidate_slots=3)
    core = StoreCore(gate, policy, Cadence())
    for i, (run_id, y, facts, covs) in enumerate(runs):
        for f in adds.get(i, []):
            core.add(f)
        core.apply_run(run_id, y, facts, covs)
    return core


WORKER = r"""
import json, os, sys, time
from pathlib import Path
from cogstats.store import Durability, LessonStore
from cogstats.store import journal as J

folder, world = Path(sys.argv[1]), json.loads(Path(sys.argv[2]).read_text())
runs, adds = world["runs"], {int(k): v for k, v in world["adds"].items()}
if os.environ.get("SLOW_SNAPSHOT"):  # a window between a snapshot's statistics and its commit
    original = J.atomic_write
    def slow(path, data):
        if path.name == "snapshot.json":
            print("SNAPSHOT", flush=True)
            time.sleep(0.3)
        original(path, data)
    J.atomic_write = slow
store = LessonStore.open(folder, preset="recommended", max_facts=6, candidate_slots=3,
                         durability=Durability(snapshot_every=int(sys.argv[3])))
start = store.runs
print("READY", start, flush=True)
if start:  # an agent's retry of its last run: a no-op
    size = (folder / "journal.jsonl").stat().st_size
    r = runs[start - 1]
    store.record(r[0], r[1], r[2], r[3])
    assert store.runs == start and (folder / "journal.jsonl").stat().st_size == size
for i in range(start, len(runs)):
    for f in adds.get(i, []):
        store.add(f)
    r = runs[i]
    store.record(r[0], r[1], r[2], r[3])
    print("ACK", r[0], flush=True)
    if os.environ.get("PACE"):
        time.sleep(float(os.environ["PACE"]))
store.close()
print("DONE", flush=True)
"""

HOLD = r"""
import sys, time
from cogstats.store import LessonStore
store = LessonStore.open(sys.argv[1], preset="recommended", max_facts=6, candidate_slots=3)
print("HELD", flush=True)
time.sleep(60)
"""


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1", **extra}


def _worker(tmp: Path, world: Path, snapshot_every: int, **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", WORKER, str(tmp / "store"), str(world), str(snapshot_every)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(**env),
    )


def _write_world(tmp: Path, n: int) -> tuple[Path, list[list[Any]], dict[int, list[str]]]:
    runs, adds = _world(n)
    path = tmp / "world.json"
    path.write_text(json.dumps({"runs": runs, "adds": {str(k): v for k, v in adds.items()}}))
    return path, runs, adds


def test_kill_9_at_random_points_loses_no_acknowledged_run_and_doubles_none(
    tmp_path: Path,
) -> None:
    """22 writers killed with SIGKILL at seeded moments (6 inside a snapshot's commit
    window), each restarted from the folder: every acknowledged run is there once, in
    order, and the statuses and events are those of a store that never stopped."""
    world, runs, adds = _write_world(tmp_path, 700)
    rng = np.random.default_rng(20261205)
    acked: list[str] = []
    kills = {"random": 0, "in_snapshot": 0, "finished": 0}
    for cycle in range(22):
        slow = cycle % 4 == 1
        env = {"PACE": "0.01"}  # an agent's pace: no cycle runs out of runs
        proc = _worker(tmp_path, world, 7, **env, **({"SLOW_SNAPSHOT": "1"} if slow else {}))
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("READY"), proc.stderr.read() if proc.stderr else line
        if slow:  # wait for a snapshot's commit window, then kill inside it
            while (line := proc.stdout.readline()) and not line.startswith("SNAPSHOT"):
                if line.startswith("ACK"):
                    acked.append(line.split()[1])
            time.sleep(float(rng.uniform(0.0, 0.2)))
        else:
            time.sleep(float(rng.uniform(0.0, 0.35)))
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            kills["in_snapshot" if slow else "random"] += 1
        else:
            kills["finished"] += 1
        out, _ = proc.communicate(timeout=60)
        acked += [ln.split()[1] for ln in out.splitlines() if ln.startswith("ACK")]
    proc = _worker(tmp_path, world, 7)  # the last one runs to the end
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0 and "DONE" in out, err
    acked += [ln.split()[1] for ln in out.splitlines() if ln.startswith("ACK")]
    assert kills["in_snapshot"] >= 5 and kills["random"] >= 12, kills
    assert len(acked) == len(set(acked))  # each run acknowledged once
    with LessonStore.open(tmp_path / "store", read_only=True) as back:
        ids = list(back.ledger().run_ids)
        assert ids == [r[0] for r in runs]  # none lost, none doubled, in order
        assert set(acked) <= set(ids)
        want = _expected(runs, adds)
        assert back.events().equals(want.events())
        assert back.lessons().equals(want.lessons())
        assert back.ledger().to_frame().equals(want.to_ledger().to_frame())
    left = sorted(p.name for p in (tmp_path / "store").iterdir())
    assert len(left) == 4 and left[1].startswith("snapshot-") and left[1].endswith(".npz")
    assert [left[0], *left[2:]] == ["journal.jsonl", "snapshot.json", "store.json"]


def test_a_second_writer_is_refused_and_a_reader_is_not(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(folder)], stdout=subprocess.PIPE, text=True, env=_env()
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "HELD"
        with pytest.raises(StateLockedError, match=f"pid {proc.pid}"):
            LessonStore.open(folder, preset="recommended", max_facts=6, candidate_slots=3)
        with LessonStore.open(folder, read_only=True) as reader:
            assert reader.runs == 0
    finally:
        proc.kill()
        proc.wait()
    with pytest.warns(UserWarning, match="stale lock"):  # the dead holder's lock
        LessonStore.open(folder).close()


def test_a_reader_beside_a_live_writer_sees_a_consistent_prefix(tmp_path: Path) -> None:
    world, runs, adds = _write_world(tmp_path, 160)
    proc = _worker(tmp_path, world, 5, PACE="0.01")
    assert proc.stdout is not None and proc.stdout.readline().startswith("READY")
    want = _expected(runs, adds)
    seen: list[int] = []
    try:
        while proc.poll() is None and len(seen) < 12:
            with LessonStore.open(tmp_path / "store", read_only=True) as reader:
                n = reader.runs
                assert list(reader.ledger().run_ids) == [r[0] for r in runs[:n]]
                events = want.events().filter(pl.col("run") <= n)
                assert reader.events().equals(events)
                seen.append(n)
    finally:
        _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert seen == sorted(seen) and len(set(seen)) >= 3, seen  # readers saw it grow


def _store_with_runs(folder: Path, n: int) -> None:
    runs, adds = _world(n)
    with LessonStore.open(folder, preset="recommended", max_facts=6, candidate_slots=3) as s:
        for i, r in enumerate(runs):
            for f in adds.get(i, []):
                s.add(f)
            s.record(*r)


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def test_a_lock_path_that_is_a_symlink_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    _store_with_runs(folder, 20)
    before = _files(folder)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (folder / "store.lock").symlink_to(victim)
    with pytest.raises(StateWriteError, match="symbolic link") as err:
        LessonStore.open(folder)
    assert err.value.filename == str(folder / "store.lock")
    assert victim.read_text() == "precious\n"
    (folder / "store.lock").unlink()
    assert _files(folder) == before  # nothing written, nothing lost
    with LessonStore.open(folder) as store:
        assert store.runs == 20


def test_only_the_stores_own_temporary_files_are_removed(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    _store_with_runs(folder, 10)
    mine = [folder / ".lesson-store.abcd_123.tmp", folder / "snapshot-000000000007.npz.lock"]
    others = [
        folder / ".lesson-store.abc.tmp",  # not the store's pattern
        folder / "journal.jsonl.tmp",
        folder / "notes.tmp",
        tmp_path / "other.npz.abcdefgh.tmp",  # a neighbour's save, beside the store
        tmp_path / ".lesson-store.abcdefgh.tmp",  # outside the store's folder
    ]
    for p in mine + others:
        p.write_bytes(b"x")
    with LessonStore.open(folder) as store:
        assert store.runs == 10
    assert not any(p.exists() for p in mine)
    assert all(p.read_bytes() == b"x" for p in others)


@contextlib.contextmanager
def _tmpfs(where: Path, size: str) -> Iterator[Path]:
    where.mkdir()
    if os.geteuid() != 0:
        pytest.skip("a small tmpfs needs root (mount -t tmpfs); not root here")
    if subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)]
    ).returncode:
        pytest.skip("mount -t tmpfs failed: no mount privilege in this container")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def _record_until_refused(
    store: LessonStore, runs: list[list[Any]], adds: dict[int, list[str]]
) -> tuple[int, StateWriteError]:
    """Record (and snapshot every 25 runs) until the disk refuses: (acknowledged, error)."""
    for i, r in enumerate(runs):
        for f in adds.get(i, []):
            store.add(f)
        try:
            store.record(*r)
        except StateWriteError as exc:
            return i, exc
        if i % 25 == 0:
            store.snapshot()
    raise AssertionError("the disk never filled")


def test_a_full_disk_refuses_the_record_naming_the_path_and_the_store_stays_valid(
    tmp_path: Path,
) -> None:
    import warnings

    runs, adds = _world(400)
    with _tmpfs(tmp_path / "disk", "320k") as disk, warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        filler = disk / "filler"
        folder = disk / "store"
        with LessonStore.open(folder, preset="recommended", max_facts=6, candidate_slots=3) as st:
            free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
            filler.write_bytes(b"\0" * (free - 24 * 1024))
            acked, err = _record_until_refused(st, runs, adds)
            assert err.errno == 28 and err.filename == str(folder / "journal.jsonl")
            assert "not recorded" in str(err) and str(folder / "journal.jsonl") in str(err)
            assert st.runs == acked > 0
            size = (folder / "journal.jsonl").stat().st_size
            filler.unlink()  # room again: the same store goes on
            st.record(*runs[acked])
            assert st.runs == acked + 1
            assert (folder / "journal.jsonl").stat().st_size > size
        assert any("no snapshot" in str(w.message) for w in seen)  # snapshots failed first
        with LessonStore.open(folder, read_only=True) as back:
            assert list(back.ledger().run_ids) == [r[0] for r in runs[: acked + 1]]
            want = _expected(runs[: acked + 1], adds)
            assert back.events().equals(want.events())


def _refused_then_read(folder: Path) -> None:
    """A read-only store folder: a writer refused naming the lock, a reader served."""
    with pytest.raises(StateWriteError, match="store.lock") as err:
        LessonStore.open(folder)
    assert "a writer needs a folder it can write to" in str(err.value)
    with LessonStore.open(folder, read_only=True) as reader:
        assert reader.runs == 30


def test_a_read_only_folder_is_refused_for_writing_and_read(tmp_path: Path) -> None:
    """Root: a tmpfs remounted read-only; others: a folder without write permission."""
    if os.geteuid() != 0:
        folder = tmp_path / "store"
        _store_with_runs(folder, 30)
        before = _files(folder)
        folder.chmod(0o555)
        try:
            _refused_then_read(folder)
        finally:
            folder.chmod(0o755)
        assert _files(folder) == before
        return
    with _tmpfs(tmp_path / "disk", "4m") as disk:
        folder = disk / "store"
        _store_with_runs(folder, 30)
        before = _files(folder)
        assert subprocess.run(["mount", "-o", "remount,ro", str(disk)]).returncode == 0
        try:
            _refused_then_read(folder)
        finally:
            subprocess.run(["mount", "-o", "remount,rw", str(disk)], check=True)
        assert _files(folder) == before
        with LessonStore.open(folder) as store:
            assert store.runs == 30
