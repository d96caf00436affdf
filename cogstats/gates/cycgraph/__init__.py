"""cycgraph's eval gate, reproduced exactly: the margin rule and the inference rule.

The gate is this folder: its rule (:mod:`.rule`, plain functions of numbers or arrays),
the gate class (:mod:`.gate`, :class:`CycgraphGate`, registered as ``cycgraph``) and its
compiled piece (:mod:`.kernel`, imported only when the simulator runs).
"""

from cogstats.gates.cycgraph.gate import CYCGRAPH_DECISION_COLUMNS, CycgraphGate
from cogstats.gates.cycgraph.rule import (
    inference_outcome,
    is_tested,
    margin_outcome,
    spending_factor,
    spent_pvalue,
)

__all__ = [
    "CYCGRAPH_DECISION_COLUMNS",
    "CycgraphGate",
    "inference_outcome",
    "is_tested",
    "margin_outcome",
    "spending_factor",
    "spent_pvalue",
]
