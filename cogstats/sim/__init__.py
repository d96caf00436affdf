"""Simulation of co-injected lessons with known true effects.

The simulation closes the loop
scenario -> retrieval -> score -> ledger -> gate -> retrieval ...

Needs the ``sim`` extra (numba, tqdm).
"""

from cogstats.sim.engine import simulate
from cogstats.sim.metrics import METRIC_COLUMNS
from cogstats.sim.result import SimulationResult, summarize_metrics
from cogstats.sim.spec import Scenario, SimulationSpec, load_spec, spec_from_dict

__all__ = [
    "METRIC_COLUMNS",
    "Scenario",
    "SimulationResult",
    "SimulationSpec",
    "load_spec",
    "simulate",
    "spec_from_dict",
    "summarize_metrics",
]
