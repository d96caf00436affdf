"""cogstats: statistics of lesson attribution for self-improving AI agents.

The production path (``cogstats.ledger``, ``cogstats.estimators``, ``cogstats.gates``)
needs numpy, scipy, polars and statsmodels only; the simulator, sweeps and reports are
imported lazily so that importing this package never pulls them in.
"""

from __future__ import annotations

from typing import Any

from cogstats.estimators import Attribution, attribute
from cogstats.gates import CycgraphGate, GateReport
from cogstats.ledger import Ledger

__version__ = "0.1.0"

__all__ = [
    "Attribution",
    "CycgraphGate",
    "GateReport",
    "Ledger",
    "__version__",
    "attribute",
]

_LAZY: dict[str, str] = {}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'cogstats' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
