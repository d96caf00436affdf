"""The sweep store: resume after a kill -9, refusal of a foreign store, agreement with
``cogstats simulate`` and with a single cell re-run alone."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from cogstats.cli import main
from cogstats.sim.cli import simulate_spec
from cogstats.sweep import (
    StoreMismatchError,
    load_sweep,
    read_manifest,
    read_sweep,
    rerun_cell,
    sweep_spec,
)

ROOT = Path(__file__).resolve().parents[2]
CRATER = ROOT / "simulations" / "poison_crater.toml"

SMALL = """
name = "small"
runs = 14
replicates = 25
seed = 4
[[lessons.listed]]
id = "good"
effect = 0.05
[[lessons.poison]]
after_run = 2
count = 2
effect = -0.2
[retrieval]
max_facts = 3
candidate_slots = 2
rest_after_trials = 3
[gate]
type = "cycgraph"
decision_rule = "margin"
min_trials = 2
[grid]
"gate.min_trials" = [2, 3, 4]
"gate.evict_margin" = [0.03, 0.1]
"""

# 2 x 3 x 3 (zipped margins) x 2 = 36 cells of the S2 scenario, about 0.1 s each
KILL = f"""
scenario = "{CRATER}"
replicates = 100
seed = 99
[grid]
"gate.min_trials" = [2, 3]
"retrieval.rest_after_trials" = [2, 3, 4]
"gate.promote_margin" = [0.03, 0.05, 0.08]
"gate.evict_margin" = [0.03, 0.05, 0.08]
"gate.decision_rule" = ["margin", "inference"]
zip = [["gate.promote_margin", "gate.evict_margin"]]
"""


@pytest.fixture
def small(tmp_path: Path) -> Path:
    path = tmp_path / "small.toml"
    path.write_text(SMALL)
    return path


def _parts(directory: Path) -> list[Path]:
    parts = directory / "parts"
    return sorted(parts.glob("cell-*.parquet")) if parts.exists() else []


def _dead(pid: int) -> bool:
    """Gone, or a zombie waiting for a reaper (its code no longer runs)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return True
    return state in ("Z", "X")


