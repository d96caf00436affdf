"""Gates: turn evidence about lessons into decisions (promote, evict, hold, retire).

Production code may import this package with numpy, scipy, polars and statsmodels only.
"""

from cogstats.gates._report import DECISIONS, GateReport
from cogstats.gates.audit import AuditGate, audit_entries_from_ledger
from cogstats.gates.cycgraph import CYCGRAPH_DECISION_COLUMNS, CycgraphGate

__all__ = [
    "CYCGRAPH_DECISION_COLUMNS",
    "DECISIONS",
    "AuditGate",
    "CycgraphGate",
    "GateReport",
    "audit_entries_from_ledger",
]
