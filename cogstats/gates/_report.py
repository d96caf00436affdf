"""The gate report: one decision per candidate lesson, with the evidence behind it."""

from __future__ import annotations

import html
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import polars as pl

from cogstats._results import format_settings, frame_text
from cogstats._validation import ParameterError, suggest

__all__ = ["DECISIONS", "GateReport"]

#: Every decision a gate can make.
DECISIONS: tuple[str, ...] = ("promote", "evict", "hold", "retire")


@dataclass(frozen=True, repr=False, eq=False)
class GateReport:
    """Decisions of one gate pass.

    Attributes
    ----------
    gate : str
        Which gate made it (``"cycgraph"``, ``"evidence"``, ``"audit"``).
    decisions : polars.DataFrame
        One row per candidate, in candidate order: ``fact_id``, ``decision`` (promote,
        evict, hold, retire), ``reason`` (null, or e.g. ``"eval-gate:harmful"``),
        ``trials``, then the gate's evidence columns (null where the gate had none).
    settings : mapping
        The gate's policy.
    """

    gate: str
    decisions: pl.DataFrame
    settings: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "settings", MappingProxyType(dict(self.settings)))

    def to_frame(self) -> pl.DataFrame:
        """The decisions frame."""
        return self.decisions

    def _ids(self, decision: str) -> tuple[str, ...]:
        return tuple(self.decisions.filter(pl.col("decision") == decision)["fact_id"].to_list())

    @property
    def promoted(self) -> tuple[str, ...]:
        """Lessons promoted in this pass."""
        return self._ids("promote")

    @property
    def evicted(self) -> tuple[str, ...]:
        """Lessons evicted in this pass (any reason)."""
        return self._ids("evict")

    @property
    def held(self) -> tuple[str, ...]:
        """Lessons kept on trial."""
        return self._ids("hold")

    @property
    def retired(self) -> tuple[str, ...]:
        """Lessons retired (audit gates)."""
        return self._ids("retire")

    def decision(self, fact_id: str) -> dict[str, Any]:
        """The row of one lesson.

        Raises
        ------
        ParameterError
            When the lesson was not a candidate in this pass.
        """
        hit = self.decisions.filter(pl.col("fact_id") == fact_id)
        if hit.height == 0:
            ids = self.decisions["fact_id"].to_list()
            raise ParameterError(
                f"fact_id {fact_id!r} was not judged in this pass{suggest(fact_id, ids)}"
            )
        return hit.row(0, named=True)

    def summary(self) -> str:
        """Counts per decision, the policy, and the table."""
        counts = ", ".join(f"{d}={len(self._ids(d))}" for d in DECISIONS if self._ids(d))
        lines = [f"GateReport (gate={self.gate!r}): {counts or 'no candidates'}"]
        if self.settings:
            lines.append(f"policy: {format_settings(self.settings)}")
        lines.append(frame_text(self.decisions))
        return "\n".join(lines)

    def __repr__(self) -> str:
        counts = {d: len(self._ids(d)) for d in DECISIONS}
        inner = ", ".join(f"{k}={v}" for k, v in counts.items() if v)
        return f"GateReport(gate={self.gate!r}, {inner or 'empty'})"

    def _repr_html_(self) -> str:
        head = f"<strong>{html.escape(repr(self))}</strong>"
        if self.settings:
            head += f"<br><small>{html.escape(format_settings(self.settings))}</small>"
        with pl.Config(float_precision=4, tbl_rows=50):
            return f"<div>{head}{self.decisions._repr_html_()}</div>"
