"""Ledger semantics, IO round trips and bad-input errors."""

from __future__ import annotations

import json
import math
import re
import warnings
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cogstats import Ledger
from cogstats._validation import LedgerError, LedgerWarning, ParameterError
from cogstats.ledger._cells import split_list_cell

RECORDS = [
    {"run_id": "r1", "score": 0.9, "fact_ids": ["a", "b"], "difficulty": 0.1, "family": "x"},
    {"run_id": "r2", "score": 0.4, "fact_ids": [], "difficulty": -0.2, "family": "y"},
    {"run_id": "r3", "score": 0.7, "fact_ids": ["a", "a"], "difficulty": 0.0, "family": "x"},
    {"run_id": "r4", "score": 0.5, "fact_ids": ["b"], "difficulty": None, "family": "y"},
]
#: RECORDS list lesson 'a' twice in run r3 (row 3): every read of them warns
REPEAT = r"row 3, field 'fact_ids': run 'r3' lists lesson 'a' 2 times; it counts once"
pytestmark = pytest.mark.filterwarnings(
    "ignore:.*run 'r3' lists lesson 'a' 2 times:cogstats._validation.LedgerWarning"
)


def test_fact_stats_and_baselines_closed_form() -> None:
    ledger = Ledger.from_records(RECORDS)
    stats = {r["fact_id"]: r for r in ledger.fact_stats().iter_rows(named=True)}
    # a: runs r1 (0.9) and r3 (0.7; the duplicate id counts once)
    assert stats["a"]["trials"] == 2
    assert stats["a"]["mean_score"] == pytest.approx(0.8, abs=1e-15)
    assert stats["a"]["variance"] == pytest.approx(0.02, abs=1e-15)
    assert stats["b"]["trials"] == 2
    base = ledger.baseline(exclude="a")
    assert (base.runs, base.mean_score) == (2, pytest.approx(0.45))
    assert base.variance == pytest.approx(0.005)
    everything = ledger.baseline()
    assert everything.runs == 4
    assert everything.mean_score == pytest.approx(np.mean([0.9, 0.4, 0.7, 0.5]))
    empty = Ledger.from_records([{"run_id": "r", "score": 1.0, "fact_ids": ["a"]}])
    assert empty.baseline(exclude="a") == empty.baseline(exclude="a")
    assert empty.baseline(exclude="a").runs == 0
    assert empty.baseline(exclude="a").mean_score == 0.0
    frame = ledger.baselines(["a", "zz"])
    assert frame["baseline_runs"].to_list() == [2, 4]


def test_single_trial_variance_is_null() -> None:
    ledger = Ledger.from_records([{"run_id": "r", "score": 0.3, "fact_ids": ["a"]}])
    assert ledger.fact_stats()["variance"].to_list() == [None]


def test_record_replaces_in_place() -> None:
    ledger = Ledger.from_records(RECORDS)
    ledger.record("r2", 0.6, ["c"], difficulty=0.3)
    assert ledger.run_ids == ("r1", "r2", "r3", "r4")
    assert ledger.frame.row(1, named=True)["score"] == 0.6
    assert ledger.frame.row(1, named=True)["family"] is None  # replaced, not merged
    assert "c" in ledger.fact_ids
    ledger.record("r5", 1.0)
    assert len(ledger) == 5
    assert ledger.frame["fact_ids"].to_list()[-1] == []


def test_sequential_means_reproduce_cycgraph_ties() -> None:
    # cycgraph's margin rule: 0.55 vs 0.50 promotes at margin 0.05 (floats as computed)
    ledger = Ledger.from_records(
        [{"run_id": f"w{i}", "score": 0.55, "fact_ids": ["a"]} for i in range(3)]
        + [{"run_id": f"b{i}", "score": 0.5, "fact_ids": []} for i in range(3)]
    )
    lift = ledger.fact_stats()["mean_score"][0] - ledger.baseline(exclude="a").mean_score
    assert lift == (0.55 + 0.55 + 0.55) / 3 - (0.5 + 0.5 + 0.5) / 3


