"""Benchmark D2: restart catch-up by re-ingesting runs already recorded, against a fresh ingest.

A service restarted from its saved state may re-read a JSON Lines file whose runs it has
recorded already (by :meth:`StreamingGate.record`, which keeps no file marker, or from a
copy of the file).  Re-recording a run with identical content is an O(1) no-op (no
statistics updated, no look judged again), so the catch-up should cost about what
parsing and validating the lines costs.  Issue 19's figure before: 16,000 runs, 12.3 s
catch-up against 0.54 s fresh (quadratic: every repeat replaced its run in O(runs)).

Side by side, in one process, on the same seeded file (P3's runs: 8 lessons of 300 a
run, ``CycgraphGate()``): ``fresh``, a new gate ingesting the 16,000 lines;
``catch_up``, a gate loaded from the state saved after recording the same 16,000 runs
(``load`` timed apart) ingesting the file again.  Both report the same decisions
(checked).  Median of ``REPEATS`` timings each.  Goal: catch-up within 2x the fresh
ingest.  A third figure, ``settled``: a service that ingested the first half of the file
and recorded the second half live (each run appended to the file and handed to
``record``) saves; the save moves the marker past the runs it recorded live, so the
restarted gate's ingest reads no line at all (``settled_lines``: 0) instead of parsing the
8,000 recorded ones again.

Run: ``.venv/bin/python -m benchmarks.d2_catch_up [--quick] [--json PATH]``.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._common import cli, machine
from benchmarks.p3_streaming import SEED, make_runs
from cogstats.gates import CycgraphGate, StreamingGate

N_RUNS = 16_000
REPEATS = 3
GOAL = 2.0


def run(quick: bool = False) -> dict[str, Any]:
    """Time a fresh ingest and a catch-up of the same runs (seeded); return the figures."""
    n = 4_000 if quick else N_RUNS
    repeats = 2 if quick else REPEATS
    runs = make_runs(n, seed=SEED)
    gate = CycgraphGate()
    with tempfile.TemporaryDirectory() as tmp:
        ledger = Path(tmp) / "runs.jsonl"
        ledger.write_text(
            "".join(json.dumps({"run_id": r, "score": s, "fact_ids": f}) + "\n" for r, s, f in runs)
        )
        recorded = StreamingGate(gate)
        for r, s, f in runs:
            recorded.record(r, s, f)
        state = recorded.save(Path(tmp) / "state.npz")
        half = Path(tmp) / "half.jsonl"  # the service's own log, half ingested, half live
        lines = ledger.read_text().splitlines(keepends=True)
        half.write_text("".join(lines[: n // 2]))
        live = StreamingGate(gate)
        live.ingest(half)
        with half.open("a") as fh:
            fh.writelines(lines[n // 2 :])
        for r, s, f in runs[n // 2 :]:
            live.record(r, s, f)
        t0 = time.perf_counter()
        settled_state = live.save(Path(tmp) / "settled.npz")
        settle_save_s = time.perf_counter() - t0
        settled = StreamingGate.load(settled_state, gate=gate)
        t0 = time.perf_counter()
        settled_result = settled.ingest(half)
        settled_s = time.perf_counter() - t0
        assert settled_result.recorded == 0
        assert len(settled) == n
        fresh_s, catch_s, load_s = [], [], []
        for _ in range(repeats):
            sg = StreamingGate(gate)
            t0 = time.perf_counter()
            fresh = sg.ingest(ledger)
            fresh_s.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            back = StreamingGate.load(state, gate=gate)
            load_s.append(time.perf_counter() - t0)
            version = back.stats.version
            t0 = time.perf_counter()
            again = back.ingest(ledger)
            catch_s.append(time.perf_counter() - t0)
            assert back.stats.version == version, "a catch-up changed the statistics"
            assert fresh.recorded == again.recorded == n
            same = sg.report().to_frame().equals(back.report().to_frame())
            assert same, "the caught-up gate reports differently"
    fm, cm = statistics.median(fresh_s), statistics.median(catch_s)
    out = {
        "benchmark": "d2_catch_up",
        "runs": n,
        "seed": SEED,
        "repeats": repeats,
        "fresh_ingest_s": fm,
        "catch_up_ingest_s": cm,
        "load_s": statistics.median(load_s),
        "settled_ingest_s": settled_s,
        "settled_lines": settled_result.lines,
        "settled_save_s": settle_save_s,
        "ratio": cm / fm,
        "goal_ratio": GOAL,
        "meets_goal": cm / fm <= GOAL,
        "fresh_all_s": fresh_s,
        "catch_up_all_s": catch_s,
        "machine": machine(),
    }
    print(
        f"D2 catch-up, {n} runs (seed {SEED}, median of {repeats}): fresh ingest {fm:.3f} s, "
        f"catch-up {cm:.3f} s (ratio {cm / fm:.2f}, goal <= {GOAL}); load {out['load_s']:.3f} s; "
        f"after live records and a save (which moved the marker, {settle_save_s:.3f} s): "
        f"{settled_result.lines} lines read, {settled_s:.4f} s"
    )
    return out


if __name__ == "__main__":
    cli(run, __doc__)
