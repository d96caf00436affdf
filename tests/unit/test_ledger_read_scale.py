"""Large-ledger reading paths: CSV's first pass a block at a time, mapped JSON Lines streamed.

The CSV reader's first pass checks a block of rows a column at a time (``map`` loops in
C) and falls back to row by row for any block that is not plain; both must learn the
same layout and raise the same first error.  A JSON Lines file read with a column
mapping is read line by line like an unmapped one (two passes: keys, then records).
"""

from __future__ import annotations

import gc
import json
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from cogstats import Ledger
from cogstats._validation import LedgerError, LedgerWarning, ParameterError
from cogstats.ledger import _csv_read as io_module

CELLS = [
    "1",
    " 2 ",
    "-3",
    "0.5",
    "1e3",
    "nan",
    "true",
    "False",
    "x",
    "",
    "  ",
    "7" * 4400,
    "a b",
    "a;b",
    "a, b",
    "[1]",
    " c ",
    "d e f",
]


def _layout(block: list[list[str]]) -> io_module._CsvLayout:
    return io_module._CsvLayout(["run_id", "score", "fact_ids", "c1", "c2"], 1, ",")


@pytest.mark.parametrize("seed", range(30))
def test_block_pass_learns_what_the_row_pass_learns(seed: int) -> None:
    rng = np.random.default_rng(seed)
    pool = CELLS[: int(rng.integers(3, len(CELLS) + 1))]
    block = [
        [f"r{i}", "0.5", str(rng.choice(pool)), str(rng.choice(pool)), str(rng.choice(pool))]
        for i in range(int(rng.integers(1, 40)))
    ]
    by_block, by_row = _layout(block), _layout(block)
    by_block.see_rows(block, 11, 5, [], "f.csv")
    for b, cells in enumerate(block):
        by_row.see(11 + b, cells)
    assert by_block.types == by_row.types
    assert by_block.too_long == by_row.too_long
    assert by_block.splits == by_row.splits


def _write(path: Path, rows: list[str]) -> Path:
    path.write_text("run_id,score,fact_ids,d\n" + "".join(r + "\n" for r in rows))
    return path


@pytest.mark.parametrize("block", [1, 3, 4, 1000])
def test_blocks_give_the_same_ledger_warnings_and_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block: int
) -> None:
    monkeypatch.setattr(io_module, "_CSV_BLOCK", block)
    rows = [f"r{i},0.{i},a b c,{i}" for i in range(9)]
    rows[4] = "r4,0.4,x;y,1.5"  # split on ';' after cells split on whitespace
    rows[6] = ",,,"  # a row of empty cells: no run
    path = _write(tmp_path / "a.csv", rows)
    with pytest.warns(LedgerWarning, match=r"split on ';' \(first at row 5\).*6 more row"):
        ledger = Ledger.read(path)
    assert len(ledger) == 8 and ledger.covariate("d").to_list()[:5] == [0, 1, 2, 3, 1.5]
    assert ledger.run_ids[4] == "r4" and ledger.to_records()[4]["fact_ids"] == ["x", "y"]
    # the first bad row is named, whatever the block it falls in
    bad = [f"r{i},0.5,a,{i}" for i in range(9)]
    bad[5] = "r5,0.5,a"  # too few fields
    bad[7] = 'r7,0.5,"a"b,1'  # malformed quoting, later
    with pytest.raises(LedgerError, match="row 6.*has 3 fields"):
        Ledger.read(_write(tmp_path / "b.csv", bad))
    bad[2] = 'r2,0.5,"a"b,1'  # malformed quoting first
    with pytest.raises(LedgerError, match="row 3.*malformed CSV"):
        Ledger.read(_write(tmp_path / "c.csv", bad))
    long = [f"r{i},0.5,a,{i}" for i in range(9)]
    long[8] = "r8,0.5,a," + "9" * 4400
    with pytest.raises(LedgerError, match="row 9.*4400 digits"):
        Ledger.read(_write(tmp_path / "d.csv", long))


def _jsonl(path: Path, runs: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in runs))
    return path


