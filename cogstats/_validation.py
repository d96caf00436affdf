"""Input validation at the door: one place for the checks and the error types.

Every public entry point validates its parameters here once, and every message says
which parameter, what is allowed and what was received.  The error classes subclass
``ValueError``/``TypeError`` so callers that catch the builtins keep working.
"""

from __future__ import annotations

import difflib
import math
import numbers
from collections.abc import Collection, Iterable, Mapping
from typing import Any, cast

__all__ = [
    "CogstatsError",
    "LedgerError",
    "LedgerWarning",
    "ParameterError",
    "SpecError",
]


class CogstatsError(Exception):
    """Base class of every error cogstats raises on purpose."""


class ParameterError(CogstatsError, ValueError):
    """An invalid parameter: names the parameter, what is allowed, and what was received."""


class LedgerError(CogstatsError, ValueError):
    """A malformed ledger: names the row (1-based) and the field where it can.

    Attributes
    ----------
    row : int or None
        1-based position of the offending record in its input (``None`` when the
        problem is not tied to one row, e.g. a missing column).
    field : str or None
        The offending field.
    source : str or None
        The file the record came from, when it came from a file.
    message : str
        The message without the file/row/field prefix.
    """

    def __init__(
        self,
        message: str,
        *,
        row: int | None = None,
        field: str | None = None,
        source: str | None = None,
    ) -> None:
        self.row = row
        self.field = field
        self.source = source
        self.message = message
        super().__init__(_where(message, row, field, source))


class LedgerWarning(UserWarning):
    """Ledger input that is read, but perhaps not as meant: names the row and field.

    Raised as a warning, e.g. when a run lists the same lesson twice (it counts once).
    Attributes as :class:`LedgerError`.
    """

    def __init__(
        self,
        message: str,
        *,
        row: int | None = None,
        field: str | None = None,
        source: str | None = None,
    ) -> None:
        self.row = row
        self.field = field
        self.source = source
        self.message = message
        super().__init__(_where(message, row, field, source))


def _where(message: str, row: int | None, field: str | None, source: str | None) -> str:
    where = []
    if source is not None:
        where.append(str(source))
    if row is not None:
        where.append(f"row {row}")
    if field is not None:
        where.append(f"field {field!r}")
    prefix = ", ".join(where)
    return f"{prefix}: {message}" if prefix else message


class SpecError(CogstatsError, ValueError):
    """An invalid scenario or sweep spec: names the key and the file."""

    def __init__(self, message: str, *, key: str | None = None, source: str | None = None) -> None:
        self.key = key
        self.source = source
        where = []
        if source is not None:
            where.append(str(source))
        if key is not None:
            where.append(f"key {key!r}")
        prefix = ", ".join(where)
        super().__init__(f"{prefix}: {message}" if prefix else message)


def suggest(name: str, allowed: Iterable[str]) -> str:
    """Return " (did you mean 'x'?)" for a near miss, else ""."""
    match = difflib.get_close_matches(name, list(allowed), n=1, cutoff=0.6)
    return f" (did you mean {match[0]!r}?)" if match else ""


def check_choice(name: str, value: Any, allowed: Collection[str]) -> str:
    """Validate that ``value`` is one of ``allowed`` strings."""
    if not isinstance(value, str) or value not in allowed:
        hint = suggest(value, allowed) if isinstance(value, str) else ""
        raise ParameterError(
            f"{name} must be one of {sorted(allowed)!r}; got {value!r}{hint}",
        )
    return value


def check_int(
    name: str,
    value: Any,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
    optional: bool = False,
) -> int | None:
    """Validate an integer parameter (bools are rejected) within inclusive bounds."""
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            kind = "an integer or None" if optional else "an integer"
            raise ParameterError(f"{name} must be {kind}; got {value!r}")
    value = int(value)
    _check_bounds(name, value, minimum, maximum)
    return value


def check_real(
    name: str,
    value: Any,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    exclusive_minimum: bool = False,
    exclusive_maximum: bool = False,
    optional: bool = False,
) -> float | None:
    """Validate a finite real parameter within bounds (inclusive unless told otherwise)."""
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        kind = "a number or None" if optional else "a number"
        raise ParameterError(f"{name} must be {kind}; got {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ParameterError(f"{name} must be finite; got {value!r}")
    if minimum is not None and (value <= minimum if exclusive_minimum else value < minimum):
        op = ">" if exclusive_minimum else ">="
        raise ParameterError(f"{name} must be {op} {minimum}; got {value!r}")
    if maximum is not None and (value >= maximum if exclusive_maximum else value > maximum):
        op = "<" if exclusive_maximum else "<="
        raise ParameterError(f"{name} must be {op} {maximum}; got {value!r}")
    return value


def check_probability(name: str, value: Any, *, open_interval: bool = True) -> float:
    """Validate a probability in (0, 1) (or [0, 1] when ``open_interval`` is False)."""
    out = check_real(
        name,
        value,
        minimum=0.0,
        maximum=1.0,
        exclusive_minimum=open_interval,
        exclusive_maximum=open_interval,
    )
    return cast(float, out)


def check_keys(where: str, given: Mapping[str, Any], allowed: Collection[str]) -> None:
    """Reject unknown keys in a mapping of options, with a near-miss suggestion."""
    for key in given:
        if key not in allowed:
            raise ParameterError(
                f"unknown {where} key {key!r}{suggest(key, allowed)}; allowed: {sorted(allowed)!r}"
            )


def _check_bounds(name: str, value: float, minimum: float | None, maximum: float | None) -> None:
    if minimum is not None and value < minimum:
        raise ParameterError(f"{name} must be >= {minimum}; got {value!r}")
    if maximum is not None and value > maximum:
        raise ParameterError(f"{name} must be <= {maximum}; got {value!r}")