def test_design_matrix() -> None:
    ledger = Ledger.from_records(RECORDS)
    design = ledger.design()
    assert design.fact_ids == ("a", "b")
    assert design.dense().tolist() == [[1, 1], [0, 0], [1, 0], [0, 1]]
    sub = ledger.design(["b", "missing"])
    assert sub.dense().tolist() == [[1, 0], [0, 0], [0, 0], [1, 0]]
    assert design.column("a").tolist() == [True, False, True, False]


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".tsv", ".parquet", ".json"])
def test_round_trip(tmp_path: Path, suffix: str) -> None:
    ledger = Ledger.from_records(RECORDS)
    path = ledger.write(tmp_path / f"ledger{suffix}")
    with pytest.warns(LedgerWarning, match=REPEAT):  # the stored repeat is read back
        back = Ledger.read(path)
    assert back.frame.equals(ledger.frame), (back.frame, ledger.frame)
    assert back.frame.schema == ledger.frame.schema
    if suffix == ".tsv":
        assert path.read_text().splitlines()[0] == "run_id\tscore\tfact_ids\tdifficulty\tfamily"


def test_repeated_lesson_counts_once_and_warns() -> None:
    records = [
        {"run_id": "r1", "score": 0.9, "fact_ids": ["a", "b", "a"]},
        {"run_id": "r2", "score": 0.4, "fact_ids": ["b"]},
        {"run_id": "r3", "score": 0.7, "fact_ids": ["c", "c", "c"]},
    ]
    with pytest.warns(LedgerWarning) as caught:
        ledger = Ledger.from_records(records)
    assert len(caught) == 1
    warning = caught[0].message
    assert isinstance(warning, LedgerWarning)
    assert (warning.row, warning.field, warning.source) == (1, "fact_ids", None)
    assert "run 'r1' lists lesson 'a' 2 times" in str(warning)
    assert "1 more run(s) repeat a lesson (rows 3)" in str(warning)
    assert ledger.frame["fact_ids"].to_list()[0] == ["a", "b", "a"]  # stored as given
    assert dict(ledger.fact_stats().select("fact_id", "trials").rows()) == {
        "a": 1,
        "b": 2,
        "c": 1,
    }


def test_lesson_ids_are_nfc_normalised() -> None:
    nfd, nfc = "cafe\u0301", "caf\u00e9"
    ledger = Ledger.from_records([{"run_id": "r1", "score": 0.5, "fact_ids": [nfd]}])
    ledger.record("r2", 0.7, [nfc], eligible_ids=[nfd, "x"], propensities=[1.0, 0.5])
    assert ledger.fact_ids == (nfc,)
    assert ledger.frame["eligible_ids"].to_list()[1] == [nfc, "x"]
    assert ledger.fact_stats()["trials"].to_list() == [2]


@pytest.mark.parametrize(
    ("cell", "ids"),
    [
        ("", []),
        ("   ", []),
        ("a", ["a"]),
        ("a b\tc", ["a", "b", "c"]),  # whitespace
        ("a, b,c", ["a", "b", "c"]),  # commas, stripped
        ("a b, c", ["a b", "c"]),
        ("a b; c;", ["a b", "c"]),  # ';' wins over ',' and spaces; empty pieces dropped
        ("x,y;z", ["x,y", "z"]),
        ('["a b", "c;d", "e,f"]', ["a b", "c;d", "e,f"]),  # JSON list, as written
        ("['a', 'b']", ["a", "b"]),  # Python literal (pandas)
        ('[" a "]', [" a "]),
        ("[]", []),
        ("  ['a']  ", ["a"]),
    ],
)
def test_csv_list_cell_rule_table(cell: str, ids: list[str]) -> None:
    assert split_list_cell(cell, "fact_ids", 1, None, numeric=False, nullable=False) == ids


@pytest.mark.parametrize(
    ("cell", "words"),
    [
        ("['a' 'b']", "no comma"),
        ("[1, 'a']", "fact_ids[0] must be a string"),
        ("[['a']]", "fact_ids[0] must be a string"),
        ("[a, b]", "neither a JSON list nor a Python"),
        ("[__import__('os').getcwd()]", "neither a JSON list nor a Python"),  # never eval
        ("['a',", "neither a JSON list nor a Python"),
    ],
)
def test_csv_bad_list_cells(cell: str, words: str) -> None:
    with pytest.raises(LedgerError, match=re.escape(words)) as err:
        split_list_cell(cell, "fact_ids", 4, "f.csv", numeric=False, nullable=False)
    assert (err.value.row, err.value.field, err.value.source) == (4, "fact_ids", "f.csv")


