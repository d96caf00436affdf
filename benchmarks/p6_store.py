"""Benchmark P6: a lesson store in a live agent, at 1,000 lessons and 100,000 runs.

A :class:`cogstats.LessonStore` with the recommended preset (``max_facts`` 12,
``candidate_slots`` 6) holds 100,000 runs of history (``import_history``: 8 lessons a run
among those arrived, 1,000 lessons arriving one every 90 runs, effects ~ N(0, 0.03), ten
poisons at -0.2, a difficulty proxy); then the agent runs live: per run one ``select``
and one ``record`` (the journal line fsynced, the gate's look, the outcomes applied).
Timed per run, wall and the thread's CPU: ``select``, ``record``, and their sum (the
median and the 99th percentile; goal: a median of at most 5 ms).

Beside it, on the same machine in the same process:

- the same store with the batch fit at every look (the incremental look off: the
  lifecycle gate's own ``decide`` on the statistics), a few runs;
- ``StreamingGate(LifecycleGate()).record`` alone at 1,000 lessons (a history of 3,000
  runs ingested: a streaming gate's record costs the same at any number of runs);
- the journal's fsync alone (one line appended and fsynced, against appended only), the
  share of ``record`` that depends on the disk;
- memory: the store's allocations (tracemalloc: runs, statistics, lifecycle) against the
  same runs held as a :class:`~cogstats.Ledger` (goal: at most 2x).

Run: ``.venv/bin/python -m benchmarks.p6_store [--quick] [--json PATH]``.
"""

from __future__ import annotations

import gc
import json
import os
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._common import cli, machine

SEED = 20261206
N_LESSONS = 1000
PER_RUN = 8
ARRIVE_EVERY = 90
TARGET_S = 5e-3


