"""Write-path admission in a shared vector memory: poisoning a read filter cannot see.

A simulated multi-tenant vector memory (:func:`generate_world`), real ANN indexes
(faiss HNSW and IVF, :data:`INDEXES`), defences that decide where the trust decision is
made (:data:`DEFENCES`: ``clean``, ``none``, ``read_filter``, ``admission``,
``quarantine``), a consolidation job that can launder poison (:func:`consolidate`), a
recall monitor with its run-length theory (:class:`RecallMonitor`, :func:`cusum_arl`),
and the experiments that measure them (:func:`run_admission`, :func:`run_monitor`;
``cogstats admission SPEC``).  docs/admission.md has the figures.

Needs the ``admission`` extra (faiss-cpu, tqdm); faiss is imported when an index is
first built.  Every public name here loads on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cogstats._lazy import attach

if TYPE_CHECKING:
    from cogstats.admission.consolidation import Consolidation, consolidate
    from cogstats.admission.defences import (
        DEFENCES,
        REASONS,
        AdmissionDecisions,
        AdmissionRules,
        Defence,
        Placement,
        admission_decisions,
        get_defence,
        make_defence,
        register_defence,
    )
    from cogstats.admission.index import (
        INDEXES,
        VectorIndex,
        get_index,
        make_index,
        register_index,
    )
    from cogstats.admission.metrics import recall_at_k, serve
    from cogstats.admission.monitor import (
        MonitorPath,
        RecallMonitor,
        cusum_arl,
        cusum_run_lengths,
        cusum_threshold,
        siegmund_arl,
    )
    from cogstats.admission.run import AdmissionResult, MonitorResult, run_admission, run_monitor
    from cogstats.admission.spec import AdmissionSpec, load_admission_spec
    from cogstats.admission.world import World, generate_world

_LAZY: dict[str, str] = {
    "AdmissionSpec": "cogstats.admission.spec",
    "load_admission_spec": "cogstats.admission.spec",
    "World": "cogstats.admission.world",
    "generate_world": "cogstats.admission.world",
    "INDEXES": "cogstats.admission.index",
    "VectorIndex": "cogstats.admission.index",
    "get_index": "cogstats.admission.index",
    "make_index": "cogstats.admission.index",
    "register_index": "cogstats.admission.index",
    "DEFENCES": "cogstats.admission.defences",
    "REASONS": "cogstats.admission.defences",
    "AdmissionDecisions": "cogstats.admission.defences",
    "AdmissionRules": "cogstats.admission.defences",
    "Defence": "cogstats.admission.defences",
    "Placement": "cogstats.admission.defences",
    "admission_decisions": "cogstats.admission.defences",
    "get_defence": "cogstats.admission.defences",
    "make_defence": "cogstats.admission.defences",
    "register_defence": "cogstats.admission.defences",
    "Consolidation": "cogstats.admission.consolidation",
    "consolidate": "cogstats.admission.consolidation",
    "recall_at_k": "cogstats.admission.metrics",
    "serve": "cogstats.admission.metrics",
    "MonitorPath": "cogstats.admission.monitor",
    "RecallMonitor": "cogstats.admission.monitor",
    "cusum_arl": "cogstats.admission.monitor",
    "cusum_run_lengths": "cogstats.admission.monitor",
    "cusum_threshold": "cogstats.admission.monitor",
    "siegmund_arl": "cogstats.admission.monitor",
    "AdmissionResult": "cogstats.admission.run",
    "MonitorResult": "cogstats.admission.run",
    "run_admission": "cogstats.admission.run",
    "run_monitor": "cogstats.admission.run",
}

__all__ = sorted(_LAZY)

__getattr__, __dir__ = attach("cogstats.admission", _LAZY, globals())
