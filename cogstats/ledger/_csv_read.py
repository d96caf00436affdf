"""Reading a CSV/TSV ledger in two streamed passes (memory: one row at a time).

The first pass checks the layout (header, delimiter, quoting, field counts) and learns
each covariate's type and how list cells split; the second produces the records as the
ledger asks for them.  A cell's text is read by :mod:`cogstats.ledger._cells`.
"""

from __future__ import annotations

import csv
import itertools
import math
import re
from array import array
from collections.abc import Callable, Iterator, Mapping
from operator import itemgetter, methodcaller
from pathlib import Path
from typing import Any

from cogstats._validation import LedgerError
from cogstats.ledger._cells import (
    BOOL_WORDS,
    CSV_PARSERS,
    all_parse,
    check_csv_numbers,
    first_python_only_number,
    parse_score,
    python_only_number,
    refuse_python_only_number,
    short_text,
    split_list_cell,
)
from cogstats.ledger._columns import (
    LIST_COLUMNS,
    REQUIRED_COLUMNS,
    SNIFFED_DELIMITERS,
    check_unique_header,
    missing_columns_error,
    rename_plan,
)
from cogstats.ledger._files import Records, check_text_file, paused_gc
from cogstats.ledger._json import MAX_INT_DIGITS


class CsvRows:
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
            f"cannot tell the delimiter: the header line {short_text(header)} holds "
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
            f"cannot tell the delimiter of the header line {short_text(header)} (none of "
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
        # per covariate: the first cell only Python reads as a number ('1_0', '\uff11')
        self.odd_numbers: dict[str, tuple[int, str]] = {}
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
            joined = "".join(present)
            if (not joined.isascii() or "_" in joined) and name not in self.odd_numbers:
                found = first_python_only_number(zip(itertools.count(k0), col))
                if found is not None:
                    self.odd_numbers[name] = found
            kinds = self.types[name]
            kinds[3] = True
            kinds[0] = kinds[0] and all_parse(int, present)
            kinds[1] = kinds[1] and all_parse(float, present)
            kinds[2] = kinds[2] and all(map(BOOL_WORDS.__contains__, map(str.lower, present)))
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
            odd = not v.isascii() or "_" in v
            if odd and name not in self.odd_numbers and python_only_number(v):
                self.odd_numbers[name] = (k, cell)
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
            if kinds[2] and v.lower() not in BOOL_WORDS:
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
        if self.odd_numbers:  # the first row holding one, whichever its column
            name, (k, cell) = min(self.odd_numbers.items(), key=lambda item: item[1][0])
            raise refuse_python_only_number(name, k, cell, src)
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
            out[name] = CSV_PARSERS[kind]
        return out


#: data rows the first pass over a CSV ledger checks at a time
_CSV_BLOCK = 8192


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


def _csv_reader(path: Path, src: str, delim: str, plain: bool) -> tuple[Any, CsvRows]:
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
        return fh, CsvRows(map(methodcaller("split", delim), lines), src)
    return fh, CsvRows(csv.reader(fh, delimiter=delim, strict=True), src)


def _csv_header(rows_of: CsvRows) -> tuple[list[str], int]:
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
        check_unique_header(named, src)
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
    return paused_gc(_csv_rows(path, src, layout, parsers, rows)), rows, True


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
    :func:`parse_score` and :func:`split_list_cell` return.
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
                        plain = score - score == 0.0 and cell.isascii() and "_" not in cell
                        rec[name] = score if plain else parse_score(cell, k, src)
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
