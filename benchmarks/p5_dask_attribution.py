"""Benchmark P5: a partitioned Parquet ledger of 20 million runs, attributed partition by
partition: streamed through one process, and reduced on a Dask LocalCluster of 1 and 2
worker processes, each worker limited to 1 GiB.

The data (generated here into a temporary directory outside the repository, deleted
afterwards; ``--data-dir`` to choose where): 80 Parquet files of 250,000 runs, 2,000
lessons (about 8 a run, independent inclusion), one numeric covariate ``difficulty``; see
``benchmarks/_ledgers.py``.  How large that is in memory is measured, not assumed: one
partition is read in a fresh process and the growth of its resident set is recorded as a
polars frame and again as a ``Ledger`` (with its statistics and inclusion design), then
scaled to all partitions (``dataset_frames_gb``, ``dataset_ledger_gb``; polars' own
``estimated_size`` of the frames, which undercounts the list column, is kept as
``dataset_estimated_size_gb``).  No process here holds more than one partition; each
Dask worker's peak resident set is recorded (``worker_peak_rss_mb``).

Figures: seconds and runs per second for ``lift`` (one pass; ``welch`` costs the same
pass) on each executor, and ``ols`` (HC3, the covariate; three passes) on two workers;
the Dask results must equal the streamed ones (same reduction, another order of adding:
1e-9 of the larger of the value and its standard error; see ``_compare``), and the cluster
must finish without restarting a worker.

Partitions of 250,000 runs keep a worker's peak resident set inside its 1 GiB and below
distributed's pause threshold (80%, 860 MB): measured over the 80 partitions, 460-670 MB
with ``lift`` and 750-810 MB with ``ols``; at 500,000 runs a partition ``lift`` alone
peaked at 870 MB on a two-partition test.

Run: ``.venv/bin/python -m benchmarks.p5_dask_attribution [--quick]`` (``--quick``: 2
million runs in 8 partitions of the same size).
"""

from __future__ import annotations

import argparse
import functools
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
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


_MEASURE = """
import gc, json, sys
import polars as pl
from cogstats import Ledger
def rss():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * 4096 / 2**20
gc.collect()
r0 = rss()
frame = pl.read_parquet(sys.argv[1])
r1 = rss()
ledger = Ledger.from_frame(frame)
del frame
gc.collect()
ledger.fact_stats()
ledger.design()
r2 = rss()
print(json.dumps({"frame_mb": r1 - r0, "ledger_mb": r2 - r0}))
"""


def measure_partition(path: Path) -> dict[str, float]:
    """Resident-set growth (MB) of reading one partition, as a frame and as a Ledger."""
    out = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(path)], check=True, capture_output=True, text=True
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def _compare(a: Any, b: Any) -> dict[str, Any]:
    """How far the Dask result is from the streamed one, field by field.

    ``relative``: the largest ``|a - b| / |b|`` per field.  A lift is a difference of two
    means, so where it (or an interval end) is near zero that ratio measures the
    cancellation, not the reduction: the rounding of a sum of ``N`` scores is absolute,
    about ``N u`` times the mean.  ``scaled`` divides by ``max(|b|, std_error)`` instead
    (the statistic's own scale), and the check is 1e-9 on it.
    """
    fa, fb = a.to_frame(), b.to_frame()
    assert fa["fact_id"].to_list() == fb["fact_id"].to_list()
    se = np.abs(fb["std_error"].to_numpy())
    relative, scaled = {}, {}
    for name in ("estimate", "std_error", "ci_low", "ci_high"):
        x, y = fa[name].to_numpy(), fb[name].to_numpy()
        ok = np.isfinite(x) & np.isfinite(y)
        diff = np.abs(x[ok] - y[ok])
        relative[name] = float(np.max(diff / np.maximum(np.abs(y[ok]), 1e-300)))
        scale = np.maximum(np.abs(y[ok]), np.where(np.isfinite(se[ok]), se[ok], 0.0))
        scaled[name] = float(np.max(diff / np.maximum(scale, 1e-300)))
    return {
        "max_relative": max(relative.values()),
        "relative": relative,
        "max_scaled": max(scaled.values()),
        "scaled": scaled,
    }


