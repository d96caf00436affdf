"""Benchmark W1: the recommended gate on a wide ledger (100,000 runs x 20,000 lessons).

A growing playbook (:func:`benchmarks._ledgers.arrival_frame`): lessons arrive over the
runs, stay live for an exponential time (about 150 live at once, 10 kept to the end) and
go into about 12 of every run's slots.  ``LifecycleGate().evaluate(ledger)`` (the
statistics, the debiased ridge's passes, the rule and the report) runs in a fresh process
per case, so that its peak resident memory (``ru_maxrss`` of the child, which counts
numpy's and scipy's native memory) is its own; the ledger is built in the child first
(its build is not timed, and the memory after it is reported apart: ``ledger_rss_mb``).

Cases, side by side:

- ``wide``: 20,000 lessons, the default path (the sparse Gram matrix and the banded
  selected inversion, :mod:`cogstats.estimators._ridge_sparse`);
- ``sparse_2000`` and ``dense_2000``: 2,000 lessons over the same 100,000 runs on the
  sparse path and forced onto the dense one (``ridge_statistics(..., sparse=False)``, the
  only path before: O(lessons^2) memory, O(lessons^3) time); their ratio, and whether
  both give the same decisions and numbers (relative difference of estimates and
  standard errors, scaled by the largest).

The dense path at 20,000 lessons is not run (it needs about 9.6 GB and 330 s; measured
when the issue was filed).  Goal: ``wide`` within 60 s and 2 GB.  ``--quick``: 20,000
runs x 4,000 lessons and 20,000 x 400.

Run: ``python -m benchmarks.wide_recommended [--quick] [--threads N] [--json PATH]``;
figures go to ``benchmarks/results/wide_recommended.json`` (not with ``--quick``).
The children run with ``OPENBLAS_NUM_THREADS=1`` (``--threads N`` sets another count,
``--threads 0`` leaves the environment's): on a loaded machine OpenBLAS's threads spin
waiting for each other on every product of the band's blocks (a few hundred products of a
few hundred rows a pass), which costs ten to twenty times the CPU time.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._common import machine

TARGET_S = 60.0
TARGET_MB = 2048.0
SEED = 20261201
RESULTS = Path(__file__).parent / "results" / "wide_recommended.json"

_CHILD = """
import json, resource, sys, time
import numpy as np
from benchmarks._ledgers import arrival_ledger
n_runs, n_lessons, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
ledger, effects = arrival_ledger(n_runs, n_lessons, seed={seed})
ledger.scores
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
from cogstats.gates.recommended import LifecycleGate, LifecycleStatistics
gate = LifecycleGate()
t = time.perf_counter()
cpu = time.process_time()
if path == "default":
    frame = gate.evaluate(ledger).to_frame()
else:
    cov = gate.covariates_in(ledger)
    stats = LifecycleStatistics.from_ledger(ledger, cov, sparse=(path == "sparse"))
    frame = gate.judge(stats).to_frame()
