"""Reading and writing ledger files: JSON Lines, CSV/TSV, Parquet and cycgraph's JSON.

Private: :meth:`cogstats.Ledger.read` and :meth:`cogstats.Ledger.write` are the doors.
Each reader turns a file into *records* (plain dicts keyed by the ledger's column names,
after the caller's column mapping) and their 1-based row numbers; the ledger validates
the records (types, ranges, duplicates) and names the row and field of the first bad one.
What only a file can get wrong is checked here: its bytes (encoding, byte-order marks,
binary data), its layout (header, delimiter, quoting, field counts) and the text of CSV
cells (the list-cell rule table below).

CSV list cells (``fact_ids``, ``eligible_ids``, ``propensities``) follow one rule table,
applied to the cell with surrounding whitespace removed:

====================================  ===============================================
the cell                              read as
====================================  ===============================================
empty                                 no lessons (``fact_ids``); not logged (``null``)
                                      for ``eligible_ids``/``propensities``
starts with ``[``                     a list: JSON (``["a", "b"]``) or the Python
                                      literal pandas writes (``['a', 'b']``, parsed by
                                      ``ast.literal_eval``, never ``eval``); elements
                                      are taken as written
holds ``;``                           split on ``;`` (ids may hold spaces)
holds ``,``                           split on ``,``
anything else                         split on whitespace
====================================  ===============================================

Split pieces are stripped of surrounding whitespace and empty pieces dropped.  A
bracketed cell must be a flat list of strings (of numbers for ``propensities``).
"""

from __future__ import annotations

import ast
import codecs
import contextlib
import csv
import difflib
import gc
import io
import json
import math
import re
import tokenize
from array import array
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from operator import itemgetter, methodcaller
from pathlib import Path
from typing import Any, Literal

import polars as pl

from cogstats._validation import LedgerError, ParameterError, check_choice
from cogstats.ledger._json import (
    MAX_INT_DIGITS,
    JsonLimitError,
    _DuplicateKey,
    check_json_limits,
    load_json,
    parse_json_record,
)

REQUIRED_COLUMNS = ("run_id", "score", "fact_ids")
#: Optional list columns holding the logged injection propensities of a run: for every
#: lesson that retrieval could have injected (``eligible_ids``), the probability that it
#: was injected (``propensities``, aligned with ``eligible_ids``).
PROPENSITY_COLUMNS = ("eligible_ids", "propensities")
#: Columns whose CSV cells hold lists (see the module's rule table).
LIST_COLUMNS = ("fact_ids", *PROPENSITY_COLUMNS)
FORMATS = ("jsonl", "csv", "parquet", "cycgraph-json")
LedgerFormat = Literal["jsonl", "csv", "parquet", "cycgraph-json"]
#: suffix -> (format, the delimiter it implies for CSV)
SUFFIXES: dict[str, tuple[str, str | None]] = {
    ".jsonl": ("jsonl", None),
    ".ndjson": ("jsonl", None),
    ".csv": ("csv", None),
    ".tsv": ("csv", "\t"),
    ".parquet": ("parquet", None),
    ".pq": ("parquet", None),
    ".json": ("cycgraph-json", None),
}
#: Delimiters the CSV sniffer chooses among.
SNIFFED_DELIMITERS = (",", "\t", ";", "|")

# Names people give the required columns, for the "map it" suggestion of a missing column.
_SYNONYMS = {
    "run_id": ("run", "id", "runid", "run_number", "run_no", "run_index", "trial", "episode"),
    "score": ("reward", "fitness", "outcome", "value", "result", "quality", "grade"),
    "fact_ids": (
        "lessons",
        "lesson_ids",
        "lessons_in_prompt",
        "facts",
        "fact_id",
        "lesson_id",
        "injected",
        "lessons_used",
        "memories",
    ),
}
_KEYWORDS = {"run_id": ("run",), "score": ("score", "reward"), "fact_ids": ("lesson", "fact")}
# Magic numbers of files people feed a text reader by mistake.
_MAGIC = (
    (b"PAR1", "a Parquet file: read it with format='parquet' (or give it a .parquet suffix)"),
    (b"\x1f\x8b", "gzip-compressed: decompress it first"),
    (b"PK\x03\x04", "a zip archive (an .xlsx workbook?): export the sheet as CSV (UTF-8)"),
)


# ---------------------------------------------------------------------- parameters
def resolve_format(path: Path, fmt: str | None) -> tuple[str, str | None]:
    """Return the format of ``path`` and the delimiter its suffix implies (``.tsv``: tab)."""
    suffix = path.suffix.lower()
    implied = SUFFIXES.get(suffix, (None, None))
    if fmt is not None:
        fmt = check_choice("format", fmt, FORMATS)
        return fmt, implied[1] if implied[0] == fmt else None
    if implied[0] is None:
        raise ParameterError(
            f"cannot infer the ledger format from suffix {suffix!r} of {path}; pass "
            f"format= one of {list(FORMATS)} or use a suffix in {sorted(SUFFIXES)}"
        )
    return implied[0], implied[1]