def _status_kb(field: str) -> Callable[[], float]:
    """A picklable call that reads ``field`` (kB) from the calling process's /proc status."""
    return functools.partial(_read_status, field)


def _read_status(field: str) -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return float(line.split()[1])
    return float("nan")


def _dask(
    root: Path, method: str, workers: int, **options: Any
) -> tuple[float, Any, bool, list[float]]:
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
        # VmHWM, the peak of the worker's own address space: ru_maxrss would also count
        # the parent's resident set at the fork that spawned the worker
        usage = client.run(_status_kb("VmHWM"))
        peaks = sorted(kb / 1024 for kb in usage.values())
    return seconds, result, stable, peaks


def run(quick: bool = False, data_dir: str | None = None, with_ols: bool = True) -> dict:
    """Generate the dataset, time every executor; return the figures."""
    n_runs, parts = (2_000_000, 8) if quick else (20_000_000, 80)
    root = Path(tempfile.mkdtemp(prefix="cogstats-p5-", dir=data_dir))
    try:
        t = time.perf_counter()
        gb = generate(root, n_runs, parts)
        gen_s = time.perf_counter() - t
        one = measure_partition(root / "part-0000.parquet")
        parquet_gb = sum(f.stat().st_size for f in root.glob("*.parquet")) / 1e9
        peaks: dict[str, list[float]] = {}
        t = time.perf_counter()
        local = attribute(root, "lift")
        local_s = time.perf_counter() - t
        timings: dict[str, Any] = {"lift_local_s": local_s}
        agree: dict[str, dict[str, Any]] = {}
        stable = True
        for workers in (1, 2):
            seconds, result, ok, peaks[f"lift_dask_{workers}"] = _dask(root, "lift", workers)
            timings[f"lift_dask_{workers}_workers_s"] = seconds
            agree[f"lift_dask_{workers}"] = _compare(result, local)
            stable &= ok
        if with_ols:
            seconds, ols, ok, peaks["ols_dask_2"] = _dask(
                root, "ols", 2, covariates=("difficulty",)
            )
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
        "dataset_estimated_size_gb": gb,
        "partition_frame_mb": one["frame_mb"],
        "partition_ledger_mb": one["ledger_mb"],
        "dataset_frames_gb": one["frame_mb"] * parts / 1024,
        "dataset_ledger_gb": one["ledger_mb"] * parts / 1024,
        "dataset_parquet_gb": parquet_gb,
        "worker_memory_limit": WORKER_MEMORY,
        "worker_peak_rss_mb": peaks,
        "generate_s": gen_s,
        **timings,
        **throughput,
        "difference_vs_local": agree,
        "max_relative_difference_vs_local": max(v["max_relative"] for v in agree.values()),
        "identical_1e-9": all(v["max_scaled"] <= 1e-9 for v in agree.values()),
        "workers_never_restarted": stable,
        "machine": machine(),
    }
    print(
        f"P5  {n_runs:,} runs in {parts} Parquet partitions ({parquet_gb:.2f} GB on disk; in "
        f"memory {out['dataset_frames_gb']:.1f} GB as frames, "
        f"{out['dataset_ledger_gb']:.1f} GB as a Ledger)"
    )
    print(f"  lift, streamed in this process   {local_s:7.1f} s")
    for workers in (1, 2):
        key = f"lift_dask_{workers}_workers_s"
        print(
            f"  lift, Dask {workers} worker(s) ({WORKER_MEMORY}) {timings[key]:7.1f} s  "
            f"({n_runs / timings[key] / 1e6:.2f} M runs/s)"
        )
    if with_ols:
        print(f"  ols (HC3), Dask 2 workers        {timings['ols_dask_2_workers_s']:7.1f} s")
    worst = max(max(v) for v in peaks.values())
    print(f"  largest worker peak RSS {worst:.0f} MB (limit {WORKER_MEMORY})")
    print(
        f"  same numbers as streamed (1e-9 of max(|value|, se)): {out['identical_1e-9']} "
        f"(largest relative difference {out['max_relative_difference_vs_local']:.1e}); "
        f"no restarts: {stable}"
    )
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
