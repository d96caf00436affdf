"""The gate report: one decision per candidate lesson, with the evidence behind it."""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np
import polars as pl

from cogstats._codes import DECISIONS, LESSON_STATUSES, OUTCOMES
from cogstats._results import format_settings, frame_text
from cogstats._validation import ParameterError, suggest
from cogstats.ledger import Ledger

__all__ = ["DECISIONS", "REPORT_COLUMNS", "GateReport", "Judgement", "LessonState"]

#: The leading columns of every gate report, in order; the gate's own columns follow.
REPORT_COLUMNS: tuple[str, ...] = (
    "fact_id",
    "decision",
    "reason",
    "why",
    "trials",
    "estimate",
    "std_error",
    "baseline_runs",
)

#: decisions in the report's text form: today's four first (their order unchanged), then
#: the lifecycle's outcomes
_REPR_ORDER = (*DECISIONS, *(o for o in OUTCOMES if o not in DECISIONS))

_SCHEMA: dict[str, Any] = {
    "fact_id": pl.String,
    "decision": pl.String,
    "reason": pl.String,
    "why": pl.String,
    "trials": pl.Int64,
    "estimate": pl.Float64,
    "std_error": pl.Float64,
    "baseline_runs": pl.Int64,
}


@dataclass(frozen=True, repr=False, eq=False)
class GateReport:
    """Decisions of one gate pass.

    Attributes
    ----------
    gate : str
        The registry name of the gate that made it (``"cycgraph"``, ``"evidence"``,
        ``"audit"``, or a gate of one's own).
    decisions : polars.DataFrame
        One row per candidate, in candidate order.  Every report starts with the columns
        :data:`REPORT_COLUMNS`, with one meaning across gates; the gate's own columns
        follow (see each gate).  A frame built by a gate of one's own needs only
        ``fact_id`` and ``decision``: the other leading columns are added as nulls.

        - ``fact_id``: the lesson.
        - ``decision``: ``promote``, ``evict``, ``hold`` or ``retire``.
        - ``reason``: the reason a lesson store records with the status change
          (``eval-gate:harmful``, ``eval-gate:no_lift``, ``audit:low_win_rate``,
          ``audit:superseded``, ``audit:contradiction``), null when the status does not
          change.
        - ``why``: one word that explains the decision, holds included (vocabulary
          below).
        - ``trials``: runs that carried the lesson (the audit's hits).
        - ``estimate``, ``std_error``: the gate's estimate of the lesson's effect on the
          score and its standard error, where the gate made one (null otherwise).
        - ``baseline_runs``: runs without the lesson that the estimate compares against.

        The ``why`` vocabulary (``cogstats._codes.WHY``): ``min_trials`` (fewer trials
        than min_trials or than the test needs), ``no_baseline`` (too few runs without
        the lesson), ``no_estimate`` (the estimator gave none), ``not_identifiable``
        (inseparable from another lesson), ``insufficient_evidence`` (tested, nothing
        shown), ``both_sides`` (promotion and harm both shown: held), ``promote_evidence``
        (promoted), ``harm_evidence`` (evicted as harmful), ``max_trials``,
        ``max_baseline_runs`` and ``max_looks`` (evicted as no_lift by a stopping rule),
        and for the audit ``min_hits``, ``low_win_rate``, ``win_rate_ok``, ``confidence_decay``,
        ``contradiction``, ``superseded``, ``inactive``; for the lifecycle gate
        (``recommended``) ``harm_margin`` and ``promote_margin`` (tier 1: evicted as
        harmful, promoted), ``futility`` (evicted as no_lift), ``non_inferior``
        (admitted), ``suspect`` and ``crater`` (suspended), ``cleared`` (released),
        ``suspended`` (held while suspended).
    settings : mapping
        The gate's policy.

    Examples
    --------
    >>> import polars as pl
    >>> report = GateReport("mine", pl.DataFrame({"fact_id": ["a"], "decision": ["hold"]}))
    >>> report.to_frame().columns
    ['fact_id', 'decision', 'reason', 'why', 'trials', 'estimate', 'std_error', 'baseline_runs']
    >>> report.held
    ('a',)
    """

    gate: str
    decisions: pl.DataFrame
    settings: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.gate, str) or not self.gate:
            raise ParameterError(f"gate must be the gate's name; got {self.gate!r}")
        frame = self.decisions
        if not isinstance(frame, pl.DataFrame):
            raise ParameterError(
                f"decisions must be a polars DataFrame; got {type(frame).__name__}"
            )
        for col in ("fact_id", "decision"):
            if col not in frame.columns:
                raise ParameterError(f"a gate report needs a {col!r} column; got {frame.columns}")
        bad = frame.filter(~pl.col("decision").is_in(OUTCOMES))["decision"].to_list()
        if bad:
            raise ParameterError(f"decision must be one of {list(OUTCOMES)}; got {bad[0]!r}")
        lead = [
            pl.col(c).cast(_SCHEMA[c]) if c in frame.columns else pl.lit(None, _SCHEMA[c]).alias(c)
            for c in REPORT_COLUMNS
        ]
        rest = [c for c in frame.columns if c not in REPORT_COLUMNS]
        object.__setattr__(self, "decisions", frame.select(*lead, *rest))
        object.__setattr__(self, "settings", MappingProxyType(dict(self.settings)))

    def to_frame(self) -> pl.DataFrame:
        """Return the decisions frame."""
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

    @property
    def admitted(self) -> tuple[str, ...]:
        """Lessons admitted in this pass (the lifecycle gate)."""
        return self._ids("admit")

    @property
    def suspended(self) -> tuple[str, ...]:
        """Lessons suspended in this pass (the lifecycle gate)."""
        return self._ids("suspend")

    @property
    def released(self) -> tuple[str, ...]:
        """Lessons released from suspension in this pass (the lifecycle gate)."""
        return self._ids("release")

    def decision(self, fact_id: str) -> dict[str, Any]:
        """Return the row of one lesson.

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

    @property
    def note(self) -> str | None:
        """What the user should know about this pass's covariates, or None.

        The one covariate rule's note (:func:`cogstats.covariates.choose_covariates`,
        kept by the gate under ``settings["covariate_note"]``): a default covariate
        replaced by the ledger's ``difficulty`` column, or difficulty- and
        task-family-like columns nothing adjusts for, with the parameter that would use
        them.  :meth:`summary` and the notebook display show it.

        Examples
        --------
        >>> import polars as pl
        >>> frame = pl.DataFrame({"fact_id": ["a"], "decision": ["hold"]})
        >>> GateReport("mine", frame, {"covariate_note": "adjusting for 'difficulty'"}).note
        "adjusting for 'difficulty'"
        >>> GateReport("mine", frame).note is None
        True
        """
        note = self.settings.get("covariate_note")
        return None if note is None else str(note)

    def summary(self) -> str:
        """Summarise the pass: counts per decision, the note, the policy, and the table."""
        counts = ", ".join(f"{d}={len(self._ids(d))}" for d in _REPR_ORDER if self._ids(d))
        lines = [f"GateReport (gate={self.gate!r}): {counts or 'no candidates'}"]
        if self.note:
            lines.append(f"note: {self.note}")
        if self.settings:
            lines.append(f"policy: {format_settings(self.settings)}")
        lines.append(frame_text(self.decisions))
        return "\n".join(lines)

    def __repr__(self) -> str:
        counts = {d: len(self._ids(d)) for d in _REPR_ORDER}
        inner = ", ".join(f"{k}={v}" for k, v in counts.items() if v)
        return f"GateReport(gate={self.gate!r}, {inner or 'empty'})"

    def _repr_html_(self) -> str:
        head = f"<strong>{html.escape(repr(self))}</strong>"
        if self.note:
            head += f"<br><em>note: {html.escape(self.note)}</em>"
        if self.settings:
            head += f"<br><small>{html.escape(format_settings(self.settings))}</small>"
        with pl.Config(float_precision=4, tbl_rows=50):
            return f"<div>{head}{self.decisions._repr_html_()}</div>"


def check_candidates(candidates: Sequence[str] | None) -> list[str] | None:
    """Validate a gate's ``candidates`` argument: distinct lesson id strings, or None.

    Returns the ids as a list (None stays None: every lesson).

    Raises
    ------
    ParameterError
        For a string (not a sequence of ids), an id that is not a string (named by its
        position), or a repeated id.

    Examples
    --------
    >>> check_candidates(("a", "b")), check_candidates(None)
    (['a', 'b'], None)
    >>> check_candidates(["a", "a"])
    Traceback (most recent call last):
    ...
    cogstats._validation.ParameterError: candidates must not repeat a lesson id
    """
    if candidates is None:
        return None
    if isinstance(candidates, str):
        raise ParameterError(f"candidates must be a sequence of lesson ids; got {candidates!r}")
    ids = list(candidates)
    for k, f in enumerate(ids):
        if not isinstance(f, str):
            raise ParameterError(f"candidates[{k}] must be a lesson id string; got {f!r}")
    if len(set(ids)) != len(ids):
        raise ParameterError("candidates must not repeat a lesson id")
    return ids


def candidate_ids(ledger: Any, candidates: Sequence[str] | None) -> list[str]:
    """Validate a gate's ``ledger`` and ``candidates`` arguments; the candidate ids.

    Default: every lesson in the ledger, in order of first appearance.
    """
    if not isinstance(ledger, Ledger):
        raise ParameterError(f"ledger must be a cogstats Ledger; got {type(ledger).__name__}")
    ids = check_candidates(candidates)
    return list(ledger.fact_ids) if ids is None else ids


def report_frame(rows: Sequence[Mapping[str, Any]], schema: Mapping[str, Any]) -> pl.DataFrame:
    """Build a decisions frame from row dicts (missing keys null), columns in schema order."""
    data = {c: [r.get(c) for r in rows] for c in schema}
    return pl.DataFrame(data, schema=dict(schema))


def report_schema(own: Mapping[str, Any]) -> dict[str, Any]:
    """Return the schema of a gate's report: the leading columns, then the gate's own."""
    return {**_SCHEMA, **own}


# ---------------------------------------------------------------------- the gate protocol
@dataclass(frozen=True)
class LessonState:
    """A candidate's status in the store and the run at which it entered it.

    What a gate's ``judge(stats, statuses, candidates)`` receives per candidate
    (``statuses[fact_id]``); ``None`` statuses mean every candidate is a ``"candidate"``
    since run 0.

    Parameters
    ----------
    status : str
        One of :data:`cogstats._codes.LESSON_STATUSES`.
    since : int
        The run index (1-based) at which it entered the status (0: unknown).

    Examples
    --------
    >>> LessonState("admitted", 12)
    LessonState(status='admitted', since=12)
    >>> LessonState("promoted")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    cogstats._validation.ParameterError: status must be one of [...]; got 'promoted'...
    """

    status: str = "candidate"
    since: int = 0

    def __post_init__(self) -> None:
        """Validate the fields."""
        if self.status not in LESSON_STATUSES:
            raise ParameterError(
                f"status must be one of {list(LESSON_STATUSES)}; got {self.status!r}"
                + suggest(str(self.status), list(LESSON_STATUSES))
            )
        if isinstance(self.since, bool) or not isinstance(self.since, int) or self.since < 0:
            raise ParameterError(f"since must be a run index >= 0; got {self.since!r}")


def check_statuses(statuses: Mapping[str, LessonState] | None) -> None:
    """Refuse statuses that are not a mapping of lesson id -> :class:`LessonState`."""
    if statuses is None:
        return
    if not isinstance(statuses, Mapping):
        raise ParameterError(
            f"statuses must be a mapping of lesson id -> LessonState; got {type(statuses).__name__}"
        )
    for f, state in statuses.items():
        if not isinstance(state, LessonState):
            raise ParameterError(
                f"statuses[{f!r}] must be a LessonState(status, since); got {state!r}"
            )


@dataclass(frozen=True)
class Judgement:
    """One look's decisions, before they become a report.

    A gate's ``judgement(stats, statuses, candidates)`` returns one (or a runner wraps the
    :class:`GateReport` of ``judge`` with :meth:`from_report`); the streaming gate compares
    ``decision`` and ``reason`` with the previous look and asks ``frame`` for the changed
    rows only.

    Attributes
    ----------
    gate : str
        The report's gate name.
    fact_ids : tuple of str
        The candidates, in order.
    decision, reason : numpy.ndarray
        Object arrays aligned with ``fact_ids`` (reason None where there is none).
    frame : callable
        ``frame(rows)``: the decisions frame of those row positions (``None``: all).
    settings : mapping
        The report's settings.

    Examples
    --------
    >>> import polars as pl
    >>> report = GateReport("mine", pl.DataFrame({"fact_id": ["a"], "decision": ["hold"]}))
    >>> j = Judgement.from_report(report)
    >>> j.decision.tolist(), j.report().held
    (['hold'], ('a',))
    """

    gate: str
    fact_ids: tuple[str, ...]
    decision: np.ndarray
    reason: np.ndarray
    frame: Callable[[np.ndarray | None], pl.DataFrame]
    settings: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_report(cls, report: GateReport) -> Judgement:
        """Wrap a full report (its frame is sliced for the changed rows)."""
        frame = report.to_frame()

        def rows(sel: np.ndarray | None) -> pl.DataFrame:
            if sel is None:
                return frame
            return frame[sel.tolist()] if sel.size else frame.clear()

        return cls(
            report.gate,
            tuple(frame["fact_id"].to_list()),
            np.asarray(frame["decision"].to_list(), dtype=object),
            np.asarray(frame["reason"].to_list(), dtype=object),
            rows,
            report.settings,
        )

    def report(self, rows: np.ndarray | None = None) -> GateReport:
        """Return the :class:`GateReport` of those rows (``None``: all)."""
        return GateReport(self.gate, self.frame(rows), self.settings)


class _SchemaJudgement(Judgement):
    """A judgement whose row frames have the report's exact schema.

    The gate builds them, so the report of the changed rows skips the schema checks
    (about 0.1 ms a look).
    """

    def report(self, rows: np.ndarray | None = None) -> GateReport:
        """Return the :class:`GateReport` of those rows (``None``: all)."""
        if rows is None:
            return GateReport(self.gate, self.frame(None), self.settings)
        report = object.__new__(GateReport)
        object.__setattr__(report, "gate", self.gate)
        object.__setattr__(report, "decisions", self.frame(rows))
        object.__setattr__(report, "settings", MappingProxyType(dict(self.settings)))
        return report
