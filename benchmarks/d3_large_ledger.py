"""Benchmark D3: a 200 MB ledger read and gated in bounded memory (issue 19, item 7).

Issue 19 measured a 200 MB JSON Lines ledger at 51 s and 2.2 GB (ten times the file).
The goal: peak resident memory minus the resident memory after import at most twice the
ledger's in-memory size, and the read plus a gate decision within 15 s.

The ledgers (seeded, written to a temporary folder): runs of 8 lesson ids each among
3,000 lessons (neighbouring ids, as a retriever picks related lessons), a score and one
covariate, ``difficulty``; JSON Lines of exactly 200,000,000 bytes (1,000,000 runs,
200 bytes a line) and CSV of the same runs' layout (ids separated by spaces, as
``Ledger.write`` writes them) up to 200 MB (1,700,000 runs: a CSV line is shorter).

Each measurement runs in a fresh process (``python -m benchmarks.d3_large_ledger --child
CASE PATH``) that first imports cogstats and makes the same call on a three-run file (so
every module the call loads is loaded), collects garbage and reads its resident memory
(``/proc/self/statm``: the *base*); then it times the call, wall and CPU
(``time.process_time``, which the other jobs of a shared machine do not inflate), and
takes the peak resident memory from the kernel (``VmHWM`` of ``/proc/self/status``,
reset to the current size at the base by writing 5 to ``/proc/self/clear_refs``: exact,
and blind to the imports' own peak).  Cases:

- ``read_gate``: ``Ledger.read(path)`` then ``CycgraphGate().evaluate(ledger)`` (the
  resident memory after the read, collected, is the ledger's *resident* size);
- ``ingest``: ``StreamingGate(CycgraphGate()).ingest(path)`` (JSON Lines only);
- ``size``: the ledger's *in-memory size*: ``sys.getsizeof`` of every object the Ledger
  holds (its lists and index, each run id, score, lesson list and covariate value, each
  distinct lesson id once); it equals ``tracemalloc``'s count of the Python heap a read
  leaves allocated (checked at 200,000 runs: 65.76 MB both) and leaves out the
  allocator's rounding, so it is the smaller, stricter denominator.  For scale, the same
  runs as a polars frame: ``ledger.frame.estimated_size()``.

Run: ``.venv/bin/python -m benchmarks.d3_large_ledger [--quick] [--json PATH]``
(``--quick``: 100,000 runs, 20 MB).  About 3 minutes on the shared 2-core machine.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._common import cli, machine

SEED = 20261204
N_LESSONS = 3_000
PER_RUN = 8
JSONL_RUNS = 1_000_000  # 200 bytes a line: 200,000,000 bytes
CSV_BYTES = 200_000_000
GOAL_RATIO = 2.0
GOAL_SECONDS = 15.0
CHUNK = 100_000


# ---------------------------------------------------------------------- the ledgers
def _chunks(n_runs: int | None, seed: int) -> Any:
    """Yield (first run number, lesson numbers, scores, difficulty) in chunks of runs."""
    rng = np.random.default_rng(seed)
    effects = rng.normal(0.0, 0.02, N_LESSONS)
    start = 0
    while n_runs is None or start < n_runs:
        m = CHUNK if n_runs is None else min(CHUNK, n_runs - start)
        # 8 distinct lessons among 64 neighbours of a random one
        near = np.argsort(rng.random((m, 64)), axis=1)[:, :PER_RUN]
        lessons = rng.integers(0, N_LESSONS - 64, m)[:, None] + near
        difficulty = rng.random(m)
        noise = rng.normal(0.0, 0.1, m)
        scores = np.clip(0.6 - 0.2 * difficulty + effects[lessons].sum(axis=1) + noise, 0, 1)
        yield start, lessons, scores, difficulty
        start += m


IDS = [f"lesson-{j:04d}" for j in range(N_LESSONS)]


def write_jsonl(path: Path, n_runs: int, seed: int = SEED) -> int:
    """Write ``n_runs`` runs as JSON Lines (200 bytes a line); return the runs."""
    with path.open("w") as fh:
        for start, lessons, scores, difficulty in _chunks(n_runs, seed):
            lines = []
            for i in range(len(scores)):
                facts = ", ".join(f'"{IDS[j]}"' for j in lessons[i])
                lines.append(
                    f'{{"run_id": "run-{start + i:08d}", "score": {scores[i]:.4f}, '
                    f'"fact_ids": [{facts}], "difficulty": {difficulty[i]:.4f}}}\n'
                )
            fh.write("".join(lines))
    return n_runs


def write_csv(path: Path, target_bytes: int, seed: int = SEED) -> int:
    """Write runs as CSV until the file holds ``target_bytes``; return the runs."""
    size = runs = 0
    with path.open("w") as fh:
        fh.write("run_id,score,fact_ids,difficulty\n")
        for start, lessons, scores, difficulty in _chunks(None, seed):
            text = "".join(
                f"run-{start + i:08d},{scores[i]:.4f},"
                f"{' '.join(IDS[j] for j in lessons[i])},{difficulty[i]:.4f}\n"
                for i in range(len(scores))
            )
            fh.write(text)
            size += len(text)
            runs = start + len(scores)
            if size >= target_bytes:
                return runs
    return runs  # pragma: no cover


# ---------------------------------------------------------------------- the child process
def _rss() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _reset_peak() -> None:
    """Reset the kernel's peak resident size of this process to its current size (Linux)."""
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")


