"""Validating ledger runs: one record at a time, with the ledger's errors and warnings.

:func:`validate_record` is the door every run passes (``Ledger.read``/``from_records``/
``record``, the streaming gate, state files): it returns ``(run_id, score, fact_ids,
covariates)`` or raises a :class:`~cogstats._validation.LedgerError` naming the row and
the field.  :func:`value_kind` and :func:`column_kind` name a covariate's type (one column
holds one type); :func:`warn_repeated` is the warning for a run that lists a lesson twice.

Reading a large file validates millions of runs that mostly list the same few thousand
lesson ids; ``validate_record(..., ids=cache)`` checks each distinct id once and returns
the one stored string per id (the ledger then holds each id once, whatever the number of
runs that list it).
"""

from __future__ import annotations

import math
import numbers
import re
import unicodedata
import warnings
from collections.abc import Iterable, Mapping
from typing import Any

from cogstats._validation import LedgerError, LedgerWarning
from cogstats.ledger._columns import REQUIRED_COLUMNS, guess_source, mapping_advice

__all__ = ["column_kind", "validate_record", "value_kind", "warn_repeated"]

#: fields a record must hold, with and without ``fact_ids`` required
_NEEDED = {False: ("run_id", "score"), True: ("run_id", "score", "fact_ids")}
_NEEDED_SET = {k: frozenset(v) for k, v in _NEEDED.items()}
_PROPENSITY = frozenset(("eligible_ids", "propensities"))
#: most distinct lesson ids an id cache holds (a ledger of more distinct ids than this is
#: validated as before, id by id, without sharing the rest: the cache stays bounded)
ID_CACHE_MAX = 1 << 20


def warn_repeated(
    repeated: list[tuple[int, str, list[str]]], source: str | None, *, stacklevel: int = 4
) -> None:
    """One LedgerWarning for the runs that list a lesson more than once.

    ``repeated`` holds ``(row, run_id, fact_ids)`` of each such run; ``stacklevel`` is
    ``warnings.warn``'s (the default points at the caller of ``Ledger.read``).

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_repeated([(3, "r3", ["a", "a"])], "runs.jsonl")
    >>> "lists lesson 'a' 2 times" in str(caught[0].message)
    True
    """
    row, run_id, facts = repeated[0]
    counts: dict[str, int] = {}
    for f in facts:
        counts[f] = counts.get(f, 0) + 1
    fact, times = next((f, c) for f, c in counts.items() if c > 1)
    more = ""
    if len(repeated) > 1:
        rows = ", ".join(str(r) for r, _, _ in repeated[1:6])
        etc = ", ..." if len(repeated) > 6 else ""
        more = f"; {len(repeated) - 1} more run(s) repeat a lesson (rows {rows}{etc})"
    warnings.warn(
        LedgerWarning(
            f"run {run_id!r} lists lesson {fact!r} {times} times; it counts once (cycgraph's "
            f"rule) and the stored fact_ids keep the repeat{more}",
            row=row,
            field="fact_ids",
            source=source,
        ),
        stacklevel=stacklevel,
    )