seconds = time.perf_counter() - t
cpu = time.process_time() - cpu
ids = frame["fact_id"].to_list()
truth = effects[[int(f[1:]) for f in ids]]
dec = frame["decision"].to_list()
print(json.dumps({{
    "seconds": seconds,
    "cpu_seconds": cpu,
    "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "ledger_rss_mb": before,
    "runs": len(ledger),
    "lessons": len(ids),
    "fact_id": ids,
    "decision": dec,
    "why": frame["why"].to_list(),
    "estimate": [None if v is None else float(v) for v in frame["estimate"].to_list()],
    "std_error": [None if v is None else float(v) for v in frame["std_error"].to_list()],
    "decisions": {{d: dec.count(d) for d in sorted(set(dec))}},
    "evicted_harmful": int(sum(d == "evict" and e < 0 for d, e in zip(dec, truth))),
    "harmful": int(np.sum(truth < 0)),
}}))
"""


def _child(n_runs: int, n_lessons: int, path: str, threads: int | None) -> dict[str, Any]:
    env = dict(os.environ)
    if threads:
        env.update(OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
    out = subprocess.run(
        [sys.executable, "-c", _CHILD.format(seed=SEED), str(n_runs), str(n_lessons), path],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def _difference(a: dict[str, Any], b: dict[str, Any]) -> float:
    """Largest difference of estimates and standard errors, relative to the largest value."""
    if a["fact_id"] != b["fact_id"]:
        return float("inf")
    worst = 0.0
    for name in ("estimate", "std_error"):
        x = np.array([np.nan if v is None else v for v in a[name]], dtype=float)
        y = np.array([np.nan if v is None else v for v in b[name]], dtype=float)
        if not np.array_equal(np.isfinite(x), np.isfinite(y)):
            return float("inf")
        ok = np.isfinite(x)
        if ok.any():
            worst = max(worst, float(np.max(np.abs(x[ok] - y[ok])) / np.max(np.abs(x[ok]))))
    return worst


def _summary(name: str, r: dict[str, Any]) -> dict[str, Any]:
    keep = ("seconds", "cpu_seconds", "peak_rss_mb", "ledger_rss_mb", "runs", "lessons")
    out = {k: r[k] for k in keep}
    out.update(decisions=r["decisions"], evicted_harmful=r["evicted_harmful"])
    out["harmful"] = r["harmful"]
    print(
        f"  {name:<12} {r['runs']:>7} runs x {r['lessons']:>6} lessons  "
        f"{r['seconds']:7.2f} s (CPU {r['cpu_seconds']:6.1f} s)  peak {r['peak_rss_mb']:6.0f} MB "
        f"(ledger alone {r['ledger_rss_mb']:.0f} MB)  {r['decisions']}"
    )
    return out


def run(
    quick: bool = False, threads: int | None = 1, results: Path | None = RESULTS
) -> dict[str, Any]:
    """Run the three cases, each in a fresh process; return (and save) the figures.

    ``threads`` sets ``OPENBLAS_NUM_THREADS`` in the children (0 or None: inherited).
    """
    n_runs = 20_000 if quick else 100_000
    wide_lessons, small_lessons = (4_000, 400) if quick else (20_000, 2_000)
    blas = threads or os.environ.get("OPENBLAS_NUM_THREADS") or "default (all cores)"
    print(
        f"W1  recommended gate, evaluate(ledger); BLAS threads {blas}; "
        f"machine load {machine()['load_average_1min']}"
    )
    wide = _child(n_runs, wide_lessons, "default", threads)
    sparse_small = _child(n_runs, small_lessons, "sparse", threads)
    dense_small = _child(n_runs, small_lessons, "dense", threads)
    out: dict[str, Any] = {
        "benchmark": "W1",
        "quick": quick,
        "seed": SEED,
        "blas_threads": blas,
        "wide": _summary("wide", wide),
        "sparse_small": _summary("sparse", sparse_small),
        "dense_small": _summary("dense", dense_small),
    }
    same = (
        sparse_small["decision"] == dense_small["decision"]
        and sparse_small["why"] == dense_small["why"]
    )
    diff = _difference(sparse_small, dense_small)
    out.update(
        small_time_ratio_dense_over_sparse=dense_small["seconds"] / sparse_small["seconds"],
        small_memory_ratio_dense_over_sparse=dense_small["peak_rss_mb"]
        / sparse_small["peak_rss_mb"],
        small_same_decisions=same,
        small_max_relative_difference=diff,
        target_s=TARGET_S,
        target_mb=TARGET_MB,
        meets_target=wide["seconds"] <= TARGET_S and wide["peak_rss_mb"] <= TARGET_MB,
        machine=machine(),
    )
    ratio = out["small_time_ratio_dense_over_sparse"]
    print(
        f"  at {small_lessons} lessons: dense / sparse {ratio:.1f}x "
        f"time, {out['small_memory_ratio_dense_over_sparse']:.1f}x memory; same decisions: "
        f"{same}; largest relative difference {diff:.1e}"
    )
    print(f"  goal {TARGET_S:.0f} s and {TARGET_MB:.0f} MB at full size: {out['meets_target']}")
    if results is not None and not quick:
        results.write_text(json.dumps(out, indent=1, default=str) + "\n")
    return out


def main() -> None:
    """The command line: ``--quick``, ``--threads N``, ``--json PATH``."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller ledgers, same code")
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="OPENBLAS_NUM_THREADS for the children (default 1; 0: the environment's)",
    )
    parser.add_argument("--json", help=f"write the figures here (default {RESULTS})")
    args = parser.parse_args()
    run(quick=args.quick, threads=args.threads, results=Path(args.json) if args.json else RESULTS)


if __name__ == "__main__":
    main()
