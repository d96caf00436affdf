"""Lesson lineage (issue 12, part 4): the lesson table read from a file, parent evidence
pooled into a consolidated lesson, evicted lessons left out of the evidence, as an option
that is off for cycgraph's gate, and the command line's ``--lessons FILE``.

The effect of leaving evicted lessons out on S2's false eviction is measured by
docs/scripts/lineage_s2.py (figures in docs/lineage.md); here the same comparison runs at
a small fixed seed, and the option switched off reproduces the compiled engine exactly.
"""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from cogstats import Ledger
from cogstats._validation import LedgerError
from cogstats.cli import main
from cogstats.estimators import attribute
from cogstats.estimators.lineage import (
    evicted_lessons,
    exclude_lessons,
    lineage_ancestors,
    pool_lineage,
)
from cogstats.gates import LineageGate, make_gate
from tests.helpers import random_inclusion_ledger

ROOT = Path(__file__).resolve().parents[2]
MARGIN = {"decision_rule": "margin", "min_trials": 2, "promote_margin": 0.05, "evict_margin": 0.05}

LESSONS_CSV = (
    "id,created_at,status,consolidated_from,supersedes\n"
    "P1,2024-01-01T00:00:00Z,evicted,,\n"
    'P2,2024-01-02T00:00:00Z,candidate,"[""P1""]",\n'
    "L1,2024-01-03T00:00:00Z,,,\n"
    "L2,2024-01-04T00:00:00Z,verified,L1 P1,\n"
    "L3,2024-01-05T00:00:00Z,candidate,,L2;L1\n"
)


# ---------------------------------------------------------------------- reading
def test_read_lessons_csv(tmp_path: Path) -> None:
    path = tmp_path / "lessons.csv"
    path.write_text(LESSONS_CSV, encoding="utf-8")
    table = Ledger.read_lessons(path)
    assert table["id"].to_list() == ["P1", "P2", "L1", "L2", "L3"]
    assert table["status"].to_list() == ["evicted", "candidate", None, "verified", "candidate"]
    assert table["consolidated_from"].to_list() == [None, ["P1"], None, ["L1", "P1"], None]
    assert table["supersedes"].to_list() == [None, None, None, None, ["L2", "L1"]]
    assert table["created_at"].dtype == pl.Datetime("us", "UTC")


@pytest.mark.parametrize("suffix", [".jsonl", ".json", ".parquet", ".tsv"])
def test_read_lessons_other_formats(tmp_path: Path, suffix: str) -> None:
    records = [
        {"lesson": "a", "created_at": 1, "status": "evicted"},
        {"lesson": "b", "created_at": 2, "status": None, "consolidated_from": ["a"]},
    ]
    path = tmp_path / f"lessons{suffix}"
    if suffix == ".jsonl":
        path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    elif suffix == ".json":
        path.write_text(json.dumps({"lessons": records}))
    elif suffix == ".parquet":
        pl.DataFrame(records).write_parquet(path)
    else:
        path.write_text(
            "lesson\tcreated_at\tstatus\tconsolidated_from\na\t1\tevicted\t\nb\t2\t\ta\n"
        )
    table = Ledger.read_lessons(path, columns={"id": "lesson"})
    assert table.select("id", "status").rows() == [("a", "evicted"), ("b", None)]
    assert table["consolidated_from"].to_list() == [None, ["a"]]
    assert table["created_at"].to_list() == [1, 2]


def test_read_lessons_nfc(tmp_path: Path) -> None:
    nfd = unicodedata.normalize("NFD", "café")
    path = tmp_path / "l.jsonl"
    path.write_text(json.dumps({"id": nfd, "created_at": 1}) + "\n")
    assert Ledger.read_lessons(path)["id"].to_list() == ["café"]