def check_columns(columns: Any) -> dict[str, str]:
    """Validate a column mapping (ledger name -> the file's name); returns a plain dict."""
    if columns is None:
        return {}
    if not isinstance(columns, Mapping):
        raise ParameterError(
            "columns must be a mapping from ledger column names to the file's column names, "
            f"e.g. {{'run_id': 'run', 'fact_ids': 'lessons_in_prompt'}}; got {columns!r}"
        )
    out: dict[str, str] = {}
    onto: dict[str, str] = {}
    for name, source in columns.items():
        if not isinstance(name, str) or not name.strip():
            raise ParameterError(f"columns: keys must be non-empty column names; got {name!r}")
        if not isinstance(source, str) or not source.strip():
            raise ParameterError(
                f"columns: {name!r} must map to a non-empty column name of the file; got {source!r}"
            )
        if source in onto:
            raise ParameterError(
                f"columns maps both {onto[source]!r} and {name!r} onto the file's column "
                f"{source!r}; one column can be only one of them"
            )
        onto[source] = name
        out[name] = source
    return out


def check_delimiter(delimiter: Any, fmt: str) -> str | None:
    """Validate ``delimiter=``: one character, for CSV only."""
    if delimiter is None:
        return None
    if fmt != "csv":
        raise ParameterError(
            f"delimiter applies to CSV/TSV ledgers only; got delimiter={delimiter!r} with "
            f"format {fmt!r}"
        )
    if not isinstance(delimiter, str) or len(delimiter) != 1 or delimiter in '"\r\n':
        raise ParameterError(
            "delimiter must be one character other than a quote or a line break, e.g. ',', "
            f"'\\t', ';' or '|'; got {delimiter!r}"
        )
    return delimiter


# ---------------------------------------------------------------------- bytes -> text
def decode(data: bytes, src: str) -> str:
    """UTF-8 text of a ledger file, without a byte-order mark; clear errors for the rest."""
    for magic, what in _MAGIC:
        if data.startswith(magic):
            raise LedgerError(f"this is not a text ledger but {what}", source=src)
    if data.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        raise LedgerError(_utf16_message("UTF-32"), source=src)
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise LedgerError(_utf16_message("UTF-16"), source=src)
    start = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    try:
        text = data[start:].decode("utf-8")
    except UnicodeDecodeError as exc:
        offset = start + exc.start
        line = data.count(b"\n", 0, offset) + 1
        bad = data[offset : offset + 4]
        raise LedgerError(
            f"not UTF-8 text: byte offset {offset} (line {line}) holds {bad!r}; cogstats "
            "reads UTF-8 ledgers. Re-save the file as UTF-8 (for a latin-1/cp1252 file: "
            "iconv -f cp1252 -t utf-8, or pandas' to_csv(encoding='utf-8'))",
            source=src,
        ) from None
    nul = text.find("\0")
    if nul >= 0:
        offset = start + len(text[:nul].encode("utf-8"))
        line = text.count("\n", 0, nul) + 1
        hint = (
            " (UTF-16 text has one in every other byte: re-save it as UTF-8)"
            if text.count("\0") * 3 >= len(text)
            else ""
        )
        raise LedgerError(
            f"binary data: a NUL byte at byte offset {offset} (line {line}); this is not a "
            f"text ledger{hint}",
            source=src,
        )
    return text


def _utf16_message(kind: str) -> str:
    return (
        f"the file is {kind} text (it starts with a {kind} byte-order mark, byte offset 0); "
        "cogstats reads UTF-8 ledgers: re-save it as UTF-8 (e.g. iconv -f "
        f"{kind.lower()} -t utf-8)"
    )


# ---------------------------------------------------------------------- column mapping
def rename_plan(
    names: Sequence[str], mapping: Mapping[str, str], src: str, what: str
) -> dict[str, str]:
    """Map the file's names to the ledger's, after checking ``mapping`` against ``names``."""
    plan: dict[str, str] = {}
    present = set(names)
    for name, source in mapping.items():
        if source not in present:
            raise ParameterError(
                f"columns maps {name!r} to {source!r}, but {src} has no {what} {source!r}"
                f"{_near(source, names)}; it has {list(names)}"
            )
        plan[source] = name
    renamed_away = set(plan) - set(plan.values())
    for source, name in plan.items():
        if name in present and name not in renamed_away and name != source:
            raise ParameterError(
                f"columns maps {name!r} to {source!r}, but {src} also has a {what} named "
                f"{name!r}; map that one to another name too, or drop it"
            )
    return plan


def _near(name: str, names: Sequence[str]) -> str:
    match = difflib.get_close_matches(name, list(names), n=1, cutoff=0.6)
    return f" (did you mean {match[0]!r}?)" if match else ""


