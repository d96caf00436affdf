"""A minimal service loop around a streaming gate: decide after every run, survive restarts.

The agent (simulated here) appends each run to ``runs.jsonl`` and hands it to the service.
The service

1. starts from its saved state if it has one (no history is re-read), else from scratch;
2. catches up with the file (``ingest``: a byte marker saved with the state, so a line is
   read once; a malformed line is skipped and listed);
3. records each run as it arrives (``record``), acts on the decisions that changed
   (promoted and evicted lessons leave the candidates, as a lesson store retires them),
   and saves its state every ``SAVE_EVERY`` runs (a temporary file, then a rename).

Runs recorded live after the last save are lost in a crash and read again from the file
on restart; runs that were saved are read again too (the marker only follows ``ingest``)
and replace themselves: recording a run id again replaces that run, so nothing counts
twice.

Run it: ``python examples/production_gate.py [WORKDIR]`` (default: a temporary folder).
It crashes the service once, restarts it, and checks the final report against the batch
gate on the whole file.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import numpy as np

from cogstats import Ledger
from cogstats.gates import CycgraphGate, GateReport, StreamingGate

SAVE_EVERY = 50
LESSONS = [f"lesson-{j}" for j in range(30)]  # the lesson store's candidates, in store order
GATE = CycgraphGate(decision_rule="inference", min_trials=5)


def agent(runs_path: Path, first: int, count: int, rng: np.random.Generator) -> list[dict]:
    """Stand-in for the agent: ``count`` runs with 4 of the 30 lessons, appended to the file."""
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
    """Load the saved state (or start afresh with every lesson a candidate) and catch up."""
    gate = StreamingGate.load(state) if state.exists() else StreamingGate(GATE, candidates=LESSONS)
    before = len(gate)
    caught_up = gate.ingest(runs_path, on_error="skip")  # only the lines after the marker
    print(
        f"started with {before} runs; read {caught_up.lines} lines, "
        f"{len(gate) - before} runs new to the state"
    )
    act(gate, caught_up.changed)
    gate.save(state)
    return gate


def main(workdir: Path) -> None:
    """Run the service, crash it, restart it, and compare with the batch gate."""
    rng = np.random.default_rng(7)
    runs_path, state = workdir / "runs.jsonl", workdir / "gate-state.npz"
    agent(runs_path, 0, 200, rng)  # runs written before the service first starts
    with runs_path.open("a") as fh:
        fh.write('{"run_id": "run-bad", "score": 7}\n')  # malformed: skipped and listed

    gate = start(state, runs_path)
    print("skipped:", [(s.line, s.error.split(": ", 1)[-1]) for s in gate.skipped])
    for run in agent(runs_path, 200, 120, rng):  # live: each run reaches the service
        act(gate, gate.record(run["run_id"], run["score"], run["fact_ids"]))
        if len(gate) % SAVE_EVERY == 0:
            gate.save(state)
    print(f"crash after {len(gate)} runs (the state holds {len(StreamingGate.load(state))})")
    del gate

    agent(runs_path, 320, 80, rng)  # the agent goes on writing while the service is down
    gate = start(state, runs_path)

    # the final report is the batch gate's on every run in the file (the bad line aside)
    runs = [json.loads(line) for line in runs_path.read_text().splitlines()]
    batch = GATE.evaluate(
        Ledger.from_records(r for r in runs if r["run_id"] != "run-bad"), gate.candidates
    )
    keys = ["fact_id", "decision", "reason", "trials", "baseline_runs"]
    same = gate.report().to_frame()[keys].equals(batch.to_frame()[keys])
    print(f"{len(gate)} runs; identical to the batch gate: {same}")
    if not same:
        raise SystemExit(1)


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp()))
