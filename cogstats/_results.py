"""Shared rendering for result objects (text summaries and notebook HTML).

:func:`escape_id` is how an id (and any text cell) is shown: every table, chart and
terminal output of cogstats goes through it (:func:`escape_ids` for a frame), so that no
control character reaches a terminal or a chart renderer, a line break in an id does not
make two rows, and ids that look alike on screen read differently.  The public name is
:func:`cogstats.ledger.escape_id`.
"""

from __future__ import annotations

import html
import unicodedata
from collections.abc import Mapping
from typing import Any, TypeVar

import polars as pl

_SHORT = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
#: general categories never shown as they are: control, format (bidi overrides,
#: zero-width joiners), line and paragraph separators, private use, surrogates, unassigned
_HIDDEN = frozenset(("Cc", "Cf", "Zl", "Zp", "Co", "Cs", "Cn"))
#: scripts whose letters pass for Latin ones (Cyrillic a, Greek omicron, ...)
_LOOKALIKE_SCRIPTS = ("CYRILLIC", "GREEK", "ARMENIAN", "CHEROKEE", "COPTIC")
#: letters of those scripts drawn exactly as a Latin letter
_HOMOGLYPHS = frozenset(
    "\u0430\u0435\u043e\u0440\u0441\u0443\u0445\u0456\u0458\u0455\u0501\u04bb\u04cf\u051b\u051d\u04af"
    "\u0410\u0412\u0415\u041a\u041c\u041d\u041e\u0420\u0421\u0422\u0425\u0406\u0408\u0405"
    "\u0391\u0392\u0395\u0396\u0397\u0399\u039a\u039c\u039d\u039f\u03a1\u03a4\u03a5\u03a7\u03bf\u03bd"
)


def _code(c: str) -> str:
    n = ord(c)
    if c in _SHORT:
        return _SHORT[c]
    return f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}" if n < 0x10000 else f"\\U{n:08x}"


def _script(c: str) -> str:
    return unicodedata.name(c, "").split(" ", 1)[0]


def _lookalike(c: str) -> bool:
    """Whether a non-ASCII character is drawn like an ASCII one (fullwidth, math letters)."""
    folded = unicodedata.normalize("NFKC", c)
    return folded != c and folded.isascii()


def escape_id(text: str) -> str:
    r"""Return ``text`` as tables, charts and terminals show it: every character visible.

    Escaped with Python's notation (a backslash itself is doubled, so an escape cannot
    be forged): control characters (``\x1b``, ``\n``), invisible and direction-changing
    ones (zero-width joiner ``\u200d``, right-to-left override ``\u202e``, no-break and
    other spaces but the ASCII one, and a space at either end), characters drawn like an
    ASCII one (fullwidth and mathematical letters), letters of Cyrillic, Greek and other
    scripts with Latin look-alikes in an id that also holds Latin letters (``tip_\u0430``
    with a Cyrillic a), and an id made only of such look-alike letters.  Other text
    (``caf\u00e9``, ``\u6570\u5b66``, ``\u0441\u043e\u0432\u0435\u0442``) is shown as it is.

    Examples
    --------
    >>> escape_id("tip-3"), escape_id("caf\u00e9")
    ('tip-3', 'café')
    >>> print(escape_id("a\x1b[2Jb"), escape_id("two\nlines"), escape_id("x\u202ey"))
    a\x1b[2Jb two\nlines x\u202ey
    >>> print(escape_id("tip_\u0430"), escape_id("\u0430\u0441\u0435"), escape_id("m\u200d1 "))
    tip_\u0430 \u0430\u0441\u0435 m\u200d1\x20
    """
    plain = text.isascii() and text.isprintable() and "\\" not in text
    if plain and not (text.startswith(" ") or text.endswith(" ")):
        return text
    letters = [c for c in text if c.isalpha()]
    latin = any(c.isascii() or _script(c) == "LATIN" for c in letters)
    whole = bool(letters) and not latin and all(c in _HOMOGLYPHS for c in letters)
    out = []
    last = len(text) - 1
    for k, c in enumerate(text):
        if c.isascii():
            hide = not c.isprintable() or c == "\\" or (c == " " and k in (0, last))
        else:
            kind = unicodedata.category(c)
            hide = (
                kind in _HIDDEN
                or kind == "Zs"
                or _lookalike(c)
                or (c.isalpha() and (latin or whole) and _script(c) in _LOOKALIKE_SCRIPTS)
            )
        out.append(_code(c) if hide else c)
    return "".join(out)