def missing_columns_error(
    missing: Sequence[str], available: Sequence[str], src: str | None, mapping: Mapping[str, str]
) -> LedgerError:
    """Build the error for required columns a file lacks, with the mapping that would fix it."""
    taken = set(mapping.values()) | set(REQUIRED_COLUMNS)
    pairs: list[tuple[str, str]] = []
    for name in missing:
        guess = guess_source(name, [a for a in available if a not in taken])
        pairs.append((name, guess or "<column>"))
        if guess:
            taken.add(guess)
    python = ", ".join(f"{k!r}: {v!r}" for k, v in [*mapping.items(), *pairs])
    cli = " ".join(f"--column {k}={v}" for k, v in pairs)
    names = "column" if len(missing) == 1 else "columns"
    hint = _delimiter_hint(available)
    return LedgerError(
        f"missing required {names} {list(missing)}; the file has columns {list(available)}"
        f"{hint}. If the file names them differently, map them: "
        f"Ledger.read(path, columns={{{python}}}), or on the command line {cli}",
        field=missing[0],
        source=src,
    )


def guess_source(name: str, candidates: Sequence[str]) -> str | None:
    lowered = [(c, c.strip().lower()) for c in candidates]
    for c, low in lowered:
        if low in _SYNONYMS.get(name, ()):
            return c
    for c, low in lowered:
        if any(k in low for k in _KEYWORDS.get(name, ())):
            return c
    match = difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    return match[0] if match else None


def _delimiter_hint(available: Sequence[str]) -> str:
    if len(available) != 1:
        return ""
    for d in SNIFFED_DELIMITERS:
        if d in available[0]:
            return f" (one column: is the file separated by {d!r}? pass delimiter={d!r})"
    return ""


# ---------------------------------------------------------------------- list cells
def split_list_cell(
    text: str, field: str, row: int, src: str | None, *, numeric: bool, nullable: bool
) -> list[Any] | None:
    """One CSV list cell by the module's rule table (``LedgerError`` naming row and field)."""
    s = text.strip()
    if not s:
        return None if nullable else []
    if s.startswith("["):
        return _bracketed(s, field, row, src, numeric=numeric)
    if ";" in s:
        pieces = [t.strip() for t in s.split(";")]
    elif "," in s:
        pieces = [t.strip() for t in s.split(",")]
    else:
        pieces = s.split()
    pieces = [t for t in pieces if t]
    if not numeric:
        return pieces
    out: list[Any] = []
    for t in pieces:
        try:
            out.append(float(t))
        except ValueError:
            raise LedgerError(
                f"{field} must hold numbers; {t!r} in {text!r} is not one",
                row=row,
                field=field,
                source=src,
            ) from None
    return out


def _bracketed(s: str, field: str, row: int, src: str | None, *, numeric: bool) -> list[Any]:
    kind = "numbers" if numeric else "strings"
    example = "[0.5, 0.25]" if numeric else "[\"a\", \"b\"] or ['a', 'b']"
    literal = False
    try:
        check_json_limits(s, max_depth=8)  # the Python literal nests as the JSON would
    except JsonLimitError as exc:
        raise LedgerError(
            f"the cell {_short(s)} is {exc.message.split(' at character')[0]}; a list cell "
            f"holds a flat list of {kind}, such as {example}",
            row=row,
            field=field,
            source=src,
        ) from None
    try:
        value = json.loads(s)
    except ValueError:
        literal = True
        try:
            value = ast.literal_eval(s)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            raise LedgerError(
                f"the cell {_short(s)} starts with '[' but is neither a JSON list nor a Python "
                f"list literal of {kind}, such as {example}",
                row=row,
                field=field,
                source=src,
            ) from None
    flat_strings = isinstance(value, list) and all(isinstance(v, str) for v in value)
    if literal and flat_strings and _adjacent_strings(s, value):
        raise LedgerError(
            f"the cell {_short(s)} holds strings with no comma between them (Python "
            "joins them into one; numpy prints arrays that way): write "
            f"{example}",
            row=row,
            field=field,
            source=src,
        )
    if not isinstance(value, list):
        raise LedgerError(
            f"the cell {_short(s)} must be a list of {kind}, such as {example}",
            row=row,
            field=field,
            source=src,
        )
    for k, v in enumerate(value):
        ok = (
            isinstance(v, int | float) and not isinstance(v, bool)
            if numeric
            else isinstance(v, str)
        )
        if not ok:
            raise LedgerError(
                f"{field}[{k}] must be a {'number' if numeric else 'string lesson id'}; got "
                f"{v!r} in the cell {_short(s)}",
                row=row,
                field=field,
                source=src,
            )
    return [float(v) for v in value] if numeric else value


def _adjacent_strings(s: str, value: list[Any]) -> bool:
    """Whether a Python literal joined adjacent strings (``['a' 'b']`` is ``['ab']``)."""
    try:
        tokens = [
            t
            for t in tokenize.generate_tokens(io.StringIO(s).readline)
            if t.type == tokenize.STRING
        ]
    except (tokenize.TokenError, SyntaxError):  # pragma: no cover - literal_eval passed
        return True
    return len(tokens) != len(value)


