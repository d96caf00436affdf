"""Reading ledger files: JSON Lines, CSV/TSV, Parquet and cycgraph's JSON.

Private: :meth:`cogstats.Ledger.read` is the door.  Each reader turns a file into
*records* (plain dicts keyed by the ledger's column names, after the caller's column
mapping) and their 1-based row numbers; the ledger validates the records (types, ranges,
duplicates) and names the row and field of the first bad one.  What only a file can get
wrong is checked by the readers: its bytes (:mod:`cogstats.ledger._files`), its layout and
the text of CSV cells (:mod:`cogstats.ledger._csv_read`, :mod:`cogstats.ledger._cells`).
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import polars as pl

from cogstats._validation import LedgerError
from cogstats.ledger._columns import REQUIRED_COLUMNS, missing_columns_error, rename_plan
from cogstats.ledger._csv_read import csv_records
from cogstats.ledger._files import Records, check_text_file, decode, gc_off, paused_gc
from cogstats.ledger._json import JsonLimitError, _DuplicateKey, load_json, parse_json_record


def read_records(
    path: Path,
    fmt: str,
    *,
    mapping: Mapping[str, str],
    delimiter: str | None,
) -> Records:
    """Read the file's runs as records, their row numbers, and whether fact_ids is required."""
    src = str(path)
    if fmt == "parquet":
        return _parquet_records(path, src, mapping)
    if fmt == "jsonl":
        return _jsonl_stream(path, src, mapping)
    if fmt == "csv":
        return csv_records(path, src, delimiter, mapping)
    return _json_records(decode(path.read_bytes(), src), src, mapping)


def _parquet_records(path: Path, src: str, mapping: Mapping[str, str]) -> Records:
    try:
        frame = pl.read_parquet(path)
    except Exception as exc:  # polars raises several types; all mean "cannot read it"
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise LedgerError(
            f"cannot read it as Parquet ({type(exc).__name__}: {first[:200]})", source=src
        ) from None
    plan = rename_plan(frame.columns, mapping, src, "column")
    if plan:
        frame = frame.rename(plan)
    missing = [c for c in REQUIRED_COLUMNS if c not in frame.columns]
    if missing:
        raise missing_columns_error(missing, frame.columns, src, mapping)
    # rows one at a time from the (columnar) frame: never a list of every record
    return paused_gc(frame.iter_rows(named=True)), range(1, frame.height + 1), True


def jsonl_records(text: str, src: str, mapping: Mapping[str, str]) -> Records:
    records: list[dict[str, Any]] = []
    rows: list[int] = []
    for lineno, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        rec = parse_json_record(line, row=lineno, src=src)
        records.append(rec)
        rows.append(lineno)
    return rename_records(records, src, mapping), rows, False


def _jsonl_stream(path: Path, src: str, mapping: Mapping[str, str]) -> Records:
    """JSON Lines read line by line in bounded memory: the same checks, rows and messages.

    The whole file is checked as :func:`decode` checks it first (in chunks), then each
    line goes through the bounded parser as the ledger asks for it; nothing but the line
    being read is held (the ledger stores each distinct lesson id once).

    With a column mapping, a first pass parses every line (the first malformed line
    raises, as before any record is read) and gathers every key, so that the mapping is
    checked against the file's keys (:func:`rename_plan`) before the first record; the
    second pass renames each record's keys as the ledger reads it.  Memory stays one
    line; the lines are parsed twice.
    """
    check_text_file(path, src)
    rows = array("q")  # filled as the records are produced (the ledger reads it lazily)

    def lines() -> Iterator[tuple[int, dict[str, Any]]]:
        with open(path, "rb") as fh:
            for lineno, raw in enumerate(fh, start=1):
                line = raw.decode("utf-8")
                if lineno == 1 and line.startswith("\ufeff"):
                    line = line[1:]
                if not line or line.isspace():
                    continue
                yield lineno, parse_json_record(line.rstrip("\n"), row=lineno, src=src)

    def records(plan: Mapping[str, str]) -> Iterator[dict[str, Any]]:
        for lineno, rec in lines():
            rows.append(lineno)
            yield {plan.get(k, k): v for k, v in rec.items()} if plan else rec

    plan: dict[str, str] = {}
    if mapping:
        keys: dict[str, None] = {}
        with gc_off():
            for _, rec in lines():
                keys.update(dict.fromkeys(rec))
        if keys:  # (no record: nothing to map)
            plan = rename_plan(list(keys), mapping, src, "key")
    return paused_gc(records(plan)), rows, False


def json_document(text: str, src: str) -> Any:
    """Parse a whole JSON file's text (bounded); every failure a LedgerError naming the file."""
    try:
        return load_json(text)
    except JsonLimitError as exc:
        raise LedgerError(exc.message, field=exc.key, source=src) from None
    except json.JSONDecodeError as exc:
        raise LedgerError(
            f"malformed JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})", source=src
        ) from None
    except _DuplicateKey as exc:
        raise LedgerError(
            "a key appears twice in one JSON object; which one counts is ambiguous",
            field=exc.key,
            source=src,
        ) from None


def _json_records(text: str, src: str, mapping: Mapping[str, str]) -> Records:
    doc = json_document(text, src)
    if isinstance(doc, dict):
        if "runs" not in doc:
            raise LedgerError(
                "a cycgraph JSON object must hold its run outcomes under 'runs'",
                field="runs",
                source=src,
            )
        doc = doc["runs"]
    if not isinstance(doc, list):
        raise LedgerError(
            "cycgraph JSON must be a list of RunOutcome records or {'runs': [...]}",
            source=src,
        )
    for k, rec in enumerate(doc, start=1):
        if not isinstance(rec, dict):
            raise LedgerError(
                f"each run must be a JSON object; got {type(rec).__name__}", row=k, source=src
            )
    return rename_records(doc, src, mapping), list(range(1, len(doc) + 1)), False


def rename_records(
    records: list[dict[str, Any]], src: str, mapping: Mapping[str, str]
) -> list[dict[str, Any]]:
    if not mapping or not records:
        return records
    keys: dict[str, None] = {}
    for rec in records:
        keys.update(dict.fromkeys(rec))
    plan = rename_plan(list(keys), mapping, src, "key")
    return [{plan.get(k, k): v for k, v in rec.items()} for rec in records]