def test_csv_propensity_cells() -> None:
    def cell(text: str) -> list[float] | None:
        return split_list_cell(text, "propensities", 1, None, numeric=True, nullable=True)

    assert cell("0.5 0.25") == cell("0.5;0.25") == cell("[0.5, 0.25]") == [0.5, 0.25]
    assert cell("") is None and cell("[]") == []
    for bad, words in (("0.5 abc", "'abc'"), ("['0.5']", "must be a number"), ("[true]", "number")):
        with pytest.raises(LedgerError, match=re.escape(words)):
            cell(bad)


def test_column_mapping(tmp_path: Path) -> None:
    path = tmp_path / "runs.csv"
    path.write_text("run,score,lessons,extra\n1,0.5,a b,x\n2,0.25,,y\n")
    mapping = {"run_id": "run", "fact_ids": "lessons"}
    ledger = Ledger.read(path, columns=mapping)
    assert ledger.run_ids == ("1", "2") and ledger.covariates == ["extra"]
    jsonl = ledger.write(tmp_path / "runs.jsonl")
    renamed = jsonl.read_text().replace('"run_id"', '"run"').replace('"fact_ids"', '"lessons"')
    jsonl.write_text(renamed)
    assert Ledger.read(jsonl, columns=mapping).frame.equals(ledger.frame)
    # a bad cell under a mapped column names the ledger field and the file's column
    path.write_text("run,score,lessons\n1,0.5,[1]\n")
    with pytest.raises(LedgerError, match=r"row 1, field 'fact_ids'.*the file's column 'lessons'"):
        Ledger.read(path, columns=mapping)


@pytest.mark.parametrize(
    ("columns", "words"),
    [
        (["run_id", "run"], "columns must be a mapping"),
        ({"": "run"}, "keys must be non-empty"),
        ({"run_id": 3}, "must map to a non-empty column name"),
        ({"run_id": "run", "score": "run"}, "maps both 'run_id' and 'score' onto"),
    ],
)
def test_bad_column_mappings(tmp_path: Path, columns: object, words: str) -> None:
    """One check of a mapping, whoever takes it: the same error, word for word."""
    from cogstats.reports.audit import read_ledger, rename_demo_columns

    path = tmp_path / "runs.csv"
    path.write_text("run,score,fact_ids\n1,0.5,a\n")
    lessons = tmp_path / "lessons.csv"
    lessons.write_text("id,created_at\na,1\n")
    callers = {
        "Ledger.read": lambda: Ledger.read(path, columns=columns),  # type: ignore[arg-type]
        "Ledger.read_lessons": lambda: Ledger.read_lessons(lessons, columns=columns),  # type: ignore[arg-type]
        "read_ledger": lambda: read_ledger(path, columns=columns),  # type: ignore[arg-type]
        "rename_demo_columns": lambda: rename_demo_columns(pl.DataFrame(), columns, "runs"),  # type: ignore[arg-type]
    }
    messages = {}
    for name, call in callers.items():
        with pytest.raises(ParameterError, match=re.escape(words)) as err:
            call()
        messages[name] = str(err.value)
    assert len(set(messages.values())) == 1, messages


def test_the_command_line_maps_columns_with_the_same_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from cogstats.cli import main

    path = tmp_path / "runs.csv"
    path.write_text("run,score,fact_ids\n1,0.5,a\n")
    with pytest.raises(ParameterError) as err:
        Ledger.read(path, columns={"run_id": "run", "score": "run"})
    assert main(["gate", str(path), "--column", "run_id=run", "--column", "score=run"]) != 0
    assert str(err.value) in capsys.readouterr().err


