"""One gate protocol: every registered gate has ``evaluate(ledger, candidates=None, *,
rng=None) -> GateReport``, every report starts with the same columns with one meaning, and
``why`` explains every decision (holds included) in the documented vocabulary.

Where a test states a number, it is computed in the test from the ledger (means and the
Welch formula), not copied from the gate.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from cogstats import Ledger
from cogstats._codes import WHY
from cogstats._validation import ParameterError
from cogstats.gates import (
    AUDIT_DECISION_COLUMNS,
    GATES,
    REPORT_COLUMNS,
    AuditGate,
    CycgraphGate,
    EvidenceGate,
    GateReport,
    make_gate,
)
from tests.helpers import random_inclusion_ledger

ROOT = Path(__file__).resolve().parents[2]

#: the decision a ``why`` value goes with
WHY_DECISION = {
    "promote_evidence": "promote",
    "harm_evidence": "evict",
    "max_trials": "evict",
    "max_baseline_runs": "evict",
    "max_looks": "evict",
    "low_win_rate": "retire",
    "superseded": "retire",
    # the lifecycle (recommended)
    "harm_margin": "evict",
    "promote_margin": "promote",
    "futility": "evict",
    "non_inferior": "admit",
    "suspect": "suspend",
    "crater": "suspend",
    "cleared": "release",
}


@pytest.fixture(scope="module")
def ledger() -> Ledger:
    return random_inclusion_ledger(
        np.random.default_rng(8), n_runs=120, effects=(0.15, 0.0, -0.15, 0.02)
    )


@pytest.mark.parametrize("name", sorted(GATES))
def test_every_gate_follows_the_protocol(name: str, ledger: Ledger) -> None:
    gate = make_gate(name)
    report = gate.evaluate(ledger)
    assert isinstance(report, GateReport)
    assert report.gate == name
    frame = report.to_frame()
    assert tuple(frame.columns[: len(REPORT_COLUMNS)]) == REPORT_COLUMNS
    assert frame["fact_id"].to_list() == list(ledger.fact_ids)
    # candidates and rng by keyword, as the simulator calls it
    some = list(ledger.fact_ids[:2])
    again = gate.evaluate(ledger, some, rng=np.random.default_rng(1))
    assert again.to_frame()["fact_id"].to_list() == some
    with pytest.raises(ParameterError, match="Ledger"):
        gate.evaluate([{"run_id": "r"}])
    with pytest.raises(ParameterError, match="repeat"):
        gate.evaluate(ledger, [some[0], some[0]])
    _check_why(frame)


def _check_why(frame: pl.DataFrame) -> None:
    for row in frame.iter_rows(named=True):
        assert row["why"] in WHY, row
        want = WHY_DECISION.get(row["why"], "hold")
        assert row["decision"] == want, row
        if row["decision"] == "evict":
            harmful = row["why"] in ("harm_evidence", "harm_margin")
            assert row["reason"] == ("eval-gate:harmful" if harmful else "eval-gate:no_lift")


def test_why_vocabulary_is_documented_once() -> None:
    doc = " ".join((GateReport.__doc__ or "").split())
    guide = (ROOT / "docs" / "gates.md").read_text(encoding="utf-8")
    for word in WHY:
        assert f"``{word}``" in doc, word
        assert f"`{word}`" in guide, word


def _ledger(groups: list[tuple[list[str], list[float]]]) -> Ledger:
    recs = []
    for k, (ids, scores) in enumerate(groups):
        for i, s in enumerate(scores):
            recs.append({"run_id": f"g{k}r{i}", "score": s, "fact_ids": ids})
    return Ledger.from_records(recs)


def test_cycgraph_why_and_estimate() -> None:
    led = _ledger(
        [
            (["good"], [0.9, 0.85, 0.95, 0.9]),
            (["bad"], [0.2, 0.25, 0.15, 0.2]),
            (["meh"], [0.58, 0.6, 0.62, 0.6]),
            (["new"], [0.6]),
            ([], [0.6, 0.55, 0.65, 0.6]),
        ]
    )
    report = CycgraphGate(min_trials=2, max_trials=4).evaluate(led, ["good", "bad", "meh", "new"])
    why = dict(zip(report.to_frame()["fact_id"], report.to_frame()["why"], strict=True))
    assert why == {
        "good": "promote_evidence",
        "bad": "harm_evidence",
        "meh": "max_trials",
        "new": "min_trials",
    }
    frame = report.to_frame()
    # estimate / std_error are cycgraph's lift / se, to the bit
    tested = frame.filter(pl.col("lift").is_not_null())
    assert tested["estimate"].to_list() == tested["lift"].to_list()
    assert tested["std_error"].to_list() == tested["se"].to_list()
    good = report.decision("good")
    base = [0.2, 0.25, 0.15, 0.2, 0.58, 0.6, 0.62, 0.6, 0.6, 0.6, 0.55, 0.65, 0.6]
    assert good["estimate"] == pytest.approx(0.9 - np.mean(base), abs=1e-12)
    va, vb = max(np.var([0.9, 0.85, 0.95, 0.9], ddof=1), 0.01), np.var(base, ddof=1)
    assert good["std_error"] == pytest.approx(math.sqrt(va / 4 + vb / 13), abs=1e-12)
    held = CycgraphGate(min_trials=2).evaluate(led, ["meh"]).decision("meh")
    assert (held["decision"], held["why"]) == ("hold", "insufficient_evidence")
    capped = CycgraphGate(min_trials=2, max_baseline_runs=10).evaluate(led, ["meh"])
    assert capped.decision("meh")["why"] == "max_baseline_runs"
    _check_why(frame)


def test_cycgraph_margin_rule_why_and_no_baseline() -> None:
    led = _ledger([(["a"], [0.9, 0.8]), (["a", "b"], [0.7])])
    report = CycgraphGate(decision_rule="margin", min_trials=1).evaluate(led, ["a", "b"])
    # "a" is in every run: no baseline; "b" has one trial against two baseline runs
    assert report.decision("a")["why"] == "no_baseline"
    b = report.decision("b")
    assert (b["decision"], b["why"]) == ("evict", "harm_evidence")
    assert b["estimate"] == pytest.approx(0.7 - 0.85, abs=1e-12)
    assert b["std_error"] is None and b["lift"] is None  # cycgraph reports no evidence
    inference = CycgraphGate(min_trials=1).evaluate(led, ["b"]).decision("b")
    assert inference["why"] == "min_trials"  # one trial: the Welch test needs two


def test_cycgraph_both_sides_hold() -> None:
    """cycgraph's defensive hold when both tests pass (unreachable with non-negative
    margins on one lift, so the decision step is fed the two confidences directly)."""
    import numpy as np

    from cogstats.stats.groups import GroupArrays

    # a negative evict margin makes both one-sided tests pass on one clear positive lift
    # (validation forbids it, so it is set behind the dataclass's back)
    gate = CycgraphGate(multiple_comparison="none", sequential_control="none")
    object.__setattr__(gate, "evict_margin", -1.0)
    stats = GroupArrays(
        n_a=np.array([20]),
        mean_a=np.array([0.8]),
        var_a=np.array([0.01]),
        n_b=np.array([20]),
        mean_b=np.array([0.5]),
        var_b=np.array([0.01]),
        exact=np.array([True]),
    )
    out = gate._decide_core(stats)
    assert out["p_promote"][0] > 0.99 and out["p_evict"][0] > 0.99
    assert out["decision"][0] == 0 and out["why"][0] == "both_sides"


def test_evidence_why() -> None:
    led = _ledger(
        [
            (["good"], [0.9, 0.85, 0.95, 0.9, 0.88]),
            (["bad"], [0.2, 0.25, 0.15, 0.2, 0.22]),
            (["meh"], [0.6, 0.58, 0.62, 0.6, 0.61]),
            (["rare"], [0.6]),
            ([], [0.6, 0.55, 0.65, 0.6, 0.58]),
        ]
    )
    report = EvidenceGate(method="lift", alpha=0.01).evaluate(led)
    why = dict(zip(report.to_frame()["fact_id"], report.to_frame()["why"], strict=True))
    assert why == {
        "good": "promote_evidence",
        "bad": "harm_evidence",
        "meh": "insufficient_evidence",
        "rare": "min_trials",
    }
    stopped = EvidenceGate(method="lift", alpha=0.01, max_baseline_runs=15).evaluate(led, ["meh"])
    assert stopped.decision("meh")["why"] == "max_baseline_runs"
    _check_why(report.to_frame())


def test_audit_from_the_ledger_and_from_entries() -> None:
    led = _ledger([(["a"], [0.9, 0.2, 0.1]), (["b"], [0.9, 0.8, 0.7]), (["c"], [0.9])])
    report = AuditGate(min_hits=2, win_threshold=0.5).evaluate(led)
    frame = report.to_frame()
    assert tuple(frame.columns) == AUDIT_DECISION_COLUMNS
    assert frame.select("fact_id", "decision", "why", "trials", "wins", "baseline_runs").rows() == [
        ("a", "retire", "low_win_rate", 3, 1, 4),
        ("b", "hold", "win_rate_ok", 3, 3, 4),
        ("c", "hold", "min_hits", 1, 1, 6),
    ]
    assert frame["estimate"].null_count() == 3  # the audit estimates no effect
    entries = [
        {"id": "x", "hits": 0, "wins": 0, "age_days": 200, "confidence": 0.5},
        {"id": "y", "hits": 4, "wins": 4, "contradicts": ["z"]},
        {"id": "z", "hits": 4, "wins": 4},
        {"id": "w", "hits": 4, "wins": 0, "supersedes": ["v"]},
        {"id": "v", "hits": 9, "wins": 9},
        {"id": "u", "hits": 9, "wins": 0, "audit_status": "retired"},
    ]
    by_entries = AuditGate(min_hits=3).evaluate_entries(entries).to_frame()
    assert by_entries.select("fact_id", "decision", "reason", "why").rows() == [
        ("x", "hold", None, "confidence_decay"),
        ("y", "hold", "audit:contradiction", "contradiction"),
        ("z", "hold", "audit:contradiction", "contradiction"),
        ("w", "retire", "audit:low_win_rate", "low_win_rate"),
        ("v", "retire", "audit:superseded", "superseded"),
        ("u", "hold", None, "inactive"),
    ]
    with pytest.raises(ParameterError, match="evaluate_entries"):
        AuditGate().evaluate(entries)  # type: ignore[arg-type]


def test_a_report_of_ones_own_gets_the_leading_columns() -> None:
    frame = pl.DataFrame({"decision": ["evict"], "fact_id": ["a"], "mine": [1.5]})
    report = GateReport("mine", frame)
    assert report.to_frame().columns == [*REPORT_COLUMNS, "mine"]
    assert report.evicted == ("a",)
    with pytest.raises(ParameterError, match="decision must be one of"):
        GateReport("mine", pl.DataFrame({"fact_id": ["a"], "decision": ["drop"]}))
    with pytest.raises(ParameterError, match="needs a 'decision' column"):
        GateReport("mine", pl.DataFrame({"fact_id": ["a"]}))


def test_gate_with_uses_lessons_gets_every_arrived_lesson_and_its_status() -> None:
    """A gate that sets ``uses_lessons`` receives the lesson table, evicted lessons included."""
    from dataclasses import dataclass

    from cogstats.gates import GateReport
    from cogstats.sim import Scenario, simulate

    seen: list[dict[str, str]] = []

    @dataclass(frozen=True)
    class EvictFirstThenWatch:
        uses_lessons = True

        def evaluate(self, ledger, candidates=None, *, rng=None, lessons=None):  # type: ignore[no-untyped-def]
            statuses = dict(zip(lessons["id"].to_list(), lessons["status"].to_list(), strict=True))
            seen.append(statuses)
            ids = list(candidates or [])
            decisions = ["evict" if f == "a" else "hold" for f in ids]
            frame = pl.DataFrame({"fact_id": ids, "decision": decisions})
            return GateReport("watch", frame)

    s = Scenario.from_dict(
        {
            "runs": 4,
            "lessons": {"listed": [{"id": "a", "effect": 0.0}, {"id": "b", "effect": 0.0}]},
            "retrieval": {"max_facts": 2, "candidate_slots": 2},
        }
    )
    simulate(s, replicates=1, rng=1, engine="reference", gate=EvictFirstThenWatch())
    assert seen[0] == {"a": "candidate", "b": "candidate"}
    assert seen[1] == {"a": "evicted", "b": "candidate"}
