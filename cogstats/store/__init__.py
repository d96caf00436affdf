"""The lesson store: the recommended lifecycle for a live agent, durable and locked.

:class:`LessonStore` holds the lessons' statuses, the ledger of runs and the gate's
statistics; an agent calls :meth:`~LessonStore.select` before a run and
:meth:`~LessonStore.record` after it.  :mod:`cogstats.store.lifecycle` is the one
implementation of the lifecycle wiring (statuses, events, the judged set, the lesson
table) that the store, the simulator's reference engine and ``tune``'s replay share.

This package sits above the gates, the retrieval policies and the presets, below the
simulator; it imports numpy, scipy and polars only (never numba or Jupyter).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cogstats._lazy import attach

if TYPE_CHECKING:  # the real names, for type checkers and IDEs
    from cogstats.store.lifecycle import Cadence, Change, Lifecycle

_LAZY: dict[str, str] = {
    "Cadence": "cogstats.store.lifecycle",
    "Change": "cogstats.store.lifecycle",
    "Lifecycle": "cogstats.store.lifecycle",
}

__all__ = sorted(_LAZY)

__getattr__, __dir__ = attach("cogstats.store", _LAZY, globals())
