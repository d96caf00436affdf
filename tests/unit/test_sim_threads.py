"""A spec's cells in threads give the table they give one after another."""

from __future__ import annotations

import os
from pathlib import Path

from cogstats.sim import load_spec
from cogstats.sim.cli import PARALLEL_MIN_RUNS, default_workers, simulate_spec

SPEC = Path(__file__).resolve().parents[2] / "simulations" / "cycgraph_oc.toml"


def test_threads_do_not_change_the_table() -> None:
    spec = load_spec(SPEC)
    one = simulate_spec(spec, replicates=40, workers=1, progress=False)
    two = simulate_spec(spec, replicates=40, workers=2, progress=False)
    assert one.equals(two)
    assert one.height == 36 and one["cell"].to_list() == list(range(36))


def test_default_workers_use_every_core_for_large_grids_only() -> None:
    spec = load_spec(SPEC)
    runs_per_replicate = sum(sc.runs for _, sc in spec.cells())  # 36 cells: 1665 runs
    small = max(1, PARALLEL_MIN_RUNS // runs_per_replicate - 1)
    assert default_workers(spec, small) == 1
    assert default_workers(spec, 999) >= 1
    assert default_workers(spec, 999) == min(36, os.cpu_count() or 1)
