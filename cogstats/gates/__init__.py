"""Gates: turn evidence about lessons into decisions (promote, evict, hold, retire).

Production code may import this package with numpy, scipy, polars and statsmodels only.
Names load on first use (PEP 562): ``from cogstats.gates import CycgraphGate`` does not
import the estimators that only :class:`EvidenceGate` needs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cogstats._lazy import attach

if TYPE_CHECKING:  # the real names, for type checkers and IDEs
    from cogstats.gates._report import DECISIONS, GateReport
    from cogstats.gates.audit import AuditGate, audit_entries_from_ledger
    from cogstats.gates.cycgraph import CYCGRAPH_DECISION_COLUMNS, CycgraphGate
    from cogstats.gates.evidence import EVIDENCE_DECISION_COLUMNS, EvidenceGate


_LAZY: dict[str, str] = {
    "DECISIONS": "cogstats.gates._report",
    "GateReport": "cogstats.gates._report",
    "AuditGate": "cogstats.gates.audit",
    "audit_entries_from_ledger": "cogstats.gates.audit",
    "CYCGRAPH_DECISION_COLUMNS": "cogstats.gates.cycgraph",
    "CycgraphGate": "cogstats.gates.cycgraph",
    "EVIDENCE_DECISION_COLUMNS": "cogstats.gates.evidence",
    "EvidenceGate": "cogstats.gates.evidence",
}

__all__ = sorted(_LAZY)


__getattr__, __dir__ = attach("cogstats.gates", _LAZY, globals())
