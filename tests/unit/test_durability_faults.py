"""Fault injection (issue 19): a streaming gate killed with SIGKILL at random points.

A worker process opens the state (``StreamingGate.open``: the lock, stale ones taken
over), ingests a growing JSON Lines file (the parent appends a chunk before each cycle),
records further runs one by one and saves after each step.  The parent kills it with
SIGKILL (20 cycles) at a seeded random moment after it is ready (some cycles while a save is
writing its temporary file, forced by a slowed ``os.replace``), then restarts it from
the state.  After the cycles a last worker runs to the end.  Then: the final report is
the batch gate's on the ledger of the state's runs; those runs are the full ledger, each
once, with their content; every lesson's trials count each run once; no temporary file
or lock is left.  POSIX only (SIGKILL).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from cogstats import Ledger
from cogstats.gates import CycgraphGate, StreamingGate

pytestmark = pytest.mark.skipif(os.name != "posix", reason="SIGKILL is POSIX")

ROOT = Path(__file__).resolve().parents[2]
SEED = 20261219
CYCLES = 20
CHUNKS = CYCLES  # the ingested file and the runs to record grow in every cycle
INGESTED, RECORDED = 140, 100
KEYS = ("fact_id", "decision", "reason", "why", "trials", "baseline_runs")

WORKER = textwrap.dedent(
    """
    import json, os, sys, time, warnings
    from cogstats.gates import CycgraphGate, StreamingGate

    state, ledger, runs_path = sys.argv[1], sys.argv[2], sys.argv[3]
    if os.environ.get("SLOW_SAVE"):  # a kill while the temporary file is written
        real = os.replace
        def slow(src, dst):
            time.sleep(5)
            real(src, dst)
        os.replace = slow
    warnings.simplefilter("ignore")  # the stale lock of the killed worker
    sg = StreamingGate.open(state, gate=CycgraphGate(min_trials=2))
    print("READY", flush=True)
    sg.ingest(ledger)
    sg.save()
    for run_id, score, ids in json.load(open(runs_path)):
        if sg.stats.index_of(run_id) is None:
            time.sleep(0.01)  # a service waiting for its next run
            sg.record(run_id, score, ids)
            sg.save()
        sg.ingest(ledger)  # nothing new: a no-op look
    sg.save()
    sg.close()
    print("DONE", flush=True)
    """
)


def _runs(n: int, prefix: str, rng: np.random.Generator) -> list[tuple[str, float, list[str]]]:
    out = []
    for i in range(n):
        ids = [f"L{j}" for j in range(8) if rng.random() < 0.3]
        out.append((f"{prefix}{i}", float(rng.integers(0, 21) * 0.05), ids))
    return out


def _start(tmp: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            str(tmp / "worker.py"),
            *(str(tmp / n) for n in ("s.npz", "runs.jsonl", "more.json")),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=env,
    )


def _wait_ready(proc: subprocess.Popen[str]) -> None:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("READY"):
        proc.kill()
        raise AssertionError(
            f"worker did not start: {line!r} {proc.stderr.read() if proc.stderr else ''}"
        )


def test_kill_9_at_random_points_loses_and_double_counts_nothing(tmp_path: Path) -> None:
    rng = np.random.default_rng(SEED)
    ingested = _runs(INGESTED, "f", rng)
    recorded = _runs(RECORDED, "r", rng)
    (tmp_path / "worker.py").write_text(WORKER)
    ledger = tmp_path / "runs.jsonl"
    ledger.write_text("")
    chunks = np.array_split(np.arange(INGESTED), CHUNKS)
    to_record = np.array_split(np.arange(RECORDED), CHUNKS)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    kills = {"random": 0, "during_save": 0, "finished_first": 0}
    for cycle in range(CYCLES):
        if cycle < CHUNKS:
            with ledger.open("a") as fh:
                for i in chunks[cycle]:
                    r, s, f = ingested[i]
                    fh.write(json.dumps({"run_id": r, "score": s, "fact_ids": f}) + "\n")
            upto = int(to_record[cycle][-1]) + 1
            (tmp_path / "more.json").write_text(json.dumps(recorded[:upto]))
        slow = cycle % 4 == 2
        proc = _start(tmp_path, {**env, "SLOW_SAVE": "1"} if slow else env)
        _wait_ready(proc)
        if slow:  # wait for the temporary file of a save, then kill mid-save
            deadline = time.monotonic() + 30
            while not list(tmp_path.glob("s.npz.*.tmp")) and time.monotonic() < deadline:
                time.sleep(0.005)
            assert list(tmp_path.glob("s.npz.*.tmp")), "no save started"
        else:
            time.sleep(float(rng.uniform(0.0, 0.25)))
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            kills["during_save" if slow else "random"] += 1
        else:
            kills["finished_first"] += 1
        proc.wait(timeout=60)
    proc = _start(tmp_path, env)  # the last one runs to the end
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0 and "DONE" in out, err
    print(kills)
    assert kills["during_save"] >= 5 and kills["random"] >= 8, kills
    # nothing left behind
    assert not list(tmp_path.glob("*.tmp")) and not (tmp_path / "s.npz.lock").exists()
    gate = CycgraphGate(min_trials=2)
    sg = StreamingGate.load(tmp_path / "s.npz", gate=gate)
    full = {r: (s, f) for r, s, f in [*ingested, *recorded]}
    ids = sg.stats.run_ids
    assert len(ids) == len(set(ids)) == len(full)  # every run once
    mine = sg.to_ledger()
    got = {r["run_id"]: (r["score"], list(r["fact_ids"] or [])) for r in mine.to_records()}
    assert got == full  # nothing lost, nothing changed
    trials = dict(
        zip(sg.stats.fact_ids, sg.stats.trials(list(sg.stats.fact_ids)).tolist(), strict=True)
    )
    want: dict[str, int] = {}
    for _, f in full.values():
        for lesson in set(f):
            want[lesson] = want.get(lesson, 0) + 1
    assert trials == want  # no run counted twice
    batch = gate.evaluate(
        Ledger.from_records({"run_id": r, "score": s, "fact_ids": f} for r, (s, f) in got.items())
    )
    a, b = sg.report().to_frame(), batch.to_frame()
    for c in KEYS:
        assert a[c].to_list() == b[c].to_list(), c
    for c in a.columns:
        if c not in KEYS and a[c].dtype.is_float():
            assert np.allclose(
                a[c].to_numpy(), b[c].to_numpy(), rtol=1e-9, atol=1e-10, equal_nan=True
            ), c
