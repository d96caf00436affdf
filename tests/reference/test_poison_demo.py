"""Replay of cycgraph's recorded poisoning demo (data/cycgraph_poison_demo_*.csv).

Source: cycgraph's recorded poisoning demo (github.com/wmcmahan/cycgraph, Apache-2.0),
copied byte for byte into the repository's data/ folder.  Policy (docs/reference.md):
margin rule, min_trials 2, margins 0.05, max_trials 6; the
gate ran after every run from run 3; run 1 (no lessons) was not recorded; retrieval
max_facts 12, candidate_slots 6, rest_after_trials 2.  The lessons file says from which
gate each lesson is a candidate.

Two independent checks against the recording:
1. the gate's decisions, gate by gate, are the write-up's account (L1, L2 promoted at gate
   4; the genuine L3 evicted at gate 4; the genuine L4, L5 evicted as harmful with the
   three poisons at gate 5; L6, L7, L8, L9 promoted later; everything else held);
2. feeding those decisions back into cycgraph's retrieval reproduces the lessons that
   were recorded in every prompt (the verified block in order; the candidate block as a
   set, because the recording does not give the poisons' creation times, which order
   candidates with equal trials).
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from cogstats import Ledger
from cogstats.gates import CycgraphGate
from cogstats.retrieval import InProgressFirst

HARMFUL = "eval-gate:harmful"
EXPECTED = {  # gate (after run) -> {lesson: (decision, reason)}; every other candidate holds
    3: {},
    4: {"L1": ("promote", None), "L2": ("promote", None), "L3": ("evict", HARMFUL)},
    5: {k: ("evict", HARMFUL) for k in ("L4", "L5", "P1", "P2", "P3")},
    6: {"L6": ("promote", None)},
    7: {"L7": ("promote", None)},
    8: {"L8": ("promote", None), "L9": ("promote", None)},
    9: {},
    10: {},
    11: {},
}


def test_poison_demo_replay(shared_dir: Path) -> None:
    runs = pl.read_csv(shared_dir / "data" / "cycgraph_poison_demo_runs.csv")
    lessons = pl.read_csv(shared_dir / "data" / "cycgraph_poison_demo_lessons.csv")
    gate = CycgraphGate(
        decision_rule="margin", min_trials=2, promote_margin=0.05, evict_margin=0.05, max_trials=6
    )
    retrieval = InProgressFirst(max_facts=12, candidate_slots=6, rest_after_trials=2)
    status: dict[str, str] = {}
    ledger = Ledger()
    gates_seen = []
    for r in runs.iter_rows(named=True):
        run = r["run"]
        prompt = (r["lessons_in_prompt"] or "").split()
        store = [
            {
                "id": les["lesson"],
                "status": status.get(les["lesson"], "candidate"),
                "created_at": les["first_run_available"],
            }
            for les in lessons.iter_rows(named=True)
            if les["first_run_available"] <= run and status.get(les["lesson"]) != "evicted"
        ]
        if store:
            chosen = retrieval.select(store, ledger).fact_ids
            n_verified = sum(1 for f in chosen if status.get(f) == "verified")
            assert list(chosen[:n_verified]) == prompt[:n_verified], run
            assert set(chosen[n_verified:]) == set(prompt[n_verified:]), run
        else:
            assert prompt == [], run
        if r["recorded"] == "yes":
            ledger.record(str(run), r["score"], prompt)
        if run < 3:
            continue
        candidates = [
            les["lesson"]
            for les in lessons.iter_rows(named=True)
            if les["first_gate_as_candidate"] <= run and les["lesson"] not in status
        ]
        report = gate.evaluate(ledger, candidates)
        got = {}
        for d in report.to_frame().iter_rows(named=True):
            if d["decision"] != "hold":
                got[d["fact_id"]] = (d["decision"], d["reason"])
                status[d["fact_id"]] = "verified" if d["decision"] == "promote" else "evicted"
        assert got == EXPECTED[run], run
        gates_seen.append(run)
    assert gates_seen == list(EXPECTED)
    # the write-up's summary: three genuine lessons evicted along with the three poisons
    kinds = dict(zip(lessons["lesson"], lessons["kind"], strict=True))
    evicted = sorted(f for f, s in status.items() if s == "evicted")
    assert evicted == ["L3", "L4", "L5", "P1", "P2", "P3"]
    assert sum(kinds[f] == "genuine" for f in evicted) == 3
