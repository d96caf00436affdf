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
