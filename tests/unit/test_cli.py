"""The command line, every subcommand through ``main()``: gate (every registered gate, the
generated option flags, candidates, ledger input flags, output formats), attribute,
simulate, sweep, report listing, demo, and error handling."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from cogstats import Ledger
from cogstats._cli_options import param_help
from cogstats._validation import LedgerError
from cogstats.cli import SUBCOMMANDS, build_parser, flat_frame, main
from cogstats.estimators import ATTRIBUTION_COLUMNS, METHODS, attribute
from cogstats.gates import (
    CYCGRAPH_DECISION_COLUMNS,
    GATES,
    REPORT_COLUMNS,
    get_gate,
)
from cogstats.sim.cli import LESSONS_HEADING
from tests.helpers import random_inclusion_ledger

RECORDS = (
    [{"run_id": f"a{i}", "score": 0.9, "fact_ids": ["a"]} for i in range(6)]
    + [{"run_id": f"b{i}", "score": 0.3, "fact_ids": ["b"]} for i in range(6)]
    + [{"run_id": f"n{i}", "score": 0.6, "fact_ids": []} for i in range(6)]
)


@pytest.fixture
def ledger_file(tmp_path: Path) -> Path:
    return Ledger.from_records(RECORDS).write(tmp_path / "runs.csv")


def _table_rows(text: str) -> list[list[str]]:
    """The cells of a ``--format table`` frame: header first, then one list per row."""
    rows = []
    for line in text.splitlines():
        if line.startswith("│"):
            rows.append([c.strip() for c in line.strip().strip("│").split("┆")])
    return rows


def test_gate_table(ledger_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The wide table: the report's title, every one of cycgraph's columns and the numbers.

    Expected values by hand: lift = 0.9 - mean(six 0.3, six 0.6) = 0.45; Welch standard
    error with cycgraph's noise floor 0.1 on the lesson side (its six runs are equal) and
    the baseline's sample variance 12 * 0.15**2 / 11; both decisions at BH level 0.1.
    """
    assert main(["gate", str(ledger_file), "--format", "wide"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "GateReport(gate='cycgraph', promote=1, evict=1)"
    header, *rows = _table_rows(out)
    assert tuple(header) == CYCGRAPH_DECISION_COLUMNS
    by_id = {r[0]: dict(zip(header, r, strict=True)) for r in rows}
    assert set(by_id) == {"a", "b"}
    se = math.sqrt(0.1**2 / 6 + (12 * 0.15**2 / 11) / 12)
    for f, sign, decision, reason, why in (
        ("a", 1, "promote", "null", "promote_evidence"),
        ("b", -1, "evict", "eval-gate:harmful", "harm_evidence"),
    ):
        row = by_id[f]
        assert (row["decision"], row["reason"], row["why"]) == (decision, reason, why)
        assert (row["trials"], row["baseline_runs"]) == ("6", "12")
        assert float(row["estimate"]) == pytest.approx(sign * 0.45, abs=5e-5)
        assert float(row["lift"]) == float(row["estimate"])
        assert float(row["std_error"]) == pytest.approx(se, abs=5e-5)
        assert row["alpha_bracket"] == "3"  # floor(log2(12))


def test_gate_table_fits_the_terminal(
    ledger_file: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["gate", str(ledger_file)]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 80
    header, *_ = _table_rows(out)
    assert tuple(header) == CYCGRAPH_DECISION_COLUMNS[: len(header)]  # leading ones kept
    assert 0 < len(header) < len(CYCGRAPH_DECISION_COLUMNS) and "--format wide" in out


def test_gate_json(ledger_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["gate", str(ledger_file), "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["fact_id"], r["decision"]) for r in rows] == [("a", "promote"), ("b", "evict")]
    assert list(rows[0])[: len(REPORT_COLUMNS)] == list(REPORT_COLUMNS)


def test_gate_policy_flags_and_candidates(
    ledger_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cands = tmp_path / "cands.txt"
    cands.write_text("# candidates\nb\n")
    code = main(
        [
            "gate",
            str(ledger_file),
            "--decision-rule",
            "margin",
            "--min-trials",
            "7",
            "--candidates",
            str(cands),
            "--format",
            "csv",
        ]
    )
    assert code == 0
    captured = capsys.readouterr()
    out = captured.out.splitlines()
    assert out[0] == ",".join(CYCGRAPH_DECISION_COLUMNS)
    assert out[1].startswith("b,hold,,min_trials,6,,,12,")
    assert captured.err == ""
    assert main(["gate", str(ledger_file), "--decision-rule", "margin", "--format", "csv"]) == 0
    margin = capsys.readouterr().out.splitlines()
    # the margin rule's estimate is the lift it compares (cycgraph reports no lift column)
    assert margin[1].startswith("a,promote,,promote_evidence,6,0.45")
    assert ",,,,,," in margin[1]


@pytest.mark.parametrize("fmt", ["json", "csv"])
@pytest.mark.parametrize("name", sorted(GATES))
def test_every_registered_gate_runs(
    name: str, fmt: str, ledger_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    extra = {"audit": ["--min-hits", "3", "--win-threshold", "0.7"]}.get(name, [])
    assert main(["gate", str(ledger_file), "--gate", name, "--format", fmt, *extra]) == 0
    out = capsys.readouterr().out
    rows = json.loads(out) if fmt == "json" else pl.read_csv(io.StringIO(out)).to_dicts()
    assert [r["fact_id"] for r in rows] == ["a", "b"]
    for row in rows:
        assert list(row)[: len(REPORT_COLUMNS)] == list(REPORT_COLUMNS)
    got = [(r["decision"], r["why"]) for r in rows]
    want = {
        "cycgraph": [("promote", "promote_evidence"), ("evict", "harm_evidence")],
        "evidence": [("promote", "promote_evidence"), ("evict", "harm_evidence")],
        "audit": [("hold", "win_rate_ok"), ("retire", "low_win_rate")],
        # tier 1 (a margin in noise sds) promotes the +0.3 lesson; tier 2 convicts the other
        "recommended": [("promote", "promote_margin"), ("evict", "harm_evidence")],
    }
    assert got == want[name]


@pytest.mark.parametrize("name", sorted(GATES))
def test_gate_flags_are_generated_from_the_options_dataclass(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    entry = get_gate(name)
    with pytest.raises(SystemExit) as stop:
        main(["gate", "--gate", name, "--help"])
    assert stop.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    helps = param_help(entry.options)
    for f in entry.fields():
        flag = "--" + f.name.replace("_", "-")
        assert flag in text, flag
        # the help is the class docstring's, and shows the class's default
        assert f.name in helps, f.name
        first_words = " ".join(helps[f.name].split()[:4])
        assert first_words in text, (f.name, first_words)
    for name_, default in entry.defaults().items():
        if not isinstance(default, dict):
            assert f"(default: {default!r})" in text, name_


def test_generated_flags_parse_types_and_choices() -> None:
    parser = build_parser("cycgraph")
    argv = ["gate", "x.csv", "--decision-rule", "margin", "--max-trials", "none"]
    args = parser.parse_args([*argv, "--promote-margin", "0.1"])
    assert (args.opt__decision_rule, args.opt__max_trials, args.opt__promote_margin) == (
        "margin",
        None,
        0.1,
    )
    with pytest.raises(SystemExit):  # Literal choices come from the class annotation
        parser.parse_args(["gate", "x.csv", "--decision-rule", "vote"])
    with pytest.raises(SystemExit):  # the older spellings are gone
        parser.parse_args(["gate", "x.csv", "--rule", "margin"])
    argv = ["gate", "x.csv", "--gate", "evidence", "--options", "noise_floor_sd=0.05"]
    argv += ["--no-hold-unidentifiable", "--spending-options", "gamma=-2"]
    evidence = build_parser("evidence").parse_args(argv)
    assert evidence.opt__options == ["noise_floor_sd=0.05"]
    assert evidence.opt__hold_unidentifiable is False


def test_gate_evidence_method_and_covariates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ledger = random_inclusion_ledger(np.random.default_rng(3), effects=(0.1, 0.0, -0.1))
    path = ledger.write(tmp_path / "runs.jsonl")
    argv = ["gate", str(path), "--gate", "evidence", "--method", "ols", "--format", "json"]
    argv += ["--covariates", "difficulty_proxy", "--alpha", "0.01"]
    code = main(argv)
    assert code == 0
    rows = {r["fact_id"]: r for r in json.loads(capsys.readouterr().out)}
    want = attribute(ledger, method="ols", covariates=["difficulty_proxy"], confidence_level=0.98)
    for row in want.to_frame().iter_rows(named=True):
        assert rows[row["fact_id"]]["estimate"] == pytest.approx(row["estimate"], rel=1e-12)
        assert rows[row["fact_id"]]["ci_low"] == pytest.approx(row["ci_low"], rel=1e-12)
    assert rows["L1"]["decision"] == "promote" and rows["L3"]["decision"] == "evict"


def test_candidates_absent_from_the_ledger_warn(
    ledger_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cands = tmp_path / "cands.txt"
    cands.write_text("b\nghost\n")
    assert main(["gate", str(ledger_file), "--candidates", str(cands), "--format", "csv"]) == 0
    captured = capsys.readouterr()
    assert "warning" in captured.err and "'ghost'" in captured.err
    assert "'b'" not in captured.err
    assert "ghost,hold,,min_trials,0," in captured.out


@pytest.mark.parametrize("command", ["gate", "attribute"])
def test_column_and_delimiter_reach_ledger_read_only_when_given(
    command: str, ledger_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[dict[str, Any]] = []
    real = Ledger.read.__func__  # type: ignore[attr-defined]

    def spy(cls: type, path: Any, **kwargs: Any) -> Ledger:
        seen.append(dict(kwargs))
        kwargs.pop("columns", None)
        kwargs.pop("delimiter", None)
        return real(cls, path, **kwargs)

    monkeypatch.setattr(Ledger, "read", classmethod(spy))
    assert main([command, str(ledger_file), "--format", "json"]) == 0
    flags = ["--column", "run_id=run", "--column", "fact_ids=lessons_in_prompt"]
    assert main([command, str(ledger_file), *flags, "--delimiter", ";", "--format", "csv"]) == 0
    assert seen == [
        {"format": None},
        {
            "format": None,
            "columns": {"run_id": "run", "fact_ids": "lessons_in_prompt"},
            "delimiter": ";",
        },
    ]


def test_column_flag_must_be_an_assignment(
    ledger_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["gate", str(ledger_file), "--column", "run_id"]) == 2
    assert "--column must look like NAME=VALUE" in capsys.readouterr().err


@pytest.fixture(scope="module")
def rich_ledger_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    ledger = random_inclusion_ledger(np.random.default_rng(5), n_runs=60, effects=(0.1, 0.0))
    return ledger.write(tmp_path_factory.mktemp("cli") / "runs.jsonl")


@pytest.mark.parametrize("method", sorted(METHODS))
def test_attribute_csv_for_every_method(
    method: str, rich_ledger_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["attribute", str(rich_ledger_file), "--method", method, "--format", "csv"]) == 0
    frame = pl.read_csv(io.StringIO(capsys.readouterr().out))
    assert tuple(frame.columns[: len(ATTRIBUTION_COLUMNS)]) == ATTRIBUTION_COLUMNS
    assert sorted(frame["fact_id"].to_list()) == ["L1", "L2"]
    assert set(frame["method"].to_list()) == {method}


def test_csv_serialises_list_and_struct_columns() -> None:
    frame = pl.DataFrame(
        {
            "ids": [["a", "b"], [], None],
            "nums": [[1.5, 2.0], [3.0], []],
            "pair": [{"x": 1}, {"x": 2}, {"x": 3}],
        }
    )
    text = flat_frame(frame).write_csv()
    # an empty list is an empty (quoted) string, a null list an empty field
    assert text.splitlines() == [
        "ids,nums,pair",
        'a;b,1.5;2.0,"{""x"":1}"',
        '"",3.0,"{""x"":2}"',
        ',"","{""x"":3}"',
    ]


def test_attribute_table_and_seed(ledger_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["attribute", str(ledger_file), "--method", "permutation", "--seed", "4"]
    assert main([*argv, "--option", "permutations=199", "--format", "json"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert main([*argv, "--option", "permutations=199", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == first
    assert main(["attribute", str(ledger_file), "--format", "wide"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "Attribution(method='lift', lessons=2)"
    header, *rows = _table_rows(out)
    assert tuple(header[: len(ATTRIBUTION_COLUMNS)]) == ATTRIBUTION_COLUMNS
    assert {r[0]: float(r[2]) for r in rows} == pytest.approx({"a": 0.45, "b": -0.45})


SPEC = """
name = "cli-check"
runs = 12
replicates = 4
seed = 3
[[lessons.listed]]
id = "bad"
effect = -0.3
kind = "poison"
[retrieval]
max_facts = 4
candidate_slots = 2
[gate]
type = "cycgraph"
decision_rule = "margin"
min_trials = 2
"""


def test_simulate_subcommand(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC)
    out = tmp_path / "out"
    assert main(["simulate", str(spec), "--no-progress", "--out", str(out)]) == 0
    text, lessons = capsys.readouterr().out.split(LESSONS_HEADING)
    assert text.splitlines()[0] == "cli-check: 1 cell(s), seed 3"
    assert _table_rows(lessons)[1][:3] == ["bad", "-0.3", "poison"]  # kind given: "spec"
    header, row = _table_rows(text)
    cells = dict(zip(header, row, strict=True))
    assert (cells["replicates"], cells["engine"]) == ("4", "fast")
    table = pl.read_parquet(out / "cells.parquet")
    assert cells["poison_recall"] == f"{table['poison_recall'][0]:.4f}"
    # a gate the kernel does not cover runs in the reference engine by itself
    evidence = SPEC.split("[gate]")[0] + '[gate]\ntype = "evidence"\nmethod = "ols"\n'
    spec.write_text(evidence)
    assert main(["simulate", str(spec), "--no-progress", "--replicates", "2"]) == 0
    header, row = _table_rows(capsys.readouterr().out.split(LESSONS_HEADING)[0])
    assert dict(zip(header, row, strict=True))["engine"] == "reference"


def test_sweep_subcommand(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "sweep.toml"
    spec.write_text(SPEC + '[grid]\n"gate.min_trials" = [2, 3]\n')
    argv = ["sweep", str(spec), "--workers", "1", "--no-progress", "--out", str(tmp_path / "s")]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert text.startswith("cli-check: 2/2 cells x 4 replicates, seed 3 (2 run now, 0 already")
    header, *rows = _table_rows(text)
    assert [r[header.index("gate.min_trials")] for r in rows] == ["2", "3"]
    assert main(argv) == 0  # resumed: nothing left to run
    assert "(0 run now, 2 already done)" in capsys.readouterr().out


def test_report_listing(capsys: pytest.CaptureFixture[str]) -> None:
    from cogstats.reports import get_report, report_names

    assert main(["report"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines == [f"{n}: {get_report(n).title}" for n in report_names()]
    assert len(lines) >= 1


def test_demo_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["demo", "--help"])
    assert stop.value.code == 0
    text = capsys.readouterr().out
    assert "--quick" in text and "--out" in text


def test_subcommands_are_one_list() -> None:
    parser = build_parser(None)
    choices = parser._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    assert list(choices) == [name for name, *_ in SUBCOMMANDS]


def test_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("run_id,score,fact_ids\nr1,2,a\n")
    assert main(["gate", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "row 1, field 'score'" in err
    assert main(["gate", str(bad), "--max-trials", "1"]) == 2
    assert "max_trials must be >= min_trials" in capsys.readouterr().err
    assert main(["gate", str(tmp_path / "none.csv")]) == 2
    assert main(["gate", str(bad), "--gate", "cycgrph"]) == 2
    assert "unknown gate 'cycgrph' (did you mean 'cycgraph'?)" in capsys.readouterr().err
    assert main(["gate", str(bad), "--gate", "nowhere.mod:Gate"]) == 2
    assert "cannot import gate 'nowhere.mod:Gate'" in capsys.readouterr().err


def _hostile_store(path: Path) -> None:
    from cogstats.store import LessonStore

    ids = ["cite-sources", "evil\u202eexe.txt", "zero\u200bwidth", "tip_\u0430", "x" * 60]
    with LessonStore.open(path, preset="recommended", max_facts=6, candidate_slots=3) as store:
        with pytest.raises(LedgerError, match="control character"):  # refused at the door
            store.add("bell\x07")
        for f in ids:
            store.add(f)
        rng = np.random.default_rng(2)
        for i in range(12):
            facts = [f for f in ids if rng.random() < 0.5]
            bad = 0.3 if ids[1] in facts else 0.0
            store.record(f"r\u200d{i}", 0.8 - bad, facts, {"difficulty_proxy": 0.1 * (i % 3)})


def test_store_show_fits_80_columns_and_escapes_ids(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    _hostile_store(tmp_path / "s")
    assert main(["store", "show", str(tmp_path / "s")]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert "12 runs, 5 lessons" in out
    assert "evil\\u202eexe.txt" in out and "zero\\u200bwidth" in out and "tip_\\u0430" in out
    assert not any(ch in out for ch in "\u202e\u200b\u200d\u0430")  # nothing hidden
    assert "x" * 23 + "~" in out  # a long id is cut, visibly
    assert main(["store", "show", str(tmp_path / "s"), "--events"]) == 0
    events = capsys.readouterr().out
    assert max(len(line) for line in events.splitlines()) <= 80
    assert "r\\u200d" in events and "\u200d" not in events
    assert main(["store", "show", str(tmp_path / "s"), "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["fact_id"] for r in rows} >= {"evil\u202eexe.txt"}  # data: as stored


def test_store_show_refuses_a_folder_that_is_no_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["store", "show", str(tmp_path)]) == 2
    assert "not a lesson store" in capsys.readouterr().err


def test_gate_tables_escape_ids_and_recommended_links_the_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records: list[dict[str, Any]] = [dict(r) for r in RECORDS]
    for r in records:
        r["fact_ids"] = [f.replace("a", "a\u202e") for f in r["fact_ids"]]
    path = Ledger.from_records(records).write(tmp_path / "runs.jsonl")
    assert main(["gate", str(path), "--gate", "recommended"]) == 0
    out = capsys.readouterr().out
    assert "a\\u202e" in out and "\u202e" not in out
    assert "The batch gate and the store" in out and "docs/production.md" in out
    assert main(["gate", str(path), "--gate", "recommended", "--format", "json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)[0]["fact_id"] == "a\u202e"  # data: as it is
    assert captured.err == ""  # machine formats carry the data only
    assert main(["gate", str(path)]) == 0  # cycgraph: no note
    assert "The batch gate" not in capsys.readouterr().out