def test_delimiter_parameter(tmp_path: Path) -> None:
    path = tmp_path / "runs.csv"
    path.write_text("run_id;score;fact_ids\nr1;0.5;a,b\n")
    assert Ledger.read(path, delimiter=";").fact_ids == ("a", "b")
    with pytest.raises(LedgerError, match=r"one column: is the file separated by ';'"):
        Ledger.read(path, delimiter="|")
    with pytest.raises(ParameterError, match="delimiter must be one character"):
        Ledger.read(path, delimiter=";;")
    with pytest.raises(ParameterError, match="delimiter applies to CSV/TSV ledgers only"):
        Ledger.read(tmp_path / "runs.jsonl", delimiter=",")


def test_csv_round_trip_keeps_unlogged_propensities(tmp_path: Path) -> None:
    ledger = Ledger.from_records(
        [
            {"run_id": "r1", "score": 0.5, "fact_ids": ["a"]},
            {
                "run_id": "r2",
                "score": 0.6,
                "fact_ids": [],
                "eligible_ids": ["a"],
                "propensities": [0.5],
            },
            {"run_id": "r3", "score": 0.7, "fact_ids": [], "eligible_ids": [], "propensities": []},
        ]
    )
    path = ledger.write(tmp_path / "p.csv")
    assert path.read_text().splitlines()[1:] == ["r1,0.5,a,,", "r2,0.6,,a,0.5", "r3,0.7,,[],[]"]
    assert Ledger.read(path).frame.equals(ledger.frame)


def test_empty_ledger_round_trips(tmp_path: Path) -> None:
    for suffix in (".csv", ".jsonl", ".parquet", ".json"):
        back = Ledger.read(Ledger().write(tmp_path / f"empty{suffix}"))
        assert len(back) == 0 and back.fact_ids == ()


def test_round_trip_propensities_csv(tmp_path: Path) -> None:
    ledger = Ledger.from_records(
        [
            {
                "run_id": "r1",
                "score": 0.5,
                "fact_ids": ["a"],
                "eligible_ids": ["a", "b"],
                "propensities": [0.5, 1 / 3],
            },
            {
                "run_id": "r2",
                "score": 0.6,
                "fact_ids": [],
                "eligible_ids": ["a"],
                "propensities": [0.5],
            },
        ]
    )
    for suffix in (".csv", ".jsonl", ".parquet"):
        back = Ledger.read(ledger.write(tmp_path / f"p{suffix}"))
        assert back.frame.equals(ledger.frame), suffix


def test_csv_separators(tmp_path: Path) -> None:
    path = tmp_path / "l.csv"
    path.write_text("run_id,score,fact_ids\nr1,0.5,a b\nr2,0.5,a; c\nr3,1,\n")
    # each cell by the rule table; a file that mixes the two forms gets a warning naming
    # the whitespace-split row ('a b' may have been one lesson with a space)
    with pytest.warns(LedgerWarning, match=r"row 1, field 'fact_ids'.*end the cell with ';'"):
        ledger = Ledger.read(path)
    assert ledger.frame["fact_ids"].to_list() == [["a", "b"], ["a", "c"], []]
    path.write_text("run_id,score,fact_ids\nr1,0.5,tip 1;\nr2,0.5,tip 1;tip 2\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error", LedgerWarning)
        assert Ledger.read(path).frame["fact_ids"].to_list() == [["tip 1"], ["tip 1", "tip 2"]]


def test_cycgraph_json_forms(tmp_path: Path) -> None:
    runs = [
        {"run_id": "r1", "score": 0.5, "fact_ids": ["a"], "recorded_at": "2026-01-01"},
        {"run_id": "r2", "score": 0.7},
    ]
    (tmp_path / "a.json").write_text(json.dumps({"runs": runs, "other": 1}))
    (tmp_path / "b.json").write_text(json.dumps(runs))
    a, b = Ledger.read(tmp_path / "a.json"), Ledger.read(tmp_path / "b.json")
    assert a.frame.equals(b.frame)
    assert a.frame["fact_ids"].to_list() == [["a"], []]
    assert a.covariates == ["recorded_at"]


