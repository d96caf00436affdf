"""The ledger audit and the gate replay without a kernel: reading with a column mapping,
the gate lookup, the ``why`` vocabulary, the tables, the replay of cycgraph's recorded demo,
and the published-look helpers (tables, summary block, resources, list/dict parameters).

References: the replay's decisions are the recorded demo's account, the same as
tests/reference/test_poison_demo.py (cycgraph's write-up: L1, L2 promoted and L3 evicted at
gate 4; L4, L5, P1-P3 evicted at gate 5; L6, L7, L8, L9 promoted at gates 6-8); the
gates' own rows are compared with CycgraphGate/EvidenceGate called directly (exact).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from cogstats import Ledger
from cogstats._validation import ParameterError
from cogstats.gates import CycgraphGate, EvidenceGate
from cogstats.reports import get_report, resource_path, resource_root, show_table, summary_block
from cogstats.reports.audit import (
    DECISION_COLUMNS,
    DEFAULT_GATES,
    DEMO_POLICY,
    _make_gate,
    audit_ledger,
    comparison_gate,
    default_gates,
    read_ledger,
    recorded_ledger,
    replay_gates,
)

ROOT = Path(__file__).resolve().parents[2]
DEMO_COLUMNS = {"run_id": "run", "fact_ids": "lessons_in_prompt"}


def planted_ledger(seed: int, runs: int = 120, lessons: int = 16) -> tuple[Ledger, set[str]]:
    """Random co-injection (each lesson in a run with probability 1/4), a difficulty
    covariate shifting every score, three harmful lessons of effect -0.15."""
    rng = np.random.default_rng(seed)
    ids = [f"L{i:02d}" for i in range(lessons)]
    harmful = {"L02", "L07", "L12"}
    effects = {f: (-0.15 if f in harmful else rng.uniform(0, 0.03)) for f in ids}
    records = []
    for r in range(runs):
        hard = rng.normal(0, 0.1)
        chosen = [f for f in ids if rng.random() < 0.25]
        score = 0.6 - hard + sum(effects[f] for f in chosen) + rng.normal(0, 0.05)
        records.append(
            {
                "run_id": f"r{r}",
                "score": float(np.clip(score, 0, 1)),
                "fact_ids": chosen,
                "hardness": float(hard),
            }
        )
    return Ledger.from_records(records), harmful


# ---------------------------------------------------------------- reading
def test_read_ledger_with_a_mapping(tmp_path: Path) -> None:
    demo = resource_path("data/cycgraph_poison_demo_runs.csv")
    ledger = read_ledger(demo, columns=DEMO_COLUMNS)
    raw = pl.read_csv(demo)
    assert ledger.run_ids == tuple(str(r) for r in raw["run"])
    assert ledger.scores.tolist() == raw["score"].to_list()
    assert [sorted(f) for f in ledger.frame["fact_ids"].to_list()] == [
        sorted((cell or "").split()) for cell in raw["lessons_in_prompt"].to_list()
    ]
    # a covariate under another name, renamed on reading
    ledger2, _ = planted_ledger(1, runs=10)
    ledger2.write(tmp_path / "x.csv")
    renamed = read_ledger(tmp_path / "x.csv", columns={"difficulty": "hardness"})
    assert renamed.covariates == ["difficulty"]
    assert renamed.covariate("difficulty").to_list() == ledger2.covariate("hardness").to_list()
    # the same mapping on JSON Lines and Parquet
    for suffix in ("jsonl", "parquet"):
        path = ledger2.write(tmp_path / f"x.{suffix}")
        assert read_ledger(path, columns={"difficulty": "hardness"}).covariates == ["difficulty"]
    with pytest.raises(ParameterError, match="lesons.*lessons_in_prompt"):
        read_ledger(demo, columns={"run_id": "run", "fact_ids": "lesons"})
    # the ledger's one mapping check and its errors, as they are
    with pytest.raises(ParameterError, match="maps both 'run_id' and 'fact_ids' onto"):
        read_ledger(demo, columns={"run_id": "run", "fact_ids": "run"})
    with pytest.raises(ParameterError, match="'run_id' must map to a non-empty column name"):
        read_ledger(demo, columns={"run_id": 3})  # type: ignore[dict-item]
    with pytest.raises(ParameterError, match="x.csv has no column 'nope'"):
        read_ledger(tmp_path / "x.csv", columns={"difficulty": "nope"})
    with pytest.raises(FileNotFoundError):
        read_ledger(tmp_path / "missing.csv")


# ---------------------------------------------------------------- gates and audit
def test_gate_lookup() -> None:
    assert isinstance(_make_gate("cycgraph"), CycgraphGate)
    gate = _make_gate("evidence", covariates=("difficulty",))
    assert isinstance(gate, EvidenceGate)
    assert gate.method == "ols" and dict(gate.options) == {"covariates": ["difficulty"]}
    assert _make_gate("cycgraph", **DEMO_POLICY).decision_rule == "margin"
    with pytest.raises(ParameterError, match="did you mean 'evidence'"):
        _make_gate("evidense")
    assert DEFAULT_GATES == ("cycgraph", "evidence")


def test_default_gates_pick_up_a_gate_registered_later() -> None:
    """The audit's default comparison gate is "recommended" as soon as a gate of that name
    is registered (here a stand-in, unless the real one is there), "evidence" until then;
    covariates reach a gate whose options take them."""
    from dataclasses import dataclass

    from cogstats.gates import GATES, GateReport, register_gate

    if "recommended" in GATES:
        assert default_gates() == ("cycgraph", "recommended")
        return
    assert default_gates() == DEFAULT_GATES == ("cycgraph", "evidence")
    assert comparison_gate() == "evidence"

    @register_gate("recommended", description="stand-in: evicts lessons whose lift is < -0.1")
    @dataclass(frozen=True)
    class StandIn:
        covariates: tuple[str, ...] = ()

        def evaluate(self, ledger, candidates=None, *, rng=None):  # type: ignore[no-untyped-def]
            lift = dict(ledger.fact_stats().select("fact_id", "mean_score").rows())
            base = float(np.mean(ledger.scores))
            ids = list(ledger.fact_ids if candidates is None else candidates)
            decisions = ["evict" if lift[f] - base < -0.1 else "hold" for f in ids]
            frame = pl.DataFrame(
                {"fact_id": ids, "decision": decisions, "why": [str(self.covariates)] * len(ids)}
            )
            return GateReport("recommended", frame)

    try:
        assert default_gates() == ("cycgraph", "recommended")
        ledger, harmful = planted_ledger(4)
        audit = audit_ledger(ledger, covariates=["hardness"], rng=1)
        assert audit.gates == ("cycgraph", "recommended")
        rows = audit.decisions.filter(pl.col("gate") == "recommended")
        assert rows.height == len(ledger.fact_ids)
        assert set(rows.filter(pl.col("decision") == "evict")["fact_id"]) <= harmful
        assert set(rows["why"].to_list()) == {"['hardness']"}
    finally:
        GATES.unregister("recommended")
    assert default_gates() == ("cycgraph", "evidence")


def test_audit_finds_planted_harm() -> None:
    ledger, harmful = planted_ledger(4)
    audit = audit_ledger(ledger, gates=["cycgraph", "evidence"], covariates=["hardness"], rng=1)
    assert audit.covariates == ("hardness",)
    flagged = set(audit.evicted_harmful("evidence"))
    assert flagged == harmful  # all three, and no harmless lesson
    # the gate's rows are the gate's own decisions, in the common columns
    own = EvidenceGate(
        method="ols",
        options={"covariates": ["hardness"]},
        alpha=0.05,
        multiplicity="bh",
        min_trials=3,
    ).evaluate(ledger)
    rows = audit.decisions.filter(pl.col("gate") == "evidence")
    assert rows.columns[: len(DECISION_COLUMNS)] == list(DECISION_COLUMNS)
    assert rows["decision"].to_list() == own.to_frame()["decision"].to_list()
    assert rows["estimate"].to_list() == own.to_frame()["estimate"].to_list()
    cyc = CycgraphGate().evaluate(ledger).to_frame()
    rows = audit.decisions.filter(pl.col("gate") == "cycgraph")
    assert rows["decision"].to_list() == cyc["decision"].to_list()
    assert rows["estimate"].to_list() == cyc["lift"].to_list()  # estimate is the lift
    # why: every decision explained, from the documented vocabulary
    vocabulary = {
        "promote_evidence",
        "harm_evidence",
        "min_trials",
        "no_baseline",
        "not_identifiable",
        "insufficient_evidence",
        "both_sides",
        "max_trials",
        "max_baseline_runs",
    }
    assert set(audit.decisions["why"].to_list()) <= vocabulary
    assert audit.decisions["why"].null_count() == 0
    harm = audit.decisions.filter(pl.col("why") == "harm_evidence")
    assert set(harm["reason"].to_list()) == {"eval-gate:harmful"}
    # the side-by-side table and the summary name the evicted lessons
    side = audit.side_by_side()
    assert side.height == len(ledger.fact_ids)
    evicted = side.filter(pl.col("evidence") == "evict: harmful")["fact_id"].to_list()
    assert set(evicted) == harmful
    text = audit.summary()
    assert all(f in text for f in harmful)
    assert audit.key_numbers()["evidence: evicted as harmful"] == 3
    assert set(audit.shown_lessons(5)) >= harmful


def test_audit_covariates_and_errors() -> None:
    ledger, _ = planted_ledger(2, runs=30)
    assert audit_ledger(ledger, gates=["cycgraph"], rng=1).covariates == ()  # no difficulty
    renamed = Ledger.from_frame(ledger.frame.rename({"hardness": "difficulty_proxy"}))
    assert audit_ledger(renamed, gates=["evidence"], rng=1).covariates == ("difficulty_proxy",)
    with pytest.raises(ParameterError, match=r"covariates names column\(s\) \['difficulty'\]"):
        audit_ledger(ledger, covariates=["difficulty"])
    with pytest.raises(ParameterError, match="did you mean 'cycgraph'"):
        audit_ledger(ledger, gates=["cycgrap"])
    with pytest.raises(ParameterError, match="non-empty list"):
        audit_ledger(ledger, gates="cycgraph")
    with pytest.raises(ParameterError, match="must not repeat"):
        audit_ledger(ledger, gates=["cycgraph", "cycgraph"])
    one = Ledger.from_records([{"run_id": "a", "score": 0.5, "fact_ids": ["x"]}])
    with pytest.raises(ParameterError, match="at least 2 runs"):
        audit_ledger(one)


def test_audit_on_awkward_ledgers(tmp_path: Path) -> None:
    """Few runs, more lessons than runs, unidentifiable lessons, the demo's CSV naming."""
    demo = read_ledger(resource_path("data/cycgraph_poison_demo_runs.csv"), columns=DEMO_COLUMNS)
    audit = audit_ledger(demo, gates=["cycgraph", "evidence"], rng=1)
    ident = audit.identifiability.filter(~pl.col("identifiable"))["fact_id"].to_list()
    assert {"L4", "L5", "P1", "P2", "P3"} <= set(ident)  # same runs as the poisons
    held = audit.decisions.filter((pl.col("gate") == "evidence") & pl.col("fact_id").is_in(ident))
    assert set(held["decision"].to_list()) == {"hold"}
    rng = np.random.default_rng(0)
    many = Ledger.from_records(
        {
            "run_id": str(i),
            "score": float(rng.uniform()),
            "fact_ids": [f"f{j}" for j in rng.choice(200, 5, replace=False)],
        }
        for i in range(12)
    )
    wide = audit_ledger(many, rng=1)
    assert wide.decisions.height == 2 * len(many.fact_ids)
    assert len(wide.shown_lessons(40)) == 40
    files = wide.write_tables(tmp_path, prefix="ledger_audit")
    assert sorted(p.name for p in files) == [
        "ledger_audit_attribution.csv",
        "ledger_audit_attribution.parquet",
        "ledger_audit_decisions.csv",
        "ledger_audit_decisions.parquet",
    ]
    back = pl.read_csv(tmp_path / "ledger_audit_decisions.csv")
    assert {"fact_id", "gate", "decision", "why"} <= set(back.columns)
    assert back.height == wide.decisions.height
    assert pl.read_parquet(tmp_path / "ledger_audit_decisions.parquet").equals(wide.decisions)
    assert wide.write_tables("") == []


