"""The evolving-cognition audit: the weekly, model-free rules of the UCB1 lesson store.

Rules (../shared/reference/evolving-cognition.md):

- ``hits >= min_hits`` and ``wins / hits < min_win_rate``: retire (never retrieved again);
- ``hits == 0`` and ``age_days >= decay_age_days``: confidence decays by ``decay_factor``
  per audit pass (the lesson stays);
- an entry that lists another under ``contradicts``: both are flagged and leave retrieval
  until a person resolves them;
- an entry listed under another's ``supersedes`` leaves retrieval (kept for the trail).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

import polars as pl

from cogstats._validation import LedgerError, ParameterError, check_int, check_real
from cogstats.gates._report import GateReport
from cogstats.ledger import Ledger

__all__ = ["AuditGate", "audit_entries_from_ledger"]

RETIRED = "audit:low_win_rate"
FLAGGED = "audit:contradiction"
SUPERSEDED = "audit:superseded"
_INACTIVE = ("flagged", "retired")


@dataclass(frozen=True)
class AuditGate:
    """The evolving-cognition audit pass.

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

    Examples
    --------
    >>> gate = AuditGate()
    >>> entries = [
    ...     {"id": "a", "hits": 6, "wins": 1},
    ...     {"id": "b", "hits": 6, "wins": 5},
    ...     {"id": "c", "hits": 0, "wins": 0, "age_days": 120, "confidence": 0.5},
    ... ]
    >>> report = gate.evaluate(entries)
    >>> report.retired, report.to_frame()["confidence"].to_list()
    (('a',), [None, None, 0.45])
    """

    min_hits: int = 5
    min_win_rate: float = 0.4
    decay_age_days: float = 90.0
    decay_factor: float = 0.9

    def __post_init__(self) -> None:
        object.__setattr__(self, "min_hits", check_int("min_hits", self.min_hits, minimum=1))
        object.__setattr__(
            self,
            "min_win_rate",
            check_real("min_win_rate", self.min_win_rate, minimum=0.0, maximum=1.0),
        )
        object.__setattr__(
            self, "decay_age_days", check_real("decay_age_days", self.decay_age_days, minimum=0.0)
        )
        object.__setattr__(
            self,
            "decay_factor",
            check_real("decay_factor", self.decay_factor, minimum=0.0, maximum=1.0),
        )

    def to_policy(self) -> dict[str, Any]:
        """The parameters as a dict."""
        return asdict(self)

    def evaluate(self, entries: pl.DataFrame | Iterable[Mapping[str, Any]]) -> GateReport:
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
            Decisions ``retire`` (low win rate, or superseded) or ``hold``; ``reason``;
            ``trials`` (= hits); ``wins``; ``win_rate``; ``confidence`` (the decayed value
            where the decay rule fired, else null); ``audit_status`` (the new status:
            verified, flagged, retired, or null when unchanged).
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
                "trials": hits,
                "wins": wins,
                "win_rate": wins / hits if hits else None,
                "confidence": None,
                "audit_status": None,
            }
            out.append(rec)
            if status in _INACTIVE:
                continue
            if row["id"] in superseded:
                rec.update(decision="retire", reason=SUPERSEDED, audit_status="retired")
            elif row["id"] in contradicted:
                rec.update(reason=FLAGGED, audit_status="flagged")
            elif hits >= self.min_hits and wins / hits < self.min_win_rate:
                rec.update(decision="retire", reason=RETIRED, audit_status="retired")
            elif hits == 0 and float(row.get("age_days") or 0.0) >= self.decay_age_days:
                conf = row.get("confidence")
                if conf is None:
                    raise ParameterError(
                        f"entry {row['id']!r} qualifies for confidence decay but has no confidence"
                    )
                rec["confidence"] = float(conf) * self.decay_factor
        schema = {
            "fact_id": pl.String,
            "decision": pl.String,
            "reason": pl.String,
            "trials": pl.Int64,
            "wins": pl.Int64,
            "win_rate": pl.Float64,
            "confidence": pl.Float64,
            "audit_status": pl.String,
        }
        return GateReport("audit", pl.DataFrame(out, schema=schema), self.to_policy())


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
