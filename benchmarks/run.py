"""Run every benchmark in one command and write the figures to benchmarks/results/.

``python -m benchmarks.run [--quick] [--only c1,c2,...]`` (``make bench``).  Each
benchmark compares cogstats with its reference side by side in the same run and reports
ratios (absolute times on a shared 2-core machine are noise; ratios travel).
``c1_command`` and ``p2`` need a built cycgraph checkout in ``$COGSTATS_CYCGRAPH`` to run
cycgraph's simulator and gate beside ours (see benchmarks/c1_whole_command.py); without
one they record our side alone.
"""

from __future__ import annotations

import argparse
import importlib
import json
import time
import traceback
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
BENCHMARKS = {
    "p1": "benchmarks.p1_first_decision",
    "p2": "benchmarks.p2_cycgraph_scale",
    "p3": "benchmarks.p3_streaming",
    "p4": "benchmarks.p4_ols_scale",
    "p5": "benchmarks.p5_dask_attribution",
    "c1_command": "benchmarks.c1_whole_command",
    "c1": "benchmarks.c1_simulation",
    "c2": "benchmarks.c2_permutation",
    "c3": "benchmarks.c3_notebooks",
    "s3": "benchmarks.s3_adaptive_confounding",
    "s4": "benchmarks.s4_peeking",
    "s2_headroom": "benchmarks.s2_headroom",
    "recommended_frontier": "benchmarks.recommended_frontier",
    "sweep": "benchmarks.sweep_scaling",
    "tune": "benchmarks.tune_latency",
    "d1": "benchmarks.d1_start_recommended",
    "v2_simulated": "benchmarks.v2_simulated",
    "v2_s1_s4": "benchmarks.v2_s1_s4",
    "d2": "benchmarks.d2_catch_up",
    "d3": "benchmarks.d3_large_ledger",
    "hostile": "benchmarks.hostile_input",
    "s2_runtime": "benchmarks.s2_runtime",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller samples, same code")
    parser.add_argument("--only", help=f"comma-separated subset of {sorted(BENCHMARKS)}")
    args = parser.parse_args()
    names = list(BENCHMARKS) if not args.only else [n.strip() for n in args.only.split(",")]
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        parser.error(f"unknown benchmark(s) {unknown}; choose from {sorted(BENCHMARKS)}")
    RESULTS.mkdir(exist_ok=True)
    summary: dict[str, Any] = {}
    for name in names:
        print(f"\n=== {name} ===", flush=True)
        t = time.perf_counter()
        try:
            module = importlib.import_module(BENCHMARKS[name])
            out = module.run(quick=args.quick)
            out["wall_s"] = time.perf_counter() - t
            (RESULTS / f"{name}.json").write_text(json.dumps(out, indent=1, default=str))
            summary[name] = "ok"
        except Exception:  # report and go on with the others
            traceback.print_exc()
            summary[name] = "failed"
    print("\n" + ", ".join(f"{k}: {v}" for k, v in summary.items()))
    if any(v == "failed" for v in summary.values()):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
