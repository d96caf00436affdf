"""Executors: local (in-process and worker processes) and Dask give identical tables."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from polars.testing import assert_frame_equal

from cogstats._validation import ParameterError
from cogstats.cli import main
from cogstats.sweep import DaskExecutor, LocalExecutor, read_sweep, sweep_spec
from cogstats.sweep.executors import make_executor

ROOT = Path(__file__).resolve().parents[2]
CRATER = ROOT / "simulations" / "poison_crater.toml"

# 2 x 2 x 2 (zipped margins) x 2 = 16 cells of the S2 scenario
SPEC = f"""
scenario = "{CRATER}"
replicates = 40
seed = 7
[grid]
"gate.min_trials" = [2, 3]
"retrieval.rest_after_trials" = [2, 4]
"gate.promote_margin" = [0.03, 0.08]
"gate.evict_margin" = [0.03, 0.08]
"gate.decision_rule" = ["margin", "inference"]
zip = [["gate.promote_margin", "gate.evict_margin"]]
"""


def test_local_and_dask_give_identical_tables(tmp_path: Path) -> None:
    """The same spec and seed: one in-process worker, two local worker processes, and a
    dask LocalCluster (one worker process: each process start costs a package import)
    store identical cell tables (exact equality, timing columns apart), whatever order
    the cells finished in."""
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC)
    inline = sweep_spec(spec, out=tmp_path / "inline", workers=1, progress=False)
    local = sweep_spec(spec, out=tmp_path / "local", workers=2, progress=False)
    assert local.workers == 2
    args = ["sweep", str(spec), "--out", str(tmp_path / "dask"), "--executor", "dask"]
    assert main([*args, "--workers", "1", "--no-progress"]) == 0
    dask = read_sweep(tmp_path / "dask")
    assert inline.table.height == 16
    assert_frame_equal(local.table, inline.table)
    assert_frame_equal(dask, inline.table)
    # the cells really ran in other processes
    for name in ("local", "dask"):
        workers = set(read_sweep(tmp_path / name, timings=True)["worker"])
        assert len(workers) >= 1
        assert all(not w.endswith(f":{os.getpid()}") for w in workers)


def test_executor_arguments() -> None:
    assert make_executor("local", workers=3).workers == 3
    with pytest.raises(ParameterError, match="workers must be >= 1"):
        LocalExecutor(workers=0)
    with pytest.raises(ParameterError, match="scheduler is for executor 'dask'"):
        make_executor("local", scheduler="tcp://localhost:8786")
    with pytest.raises(ParameterError, match="executor must be one of"):
        make_executor("ray")
    with pytest.raises(ParameterError, match="workers applies to the LocalCluster only"):
        DaskExecutor(scheduler="tcp://localhost:8786", workers=2)
    with pytest.raises(ParameterError, match="scheduler must be an address"):
        DaskExecutor(scheduler="")
