"""Gates: turn evidence about lessons into decisions (promote, evict, hold, retire).

Production code may import this package with numpy, scipy, polars and statsmodels only.
"""

from cogstats.gates._report import DECISIONS, GateReport
from cogstats.gates.audit import AuditGate, audit_entries_from_ledger
from cogstats.gates.cycgraph import CYCGRAPH_DECISION_COLUMNS, CycgraphGate
from cogstats.gates.evidence import EVIDENCE_DECISION_COLUMNS, EvidenceGate

__all__ = [
    "CYCGRAPH_DECISION_COLUMNS",
    "DECISIONS",
    "EVIDENCE_DECISION_COLUMNS",
    "AuditGate",
    "CycgraphGate",
    "EvidenceGate",
    "GateReport",
    "audit_entries_from_ledger",
]
