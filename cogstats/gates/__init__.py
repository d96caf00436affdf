"""Gates: turn evidence about lessons into decisions (promote, evict, hold, retire).

Every gate has one protocol, ``evaluate(ledger, candidates=None, *, rng=None) ->
GateReport``, and every report starts with the same columns (:data:`REPORT_COLUMNS`).
:data:`OUTCOMES` are the outputs a gate's rule writes for a lesson and
:data:`OUTCOME_STATUS` the store status each one leads to (None: unchanged), the one table
a lesson store applies them through (:mod:`cogstats.store.lifecycle`).
:data:`GATES` is the registry (``get_gate(name)``, ``make_gate(name, **options)``; a gate
of one's own registers with :func:`register_gate` or is named by import path
``"package.module:Class"``).

Production code may import this package with numpy, scipy, polars and statsmodels only.
Names load on first use (PEP 562): ``from cogstats.gates import CycgraphGate`` does not
import the estimators that only :class:`EvidenceGate` needs.  :class:`StreamingGate` wraps
a gate for a running service: it decides after every run from running statistics
(:mod:`cogstats.gates.streaming`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cogstats._lazy import attach

if TYPE_CHECKING:  # the real names, for type checkers and IDEs
    from cogstats._codes import OUTCOME_CODES, OUTCOME_STATUS, OUTCOMES
    from cogstats.gates._options import (
        check_options,
        choice,
        integer,
        option,
        real,
        rule_options,
    )
    from cogstats.gates._registry import (
        GATES,
        Gate,
        allow_imports,
        get_gate,
        make_gate,
        register_gate,
    )
    from cogstats.gates._report import (
        DECISIONS,
        REPORT_COLUMNS,
        GateReport,
        Judgement,
        LessonState,
    )
    from cogstats.gates.audit import AUDIT_DECISION_COLUMNS, AuditGate, audit_entries_from_ledger
    from cogstats.gates.cycgraph import CYCGRAPH_DECISION_COLUMNS, CycgraphGate
    from cogstats.gates.evidence import EVIDENCE_DECISION_COLUMNS, EvidenceGate
    from cogstats.gates.lineage import LineageGate
    from cogstats.gates.recommended import LifecycleGate
    from cogstats.gates.streaming import (
        DuplicateRun,
        IngestResult,
        SkippedLine,
        StaleLockWarning,
        StateLockedError,
        StreamingGate,
    )
    from cogstats.stats import RegressionStats, StreamingStats


_LAZY: dict[str, str] = {
    "GATES": "cogstats.gates._registry",
    "Gate": "cogstats.gates._registry",
    "allow_imports": "cogstats.gates._registry",
    "get_gate": "cogstats.gates._registry",
    "make_gate": "cogstats.gates._registry",
    "register_gate": "cogstats.gates._registry",
    "DECISIONS": "cogstats.gates._report",
    "REPORT_COLUMNS": "cogstats.gates._report",
    "GateReport": "cogstats.gates._report",
    "Judgement": "cogstats.gates._report",
    "LessonState": "cogstats.gates._report",
    "OUTCOME_CODES": "cogstats._codes",
    "OUTCOME_STATUS": "cogstats._codes",
    "OUTCOMES": "cogstats._codes",
    "check_options": "cogstats.gates._options",
    "choice": "cogstats.gates._options",
    "integer": "cogstats.gates._options",
    "option": "cogstats.gates._options",
    "real": "cogstats.gates._options",
    "rule_options": "cogstats.gates._options",
    "AUDIT_DECISION_COLUMNS": "cogstats.gates.audit",
    "AuditGate": "cogstats.gates.audit",
    "audit_entries_from_ledger": "cogstats.gates.audit",
    "CYCGRAPH_DECISION_COLUMNS": "cogstats.gates.cycgraph",
    "CycgraphGate": "cogstats.gates.cycgraph",
    "EVIDENCE_DECISION_COLUMNS": "cogstats.gates.evidence",
    "EvidenceGate": "cogstats.gates.evidence",
    "LifecycleGate": "cogstats.gates.recommended",
    "LineageGate": "cogstats.gates.lineage",
    "DuplicateRun": "cogstats.gates.streaming",
    "IngestResult": "cogstats.gates.streaming",
    "RegressionStats": "cogstats.stats",
    "SkippedLine": "cogstats.gates.streaming",
    "StaleLockWarning": "cogstats.gates.streaming",
    "StateLockedError": "cogstats.gates.streaming",
    "StreamingGate": "cogstats.gates.streaming",
    "StreamingStats": "cogstats.stats",
}

__all__ = sorted(_LAZY)


__getattr__, __dir__ = attach("cogstats.gates", _LAZY, globals())
