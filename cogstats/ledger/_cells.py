"""The text of CSV cells: list cells, scores and numbers.

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

Numbers (scores, covariates, propensities) are read in ASCII decimal notation only, as
JSON writes them: an optional sign, the digits ``0``-``9``, a point, an exponent
(``0.75``, ``-3``, ``1e-1``; and ``inf``/``nan``, which the ledger refuses where a number
must be finite).  Python's ``float`` and ``int`` also read other digit systems (``１``,
``٠.٥``, ``३``) and underscores (``1_000``, ``0_5`` is 5); a cell Python would read so is
an error naming its row and field (:func:`python_only_number`), never a silent number.
"""

from __future__ import annotations

import ast
import io
import json
import math
import re
import tokenize
import unicodedata
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from cogstats._validation import LedgerError
from cogstats.ledger._json import MAX_INT_DIGITS, JsonLimitError, check_json_limits


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
            out.append(ascii_float(t))
        except ValueError:
            why = python_only_number(t)
            raise LedgerError(
                f"{field} must hold numbers; {t!r} in {text!r} is not one"
                + (f" ({why}; {ASCII_ADVICE})" if why else ""),
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
            f"the cell {short_text(s)} is {exc.message.split(' at character')[0]}; a list cell "
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
                f"the cell {short_text(s)} starts with '[' but is neither a JSON list nor a Python "
                f"list literal of {kind}, such as {example}",
                row=row,
                field=field,
                source=src,
            ) from None
    if literal and numeric:
        _check_literal_numbers(s, field, row, src)
    flat_strings = isinstance(value, list) and all(isinstance(v, str) for v in value)
    if literal and flat_strings and _adjacent_strings(s, value):
        raise LedgerError(
            f"the cell {short_text(s)} holds strings with no comma between them (Python "
            "joins them into one; numpy prints arrays that way): write "
            f"{example}",
            row=row,
            field=field,
            source=src,
        )
    if not isinstance(value, list):
        raise LedgerError(
            f"the cell {short_text(s)} must be a list of {kind}, such as {example}",
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
                f"{v!r} in the cell {short_text(s)}",
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


def _check_literal_numbers(s: str, field: str, row: int, src: str | None) -> None:
    """Refuse a Python-literal number that JSON would not read (``1_0``, ``0x1``, ``.5j``)."""
    try:
        numbers = [
            t.string
            for t in tokenize.generate_tokens(io.StringIO(s).readline)
            if t.type == tokenize.NUMBER
        ]
    except (tokenize.TokenError, SyntaxError):  # pragma: no cover - literal_eval passed
        return
    for text in numbers:
        if not is_ascii_number(text):
            raise LedgerError(
                f"{field}: the number {text!r} in the cell {short_text(s)} is not in ASCII "
                f"decimal notation; {ASCII_ADVICE}",
                row=row,
                field=field,
                source=src,
            )


def short_text(s: str) -> str:
    return repr(s if len(s) <= 60 else s[:57] + "...")


BOOL_WORDS = frozenset(("true", "false"))


def all_parse(fn: Callable[[str], Any], cells: list[str]) -> bool:
    """Whether ``fn`` converts every cell (``int`` or ``float``; a C loop)."""
    try:
        deque(map(fn, cells), maxlen=0)
    except ValueError:
        return False
    return True


CSV_PARSERS: dict[str, Callable[[str], Any]] = {
    "int": lambda text: int(text) if text.strip() else None,
    "float": lambda text: float(text) if text.strip() else None,
    "bool": lambda text: text.strip().lower() == "true" if text.strip() else None,
    "str": lambda text: text if text.strip() else None,
}


def parse_score(cell: str, row: int, src: str) -> float:
    """Read a CSV score cell (the slow path of the reader), or raise naming row and field."""
    text = cell.strip()
    why = python_only_number(text)
    if why:
        raise LedgerError(
            f"score must be a number in [0, 1]; got {short_text(text)} ({why}; {ASCII_ADVICE})",
            row=row,
            field="score",
            source=src,
        )
    try:
        value = float(text)
    except ValueError:
        value = None
    if value is not None and (math.isfinite(value) or text.lower().lstrip("+-") in _INF_NAN):
        return value
    if value is not None or len(text) > 60:  # an overflowing literal: name it by its size
        raise LedgerError(
            f"score must be a number in [0, 1]; got {short_text(text)} ({len(text)} characters)",
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


# ---------------------------------------------------------------------- numbers
#: A number in ASCII decimal notation (JSON's, with a leading ``+``, ``.5`` and ``5.`` as
#: CSV files write them, and the words Python's float reads: inf, infinity, nan).
_ASCII_NUMBER = re.compile(
    r"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf|infinity|nan)",
    re.ASCII | re.IGNORECASE,
)
_ASCII_INT = re.compile(r"[+-]?[0-9]+", re.ASCII)
#: what a refusal of a number in another notation asks for
ASCII_ADVICE = (
    "write numbers as JSON does, in ASCII digits 0-9 with '.' and an exponent such as 1e-3"
)


def is_ascii_number(text: str) -> bool:
    """Whether ``text`` (stripped) is a number in ASCII decimal notation.

    Examples
    --------
    >>> is_ascii_number(" 0.75 "), is_ascii_number("1e-1"), is_ascii_number("-3")
    (True, True, True)
    >>> is_ascii_number("0_5"), is_ascii_number("\uff11"), is_ascii_number("0x1")
    (False, False, False)
    """
    return _ASCII_NUMBER.fullmatch(text.strip()) is not None


def python_only_number(text: str) -> str | None:
    """Say why ``text`` is a number to Python's ``float`` but not in ASCII decimal notation.

    ``None`` when it is not such a number (ASCII decimal notation, or no number at all).

    Examples
    --------
    >>> python_only_number("0_5")
    "'0_5' holds an underscore (Python reads it as 5.0)"
    >>> python_only_number("\uff11")
    "'１' holds U+FF11 FULLWIDTH DIGIT ONE (Python reads it as 1.0)"
    >>> python_only_number("0.5") is None, python_only_number("abc") is None
    (True, True)
    """
    if text.isascii() and "_" not in text:
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    s = text.strip()
    if is_ascii_number(s):  # (only surrounding non-ASCII spaces)
        return None
    odd = next(c for c in s if not c.isascii() or c == "_")
    what = "an underscore" if odd == "_" else f"U+{ord(odd):04X} {unicodedata.name(odd, '?')}"
    return f"{s!r} holds {what} (Python reads it as {value!r})"


def ascii_float(text: str) -> float:
    """``float(text)`` for ASCII decimal notation only; ``ValueError`` for anything else.

    Examples
    --------
    >>> ascii_float("1e-1"), ascii_float(" 3 ")
    (0.1, 3.0)
    >>> ascii_float("1_0e-1")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: '1_0e-1' is not a number in ASCII decimal notation: ... holds an underscore ...
    """
    if (text.isascii() and "_" not in text) or is_ascii_number(text):
        return float(text)
    why = python_only_number(text)
    raise ValueError(
        f"{text!r} is not a number in ASCII decimal notation" + (f": {why}" if why else "")
    )


def ascii_int(text: str) -> int:
    """``int(text)`` for ASCII digits only (an optional sign); ``ValueError`` for anything else.

    Examples
    --------
    >>> ascii_int("-12")
    -12
    >>> ascii_int("1_000")
    Traceback (most recent call last):
    ...
    ValueError: '1_000' is not an integer in ASCII digits
    """
    if _ASCII_INT.fullmatch(text.strip()) is None:
        raise ValueError(f"{text!r} is not an integer in ASCII digits")
    return int(text)


def first_python_only_number(cells: Iterable[tuple[int, str]]) -> tuple[int, str] | None:
    """Return the first ``(row, cell)`` :func:`python_only_number` refuses, else ``None``."""
    for k, cell in cells:
        if (not cell.isascii() or "_" in cell) and python_only_number(cell):
            return k, cell
    return None


def refuse_python_only_number(name: str, row: int, cell: str, src: str | None) -> LedgerError:
    """Return the error for a cell that only Python reads as a number."""
    return LedgerError(
        f"{python_only_number(cell)}; {ASCII_ADVICE}", row=row, field=name, source=src
    )


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
