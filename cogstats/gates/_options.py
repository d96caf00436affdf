"""A gate's options, declared once: dataclass fields with their checks.

A gate is a frozen dataclass whose fields are its options.  Each field names its check
where it is declared (:func:`option`), the class's ``__post_init__`` runs them all
(:func:`check_options`), and everything else is derived from the fields:

- :func:`rule_options`: the options record the gate's rule and its compiled piece read
  (``o.min_trials``, ``o.margin``...), a namedtuple of the numeric fields (``int``,
  ``float``, ``bool``; an optional number's ``None`` as 0; a ``Literal`` choice as its
  position, :func:`choice_code`), so that neither the rule's arguments nor the kernel's
  parameters restate the options;
- the command line's flags, the spec's keys and the registry's defaults (the fields).

Examples
--------
>>> from dataclasses import dataclass
>>> @dataclass(frozen=True)
... class Demo:
...     min_trials: int = option(3, integer(minimum=1))
...     margin: float = option(0.1, real(minimum=0.0))
...     def __post_init__(self) -> None:
...         check_options(self)
>>> rule_options(Demo(min_trials=4))
RuleOptions(min_trials=4, margin=0.1)
>>> Demo(min_trials=0)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
cogstats._validation.ParameterError: min_trials must be >= 1; got 0
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from collections import namedtuple
from collections.abc import Callable
from typing import Any

from cogstats._validation import ParameterError, check_choice, check_int, check_real

__all__ = [
    "check_options",
    "choice",
    "choice_code",
    "integer",
    "level",
    "names",
    "option",
    "positive",
    "real",
    "rule_options",
]

Check = Callable[[str, Any], Any]


def option(default: Any = dataclasses.MISSING, check: Check | None = None, **kw: Any) -> Any:
    """Declare an option: a dataclass field with its default and its check.

    ``check(name, value)`` returns the value to keep (normalised: an int, a float, a
    tuple) or raises :class:`~cogstats._validation.ParameterError` naming the option, what
    is allowed and what it got.  ``default_factory`` (a keyword) for a mutable default.
    """
    metadata = {"check": check} if check is not None else {}
    return dataclasses.field(default=default, metadata=metadata, **kw)


def check_options(obj: Any) -> None:
    """Run every field's check on a (frozen) dataclass instance, keeping the checked value.

    A :func:`choice` without choices takes the field's ``Literal`` choices.
    """
    for f in dataclasses.fields(obj):
        check = f.metadata.get("check")
        if check is None:
            continue
        value = getattr(obj, f.name)
        if getattr(check, "literal", False):
            kinds: Any = _kinds(obj.__class__)
            value = check_choice(f.name, value, kinds[f.name])
        else:
            value = check(f.name, value)
        object.__setattr__(obj, f.name, value)


# ---------------------------------------------------------------------- the checks
def integer(*, minimum: int | None = None, optional: bool = False) -> Check:
    """Check an integer at least ``minimum`` (None allowed with ``optional``)."""
    return lambda name, v: check_int(name, v, minimum=minimum, optional=optional)


def real(
    *, minimum: float | None = None, maximum: float | None = None, optional: bool = False
) -> Check:
    """Check a finite real number within inclusive bounds, kept as a float."""

    def check(name: str, v: Any) -> Any:
        out = check_real(name, v, minimum=minimum, maximum=maximum, optional=optional)
        return None if out is None else float(out)

    return check


def positive(name: str, value: Any) -> float:
    """Check a real number > 0."""
    v = check_real(name, value, minimum=0.0)
    if v is None or not v > 0:
        raise ParameterError(f"{name} must be > 0; got {value!r}")
    return float(v)


def level(name: str, value: Any) -> float:
    """Check a one-sided level in (0, 0.5)."""
    v = check_real(name, value, minimum=0.0, maximum=0.5)
    if v is None or not 0.0 < v < 0.5:
        raise ParameterError(f"{name} must be a one-sided level in (0, 0.5); got {value!r}")
    return float(v)


def names(name: str, value: Any) -> tuple[str, ...]:
    """Check a list of non-empty column names, kept as a tuple."""
    if isinstance(value, str) or not all(isinstance(c, str) and c for c in value):
        raise ParameterError(f"{name} must be a list of ledger column names; got {value!r}")
    return tuple(value)


def choice(*allowed: str) -> Check:
    """Check one of ``allowed`` (default: the field's ``Literal`` choices)."""

    def check(name: str, v: Any) -> Any:
        return check_choice(name, v, allowed) if allowed else v

    check.literal = not allowed  # type: ignore[attr-defined]
    return check


# ---------------------------------------------------------------------- the record
@functools.cache
def _kinds(cls: Any) -> dict[str, Any]:
    """Field name -> ``int``, ``float``, ``bool`` or a tuple of Literal choices (numeric ones)."""
    hints = typing.get_type_hints(cls)
    out: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        hint = hints.get(f.name)
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if typing.get_origin(hint) is typing.Literal and all(isinstance(a, str) for a in args):
            out[f.name] = tuple(args)
        elif hint in (int, float, bool):
            out[f.name] = hint
        elif len(args) == 1 and args[0] in (int, float) and type(None) in typing.get_args(hint):
            out[f.name] = args[0]
    return out


def _record_class(cls: type, extra: tuple[str, ...]) -> Any:
    """Return the namedtuple class of ``cls``'s numeric fields (and ``extra``), made once.

    It is an attribute of the gate class (``RuleOptions``, with ``RuleOptions_<extra>`` for
    a piece's derived values), so that it pickles by reference (numba's disk cache keys
    compiled code on the record's type).
    """
    attr = "RuleOptions" + "".join(f"_{e}" for e in extra)
    rec: Any = cls.__dict__.get(attr)
    if rec is None:
        make: Any = namedtuple
        rec = make(attr, [*_kinds(cls), *extra])
        rec.__module__ = cls.__module__
        rec.__qualname__ = f"{cls.__qualname__}.{attr}"
        type.__setattr__(cls, attr, rec)
    return rec


def rule_options(gate: Any, **extra: float) -> Any:
    """Return the options record of a gate: its numeric fields, as its rule reads them.

    ``int`` and ``float`` fields as numbers (an optional one's ``None`` as 0), ``bool``
    fields as booleans, ``Literal`` string fields as the position of the value among the
    choices (:func:`choice_code`).  ``extra`` adds derived values (a compiled piece's).
    The same record is the rule's argument in the batch gate and the compiled piece's in
    the simulator.
    """
    cls: Any = type(gate)
    rec = _record_class(cls, tuple(extra))
    values: list[Any] = []
    for name, kind in _kinds(cls).items():
        v = getattr(gate, name)
        if isinstance(kind, tuple):
            values.append(kind.index(v))
        elif kind is bool:
            values.append(bool(v))
        else:
            values.append(kind(0 if v is None else v))
    return rec(*values, *(float(v) for v in extra.values()))


def choice_code(cls: type, name: str, value: str) -> int:
    """Return the record's code of a ``Literal`` option's value: its position.

    Examples
    --------
    >>> from cogstats.gates import CycgraphGate
    >>> choice_code(CycgraphGate, "decision_rule", "margin")
    1
    """
    kind = _kinds(cls).get(name)
    if not isinstance(kind, tuple) or value not in kind:
        raise ParameterError(f"{cls.__name__}.{name} has no choice {value!r}")
    return kind.index(value)