def _short(s: str) -> str:
    return repr(s if len(s) <= 60 else s[:57] + "...")


# ---------------------------------------------------------------------- readers
Records = tuple[Iterable[dict[str, Any]], Sequence[int], bool]
#: Bytes read at a time by the bounded-memory JSON Lines reader's checking pass.
CHUNK_BYTES = 1 << 22


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
    return _paused_gc(frame.iter_rows(named=True)), range(1, frame.height + 1), True


@contextlib.contextmanager
def _gc_off() -> Iterator[None]:
    """Pause the cyclic garbage collector in a ``with`` block (see :func:`_paused_gc`)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def _paused_gc(records: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Yield ``records`` with the cyclic garbage collector paused until they are read.

    A ledger read builds millions of lists that stay alive; each full collection would
    walk them all (quadratic in the file; a fifth of a 200 MB CSV read).  The readers'
    records form no reference cycles, so nothing is left for the collector to find.
    """
    with _gc_off():
        yield from records


def _jsonl_records(text: str, src: str, mapping: Mapping[str, str]) -> Records:
    records: list[dict[str, Any]] = []
    rows: list[int] = []
    for lineno, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        rec = parse_json_record(line, row=lineno, src=src)
        records.append(rec)
        rows.append(lineno)
    return _rename_records(records, src, mapping), rows, False


def check_text_file(path: Path, src: str) -> bool:
    """:func:`decode`'s checks and messages, on a file read in line-aligned chunks.

    Returns whether the file is *plain* for the CSV reader: no double quote, no carriage
    return but in CRLF line ends, and no line over half the csv module's field size
    limit (each half-limit window of bytes holds a line break).  A plain file's records
    are its lines split on the delimiter, exactly as ``csv.reader`` splits them
    (:func:`_csv_reader`).
    """
    refused = (
        *(m for m, _ in _MAGIC),
        codecs.BOM_UTF16_LE,
        codecs.BOM_UTF16_BE,
        codecs.BOM_UTF32_BE,
    )
    offset = lines = nuls = chars = 0
    first_nul: tuple[int, int] | None = None
    plain = True
    window = csv.field_size_limit() // 2
    with open(path, "rb") as fh:
        while chunk := fh.read(CHUNK_BYTES):
            chunk += fh.readline()  # whole lines: no character spans two chunks
            plain = plain and b'"' not in chunk
            if plain and b"\r" in chunk:  # CRLF line ends only
                plain = chunk.count(b"\r") == chunk.count(b"\r\n")
            if plain and len(chunk) > window:
                ends = range(window, len(chunk) + 1, window)  # full windows only
                plain = all(chunk.find(b"\n", end - window, end) >= 0 for end in ends)
            if offset == 0 and chunk.startswith(refused):
                decode(chunk[:4], src)  # raises: a magic number or a UTF-16/32 mark
            try:
                chars += len(chunk.decode("utf-8"))
            except UnicodeDecodeError as exc:
                at, line = offset + exc.start, lines + chunk.count(b"\n", 0, exc.start) + 1
                raise LedgerError(
                    f"not UTF-8 text: byte offset {at} (line {line}) holds "
                    f"{chunk[exc.start : exc.start + 4]!r}; cogstats reads UTF-8 ledgers. "
                    "Re-save the file as UTF-8 (for a latin-1/cp1252 file: iconv -f cp1252 "
                    "-t utf-8, or pandas' to_csv(encoding='utf-8'))",
                    source=src,
                ) from None
            nul = chunk.find(b"\0")
            if nul >= 0 and first_nul is None:
                first_nul = (offset + nul, lines + chunk.count(b"\n", 0, nul) + 1)
            nuls += chunk.count(b"\0")
            lines += chunk.count(b"\n")
            offset += len(chunk)
    if first_nul is not None:
        hint = " (UTF-16 text has one in every other byte: re-save it as UTF-8)"
        raise LedgerError(
            f"binary data: a NUL byte at byte offset {first_nul[0]} (line {first_nul[1]}); "
            f"this is not a text ledger{hint if nuls * 3 >= chars else ''}",
            source=src,
        )
    return plain


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
        with _gc_off():
            for _, rec in lines():
                keys.update(dict.fromkeys(rec))
        if keys:  # (no record: nothing to map)
            plan = rename_plan(list(keys), mapping, src, "key")
    return _paused_gc(records(plan)), rows, False


def _json_records(text: str, src: str, mapping: Mapping[str, str]) -> Records:
    try:
        doc = load_json(text)
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
    return _rename_records(doc, src, mapping), list(range(1, len(doc) + 1)), False


def _rename_records(
    records: list[dict[str, Any]], src: str, mapping: Mapping[str, str]
) -> list[dict[str, Any]]:
    if not mapping or not records:
        return records
    keys: dict[str, None] = {}
    for rec in records:
        keys.update(dict.fromkeys(rec))
    plan = rename_plan(list(keys), mapping, src, "key")
    return [{plan.get(k, k): v for k, v in rec.items()} for rec in records]


