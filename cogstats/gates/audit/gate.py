"""The evolving-cognition audit: the weekly, model-free rules of the UCB1 lesson store.

Rules (docs/reference.md, "The evolving-cognition lesson store"):

- ``hits >= min_hits`` and ``wins / hits < min_win_rate``: retire (never retrieved again);
- ``hits == 0`` and ``age_days >= decay_age_days``: confidence decays by ``decay_factor``
  per audit pass (the lesson stays);
- an entry that lists another under ``contradicts``: both are flagged and leave retrieval
  until a person resolves them;
- an entry listed under another's ``supersedes`` leaves retrieval (kept for the trail).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, ClassVar

import polars as pl

from cogstats import _codes as C
from cogstats._codes import CONTRADICTION, LOW_WIN_RATE, SUPERSEDED
from cogstats._validation import LedgerError, ParameterError, check_real
from cogstats.gates._options import check_options, integer, option, real
from cogstats.gates._registry import register_gate
from cogstats.gates._report import (
    REPORT_COLUMNS,
    GateReport,
    candidate_ids,
    report_frame,
    report_schema,
)
from cogstats.ledger import Ledger

__all__ = ["AUDIT_DECISION_COLUMNS", "AuditGate", "audit_entries_from_ledger"]

_INACTIVE = ("flagged", "retired")
_OWN_SCHEMA = {
    "wins": pl.Int64,
    "win_rate": pl.Float64,
    "confidence": pl.Float64,
    "audit_status": pl.String,
}
_SCHEMA = report_schema(_OWN_SCHEMA)

#: Columns of an audit report: :data:`~cogstats.gates.REPORT_COLUMNS` (``trials`` are the
#: hits; ``estimate``/``std_error`` are null: the audit estimates no effect), then
#: ``wins``, ``win_rate``, ``confidence`` (the decayed value where the decay rule fired)
#: and ``audit_status`` (the new status: flagged or retired, null when unchanged).
AUDIT_DECISION_COLUMNS: tuple[str, ...] = (*REPORT_COLUMNS, *_OWN_SCHEMA)


@register_gate(
    "audit",
    description="the evolving-cognition audit: retire lessons with a low win rate",
    kernel="cogstats.gates.audit.kernel",
)
@dataclass(frozen=True)
class AuditGate:
    """The evolving-cognition audit pass.

    :meth:`evaluate` audits the lessons of a ledger (hits and wins counted from it, as
    :func:`audit_entries_from_ledger` does); :meth:`evaluate_entries` audits a store's
    entries directly (with contradictions, supersessions and ages).

    Parameters
    ----------
    min_hits : int
        Retrievals before the win-rate rule applies (default 5).
    min_win_rate : float
        Retire below this wins / hits (default 0.4).
    decay_age_days : float
        Age from which an unretrieved entry's confidence decays (default 90).
    decay_factor : float
        Confidence multiplier per audit pass for such entries (default 0.9).
    win_threshold : float
        With a ledger: a run is a win for its lessons when it scores at least this
        (default 0.5).

    Examples
    --------
    >>> from cogstats import Ledger
    >>> gate = AuditGate(min_hits=2)
    >>> ledger = Ledger.from_records([
    ...     {"run_id": "r1", "score": 0.2, "fact_ids": ["a", "b"]},
    ...     {"run_id": "r2", "score": 0.9, "fact_ids": ["b"]},
    ...     {"run_id": "r3", "score": 0.3, "fact_ids": ["a"]},
    ...     {"run_id": "r4", "score": 0.8, "fact_ids": ["b"]},
    ... ])
    >>> report = gate.evaluate(ledger)
    >>> report.retired, report.to_frame()["why"].to_list()
    (('a',), ['low_win_rate', 'win_rate_ok'])
    >>> entries = [
    ...     {"id": "a", "hits": 6, "wins": 1},
    ...     {"id": "b", "hits": 6, "wins": 5},
    ...     {"id": "c", "hits": 0, "wins": 0, "age_days": 120, "confidence": 0.5},
    ... ]
    >>> report = AuditGate().evaluate_entries(entries)
    >>> report.retired, report.to_frame()["confidence"].to_list()
    (('a',), [None, None, 0.45])
    """

    #: the audit judges every live lesson, verified ones included (gate protocol)
    judges_verified: ClassVar[bool] = True

    min_hits: int = option(5, integer(minimum=1))
    min_win_rate: float = option(0.4, real(minimum=0.0, maximum=1.0))
    decay_age_days: float = option(90.0, real(minimum=0.0))
    decay_factor: float = option(0.9, real(minimum=0.0, maximum=1.0))
    win_threshold: float = option(0.5, real(minimum=0.0, maximum=1.0))

    def __post_init__(self) -> None:
        """Validate the parameters (each field's check)."""
        check_options(self)

    def to_policy(self) -> dict[str, Any]:
        """Return the parameters as a dict."""
        return asdict(self)

    def evaluate(
        self, ledger: Ledger, candidates: Sequence[str] | None = None, *, rng: Any = None
    ) -> GateReport:
        """Audit the candidates on the ledger's hits and wins (the gate protocol).

        Parameters
        ----------
        ledger : Ledger
            Run outcomes; a run scoring at least ``win_threshold`` is a win for each of
            its lessons.
        candidates : sequence of str, optional
            Live lessons to audit (default: every lesson in the ledger).
        rng : ignored
            The audit does not draw.

        Returns
        -------
        GateReport
            Columns :data:`AUDIT_DECISION_COLUMNS`, as :meth:`evaluate_entries`, with
            ``baseline_runs`` the ledger's runs without the lesson.
        """
        if not isinstance(ledger, Ledger):
            raise ParameterError(
                f"ledger must be a cogstats Ledger; got {type(ledger).__name__} (audit a "
                "store's entries with AuditGate.evaluate_entries)"
            )
        ids = candidate_ids(ledger, candidates)
        entries = audit_entries_from_ledger(ledger, win_threshold=self.win_threshold, fact_ids=ids)
        report = self.evaluate_entries(entries)
        frame = report.to_frame().with_columns(
            (pl.lit(len(ledger), pl.Int64) - pl.col("trials")).alias("baseline_runs")
        )
        return GateReport(report.gate, frame, report.settings)

    def evaluate_entries(self, entries: pl.DataFrame | Iterable[Mapping[str, Any]]) -> GateReport:
        """Run one audit pass over the store's entries.

        Parameters
        ----------
        entries : polars.DataFrame or iterable of mappings
            Columns ``id``, ``hits``, ``wins``; optional ``age_days``, ``confidence``,
            ``contradicts`` (list of ids), ``supersedes`` (list of ids), ``audit_status``
            (entries already flagged or retired are skipped).

        Returns
        -------
        GateReport
            Columns :data:`AUDIT_DECISION_COLUMNS`: decisions ``retire`` (low win rate,
            or superseded) or ``hold``; ``reason``; ``why``; ``trials`` (= hits);
            ``wins``; ``win_rate``; ``confidence`` (the decayed value where the decay rule
            fired, else null); ``audit_status`` (the new status: flagged, retired, or null
            when unchanged).
        """
        frame = entries if isinstance(entries, pl.DataFrame) else pl.DataFrame(list(entries))
        for col in ("id", "hits", "wins"):
            if col not in frame.columns:
                raise LedgerError(f"audit entries lack column {col!r}", field=col)
        rows = frame.to_dicts()
        contradicted: set[str] = set()
        superseded: set[str] = set()
        for k, row in enumerate(rows, start=1):
            hits, wins = row["hits"], row["wins"]
            if not isinstance(hits, int) or not isinstance(wins, int) or hits < 0 or wins < 0:
                raise LedgerError(
                    "hits and wins must be non-negative integers", row=k, field="hits"
                )
            if wins > hits:
                raise LedgerError(f"wins ({wins}) exceed hits ({hits})", row=k, field="wins")
            for target in row.get("contradicts") or ():
                contradicted.update((row["id"], target))
            superseded.update(row.get("supersedes") or ())
        out = []
        for row in rows:
            status = row.get("audit_status")
            hits, wins = row["hits"], row["wins"]
            rec: dict[str, Any] = {
                "fact_id": row["id"],
                "decision": "hold",
                "reason": None,
                "why": C.WHY_INACTIVE,
                "trials": hits,
                "wins": wins,
                "win_rate": wins / hits if hits else None,
            }
            out.append(rec)
            if status in _INACTIVE:
                continue
            if row["id"] in superseded:
                rec.update(
                    decision="retire",
                    reason=SUPERSEDED,
                    why=C.WHY_SUPERSEDED,
                    audit_status="retired",
                )
            elif row["id"] in contradicted:
                rec.update(reason=CONTRADICTION, why=C.WHY_CONTRADICTION, audit_status="flagged")
            elif hits >= self.min_hits and wins / hits < self.min_win_rate:
                rec.update(
                    decision="retire",
                    reason=LOW_WIN_RATE,
                    why=C.WHY_LOW_WIN_RATE,
                    audit_status="retired",
                )
            elif hits == 0 and float(row.get("age_days") or 0.0) >= self.decay_age_days:
                conf = row.get("confidence")
                if conf is None:
                    raise ParameterError(
                        f"entry {row['id']!r} qualifies for confidence decay but has no confidence"
                    )
                rec.update(confidence=float(conf) * self.decay_factor, why=C.WHY_CONFIDENCE_DECAY)
            else:
                rec["why"] = C.WHY_MIN_HITS if hits < self.min_hits else C.WHY_WIN_RATE_OK
        return GateReport("audit", report_frame(out, _SCHEMA), self.to_policy())


def audit_entries_from_ledger(
    ledger: Ledger, *, win_threshold: float = 0.5, fact_ids: Iterable[str] | None = None
) -> pl.DataFrame:
    """Hits and wins per lesson from a ledger: a win is a run scoring >= ``win_threshold``.

    Examples
    --------
    >>> ledger = Ledger.from_records([
    ...     {"run_id": "r1", "score": 0.9, "fact_ids": ["a"]},
    ...     {"run_id": "r2", "score": 0.1, "fact_ids": ["a"]},
    ... ])
    >>> audit_entries_from_ledger(ledger).rows()
    [('a', 2, 1)]
    """
    threshold = check_real("win_threshold", win_threshold, minimum=0.0, maximum=1.0)
    design = ledger.design(None if fact_ids is None else list(fact_ids))
    wins_vec = (ledger.scores >= threshold).astype(float)
    hits = design.matrix.sum(axis=0)
    wins = design.matrix.T @ wins_vec
    return pl.DataFrame(
        {
            "id": list(design.fact_ids),
            "hits": [int(h) for h in hits],
            "wins": [round(float(w)) for w in wins],
        }
    )
