"""Large ledgers are read in bounded memory with every check kept (issue 19, Build 7).

``Ledger.read`` of JSON Lines (without a column mapping), CSV and Parquet streams the runs: the
Python heap it allocates peaks at the ledger it returns (plus a little), never at a copy
of the file, a list of records or a list of rows.  Measured with ``tracemalloc`` (the
allocations Python and numpy make; deterministic for a given file), so the bound is a
real test: the previous readers peaked at 2.5-6 times the ledger.  The fast paths they
use (the C JSON scanner, one validation per distinct lesson id) keep every check.
"""

from __future__ import annotations

import gc
import json
import tracemalloc
import warnings
from pathlib import Path

import numpy as np
import pytest

from cogstats import Ledger
from cogstats._validation import LedgerError, LedgerWarning
from cogstats.ledger import _files as ledger_files
from cogstats.ledger import load_json, parse_json_record

N_RUNS = 20_000


def _runs(n: int, seed: int = 3) -> list[dict]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        lessons = rng.choice(400, 8, replace=False)
        out.append(
            {
                "run_id": f"run-{i:06d}",
                "score": round(float(rng.random()), 4),
                "fact_ids": [f"lesson-{j:03d}" for j in lessons],
                "difficulty": round(float(rng.random()), 4),
            }
        )
    return out


def _heap_peak_over_ledger(path: Path) -> float:
    Ledger.read(path.with_name("warm" + path.suffix))  # load what the reader loads
    gc.collect()
    tracemalloc.start()
    try:
        ledger = Ledger.read(path)
        gc.collect()
        kept, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(ledger) == N_RUNS
    return peak / kept


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
def test_a_read_holds_the_ledger_and_little_else(
    tmp_path: Path, suffix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the checking pass reads fixed 4 MB chunks, as large as this whole test file: made
    # small here, as they are against a 200 MB ledger
    monkeypatch.setattr(ledger_files, "CHUNK_BYTES", 1 << 16)
    runs = _runs(N_RUNS)
    path = tmp_path / f"runs{suffix}"
    Ledger.from_records(runs).write(path)
    Ledger.from_records(runs[:3]).write(tmp_path / f"warm{suffix}")
    ratio = _heap_peak_over_ledger(path)
    # the whole file as text, the rows or the records would each cost about the
    # ledger again (a 20,000-run ledger holds about 6 MB)
    assert ratio < 1.2, f"Ledger.read peaked at {ratio:.2f}x the ledger it returned"


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".parquet"])
def test_each_lesson_id_is_stored_once(tmp_path: Path, suffix: str) -> None:
    runs = _runs(300)
    path = Ledger.from_records(runs).write(tmp_path / f"runs{suffix}")
    ledger = Ledger.read(path)
    assert ledger.frame.equals(Ledger.from_records(runs).frame)
    objects: dict[str, set[int]] = {}
    for facts in ledger._fact_ids:
        for f in facts:
            objects.setdefault(f, set()).add(id(f))
    assert len(objects) == 400 or len(objects) > 350
    assert all(len(ids) == 1 for ids in objects.values())


