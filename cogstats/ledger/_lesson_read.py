"""Reading lesson table files (``Ledger.read_lessons``): CSV, JSON Lines, JSON, Parquet.

Private: :meth:`cogstats.Ledger.read_lessons` is the door.  A lesson table file becomes a
polars frame and its 1-based row numbers; :func:`cogstats.lessons.lesson_table` validates
it.  The file-level checks (encoding, header, delimiter, the CSV list-cell rule table) are
the ledger reader's (:mod:`cogstats.ledger._read`).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import polars as pl

from cogstats._validation import LedgerError
from cogstats.ledger._cells import (
    first_python_only_number,
    infer_csv_column,
    refuse_python_only_number,
    split_list_cell,
)
from cogstats.ledger._columns import check_unique_header, rename_plan
from cogstats.ledger._csv_read import CsvRows, check_excel_sep, sniff_delimiter
from cogstats.ledger._files import decode
from cogstats.ledger._read import json_document, jsonl_records, rename_records

#: Columns of a lesson table file whose CSV cells hold lists of lesson ids.
LESSON_LIST_COLUMNS = ("consolidated_from", "supersedes")


def read_lesson_frame(
    path: Path, fmt: str, *, mapping: Mapping[str, str], delimiter: str | None
) -> tuple[pl.DataFrame, list[int]]:
    """Read a lesson table file into a frame and its 1-based row numbers.

    CSV cells of ``consolidated_from``/``supersedes`` follow the module's list-cell rule
    table (an empty cell is null: no lineage); an empty ``status`` cell is null;
    ``created_at`` and other columns take the narrowest type their cells parse as.  Lesson
    ids (``id`` and the lineage lists) are NFC-normalised, as the ledger's are.  The
    caller validates the frame (:func:`cogstats.lessons.lesson_table`).
    """
    src = str(path)
    if fmt == "parquet":
        try:
            frame = pl.read_parquet(path)
        except Exception as exc:  # polars raises several types; all mean "cannot read it"
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            raise LedgerError(
                f"cannot read it as Parquet ({type(exc).__name__}: {first[:200]})", source=src
            ) from None
        plan = rename_plan(frame.columns, mapping, src, "column")
        frame = frame.rename(plan) if plan else frame
        return _nfc_lessons(frame), list(range(1, frame.height + 1))
    text = decode(path.read_bytes(), src)
    if fmt == "csv":
        records, rows = _lesson_csv_records(text, src, delimiter, mapping)
    elif fmt == "jsonl":
        listed, line_numbers, _ = jsonl_records(text, src, mapping)
        records, rows = list(listed), list(line_numbers)
    else:
        records, rows = _lesson_json_records(text, src, mapping)
    if not records:
        return pl.DataFrame(schema={"id": pl.String, "created_at": pl.Int64}), []
    keys: dict[str, None] = {}
    for rec in records:
        keys.update(dict.fromkeys(rec))
    columns: dict[str, list[Any]] = {k: [rec.get(k) for rec in records] for k in keys}
    series = []
    for name, values in columns.items():
        numbers = all(
            isinstance(v, int | float) and not isinstance(v, bool) for v in values if v is not None
        )
        try:
            series.append(pl.Series(name, values, strict=not numbers))
        except Exception:  # mixed types in one column (JSON): name the first odd row
            kinds = [type(v).__name__ for v in values if v is not None]
            odd = next(
                (i for i, v in enumerate(values) if v is not None and type(v).__name__ != kinds[0]),
                0,
            )
            raise LedgerError(
                f"{name} mixes types ({sorted(set(kinds))}); every lesson must give it the "
                "same type",
                row=rows[odd] if odd < len(rows) else None,
                field=name,
                source=src,
            ) from None
    return _nfc_lessons(pl.DataFrame(series)), rows


def _nfc_lessons(frame: pl.DataFrame) -> pl.DataFrame:
    import unicodedata

    def nfc(value: Any) -> Any:
        return unicodedata.normalize("NFC", value) if isinstance(value, str) else value

    exprs = []
    if "id" in frame.columns and frame.schema["id"] == pl.String:
        exprs.append(pl.col("id").map_elements(nfc, return_dtype=pl.String))
    for name in LESSON_LIST_COLUMNS:
        if name in frame.columns and frame.schema[name] == pl.List(pl.String):
            exprs.append(
                pl.col(name).list.eval(pl.element().map_elements(nfc, return_dtype=pl.String))
            )
    return frame.with_columns(exprs) if exprs else frame


def _lesson_csv_records(
    text: str, src: str, delimiter: str | None, mapping: Mapping[str, str]
) -> tuple[list[dict[str, Any]], list[int]]:
    if not text.strip():
        raise LedgerError(
            "empty file: no header line (a CSV lesson table starts with a header such as "
            "id,created_at,status,consolidated_from,supersedes)",
            source=src,
        )
    check_excel_sep(text, src)
    delim = delimiter if delimiter is not None else sniff_delimiter(text, src)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delim, strict=True)
    rows_of = CsvRows(reader, src)
    it = iter(rows_of)
    header: list[str] = []
    at = 0
    for at, cells in it:
        if any(c.strip() for c in cells):
            header = [h.strip() for h in cells]
            rows_of.header = at
            break
    plan = rename_plan([h for h in header if h], mapping, src, "column")
    header = [plan.get(h, h) for h in header]
    named = [h for h in header if h]
    check_unique_header(named, src)
    raw: list[tuple[int, list[str]]] = []
    for record, cells in it:
        k = record - at
        if not any(c.strip() for c in cells):
            continue
        if len(cells) != len(header):
            raise LedgerError(
                f"has {len(cells)} fields; the header has {len(header)} (a cell holding the "
                f"delimiter {delim!r} must be quoted)",
                row=k,
                source=src,
            )
        raw.append((k, cells))
    position = {name: j for j, name in enumerate(header) if name}
    parsers = {}
    for name, j in position.items():
        if name in ("id", "status", *LESSON_LIST_COLUMNS):
            continue
        found = first_python_only_number((k, cells[j]) for k, cells in raw)
        if found is not None:
            raise refuse_python_only_number(name, *found, src)
        parsers[name] = infer_csv_column([cells[j] for _, cells in raw])
    records: list[dict[str, Any]] = []
    for k, cells in raw:
        rec: dict[str, Any] = {}
        for name, j in position.items():
            cell = cells[j]
            if name == "id":
                rec[name] = cell.strip()
            elif name == "status":
                rec[name] = cell.strip() or None
            elif name in LESSON_LIST_COLUMNS:
                rec[name] = split_list_cell(cell, name, k, src, numeric=False, nullable=True)
            else:
                rec[name] = parsers[name](cell)
        records.append(rec)
    return records, [k for k, _ in raw]


def _lesson_json_records(
    text: str, src: str, mapping: Mapping[str, str]
) -> tuple[list[dict[str, Any]], list[int]]:
    doc = json_document(text, src)
    if isinstance(doc, dict) and "lessons" in doc:
        doc = doc["lessons"]
    if not isinstance(doc, list) or not all(isinstance(rec, dict) for rec in doc):
        raise LedgerError(
            "a JSON lesson table must be a list of lesson objects or {'lessons': [...]}",
            source=src,
        )
    return rename_records(doc, src, mapping), list(range(1, len(doc) + 1))
