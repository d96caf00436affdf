"""The lesson table's checks: :func:`lesson_table` and :func:`live_lessons`.

What the table holds and who reads it is documented in :mod:`cogstats.lessons`, the
table's public face; a table in a file is read by :meth:`cogstats.Ledger.read_lessons`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import polars as pl

from cogstats._codes import LESSON_STATUSES, LIVE_STATUSES
from cogstats._validation import LedgerError
from cogstats.ledger._records import check_no_control

__all__ = ["LINEAGE_COLUMNS", "lesson_table", "live_lessons"]

#: Optional list columns of a lesson table: each holds lesson ids (or null).
LINEAGE_COLUMNS: tuple[str, ...] = ("consolidated_from", "supersedes")


def lesson_table(lessons: pl.DataFrame | Iterable[Mapping[str, Any]]) -> pl.DataFrame:
    """Validate and normalise a lesson table.

    Parameters
    ----------
    lessons : polars.DataFrame or iterable of mappings
        Columns ``id`` (non-empty, unique strings), ``created_at`` (datetimes, ISO-8601
        strings or numbers; only the order matters), optionally ``status`` (one of
        :data:`~cogstats._codes.LESSON_STATUSES` or null, which counts as verified) and the
        lineage columns ``consolidated_from`` and ``supersedes`` (lists of lesson ids, or
        null).  Other columns are kept.

    Returns
    -------
    polars.DataFrame
        The table in store order with ``created_at`` parsed (ISO strings become UTC
        datetimes) and ``status`` a string column.

    Raises
    ------
    LedgerError
        Naming the row (1-based) and the field of the first malformed entry.

    Examples
    --------
    >>> t = lesson_table([
    ...     {"id": "a", "status": "candidate", "created_at": "2024-01-01T00:00:00Z"},
    ...     {"id": "b", "status": "evicted", "created_at": "2024-01-02T00:00:00Z",
    ...      "consolidated_from": ["a"]},
    ... ])
    >>> t["created_at"].dtype, t["status"].to_list()
    (Datetime(time_unit='us', time_zone='UTC'), ['candidate', 'evicted'])
    """
    frame = lessons if isinstance(lessons, pl.DataFrame) else pl.DataFrame(list(lessons))
    for col in ("id", "created_at"):
        if col not in frame.columns:
            raise LedgerError(
                f"lesson table lacks column {col!r}; it needs id, created_at and optionally "
                "status, consolidated_from, supersedes",
                field=col,
            )
    if "status" not in frame.columns:
        frame = frame.with_columns(pl.lit(None, dtype=pl.String).alias("status"))
    ids = frame["id"].to_list()
    for k, i in enumerate(ids, start=1):
        if not isinstance(i, str) or not i:
            raise LedgerError(f"lesson id must be a non-empty string; got {i!r}", row=k, field="id")
        check_no_control(i, "id", k, None)
    seen: set[str] = set()
    for k, i in enumerate(ids, start=1):
        if i in seen:
            raise LedgerError(f"lesson id {i!r} appears twice", row=k, field="id")
        seen.add(i)
    statuses = frame["status"].cast(pl.String).to_list()
    for k, s in enumerate(statuses, start=1):
        if s is not None and s not in LESSON_STATUSES:
            raise LedgerError(
                f"status must be one of {list(LESSON_STATUSES)} or null; got {s!r}",
                row=k,
                field="status",
            )
    for col in LINEAGE_COLUMNS:
        if col not in frame.columns:
            continue
        for k, value in enumerate(frame[col].to_list(), start=1):
            if value is None:
                continue
            if isinstance(value, str) or not all(isinstance(v, str) and v for v in value):
                raise LedgerError(
                    f"{col} must be a list of lesson ids (strings) or null; got {value!r}",
                    row=k,
                    field=col,
                )
            for j, v in enumerate(value):
                check_no_control(v, col, k, None, f"{col}[{j}]")
    created = frame["created_at"]
    if created.dtype == pl.String:
        try:
            created = created.str.to_datetime(time_zone="UTC", time_unit="us")
        except Exception as exc:
            raise LedgerError(
                f"created_at must be ISO-8601 datetimes, datetimes or numbers ({exc})",
                field="created_at",
            ) from None
    elif not (created.dtype.is_numeric() or created.dtype.is_temporal()):
        raise LedgerError(
            f"created_at must be datetimes, ISO strings or numbers; got dtype {created.dtype}",
            field="created_at",
        )
    if created.null_count():
        first = created.is_null().to_list().index(True)
        raise LedgerError("created_at is missing", row=first + 1, field="created_at")
    return frame.with_columns(created.alias("created_at"), pl.col("status").cast(pl.String))


def live_lessons(table: pl.DataFrame) -> pl.DataFrame:
    """Keep the lessons retrieval may inject: live statuses, or null (verified).

    Examples
    --------
    >>> t = lesson_table([{"id": "a", "status": "evicted", "created_at": 1},
    ...                   {"id": "b", "status": None, "created_at": 2}])
    >>> live_lessons(t)["id"].to_list()
    ['b']
    """
    return table.filter(pl.col("status").is_null() | pl.col("status").is_in(LIVE_STATUSES))