def test_mapped_json_lines_read_as_the_renamed_file(tmp_path: Path) -> None:
    runs = [
        {"run": f"r{i}", "reward": 0.1 * (i % 10), "lessons": [f"L{i % 3}"], "d": i}
        for i in range(50)
    ]
    runs[7].pop("lessons")  # a run without lessons: the mapping still holds
    mapping = {"run_id": "run", "score": "reward", "fact_ids": "lessons"}
    renamed = [
        {mapping.get(k, k) if k != "run" else "run_id": v for k, v in r.items()} for r in runs
    ]
    renamed = [
        {
            ("score" if k == "reward" else "fact_ids" if k == "lessons" else k): v
            for k, v in r.items()
        }
        for r in renamed
    ]
    got = Ledger.read(_jsonl(tmp_path / "m.jsonl", runs), columns=mapping)
    want = Ledger.read(_jsonl(tmp_path / "plain.jsonl", renamed))
    assert got.to_records() == want.to_records()
    # the mapping is checked against every line's keys before any record is read
    with pytest.raises(ParameterError, match="has no key 'lesson'.*did you mean 'lessons'"):
        Ledger.read(tmp_path / "m.jsonl", columns={**mapping, "fact_ids": "lesson"})
    # a malformed line anywhere is reported before the mapping is checked (as before)
    text = (tmp_path / "m.jsonl").read_text() + '{"run": "x", "reward": \n'
    (tmp_path / "bad.jsonl").write_text(text)
    with pytest.raises(LedgerError, match="row 51"):
        Ledger.read(tmp_path / "bad.jsonl", columns={**mapping, "fact_ids": "lesson"})
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    assert len(Ledger.read(empty, columns=mapping)) == 0


def test_mapped_json_lines_read_in_bounded_memory(tmp_path: Path) -> None:
    """The peak of a mapped read is the unmapped read's (the file was read whole before).

    ``tracemalloc`` peaks above what was allocated before each read: the file's text
    and every record at once made the mapped read's peak 3.7 times the unmapped one's
    (0.99 now).
    """
    rng = np.random.default_rng(0)
    runs = [
        {
            "run": f"run-{i:06d}",
            "reward": float(rng.random()),
            "lessons": [f"L{j}" for j in rng.choice(300, 6, replace=False)],
            "difficulty": float(rng.random()),
        }
        for i in range(20_000)
    ]
    mapped = _jsonl(tmp_path / "m.jsonl", runs)
    plain = _jsonl(
        tmp_path / "p.jsonl",
        [
            {
                "run_id": r["run"],
                "score": r["reward"],
                "fact_ids": r["lessons"],
                "difficulty": r["difficulty"],
            }
            for r in runs
        ],
    )
    del runs

    def peak(path: Path, columns: dict[str, str] | None) -> int:
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            ledger = Ledger.read(path, columns=columns)
            top = tracemalloc.get_traced_memory()[1] - before
        finally:
            tracemalloc.stop()
        assert len(ledger) == 20_000
        return top

    unmapped = peak(plain, None)
    with_mapping = peak(mapped, {"run_id": "run", "score": "reward", "fact_ids": "lessons"})
    assert with_mapping <= 1.1 * unmapped, (with_mapping, unmapped)


@pytest.mark.parametrize("seed", range(40))
def test_plain_files_split_as_the_csv_module_reads_them(tmp_path: Path, seed: int) -> None:
    """A file without quotes (line ends LF or CRLF): its lines split == ``csv.reader``'s."""
    rng = np.random.default_rng(seed)
    delim = str(rng.choice([",", "\t", ";", "|"]))
    pieces = ["a", " b ", "", "  ", "é", "x y", "\u2028", "\x0b", "[1, 2]", "'q'", "1e3", ",", ";"]
    lines = []
    for _ in range(int(rng.integers(0, 30))):
        width = int(rng.integers(0, 6))
        lines.append(delim.join(str(rng.choice(pieces)) for _ in range(width)))
    end = "\r\n" if rng.random() < 0.3 else "\n"
    text = end.join(lines) + (end if rng.random() < 0.5 else "")
    path = tmp_path / "f.csv"
    path.write_text(("\ufeff" if rng.random() < 0.3 else "") + text, encoding="utf-8", newline="")
    assert io_module.check_text_file(path, "f.csv")
    got, want = [], []
    for plain, out in ((True, got), (False, want)):
        fh, rows = io_module._csv_reader(path, "f.csv", delim, plain)
        with fh:
            out.extend(cells if cells != [""] else [] for cells in rows.reader)
    assert got == want


def test_files_that_are_not_plain(tmp_path: Path) -> None:
    header = "run_id,score,fact_ids\n"
    for body in ('r1,0.5,"a b"\n', "r1,0.5,a\rb\n", "r1,0.5," + "x" * 140_000 + "\n"):
        path = tmp_path / "f.csv"
        path.write_text(header + body * 3, newline="")
        assert not io_module.check_text_file(path, "f.csv")
    # a field over the csv module's limit is still its error
    with pytest.raises(LedgerError, match="malformed CSV.*field larger than field limit"):
        Ledger.read(path)
    path.write_text(header + "r1,0.5,a\n" * 3)
    assert io_module.check_text_file(path, "f.csv")
