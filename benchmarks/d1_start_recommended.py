"""Benchmark D1 (issue 19): the recommended gate's first decision against cycgraph's.

Two programs, each in a fresh Python process with an empty per-user cache
(``COGSTATS_CACHE_DIR`` a new folder each time, so only the boundaries shipped with
cogstats help), interleaved round by round so that the load of the shared machine hits
both alike: import cogstats, build a 200-run ledger (20 lessons, 4 a run, a difficulty
proxy), build the gate by its registry name and evaluate it once.  The figure is the
median over rounds of the paired ratio recommended / cycgraph; the goal is at most 1.5.
A third program, ``recommended_uncached``, runs the recommended gate with the shipped
table hidden (what every first decision cost before the cache: the boundaries of 100
looks solved afresh).

Run: ``.venv/bin/python -m benchmarks.d1_start_recommended [--quick]``.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

from benchmarks._common import cli, machine

TARGET_RATIO = 1.5

_PROGRAM = (
    "import numpy as np\n"
    "from cogstats import Ledger\n"
    "from cogstats.gates import make_gate\n"
    "rng = np.random.default_rng(0)\n"
    "ledger = Ledger.from_records([{'run_id': f'r{i}', 'score': float(rng.random()),"
    " 'fact_ids': [f'L{j}' for j in rng.choice(20, 4, replace=False)],"
    " 'difficulty_proxy': float(rng.random())} for i in range(200)])\n"
    "{hide}"
    "report = make_gate('{gate}').evaluate(ledger)\n"
    "assert report.to_frame().height == 20\n"
)
_HIDE = (
    "from cogstats.estimators import spending\n"
    "spending._TABLE = {}\n"  # as if no table were shipped
)
PROGRAMS = {
    "cycgraph": _PROGRAM.replace("{hide}", "").replace("{gate}", "cycgraph"),
    "recommended": _PROGRAM.replace("{hide}", "").replace("{gate}", "recommended"),
    "recommended_uncached": _PROGRAM.replace("{hide}", _HIDE).replace("{gate}", "recommended"),
}


def _run_once(code: str) -> float:
    env = {**os.environ, "COGSTATS_CACHE_DIR": tempfile.mkdtemp()}
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, env=env)
    return time.perf_counter() - t


def run(quick: bool = False) -> dict[str, Any]:
    """Time the programs side by side; return the figures (and print a table)."""
    rounds = 3 if quick else 9
    _run_once(PROGRAMS["recommended"])  # warm the file cache (.pyc, shared libraries)
    samples: dict[str, list[float]] = {k: [] for k in PROGRAMS}
    for k in range(rounds):
        names = list(PROGRAMS) if k % 2 == 0 else list(reversed(PROGRAMS))
        for name in names:
            samples[name].append(_run_once(PROGRAMS[name]))
    med = {k: statistics.median(v) for k, v in samples.items()}
    paired = {
        k: statistics.median(a / b for a, b in zip(samples[k], samples["cycgraph"], strict=True))
        for k in ("recommended", "recommended_uncached")
    }
    out = {
        "benchmark": "D1",
        "rounds": rounds,
        "median_wall_s": med,
        "all_wall_s": samples,
        "median_paired_ratio_to_cycgraph": paired,
        "target_ratio": TARGET_RATIO,
        "meets_target": paired["recommended"] <= TARGET_RATIO,
        "machine": machine(),
    }
    print(f"D1  first decision in a fresh process, empty user cache ({rounds} rounds)")
    for name in PROGRAMS:
        ratio = "" if name == "cycgraph" else f"   {paired[name]:.2f}x cycgraph (paired)"
        print(f"  {name:21s} {med[name]:6.2f} s{ratio}")
    print(f"  goal: recommended <= {TARGET_RATIO}x cycgraph: {out['meets_target']}")
    return out


if __name__ == "__main__":
    cli(run, __doc__)
