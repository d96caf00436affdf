"""The lineage gate: a gate that first applies the lesson table.

:class:`LineageGate` wraps any gate: on every pass it leaves out the runs that carried an
evicted lesson and (optionally) gives each lesson its ancestors' evidence, with
:func:`cogstats.estimators.apply_lessons`, then lets the inner gate decide.  See
:mod:`cogstats.estimators.lineage` for the two transforms and docs/lineage.md for what
they change.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from cogstats._validation import ParameterError
from cogstats.estimators.lineage import apply_lessons
from cogstats.ledger import Ledger

__all__ = ["LineageGate"]


@dataclass(frozen=True)
class LineageGate:
    """A gate that first applies the lesson table: evicted lessons out, lineage pooled.

    Parameters
    ----------
    gate : str or gate object
        The gate that decides: a registered name or import path (built with
        ``options``), or a gate object.
    options : mapping
        Options for a named ``gate``.
    exclude_evicted : bool
        Leave out the runs that carried a lesson the table marks evicted
        (:func:`~cogstats.estimators.exclude_lessons`).
    pool_parents : bool
        Give each lesson its ancestors' evidence (:func:`~cogstats.estimators.pool_lineage`).

    Notes
    -----
    ``uses_lessons = True``: the simulator's reference engine passes the lesson table of
    every lesson that has arrived (statuses included) on every pass, and so does
    ``cogstats gate --lessons FILE``.  Without a table the inner gate decides on the
    ledger as it is.  With both options off it is the inner gate exactly.

    Examples
    --------
    >>> ledger = Ledger.from_records(
    ...     [{"run_id": f"p{i}", "score": 0.1, "fact_ids": ["P", "L"]} for i in range(2)]
    ...     + [{"run_id": f"l{i}", "score": 0.8, "fact_ids": ["L"]} for i in range(2)]
    ...     + [{"run_id": f"n{i}", "score": 0.6, "fact_ids": []} for i in range(4)])
    >>> table = [{"id": "P", "status": "evicted", "created_at": 1},
    ...          {"id": "L", "status": "candidate", "created_at": 1}]
    >>> policy = {"decision_rule": "margin", "min_trials": 2}
    >>> plain = LineageGate("cycgraph", policy, exclude_evicted=False)
    >>> plain.evaluate(ledger, ["L"], lessons=table).to_frame()["decision"].to_list()
    ['evict']
    >>> LineageGate("cycgraph", policy).evaluate(ledger, ["L"], lessons=table
    ...     ).to_frame()["decision"].to_list()
    ['promote']
    """

    gate: Any = "cycgraph"
    options: Mapping[str, Any] = field(default_factory=dict)
    exclude_evicted: bool = True
    pool_parents: bool = False
    uses_lessons: ClassVar[bool] = True

    def __post_init__(self) -> None:
        """Build the inner gate once."""
        for name in ("exclude_evicted", "pool_parents"):
            if not isinstance(getattr(self, name), bool):
                raise ParameterError(f"{name} must be True or False; got {getattr(self, name)!r}")
        if isinstance(self.gate, str):
            from cogstats.gates import make_gate

            inner = make_gate(self.gate, **dict(self.options))
        else:
            if self.options:
                raise ParameterError("options apply to a gate given by name, not to an object")
            inner = self.gate
        if not callable(getattr(inner, "evaluate", None)):
            raise ParameterError(f"gate must be a gate name or a gate object; got {inner!r}")
        object.__setattr__(self, "_inner", inner)

    @property
    def judges_verified(self) -> bool:
        """Whether the inner gate judges verified lessons too (as the audit does)."""
        return bool(getattr(self._inner, "judges_verified", False))  # type: ignore[attr-defined]

    def evaluate(
        self,
        ledger: Ledger,
        candidates: Sequence[str] | None = None,
        *,
        rng: Any = None,
        lessons: Any = None,
    ) -> Any:
        """Judge the candidates on the ledger with the lesson table applied."""
        inner = self._inner  # type: ignore[attr-defined]
        extra: dict[str, Any] = {}
        if lessons is not None:
            ledger, table = apply_lessons(
                ledger,
                lessons,
                exclude_evicted=self.exclude_evicted,
                pool_parents=self.pool_parents,
            )
            if getattr(inner, "uses_lessons", False):
                extra["lessons"] = table
        return inner.evaluate(ledger, candidates, rng=rng, **extra)