def test_non_ascii_ids_are_normalised_once_and_shared(tmp_path: Path) -> None:
    decomposed, composed = "cafe\u0301", "caf\u00e9"
    path = tmp_path / "runs.jsonl"
    path.write_text(
        "".join(
            json.dumps({"run_id": f"r{i}", "score": 0.5, "fact_ids": [decomposed, composed]}) + "\n"
            for i in range(3)
        ),
        encoding="utf-8",
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ledger = Ledger.read(path)
    assert ledger.fact_ids == (composed,)
    assert len({id(f) for facts in ledger._fact_ids for f in facts}) == 1
    assert any(isinstance(w.message, LedgerWarning) for w in caught)  # listed twice


# ---------------------------------------------------------------------- the JSON fast path
@pytest.mark.parametrize(
    "line",
    [
        '{"run_id": "r1", "score": 0.5, "score": 0.6}',
        '{"run_id": "r1", "score" : 0.5, "score": 0.6}',  # a space before one colon
        '{"run_id": "r1", "score": 0.5, "x": {"a": 1, "a": 2}}',
        '{"run_id": "a:b", "score": 0.5, "score": 0.6}',  # a colon inside a string
        '{"run_id": "r1", "score": 0.5} x',
        '{"run_id": "r1", "score": 0.5}\x0c',  # not JSON whitespace
        '{"run_id": "r1", "score": 0.5',
        '{"run_id": "r1", "score": 0.5,}',
    ],
)
def test_the_fast_json_path_refuses_what_the_full_parser_refuses(line: str) -> None:
    with pytest.raises(LedgerError, match="malformed JSON|appears twice"):
        parse_json_record(line, row=1, src="runs.jsonl")


@pytest.mark.parametrize(
    "line",
    [
        '{"run_id": "r1", "score": 0.5}',
        '{"run_id": "r1", "score": 0.5}  \r',
        '{"run_id": "a:b", "score": 0.5, "fact_ids": ["x:y", "z"]}',
        '{"run_id": "r1", "score": NaN, "fact_ids": []}',
        '{"run_id": "r1", "x": {"a": 1, "b": {}}, "score": 1}',
        '{"run_id" :"r1","score":0.25}',
    ],
)
def test_the_fast_json_path_reads_what_the_full_parser_reads(line: str) -> None:
    expected = json.loads(line)
    got = load_json(line)
    assert json.dumps(got) == json.dumps(expected)


def test_a_repeated_key_in_a_large_file_is_still_named(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    lines = [json.dumps(r) for r in _runs(50)]
    lines[37] = lines[37][:-1] + ', "score": 0.9}'
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(LedgerError) as info:
        Ledger.read(path)
    assert (info.value.row, info.value.field) == (38, "score")


# ---------------------------------------------------------------------- CSV in two passes
def test_csv_column_types_are_decided_by_every_row(tmp_path: Path) -> None:
    rows = "".join(f"r{i},0.5,a,{i},{i}\n" for i in range(5000))
    path = tmp_path / "runs.csv"
    path.write_text("run_id,score,fact_ids,n,tag\n" + rows + "r5000,0.5,a,0.5,x\n")
    ledger = Ledger.read(path)
    assert ledger.covariate("n").dtype.is_float() and ledger.covariate("n")[3] == 3.0
    assert ledger.covariate("tag").to_list()[:2] == ["0", "1"]  # one word makes it text


def test_csv_mixed_splits_warning_counts_every_row(tmp_path: Path) -> None:
    path = tmp_path / "runs.csv"
    body = "r0,0.5,a;b\n" + "".join(f"r{i},0.5,tip {i}\n" for i in range(1, 5))
    path.write_text("run_id,score,fact_ids\n" + body)
    with pytest.warns(LedgerWarning, match="first at row 1.*3 more row"):
        Ledger.read(path)


def test_a_late_csv_error_names_its_row(tmp_path: Path) -> None:
    path = tmp_path / "runs.csv"
    rows = "".join(f"r{i},0.5,a\n" for i in range(3000))
    path.write_text("run_id,score,fact_ids\n" + rows + 'r3000,0.5,"a\n')
    with pytest.raises(LedgerError) as info:
        Ledger.read(path)
    assert info.value.row == 3001
    path.write_text("run_id,score,fact_ids\n" + rows + "r3000,0.5,a,extra\n")
    with pytest.raises(LedgerError, match="has 4 fields") as info:
        Ledger.read(path)
    assert info.value.row == 3001


def test_csv_excel_hint_after_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "runs.csv"
    path.write_text("\n" * 10 + "sep=;\n")
    with pytest.raises(LedgerError, match="Excel's delimiter hint"):
        Ledger.read(path)
    path.write_text("\n" * 3 + "  \n")
    with pytest.raises(LedgerError, match="empty file"):
        Ledger.read(path)


def test_the_lesson_id_cache_is_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from cogstats.ledger import _records as ledger_records

    monkeypatch.setattr(ledger_records, "ID_CACHE_MAX", 10)
    cache: dict[str, str] = {}
    runs = _runs(200)  # 400 distinct ids
    for k, rec in enumerate(runs):
        ledger_records.validate_record(
            rec, row=k + 1, source=None, fact_ids_required=True, ids=cache
        )
    assert 10 <= len(cache) <= 10 + 2 * 8  # full after the run that filled it
    path = Ledger.from_records(runs).write(tmp_path / "runs.jsonl")
    back = Ledger.read(path)  # ids beyond the cache are validated and kept as read
    assert back.frame["fact_ids"].to_list() == [r["fact_ids"] for r in runs]


@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_a_read_stopped_by_a_bad_row_leaves_the_collector_on(tmp_path: Path, suffix: str) -> None:
    # the readers pause the cyclic garbage collector while they read; an error kept by
    # the caller (its traceback holds the reader) must not leave it paused
    path = tmp_path / f"runs{suffix}"
    Ledger.from_records(_runs(20)).write(path)
    text = path.read_text().replace("run-000011", "")  # an empty run id, row 12
    path.write_text(text)
    assert gc.isenabled()
    with pytest.raises(LedgerError) as info:
        Ledger.read(path)
    kept = info.value  # noqa: F841  (kept, as a caller may)
    assert gc.isenabled()
