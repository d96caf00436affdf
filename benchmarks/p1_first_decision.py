"""Benchmark P1: time to a first gate decision in a fresh process, and its peak memory.

Three programs, each run in a fresh Python process, interleaved round by round so that
load on the shared machine hits them alike:

* ``bare``: ``import numpy, polars, scipy.special`` (the floor any cogstats gate pays);
* ``welch``: import cogstats, build a 200-run ledger (20 lessons, 4 a run), and evaluate
  an ``EvidenceGate`` on ``welch``;
* ``cycgraph``: the same with cycgraph's gate (inference rule).

Each child reports its own wall time from interpreter start to the decision (measured by
the parent around ``subprocess.run``, so Python's start-up is in every figure) and its peak
resident set size (``ru_maxrss``).  The figures are the medians over the rounds; the goal
is ``welch`` and ``cycgraph`` within 1.5x of ``bare`` and at most 130 MB.  The heavy
modules a first decision must not import are checked by
tests/unit/test_import_hygiene.py; this benchmark also records which of them loaded.

Run: ``.venv/bin/python -m benchmarks.p1_first_decision [--quick]``.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from typing import Any

from benchmarks._common import cli, machine

TARGET_RATIO = 1.5
TARGET_MB = 130.0

_REPORT = (
    "import resource, sys, json\n"
    "heavy = sorted(m for m in ('statsmodels', 'pandas', 'numba', 'scipy.stats', 'pyarrow',"
    " 'altair', 'IPython') if m in sys.modules)\n"
    "print(json.dumps({'rss_mb': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,"
    " 'heavy': heavy}))\n"
)

_LEDGER = (
    "import numpy as np\n"
    "from cogstats import Ledger\n"
    "rng = np.random.default_rng(0)\n"
    "ledger = Ledger.from_records([{'run_id': f'r{i}', 'score': float(rng.random()),"
    " 'fact_ids': [f'L{j}' for j in rng.choice(20, 4, replace=False)]} for i in range(200)])\n"
)

PROGRAMS = {
    "bare": "import numpy, polars, scipy.special\n",
    "welch": _LEDGER
    + "from cogstats.gates import EvidenceGate\n"
    + "report = EvidenceGate(method='welch').evaluate(ledger)\n"
    + "assert report.to_frame().height == 20\n",
    "cycgraph": _LEDGER
    + "from cogstats.gates import CycgraphGate\n"
    + "report = CycgraphGate().evaluate(ledger)\n"
    + "assert report.to_frame().height == 20\n",
}


def _run_once(code: str) -> dict[str, Any]:
    t = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", code + _REPORT], check=True, capture_output=True, text=True
    )
    wall = time.perf_counter() - t
    info = json.loads(out.stdout.strip().splitlines()[-1])
    return {"wall_s": wall, **info}


def run(quick: bool = False) -> dict[str, Any]:
    """Time the three programs side by side; return the figures (and print a table)."""
    rounds = 3 if quick else 9
    _run_once(PROGRAMS["welch"])  # warm the file cache (.pyc, shared libraries)
    samples: dict[str, list[dict[str, Any]]] = {k: [] for k in PROGRAMS}
    for _ in range(rounds):
        for name, code in PROGRAMS.items():
            samples[name].append(_run_once(code))
    med = {k: statistics.median(s["wall_s"] for s in v) for k, v in samples.items()}
    rss = {k: max(s["rss_mb"] for s in v) for k, v in samples.items()}
    ratios = {k: med[k] / med["bare"] for k in ("welch", "cycgraph")}
    paired = {
        k: statistics.median(
            s["wall_s"] / b["wall_s"] for s, b in zip(samples[k], samples["bare"], strict=True)
        )
        for k in ("welch", "cycgraph")
    }
    out = {
        "benchmark": "P1",
        "rounds": rounds,
        "median_wall_s": med,
        "all_wall_s": {k: [s["wall_s"] for s in v] for k, v in samples.items()},
        "peak_rss_mb": rss,
        "ratio_to_bare_import": ratios,
        "median_paired_ratio": paired,
        "heavy_modules_loaded": {k: v[-1]["heavy"] for k, v in samples.items()},
        "target_ratio": TARGET_RATIO,
        "target_rss_mb": TARGET_MB,
        "meets_target": all(r <= TARGET_RATIO for r in ratios.values())
        and all(rss[k] <= TARGET_MB for k in ("welch", "cycgraph")),
        "machine": machine(),
    }
    print(f"P1  first decision in a fresh process ({rounds} rounds, medians)")
    for k in PROGRAMS:
        ratio = "" if k == "bare" else f"   {ratios[k]:.2f}x bare"
        print(f"  {k:9s} {med[k]:6.2f} s  {rss[k]:6.1f} MB{ratio}")
    print(f"  goal: <= {TARGET_RATIO}x and <= {TARGET_MB:.0f} MB: {out['meets_target']}")
    return out


if __name__ == "__main__":
    cli(run, __doc__)