def test_kill_9_then_resume_equals_an_uninterrupted_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SIGKILL the CLI once some cells are stored, run the same command again: the table
    equals an uninterrupted run's, cell for cell and bit for bit.

    The killed run uses two local worker processes; they must exit by themselves once
    their parent is gone.  The resumed run uses one (in-process) worker: the table does
    not depend on the worker count either.
    """
    spec_path = tmp_path / "kill.toml"
    spec_path.write_text(KILL)
    n_cells = load_sweep(spec_path).n_cells
    out = tmp_path / "killed"
    cmd = [sys.executable, "-m", "cogstats.cli", "sweep", str(spec_path), "--out", str(out)]
    cmd += ["--no-progress"]
    timings: dict[str, float] = {}
    t_start = time.monotonic()
    proc = subprocess.Popen([*cmd, "--workers", "2"], cwd=ROOT, stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    while len(_parts(out)) < 4 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    timings["until_kill"] = time.monotonic() - t_start
    stored = len(_parts(out))
    assert 0 < stored < n_cells, f"kill landed outside the sweep: {stored}/{n_cells} cells"
    pids = {int(w.rsplit(":", 1)[1]) for w in read_sweep(out, timings=True)["worker"]}
    wait_until = time.monotonic() + 15
    while not all(_dead(p) for p in pids) and time.monotonic() < wait_until:
        time.sleep(0.1)
    assert all(_dead(p) for p in pids), "local workers outlived their killed parent"

    # the same command again (in this process, to save a second package import)
    t_resume = time.monotonic()
    assert main([*cmd[3:], "--workers", "1"]) == 0
    assert f"({n_cells - stored} run now, {stored} already done)" in capsys.readouterr().out
    timings["resume"] = time.monotonic() - t_resume
    assert not list((out / "parts").glob(".tmp-*"))

    t_clean = time.monotonic()
    clean = sweep_spec(spec_path, out=tmp_path / "clean", workers=1, progress=False).table
    timings["clean"] = time.monotonic() - t_clean
    print(timings)
    resumed = read_sweep(out)
    assert resumed["cell"].to_list() == list(range(n_cells))
    assert_frame_equal(resumed, clean)
    sessions = [json.loads(x) for x in (out / "sessions.jsonl").read_text().splitlines()]
    assert [s["event"] for s in sessions] == ["start", "start", "end"]


def test_resume_runs_only_missing_cells(small: Path, tmp_path: Path) -> None:
    out = tmp_path / "store"
    first = sweep_spec(small, out=out, workers=1, progress=False)
    assert (first.ran, first.skipped, first.complete) == (6, 0, True)
    for part in _parts(out)[1:4]:
        part.unlink()
    # a temporary part left by a dead writer (its pid no longer exists) is cleaned up
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = out / "parts" / f".tmp-{dead.pid}-0123abcd.parquet"
    stale.write_bytes(b"half a cell")
    again = sweep_spec(small, out=out, workers=1, progress=False)
    assert (again.ran, again.skipped) == (3, 3)
    assert not stale.exists()
    assert_frame_equal(again.table, first.table)
    done = sweep_spec(small, out=out, workers=1, progress=False)
    assert (done.ran, done.skipped) == (0, 6)


def test_a_store_of_another_sweep_is_refused(
    small: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "store"
    sweep_spec(small, out=out, workers=1, progress=False)
    with pytest.raises(StoreMismatchError, match=r"seed: 4 in the store, 5 now.*new --out"):
        sweep_spec(small, out=out, seed=5, workers=1, progress=False)
    with pytest.raises(StoreMismatchError, match="replicates: 25 in the store, 30 now"):
        sweep_spec(small, out=out, replicates=30, workers=1, progress=False)
    small.write_text(SMALL.replace("[0.03, 0.1]", "[0.03, 0.2]"))
    with pytest.raises(StoreMismatchError, match=r"spec\.grid\[1\]\[1\]\[1\]: 0\.1 in the store"):
        sweep_spec(small, out=out, workers=1, progress=False)
    small.write_text(SMALL.replace("runs = 14", "runs = 15"))
    assert main(["sweep", str(small), "--out", str(out), "--workers", "1"]) == 2
    err = capsys.readouterr().err
    assert "spec.scenario.runs: 14 in the store, 15 now" in err
    assert len(_parts(out)) == 6  # nothing ran, nothing was overwritten
    # a folder that is not a sweep store
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    with pytest.raises(StoreMismatchError, match="not a sweep store"):
        sweep_spec(small, out=other, workers=1, progress=False)


def test_a_foreign_part_is_detected(small: Path, tmp_path: Path) -> None:
    out = tmp_path / "store"
    sweep_spec(small, out=out, workers=1, progress=False)
    part = _parts(out)[0]
    part.rename(part.with_name("cell-000000-0000000000000000.parquet"))
    with pytest.raises(StoreMismatchError, match="does not belong to this sweep"):
        read_sweep(out)


def _same(a: object, b: object) -> bool:
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def test_cells_equal_cogstats_simulate_and_rerun_alone(small: Path, tmp_path: Path) -> None:
    """Cell i of a sweep, cell i of ``cogstats simulate`` on the same spec, and the cell
    re-run alone from the seed in its row give the same numbers (exact equality: the
    same seeds drive the same deterministic engine)."""
    out = tmp_path / "store"
    table = sweep_spec(small, out=out, workers=1, progress=False).table
    sim = simulate_spec(load_sweep(small).simulation, progress=False)
    assert table.height == sim.height == 6
    summary_cols = [c for c in sim.columns if c not in ("cell", "gate.min_trials")]
    summary_cols.remove("gate.evict_margin")
    for col in summary_cols:
        assert all(_same(a, b) for a, b in zip(table[col], sim[col], strict=True)), col
    for axis in ("gate.min_trials", "gate.evict_margin"):
        assert table[axis].to_list() == sim[axis].to_list()
    row = table.row(4, named=True)
    alone = rerun_cell(out, 4)
    assert alone.runs is not None
    for name, value in alone.summary_row().items():
        if isinstance(value, str):  # the engine
            assert value == row[name], name
            continue
        assert _same(None if value is None else float(value), row[name]), name
    record = json.loads(row["seed"])
    assert record == {"entropy": 4, "spawn_key": [4]}
    state = np.random.SeedSequence(**record).generate_state(4)
    assert np.array_equal(state, np.random.SeedSequence(4).spawn(6)[4].generate_state(4))


def test_table_schema_manifest_and_timings(small: Path, tmp_path: Path) -> None:
    out = tmp_path / "store"
    sweep_spec(small, out=out, workers=1, progress=False)
    table = read_sweep(out)
    assert table.columns[:5] == ["cell", "cell_key", "gate.min_trials", "gate.evict_margin", "seed"]
    assert table.schema["gate.min_trials"] == pl.Int64
    assert table.schema["gate.evict_margin"] == pl.Float64
    assert table.schema["replicates"] == pl.Int64
    for metric in ("false_eviction_rate", "time_to_verdict", "poison_recall", "regret"):
        assert table.schema[metric] == pl.Float64
        assert table.schema[f"{metric}_mcse"] == pl.Float64
    assert "elapsed_s" not in table.columns
    timed = read_sweep(out, timings=True)
    assert (timed["elapsed_s"] > 0).all()
    manifest = read_manifest(out)
    assert manifest["n_cells"] == 6
    assert manifest["seed"] == 4
    assert manifest["replicates"] == 25
    assert manifest["cell_keys"] == table["cell_key"].to_list()
    assert manifest["versions"]["numpy"] == np.__version__
    assert set(manifest["git"]) == {"commit", "dirty"}


def test_cli_default_store_and_progress(
    small: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["sweep", str(small), "--workers", "1", "--replicates", "5"]) == 0
    out = capsys.readouterr().out
    assert "small: 6/6 cells x 5 replicates, seed 4 (6 run now, 0 already done)" in out
    assert (tmp_path / "sweeps" / "small" / "manifest.json").exists()
    sweep_spec(small, out=tmp_path / "bar", workers=1, progress=True, replicates=5)
    err = capsys.readouterr().err
    assert "6/6" in err
    assert "cell/s" in err or "s/cell" in err


def test_small_local_sweeps_default_to_this_process(small: Path, tmp_path: Path) -> None:
    """6 cells x 25 replicates x 14 runs = 2,100 simulated runs, far below
    SMALL_SWEEP_RUNS: with no worker count given, no worker process is started."""
    from cogstats.sweep.runner import SMALL_SWEEP_RUNS

    assert SMALL_SWEEP_RUNS > 6 * 25 * 14
    result = sweep_spec(small, out=tmp_path / "store", progress=False)
    assert result.workers == 1
    workers = set(read_sweep(tmp_path / "store", timings=True)["worker"])
    assert workers == {f"{os.uname().nodename}:{os.getpid()}"}
