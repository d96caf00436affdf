"""The evolving-cognition audit: the weekly, model-free rules of the UCB1 lesson store.

The gate is this folder: the gate class with its rules (:mod:`.gate`, :class:`AuditGate`,
registered as ``audit``) and its compiled piece (:mod:`.kernel`, imported only when the
simulator runs).
"""

from cogstats.gates.audit.gate import AUDIT_DECISION_COLUMNS, AuditGate, audit_entries_from_ledger

__all__ = ["AUDIT_DECISION_COLUMNS", "AuditGate", "audit_entries_from_ledger"]
