"""Benchmark P5: a partitioned Parquet ledger of 20 million runs, attributed partition by
partition: streamed through one process, and reduced on a Dask LocalCluster of 1 and 2
worker processes, each worker limited to 1 GiB.

The data (generated here into a temporary directory outside the repository, deleted
afterwards; ``--data-dir`` to choose where): 40 Parquet files of 500,000 runs, 2,000
lessons (about 8 a run, independent inclusion), one numeric covariate ``difficulty``; see
``benchmarks/_ledgers.py``.  Loaded at once it would take about 2.4 GB as polars frames
(measured and recorded, ``dataset_in_memory_gb``), and several times that as a
``Ledger``; no process here holds more than one partition.

Figures: seconds and runs per second for ``lift`` (one pass; ``welch`` costs the same
pass) on each executor, and ``ols`` (HC3, the covariate; three passes) on two workers;
the Dask results must equal the streamed ones (same reduction, another order of adding:
1e-9 relative), and the cluster must finish without restarting a worker.

Run: ``.venv/bin/python -m benchmarks.p5_dask_attribution [--quick]`` (``--quick``: 2
million runs in 8 partitions).
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._common import machine
from benchmarks._ledgers import scale_frame
from cogstats import attribute

SEED = 20261130
WORKER_MEMORY = "1GiB"


def generate(root: Path, n_runs: int, parts: int) -> float:
    """Write the partitions; return the dataset's in-memory size (GB, polars frames)."""
    per = n_runs // parts
    size = 0
    for k in range(parts):
        frame, _ = scale_frame(per, 2000, 8.0, seed=SEED + 7 * k, first_run=k * per)
        frame.write_parquet(root / f"part-{k:04d}.parquet")
        size += frame.estimated_size()
    return size / 1e9


def _max_rel(a: Any, b: Any) -> float:
    fa, fb = a.to_frame(), b.to_frame()
    assert fa["fact_id"].to_list() == fb["fact_id"].to_list()
    worst = 0.0
    for name in ("estimate", "std_error", "ci_low", "ci_high"):
        x, y = fa[name].to_numpy(), fb[name].to_numpy()
        ok = np.isfinite(x) & np.isfinite(y)
        worst = max(worst, float(np.max(np.abs(x[ok] - y[ok]) / np.maximum(np.abs(y[ok]), 1e-300))))
    return worst


def _dask(root: Path, method: str, workers: int, **options: Any) -> tuple[float, Any, bool]:
    from distributed import Client, LocalCluster

    with (
        LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            memory_limit=WORKER_MEMORY,
            dashboard_address=":0",
        ) as cluster,
        Client(cluster) as client,
    ):
        before = set(client.scheduler_info()["workers"])
        t = time.perf_counter()
        result = attribute(
            root, method, executor="dask", scheduler=cluster.scheduler_address, **options
        )
        seconds = time.perf_counter() - t
        stable = set(client.scheduler_info()["workers"]) == before
    return seconds, result, stable


def run(quick: bool = False, data_dir: str | None = None, with_ols: bool = True) -> dict:
    """Generate the dataset, time every executor; return the figures."""
    n_runs, parts = (2_000_000, 8) if quick else (20_000_000, 40)
    root = Path(tempfile.mkdtemp(prefix="cogstats-p5-", dir=data_dir))
    try:
        t = time.perf_counter()
        gb = generate(root, n_runs, parts)
        gen_s = time.perf_counter() - t
        t = time.perf_counter()
        local = attribute(root, "lift")
        local_s = time.perf_counter() - t
        timings: dict[str, Any] = {"lift_local_s": local_s}
        agree: dict[str, float] = {}
        stable = True
        for workers in (1, 2):
            seconds, result, ok = _dask(root, "lift", workers)
            timings[f"lift_dask_{workers}_workers_s"] = seconds
            agree[f"lift_dask_{workers}"] = _max_rel(result, local)
            stable &= ok
        if with_ols:
            seconds, ols, ok = _dask(root, "ols", 2, covariates=("difficulty",))
            timings["ols_dask_2_workers_s"] = seconds
            timings["ols_identifiable"] = int(ols.to_frame()["identifiable"].sum())
            stable &= ok
    finally:
        shutil.rmtree(root, ignore_errors=True)
    throughput = {
        k.replace("_s", "_runs_per_s"): n_runs / v
        for k, v in timings.items()
        if k.endswith("_s") and isinstance(v, float)
    }
    out = {
        "benchmark": "P5",
        "quick": quick,
        "seed": SEED,
        "n_runs": n_runs,
        "partitions": parts,
        "n_lessons": 2000,
        "dataset_in_memory_gb": gb,
        "worker_memory_limit": WORKER_MEMORY,
        "generate_s": gen_s,
        **timings,
        **throughput,
        "max_relative_difference_vs_local": agree,
        "identical_1e-9": all(v <= 1e-9 for v in agree.values()),
        "workers_never_restarted": stable,
        "machine": machine(),
    }
    print(f"P5  {n_runs:,} runs in {parts} Parquet partitions ({gb:.1f} GB as frames)")
    print(f"  lift, streamed in this process   {local_s:7.1f} s")
    for workers in (1, 2):
        key = f"lift_dask_{workers}_workers_s"
        print(
            f"  lift, Dask {workers} worker(s) ({WORKER_MEMORY}) {timings[key]:7.1f} s  "
            f"({n_runs / timings[key] / 1e6:.2f} M runs/s)"
        )
    if with_ols:
        print(f"  ols (HC3), Dask 2 workers        {timings['ols_dask_2_workers_s']:7.1f} s")
    print(f"  same numbers as streamed (1e-9): {out['identical_1e-9']}; no restarts: {stable}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="2 million runs")
    parser.add_argument("--data-dir", help="where to write the temporary dataset")
    parser.add_argument("--no-ols", action="store_true", help="skip the ols timing")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    out = run(quick=args.quick, data_dir=args.data_dir, with_ols=not args.no_ols)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1, default=str))


if __name__ == "__main__":
    main()
