"""Benchmark C3: every report notebook at its CI parameters, executed by papermill.

Goal (docs/benchmarks.md): at most 3 minutes in total on 2 cores, two kernels at a time
allowed.  Each registered report runs once, as CI runs them (``run_report(name, out,
ci=True)``: a fresh kernel per notebook, then the offline HTML export), two at a time as
``render_demo_report(workers=2)`` runs them in ``make test`` (``--workers 1`` for one at a
time).  The total is the wall-clock time of the whole batch.  Side by side in the same run,
a baseline notebook that only starts a kernel and imports what the reports import
(numpy/scipy/statsmodels via cogstats, numba, polars, altair) says how much of each
report's time is fixed start-up rather than work.  The simulator's compiled code is
loaded (or compiled) once before timing, as it is on any machine after the first run.

Run: ``python -m benchmarks.c3_notebooks [--quick] [--workers N] [--json FILE] [--out DIR]``
(``--quick`` skips the baseline notebook).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import nbformat
import papermill

from benchmarks._common import machine
from cogstats.reports import REPORTS, run_report

TARGET_S = 180.0
BASELINE_SOURCE = """\
import altair
import polars
import cogstats.charts
import cogstats.reports
import cogstats.sim
import cogstats.sim.cli
import cogstats.sweep
"""


def _warm() -> float:
    """Load (or compile) the simulator's numba code once, as any machine has after a run."""
    from cogstats.sim import Scenario, simulate

    t = time.perf_counter()
    scenario = Scenario.from_dict({"runs": 5, "lessons": {"listed": [{"id": "a", "effect": 0}]}})
    simulate(scenario, replicates=2, rng=0, keep_runs=False, progress=False)
    return time.perf_counter() - t


def _baseline(folder: Path) -> float:
    """Seconds to start a kernel and import what the reports import (an empty report)."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(BASELINE_SOURCE)])
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    src = folder / "baseline.ipynb"
    nbformat.write(nb, src)
    t = time.perf_counter()
    papermill.execute_notebook(
        str(src), str(folder / "baseline_out.ipynb"), kernel_name="python3", progress_bar=False
    )
    return time.perf_counter() - t


def run(quick: bool = False, out: str | Path | None = None, workers: int = 2) -> dict[str, Any]:
    """Time every registered report at its CI parameters; return the figures (and print)."""
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(out) if out is not None else Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        warm = _warm()
        baseline = None if quick else _baseline(folder)
        reports: dict[str, dict[str, Any]] = {}

        def one(name: str) -> tuple[str, dict[str, Any]]:
            t = time.perf_counter()
            result = run_report(name, folder, ci=True)
            return name, {
                "wall_s": time.perf_counter() - t,
                "execute_s": result.execute_seconds,
                "export_s": result.export_seconds,
                "figures": len(result.figures),
                "parameters": {k: v for k, v in result.parameters.items() if k != "figures_dir"},
            }

        start = time.perf_counter()
        with ThreadPoolExecutor(max_workers=workers) as pool:  # as render_demo_report does
            reports = dict(pool.map(one, REPORTS))
        total = time.perf_counter() - start
    figures: dict[str, Any] = {
        "benchmark": "C3",
        "kernels_at_a_time": workers,
        "reports": reports,
        "total_s": total,
        "target_s": TARGET_S,
        "within_target": total <= TARGET_S,
        "share_of_target": total / TARGET_S,
        "kernel_and_imports_s": baseline,
        "startup_share": None if baseline is None else baseline * len(reports) / (total * workers),
        "numba_load_or_compile_s": warm,
        "machine": machine(),
    }
    print(
        f"C3  every report notebook at its CI parameters ({len(reports)} notebooks, "
        f"{workers} kernel(s) at a time)"
    )
    for name, r in reports.items():
        print(
            f"  {name:28s} {r['wall_s']:7.1f} s  (execute {r['execute_s']:.1f}, "
            f"HTML {r['export_s']:.1f})"
        )
    print(f"  total (wall clock)           {total:7.1f} s  (goal {TARGET_S:.0f} s)")
    if baseline is not None:
        print(
            f"  kernel start + imports, per notebook {baseline:.1f} s "
            f"({100 * figures['startup_share']:.0f}% of the kernel time)"
        )
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="skip the baseline notebook")
    parser.add_argument("--json", help="write the figures here")
    parser.add_argument("--out", help="keep the executed notebooks and pages here")
    parser.add_argument("--workers", type=int, default=2, help="kernels at a time (default 2)")
    args = parser.parse_args()
    figures = run(quick=args.quick, out=args.out, workers=args.workers)
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1, default=str))


if __name__ == "__main__":
    main()