# ---------------------------------------------------------------- replay
def test_replay_matches_the_recorded_demo() -> None:
    runs = pl.read_csv(resource_path("data/cycgraph_poison_demo_runs.csv"))
    lessons = pl.read_csv(resource_path("data/cycgraph_poison_demo_lessons.csv"))
    replay = replay_gates(
        runs, lessons, ["cycgraph", "evidence"], options={"cycgraph": DEMO_POLICY}, from_run=3
    )
    decided = replay.filter((pl.col("gate") == "cycgraph") & (pl.col("decision") != "hold"))
    got = {(r["after_run"], r["fact_id"], r["decision"]) for r in decided.iter_rows(named=True)}
    want = {(4, "L1", "promote"), (4, "L2", "promote"), (4, "L3", "evict")}
    want |= {(5, f, "evict") for f in ("L4", "L5", "P1", "P2", "P3")}
    want |= {(6, "L6", "promote"), (7, "L7", "promote"), (8, "L8", "promote")}
    want |= {(8, "L9", "promote")}
    assert got == want
    assert sorted(replay["after_run"].unique().to_list()) == list(range(3, 12))
    # each gate keeps its own status: a lesson cycgraph evicted is still judged by the other
    later = replay.filter((pl.col("gate") == "evidence") & (pl.col("after_run") == 11))
    assert "P1" in later["fact_id"].to_list()
    ledger = recorded_ledger(runs)
    assert ledger.run_ids == tuple(str(r) for r in range(2, 12))  # run 1 was not recorded
    with pytest.raises(ParameterError, match="not in gates"):
        replay_gates(runs, lessons, ["cycgraph"], options={"evidence": {}})
    with pytest.raises(ParameterError, match=r"missing column\(s\) \['recorded'\]"):
        replay_gates(runs.drop("recorded"), lessons, ["cycgraph"])


