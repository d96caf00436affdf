"""Durability of the streaming gate's state (issue 19): one writer, checked loads.

- the lock's lifecycle: ``StreamingGate.open`` holds the state path's lock until
  ``close``; a second writer (another process) is refused naming pid and host; a save
  to a path another live writer holds is refused; temporary files of dead writers are
  removed at open;
- checked loads: a checksum over every member, invariants recomputed from the stored
  runs, the caller's gate compared with the saved one (``migrate=True`` to change it);
- a property test: any single byte changed, or any truncation, of a saved state either
  loads identically (saving it again gives the same bytes) or is refused with
  ``ParameterError`` — never another exception.
"""

from __future__ import annotations

import io
import json
import os
import socket
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cogstats._statelock import StateLockedError
from cogstats._validation import ParameterError
from cogstats.gates import CycgraphGate, EvidenceGate, StreamingGate
from cogstats.gates.streaming import _state

ROOT = Path(__file__).resolve().parents[2]


def _runs(n: int, seed: int = 7) -> list[tuple[str, float, list[str], dict[str, Any]]]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        ids = [f"L{j}" for j in range(5) if rng.random() < 0.4]
        out.append((f"r{i}", float(rng.integers(0, 21) * 0.05), ids, {"d": float(rng.normal())}))
    return out


def _fill(sg: StreamingGate, runs: list[tuple[str, float, list[str], dict[str, Any]]]) -> None:
    for run_id, score, ids, covs in runs:
        sg.record(run_id, score, ids, **covs)


KEYS = ("fact_id", "decision", "reason", "why", "trials", "baseline_runs")


def assert_same(a: Any, b: Any) -> None:
    """Decisions etc. identical, the numbers to 1e-9 (the streaming gate's promise)."""
    fa, fb = a.to_frame(), b.to_frame()
    for c in KEYS:
        assert fa[c].to_list() == fb[c].to_list(), c
    for c in fa.columns:
        if c not in KEYS and fa[c].dtype.is_float():
            x, y = fa[c].to_numpy(), fb[c].to_numpy()
            assert np.allclose(x, y, rtol=1e-9, atol=1e-10, equal_nan=True), c


