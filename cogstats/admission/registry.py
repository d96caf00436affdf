"""The admission registries: defences and vector indexes (name -> class).

They sit below the modules that fill them (:mod:`cogstats.admission.defences`,
:mod:`cogstats.admission.index`) and below the spec that checks names against them, so
the spec reads them without importing the defences (the built-in entries load on first
use, as every :class:`~cogstats._registry.Registry` does).

Examples
--------
>>> "quarantine" in DEFENCES, "flat" in INDEXES
(True, True)
>>> list(DEFENCES)[:2]
['clean', 'none']
"""

from __future__ import annotations

from typing import Any

from cogstats._registry import Registry

__all__ = ["DEFENCES", "INDEXES"]

_DEFENCES = ("clean", "none", "read_filter", "admission", "quarantine")
_INDEXES = ("flat", "hnsw", "ivf")

#: Defence name -> class (:class:`~cogstats.admission.defences.Defence`), in the order
#: registered: from no defence to the strongest.
DEFENCES: Registry[Any] = Registry(
    "defence",
    dict.fromkeys(_DEFENCES, "cogstats.admission.defences"),
    param="defence",
    sort=False,
)
#: Index name -> class (:class:`~cogstats.admission.index.VectorIndex`).
INDEXES: Registry[Any] = Registry(
    "index", dict.fromkeys(_INDEXES, "cogstats.admission.index"), param="index", sort=False
)
