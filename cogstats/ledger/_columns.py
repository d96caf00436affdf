"""A ledger file's format and column names: the suffixes, the required columns, the mapping.

:func:`check_columns` is the one check of a column mapping ``{ledger name: file name}``
(``Ledger.read``, ``Ledger.read_lessons``, the command line's ``--column``, the reports'
``columns``); :func:`rename_plan` fits a checked mapping to a file's names, and
:func:`missing_columns_error` is the error for a file that lacks a required column, with
the mapping that would fix it.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from cogstats._validation import LedgerError, ParameterError, check_choice

REQUIRED_COLUMNS = ("run_id", "score", "fact_ids")
#: Optional list columns holding the logged injection propensities of a run: for every
#: lesson that retrieval could have injected (``eligible_ids``), the probability that it
#: was injected (``propensities``, aligned with ``eligible_ids``).
PROPENSITY_COLUMNS = ("eligible_ids", "propensities")
#: Columns whose CSV cells hold lists (the rule table of :mod:`cogstats.ledger._cells`).
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
    """Validate a column mapping ``{ledger name: the file's name}``; return it as a dict.

    The one check of a mapping's shape, whoever takes one (:meth:`Ledger.read`,
    :meth:`Ledger.read_lessons`, the command line's ``--column``, the reports'
    ``columns``): keys and values are non-empty strings, and no two names map onto one
    column of the file.  Whether the file has the columns is checked when it is read.

    Parameters
    ----------
    columns : mapping of str to str, or None
        ``None`` is no mapping (``{}``).

    Returns
    -------
    dict of str to str

    Raises
    ------
    ParameterError
        Naming the entry at fault and what it got.

    Examples
    --------
    >>> check_columns({"run_id": "run", "fact_ids": "lessons_in_prompt"})
    {'run_id': 'run', 'fact_ids': 'lessons_in_prompt'}
    >>> try:
    ...     check_columns({"run_id": "run", "fact_ids": "run"})
    ... except ValueError as exc:
    ...     print(exc)  # doctest: +NORMALIZE_WHITESPACE
    columns maps both 'run_id' and 'fact_ids' onto the file's column 'run';
    one column can be only one of them
    """
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
                f"{_near(source, names)}; it has {listed(names)}"
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


def check_unique_header(named: Sequence[str], src: str) -> None:
    """Refuse a header that names a column twice (linear in the header's width).

    Examples
    --------
    >>> try:
    ...     check_unique_header(["run_id", "x", "score", "x"], "runs.csv")
    ... except LedgerError as exc:
    ...     print(exc.message)
    duplicate column(s) ['x'] in the header
    """
    seen: set[str] = set()
    dup: set[str] = set()
    for h in named:
        if h in seen:
            dup.add(h)
        seen.add(h)
    if dup:
        raise LedgerError(f"duplicate column(s) {listed(sorted(dup))} in the header", source=src)


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
    names = "column" if len(missing) == 1 else "columns"
    hint = _delimiter_hint(available)
    return LedgerError(
        f"missing required {names} {list(missing)}; the file has columns "
        f"{listed(available)}{hint}. If the file names them differently, map them: "
        f"{mapping_advice(pairs, mapping)}",
        field=missing[0],
        source=src,
    )


def mapping_advice(pairs: Sequence[tuple[str, str]], mapping: Mapping[str, str]) -> str:
    """How to map ``pairs`` (ledger name, file name) in Python, on the command line, in a report.

    ``mapping`` is the mapping already given (kept in the Python and report forms).

    Examples
    --------
    >>> print(mapping_advice([("score", "reward")], {}))  # doctest: +NORMALIZE_WHITESPACE
    Ledger.read(path, columns={"score": "reward"}); on the command line
    --column score=reward; in a report --param columns='{"score": "reward"}'
    """
    full = json.dumps({**mapping, **dict(pairs)}, ensure_ascii=False)
    cli = " ".join(f"--column {k}={v}" for k, v in pairs)
    return (
        f"Ledger.read(path, columns={full}); on the command line {cli}; in a report "
        f"--param columns='{full}'"
    )


#: column names an error message lists before it says how many more there are
LISTED_NAMES = 40


def listed(names: Sequence[str]) -> str:
    """Return the names as a list for a message: past :data:`LISTED_NAMES`, the first and a count.

    Examples
    --------
    >>> listed(["a", "b"])
    "['a', 'b']"
    >>> listed([f"c{j}" for j in range(100)])[-28:]
    "'c38', 'c39', ... (60 more)]"
    """
    if len(names) <= LISTED_NAMES:
        return repr(list(names))
    head = repr(list(names[:LISTED_NAMES]))[:-1]
    return f"{head}, ... ({len(names) - LISTED_NAMES} more)]"


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
