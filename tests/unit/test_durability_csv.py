"""CSV outputs neutralise formula cells; ledger files never (issue 19, Build 6)."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np
import pytest

from cogstats import Ledger
from cogstats.cli import main
from cogstats.ledger import FORMULA_STARTS, write_csv

HOSTILE = ["=HYPERLINK(1)", "+1+1", "-2+3", "@SUM(A1)", "plain"]
#: formula starts no lesson id holds (control characters are refused at the ledger's door,
#: tests/unit/test_ledger_hostile.py); other string cells of an output may
CONTROL_STARTS = ["\tcmd", "\rcmd"]


def _ledger(tmp_path: Path) -> Path:
    rng = np.random.default_rng(3)
    records = [
        {
            "run_id": f"r{i}",
            "score": float(rng.uniform()),
            "fact_ids": [f for f in HOSTILE if rng.uniform() < 0.5],
        }
        for i in range(60)
    ]
    path = tmp_path / "runs.jsonl"
    Ledger.from_records(records).write(path)
    return path


def _cells(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text, newline="")))


@pytest.mark.parametrize("command", ["gate", "attribute"])
def test_cli_csv_neutralises_string_cells_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    path = _ledger(tmp_path)
    assert main([command, str(path), "--format", "csv"]) == 0
    rows = _cells(capsys.readouterr().out)
    header, body = rows[0], rows[1:]
    ids = {r[header.index("fact_id")] for r in body}
    assert ids == {"'" + f if f != "plain" else f for f in HOSTILE}
    for row in body:  # no string cell starts like a formula; numbers keep their sign
        for name, cell in zip(header, row, strict=True):
            assert not cell.startswith(FORMULA_STARTS) or _number(cell), (name, cell)
    assert any(_number(c) and c.startswith("-") for r in body for c in r)
    assert main([command, str(path), "--format", "csv", "--raw-csv"]) == 0
    raw = _cells(capsys.readouterr().out)
    assert {r[raw[0].index("fact_id")] for r in raw[1:]} == set(HOSTILE)


def _number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def test_audit_tables_and_writer(tmp_path: Path) -> None:
    from cogstats.reports.audit import audit_ledger

    audit = audit_ledger(Ledger.read(_ledger(tmp_path)))
    written = audit.write_tables(tmp_path / "out")
    for path in written:
        if path.suffix == ".csv":
            rows = _cells(path.read_text())
            col = rows[0].index("fact_id")
            assert "'=HYPERLINK(1)" in {r[col] for r in rows[1:]}
    raw = audit.write_tables(tmp_path / "raw", raw_csv=True)
    rows = _cells(next(p for p in raw if p.suffix == ".csv").read_text())
    assert "=HYPERLINK(1)" in {r[rows[0].index("fact_id")] for r in rows[1:]}
    import polars as pl

    frame = pl.DataFrame({"=name": ["x"], "v": [-1.5]})
    assert write_csv(frame) == "'=name,v\nx,-1.5\n"
    cells = _cells(write_csv(pl.DataFrame({"why": CONTROL_STARTS, "v": [1, -2]})))
    assert [r[0] for r in cells[1:]] == ["'" + c for c in CONTROL_STARTS]
    for bad in CONTROL_STARTS:  # and the ledger refuses them as lesson ids
        with pytest.raises(ValueError, match="holds a control character"):
            Ledger.from_records([{"run_id": "r1", "score": 0.5, "fact_ids": [bad]}])


def test_ledger_files_are_never_prefixed(tmp_path: Path) -> None:
    ledger = Ledger.read(_ledger(tmp_path))
    path = ledger.write(tmp_path / "runs.csv")
    assert "'=" not in path.read_text()
    assert Ledger.read(path).fact_ids == ledger.fact_ids