@pytest.mark.parametrize(
    ("text", "row", "field", "words"),
    [
        ("id,created_at,status\na,1,evicted\nb,2,deleted\n", 2, "status", "status must be"),
        ("id,status\na,evicted\n", None, "created_at", "lacks column 'created_at'"),
        ("id,created_at\na,1\n,2\n", 2, "id", "non-empty string"),
        ("id,created_at,consolidated_from\na,1,\nb,2,[1]\n", 2, "consolidated_from", "string"),
    ],
)
def test_read_lessons_errors_name_file_row_and_field(
    tmp_path: Path, text: str, row: int | None, field: str, words: str
) -> None:
    path = tmp_path / "lessons.csv"
    path.write_text(text)
    with pytest.raises(LedgerError) as err:
        Ledger.read_lessons(path)
    assert (err.value.row, err.value.field, err.value.source) == (row, field, str(path))
    assert words in str(err.value) and str(path) in str(err.value)


def test_read_lessons_bytes_and_types(tmp_path: Path) -> None:
    latin = tmp_path / "latin.csv"
    latin.write_bytes("id,created_at\ncaf\xe9,1\n".encode("latin-1"))
    with pytest.raises(LedgerError, match=r"byte offset 17"):
        Ledger.read_lessons(latin)
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text('{"id": "a", "created_at": 1}\n{"id": "b", "created_at": "x"}\n')
    with pytest.raises(LedgerError, match=r"row 2, field 'created_at'.*mixes types"):
        Ledger.read_lessons(mixed)
    with pytest.raises(FileNotFoundError):
        Ledger.read_lessons(tmp_path / "absent.csv")


# ---------------------------------------------------------------------- lineage
def test_ancestors_are_transitive_and_cycles_stop() -> None:
    table = [
        {"id": "a", "created_at": 1, "supersedes": ["c"]},
        {"id": "b", "created_at": 2, "consolidated_from": ["a"]},
        {"id": "c", "created_at": 3, "consolidated_from": ["b"], "supersedes": ["x"]},
    ]
    assert lineage_ancestors(table) == {
        "a": ["c", "b", "x"],
        "b": ["a", "c", "x"],
        "c": ["b", "a", "x"],
    }


def _paraphrase_ledger() -> tuple[Ledger, list[dict[str, object]]]:
    """P1 (a poison) ran four times, with the genuine L, and was evicted; P2, consolidated
    from it, ran once."""
    runs = [{"run_id": f"p{i}", "score": 0.25, "fact_ids": ["P1", "L"]} for i in range(4)]
    runs += [{"run_id": f"n{i}", "score": 0.7, "fact_ids": ["L"]} for i in range(4)]
    runs += [{"run_id": f"e{i}", "score": 0.6, "fact_ids": []} for i in range(4)]
    runs += [{"run_id": "q0", "score": 0.3, "fact_ids": ["P2"]}]
    table = [
        {"id": "L", "created_at": 0, "status": "verified"},
        {"id": "P1", "created_at": 1, "status": "evicted"},
        {"id": "P2", "created_at": 5, "status": "candidate", "consolidated_from": ["P1"]},
    ]
    return Ledger.from_records(runs), table


def test_a_paraphrased_poison_does_not_start_clean() -> None:
    ledger, table = _paraphrase_ledger()
    gate = make_gate("cycgraph", **MARGIN)
    plain = gate.evaluate(ledger, ["P2"]).to_frame().row(0, named=True)
    assert (plain["decision"], plain["why"], plain["trials"]) == ("hold", "min_trials", 1)
    pooled = pool_lineage(ledger, table)
    assert "P1" not in pooled.fact_ids and len(pooled) == len(ledger)
    row = gate.evaluate(pooled, ["P2"]).to_frame().row(0, named=True)
    assert (row["decision"], row["reason"], row["trials"]) == ("evict", "eval-gate:harmful", 5)
    # every estimator sees the pooled record: lift by hand, and a regression
    lift = attribute(pooled, method="lift").to_frame().filter(pl.col("fact_id") == "P2")
    with_p2 = [0.25] * 4 + [0.3]
    without = [0.7] * 4 + [0.6] * 4
    assert lift["estimate"][0] == pytest.approx(np.mean(with_p2) - np.mean(without))
    ols = attribute(pooled, method="ols").to_frame().filter(pl.col("fact_id") == "P2")
    assert ols["estimate"][0] < -0.2
    # the gate does the same when asked to, with the table
    pooling = LineageGate("cycgraph", MARGIN, exclude_evicted=False, pool_parents=True)
    assert pooling.evaluate(ledger, ["P2"], lessons=table).to_frame()["decision"][0] == "evict"