class _CsvRows:
    """(record number, cells) of a csv reader; csv errors become LedgerErrors.

    Record numbers count from 1 at the first record of the file; ``header`` (set by the
    caller) is the record number of the header, so data row ``k`` is record ``header + k``.
    """

    def __init__(self, reader: Any, src: str) -> None:
        self.reader = reader
        self.src = src
        self.header = 0

    def __iter__(self) -> Iterator[tuple[int, list[str]]]:
        k = 0
        while True:
            try:
                cells = next(self.reader)
            except StopIteration:
                return
            except csv.Error as exc:
                raise self.error(k + 1, exc) from None
            k += 1
            yield k, cells

    def error(self, record: int, exc: csv.Error) -> LedgerError:
        """Return the LedgerError of a csv error at record number ``record``."""
        return LedgerError(
            f"malformed CSV at line {self.reader.line_num} ({exc}); quote cells that "
            "hold the delimiter, a quote or a line break",
            row=record - self.header if self.header else None,
            source=self.src,
        )


_EXCEL_SEP = re.compile(r'^"?sep=(.?)"?[,;\t|]*$', re.IGNORECASE)


def check_excel_sep(text: str, src: str) -> None:
    r"""Refuse Excel's ``sep=;`` first line (a delimiter hint, not a header), saying so.

    Examples
    --------
    >>> try:
    ...     check_excel_sep("sep=;\nrun_id;score;fact_ids\n", "runs.csv")
    ... except LedgerError as exc:
    ...     print(exc.message[:48])
    the first line 'sep=;' is Excel's delimiter hint
    """
    first = next((line for line in text.split("\n", 8) if line.strip()), "").strip()
    m = _EXCEL_SEP.match(first)
    if m is None:
        return
    sep = m.group(1)
    how = (
        f" and read the file with delimiter={sep!r} (on the command line --delimiter {sep!r})"
        if sep
        else ""
    )
    raise LedgerError(
        f"the first line {first!r} is Excel's delimiter hint, not a header: delete that line{how}",
        source=src,
    )


def sniff_delimiter(text: str, src: str) -> str:
    r"""Return the header line's delimiter: csv.Sniffer among ``, \t ; |``, or an error."""
    header = next((line for line in text.split("\n") if line.strip()), "").rstrip("\r")
    unquoted = "".join(header.split('"')[0::2])  # outside double quotes
    present = [d for d in SNIFFED_DELIMITERS if d in unquoted]
    if len(present) > 1:
        raise LedgerError(
            f"cannot tell the delimiter: the header line {_short(header)} holds "
            f"{' and '.join(repr(d) for d in present)}; pass delimiter= (on the command line "
            "--delimiter)",
            source=src,
        )
    try:
        found = csv.Sniffer().sniff(header, delimiters="".join(SNIFFED_DELIMITERS)).delimiter
    except csv.Error:
        found = ""
    if not present or found != present[0]:
        raise LedgerError(
            f"cannot tell the delimiter of the header line {_short(header)} (none of "
            f"{list(SNIFFED_DELIMITERS)} separates it); pass delimiter= (on the command line "
            "--delimiter)",
            source=src,
        )
    return found


def _csv_head(path: Path) -> str:
    """Return the first lines: enough for the empty-file, ``sep=`` and delimiter checks.

    The lines up to the first non-blank one when it is among the first 8, else up to the
    second non-blank line (or the end): :func:`check_excel_sep` and
    :func:`sniff_delimiter` decide on this text exactly as on the whole file.
    """
    lines: list[str] = []
    filled = 0
    with open(path, encoding="utf-8-sig", newline="\n") as fh:
        for line in fh:
            lines.append(line)
            if line.strip():
                filled += 1
                if len(lines) <= 8 or filled >= 2:
                    break
    return "".join(lines)


