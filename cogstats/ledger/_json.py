"""Bounded JSON: the parser the ledger readers and the streaming gate use for JSON text.

Python's ``json`` module recurses once per nesting level and converts integers of any
length, so one hostile line could exhaust the stack or spend quadratic time on a huge
integer.  :func:`check_json_limits` refuses nesting deeper than :data:`MAX_JSON_DEPTH`
and integers longer than :data:`MAX_INT_DIGITS` digits before :func:`load_json` parses
(a repeated key in an object is refused too); :func:`parse_json_record` turns one JSON
Lines line into a ledger record, every failure a :class:`~cogstats._validation.LedgerError`
naming the row.
"""

from __future__ import annotations

import json
import re
from typing import Any

from cogstats._validation import LedgerError


class _DuplicateKey(Exception):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):  # a key repeated: name the first repeat
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return out


# one decoder for every line (json.loads builds one per call when given a hook)
_DECODER = json.JSONDecoder(object_pairs_hook=_object)
# the C scanner without a hook: the fast path of an ordinary JSON Lines record
_SCAN = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


# ---------------------------------------------------------------------- bounded JSON
#: Deepest nesting of lists and objects a ledger's JSON may hold (a run is an object of
#: flat lists: depth 2).  Checked before parsing, so no recursion limit is reachable from
#: data.
MAX_JSON_DEPTH = 32
#: Most digits an integer literal may have (Python's own limit for int <-> str).
MAX_INT_DIGITS = 4300
# a JSON string (skipped), a bracket, or a run of digits too long for an integer
_JSON_TOKENS = re.compile(
    r'"(?:[^"\\]|\\.)*"|[\[\]{}]|(?<![.\deE])(?<![eE][+-])\d{'
    + str(MAX_INT_DIGITS + 1)
    + r",}(?![.\deE])"
)
_COLON = re.compile(r"\s*:")


class JsonLimitError(ValueError):
    """JSON text nested too deep or holding an integer with too many digits.

    ``message`` says which; ``key`` is the object key the value sits under when known.
    """

    def __init__(self, message: str, key: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.key = key


def check_json_limits(text: str, *, max_depth: int = MAX_JSON_DEPTH) -> None:
    """Raise :class:`JsonLimitError` for nesting or integers beyond the limits.

    ``text`` may nest at most ``max_depth`` lists and objects and hold integers of at most
    :data:`MAX_INT_DIGITS` digits; the check costs O(len(text)) in C.

    Text with fewer brackets than ``max_depth`` and shorter than the digit limit (every
    ordinary ledger line) is passed by two ``str.count`` calls.

    Examples
    --------
    >>> check_json_limits('{"fact_ids": ["[[[", "a"]}')  # brackets inside strings count not
    >>> try:
    ...     check_json_limits("[" * 40 + "]" * 40)
    ... except JsonLimitError as exc:
    ...     print(exc.message)
    nested deeper than 32 levels (lists or objects inside each other) at character 32
    """
    brackets = text.count("[") + text.count("{")
    if brackets <= max_depth and len(text) <= MAX_INT_DIGITS:
        return
    depth = 0
    key: str | None = None  # the top-level object's key being read (the record's field)
    for m in _JSON_TOKENS.finditer(text):
        tok = m.group()
        if tok[0] == '"':
            if depth == 1 and _COLON.match(text, m.end()):
                key = tok[1:-1]
            continue
        if tok in "[{":
            depth += 1
            if depth > max_depth:
                raise JsonLimitError(
                    f"nested deeper than {max_depth} levels (lists or objects inside each "
                    f"other) at character {m.start()}",
                    key,
                )
        elif tok in "]}":
            depth -= 1
        else:
            raise JsonLimitError(
                f"an integer of {len(tok)} digits at character {m.start()} (more than "
                f"{MAX_INT_DIGITS}: beyond any score, id or covariate a ledger holds)",
                key,
            )


def load_json(text: str, *, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """``json.loads`` with bounded nesting and integer size; repeated keys are an error.

    Raises :class:`JsonLimitError` (see :func:`check_json_limits`), ``_DuplicateKey`` for
    a key repeated in one object, and ``json.JSONDecodeError`` for malformed text.

    Examples
    --------
    >>> load_json('{"run_id": "r1", "fact_ids": ["a"]}')
    {'run_id': 'r1', 'fact_ids': ['a']}
    """
    check_json_limits(text, max_depth=max_depth)
    if text[:1] == "{":
        # Fast path: an object parsed by the C scanner alone, accepted when the text holds
        # exactly one ':' per key of the top-level object (then no key is repeated, here
        # or in a nested object) and nothing but JSON whitespace after it; anything else
        # (a ':' inside a string, nested objects, trailing data, malformed text) is
        # decided by the full decoder below, with its errors.
        try:
            obj, end = _SCAN(text, 0)
        except (StopIteration, ValueError, RecursionError):
            pass
        else:
            if (
                type(obj) is dict
                and text.count(":") == len(obj)
                and (end == len(text) or not text[end:].strip(" \t\n\r"))
            ):
                return obj
    try:
        return _DECODER.decode(text)
    except RecursionError:  # pragma: no cover - the depth check comes first
        raise JsonLimitError("nested too deep to parse") from None


def parse_json_record(text: str, *, row: int, src: str | None, where: str = "") -> dict[str, Any]:
    """One JSON Lines line as a record; every failure a :class:`LedgerError`.

    ``where`` is appended to the messages (e.g. a byte offset).

    Examples
    --------
    >>> parse_json_record('{"run_id": "r1", "score": 1}', row=1, src=None)
    {'run_id': 'r1', 'score': 1}
    >>> parse_json_record('{"fact_ids": {"a": 1}}', row=3, src="x.jsonl")["fact_ids"]
    {'a': 1}
    """
    try:
        rec = load_json(text)
    except JsonLimitError as exc:
        raise LedgerError(exc.message + where, row=row, field=exc.key, source=src) from None
    except json.JSONDecodeError as exc:
        raise LedgerError(
            f"malformed JSON ({exc.msg} at column {exc.colno}){where}", row=row, source=src
        ) from None
    except _DuplicateKey as exc:
        raise LedgerError(
            f"the key appears twice in one JSON object; which one counts is ambiguous{where}",
            row=row,
            field=exc.key,
            source=src,
        ) from None
    except ValueError as exc:  # e.g. an integer limit lowered by sys.set_int_max_str_digits
        raise LedgerError(f"cannot parse the line ({exc}){where}", row=row, source=src) from None
    if not isinstance(rec, dict):
        raise LedgerError(
            f"each line must be a JSON object; got {type(rec).__name__}{where}",
            row=row,
            source=src,
        )
    return rec
