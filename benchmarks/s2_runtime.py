"""S2's runtime alone: 500 replicates of the recommended preset on one process.

The compiled engine is loaded beforehand (two replicates, not timed), so the figure is the
run loop's, never a compile.  ``s2_500_replicates_s`` is the wall time (goal: 30 s),
``s2_500_replicates_cpu_s`` this process's CPU time (steadier on a shared machine).
``benchmarks/s2_headroom.py`` reports the same wall figure beside the preset's metrics;
this one runs in seconds, for before/after comparisons
(``python -m benchmarks.compare_revisions --only s2_runtime --bench-from-after``).

Run: ``.venv/bin/python -m benchmarks.s2_runtime [--quick] [--json PATH]``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from benchmarks._common import cli, machine

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "simulations" / "poison_crater.toml"


def run(quick: bool = False) -> dict[str, Any]:
    """Time S2 at 500 replicates (``quick``: the same; it is one short timing)."""
    from cogstats.sim import load_spec, simulate

    spec = load_spec(SPEC, preset="recommended")
    simulate(spec.scenario, replicates=2, rng=1, keep_runs=False, progress=False)  # load
    wall, cpu = time.perf_counter(), time.process_time()
    simulate(spec.scenario, replicates=500, rng=1, keep_runs=False, progress=False)
    return {
        "benchmark": "S2 runtime: 500 replicates of the recommended preset, one process",
        "quick": quick,
        "s2_500_replicates_s": time.perf_counter() - wall,
        "s2_500_replicates_cpu_s": time.process_time() - cpu,
        "s2_target_s": 30.0,
        "machine": machine(),
    }


if __name__ == "__main__":
    cli(run, __doc__)
