"""Hostile ledger input: each case is a clear error or the right reading, never a hang.

Every input is generated here (no fixture files): wide headers, numbers in other digit
systems, control and invisible characters in ids.  Speed is not asserted (it is measured
in benchmarks/hostile_input.py); the wide header's test only has to finish.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cogstats import Ledger
from cogstats._validation import LedgerError

WIDE = 100_000


def _wide_csv(path: Path, names: list[str]) -> Path:
    header = ",".join(["run_id", "score", "fact_ids", *names])
    rows = [
        f"r{i},0.{i + 1},a b,{','.join(str((i + j) % 7) for j in range(len(names)))}"
        for i in range(2)
    ]
    path.write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    return path


def test_a_header_of_100000_columns_reads_every_column(tmp_path: Path) -> None:
    names = [f"c{j}" for j in range(WIDE)]
    ledger = Ledger.read(_wide_csv(tmp_path / "wide.csv", names))
    assert ledger.covariates == names
    assert ledger.run_ids == ("r0", "r1") and ledger.fact_ids == ("a", "b")
    assert ledger.covariate(f"c{WIDE - 1}").to_list() == [(WIDE - 1) % 7, WIDE % 7]
    assert ledger.covariate("c3").dtype.is_integer()


def test_a_wide_header_naming_a_column_twice_is_refused(tmp_path: Path) -> None:
    names = [f"c{j}" for j in range(WIDE)]
    names[-1] = "c17"
    with pytest.raises(LedgerError, match=r"duplicate column\(s\) \['c17'\] in the header"):
        Ledger.read(_wide_csv(tmp_path / "wide.csv", names))
    # a missing required column: the message lists the first columns and a count
    path = tmp_path / "nameless.csv"
    path.write_text(
        "run," + ",".join(f"c{j}" for j in range(WIDE)) + "\nr1," + "1," * (WIDE - 1) + "1\n"
    )
    with pytest.raises(LedgerError, match=rf"\.\.\. \({WIDE + 1 - 40} more\)\]") as err:
        Ledger.read(path)
    assert len(str(err.value)) < 2_000


def test_a_lesson_table_with_a_wide_header(tmp_path: Path) -> None:
    path = tmp_path / "lessons.csv"
    extra = [f"x{j}" for j in range(WIDE)]
    path.write_text(
        ",".join(["id", "created_at", *extra])
        + "\n"
        + "L1,1,"
        + ",".join("0" for _ in extra)
        + "\n"
    )
    table = Ledger.read_lessons(path)
    assert table.width == WIDE + 3 and table["id"].to_list() == ["L1"]  # (+ status)
    path.write_text(",".join(["id", "created_at", *extra, "x5"]) + "\n")
    with pytest.raises(LedgerError, match=r"duplicate column\(s\) \['x5'\]"):
        Ledger.read_lessons(path)


# ---------------------------------------------------------------- numbers
#: numbers Python's float()/int() read but JSON does not: other digit systems, underscores
PYTHON_ONLY = {
    "fullwidth one": "\uff11",
    "Arabic-Indic 0.5": "\u0660.\u0665",
    "Devanagari 0.5": "\u0966.\u096b",
    "underscore 0.7_5": "0.7_5",
    "underscore 1_0e-1": "1_0e-1",
    "fullwidth three": "\uff13",
    "underscore 1_000": "1_000",
    "underscore 0_5": "0_5",
}


@pytest.mark.parametrize("text", list(PYTHON_ONLY.values()), ids=list(PYTHON_ONLY))
def test_a_csv_score_in_another_notation_is_refused(tmp_path: Path, text: str) -> None:
    path = tmp_path / "runs.csv"
    path.write_text(f"run_id,score,fact_ids\nr1,0.5,a\nr2,{text},a\n", encoding="utf-8")
    with pytest.raises(LedgerError, match=r"row 2, field 'score'") as err:
        Ledger.read(path)
    message = str(err.value)
    assert repr(text) in message and "ASCII digits" in message
    assert "got 5.0" not in message and "got 10.0" not in message  # (0_5, 1_000 in Python)


@pytest.mark.parametrize("text", list(PYTHON_ONLY.values()), ids=list(PYTHON_ONLY))
@pytest.mark.parametrize("column", ["numbers", "words"])
def test_a_csv_covariate_in_another_notation_is_refused(
    tmp_path: Path, text: str, column: str
) -> None:
    """In a column of numbers or of words, a cell only Python reads as a number is refused,
    in the reader's block path and its row-by-row path (a blank row)."""
    other = ["0.25", "3", "1e-2"] if column == "numbers" else ["math", "code", "tip_1"]
    for blank in ("", "\n"):
        path = tmp_path / "runs.csv"
        rows = [f"r{k},0.5,a,{v}" for k, v in enumerate(other, start=1)]
        path.write_text(
            "run_id,score,fact_ids,x\n" + "\n".join(rows) + f"\n{blank}r9,0.5,a,{text}\n",
            encoding="utf-8",
        )
        row = 4 if not blank else 5
        with pytest.raises(LedgerError, match=rf"row {row}, field 'x'") as err:
            Ledger.read(path)
        assert repr(text) in str(err.value)