# ---------------------------------------------------------------- published look helpers
def test_show_table_and_summary_block() -> None:
    frame = pl.DataFrame(
        {
            "fact_id": ["a", "b"],
            "estimate": [0.123456789, None],
            "ok": [True, False],
            "aliased_with": [["x", "y"], []],
            "n": [3, 40],
        }
    )
    page = show_table(frame)._repr_html_()
    assert "f64" not in page and "str" not in page.replace("<strong", "")  # no dtype row
    assert "&quot;" not in page and '"a"' not in page  # no quoted strings
    assert page.count("<tr>") == 3 and ">0.1235<" in page and ">x, y<" in page
    assert ">yes<" in page and ">no<" in page and "2 row(s)" in page
    long = show_table(pl.DataFrame({"i": range(100)}))._repr_html_()
    assert long.count("<tr>") == 101 and "overflow-y:auto" in long  # whole, in a scroll box
    block = summary_block("What ran.", {"rate": 0.123456, "runs": 30}, ["one finding"])
    html = block._repr_html_()
    assert "cogstats-summary" in html and "0.123" in html and "one finding" in html
    assert block.to_frame().rows() == [("rate", "0.123"), ("runs", "30")]
    with pytest.raises(ParameterError, match="sequence of strings"):
        summary_block("x", findings="one")
    special = show_table(pl.DataFrame({"v": [math.inf, math.nan]}))._repr_html_()
    assert ">∞<" in special and "nan" not in special.lower()


