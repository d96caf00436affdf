"""Terminal tables fit the terminal: leading columns kept, the rest named; wide shows all."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from cogstats import CycgraphGate, Ledger
from cogstats._validation import ParameterError
from cogstats.reports.display import terminal_table

DATA = Path(__file__).resolve().parents[2] / "data"


@pytest.fixture(scope="module")
def gate_frame() -> pl.DataFrame:
    ledger = Ledger.read(DATA / "poison_crater_ledger.csv")
    return CycgraphGate().evaluate(ledger).to_frame()


@pytest.mark.parametrize("width", [60, 80, 120])
def test_gate_table_fits_and_keeps_the_leading_columns(
    gate_frame: pl.DataFrame, width: int
) -> None:
    text = terminal_table(gate_frame, width=width)
    lines = text.splitlines()
    end = max(i for i, line in enumerate(lines) if line.startswith("└"))
    table, note = lines[: end + 1], " ".join(lines[end + 1 :])  # the note wraps at width
    assert max(len(line) for line in lines) <= width
    header = table[1]
    shown = [c.strip() for c in header.strip("│").split("┆")]
    assert shown == gate_frame.columns[: len(shown)]  # a prefix, in order
    assert shown[:2] == ["fact_id", "decision"]
    dropped = gate_frame.columns[len(shown) :]
    assert dropped and note == (
        f"{len(dropped)} more columns: {', '.join(dropped)} (--format wide shows every column)"
    )
    # every row is still there
    assert sum(line.startswith("│") for line in table) == gate_frame.height + 1


def test_wide_and_a_table_that_fits(gate_frame: pl.DataFrame) -> None:
    wide = terminal_table(gate_frame, width=80, wide=True)
    assert all(c in wide.splitlines()[1] for c in gate_frame.columns)
    assert max(len(line) for line in wide.splitlines()) > 80
    small = gate_frame.select("fact_id", "decision")
    assert terminal_table(small, width=80) == terminal_table(small, wide=True)


def test_terminal_width_from_the_environment(
    gate_frame: pl.DataFrame, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "70")
    assert terminal_table(gate_frame) == terminal_table(gate_frame, width=70)
    with pytest.raises(ParameterError, match="width"):
        terminal_table(gate_frame, width=0)