class _CsvLayout:
    """What the first pass over a CSV ledger learns: header, columns, covariate types."""

    def __init__(self, header: list[str], at: int, delim: str, plain: bool = False) -> None:
        self.header = header
        self.at = at  # the header's record number
        self.delim = delim
        self.plain = plain  # the file's records are its lines split (see _csv_reader)
        self.position = {name: j for j, name in enumerate(header) if name}
        self.covariates = [
            h for h in self.position if h not in REQUIRED_COLUMNS and h not in LIST_COLUMNS
        ]
        # per covariate: [every present cell parses as int, as float, is a boolean, any
        # present]; the first cell holding an integer too long to convert
        self.types = {name: [True, True, True, False] for name in self.covariates}
        self.too_long: dict[str, tuple[int, str]] = {}
        # per list column: the first row split on ';', the first cell split on whitespace
        # into several ids, and how many cells are
        self.splits: dict[str, list[Any]] = {
            n: [None, None, 0] for n in ("fact_ids", "eligible_ids") if n in self.position
        }

    def see_rows(
        self, block: list[list[str]], k0: int, width: int, unnamed: list[int], src: str
    ) -> None:
        """Check and learn from data rows ``k0, k0 + 1, ...`` as :meth:`see` does, in C loops.

        The common block (every row of the header's width, a first cell that is not
        blank, nothing under an unnamed column) is read a column at a time (``map`` over
        the cells); any other block goes row by row, so that its first bad row raises the
        error it always did.
        """
        if not block:
            return
        if (
            set(map(len, block)) != {width}
            or not all(map(str.strip, map(itemgetter(0), block)))
            or any(any(map(str.strip, map(itemgetter(j), block))) for j in unnamed)
        ):
            for b, cells in enumerate(block):
                if _blank(cells):
                    continue  # blank lines (and rows of empty cells) hold no run
                _check_row(cells, k0 + b, width, unnamed, self.delim, src)
                self.see(k0 + b, cells)
            return
        for name in self.covariates:
            col = list(map(itemgetter(self.position[name]), block))
            if name not in self.too_long and max(map(len, col)) > MAX_INT_DIGITS:
                b = next(b for b, c in enumerate(col) if len(c) > MAX_INT_DIGITS)
                self.too_long[name] = (k0 + b, col[b])
            present = list(filter(None, map(str.strip, col)))
            if not present:
                continue
            kinds = self.types[name]
            kinds[3] = True
            kinds[0] = kinds[0] and _all_parse(int, present)
            kinds[1] = kinds[1] and _all_parse(float, present)
            kinds[2] = kinds[2] and all(map(_BOOL_WORDS.__contains__, map(str.lower, present)))
        for name, split in self.splits.items():
            col = list(map(itemgetter(self.position[name]), block))
            joined = "\n".join(col)
            if "[" in joined or ";" in joined or "," in joined:
                for b, cells in enumerate(block):  # the rule table, row by row
                    self._see_split(k0 + b, name, cells[self.position[name]])
                continue
            stripped = list(map(str.strip, col))  # each split on whitespace
            pieces = list(map(len, map(methodcaller("split", None, 1), stripped)))
            several = pieces.count(2)
            if several:
                if split[1] is None:
                    b = pieces.index(2)
                    split[1] = (k0 + b, stripped[b])
                split[2] += several

    def see(self, k: int, cells: list[str]) -> None:
        """Learn from data row ``k`` (types, long integers, list-cell splits)."""
        for name in self.covariates:
            cell = cells[self.position[name]]
            if len(cell) > MAX_INT_DIGITS and name not in self.too_long:
                self.too_long[name] = (k, cell)
            v = cell.strip()
            if not v:
                continue
            kinds = self.types[name]
            kinds[3] = True
            if kinds[0]:
                try:
                    int(v)
                except ValueError:
                    kinds[0] = False
            if kinds[1]:
                try:
                    float(v)
                except ValueError:
                    kinds[1] = False
            if kinds[2] and v.lower() not in _BOOL_WORDS:
                kinds[2] = False
        for name in self.splits:
            self._see_split(k, name, cells[self.position[name]])

    def _see_split(self, k: int, name: str, cell: str) -> None:
        split = self.splits[name]
        text = cell.strip()
        if not text or text.startswith("["):
            return
        if ";" in text:
            if split[0] is None:
                split[0] = k
        elif "," not in text and len(text.split(None, 1)) > 1:
            if split[1] is None:
                split[1] = (k, text)
            split[2] += 1

    def parsers(self, src: str) -> dict[str, Callable[[str], Any]]:
        """Each covariate's parser (:func:`infer_csv_column`'s choice), after the checks."""
        for name in self.covariates:  # column by column, as check_csv_numbers runs
            if name in self.too_long:
                check_csv_numbers(name, [self.too_long[name]], src)
        out: dict[str, Callable[[str], Any]] = {}
        for name in self.covariates:
            ints, floats, bools, present = self.types[name]
            kind = (
                "int"
                if present and ints
                else "float"
                if present and floats
                else "bool"
                if present and bools
                else "str"
            )
            out[name] = _CSV_PARSERS[kind]
        return out


_BOOL_WORDS = frozenset(("true", "false"))
#: data rows the first pass over a CSV ledger checks at a time
_CSV_BLOCK = 8192


def _all_parse(fn: Callable[[str], Any], cells: list[str]) -> bool:
    """Whether ``fn`` converts every cell (``int`` or ``float``; a C loop)."""
    try:
        deque(map(fn, cells), maxlen=0)
    except ValueError:
        return False
    return True


_CSV_PARSERS: dict[str, Callable[[str], Any]] = {
    "int": lambda text: int(text) if text.strip() else None,
    "float": lambda text: float(text) if text.strip() else None,
    "bool": lambda text: text.strip().lower() == "true" if text.strip() else None,
    "str": lambda text: text if text.strip() else None,
}


def _blank(cells: list[str]) -> bool:
    """Whether a CSV row holds no run (every cell empty or blank)."""
    return not (cells and cells[0].strip()) and not any(c.strip() for c in cells)