def test_resources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert resource_root() == ROOT
    assert (
        resource_path("simulations/poison_crater.toml") == ROOT / "simulations/poison_crater.toml"
    )
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "poison_crater_ledger.csv").write_text("run_id,score,fact_ids\n")
    # the working directory comes first, then the checkout
    assert (
        resource_path("data/poison_crater_ledger.csv") == tmp_path / "data/poison_crater_ledger.csv"
    )
    assert resource_path("data/ucb1_families_ledger.csv") == ROOT / "data/ucb1_families_ledger.csv"
    with pytest.raises(FileNotFoundError, match="not found in the working directory"):
        resource_path("data/nothing.csv")
    assert resource_path("data/nothing.csv", must_exist=False) == tmp_path / "data/nothing.csv"
    with pytest.raises(ParameterError, match="non-empty file path"):
        resource_path("")


def test_list_and_dict_parameters() -> None:
    report = get_report("ledger_audit")
    ok = report.validate({"gates": ("cycgraph",), "columns": {"run_id": "run"}})
    assert ok == {"gates": ["cycgraph"], "columns": {"run_id": "run"}}
    with pytest.raises(ParameterError, match="'gates' must be list"):
        report.validate({"gates": "cycgraph"})
    with pytest.raises(ParameterError, match="'columns' must be dict"):
        report.validate({"columns": [["run_id", "run"]]})
    with pytest.raises(ParameterError, match="string keys"):
        report.validate({"columns": {1: "run"}})