BAD_RECORDS = [
    ({"run_id": "r", "score": float("nan"), "fact_ids": []}, "score", "finite"),
    ({"run_id": "r", "score": float("inf"), "fact_ids": []}, "score", "finite"),
    ({"run_id": "r", "score": 1.5, "fact_ids": []}, "score", "[0, 1]"),
    ({"run_id": "r", "score": -0.1, "fact_ids": []}, "score", "[0, 1]"),
    ({"run_id": "r", "score": "0.5", "fact_ids": []}, "score", "number"),
    ({"run_id": "r", "score": True, "fact_ids": []}, "score", "number"),
    ({"run_id": "", "score": 0.5, "fact_ids": []}, "run_id", "non-empty"),
    ({"run_id": 7, "score": 0.5, "fact_ids": []}, "run_id", "string"),
    ({"run_id": "r", "score": 0.5, "fact_ids": [1]}, "fact_ids", "string"),
    ({"run_id": "r", "score": 0.5, "fact_ids": "a b"}, "fact_ids", "list"),
    ({"run_id": "r", "score": 0.5, "fact_ids": [""]}, "fact_ids", "non-empty"),
    ({"run_id": "r", "score": 0.5, "fact_ids": ["a", " "]}, "fact_ids", "non-empty"),
    ({"run_id": "r", "score": 0.5, "fact_ids": ["\ud800"]}, "fact_ids", "not valid Unicode"),
    ({"score": 0.5, "fact_ids": []}, "run_id", "missing"),
    ({"run_id": "r", "fact_ids": []}, "score", "missing"),
    ({"run_id": "r", "score": 0.5, "x": float("nan")}, "x", "finite"),
    ({"run_id": "r", "score": 0.5, "x": [1, 2]}, "x", "numbers, strings"),
    (
        {"run_id": "r", "score": 0.5, "fact_ids": ["a"], "eligible_ids": ["a"]},
        "propensities",
        "both",
    ),
    (
        {
            "run_id": "r",
            "score": 0.5,
            "fact_ids": ["a"],
            "eligible_ids": ["a"],
            "propensities": [0.0],
        },
        "propensities",
        "injected",
    ),
    (
        {
            "run_id": "r",
            "score": 0.5,
            "fact_ids": ["a"],
            "eligible_ids": ["b"],
            "propensities": [0.5],
        },
        "eligible_ids",
        "not in eligible_ids",
    ),
    (
        {"run_id": "r", "score": 0.5, "fact_ids": [], "eligible_ids": ["b"], "propensities": [1.5]},
        "propensities",
        "probability",
    ),
    (
        {"run_id": "r", "score": 0.5, "fact_ids": [], "eligible_ids": ["b"], "propensities": [1.0]},
        "propensities",
        "not injected",
    ),
]


@pytest.mark.parametrize(("bad", "field", "words"), BAD_RECORDS)
def test_bad_record_names_row_and_field(bad: dict, field: str, words: str) -> None:
    good = {"run_id": "ok", "score": 0.5, "fact_ids": ["a"]}
    with pytest.raises(LedgerError) as err:
        Ledger.from_records([good, bad])
    assert err.value.row == 2
    assert err.value.field == field
    assert "row 2" in str(err.value)
    assert repr(field) in str(err.value)
    assert words in str(err.value)


def test_bad_input_loses_nothing() -> None:
    ledger = Ledger.from_records(RECORDS)
    before = ledger.frame
    with pytest.raises(LedgerError):
        ledger.record("r9", 2.0, ["a"])
    assert ledger.frame.equals(before)


def test_duplicate_run_ids_in_one_input() -> None:
    with pytest.raises(LedgerError, match=r"row 3.*duplicate run_id 'r1' \(first at row 1\)"):
        Ledger.from_records(
            [
                {"run_id": "r1", "score": 0.1},
                {"run_id": "r2", "score": 0.1},
                {"run_id": "r1", "score": 0.2},
            ]
        )


def test_mixed_covariate_types() -> None:
    with pytest.raises(LedgerError, match="field 'x'"):
        Ledger.from_records(
            [{"run_id": "a", "score": 0.1, "x": 1.0}, {"run_id": "b", "score": 0.1, "x": "high"}]
        )


