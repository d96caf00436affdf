"""Sweep scaling: cells per second with 1 and 2 local workers, and the Dask executor's
overhead per cell.

Measured on the threshold sweep (simulations/threshold_sweep.toml: 96 cells of the S2
poison-crater scenario at 1000 replicates; ``--quick``: the CI variant, 16 cells of 60):

- warm throughput: each executor is started and warmed first (every worker has imported
  the package and loaded numba's cached kernel), then the same cells are timed; the
  tables of every executor must be identical;
- start-up: seconds from creating the executor until every worker is warm (the cost a
  sweep pays once);
- the Dask overhead per cell: a batch of near-empty cells (2 runs, 1 replicate) through
  a warm one-worker LocalCluster against the same batch in-process; the difference per
  cell is scheduling, serialization and the round trip;
- the CI spec end to end: ``cogstats sweep simulations/threshold_sweep_ci.toml`` in a
  fresh process (full mode only), against the < 1 minute goal.

Run: ``python -m benchmarks.sweep_scaling [--quick]``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._common import cli, machine
from cogstats.sweep import DaskExecutor, LocalExecutor, load_sweep, sweep_from_dict
from cogstats.sweep.executors import CellOutput
from cogstats.sweep.spec import CellTask

ROOT = Path(__file__).resolve().parents[1]
FULL = ROOT / "simulations" / "threshold_sweep.toml"
CI = ROOT / "simulations" / "threshold_sweep_ci.toml"


def _tiny_cells(n: int) -> list[CellTask]:
    spec = sweep_from_dict(
        {
            "runs": 2,
            "replicates": 1,
            "seed": 1,
            "lessons": {"listed": [{"id": "a", "effect": 0.1}]},
            "grid": {"lessons.listed[0].effect": [round(0.001 * i, 3) for i in range(n)]},
        }
    )
    return spec.cells()


def _timed(ex: Any, tasks: list[CellTask]) -> tuple[float, dict[int, dict[str, Any]]]:
    t = time.perf_counter()
    outs: list[CellOutput] = list(ex.run(tasks))
    return time.perf_counter() - t, {o.index: o.summary for o in outs}


def _warm(ex: Any, workers: int) -> float:
    """Seconds until every worker has run a small cell (package import, kernel load)."""
    t = time.perf_counter()
    seen: set[str] = set()
    while True:
        seen |= {o.worker for o in ex.run(_tiny_cells(2 * workers))}
        if len(seen) >= workers:
            return time.perf_counter() - t
        time.sleep(0.2)


def _same(a: dict[int, dict[str, Any]], b: dict[int, dict[str, Any]]) -> bool:
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


def run(quick: bool = False) -> dict[str, Any]:
    """Time the executors on the threshold sweep; return the figures (and print a table)."""
    spec = load_sweep(CI if quick else FULL)
    tasks = spec.cells()
    n = len(tasks)
    tiny = _tiny_cells(100 if quick else 300)
    rows: list[dict[str, Any]] = []
    reference: dict[int, dict[str, Any]] = {}
    identical = True
    overhead: dict[str, float] = {}

    # one local worker: the cells run in this process
    with LocalExecutor(workers=1) as ex:
        start = _warm(ex, 1)
        secs, reference = _timed(ex, tasks)
        tiny_inline, _ = _timed(ex, tiny)
    rows.append({"executor": "local", "workers": 1, "start_s": start, "cells_s": secs})

    with LocalExecutor(workers=2) as ex:
        start = _warm(ex, 2)
        secs, got = _timed(ex, tasks)
        identical &= _same(got, reference)
    rows.append({"executor": "local", "workers": 2, "start_s": start, "cells_s": secs})

    for workers in (1, 2):
        t = time.perf_counter()
        with DaskExecutor(workers=workers) as ex:
            start = (time.perf_counter() - t) + _warm(ex, workers)
            secs, got = _timed(ex, tasks)
            identical &= _same(got, reference)
            if workers == 1:
                tiny_dask, _ = _timed(ex, tiny)
                overhead = {
                    "tiny_cells": len(tiny),
                    "inline_s_per_cell": tiny_inline / len(tiny),
                    "dask_s_per_cell": tiny_dask / len(tiny),
                    "overhead_s_per_cell": (tiny_dask - tiny_inline) / len(tiny),
                }
        rows.append({"executor": "dask", "workers": workers, "start_s": start, "cells_s": secs})

    for r in rows:
        r["cells_per_s"] = n / r["cells_s"]
    base = rows[0]["cells_per_s"]
    for r in rows:
        r["speedup_vs_1_local"] = r["cells_per_s"] / base
    dask1 = next(r for r in rows if r["executor"] == "dask" and r["workers"] == 1)
    overhead["dask_real_cell_overhead_s"] = (dask1["cells_s"] - rows[0]["cells_s"]) / n

    ci_end_to_end = None
    if not quick:
        with tempfile.TemporaryDirectory() as d:
            t = time.perf_counter()
            cmd = [sys.executable, "-m", "cogstats.cli", "sweep", str(CI), "--out", d]
            subprocess.run(
                [*cmd, "--no-progress"],
                cwd=ROOT,
                check=True,
                capture_output=True,
            )
            ci_end_to_end = time.perf_counter() - t

    out = {
        "benchmark": "sweep scaling",
        "spec": str((CI if quick else FULL).relative_to(ROOT)),
        "cells": n,
        "replicates_per_cell": spec.replicates,
        "rows": rows,
        "dask_overhead": overhead,
        "tables_identical": bool(identical),
        "ci_spec_end_to_end_s": ci_end_to_end,
        "ci_goal_s": 60.0,
        "machine": machine(),
    }
    print(f"Sweep scaling: {out['spec']}, {n} cells x {spec.replicates} replicates")
    print("  executor  workers  start (s)  cells (s)  cells/s  vs 1 local")
    for r in rows:
        print(
            f"  {r['executor']:<8}  {r['workers']:>7}  {r['start_s']:>9.1f}  {r['cells_s']:>9.2f}"
            f"  {r['cells_per_s']:>7.1f}  {r['speedup_vs_1_local']:>9.2f}x"
        )
    print(
        f"  Dask overhead per cell: {1e3 * overhead['overhead_s_per_cell']:.1f} ms "
        f"({len(tiny)} near-empty cells: {1e3 * overhead['dask_s_per_cell']:.1f} ms each vs "
        f"{1e3 * overhead['inline_s_per_cell']:.1f} ms in-process); on the real cells "
        f"{1e3 * overhead['dask_real_cell_overhead_s']:.0f} ms"
    )
    print(f"  identical tables across executors: {identical}")
    if ci_end_to_end is not None:
        print(
            f"  CI spec end to end (fresh process, default workers): {ci_end_to_end:.1f} s "
            "(goal < 60 s)"
        )
    return out


if __name__ == "__main__":
    cli(run, __doc__)