def _peak() -> int:
    """The peak resident size since :func:`_reset_peak` (``VmHWM``; exact, kept by the kernel)."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM in /proc/self/status: this benchmark needs Linux")


def ledger_bytes(ledger: Any) -> int:
    """``sys.getsizeof`` of every object a Ledger holds, each counted once."""
    seen: set[int] = set()
    total = 0

    def add(obj: Any) -> None:
        nonlocal total
        if id(obj) not in seen:
            seen.add(id(obj))
            total += sys.getsizeof(obj)

    for obj in (ledger._run_ids, ledger._scores, ledger._fact_ids, ledger._index):
        add(obj)
    add(ledger._covariates)
    for obj in ledger._run_ids:
        add(obj)
    for obj in ledger._scores:
        add(obj)
    for facts in ledger._fact_ids:
        add(facts)
        for f in facts:
            add(f)
    for obj in ledger._index.values():
        add(obj)
    for values in ledger._covariates.values():
        add(values)
        for obj in values:
            add(obj)
    return total


def child(case: str, path: str) -> dict[str, Any]:
    """One measurement in this (fresh) process; see the module docstring."""
    from cogstats import Ledger
    from cogstats.gates import CycgraphGate, StreamingGate

    src = Path(path)
    small = src.with_name("warm" + src.suffix)
    with src.open() as fh, small.open("w") as out:
        for _ in range(4 if src.suffix == ".csv" else 3):
            out.write(fh.readline())
    if case == "ingest":
        StreamingGate(CycgraphGate()).ingest(small)
    else:
        CycgraphGate().evaluate(Ledger.read(small))
    gc.collect()
    out: dict[str, Any] = {"case": case}
    if case == "size":
        ledger = Ledger.read(src)
        gc.collect()
        out["runs"] = len(ledger)
        out["ledger_bytes"] = ledger_bytes(ledger)
        out["frame_bytes"] = int(ledger.frame.estimated_size())
        return out
    base = _rss()
    _reset_peak()  # the imports' own peak is not the call's
    t0, c0 = time.perf_counter(), time.process_time()
    if case == "ingest":
        sg = StreamingGate(CycgraphGate())
        result = sg.ingest(src)
        t1, c1 = time.perf_counter(), time.process_time()
        out["runs"] = result.recorded
        report = sg.report()
        t2, c2 = time.perf_counter(), time.process_time()
        out["read_s"], out["read_cpu_s"] = t1 - t0, c1 - c0
        out["rss_after_read"] = _rss() - base
        out["peak_read"] = _peak() - base
    else:
        ledger = Ledger.read(src)
        t1, c1 = time.perf_counter(), time.process_time()
        out["peak_read"] = _peak() - base
        gc.collect()
        out["rss_after_read"] = _rss() - base
        out["read_s"], out["read_cpu_s"] = t1 - t0, c1 - c0
        out["runs"] = len(ledger)
        t1, c1 = time.perf_counter(), time.process_time()
        report = CycgraphGate().evaluate(ledger)
        t2, c2 = time.perf_counter(), time.process_time()
    out["gate_s"], out["gate_cpu_s"] = t2 - t1, c2 - c1
    out["total_s"], out["total_cpu_s"] = t2 - t0, c2 - c0
    out["peak"] = _peak() - base
    out["base_rss"] = base
    frame = report.to_frame()
    out["decisions"] = {
        d: int(frame.filter(frame["decision"] == d).height) for d in ("promote", "evict", "hold")
    }
    return out


def _spawn(case: str, path: Path) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.d3_large_ledger", "--child", case, str(path)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"child {case} {path} failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def run(quick: bool = False) -> dict[str, Any]:
    """Write the two ledgers, measure each case in a fresh process; return the figures."""
    n_jsonl = 100_000 if quick else JSONL_RUNS
    csv_target = 20_000_000 if quick else CSV_BYTES
    out: dict[str, Any] = {
        "benchmark": "d3_large_ledger",
        "seed": SEED,
        "lessons": N_LESSONS,
        "lessons_per_run": PER_RUN,
        "goal_peak_over_ledger": GOAL_RATIO,
        "goal_seconds": GOAL_SECONDS,
    }
    with tempfile.TemporaryDirectory(prefix="cogstats-d3-") as tmp:
        jsonl, csv_path = Path(tmp) / "runs.jsonl", Path(tmp) / "runs.csv"
        t = time.perf_counter()
        write_jsonl(jsonl, n_jsonl)
        write_csv(csv_path, csv_target)
        out["write_s"] = time.perf_counter() - t
        for fmt, path in (("jsonl", jsonl), ("csv", csv_path)):
            size = _spawn("size", path)
            fig: dict[str, Any] = {"file_bytes": path.stat().st_size, **size}
            fig["read_gate"] = _spawn("read_gate", path)
            if fmt == "jsonl":
                fig["ingest"] = _spawn("ingest", path)
            for case in ("read_gate", "ingest"):
                if case not in fig:
                    continue
                c = fig[case]
                c["peak_over_ledger"] = c["peak"] / fig["ledger_bytes"]
                c["peak_over_resident"] = c["peak"] / fig["read_gate"]["rss_after_read"]
                c["peak_over_frame"] = c["peak"] / fig["frame_bytes"]
                c["peak_over_file"] = c["peak"] / fig["file_bytes"]
            out[fmt] = fig
    out["machine"] = machine()
    for fmt in ("jsonl", "csv"):
        fig = out[fmt]
        mb = 1e6
        print(
            f"D3 {fmt}: {fig['file_bytes'] / mb:.0f} MB, {fig['runs']:,} runs; ledger in "
            f"memory {fig['ledger_bytes'] / mb:.0f} MB (resident "
            f"{fig['read_gate']['rss_after_read'] / mb:.0f} MB; as a polars frame "
            f"{fig['frame_bytes'] / mb:.0f} MB)"
        )
        for case in ("read_gate", "ingest"):
            if case in fig:
                c = fig[case]
                print(
                    f"  {case}: {c['total_s']:.1f} s wall, {c['total_cpu_s']:.1f} s CPU "
                    f"(read {c['read_cpu_s']:.1f} s, gate {c['gate_cpu_s']:.1f} s); peak - "
                    f"import {c['peak'] / mb:.0f} MB = {c['peak_over_ledger']:.2f}x the "
                    f"ledger ({c['peak_over_resident']:.2f}x resident, "
                    f"{c['peak_over_file']:.2f}x the file); decisions {c['decisions']}"
                )
    return out


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        print(json.dumps(child(sys.argv[2], sys.argv[3])))
    else:
        cli(run, __doc__)