def _members(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as zf:
        return {n: zf.read(n) for n in zf.namelist()}


def _rewrite(path: Path, members: dict[str, bytes], *, fix_checksums: bool) -> None:
    """Write members back (recomputing the checksums: a forged but consistent-looking file)."""
    manifest = json.loads(members["manifest.json"])
    if fix_checksums:
        manifest.pop("checksums", None)
        runs = json.loads(members["runs.json"])
        arrays = {
            n[:-4]: np.load(io.BytesIO(b), allow_pickle=False)
            for n, b in members.items()
            if n.endswith(".npy")
        }
        _state.write_state(path, manifest, runs, arrays)
        return
    with zipfile.ZipFile(path, "w") as zf:
        for n, b in members.items():
            zf.writestr(n, b)


# ---------------------------------------------------------------------- the lock
def test_open_record_save_close_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "gate.npz"
    gate = CycgraphGate(min_trials=2)
    runs = _runs(40)
    with StreamingGate.open(path, gate=gate) as sg:
        assert not path.exists() and len(sg) == 0  # a new state
        assert (tmp_path / "gate.npz.lock").exists()
        _fill(sg, runs[:25])
        assert sg.save() == path
        assert sg.save(tmp_path / "." / "gate.npz").exists()  # the same path, spelt otherwise
    assert not (tmp_path / "gate.npz.lock").exists()  # released at close
    sg = StreamingGate.open(path, gate=gate)
    try:
        assert len(sg) == 25
        _fill(sg, runs[25:])
        sg.save()
    finally:
        sg.close()
    sg.close()  # twice: nothing
    back = StreamingGate.load(path, gate=gate)
    assert len(back) == 40
    assert_same(back.report(), gate.evaluate(back.to_ledger()))


def test_save_without_path_needs_open() -> None:
    with pytest.raises(ParameterError, match="save\\(\\) needs a path"):
        StreamingGate(CycgraphGate()).save()


_SECOND_WRITER = textwrap.dedent(
    """
    import sys
    from cogstats.gates import CycgraphGate, StreamingGate
    from cogstats._statelock import StateLockedError
    path = sys.argv[1]
    try:
        StreamingGate.open(path, gate=CycgraphGate())
    except StateLockedError as exc:
        print("OPEN-REFUSED", exc)
    sg = StreamingGate(CycgraphGate())
    sg.record("x1", 0.5, ["a"])
    try:
        sg.save(path)
    except StateLockedError as exc:
        print("SAVE-REFUSED", exc)
    """
)


def test_a_second_writer_is_refused_naming_the_holder(tmp_path: Path) -> None:
    path = tmp_path / "gate.npz"
    with StreamingGate.open(path, gate=CycgraphGate()) as sg:
        _fill(sg, [(r, s, f, {}) for r, s, f, _ in _runs(10)])
        sg.save()
        before = path.read_bytes()
        proc = subprocess.run(
            [sys.executable, "-c", _SECOND_WRITER, str(path)],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=ROOT,
        )
        assert proc.returncode == 0, proc.stderr
        holder = f"pid {os.getpid()} on host {socket.gethostname()!r}"
        lines = proc.stdout.splitlines()
        assert any(ln.startswith("OPEN-REFUSED") and holder in ln for ln in lines), proc.stdout
        assert any(ln.startswith("SAVE-REFUSED") and holder in ln for ln in lines), proc.stdout
        assert path.read_bytes() == before  # the second writer changed nothing
        # the same process, another object: refused too (one writer per state)
        with pytest.raises(StateLockedError, match=str(os.getpid())):
            StreamingGate(CycgraphGate()).save(path)


def test_a_dead_writers_temporary_files_are_removed_at_open(tmp_path: Path) -> None:
    path = tmp_path / "gate.npz"
    StreamingGate(CycgraphGate()).save(path)
    stray = [tmp_path / "gate.npz.abc12345.tmp", tmp_path / "gate.npz.z_9zzzzz.tmp"]
    for p in stray:
        p.write_bytes(b"half a zip")
    other = tmp_path / "other.npz.x.tmp"  # another state's: left alone
    other.write_bytes(b"")
    # a neighbouring state's save in progress (gate.npz.canary's): never removed
    neighbour = tmp_path / "gate.npz.canary.abcdefgh.tmp"
    neighbour.write_bytes(b"a neighbour's save")
    with StreamingGate.open(path, gate=CycgraphGate()):
        assert not any(p.exists() for p in stray)
    assert other.exists()
    assert neighbour.read_bytes() == b"a neighbour's save"


def test_a_neighbours_saves_survive_opens_of_this_state(tmp_path: Path) -> None:
    """A state and its neighbour ``<state>.canary`` saved side by side: opening the first
    again and again never removes the second's temporary file (a save in progress)."""
    path = tmp_path / "prod.npz"
    StreamingGate(CycgraphGate()).save(path)
    canary = StreamingGate(CycgraphGate())
    canary.record("r1", 0.5, ["a"])
    for k in range(40):
        tmp = tmp_path / f"prod.npz.canary.{k:08d}.tmp"  # its save, half written
        tmp.write_bytes(b"half")
        StreamingGate.open(path, gate=CycgraphGate()).close()
        assert tmp.exists()
        tmp.unlink()
        canary.save(tmp_path / "prod.npz.canary")
    assert len(StreamingGate.load(tmp_path / "prod.npz.canary")) == 1


def _zip_with_bomb(members: dict[str, bytes], inflated: int) -> bytes:
    """A zip of ``members`` (stored) and ``extra.npy``: deflate data that inflates to
    ``inflated`` bytes of zeros (1 MB blocks, each flushed in full, so one compressed block
    repeats: built in milliseconds; the CRC is not computed, nothing reads that far)."""
    import struct
    import zlib

    mb = 1 << 20
    comp = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = comp.compress(bytes(mb)) + comp.flush(zlib.Z_FULL_FLUSH)
    check = zlib.decompressobj(-15)
    assert check.decompress(block * 2) == bytes(2 * mb)  # each block inflates to 1 MB
    last = zlib.compressobj(9, zlib.DEFLATED, -15).flush()  # the final (empty) block
    entries = [(n, 0, d, d, zlib.crc32(d), len(d)) for n, d in members.items()]
    entries.append(("extra.npy", 8, block * (inflated // mb) + last, b"", 0, inflated))
    out, central = bytearray(), bytearray()
    for name, method, data, _, crc, size in entries:
        raw = name.encode()
        extra = struct.pack("<HHQQ", 1, 16, size, len(data))
        offset = len(out)
        out += struct.pack(
            "<IHHHHHIIIHH",
            0x04034B50,
            45,
            0,
            method,
            0,
            33,
            crc,
            0xFFFFFFFF,
            0xFFFFFFFF,
            len(raw),
            len(extra),
        )
        out += raw + extra + data
        central += struct.pack(
            "<IHHHHHHIIIHHHHHII",
            0x02014B50,
            45,
            45,
            0,
            method,
            0,
            33,
            crc,
            0xFFFFFFFF,
            0xFFFFFFFF,
            len(raw),
            len(extra),
            0,
            0,
            0,
            0,
            offset,
        )
        central += raw + extra
    start = len(out)
    out += central
    out += struct.pack(
        "<IHHHHIIH", 0x06054B50, 0, 0, len(entries), len(entries), len(central), start, 0
    )
    return bytes(out)


def test_a_member_that_would_inflate_is_refused_before_decompressing(tmp_path: Path) -> None:
    """A state whose extra member inflates to 2 GB is refused from its header."""
    path = StreamingGate(CycgraphGate()).save(tmp_path / "s.npz")
    bomb = tmp_path / "bomb.npz"
    bomb.write_bytes(_zip_with_bomb(_members(path), 2 << 30))
    with zipfile.ZipFile(bomb) as zf:
        assert zf.getinfo("extra.npy").file_size == 2 << 30
        assert zf.getinfo("runs.json").file_size == len(_members(path)["runs.json"])
    assert bomb.stat().st_size < 12 << 20
    import tracemalloc

    tracemalloc.start()
    with pytest.raises(ParameterError, match="refused before decompressing"):
        StreamingGate.load(bomb)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 16 << 20  # nothing was inflated


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small tmpfs needs root")
def test_a_save_on_a_full_disk_names_the_path_and_keeps_the_state(tmp_path: Path) -> None:
    from cogstats._statelock import StateWriteError

    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=192k", "tmpfs", str(disk)]).returncode:
        pytest.skip("mount -t tmpfs failed (no mount privilege in this container)")
    try:
        path = disk / "s.npz"
        sg = StreamingGate(CycgraphGate())
        sg.record("r0", 0.5, ["a"])
        sg.save(path)
        before = path.read_bytes()
        for i in range(1, 3000):
            sg.record(f"r{i}", 0.5, [f"lesson-{i % 300:04d}-" + "x" * 40])
        with pytest.raises(StateWriteError, match=str(path)) as err:
            sg.save(path)
        assert err.value.filename == str(path) and err.value.errno == 28  # ENOSPC
        assert path.read_bytes() == before  # the previous state is kept
        assert sorted(p.name for p in disk.iterdir()) == ["s.npz"]  # no temporary left
        assert len(StreamingGate.load(path)) == 1
    finally:
        subprocess.run(["umount", str(disk)], check=False)


# ---------------------------------------------------------------------- checked loads
def test_the_same_state_saves_to_the_same_bytes(tmp_path: Path) -> None:
    sg = StreamingGate(
        EvidenceGate(method="ols", options={"cov": "nonrobust", "covariates": ("d",)})
    )
    _fill(sg, _runs(30))
    a = sg.save(tmp_path / "a.npz").read_bytes()
    back = StreamingGate.load(tmp_path / "a.npz")
    assert back.save(tmp_path / "b.npz").read_bytes() == a
    manifest = json.loads(_members(tmp_path / "a.npz")["manifest.json"])
    assert set(manifest["checksums"]) == set(_members(tmp_path / "a.npz"))


def test_a_changed_member_is_refused_by_its_checksum(tmp_path: Path) -> None:
    sg = StreamingGate(CycgraphGate())
    _fill(sg, _runs(20))
    path = sg.save(tmp_path / "s.npz")
    members = _members(path)
    runs = json.loads(members["runs.json"])
    runs["fact_ids"][0] = ["L9"]
    members["runs.json"] = json.dumps(runs).encode()
    _rewrite(path, members, fix_checksums=False)
    with pytest.raises(ParameterError, match="checksum of runs.json differs"):
        StreamingGate.load(path)
    members = _members(sg.save(tmp_path / "t.npz"))
    manifest = json.loads(members["manifest.json"])
    manifest["candidates"] = ["L0"]
    members["manifest.json"] = json.dumps(manifest).encode()
    _rewrite(tmp_path / "t.npz", members, fix_checksums=False)
    with pytest.raises(ParameterError, match="manifest's checksum differs"):
        StreamingGate.load(tmp_path / "t.npz")
    members = _members(sg.save(tmp_path / "u.npz"))
    manifest = json.loads(members["manifest.json"])
    manifest["version"] = 1  # a version-2 file claiming version 1 (no checksum check)
    members["manifest.json"] = json.dumps(manifest).encode()
    _rewrite(tmp_path / "u.npz", members, fix_checksums=False)
    with pytest.raises(ParameterError, match="version 1 with checksums"):
        StreamingGate.load(tmp_path / "u.npz")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("score5", "score 5.0; scores lie in \\[0, 1\\]"),
        ("sums", "lesson_sums is 1000000000.0 stored"),
        ("trials", "trials stored but"),
        ("runs", "must list 21 run ids"),
        ("lessons", "stored lessons of run"),
        ("total", "the total total_sum"),
    ],
)
def test_an_inconsistent_state_is_refused_even_with_good_checksums(
    change: str, message: str, tmp_path: Path
) -> None:
    sg = StreamingGate(CycgraphGate(min_trials=1))
    _fill(sg, _runs(20))
    path = sg.save(tmp_path / "s.npz")
    members = _members(path)
    manifest = json.loads(members["manifest.json"])
    runs = json.loads(members["runs.json"])
    arrays = {n: np.load(io.BytesIO(b)) for n, b in members.items() if n.endswith(".npy")}
    if change == "score5":
        arrays["scores.npy"][3] = 5.0
    elif change == "sums":
        arrays["lesson_sums.npy"][0] = 1e9
    elif change == "trials":
        arrays["lesson_trials.npy"][1] += 1
    elif change == "runs":
        manifest["runs"] = 21
    elif change == "lessons":
        runs["fact_ids"][0] = [*reversed(runs["fact_ids"][0]), "L0", "zz"]
    elif change == "total":
        manifest["totals"]["total_sum"] += 1.0
    members = {
        "manifest.json": json.dumps(manifest).encode(),
        "runs.json": json.dumps(runs).encode(),
    }
    for n, a in arrays.items():
        buf = io.BytesIO()
        np.save(buf, a)
        members[n] = buf.getvalue()
    _rewrite(path, members, fix_checksums=True)
    with pytest.raises(ParameterError, match=message):
        StreamingGate.load(path)


def test_load_compares_the_callers_gate_and_migrates_when_told(tmp_path: Path) -> None:
    saved = EvidenceGate(method="welch")
    sg = StreamingGate(saved)
    _fill(sg, _runs(30))
    path = sg.save(tmp_path / "s.npz")
    assert StreamingGate.load(path, gate=EvidenceGate(method="welch")).gate == saved
    new = EvidenceGate(method="welch", alpha=0.01)
    with pytest.raises(ParameterError, match="alpha: saved 0.05, given 0.01.*migrate=True"):
        StreamingGate.load(path, gate=new)
    with pytest.raises(ParameterError, match="saved with gate 'evidence'.*'cycgraph'"):
        StreamingGate.open(path, gate=CycgraphGate())
    assert not (tmp_path / "s.npz.lock").exists()  # a refused open releases the lock
    moved = StreamingGate.load(path, gate=new, migrate=True)
    assert moved.gate == new and len(moved) == 30
    assert_same(moved.report(), new.evaluate(sg.to_ledger()))
    other = StreamingGate.load(path, gate=CycgraphGate(), migrate=True)
    assert_same(other.report(), CycgraphGate().evaluate(sg.to_ledger()))


# ---------------------------------------------------------------------- property test
def _states(tmp_path: Path) -> list[Path]:
    out: list[Path] = []
    for name, gate in (
        ("cycgraph", CycgraphGate(min_trials=2)),
        ("confseq", EvidenceGate(method="confseq", min_trials=2)),
        ("ols", EvidenceGate(method="ols", options={"cov": "nonrobust", "covariates": ("d",)})),
    ):
        sg = StreamingGate(gate)
        _fill(sg, _runs(12, seed=len(out)))
        out.append(sg.save(tmp_path / f"{name}.npz"))
    return out


def test_any_byte_change_or_truncation_loads_identically_or_is_refused(tmp_path: Path) -> None:
    """240 seeded damages of three states (a byte set to another value, a truncation):
    each loads identically (saving it again gives the original bytes) or raises
    ParameterError; at least most are refused (the checksums see them)."""
    rng = np.random.default_rng(20261202)
    outcomes = {"identical": 0, "refused": 0}
    damaged = tmp_path / "damaged.npz"
    again = tmp_path / "again.npz"
    for original in _states(tmp_path):
        data = original.read_bytes()
        for case in range(80):
            buf = bytearray(data)
            if case % 4 == 3:
                buf = buf[: int(rng.integers(0, len(data)))]
            else:
                at = int(rng.integers(0, len(data)))
                buf[at] = (buf[at] + int(rng.integers(1, 256))) % 256
            damaged.write_bytes(bytes(buf))
            try:
                back = StreamingGate.load(damaged)
            except ParameterError:
                outcomes["refused"] += 1
                continue
            back.save(again)
            assert again.read_bytes() == data, (original.name, case)
            outcomes["identical"] += 1
    assert sum(outcomes.values()) == 240
    print(outcomes)
    assert outcomes["refused"] >= 200, outcomes


# ---------------------------------------------------------------------- ingest
def _jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_skip_skips_a_line_that_raises_anything_inside_validation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cogstats._validation import LedgerError

    rows = [{"run_id": f"r{i}", "score": 0.5, "fact_ids": ["a"]} for i in range(4)]
    path = _jsonl(tmp_path / "runs.jsonl", rows)
    sg = StreamingGate(CycgraphGate())
    validate = sg._validate

    def hostile(rec: Any, *, row: int | None, source: str | None) -> Any:
        if rec.get("run_id") == "r1":
            raise ZeroDivisionError("a gate's check failed oddly")
        return validate(rec, row=row, source=source)

    monkeypatch.setattr(sg, "_validate", hostile)
    with pytest.raises(LedgerError, match="ZeroDivisionError.*line 2"):
        sg.ingest(path)
    assert sg.marker(path)[1] == 1  # stays at the bad line
    result = sg.ingest(path, on_error="skip")
    assert result.recorded == 2 and len(sg) == 3  # r0 came in the first call
    assert [(s.line, s.offset) for s in result.skipped] == [(2, len(json.dumps(rows[0])) + 1)]
    assert "ZeroDivisionError" in result.skipped[0].error
    assert sg.marker(path) == (path.stat().st_size, 4)  # the marker passed it


def test_a_run_id_in_two_ingested_files_is_reported(tmp_path: Path) -> None:
    from cogstats._validation import LedgerWarning

    a = _jsonl(tmp_path / "a.jsonl", [{"run_id": f"r{i}", "score": 0.5} for i in range(3)])
    rows = [{"run_id": "r1", "score": 0.9}, {"run_id": "r2", "score": 0.5}]
    b = _jsonl(tmp_path / "b.jsonl", [*rows, {"run_id": "x", "score": 0.1}])
    sg = StreamingGate(CycgraphGate())
    assert sg.ingest(a).duplicates == ()
    assert sg.ingest(a).duplicates == ()  # the same file again: nothing new, nothing reported
    with pytest.warns(LedgerWarning, match="'r1' of .*b.jsonl \\(line 1\\).*a.jsonl"):
        result = sg.ingest(b)
    dup = {d.run_id: d for d in result.duplicates}
    assert set(dup) == {"r1", "r2"}
    assert dup["r1"].replaced and not dup["r2"].replaced  # r2 is identical
    assert dup["r1"].first_path == str(a.resolve()) and dup["r1"].line == 1
    assert len(sg) == 4 and sg.to_ledger().scores.tolist()[1] == 0.9
    # the sources are saved with the state: a third file after a restart is reported too
    back = StreamingGate.load(sg.save(tmp_path / "s.npz"))
    c = _jsonl(tmp_path / "c.jsonl", [{"run_id": "r0", "score": 0.2}])
    with pytest.warns(LedgerWarning):
        assert back.ingest(c).duplicates[0].first_path == str(a.resolve())


def test_recording_an_unchanged_run_again_changes_nothing() -> None:
    sg = StreamingGate(EvidenceGate(method="welch"))
    runs = _runs(50)
    _fill(sg, runs)
    version, report = sg.stats.version, sg.report()
    for run_id, score, ids, covs in runs:
        assert sg.record(run_id, score, ids, **covs).to_frame().height == 0
    assert sg.stats.version == version and sg.report() is report  # nothing re-judged
    run_id, score, ids, covs = runs[7]
    sg.record(run_id, score, ids, d=covs["d"] + 1.0)  # a changed covariate: replaced
    assert sg.stats.version > version
    sg.record("i1", 0.5, ["a"], k=1)
    version = sg.stats.version
    sg.record("i1", 0.5, ["a"], k=1.0)  # 1 == 1.0, but another type: replaced
    assert sg.stats.version > version


def test_a_forged_run_the_ledger_would_refuse_is_refused(tmp_path: Path) -> None:
    sg = StreamingGate(CycgraphGate())
    _fill(sg, _runs(10))
    members = _members(sg.save(tmp_path / "s.npz"))
    runs = json.loads(members["runs.json"])
    runs["covariates"]["d"][2] = {"nested": [1, 2]}  # an object as a covariate value
    members["runs.json"] = json.dumps(runs).encode()
    _rewrite(tmp_path / "s.npz", members, fix_checksums=True)
    with pytest.raises(ParameterError, match="run 'r2' is not a valid run"):
        StreamingGate.load(tmp_path / "s.npz")
