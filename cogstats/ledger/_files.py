"""A text ledger's bytes: encoding, byte-order marks, binary data, chunked checks.

:func:`decode` checks a whole text in memory; :func:`check_text_file` checks a file in
line-aligned chunks with the same messages (bounded memory).  :func:`paused_gc` pauses the
cyclic garbage collector while a reader's records are consumed.
"""

from __future__ import annotations

import codecs
import contextlib
import csv
import gc
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from cogstats._validation import LedgerError

# Magic numbers of files people feed a text reader by mistake.
MAGIC = (
    (b"PAR1", "a Parquet file: read it with format='parquet' (or give it a .parquet suffix)"),
    (b"\x1f\x8b", "gzip-compressed: decompress it first"),
    (b"PK\x03\x04", "a zip archive (an .xlsx workbook?): export the sheet as CSV (UTF-8)"),
)


# ---------------------------------------------------------------------- bytes -> text
def decode(data: bytes, src: str) -> str:
    """UTF-8 text of a ledger file, without a byte-order mark; clear errors for the rest."""
    for magic, what in MAGIC:
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


Records = tuple[Iterable[dict[str, Any]], Sequence[int], bool]
#: Bytes read at a time by the bounded-memory JSON Lines reader's checking pass.
CHUNK_BYTES = 1 << 22


@contextlib.contextmanager
def gc_off() -> Iterator[None]:
    """Pause the cyclic garbage collector in a ``with`` block (see :func:`paused_gc`)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def paused_gc(records: Iterator[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Yield ``records`` with the cyclic garbage collector paused until they are read.

    A ledger read builds millions of lists that stay alive; each full collection would
    walk them all (quadratic in the file; a fifth of a 200 MB CSV read).  The readers'
    records form no reference cycles, so nothing is left for the collector to find.
    """
    with gc_off():
        yield from records


def check_text_file(path: Path, src: str) -> bool:
    """:func:`decode`'s checks and messages, on a file read in line-aligned chunks.

    Returns whether the file is *plain* for the CSV reader: no double quote, no carriage
    return but in CRLF line ends, and no line over half the csv module's field size
    limit (each half-limit window of bytes holds a line break).  A plain file's records
    are its lines split on the delimiter, exactly as ``csv.reader`` splits them
    (:func:`cogstats.ledger._csv_read._csv_reader`).
    """
    refused = (
        *(m for m, _ in MAGIC),
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