def test_ascii_numbers_still_read(tmp_path: Path) -> None:
    path = tmp_path / "runs.csv"
    path.write_text(
        "run_id,score,fact_ids,x,y,w\n"
        "r1,.5,a,+3,1e-2,caf\u00e9\n"
        "r2,1.,a,-4,5.,\u6570\u5b66\n"
        "r3,\u00a00.25\u00a0,a,0,-.5,tip_1\n",
        encoding="utf-8",
    )
    ledger = Ledger.read(path)
    assert ledger.scores.tolist() == [0.5, 1.0, 0.25]
    assert ledger.covariate("x").to_list() == [3, -4, 0]
    assert ledger.covariate("y").to_list() == [0.01, 5.0, -0.5]
    assert ledger.covariate("w").to_list() == ["caf\u00e9", "\u6570\u5b66", "tip_1"]


@pytest.mark.parametrize(
    ("cell", "words"),
    [
        ("0_5", "'0_5' holds an underscore"),
        ("0.5;\uff11", "U+FF11 FULLWIDTH DIGIT ONE"),
        ("[0.7_5]", "the number '0.7_5'"),
        ("[0x1]", "the number '0x1'"),
    ],
)
def test_a_propensity_in_another_notation_is_refused(tmp_path: Path, cell: str, words: str) -> None:
    path = tmp_path / "runs.csv"
    path.write_text(
        f'run_id,score,fact_ids,eligible_ids,propensities\nr1,0.5,a,a b,"{cell}"\n',
        encoding="utf-8",
    )
    with pytest.raises(LedgerError, match=r"row 1, field 'propensities'") as err:
        Ledger.read(path)
    assert words in str(err.value)


def test_json_lines_and_the_lesson_table_refuse_them_too(tmp_path: Path) -> None:
    for text in PYTHON_ONLY.values():
        path = tmp_path / "runs.jsonl"
        path.write_text(f'{{"run_id": "r1", "score": {text}, "fact_ids": []}}\n', encoding="utf-8")
        with pytest.raises(LedgerError, match="row 1"):
            Ledger.read(path)
        lessons = tmp_path / "lessons.csv"
        lessons.write_text(f"id,created_at\nL1,1\nL2,{text}\n", encoding="utf-8")
        with pytest.raises(LedgerError, match=r"row 2, field 'created_at'"):
            Ledger.read_lessons(lessons)


def test_the_command_line_reads_ascii_numbers_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from cogstats.cli import main

    path = tmp_path / "runs.csv"
    path.write_text("run_id,score,fact_ids\nr1,0.5,a\nr2,0.4,\n")
    for flags in (["--seed", "\uff11"], ["--seed", "1_0"], ["--min-trials", "\u0663"]):
        with pytest.raises(SystemExit) as exit_:
            main(["gate", str(path), "--gate", "cycgraph", *flags])
        assert exit_.value.code == 2
        assert f"invalid int value: {flags[1]!r}" in capsys.readouterr().err
    assert main(["gate", str(path), "--gate", "cycgraph", "--seed", "3"]) == 0


def test_ascii_parsers() -> None:
    from cogstats.ledger import ascii_float, ascii_int

    assert ascii_float(" 1e-1 ") == 0.1 and ascii_int("+7") == 7
    for text in PYTHON_ONLY.values():
        with pytest.raises(ValueError, match="ASCII"):
            ascii_float(text)
        with pytest.raises(ValueError, match="ASCII"):
            ascii_int(text)
