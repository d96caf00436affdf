"""Awkward ledger files: each parses as stated in tests/data/awkward/MANIFEST.json or fails
with a cogstats error naming the file (and the row and field where the problem is in a row).

The corpus (odd encodings, delimiters, types, duplicates, empty files, other column names)
and the expected outcomes, written by hand, come from tests/data/awkward/make_corpus.py.
Also here: cycgraph's recorded demo ledger (data/, columns ``run``, ``lessons_in_prompt``)
read through the column mapping, and CSV writer round trips of awkward lesson ids.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cogstats import Ledger
from cogstats._validation import CogstatsError, LedgerError, LedgerWarning, ParameterError
from cogstats.cli import main
from cogstats.gates import CycgraphGate

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "data" / "awkward"
MANIFEST = json.loads((CORPUS / "MANIFEST.json").read_text())
ERRORS = {"LedgerError": LedgerError, "ParameterError": ParameterError}


def test_corpus_is_complete() -> None:
    files = {p.name for p in CORPUS.iterdir()} - {"MANIFEST.json", "make_corpus.py"}
    assert files == {entry["file"] for entry in MANIFEST}
    assert len(MANIFEST) >= 30
    kinds = {entry["outcome"] for entry in MANIFEST}
    assert kinds == {"runs", "error"}


@pytest.mark.parametrize("entry", MANIFEST, ids=[e["file"] for e in MANIFEST])
def test_awkward_file(entry: dict[str, Any]) -> None:
    path = CORPUS / entry["file"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            ledger = Ledger.read(path, **entry["read"])
        except CogstatsError as exc:
            _check_error(entry, path, exc)
            return
        # anything else (a traceback from csv, json, codecs, polars, ...) fails the test
    assert entry["outcome"] == "runs", f"{entry['file']} read, but should fail: {entry}"
    got = [[r, s, f] for r, s, f in ledger.frame.select("run_id", "score", "fact_ids").rows()]
    assert got == entry["runs"]
    for name, values in entry.get("covariates", {}).items():
        assert ledger.covariate(name).to_list() == values, name
    if "trials" in entry:
        stats = dict(ledger.fact_stats().select("fact_id", "trials").rows())
        assert stats == entry["trials"]
    ledger_warnings = [w.message for w in caught if issubclass(w.category, LedgerWarning)]
    expected = entry.get("warns")
    if expected is None:
        assert not ledger_warnings, ledger_warnings
    else:
        assert len(ledger_warnings) == 1, ledger_warnings
        warning = ledger_warnings[0]
        assert isinstance(warning, LedgerWarning)
        assert (warning.row, warning.field, warning.source) == (
            expected["row"],
            expected["field"],
            str(path),
        )
        text = str(warning)
        assert f"row {expected['row']}" in text and f"field {expected['field']!r}" in text
        for words in expected["words"]:
            assert words in text, (words, text)


def _check_error(entry: dict[str, Any], path: Path, exc: Exception) -> None:
    assert entry["outcome"] == "error", f"{entry['file']} should read, got {exc!r}"
    assert type(exc) is ERRORS[entry["error"]], repr(exc)
    text = str(exc)
    assert str(path) in text, text  # names the file
    if isinstance(exc, LedgerError):
        assert exc.source == str(path)
        assert (exc.row, exc.field) == (entry["row"], entry["field"]), text
    if entry["row"] is not None:
        assert f"row {entry['row']}" in text, text
    if entry["field"] is not None:
        assert f"field {entry['field']!r}" in text, text
    for words in entry["words"]:
        assert words in text, (words, text)


def _flags(read: dict[str, Any]) -> list[str]:
    flags = []
    for name, source in read.get("columns", {}).items():
        flags += ["--column", f"{name}={source}"]
    if "delimiter" in read:
        flags += ["--delimiter", read["delimiter"]]
    return flags


@pytest.mark.parametrize("entry", MANIFEST, ids=[e["file"] for e in MANIFEST])
def test_awkward_file_on_the_command_line(
    entry: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """``cogstats gate FILE`` on every corpus file: a table, or exit 2 with one message
    naming the file (and the row and field), never a traceback."""
    path = CORPUS / entry["file"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LedgerWarning)
        code = main(["gate", str(path), *_flags(entry["read"]), "--format", "csv"])
    out, err = capsys.readouterr()
    if entry["outcome"] == "runs":
        assert code == 0, err
        assert out.splitlines()[0].startswith("fact_id,decision,reason,why")
        return
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("cogstats gate: error: "), err
    assert str(path) in err
    if entry["row"] is not None:
        assert f"row {entry['row']}" in err
    if entry["field"] is not None:
        assert f"field {entry['field']!r}" in err


# ---------------------------------------------------------------------- cycgraph's demo
def test_cycgraph_demo_reads_through_the_column_mapping() -> None:
    path = ROOT / "data" / "cycgraph_poison_demo_runs.csv"
    with pytest.raises(LedgerError, match=r"--column run_id=run --column fact_ids=lessons"):
        Ledger.read(path)
    ledger = Ledger.read(path, columns={"run_id": "run", "fact_ids": "lessons_in_prompt"})
    raw = pl.read_csv(path, infer_schema_length=0)  # every cell as text
    assert ledger.run_ids == tuple(raw["run"].to_list())  # run ids stay strings
    assert ledger.run_ids[:3] == ("1", "2", "3")
    assert ledger.scores.tolist() == [float(s) for s in raw["score"]]
    assert ledger.frame["fact_ids"].to_list() == [
        (cell or "").split() for cell in raw["lessons_in_prompt"]
    ]
    assert set(ledger.covariates) == set(raw.columns) - {"run", "score", "lessons_in_prompt"}
    # the demo's poisons, P1-P3, were in the prompt of every run whose poison count is 3
    poisoned = [{"P1", "P2", "P3"} <= set(facts) for facts in ledger.frame["fact_ids"].to_list()]
    assert poisoned == [int(n) == 3 for n in raw["poison_in_prompt"]]


def test_cycgraph_demo_gates_through_column_flags(capsys: pytest.CaptureFixture[str]) -> None:
    """cycgraph's recorded demo CSV (``run``, ``lessons_in_prompt``) through ``--column``:
    the missing-column error suggests the flags, and with them the gate runs."""
    path = ROOT / "data" / "cycgraph_poison_demo_runs.csv"
    assert main(["gate", str(path)]) == 2
    assert "--column run_id=run --column fact_ids=lessons_in_prompt" in capsys.readouterr().err
    flags = ["--column", "run_id=run", "--column", "fact_ids=lessons_in_prompt"]
    policy = ["--rule", "margin", "--min-trials", "2", "--max-trials", "6"]
    assert main(["gate", str(path), *flags, *policy, "--format", "json"]) == 0
    rows = {r["fact_id"]: r for r in json.loads(capsys.readouterr().out)}
    ledger = Ledger.read(path, columns={"run_id": "run", "fact_ids": "lessons_in_prompt"})
    assert set(rows) == set(ledger.fact_ids)
    # the whole recording at once (every run, not the gate after each run): the poisons
    # are evicted as harmful
    for poison in ("P1", "P2", "P3"):
        assert (rows[poison]["decision"], rows[poison]["reason"]) == ("evict", "eval-gate:harmful")
    assert main(["attribute", str(path), *flags, "--format", "csv"]) == 0
    assert capsys.readouterr().out.startswith("fact_id,method,estimate")


def test_cycgraph_demo_gates_with_its_policy() -> None:
    # run 1 had no lessons and was not recorded (the `recorded` column).  The gate after
    # run 5 with the demo's policy evicts the three poisons and the genuine L4 and L5 as
    # harmful, and holds L6 (1 trial), as the write-up says (tests/reference/ replays the
    # whole demo); here the runs come through the column mapping
    path = ROOT / "data" / "cycgraph_poison_demo_runs.csv"
    ledger = Ledger.read(path, columns={"run_id": "run", "fact_ids": "lessons_in_prompt"})
    frame = ledger.frame.filter(pl.col("recorded") == "yes")
    assert frame.height == len(ledger) - 1
    after_run_5 = Ledger.from_frame(frame.filter(pl.col("run_id").cast(pl.Int64) <= 5))
    gate = CycgraphGate(
        decision_rule="margin", min_trials=2, promote_margin=0.05, evict_margin=0.05, max_trials=6
    )
    report = gate.evaluate(after_run_5, ["L4", "L5", "P1", "P2", "P3", "L6"]).to_frame()
    assert report.select("fact_id", "decision", "reason").rows() == [
        *((f, "evict", "eval-gate:harmful") for f in ("L4", "L5", "P1", "P2", "P3")),
        ("L6", "hold", None),
    ]


# ---------------------------------------------------------------------- CSV round trips
#: ids the ledger accepts: any text but control characters (refused at the door; see
#: tests/unit/test_ledger_hostile.py), with the characters that CSV cells treat specially
AWKWARD_IDS = st.text(
    alphabet=st.characters(
        codec="utf-8", exclude_categories=("Cs", "Cc"), include_characters="[],; \"'\u00a0"
    ),
    min_size=1,
    max_size=8,
).filter(lambda s: s.strip() != "")


@settings(max_examples=150, deadline=None)
@given(runs=st.lists(st.lists(AWKWARD_IDS, max_size=4), min_size=1, max_size=5))
def test_csv_writer_round_trips_every_id_it_accepts(
    tmp_path_factory: pytest.TempPathFactory, runs: list[list[str]]
) -> None:
    records = [{"run_id": f"r{i}", "score": 0.5, "fact_ids": ids} for i, ids in enumerate(runs)]
    folder = tmp_path_factory.mktemp("round_trip")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LedgerWarning)  # repeated ids are fine here
        ledger = Ledger.from_records(records)
        for suffix in (".csv", ".tsv"):
            back = Ledger.read(ledger.write(folder / f"l{suffix}"))
            assert back.frame.equals(ledger.frame), (back.frame, ledger.frame)


def test_csv_writer_forms(tmp_path: Path) -> None:
    plain = Ledger.from_records([{"run_id": "r1", "score": 0.5, "fact_ids": ["a", "b"]}])
    assert plain.write(tmp_path / "a.csv").read_text().splitlines()[1] == "r1,0.5,a b"
    spaced = Ledger.from_records(
        [
            {"run_id": "r1", "score": 0.5, "fact_ids": ["a b", "c"]},
            {"run_id": "r2", "score": 0.5, "fact_ids": ["d e"]},
        ]
    )
    # one id with a space alone in its cell would split on whitespace: ';' cannot hold it
    # either ("d e" has no ';'), so the column is written as JSON lists
    lines = spaced.write(tmp_path / "b.csv").read_text().splitlines()
    assert lines[1:] == ['r1,0.5,"[""a b"", ""c""]"', 'r2,0.5,"[""d e""]"']
    semi = Ledger.from_records([{"run_id": "r1", "score": 0.5, "fact_ids": ["a b", "c"]}])
    assert semi.write(tmp_path / "c.csv").read_text().splitlines()[1] == "r1,0.5,a b;c"


@pytest.mark.parametrize(
    ("covariate", "words"),
    [
        ({"code": ["007", "008"]}, "holds '007' in run 'r0', which would read back as 7"),
        ({"label": ["x", ""]}, "holds '' in run 'r1', which would read back as None"),
        ({"flag": ["true", "false"]}, "holds 'true' in run 'r0', which would read back as True"),
        ({"note": ["a\rb", "c"]}, "holds 'a\\rb' in run 'r0'"),
    ],
)
def test_csv_writer_refuses_what_csv_cannot_hold(
    tmp_path: Path, covariate: dict[str, list[str]], words: str
) -> None:
    (name, values) = next(iter(covariate.items()))
    ledger = Ledger.from_records(
        [{"run_id": f"r{i}", "score": 0.5, name: v} for i, v in enumerate(values)]
    )
    with pytest.raises(LedgerError, match="JSON Lines") as err:
        ledger.write(tmp_path / "x.csv")
    assert err.value.field == name and words in str(err.value), str(err.value)
    assert not (tmp_path / "x.csv").exists()
    back = Ledger.read(ledger.write(tmp_path / "x.jsonl"))
    assert back.frame.equals(ledger.frame)


def test_csv_writer_refuses_run_ids_it_would_strip(tmp_path: Path) -> None:
    ledger = Ledger.from_records([{"run_id": " r1", "score": 0.5}])
    with pytest.raises(LedgerError, match=r"row 1, field 'run_id': .*run id ' r1'"):
        ledger.write(tmp_path / "x.csv")


TEXT = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=6
)
#: run ids the ledger accepts (control characters are refused at the door)
ACCEPTED = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=6
).filter(lambda s: s.strip() != "")
VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=False, allow_infinity=False),
    TEXT,
)


@settings(max_examples=200, deadline=None)
@given(
    run_ids=st.lists(ACCEPTED, min_size=1, max_size=4, unique=True),
    column=st.lists(VALUES, min_size=4, max_size=4),
)
def test_csv_writer_round_trips_or_refuses(
    tmp_path_factory: pytest.TempPathFactory, run_ids: list[str], column: list[Any]
) -> None:
    # one covariate column holds one type (ints and floats mix), nulls allowed
    first = next((v for v in column if v is not None), None)
    number = isinstance(first, int | float) and not isinstance(first, bool)

    def fits(v: Any) -> bool:
        if v is None:
            return True
        if number:
            return isinstance(v, int | float) and not isinstance(v, bool)
        return type(v) is type(first)

    column = [v if fits(v) else None for v in column]
    records = [
        {"run_id": r, "score": 0.25, "fact_ids": [], "x": column[i]} for i, r in enumerate(run_ids)
    ]
    ledger = Ledger.from_records(records)
    path = tmp_path_factory.mktemp("or_refuse") / "l.csv"
    refused: LedgerError | None = None
    try:
        ledger.write(path)
    except LedgerError as exc:
        refused = exc
    if refused is not None:
        assert refused.field in ("run_id", "x") and "JSON Lines" in str(refused)
        assert not path.exists()
        return
    back = Ledger.read(path)
    assert back.frame.equals(ledger.frame) and back.frame.schema == ledger.frame.schema
