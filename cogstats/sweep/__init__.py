"""Sweeps: run the simulator over a grid of settings, store one row per cell, read it back.

``cogstats sweep SPEC.toml`` (or :func:`sweep_spec`) expands a sweep spec's grid into
cells, seeds cell ``i`` with child ``i`` of the root SeedSequence, runs the cells on
local worker processes or a Dask cluster, and appends one Parquet row per finished cell
to a resumable store; :func:`read_sweep` reads the table back, and the analysis helpers
(:func:`operating_characteristics`, :func:`pareto_frontier`, :func:`recommend`) turn it
into operating characteristics, trade-off frontiers and a recommended setting;
:func:`check_sweep` (``cogstats sweep check``) fails a CI job when a metric crosses a bound.

Needs the ``sim`` extra (numba, tqdm); the Dask executor needs the ``scale`` extra.
"""

from cogstats.sweep.analysis import (
    Constraint,
    Recommendation,
    grid_columns,
    operating_characteristics,
    pareto_frontier,
    recommend,
    with_derived,
)
from cogstats.sweep.check import SweepCheck, check_sweep
from cogstats.sweep.executors import DaskExecutor, LocalExecutor, run_cell
from cogstats.sweep.runner import SweepResult, rerun_cell, sweep_spec
from cogstats.sweep.spec import CellTask, SweepSpec, cell_key, load_sweep, sweep_from_dict
from cogstats.sweep.store import StoreMismatchError, SweepStore, read_manifest, read_sweep

__all__ = [
    "CellTask",
    "Constraint",
    "DaskExecutor",
    "LocalExecutor",
    "Recommendation",
    "StoreMismatchError",
    "SweepCheck",
    "SweepResult",
    "SweepSpec",
    "SweepStore",
    "cell_key",
    "check_sweep",
    "grid_columns",
    "load_sweep",
    "operating_characteristics",
    "pareto_frontier",
    "read_manifest",
    "read_sweep",
    "recommend",
    "rerun_cell",
    "run_cell",
    "sweep_from_dict",
    "sweep_spec",
    "with_derived",
]
