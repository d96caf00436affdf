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
"""

from __future__ import annotations

import ast
import io
import json
import math
import tokenize
from collections import deque
from collections.abc import Callable, Sequence
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
    text = cell.strip()
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
