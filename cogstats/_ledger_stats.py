"""The former home of the ledger's per-lesson group statistics: :mod:`cogstats.stats.groups`.

Kept so that imports of ``cogstats._ledger_stats`` keep working; new code imports
:mod:`cogstats.stats.groups`.
"""

from __future__ import annotations

from cogstats.stats.groups import (
    UNIT_ROUNDOFF,
    FactArrays,
    GroupArrays,
    baseline_arrays,
    exact_stats,
    fact_arrays,
    facts_index,
    first_in_run,
    group_arrays,
    uncertainty,
)

__all__ = [
    "UNIT_ROUNDOFF",
    "FactArrays",
    "GroupArrays",
    "baseline_arrays",
    "exact_stats",
    "fact_arrays",
    "facts_index",
    "first_in_run",
    "group_arrays",
    "uncertainty",
]
