"""cogstats: statistics of lesson attribution for self-improving AI agents.

The production path (``cogstats.ledger``, ``cogstats.estimators``, ``cogstats.gates``)
needs numpy, scipy, polars and statsmodels only; the simulator, sweeps and reports need
their extras.  Every public name here loads on first use (PEP 562), so ``import
cogstats`` is cheap and imports none of them until asked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cogstats._lazy import attach
from cogstats._version import __version__

if TYPE_CHECKING:  # the real names, for type checkers and IDEs
    from cogstats.estimators import SPENDING, Attribution, attribute
    from cogstats.gates import (
        GATES,
        AuditGate,
        CycgraphGate,
        EvidenceGate,
        GateReport,
        LifecycleGate,
        StreamingGate,
    )
    from cogstats.ledger import Ledger
    from cogstats.presets import PRESETS, recommended
    from cogstats.retrieval import RETRIEVAL_POLICIES
    from cogstats.sim import Scenario, load_spec, simulate
    from cogstats.store import LessonStore
    from cogstats.sweep import read_sweep, sweep_spec
    from cogstats.tuning import tune


_LAZY: dict[str, str] = {
    "Ledger": "cogstats.ledger",
    "Attribution": "cogstats.estimators",
    "attribute": "cogstats.estimators",
    "CycgraphGate": "cogstats.gates",
    "EvidenceGate": "cogstats.gates",
    "AuditGate": "cogstats.gates",
    "GateReport": "cogstats.gates",
    "StreamingGate": "cogstats.gates",
    "LifecycleGate": "cogstats.gates",
    "GATES": "cogstats.gates",
    "SPENDING": "cogstats.estimators",
    "RETRIEVAL_POLICIES": "cogstats.retrieval",
    "recommended": "cogstats.presets",
    "PRESETS": "cogstats.presets",
    "LessonStore": "cogstats.store",
    "Scenario": "cogstats.sim",
    "simulate": "cogstats.sim",
    "load_spec": "cogstats.sim",
    "sweep_spec": "cogstats.sweep",
    "read_sweep": "cogstats.sweep",
    "tune": "cogstats.tuning",
}

__all__ = sorted([*_LAZY, "__version__"])


__getattr__, __dir__ = attach("cogstats", _LAZY, globals())
