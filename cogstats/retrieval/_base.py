"""What every retrieval policy shares: the lesson table, the selection, the protocol."""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable

import polars as pl

from cogstats._codes import LIVE_STATUSES
from cogstats._validation import ParameterError
from cogstats.ledger import Ledger
from cogstats.lessons import lesson_table as validate_lesson_table
from cogstats.lessons import live_lessons

__all__ = ["STATUSES", "RetrievalPolicy", "Selection", "lesson_table"]

#: Lesson statuses a retrieval policy injects; null counts as verified (cycgraph's
#: backward compatibility for stores written before eval-gating).
STATUSES: tuple[str, ...] = LIVE_STATUSES


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
    """Validate a lesson table (:func:`cogstats.lessons.lesson_table`) and keep its live lessons.

    Retrieval injects candidates, admitted and verified lessons (null counts as
    verified); evicted and retired lessons are left out.  Policies put every non-candidate
    live lesson in the verified block.

    Examples
    --------
    >>> t = lesson_table([{"id": "a", "status": "candidate", "created_at": "2024-01-01T00:00:00Z"},
    ...                   {"id": "b", "status": "evicted", "created_at": "2024-01-02T00:00:00Z"}])
    >>> t["id"].to_list(), t.dtypes[2]
    (['a'], Datetime(time_unit='us', time_zone='UTC'))
    """
    return live_lessons(validate_lesson_table(lessons))


def check_slots(max_facts: Any, candidate_slots: Any) -> tuple[int, int]:
    """Validate ``max_facts``/``candidate_slots`` (the latter clamped to the former)."""
    from cogstats._validation import check_int

    mf = check_int("max_facts", max_facts, minimum=0)
    cs = check_int("candidate_slots", candidate_slots, minimum=0)
    if mf is None or cs is None:  # pragma: no cover - not optional
        raise ParameterError("max_facts and candidate_slots are required")
    return mf, min(cs, mf)
