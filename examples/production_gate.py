"""A service loop around a streaming gate: one writer, a decision after every run, crashes survived.

The agent (simulated here) appends each run to ``runs.jsonl`` and hands it to the service.
The service

1. opens its state with ``StreamingGate.open`` (the saved state, else a new one) and holds
   the state's lock until it closes: a second service on the same state is refused, naming
   the holder's pid and host; the lock and the temporary files a killed service left are
   cleaned up by the next one;
2. catches up with the file (``ingest``: a byte marker saved with the state, so a line is
   read once; a malformed line is skipped and listed);
3. records each run as it arrives (``record``), acts on the decisions that changed
   (promoted and evicted lessons leave the candidates, as a lesson store retires them),
   and saves its state every ``SAVE_EVERY`` runs (a temporary file, then a rename; the
   save also moves the file's marker past the runs recorded live).

Runs recorded after the last save are lost in a crash and read again from the file on
restart; runs that were saved are not read again.

Run it: ``python examples/production_gate.py [WORKDIR]`` (default: a temporary folder).
The first service runs in a child process, which a second service tries to open and is
refused, and which dies abruptly (``os._exit``: no close, no save) after 120 live runs;
the restarted service catches up, and its final report is checked against the batch gate
on the whole file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from cogstats import Ledger
from cogstats.gates import (
    CycgraphGate,
    GateReport,
    StaleLockWarning,
    StateLockedError,
    StreamingGate,
)

SAVE_EVERY = 50
LESSONS = [f"lesson-{j}" for j in range(30)]  # the lesson store's candidates, in store order
GATE = CycgraphGate(decision_rule="inference", min_trials=5)


def agent(runs_path: Path, first: int, count: int) -> list[dict]:
    """Stand-in for the agent: ``count`` runs with 4 of the 30 lessons, appended to the file."""
    rng = np.random.default_rng([7, first])  # seeded by position: the same runs in any process
    effects = np.linspace(-0.15, 0.15, len(LESSONS))
    runs = []
    with runs_path.open("a") as fh:
        for i in range(first, first + count):
            picked = rng.choice(len(LESSONS), 4, replace=False)
            score = float(np.clip(0.6 + effects[picked].sum() + rng.normal(0, 0.1), 0, 1))
            run = {
                "run_id": f"run-{i}",
                "score": round(score, 4),
                "fact_ids": [LESSONS[j] for j in picked],
            }
            fh.write(json.dumps(run) + "\n")
            runs.append(run)
    return runs


def act(gate: StreamingGate, changes: GateReport) -> None:
    """Act on changed decisions: here, print them and retire decided lessons."""
    decided = set()
    for row in changes.to_frame().iter_rows(named=True):
        print(f"  {row['fact_id']}: {row['decision']} ({row['reason'] or row['why']})")
        if row["decision"] != "hold":
            decided.add(row["fact_id"])
    if decided:
        gate.candidates = [f for f in gate.candidates or LESSONS if f not in decided]


def start(state: Path, runs_path: Path) -> StreamingGate:
    """Open the state (locked until closed) and catch up with the file."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", StaleLockWarning)
        gate = StreamingGate.open(state, gate=GATE, candidates=LESSONS)
    for w in caught:
        print(f"taken over: {w.message}")
    before = len(gate)
    caught_up = gate.ingest(runs_path, on_error="skip")  # only the lines after the marker
    print(
        f"started with {before} runs; read {caught_up.lines} lines, "
        f"{len(gate) - before} runs new to the state"
    )
    act(gate, caught_up.changed)
    gate.save()  # to the opened path
    return gate


def serve_and_crash(workdir: Path) -> None:
    """Run the first service (a child process): catch up, wait, record 120 runs, die."""
    runs_path, state = workdir / "runs.jsonl", workdir / "gate-state.npz"
    gate = start(state, runs_path)
    print("skipped:", [(s.line, s.error.split(": ", 1)[-1]) for s in gate.skipped])
    (workdir / "ready").touch()
    deadline = time.monotonic() + 120
    while not (workdir / "go").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    for run in agent(runs_path, 200, 120):  # live: each run reaches the service
        act(gate, gate.record(run["run_id"], run["score"], run["fact_ids"]))
        if len(gate) % SAVE_EVERY == 0:
            gate.save()
    print(f"crash after {len(gate)} runs", flush=True)
    os._exit(3)  # killed: no close, no save, the lock file left behind


def main(workdir: Path) -> None:
    """Run the service, refuse a second one, crash it, restart, compare with the batch gate."""
    runs_path, state = workdir / "runs.jsonl", workdir / "gate-state.npz"
    agent(runs_path, 0, 200)  # runs written before the service first starts
    with runs_path.open("a") as fh:
        fh.write('{"run_id": "run-bad", "score": 7}\n')  # malformed: skipped and listed

    child = subprocess.Popen([sys.executable, __file__, "--serve", str(workdir)])
    deadline = time.monotonic() + 120
    while not (workdir / "ready").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    try:  # a second service on the same state, while the first lives
        StreamingGate.open(state, gate=GATE)
    except StateLockedError as exc:
        print(f"second service refused: {exc}")
    else:
        raise SystemExit("a second writer was let in")
    (workdir / "go").touch()
    if child.wait(timeout=300) != 3:
        raise SystemExit(f"the first service ended with {child.returncode}, not its crash")
    print(f"the state holds {len(StreamingGate.load(state))} runs")

    agent(runs_path, 320, 80)  # the agent goes on writing while the service is down
    with start(state, runs_path) as gate:
        # the final report is the batch gate's on every run in the file (the bad line aside)
        runs = [json.loads(line) for line in runs_path.read_text().splitlines()]
        batch = GATE.evaluate(
            Ledger.from_records(r for r in runs if r["run_id"] != "run-bad"), gate.candidates
        )
        keys = ["fact_id", "decision", "reason", "trials", "baseline_runs"]
        same = gate.report().to_frame()[keys].equals(batch.to_frame()[keys])
        print(f"{len(gate)} runs; identical to the batch gate: {same}")
    leftovers = sorted(p.name for p in workdir.iterdir() if p.suffix in (".tmp", ".lock"))
    print(f"left behind: {leftovers}")
    if not same or leftovers:
        raise SystemExit(1)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--serve":
        serve_and_crash(Path(sys.argv[2]))
    else:
        main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp()))
