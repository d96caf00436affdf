"""The lesson table: the store's lessons beside the ledger of runs.

A ledger says which lessons went into each run and how the run scored; the lesson table
says what the store knows of each lesson: its ``id``, when it was ``created_at``, its
``status`` (see :data:`~cogstats._codes.LESSON_STATUSES`; null counts as verified, as in
cycgraph's stores written before eval-gating) and, optionally, its lineage:
``consolidated_from`` (the lessons it was summarised from) and ``supersedes`` (the lessons
it replaces).  Retrieval policies read the live lessons of it; gates that need statuses or
lineage (``uses_lessons = True``, see :mod:`cogstats.gates`) receive it.

This module is the table's documented face: :func:`lesson_table` validates a table built
in code, :func:`live_lessons` keeps the lessons retrieval may inject, and
:data:`LINEAGE_COLUMNS` names the lineage columns.  A table in a file is read by
:meth:`cogstats.Ledger.read_lessons`.  The code lives in :mod:`cogstats.ledger` (which
exports the same names), beside the ledger's readers.

Examples
--------
>>> from cogstats.lessons import lesson_table, live_lessons
>>> table = lesson_table([{"id": "a", "status": "evicted", "created_at": 1},
...                       {"id": "b", "status": None, "created_at": 2}])
>>> live_lessons(table)["id"].to_list()
['b']
"""

from __future__ import annotations

from cogstats.ledger import LINEAGE_COLUMNS, lesson_table, live_lessons

__all__ = ["LINEAGE_COLUMNS", "lesson_table", "live_lessons"]