def validate_record(
    rec: Mapping[str, Any],
    *,
    row: int,
    source: str | None,
    fact_ids_required: bool,
    ids: dict[str, str] | None = None,
) -> tuple[str, float, list[str], dict[str, Any]]:
    """Validate one run as the ledger does: ``(run_id, score, fact_ids, covariates)``.

    ``ids``, a dictionary shared by the records of one read (empty at first), caches the
    lesson ids already validated: each distinct id is checked (and NFC-normalised) once,
    and every run listing it gets the same stored string (up to :data:`ID_CACHE_MAX`
    distinct ids; later ones are checked each time).

    Examples
    --------
    >>> validate_record({"run_id": "r1", "score": 0.5, "fact_ids": ["a"], "d": 2},
    ...                 row=1, source=None, fact_ids_required=True)
    ('r1', 0.5, ['a'], {'d': 2})
    >>> cache = {}
    >>> one = validate_record({"run_id": "r1", "score": 1.0, "fact_ids": ["tip"]},
    ...                       row=1, source=None, fact_ids_required=False, ids=cache)
    >>> two = validate_record({"run_id": "r2", "score": 0.0, "fact_ids": ["t" + "ip"]},
    ...                       row=2, source=None, fact_ids_required=False, ids=cache)
    >>> one[2][0] is two[2][0]  # one string per distinct lesson id
    True
    """
    if type(rec) is not dict and not isinstance(rec, Mapping):
        raise LedgerError(
            f"a run must be a mapping; got {type(rec).__name__}", row=row, source=source
        )
    needed = bool(fact_ids_required)
    for name in () if rec.keys() >= _NEEDED_SET[needed] else _NEEDED[needed]:
        if name not in rec:
            raise LedgerError(
                f"missing required field; the record has {list(rec)}"
                + (_map_hint(name, list(rec)) if source is not None else ""),
                row=row,
                field=name,
                source=source,
            )
    run_id = rec["run_id"]
    if type(run_id) is not str or not run_id or run_id.isspace() or not run_id.isprintable():
        run_id = _validate_run_id(run_id, row, source)
    score = rec["score"]
    if type(score) is not float or not 0.0 <= score <= 1.0:  # (NaN fails it too)
        score = _validate_score(score, row, source)
    facts = _validate_id_list(rec.get("fact_ids", []), "fact_ids", row, source, ids)
    covs: dict[str, Any] = {}
    for key, value in rec.items():
        if key in REQUIRED_COLUMNS:
            continue
        if not isinstance(key, str) or not key:
            raise LedgerError(
                f"column names must be non-empty strings; got {key!r}", row=row, source=source
            )
        kind = type(value)
        if kind is str or value is None or kind is bool or (kind is float and math.isfinite(value)):
            if key in _PROPENSITY and kind is not type(None):
                covs[key] = _validate_propensity_column(key, value, row, source, ids)
            else:
                covs[key] = value  # a plain value: nothing to convert
        elif key in _PROPENSITY:
            covs[key] = _validate_propensity_column(key, value, row, source, ids)
        else:
            covs[key] = _validate_covariate(key, value, row, source)
    if "eligible_ids" in covs or "propensities" in covs:
        _check_propensity_record(facts, covs, row, source)
    return run_id, score, facts, covs


def _validate_run_id(run_id: Any, row: int, source: str | None) -> str:
    if not isinstance(run_id, str) or not run_id.strip():
        hint = ""
        if isinstance(run_id, numbers.Number) and not isinstance(run_id, bool):
            hint = (
                f' (run ids are strings: write "{run_id}", not {run_id}; CSV run ids are '
                "always read as strings)"
            )
        raise LedgerError(
            f"run_id must be a non-empty string; got {run_id!r}{hint}",
            row=row,
            field="run_id",
            source=source,
        )
    check_no_control(run_id, "run_id", row, source)
    return run_id  # a str subclass with text


#: control characters (Unicode category Cc): C0, DEL and C1
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def check_no_control(
    text: str, field: str, row: int | None, source: str | None, label: str | None = None
) -> None:
    r"""Refuse an id holding a control character (``\x1b``, a line break, a tab, ...).

    Run ids and lesson ids are refused at the door: a control character would reach a
    terminal as a command (``ESC [2J`` clears the screen), split a table row, or stop a
    chart renderer.  Other invisible characters (zero-width joiners, direction marks) are
    accepted and shown escaped (:func:`cogstats.ledger.escape_id`).

    Examples
    --------
    >>> check_no_control("tip-3", "fact_ids", 1, None)
    >>> try:
    ...     check_no_control("tip\x1b[2J", "fact_ids", 4, "runs.csv", "fact_ids[0]")
    ... except LedgerError as exc:
    ...     print(exc.message)  # doctest: +NORMALIZE_WHITESPACE
    fact_ids[0] holds a control character, U+001B at position 3 of 'tip\x1b[2J'; ids may
    not hold control characters (U+0000-U+001F, U+007F-U+009F)
    """
    m = _CONTROL.search(text)
    if m is not None:
        raise LedgerError(
            f"{label or field} holds a control character, U+{ord(m.group()):04X} at position "
            f"{m.start()} of "
            f"{text!r}; ids may not hold control characters (U+0000-U+001F, U+007F-U+009F)",
            row=row,
            field=field,
            source=source,
        )