def _check_row(
    cells: list[str], k: int, width: int, unnamed: list[int], delim: str, src: str
) -> None:
    """Refuse a data row of another width, or with a value under an unnamed column."""
    if len(cells) != width:
        raise LedgerError(
            f"has {len(cells)} fields; the header has {width} (a cell holding the "
            f"delimiter {delim!r} must be quoted)",
            row=k,
            source=src,
        )
    for j in unnamed:
        if cells[j].strip():
            raise LedgerError(
                f"column {j + 1} has no name in the header but holds {cells[j]!r}; "
                "name it in the header",
                row=k,
                source=src,
            )


def _csv_reader(path: Path, src: str, delim: str, plain: bool) -> tuple[Any, _CsvRows]:
    r"""Open the file; return it and its records (a plain file's: its lines split).

    Without a quote, ``csv.reader`` ends a record at each line end (``\n`` or
    ``\r\n``; no other carriage return) and splits it at each delimiter, nothing else
    (no field reaches the size limit, :func:`check_text_file`); ``str.split`` does the
    same in 60% of the time.  An empty line is ``[""]`` here and ``[]`` there: both are
    blank rows.
    """
    fh = open(path, encoding="utf-8-sig", newline="")  # noqa: SIM115  (closed by the caller)
    if plain:
        lines = map(methodcaller("rstrip", "\r\n"), fh)  # (one line end ends each line)
        return fh, _CsvRows(map(methodcaller("split", delim), lines), src)
    return fh, _CsvRows(csv.reader(fh, delimiter=delim, strict=True), src)


def _csv_header(rows_of: _CsvRows) -> tuple[list[str], int]:
    """Read up to the header (the first non-blank record): its cells and record number."""
    for at, cells in rows_of:
        if any(c.strip() for c in cells):
            rows_of.header = at
            return [h.strip() for h in cells], at
    return [], 0


def csv_records(path: Path, src: str, delimiter: str | None, mapping: Mapping[str, str]) -> Records:
    """Read a CSV ledger's runs in two streamed passes (memory: one row at a time).

    The first pass checks the layout of every row (field counts, unnamed columns), the
    long integers, and learns each covariate's type (the narrowest that every cell
    parses as) and how list cells split; the second produces the records as the ledger
    asks for them.  The file is never held whole.
    """
    plain = check_text_file(path, src)
    head = _csv_head(path)
    if not head.strip():
        raise LedgerError(
            "empty file: no header line (a CSV ledger starts with a header such as "
            "run_id,score,fact_ids)",
            source=src,
        )
    check_excel_sep(head, src)
    delim = delimiter if delimiter is not None else sniff_delimiter(head, src)
    fh, records_of = _csv_reader(path, src, delim, plain)
    with fh:
        header, at = _csv_header(records_of)
        plan = rename_plan([h for h in header if h], mapping, src, "column")
        header = [plan.get(h, h) for h in header]
        named = [h for h in header if h]
        missing = [c for c in REQUIRED_COLUMNS if c not in named]
        if missing:
            raise missing_columns_error(missing, [h for h in named], src, mapping)
        dup = sorted({h for h in named if named.count(h) > 1})
        if dup:
            raise LedgerError(f"duplicate column(s) {dup} in the header", source=src)
        layout = _CsvLayout(header, at, delim, plain)
        width = len(header)
        unnamed = [j for j, name in enumerate(header) if not name]
        record = at  # the csv reader's records before the block (no wrapper per row)
        block: list[list[str]] = []
        try:
            for cells in records_of.reader:
                block.append(cells)
                if len(block) == _CSV_BLOCK:  # data rows count from 1 after the header
                    layout.see_rows(block, record - at + 1, width, unnamed, src)
                    record += len(block)
                    block = []
        except csv.Error as exc:  # the rows before it are checked first
            layout.see_rows(block, record - at + 1, width, unnamed, src)
            raise records_of.error(record + len(block) + 1, exc) from None
        layout.see_rows(block, record - at + 1, width, unnamed, src)
        del block
    parsers = layout.parsers(src)
    for name, (semi, first, spaced) in layout.splits.items():
        _warn_mixed_splits(name, semi, first, spaced, src)
    rows = array("q")  # filled as the records are produced (the ledger reads it lazily)
    return _paused_gc(_csv_rows(path, src, layout, parsers, rows)), rows, True


