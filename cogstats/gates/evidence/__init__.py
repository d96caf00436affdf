"""Evidence gates: promote or evict lessons on the inference of any attribution method.

The gate is this folder: its rule (:mod:`.rule`), the gate class (:mod:`.gate`,
:class:`EvidenceGate`, registered as ``evidence``) and its compiled piece (:mod:`.kernel`,
imported only when the simulator runs; it covers methods lift and welch).
"""

from cogstats.gates.evidence.gate import EVIDENCE_DECISION_COLUMNS, EvidenceGate
from cogstats.gates.evidence.rule import evidence_outcome, group_sides, side_alpha

__all__ = [
    "EVIDENCE_DECISION_COLUMNS",
    "EvidenceGate",
    "evidence_outcome",
    "group_sides",
    "side_alpha",
]
