"""The recommended gate: a lesson lifecycle with evidence behind every status.

The gate is this folder: its rule (:mod:`.rule`, plain functions of numbers or arrays),
the gate class and its statistics (:mod:`.gate`, :class:`LifecycleGate`, registered as
``recommended``) and its compiled piece (:mod:`.kernel`, imported only when the simulator
runs).
"""

from cogstats.gates.recommended.gate import (
    LIFECYCLE_DECISION_COLUMNS,
    LifecycleGate,
    LifecycleStatistics,
    crater_test,
)
from cogstats.gates.recommended.rule import (
    LIFECYCLE_WHY,
    Evidence,
    crater_t,
    lifecycle_bounds,
    lifecycle_look,
    lifecycle_outcome,
    lifecycle_rule,
    rule_evidence,
)

__all__ = [
    "LIFECYCLE_DECISION_COLUMNS",
    "LIFECYCLE_WHY",
    "Evidence",
    "LifecycleGate",
    "LifecycleStatistics",
    "crater_t",
    "crater_test",
    "lifecycle_bounds",
    "lifecycle_look",
    "lifecycle_outcome",
    "lifecycle_rule",
    "rule_evidence",
]
