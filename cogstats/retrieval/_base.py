"""What every retrieval policy shares: the lesson table, the selection, the protocol."""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable

import polars as pl

from cogstats._validation import LedgerError, ParameterError
from cogstats.ledger import Ledger

__all__ = ["STATUSES", "RetrievalPolicy", "Selection", "lesson_table"]

#: Lesson statuses a retrieval policy understands; null counts as verified (cycgraph's
#: backward compatibility for stores written before eval-gating).
STATUSES: tuple[str, ...] = ("candidate", "verified")


@dataclass(frozen=True)
class Selection:
    """The lessons chosen for one run.

    Attributes
    ----------
    fact_ids : tuple of str
        Injected lessons, in prompt order.
    propensities : mapping or None
        For randomized policies: every eligible lesson's probability of being injected
        (log it in the ledger's ``eligible_ids``/``propensities`` columns).  ``None`` for
        deterministic policies.
    """

    fact_ids: tuple[str, ...]
    propensities: Mapping[str, float] | None = field(default=None)

    def __post_init__(self) -> None:
        if self.propensities is not None:
            object.__setattr__(self, "propensities", MappingProxyType(dict(self.propensities)))

    def ledger_fields(self) -> dict[str, Any]:
        """``fact_ids`` (and the propensity columns) ready for :meth:`Ledger.record`."""
        out: dict[str, Any] = {"fact_ids": list(self.fact_ids)}
        if self.propensities is not None:
            out["eligible_ids"] = list(self.propensities)
            out["propensities"] = list(self.propensities.values())
        return out

    def _repr_html_(self) -> str:
        return f"<code>{html.escape(repr(self))}</code>"


@runtime_checkable
class RetrievalPolicy(Protocol):
    """A retrieval policy picks the lessons for the next run.

    ``select(lessons, ledger=None, *, rng=None, context=None) -> Selection``: ``lessons``
    is a lesson table (see :func:`lesson_table`), ``ledger`` the outcomes so far (policies
    that ignore it accept ``None``), ``rng`` a seed or generator for randomized policies,
    ``context`` facts about the coming run (e.g. ``{"family": "billing"}`` for UCB1).
    """

    def select(
        self,
        lessons: pl.DataFrame,
        ledger: Ledger | None = None,
        *,
        rng: Any = None,
        context: Mapping[str, Any] | None = None,
    ) -> Selection:  # pragma: no cover - protocol
        ...


def lesson_table(lessons: pl.DataFrame | Iterable[Mapping[str, Any]]) -> pl.DataFrame:
    """Validate and normalise a lesson table.

    Parameters
    ----------
    lessons : polars.DataFrame or iterable of mappings
        Columns ``id`` (non-empty, unique strings), ``status`` (``"candidate"``,
        ``"verified"`` or null, which counts as verified) and ``created_at`` (datetimes,
        ISO-8601 strings or numbers; only the order matters).  Other columns are kept.

    Returns
    -------
    polars.DataFrame
        The table in store order with ``created_at`` parsed (ISO strings become UTC
        datetimes).

    Examples
    --------
    >>> t = lesson_table([{"id": "a", "status": "candidate", "created_at": "2024-01-01T00:00:00Z"}])
    >>> t.dtypes[2]
    Datetime(time_unit='us', time_zone='UTC')
    """
    frame = lessons if isinstance(lessons, pl.DataFrame) else pl.DataFrame(list(lessons))
    for col in ("id", "created_at"):
        if col not in frame.columns:
            raise LedgerError(
                f"lesson table lacks column {col!r}; it needs id, status, created_at", field=col
            )
    if "status" not in frame.columns:
        frame = frame.with_columns(pl.lit(None, dtype=pl.String).alias("status"))
    ids = frame["id"].to_list()
    for k, i in enumerate(ids, start=1):
        if not isinstance(i, str) or not i:
            raise LedgerError(f"lesson id must be a non-empty string; got {i!r}", row=k, field="id")
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise LedgerError(f"lesson id {dup!r} appears twice", field="id")
    statuses = frame["status"].cast(pl.String).to_list()
    for k, s in enumerate(statuses, start=1):
        if s is not None and s not in STATUSES:
            raise LedgerError(
                f"status must be one of {list(STATUSES)} or null; got {s!r}", row=k, field="status"
            )
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


def check_slots(max_facts: Any, candidate_slots: Any) -> tuple[int, int]:
    """Validate ``max_facts``/``candidate_slots`` (the latter clamped to the former)."""
    from cogstats._validation import check_int

    mf = check_int("max_facts", max_facts, minimum=0)
    cs = check_int("candidate_slots", candidate_slots, minimum=0)
    if mf is None or cs is None:  # pragma: no cover - not optional
        raise ParameterError("max_facts and candidate_slots are required")
    return mf, min(cs, mf)
