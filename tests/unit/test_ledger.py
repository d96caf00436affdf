"""Ledger semantics, IO round trips and bad-input errors."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cogstats import Ledger
from cogstats._validation import LedgerError, ParameterError

RECORDS = [
    {"run_id": "r1", "score": 0.9, "fact_ids": ["a", "b"], "difficulty": 0.1, "family": "x"},
    {"run_id": "r2", "score": 0.4, "fact_ids": [], "difficulty": -0.2, "family": "y"},
    {"run_id": "r3", "score": 0.7, "fact_ids": ["a", "a"], "difficulty": 0.0, "family": "x"},
    {"run_id": "r4", "score": 0.5, "fact_ids": ["b"], "difficulty": None, "family": "y"},
]


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


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet", ".json"])
def test_round_trip(tmp_path: Path, suffix: str) -> None:
    ledger = Ledger.from_records(RECORDS)
    path = ledger.write(tmp_path / f"ledger{suffix}")
    back = Ledger.read(path)
    assert back.frame.equals(ledger.frame), (back.frame, ledger.frame)


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
    assert Ledger.read(path).frame["fact_ids"].to_list() == [["a", "b"], ["a", "c"], []]


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
