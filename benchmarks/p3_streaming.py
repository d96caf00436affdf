"""Benchmark P3: a streaming gate deciding after every run, against re-evaluating the ledger.

``StreamingGate(CycgraphGate(...))`` records 20,000 runs one by one on 300 lessons (8
distinct lessons a run, scores ``clip(0.6 + effects + N(0, 0.1), 0, 1)``), each
``record()`` returning the decisions that changed.  Per-run time: the median and the
99th percentile (goal: at most 1 ms a run), in wall-clock time and in the thread's CPU
time (the machine is shared: wall-clock tails are the scheduler's, CPU time is ours).

Side by side, the batch alternative: a :class:`~cogstats.Ledger` that records each run and
``gate.evaluate(ledger)`` after it.  It is timed on a sample of runs (every
``SAMPLE_EVERY``-th run: record + evaluate) and scaled to all runs; at every sampled run
the streaming report is compared with the batch one (decisions, reasons, why, trials and
baseline runs identical, evidence to 1e-9), and so is the final report.  Both of cycgraph's
rules.  Also timed: ``report()`` (the full frame), ``save`` and ``load`` at the end.

Run: ``.venv/bin/python -m benchmarks.p3_streaming [--quick] [--json PATH]``.
"""

from __future__ import annotations

import math
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._common import cli, machine
from cogstats import Ledger
from cogstats.gates import CycgraphGate, StreamingGate

SEED = 20261201
N_LESSONS = 300
PER_RUN = 8
TARGET_S = 1e-3
SAMPLE_EVERY = 250
KEYS = ("fact_id", "decision", "reason", "why", "trials", "baseline_runs")
EVIDENCE = ("lift", "se", "df", "confidence_promote", "confidence_evict", "estimate", "std_error")


def make_runs(n_runs: int, seed: int = SEED) -> list[tuple[str, float, list[str]]]:
    """The P3 runs: 8 distinct lessons of 300 a run, effects ~ N(0, 0.05)."""
    rng = np.random.default_rng(seed)
    effects = rng.normal(0.0, 0.05, N_LESSONS)
    names = [f"L{j}" for j in range(N_LESSONS)]
    runs = []
    for i in range(n_runs):
        ids = rng.choice(N_LESSONS, PER_RUN, replace=False)
        score = float(np.clip(0.6 + effects[ids].sum() + rng.normal(0.0, 0.1), 0.0, 1.0))
        runs.append((f"r{i}", score, [names[j] for j in ids]))
    return runs


def compare(stream: Any, batch: Any) -> tuple[bool, float]:
    """(decisions etc. identical, largest relative difference of the evidence)."""
    a, b = stream.to_frame(), batch.to_frame()
    same = all(a[c].to_list() == b[c].to_list() for c in KEYS)
    worst = 0.0
    for c in EVIDENCE:
        for u, v in zip(a[c].to_list(), b[c].to_list(), strict=True):
            if (u is None) != (v is None):
                return False, math.inf
            if u is not None and v is not None and (u != v):
                worst = max(worst, abs(u - v) / max(abs(u), abs(v), 1e-300))
    return same, worst


def _quantiles(values: list[float]) -> dict[str, float]:
    a = np.asarray(values)
    return {
        "median_s": float(np.median(a)),
        "p99_s": float(np.percentile(a, 99)),
        "p999_s": float(np.percentile(a, 99.9)),
        "max_s": float(a.max()),
        "mean_s": float(a.mean()),
        "total_s": float(a.sum()),
    }


