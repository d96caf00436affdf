"""Benchmark C1: the S1 grid with cycgraph's gate and retrieval, 999 replicates per cell.

Side by side in one run: the compiled engine on the whole grid (36 cells x 999 replicates,
about 1.66 million gated runs), and the plain-Python reference engine (library retrieval
and gate objects, the ledger rescanned every gate, as cycgraph runs it) on the first
``sample`` replicates of every cell, scaled to 999.  The sampled replicates of the two
engines must reach identical decisions (same seeds).  Compile time is measured apart
(numba caches compiled code on disk after the first run).

Run: ``python -m benchmarks.c1_simulation [--quick]``.
"""

from __future__ import annotations

import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._common import cli, machine
from cogstats.sim import load_spec, simulate

SPEC = Path(__file__).resolve().parents[1] / "simulations" / "cycgraph_oc.toml"
REPLICATES = 999


def _cells(seed: int) -> list[tuple[Any, np.random.SeedSequence]]:
    spec = load_spec(SPEC)
    cells = spec.cells()
    children = np.random.SeedSequence(seed).spawn(len(cells))
    return [(sc, ch) for (_, sc), ch in zip(cells, children, strict=True)]


def _run_cells(args: tuple[list[int], int, int]) -> float:
    idx, seed, reps = args
    cells = _cells(seed)
    t = time.perf_counter()
    for i in idx:
        sc, ch = cells[i]
        simulate(sc, replicates=reps, rng=ch, keep_runs=False, progress=False)
    return time.perf_counter() - t


def _warm(_: int) -> bool:
    sc, ch = _cells(0)[0]
    simulate(sc, replicates=2, rng=ch, keep_runs=False, progress=False)
    return True


def run(quick: bool = False) -> dict[str, Any]:
    """Time both engines on the S1 grid; return the figures (and print a short table)."""
    seed = 20261130
    sample = 2 if quick else 5
    cells = _cells(seed)
    gated_runs = sum(sc.runs for sc, _ in cells) * REPLICATES
    t = time.perf_counter()
    _warm(0)
    warmup = time.perf_counter() - t
    # compiled engine, one process
    fast_1 = _run_cells((list(range(len(cells))), seed, REPLICATES))
    # compiled engine, two warm worker processes (cells alternate between them)
    # spawn, not fork: polars' thread pool does not survive a fork
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        t = time.perf_counter()
        list(pool.map(_warm, range(2)))
        worker_start = time.perf_counter() - t
        t = time.perf_counter()
        halves = [(list(range(k, len(cells), 2)), seed, REPLICATES) for k in range(2)]
        list(pool.map(_run_cells, halves))
        fast_2 = time.perf_counter() - t
    # reference engine on a sample of every cell, and the decision cross-check
    t = time.perf_counter()
    identical = True
    for sc, ch in cells:
        ref = simulate(sc, replicates=sample, rng=ch, engine="reference", keep_runs=False)
        fast = simulate(sc, replicates=sample, rng=ch, keep_runs=False)
        identical &= ref.lessons.equals(fast.lessons)
    both = time.perf_counter() - t
    t = time.perf_counter()
    for sc, ch in cells:
        simulate(sc, replicates=sample, rng=ch, keep_runs=False)
    fast_sample = time.perf_counter() - t
    ref_sample = both - fast_sample
    ref_full = ref_sample * REPLICATES / sample
    out = {
        "benchmark": "C1",
        "cells": len(cells),
        "replicates_per_cell": REPLICATES,
        "gated_runs": gated_runs,
        "seed": seed,
        "compile_or_cache_load_s": warmup,
        "fast_1_process_s": fast_1,
        "fast_2_processes_s": fast_2,
        "worker_start_s": worker_start,
        "reference_sample_replicates": sample,
        "reference_sample_s": ref_sample,
        "reference_full_grid_s_estimated": ref_full,
        "speedup_1_process": ref_full / fast_1,
        "speedup_2_processes": ref_full / fast_2,
        "runs_per_second_1_process": gated_runs / fast_1,
        "decisions_identical_on_sample": bool(identical),
        "target_s": 2.0,
        "machine": machine(),
    }
    print("C1  S1 grid, 999 replicates x 36 cells")
    print(
        f"  compiled, 1 process      {fast_1:8.2f} s   ({gated_runs / fast_1 / 1e6:.2f} M runs/s)"
    )
    print(f"  compiled, 2 processes    {fast_2:8.2f} s   (worker start {worker_start:.1f} s apart)")
    print(f"  reference (estimated)    {ref_full:8.1f} s   from {sample} replicates per cell")
    print(
        f"  ratio                    {ref_full / fast_1:8.0f} x (1 process), "
        f"{ref_full / fast_2:.0f} x (2)"
    )
    print(f"  identical decisions on the sample: {identical}")
    return out


if __name__ == "__main__":
    cli(run, __doc__)
