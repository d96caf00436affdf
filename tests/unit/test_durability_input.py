"""Hostile ledger input is a clear LedgerError naming file, row and field (issue 19, Build 1)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import polars as pl
import pytest

from cogstats import Ledger
from cogstats._validation import LedgerError
from cogstats.cli import main
from cogstats.ledger import JsonLimitError, check_json_limits, load_json

GOOD = '{"run_id": "r0", "score": 0.5, "fact_ids": ["a"]}\n'


def _read_error(path: Path) -> LedgerError:
    with pytest.raises(LedgerError) as info:
        Ledger.read(path)
    return info.value


def test_deep_nesting_jsonl_names_row_and_field(tmp_path: Path) -> None:
    path = tmp_path / "deep.jsonl"
    path.write_text(
        GOOD + '{"run_id": "r1", "score": 0.5, "fact_ids": ' + "[" * 1000 + "]" * 1000 + "}\n"
    )
    err = _read_error(path)
    assert (err.row, err.field, err.source) == (2, "fact_ids", str(path))
    assert "nested deeper than 32" in err.message


def test_deep_nesting_survives_a_raised_recursion_limit(tmp_path: Path) -> None:
    # the depth check comes before the parser: no recursion limit is reachable from data
    path = tmp_path / "deep.jsonl"
    path.write_text(
        '{"run_id": "r1", "score": 0.5, "x": ' + '{"a": ' * 200_000 + "1" + "}" * 200_001 + "\n"
    )
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(1_000_000)
    try:
        err = _read_error(path)
    finally:
        sys.setrecursionlimit(old)
    assert (err.row, err.field) == (1, "x")


def test_deep_nesting_json_document_and_csv_cell(tmp_path: Path) -> None:
    doc = tmp_path / "runs.json"
    doc.write_text("[" * 50_000)
    assert "nested deeper" in _read_error(doc).message
    for cell in ("[" * 1000 + "]" * 1000, "[" * 100_000):
        csv = tmp_path / "runs.csv"
        csv.write_text(f'run_id,score,fact_ids\nr1,0.5,a\nr2,0.5,"{cell}"\n')
        err = _read_error(csv)
        assert (err.row, err.field) == (2, "fact_ids")
        assert "flat list" in err.message


def test_brackets_inside_strings_are_not_nesting() -> None:
    line = json.dumps({"run_id": "r", "score": 1, "fact_ids": ["[" * 100, "{" * 100]})
    assert load_json(line)["fact_ids"][0] == "[" * 100
    check_json_limits('"' + "9" * 5000 + '"')  # digits in a string are not an integer
    check_json_limits("0." + "9" * 5000)  # nor the digits of a float
    with pytest.raises(JsonLimitError):
        check_json_limits("-" + "9" * 4301)


def test_oversized_integers(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    path.write_text(GOOD + '{"run_id": "r1", "score": 0.5, "difficulty": ' + "9" * 5000 + "}\n")
    err = _read_error(path)
    assert (err.row, err.field) == (2, "difficulty")
    assert "5000 digits" in err.message
    path.write_text('{"run_id": "r1", "score": ' + "9" * 400 + "}\n")
    err = _read_error(path)
    assert err.field == "score" and "digits" in err.message
    csv = tmp_path / "big.csv"
    csv.write_text("run_id,score,fact_ids,d\nr1,0.5,a,1\nr2,0.5,a," + "9" * 5000 + "\n")
    err = _read_error(csv)
    assert (err.row, err.field) == (2, "d")
    csv.write_text("run_id,score,fact_ids\nr1," + "1" * 5000 + ",a\n")
    err = _read_error(csv)
    assert (err.row, err.field) == (1, "score") and "5000 characters" in err.message


def test_integers_beyond_int64_are_refused_at_the_door(tmp_path: Path) -> None:
    path = tmp_path / "wide.jsonl"
    path.write_text(GOOD + '{"run_id": "r1", "score": 0.5, "d": ' + str(2**70) + "}\n")
    err = _read_error(path)
    assert (err.row, err.field) == (2, "d") and "64-bit" in err.message
    csv = tmp_path / "wide.csv"
    csv.write_text("run_id,score,fact_ids,d\nr1,0.5,a," + "9" * 30 + "\n")
    assert _read_error(csv).field == "d"
    pq = tmp_path / "wide.parquet"
    frame = pl.DataFrame(
        {"run_id": ["r1"], "score": [0.5], "fact_ids": [["a"]], "d": [2**64 - 1]},
        schema_overrides={"d": pl.UInt64},
    )
    frame.write_parquet(pq)
    assert _read_error(pq).field == "d"
    ledger = Ledger()
    with pytest.raises(LedgerError, match="64-bit") as info:
        ledger.record("r1", 0.5, ["a"], d=2**63)
    assert info.value.field == "d"
    ledger.record("r1", 0.5, ["a"], d=2**63 - 1)  # the edge itself fits
    assert ledger.to_frame()["d"].to_list() == [2**63 - 1]
    with pytest.raises(LedgerError, match="propensities"):
        Ledger.from_records(
            [{"run_id": "r", "score": 1, "eligible_ids": ["a"], "propensities": [10**400]}]
        )


def test_objects_and_structs_are_not_lists(tmp_path: Path) -> None:
    path = tmp_path / "obj.jsonl"
    path.write_text(GOOD + '{"run_id": "r1", "score": 0.5, "fact_ids": {"L1": 1, "L2": 1}}\n')
    err = _read_error(path)
    assert (err.row, err.field) == (2, "fact_ids") and "object or struct" in err.message
    pq = tmp_path / "struct.parquet"
    pl.DataFrame(
        {"run_id": ["r1"], "score": [0.5], "fact_ids": [{"L1": 1, "L2": 1}]}
    ).write_parquet(pq)
    err = _read_error(pq)
    assert (err.row, err.field) == (1, "fact_ids")
    with pytest.raises(LedgerError, match="object or struct"):
        Ledger.from_records([{"run_id": "r", "score": 1, "fact_ids": {"a": 1}}])
    with pytest.raises(LedgerError, match="eligible_ids"):
        Ledger.from_records(
            [{"run_id": "r", "score": 1, "eligible_ids": {"a": 1}, "propensities": [0.5]}]
        )


def test_excel_sep_line_is_named(tmp_path: Path) -> None:
    path = tmp_path / "excel.csv"
    path.write_text("sep=;\nrun_id;score;fact_ids\nr1;0.5;a\n")
    err = _read_error(path)
    assert "'sep=;' is Excel's delimiter hint" in err.message
    assert "delimiter=';'" in err.message
    # the advice works
    path.write_text("run_id;score;fact_ids\nr1;0.5;a\n")
    assert Ledger.read(path, delimiter=";").run_ids == ("r1",)


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("deep.jsonl", '{"run_id": "r1", "score": 0.5, "fact_ids": ' + "[" * 5000 + "}\n"),
        ("big.jsonl", '{"run_id": "r1", "score": 0.5, "d": ' + "7" * 4400 + "}\n"),
        ("obj.jsonl", '{"run_id": "r1", "score": 0.5, "fact_ids": {"L1": 1}}\n'),
        ("deep.csv", 'run_id,score,fact_ids\nr1,0.5,"' + "[" * 3000 + '"\n'),
    ],
)
def test_cli_gate_reports_hostile_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, text: str
) -> None:
    path = tmp_path / name
    path.write_text(text)
    assert main(["gate", str(path)]) != 0
    err = capsys.readouterr().err
    assert "row 1" in err and "Traceback" not in err