def run_rule(rule: str, runs: list[tuple[str, float, list[str]]]) -> dict[str, Any]:
    """Stream every run through one rule; sample the batch alternative alongside."""
    gate = CycgraphGate(decision_rule=rule, min_trials=3)
    sg = StreamingGate(gate)
    ledger = Ledger()
    wall: list[float] = []
    cpu: list[float] = []
    changed_runs = 0
    changed_rows = 0
    batch_samples: list[tuple[int, float]] = []
    mismatches = 0
    worst = 0.0
    for k, (run_id, score, ids) in enumerate(runs, start=1):
        t_cpu = time.thread_time()
        t = time.perf_counter()
        changed = sg.record(run_id, score, ids)
        wall.append(time.perf_counter() - t)
        cpu.append(time.thread_time() - t_cpu)
        rows = changed.to_frame().height
        changed_runs += rows > 0
        changed_rows += rows
        if k % SAMPLE_EVERY == 0 or k == len(runs):
            t = time.perf_counter()
            ledger.record(run_id, score, ids)
            batch = gate.evaluate(ledger)
            batch_samples.append((k, time.perf_counter() - t))
            same, diff = compare(sg.report(), batch)
            mismatches += not same
            worst = max(worst, diff)
        else:
            ledger.record(run_id, score, ids)
    t = time.perf_counter()
    sg._cache = None  # a report computed afresh (a look after the last run is cached)
    final = sg.report()
    report_s = time.perf_counter() - t
    t = time.perf_counter()
    sg.report()
    report_cached_s = time.perf_counter() - t
    final_batch = gate.evaluate(ledger)
    final_same, final_diff = compare(final, final_batch)
    # the batch alternative over every run: each sample stands for SAMPLE_EVERY runs
    batch_total = sum(s for _, s in batch_samples[:-1]) * SAMPLE_EVERY + batch_samples[-1][1]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "gate.npz"
        t = time.perf_counter()
        sg.save(path)
        save_s = time.perf_counter() - t
        size = path.stat().st_size
        t = time.perf_counter()
        back = StreamingGate.load(path)
        load_s = time.perf_counter() - t
        loaded_same = back.report().to_frame().equals(final.to_frame())
    stream = _quantiles(wall)
    stream_cpu = _quantiles(cpu)
    counts = dict(final.to_frame()["decision"].value_counts().iter_rows())
    return {
        "stream_wall": stream,
        "stream_cpu": stream_cpu,
        "changed_runs": changed_runs,
        "changed_rows": changed_rows,
        "near_tie_recomputes": sg.stats.recomputed,
        "batch_per_run_at_end_s": batch_samples[-1][1],
        "batch_samples": [[k, s] for k, s in batch_samples],
        "batch_total_scaled_s": batch_total,
        "ratio_total": batch_total / stream["total_s"],
        "ratio_per_run_at_end": batch_samples[-1][1] / stream["median_s"],
        "sampled_reports_identical": mismatches == 0,
        "sampled_max_rel_diff": worst,
        "final_identical": final_same,
        "final_max_rel_diff": final_diff,
        "report_s": report_s,
        "report_cached_s": report_cached_s,
        "save_s": save_s,
        "load_s": load_s,
        "state_bytes": size,
        "loaded_identical": loaded_same,
        "decision_counts": counts,
        "meets_target_median": stream["median_s"] <= TARGET_S,
        "meets_target_p99_wall": stream["p99_s"] <= TARGET_S,
        "meets_target_p99_cpu": stream_cpu["p99_s"] <= TARGET_S,
    }


def run(quick: bool = False) -> dict[str, Any]:
    """Time both rules on the P3 stream; return the figures."""
    n_runs = 4000 if quick else 20_000
    runs = make_runs(n_runs)
    load_before = os.getloadavg()[0]
    rules = {rule: run_rule(rule, runs) for rule in ("inference", "margin")}
    out = {
        "benchmark": "P3",
        "quick": quick,
        "seed": SEED,
        "n_runs": n_runs,
        "n_lessons": N_LESSONS,
        "lessons_per_run": PER_RUN,
        "sample_every": SAMPLE_EVERY,
        "target_per_run_s": TARGET_S,
        "rules": rules,
        "all_identical": all(
            r["final_identical"] and r["sampled_reports_identical"] and r["loaded_identical"]
            for r in rules.values()
        ),
        "load_average_1min_before": load_before,
        "load_average_1min_after": os.getloadavg()[0],
        "machine": machine(),
    }
    print(f"P3  StreamingGate(cycgraph), {n_runs} runs x {N_LESSONS} lessons ({PER_RUN} a run)")
    for rule, r in rules.items():
        w, c = r["stream_wall"], r["stream_cpu"]
        print(
            f"  {rule:9s} record: median {w['median_s'] * 1e3:.3f} ms, p99 "
            f"{w['p99_s'] * 1e3:.3f} ms wall ({c['median_s'] * 1e3:.3f} / "
            f"{c['p99_s'] * 1e3:.3f} ms CPU); batch re-evaluation "
            f"{r['batch_per_run_at_end_s'] * 1e3:.1f} ms a run at the end, "
            f"{r['batch_total_scaled_s']:.0f} s in all against {w['total_s']:.1f} s "
            f"({r['ratio_total']:.0f}x); {r['near_tie_recomputes']} near-tie recomputes; "
            f"identical: {r['final_identical']} "
            f"(sampled {r['sampled_reports_identical']}, max rel diff "
            f"{max(r['final_max_rel_diff'], r['sampled_max_rel_diff']):.1e})"
        )
    print(
        f"  load average {out['load_average_1min_before']:.1f} -> "
        f"{out['load_average_1min_after']:.1f} on {out['machine']['cores']} cores"
    )
    return out


if __name__ == "__main__":
    cli(run, __doc__)