def test_pooling_drops_propensities_it_cannot_keep() -> None:
    rng = np.random.default_rng(1)
    ledger = random_inclusion_ledger(rng, n_runs=20, effects=(0.1, 0.0))
    table = [
        {"id": "L1", "created_at": 1},
        {"id": "L9", "created_at": 2, "consolidated_from": ["L2"]},
    ]
    pooled = pool_lineage(ledger, table)
    assert set(pooled.fact_ids) == {"L1", "L9"}
    assert "propensities" not in pooled.frame.columns
    untouched = pool_lineage(ledger, [{"id": "L1", "created_at": 1}])
    assert untouched.frame.equals(ledger.frame)


def test_exclude_evicted_lessons() -> None:
    ledger, table = _paraphrase_ledger()
    assert evicted_lessons(table) == ["P1"]
    kept = exclude_lessons(ledger, pl.DataFrame(table))
    assert kept.run_ids == tuple(r for r in ledger.run_ids if not r.startswith("p"))
    assert exclude_lessons(ledger, ["P2"]).run_ids == ledger.run_ids[:-1]
    assert exclude_lessons(ledger, []).frame.equals(ledger.frame)
    with pytest.raises(ValueError, match="string"):
        exclude_lessons(ledger, "P1")
    # L shared the poison's runs: with them, the margin rule evicts it; without, promotes
    gate = LineageGate("cycgraph", MARGIN, exclude_evicted=False)
    assert gate.evaluate(ledger, ["L"], lessons=table).to_frame()["decision"][0] == "evict"
    gate = LineageGate("cycgraph", MARGIN)
    assert gate.evaluate(ledger, ["L"], lessons=table).to_frame()["decision"][0] == "promote"


def test_options_off_is_cycgraph_exactly() -> None:
    rng = np.random.default_rng(7)
    ledger = random_inclusion_ledger(rng, n_runs=80, effects=(0.1, -0.1, 0.0, 0.05))
    table = [{"id": f, "created_at": k, "status": "evicted"} for k, f in enumerate(ledger.fact_ids)]
    for rule in ("margin", "inference"):
        policy = {**MARGIN, "decision_rule": rule}
        want = make_gate("cycgraph", **policy).evaluate(ledger).to_frame()
        off = LineageGate("cycgraph", policy, exclude_evicted=False)
        assert off.evaluate(ledger, lessons=table).to_frame().equals(want)
        assert LineageGate("cycgraph", policy).evaluate(ledger).to_frame().equals(want)
    with pytest.raises(ValueError, match="True or False"):
        LineageGate(exclude_evicted="yes")  # type: ignore[arg-type]


# ---------------------------------------------------------------------- simulator (S2)
@pytest.fixture(scope="module")
def s2():
    from cogstats.sim import load_spec

    return load_spec(ROOT / "simulations" / "poison_crater.toml").scenario


def test_switched_off_in_the_simulator_it_is_the_compiled_engine(s2) -> None:
    from cogstats.sim import simulate

    fast = simulate(s2, replicates=6, rng=3, engine="fast")
    gate = LineageGate("cycgraph", s2.gate.policy, exclude_evicted=False)
    reference = simulate(s2, replicates=6, rng=3, engine="reference", gate=gate)
    assert reference.lessons.equals(fast.lessons)


