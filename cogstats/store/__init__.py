"""The lesson store: the recommended lifecycle for a live agent, durable and locked.

:class:`LessonStore` holds the lessons' statuses, the ledger of runs and the gate's
statistics; an agent calls :meth:`~LessonStore.select` before a run and
:meth:`~LessonStore.record` after it.  :mod:`cogstats.store.lifecycle` is the one
implementation of the lifecycle wiring (statuses, events, the judged set, the lesson
table) that the store, the simulator's reference engine and ``tune``'s replay share.

Errors a service maps to answers: :class:`RunConflictError` (a run id given again with
other content: 409), :class:`~cogstats._validation.LedgerError` and
:class:`UnknownLessonError` (a malformed run: 422, naming the field),
:class:`StoreSettingsError` (a reopen with other settings), :class:`StateLockedError`
(another writer), :class:`StateWriteError` (an ``OSError``: the disk refused, naming the
path: 507), :class:`ReadOnlyStoreError`, :class:`StoreCorruptError`.

This package sits above the gates, the retrieval policies and the presets, below the
simulator; it imports numpy, scipy and polars only (never numba or Jupyter).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cogstats._lazy import attach

if TYPE_CHECKING:  # the real names, for type checkers and IDEs
    from cogstats._statelock import StateLockedError, StateWriteError
    from cogstats.store.core import RunConflictError, StoreCore, UnknownLessonError
    from cogstats.store.journal import StoreCorruptError
    from cogstats.store.lifecycle import Cadence, Change, Lifecycle
    from cogstats.store.settings import StoreSettings, StoreSettingsError
    from cogstats.store.store import Durability, LessonStore, ReadOnlyStoreError, StoreWarning

_LAZY: dict[str, str] = {
    "Cadence": "cogstats.store.lifecycle",
    "Change": "cogstats.store.lifecycle",
    "Durability": "cogstats.store.store",
    "LessonStore": "cogstats.store.store",
    "Lifecycle": "cogstats.store.lifecycle",
    "ReadOnlyStoreError": "cogstats.store.store",
    "RunConflictError": "cogstats.store.core",
    "StateLockedError": "cogstats._statelock",
    "StateWriteError": "cogstats._statelock",
    "StoreCore": "cogstats.store.core",
    "StoreCorruptError": "cogstats.store.journal",
    "StoreSettings": "cogstats.store.settings",
    "StoreSettingsError": "cogstats.store.settings",
    "StoreWarning": "cogstats.store.store",
    "UnknownLessonError": "cogstats.store.core",
}

__all__ = sorted(_LAZY)

__getattr__, __dir__ = attach("cogstats.store", _LAZY, globals())