def _validate_propensity_column(
    key: str, value: Any, row: int, source: str | None, ids: dict[str, str] | None
) -> Any:
    if value is None:
        return None
    if key == "eligible_ids":
        return _validate_id_list(value, key, row, source, ids)
    return _validate_propensities(value, row, source)


def _validate_score(score: Any, row: int, source: str | None) -> float:
    if isinstance(score, bool) or not isinstance(score, numbers.Real):
        raise LedgerError(
            f"score must be a number in [0, 1]; got {score!r}"
            + (" (a string, not a number)" if isinstance(score, str) else ""),
            row=row,
            field="score",
            source=source,
        )
    if isinstance(score, numbers.Integral) and not 0 <= int(score) <= 1:  # float() overflows
        raise LedgerError(
            f"score must be a finite number in [0, 1]; got {_short_value(score)}",
            row=row,
            field="score",
            source=source,
        )
    score = float(score)
    if not math.isfinite(score) or not 0.0 <= score <= 1.0:
        raise LedgerError(
            f"score must be a finite number in [0, 1]; got {score!r}",
            row=row,
            field="score",
            source=source,
        )
    return score


def _validate_id_list(
    value: Any, field: str, row: int, source: str | None, ids: dict[str, str] | None = None
) -> list[str]:
    if value is None:
        return []
    if ids is not None and type(value) is list:
        try:  # every id validated before: the stored strings
            return list(map(ids.__getitem__, value))
        except (KeyError, TypeError):  # a new id (or not a string): check them
            pass
    if type(value) is list and all(
        type(f) is str and f.isascii() and f.isprintable() and not f.isspace() and f for f in value
    ):
        # the common case: plain ASCII ids (nothing to normalise)
        if ids is None or len(ids) >= ID_CACHE_MAX:
            return list(value)
        return [ids.setdefault(f, f) for f in value]
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        hint = (
            " (only CSV cells are split into ids; JSON and Parquet hold a list)"
            if isinstance(value, str)
            else " (an object or struct is not a list: its keys are not read as lesson ids)"
            if isinstance(value, Mapping)
            else ""
        )
        raise LedgerError(
            f"{field} must be a list of lesson ids (strings); got {_short_value(value)}{hint}",
            row=row,
            field=field,
            source=source,
        )
    out = []
    for k, f in enumerate(value):
        if not isinstance(f, str) or not f.strip():
            raise LedgerError(
                f"{field}[{k}] must be a non-empty string lesson id; got {f!r}",
                row=row,
                field=field,
                source=source,
            )
        if not f.isascii():
            try:
                f = unicodedata.normalize("NFC", f)
                f.encode("utf-8")
            except UnicodeError:
                raise LedgerError(
                    f"{field}[{k}] is not valid Unicode text (a lone surrogate?); got {f!r}",
                    row=row,
                    field=field,
                    source=source,
                ) from None
        check_no_control(f, field, row, source, f"{field}[{k}]")
        out.append(f)
    if ids is not None and type(value) is list and len(ids) < ID_CACHE_MAX:
        # raw id -> its stored (normalised) string
        for k, f in enumerate(out):
            raw = value[k]
            if type(f) is str and type(raw) is str:  # (str subclasses are kept, not cached)
                out[k] = ids.setdefault(f, f)
                ids.setdefault(raw, out[k])
    return out


def _map_hint(name: str, keys: list[str]) -> str:
    """' ...map it: columns={...} or --column ...' for a field a file's record lacks."""
    guess = guess_source(name, [k for k in keys if k not in REQUIRED_COLUMNS])
    if guess is None:
        return ""
    return f"; if {guess!r} holds it, map it: {mapping_advice([(name, guess)], {})}"