@pytest.mark.slow
def test_s2_false_eviction_with_evicted_lessons_left_out(s2) -> None:
    """The measurement of docs/lineage.md at 40 replicates: leaving the evicted poisons'
    runs out raises false eviction under the margin rule (the crater's runs leave the
    baselines too) and costs poison recall (co-injected poisons lose the runs retrieval
    already counted)."""
    from cogstats.sim import simulate

    rows = {}
    for exclude in (False, True):
        gate = LineageGate("cycgraph", s2.gate.policy, exclude_evicted=exclude)
        result = simulate(s2, replicates=40, rng=20261130, engine="reference", gate=gate)
        rows[exclude] = result.summary_row()
    off, on = rows[False], rows[True]
    se = np.hypot(off["false_eviction_rate_mcse"], on["false_eviction_rate_mcse"])
    assert on["false_eviction_rate"] - off["false_eviction_rate"] > 2 * se
    assert on["poison_recall"] < off["poison_recall"] == 1.0


# ---------------------------------------------------------------------- command line
@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    ledger, table = _paraphrase_ledger()
    runs = ledger.write(tmp_path / "runs.csv")
    lessons = tmp_path / "lessons.jsonl"
    lessons.write_text("\n".join(json.dumps(r) for r in table) + "\n")
    return runs, lessons


def test_cli_lessons_flags(files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    runs, lessons = files
    base = ["gate", str(runs), "--decision-rule", "margin", "--min-trials", "2", "--format", "json"]
    assert main(base) == 0
    plain = {r["fact_id"]: r for r in json.loads(capsys.readouterr().out)}
    assert plain["P2"]["decision"] == "hold" and plain["L"]["decision"] == "evict"
    assert main([*base, "--lessons", str(lessons), "--pool-lineage"]) == 0
    pooled = {r["fact_id"]: r for r in json.loads(capsys.readouterr().out)}
    assert set(pooled) == {"L", "P2"} and pooled["P2"]["decision"] == "evict"
    assert pooled["P2"]["trials"] == 5
    assert main([*base, "--lessons", str(lessons), "--exclude-evicted"]) == 0
    kept = {r["fact_id"]: r for r in json.loads(capsys.readouterr().out)}
    assert (kept["L"]["trials"], kept["L"]["decision"]) == (4, "promote")
    # the table alone changes nothing for a gate that does not read it, and says so
    assert main([*base, "--lessons", str(lessons)]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out) == list(plain.values())
    assert "does not read the lesson table" in captured.err
    assert main(["gate", str(runs), "--exclude-evicted"]) == 2
    assert "need --lessons FILE" in capsys.readouterr().err
    bad = lessons.with_name("bad.csv")
    bad.write_text("id,created_at,status\na,1,gone\n")
    assert main(["gate", str(runs), "--lessons", str(bad)]) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and "row 1, field 'status'" in err


def test_cli_attribute_pools_lineage(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    runs, lessons = files
    argv = ["attribute", str(runs), "--format", "json", "--lessons", str(lessons)]
    assert main([*argv, "--pool-lineage"]) == 0
    rows = {r["fact_id"]: r for r in json.loads(capsys.readouterr().out)}
    assert set(rows) == {"L", "P2"} and rows["P2"]["trials"] == 5


def test_the_measurement_script_runs() -> None:
    """docs/scripts/lineage_s2.py (the figures of docs/lineage.md), at 2 replicates."""
    import importlib.util

    path = ROOT / "docs" / "scripts" / "lineage_s2.py"
    spec = importlib.util.spec_from_file_location("lineage_s2", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    table = module.measure(2, 5)
    assert table.height == 6 and table["replicates"].to_list() == [2] * 6
    assert set(table["variant"]) == {"plain", "exclude runs", "exclude baselines"}
    plain = table.filter(pl.col("variant") == "plain").sort("rule")
    off = table.filter(pl.col("variant") == "exclude runs").sort("rule")
    assert off["rule"].to_list() == plain["rule"].to_list() == ["inference", "margin"]