@pytest.mark.parametrize(
    ("text", "row", "field"),
    [
        ("run_id,score,fact_ids\nr1,0.5,a\nr2,abc,a\n", 2, "score"),
        ("run_id,score,fact_ids\nr1,0.5,a\nr2,1.2,a\n", 2, "score"),
        ("run_id,score,fact_ids\nr1,0.5,a\nr1,0.2,a\n", 2, "run_id"),
        ("run_id,score,fact_ids\nr1,0.5,a\n,0.2,a\n", 2, "run_id"),
        ("run_id,score,fact_ids\nr1,0.5,a\nr2,nan,a\n", 2, "score"),
        ("run_id,score,fact_ids\nr1,0.5,a\nr2,0.2\n", 2, None),
        ("run_id,score\nr1,0.5\n", None, "fact_ids"),
    ],
)
def test_bad_csv(tmp_path: Path, text: str, row: int | None, field: str | None) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(LedgerError) as err:
        Ledger.read(path)
    assert err.value.row == row
    assert err.value.field == field
    assert str(path) in str(err.value)


def test_bad_jsonl_names_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"run_id": "a", "score": 0.5}\n\n{"run_id": "b", "score": 0.5,\n')
    with pytest.raises(LedgerError, match="row 3.*malformed JSON"):
        Ledger.read(path)
    path.write_text('{"run_id": "a", "score": 0.5}\n[1, 2]\n')
    with pytest.raises(LedgerError, match="row 2.*JSON object"):
        Ledger.read(path)
    path.write_text('{"run_id": "a", "score": 0.5}\n{"run_id": "b", "score": 7}\n')
    with pytest.raises(LedgerError, match="row 2, field 'score'"):
        Ledger.read(path)


def test_bad_parquet_types(tmp_path: Path) -> None:
    path = tmp_path / "bad.parquet"
    pl.DataFrame({"run_id": ["a", "b"], "score": [0.5, 0.5], "fact_ids": [[1], [3]]}).write_parquet(
        path
    )
    with pytest.raises(LedgerError, match="row 1, field 'fact_ids'"):
        Ledger.read(path)
    pl.DataFrame({"run_id": ["a"], "score": [0.5]}).write_parquet(path)
    with pytest.raises(LedgerError, match="fact_ids"):
        Ledger.read(path)


def test_format_errors(tmp_path: Path) -> None:
    with pytest.raises(ParameterError, match="cannot infer the ledger format"):
        Ledger.read(tmp_path / "x.txt")
    with pytest.raises(ParameterError, match="format must be one of"):
        Ledger.read(tmp_path / "x.csv", format="xlsx")  # type: ignore[arg-type]
    with pytest.raises(FileNotFoundError):
        Ledger.read(tmp_path / "missing.csv")


def test_covariate_lookup() -> None:
    ledger = Ledger.from_records(RECORDS)
    assert ledger.covariate("difficulty").to_list() == [0.1, -0.2, 0.0, None]
    with pytest.raises(ParameterError, match="covariate 'difficulty_proxy' is not in the ledger"):
        ledger.covariate("difficulty_proxy")


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.floats(0, 1, allow_nan=False),
            st.lists(st.sampled_from(["a", "b", "c", "d"]), max_size=4),
        ),
        min_size=1,
        max_size=25,
    )
)
def test_stats_match_brute_force(rows: list[tuple[float, list[str]]]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LedgerWarning)  # repeated ids count once
        ledger = Ledger.from_records(
            [{"run_id": f"r{i}", "score": s, "fact_ids": f} for i, (s, f) in enumerate(rows)]
        )
    for r in ledger.fact_stats().iter_rows(named=True):
        ys = [s for s, f in rows if r["fact_id"] in f]
        assert r["trials"] == len(ys)
        assert math.isclose(r["mean_score"], float(np.mean(ys)), abs_tol=1e-12)
        if len(ys) > 1:
            assert math.isclose(r["variance"], float(np.var(ys, ddof=1)), abs_tol=1e-12)
        out = [s for s, f in rows if r["fact_id"] not in f]
        b = ledger.baseline(exclude=r["fact_id"])
        assert b.runs == len(out)
        if out:
            assert math.isclose(b.mean_score, float(np.mean(out)), abs_tol=1e-12)