_Shown = TypeVar("_Shown", pl.DataFrame, pl.Series)
#: a string that :func:`escape_id` may change (the others are shown as they are)
_NEEDS = r"[^!-~]|\\|^ | $"


def escape_ids(data: _Shown) -> _Shown:
    r"""Return a frame (or a series) with every string shown through :func:`escape_id`.

    String and categorical columns, lists of strings and column names; numbers and
    other columns are left alone.  A column that needs no escape is returned as it is
    (one vectorised check), so ordinary tables cost nothing.

    Examples
    --------
    >>> frame = pl.DataFrame({"fact_id": ["ok", "bad\x1b[2J", "two\nlines"], "n": [1, 2, 3]})
    >>> print(*escape_ids(frame)["fact_id"])
    ok bad\x1b[2J two\nlines
    """
    if isinstance(data, pl.Series):
        return _escape_series(data)
    out = data.with_columns(
        [_escape_series(data[name]) for name, dtype in data.schema.items() if _text(dtype)]
    )
    renames = {n: escape_id(n) for n in out.columns if escape_id(n) != n}
    return out.rename(renames) if renames else out


def _text(dtype: Any) -> bool:
    if isinstance(dtype, pl.List):
        return _text(dtype.inner)
    return dtype == pl.String or isinstance(dtype, pl.Categorical | pl.Enum)


def _escape_series(s: pl.Series) -> pl.Series:
    if isinstance(s.dtype, pl.List):
        if not _text(s.dtype.inner) or not _needs(s.explode()):
            return s
        rows = [None if v is None else [_maybe(x) for x in v] for v in s.to_list()]
        return pl.Series(s.name, rows, dtype=pl.List(pl.String))
    if not _needs(s):
        return s
    return s.cast(pl.String).map_elements(escape_id, return_dtype=pl.String)


def _needs(s: pl.Series) -> bool:
    return bool(s.cast(pl.String).str.contains(_NEEDS).any())


def _maybe(value: Any) -> Any:
    return None if value is None else escape_id(str(value))


def format_settings(settings: Mapping[str, Any]) -> str:
    """One line ``key=value, ...`` for a settings mapping (stable key order)."""
    return ", ".join(f"{k}={v!r}" for k, v in settings.items())


#: width of command-line tables: wide enough that report cells do not wrap
CLI_TABLE_WIDTH = 320


def frame_text(frame: pl.DataFrame, *, max_rows: int = 30, width: int = 160) -> str:
    """Return a plain-text table of a polars frame, without polars' shape header.

    The table is at most ``width`` characters wide before cells wrap; every string is
    shown through :func:`escape_id` (no control character reaches the terminal).
    """
    with pl.Config(
        tbl_rows=max_rows,
        tbl_cols=-1,
        tbl_hide_dataframe_shape=True,
        tbl_hide_column_data_types=True,
        float_precision=4,
        tbl_width_chars=width,
        fmt_str_lengths=40,
    ):
        return str(escape_ids(frame))


def html_block(title: str, settings: Mapping[str, Any], frame: pl.DataFrame) -> str:
    """HTML for ``_repr_html_``: a heading, the settings, and the table."""
    head = f"<strong>{html.escape(title)}</strong>"
    if settings:
        head += f"<br><small>{html.escape(format_settings(settings))}</small>"
    with pl.Config(float_precision=4, tbl_rows=50):
        table = escape_ids(frame)._repr_html_()
    return f"<div>{head}{table}</div>"