def make_history(n_runs: int, seed: int = SEED) -> tuple[list[tuple[Any, ...]], dict[str, Any]]:
    """The history: ``n_runs`` runs of 8 lessons among those arrived; the world."""
    rng = np.random.default_rng(seed)
    effects = rng.normal(0.0, 0.03, N_LESSONS)
    effects[rng.choice(N_LESSONS, 10, replace=False)] = -0.2
    names = [f"lesson-{j:04d}" for j in range(N_LESSONS)]
    runs = []
    for i in range(n_runs):
        avail = min(N_LESSONS, 1 + i // ARRIVE_EVERY)
        ids = rng.choice(avail, min(PER_RUN, avail), replace=False)
        d = float(rng.normal(0.0, 0.1))
        y = float(np.clip(0.6 + d + effects[ids].sum() + rng.normal(0.0, 0.05), 0.0, 1.0))
        runs.append((f"h{i}", y, [names[j] for j in ids], {"difficulty_proxy": d}))
    return runs, {"effects": effects, "names": names, "rng": rng}


def _quantiles(values: list[float]) -> dict[str, float]:
    a = np.asarray(values)
    return {
        "median_s": float(np.median(a)),
        "p99_s": float(np.percentile(a, 99)),
        "max_s": float(a.max()),
        "mean_s": float(a.mean()),
    }


def live(store: Any, world: dict[str, Any], n: int, first: int = 0) -> dict[str, Any]:
    """``n`` live runs (ids from ``first``): select, then record; wall and CPU times."""
    rng, effects, names = world["rng"], world["effects"], world["names"]
    index = {f: j for j, f in enumerate(names)}
    sel_w, rec_w, sel_c, rec_c, both_w, both_c = [], [], [], [], [], []
    changes = 0
    for i in range(first, first + n):
        c0, w0 = time.thread_time(), time.perf_counter()
        sel = store.select(rng=rng)
        c1, w1 = time.thread_time(), time.perf_counter()
        d = float(rng.normal(0.0, 0.1))
        eff = sum(effects[index[f]] for f in sel.fact_ids)
        y = float(np.clip(0.6 + d + eff + rng.normal(0.0, 0.05), 0.0, 1.0))
        c2, w2 = time.thread_time(), time.perf_counter()
        changes += len(store.record(f"live{i}", y, sel, {"difficulty_proxy": d}))
        c3, w3 = time.thread_time(), time.perf_counter()
        sel_w.append(w1 - w0)
        sel_c.append(c1 - c0)
        rec_w.append(w3 - w2)
        rec_c.append(c3 - c2)
        both_w.append(w1 - w0 + w3 - w2)
        both_c.append(c1 - c0 + c3 - c2)
    return {
        "runs": n,
        "select_wall": _quantiles(sel_w),
        "select_cpu": _quantiles(sel_c),
        "record_wall": _quantiles(rec_w),
        "record_cpu": _quantiles(rec_c),
        "select_record_wall": _quantiles(both_w),
        "select_record_cpu": _quantiles(both_c),
        "status_changes": changes,
    }


def fsync_cost(folder: Path, n: int = 200) -> dict[str, float]:
    """One journal line appended and fsynced, against appended only (the disk's share)."""
    from cogstats.store.journal import Journal

    synced, plain = [], []
    for sync, out in ((1, synced), (10**9, plain)):
        path = folder / f"fsync-{sync}.jsonl"
        j = Journal(path, 0, sync_every=sync)
        op = {"op": "run", "run": 1, "run_id": "x" * 12, "score": 0.5, "fact_ids": ["a"] * 8}
        for _ in range(n):
            t = time.perf_counter()
            j.append(op)
            out.append(time.perf_counter() - t)
        j.close()
        path.unlink()
    return {
        "append_fsync_median_s": float(np.median(synced)),
        "append_fsync_p99_s": float(np.percentile(synced, 99)),
        "append_only_median_s": float(np.median(plain)),
        "fsync_median_s": float(np.median(synced) - np.median(plain)),
    }


def streaming_gate_alone(history: list[tuple[Any, ...]], n_hist: int, n: int) -> dict[str, Any]:
    """``StreamingGate(LifecycleGate()).record`` at 1,000 lessons (``n_hist`` runs ingested)."""
    from cogstats.gates import LifecycleGate, StreamingGate

    # the last n_hist runs of the history hold every lesson; ingested, one look at the end
    runs = history[-n_hist - n :]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "runs.jsonl"
        with path.open("w") as fh:
            for run_id, y, ids, covs in runs[:n_hist]:
                fh.write(json.dumps({"run_id": run_id, "score": y, "fact_ids": ids, **covs}))
                fh.write("\n")
        sg = StreamingGate(LifecycleGate())
        t = time.perf_counter()
        sg.ingest(path)
        ingest_s = time.perf_counter() - t
    wall, cpu = [], []
    for run_id, y, ids, covs in runs[n_hist:]:
        c0, w0 = time.thread_time(), time.perf_counter()
        sg.record(run_id + "-sg", y, ids, **covs)
        wall.append(time.perf_counter() - w0)
        cpu.append(time.thread_time() - c0)
    return {
        "history_runs": n_hist,
        "lessons": len(sg.stats.fact_ids),
        "ingest_s": ingest_s,
        "record_wall": _quantiles(wall),
        "record_cpu": _quantiles(cpu),
    }


def memory(history: list[tuple[Any, ...]], folder: Path) -> dict[str, Any]:
    """The store's allocations against the same runs as a Ledger (tracemalloc)."""
    from cogstats import Ledger, LessonStore

    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    ledger = Ledger.from_records(
        {"run_id": r, "score": y, "fact_ids": ids, **covs} for r, y, ids, covs in history
    )
    ledger_bytes = tracemalloc.get_traced_memory()[0] - base
    del ledger
    gc.collect()
    base = tracemalloc.get_traced_memory()[0]
    store = LessonStore.open(folder / "mem", preset="recommended", max_facts=12, candidate_slots=6)
    store.import_history(history)
    gc.collect()
    store_bytes = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    store.close()
    return {
        "ledger_bytes": ledger_bytes,
        "store_bytes": store_bytes,
        "ratio": store_bytes / ledger_bytes,
    }


def run(quick: bool = False) -> dict[str, Any]:
    """Build the store, time the live runs and the references; return the figures."""
    from cogstats import LessonStore

    n_hist = 20_000 if quick else 100_000
    n_live = 20 if quick else 200
    history, world = make_history(n_hist + 50)
    live_world = {**world}
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        store = LessonStore.open(
            folder / "store", preset="recommended", max_facts=12, candidate_slots=6
        )
        t = time.perf_counter()
        imported = store.import_history(history[:n_hist])
        import_s = time.perf_counter() - t
        lessons = store.lessons().height
        times = live(store, live_world, n_live)
        fast = store._core.engine.fast  # the incremental look's counters
        counters = {
            "refreshes": fast.refreshes,
            "fallbacks": fast.fallbacks,
            "corrections": fast.corrections,
        }
        fast_fit = fast.fit
        fast.fit = lambda stats: None  # the batch fit at every look
        batch_times = live(store, live_world, 5 if quick else 10, first=n_live)
        fast.fit = fast_fit
        t = time.perf_counter()
        store.snapshot()
        snapshot_s = time.perf_counter() - t
        store.close()
        t = time.perf_counter()
        reopened = LessonStore.open(folder / "store", read_only=True)
        reopen_s = time.perf_counter() - t
        reopened.close()
        disk = fsync_cost(folder)
        mem = memory(history[:n_hist], folder) if not quick else memory(history[:5000], folder)
    alone = streaming_gate_alone(history, 3000, 10 if quick else 30)
    out = {
        "benchmark": "P6",
        "quick": quick,
        "seed": SEED,
        "history_runs": imported,
        "lessons": lessons,
        "import_s": import_s,
        "live": times,
        "incremental": counters,
        "live_batch_fit": batch_times,
        "snapshot_s": snapshot_s,
        "reopen_s": reopen_s,
        "fsync": disk,
        "streaming_gate_alone": alone,
        "memory": mem,
        "target_median_s": TARGET_S,
        "meets_target_median": times["select_record_wall"]["median_s"] <= TARGET_S,
        "load_average_1min_before": load_before,
        "load_average_1min_after": os.getloadavg()[0],
        "machine": machine(),
    }
    sr, s, r = times["select_record_wall"], times["select_wall"], times["record_wall"]
    print(f"P6  LessonStore, recommended preset: {lessons} lessons, {imported} runs of history")
    print(f"  import_history: {import_s:.1f} s ({import_s / imported * 1e6:.0f} us a run)")
    print(
        f"  select + record: median {sr['median_s'] * 1e3:.1f} ms, p99 "
        f"{sr['p99_s'] * 1e3:.1f} ms wall (select {s['median_s'] * 1e3:.1f} / "
        f"{s['p99_s'] * 1e3:.1f}, record {r['median_s'] * 1e3:.1f} / {r['p99_s'] * 1e3:.1f}); "
        f"CPU median {times['select_record_cpu']['median_s'] * 1e3:.1f} ms; goal 5 ms"
    )
    b = batch_times["select_record_wall"]
    print(
        f"  the same store, batch fit at every look: median {b['median_s'] * 1e3:.0f} ms, "
        f"p99 {b['p99_s'] * 1e3:.0f} ms wall (CPU median "
        f"{batch_times['select_record_cpu']['median_s'] * 1e3:.0f} ms); incremental look: "
        f"{counters}"
    )
    a = alone["record_wall"]
    print(
        f"  StreamingGate(LifecycleGate()).record alone at {alone['lessons']} lessons: median "
        f"{a['median_s'] * 1e3:.1f} ms, p99 {a['p99_s'] * 1e3:.1f} ms"
    )
    print(
        f"  fsync: {disk['fsync_median_s'] * 1e3:.2f} ms a record (append + fsync "
        f"{disk['append_fsync_median_s'] * 1e3:.2f} ms, append alone "
        f"{disk['append_only_median_s'] * 1e3:.3f} ms)"
    )
    print(
        f"  memory: store {mem['store_bytes'] / 2**20:.0f} MB, ledger "
        f"{mem['ledger_bytes'] / 2**20:.0f} MB ({mem['ratio']:.2f}x; goal 2x)"
    )
    print(f"  snapshot {snapshot_s:.2f} s, reopen (read-only) {reopen_s:.2f} s")
    print(
        f"  load average {out['load_average_1min_before']:.1f} -> "
        f"{out['load_average_1min_after']:.1f} on {out['machine']['cores']} cores"
    )
    return out


if __name__ == "__main__":
    cli(run, __doc__)