def _csv_rows(
    path: Path,
    src: str,
    layout: _CsvLayout,
    parsers: Mapping[str, Callable[[str], Any]],
    rows: array[int],
) -> Iterator[dict[str, Any]]:
    """Yield one record per data row (the second pass).

    The cells are converted in the header's order (a row with two bad cells names the
    first); a score that ``float`` reads as a finite number and a ``fact_ids`` cell of
    whitespace-separated ids (no ``[``, ``;`` or ``,``) take a short path to the values
    :func:`_parse_score` and :func:`split_list_cell` return.
    """
    plan: list[tuple[str, int, int, Callable[[str], Any]]] = []
    for name, j in layout.position.items():
        code = {"run_id": 0, "score": 1, "fact_ids": 2}.get(name, 3 if name in LIST_COLUMNS else 4)
        plan.append((name, j, code, parsers.get(name, str)))
    fh, records_of = _csv_reader(path, src, layout.delim, layout.plain)
    with fh:
        _, at = _csv_header(records_of)
        record = at
        try:
            for cells in records_of.reader:
                record += 1
                if not (cells and cells[0].strip()) and _blank(cells):
                    continue
                k = record - at
                rec: dict[str, Any] = {}
                for name, j, code, parse in plan:
                    cell = cells[j]
                    if code == 0:
                        rec[name] = cell.strip()
                    elif code == 1:
                        try:
                            score = float(cell)  # (float strips what str.strip strips)
                        except ValueError:
                            score = math.nan
                        rec[name] = score if score - score == 0.0 else _parse_score(cell, k, src)
                    elif code == 2:
                        text = cell.strip()
                        if "[" in text or ";" in text or "," in text:
                            rec[name] = split_list_cell(
                                cell, name, k, src, numeric=False, nullable=False
                            )
                        else:
                            rec[name] = text.split()
                    elif code == 3:
                        rec[name] = split_list_cell(
                            cell, name, k, src, numeric=name == "propensities", nullable=True
                        )
                    else:
                        rec[name] = parse(cell)
                rows.append(k)
                yield rec
        except csv.Error as exc:  # (the first pass read the same records)
            raise records_of.error(record + 1, exc) from None


def _warn_mixed_splits(
    name: str, semi: int | None, first: tuple[int, str] | None, spaced: int, src: str
) -> None:
    """Warn when a column splits some cells on ``;`` and others on whitespace.

    A file that joins ids with ``;`` may hold ids with spaces; a cell of such a file with a
    single id (no ``;``) is split on whitespace by the rule table, which is rarely meant.
    ``semi`` is the first row split on ``;``, ``first`` the first cell split on whitespace
    into several ids (row, text), ``spaced`` how many such cells there are.
    """
    if semi is None or first is None:
        return
    import warnings

    from cogstats._validation import LedgerWarning

    k, text = first
    more = f"; {spaced - 1} more row(s) alike" if spaced > 1 else ""
    warnings.warn(
        LedgerWarning(
            f"{name} cells of this file are split on ';' (first at row {semi}), but this one "
            f"holds no ';' and was split on whitespace into {text.split()!r}; if {text!r} is "
            f"one lesson, end the cell with ';' ({text + ';'!r}) or write JSON lists{more}",
            row=k,
            field=name,
            source=src,
        ),
        stacklevel=4,
    )


def _parse_score(cell: str, row: int, src: str) -> float:
    text = cell.strip()
    try:
        value = float(text)
    except ValueError:
        value = None
    if value is not None and (math.isfinite(value) or text.lower().lstrip("+-") in _INF_NAN):
        return value
    if value is not None or len(text) > 60:  # an overflowing literal: name it by its size
        raise LedgerError(
            f"score must be a number in [0, 1]; got {_short(text)} ({len(text)} characters)",
            row=row,
            field="score",
            source=src,
        )
    try:
        return float(text)
    except ValueError:
        what = "empty" if not text else repr(text)
        raise LedgerError(
            f"score must be a number in [0, 1]; got {what}",
            row=row,
            field="score",
            source=src,
        ) from None


_INF_NAN = ("inf", "infinity", "nan")


def check_csv_numbers(name: str, cells: Sequence[tuple[int, str]], src: str | None) -> None:
    """Refuse a covariate cell holding an integer of more than :data:`MAX_INT_DIGITS` digits."""
    for k, cell in cells:
        if len(cell) > MAX_INT_DIGITS:
            text = cell.strip().lstrip("+-").replace("_", "")
            if len(text) > MAX_INT_DIGITS and text.isdigit():
                raise LedgerError(
                    f"an integer of {len(text)} digits (more than {MAX_INT_DIGITS}: beyond "
                    "any covariate a ledger holds)",
                    row=k,
                    field=name,
                    source=src,
                )


def infer_csv_column(cells: list[str]) -> Callable[[str], Any]:
    """Pick the narrowest type every non-empty cell parses as: int, float, bool, str.

    Returns the parser of one cell (an empty cell is None).

    Examples
    --------
    >>> parse = infer_csv_column(["1", " 2", ""])
    >>> parse("3"), parse("")
    (3, None)
    >>> infer_csv_column(["1", "2.5"])("2.5")
    2.5
    """
    present = [v for v in (c.strip() for c in cells) if v]

    def all_parse(fn: Callable[[str], Any]) -> bool:
        try:
            for v in present:
                fn(v)
        except ValueError:
            return False
        return True

    if present and all_parse(int):
        return lambda text: int(text) if text.strip() else None
    if present and all_parse(float):
        return lambda text: float(text) if text.strip() else None
    if present and all(v.lower() in ("true", "false") for v in present):
        return lambda text: text.strip().lower() == "true" if text.strip() else None
    return lambda text: text if text.strip() else None