def _validate_propensities(value: Any, row: int, source: str | None) -> list[float]:
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        raise LedgerError(
            f"propensities must be a list of probabilities; got {_short_value(value)}",
            row=row,
            field="propensities",
            source=source,
        )
    out = []
    for k, p in enumerate(value):
        if isinstance(p, bool) or not isinstance(p, numbers.Real) or not _unit(p):
            raise LedgerError(
                f"propensities[{k}] must be a probability in [0, 1]; got {_short_value(p)}",
                row=row,
                field="propensities",
                source=source,
            )
        out.append(float(p))
    return out


def _validate_covariate(key: str, value: Any, row: int, source: str | None) -> Any:
    kind = type(value)
    if value is None or kind is bool or kind is str:
        return value
    if kind is float and math.isfinite(value):
        return value
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return str(value)  # numpy str_ and other subclasses become plain str
    if isinstance(value, numbers.Integral):
        value = int(value)
        if not _INT64_MIN <= value <= _INT64_MAX:
            raise LedgerError(
                f"integer covariate {_short_value(value)} is beyond the 64-bit range a "
                "covariate column holds; store it as a string (an id) or a float (a "
                "magnitude)",
                row=row,
                field=key,
                source=source,
            )
        return value
    if isinstance(value, numbers.Real):
        v = float(value)
        if not math.isfinite(v):
            raise LedgerError(
                f"covariate values must be finite (use null for missing); got {value!r}",
                row=row,
                field=key,
                source=source,
            )
        return v
    raise LedgerError(
        f"covariate values must be numbers, strings, booleans or null; got {_short_value(value)}",
        row=row,
        field=key,
        source=source,
    )


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _unit(p: numbers.Real) -> bool:
    """Whether ``p`` lies in [0, 1] (an integral ``p`` compared exactly: float() overflows)."""
    if isinstance(p, numbers.Integral):
        return 0 <= int(p) <= 1
    return 0.0 <= float(p) <= 1.0


def _short_value(value: Any) -> str:
    """``repr(value)`` cut to 80 characters (an integer of 4,000 digits names its size)."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**30:
        return f"an integer of about {int(abs(value).bit_length() * math.log10(2)) + 1} digits"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def value_kind(value: Any) -> str | None:
    """Return the type name of a covariate value (None for null)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    return "list"


def column_kind(values: list[Any]) -> str | None:
    """Return a covariate column's type (``int`` with ``float``: ``float``)."""
    kinds = {value_kind(v) for v in values} - {None}
    if kinds == {"int", "float"}:
        return "float"
    return next(iter(kinds)) if kinds else None


def _check_propensity_record(
    facts: list[str], covs: dict[str, Any], row: int, source: str | None
) -> None:
    ids, ps = covs.get("eligible_ids"), covs.get("propensities")
    if ids is None and ps is None:
        return
    if ids is None or ps is None:
        missing = "eligible_ids" if ids is None else "propensities"
        raise LedgerError(
            "logged propensities need both eligible_ids and propensities",
            row=row,
            field=missing,
            source=source,
        )
    if len(ids) != len(ps):
        raise LedgerError(
            f"eligible_ids has {len(ids)} entries but propensities has {len(ps)}",
            row=row,
            field="propensities",
            source=source,
        )
    injected = set(facts)
    for f, p in zip(ids, ps, strict=True):
        if f in injected and p == 0.0:
            raise LedgerError(
                f"lesson {f!r} was injected but its logged propensity is 0",
                row=row,
                field="propensities",
                source=source,
            )
        if f not in injected and p == 1.0:
            raise LedgerError(
                f"lesson {f!r} was not injected but its logged propensity is 1",
                row=row,
                field="propensities",
                source=source,
            )
    missing_ids = injected - set(ids)
    if missing_ids:
        raise LedgerError(
            f"injected lesson(s) {sorted(missing_ids)} are not in eligible_ids, so their "
            "propensity is unknown",
            row=row,
            field="eligible_ids",
            source=source,
        )
