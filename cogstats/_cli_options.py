"""Command-line flags generated from a registered part's options dataclass.

Every field of the options dataclass becomes one flag (``min_trials`` ->
``--min-trials``): its type, its choices (``Literal``), its default and its help (from the
class's numpydoc ``Parameters`` section) come from the class, so the flags cannot drift
from it.  Flags default to "not given" (the class's own default then applies).
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import json
import re
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any

from cogstats._registry import Entry
from cogstats._validation import CogstatsError
from cogstats.ledger import ascii_float, ascii_int

__all__ = ["FLOAT", "INT", "add_option_flags", "collect_options", "param_help", "parse_assignments"]

#: Older spellings of generated flags that keep working: field name -> extra flags.
LEGACY_FLAGS: dict[str, tuple[str, ...]] = {
    "decision_rule": ("--rule",),
    "options": ("--option",),
}

_DEST = "opt__"
_SECTION = re.compile(r"^\s*-{3,}\s*$")


def param_help(cls: Any) -> dict[str, str]:
    """Return the help of each parameter in a numpydoc ``Parameters`` section, one line each.

    Hand-written (a dozen lines) because numpydoc's parser is not a dependency of the
    production path; it reads ``name : type`` and ``a, b : type`` headings followed by an
    indented description.

    Examples
    --------
    >>> class A:
    ...     '''Thing.
    ...
    ...     Parameters
    ...     ----------
    ...     size, count : int
    ...         How many
    ...         of them.
    ...     '''
    >>> param_help(A)
    {'size': 'How many of them.', 'count': 'How many of them.'}
    """
    lines = inspect.cleandoc(cls.__doc__ or "").splitlines()
    out: dict[str, str] = {}
    start = next(
        (
            i + 2
            for i, line in enumerate(lines[:-1])
            if line.strip() == "Parameters" and _SECTION.match(lines[i + 1])
        ),
        None,
    )
    if start is None:
        return out
    names: list[str] = []
    text: list[str] = []

    def flush() -> None:
        for name in names:
            out[name] = " ".join(text)

    for k in range(start, len(lines)):
        line = lines[k]
        if k + 1 < len(lines) and _SECTION.match(lines[k + 1]):
            break  # the next section
        if line and not line[0].isspace():
            flush()
            head = line.split(" : ", 1)[0]
            names = [n.strip() for n in head.split(",") if n.strip().isidentifier()]
            text = []
        elif line.strip():
            text.append(line.strip())
    flush()
    return out


def _hints(cls: Any) -> dict[str, Any]:
    try:
        return typing.get_type_hints(cls)
    except Exception:  # an annotation that does not resolve: read the values as JSON
        return {}


def _strip_none(hint: Any) -> tuple[Any, bool]:
    """``X | None`` -> (X, True)."""
    args = typing.get_args(hint)
    if typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        return (rest[0] if len(rest) == 1 else Any), True
    return hint, False


def _named(parse: Any, name: str) -> Any:
    def convert(text: str) -> Any:
        return parse(text)

    convert.__name__ = name  # argparse says "invalid int value: '１'"
    return convert


#: argparse ``type=`` of an integer or a number flag: ASCII decimal notation only, as the
#: ledger reads numbers (``int``/``float`` would take ``１``, ``٣`` and ``1_000``)
INT = _named(ascii_int, "int")
FLOAT = _named(ascii_float, "float")


def _none_or(parse: Any) -> Any:
    def convert(text: str) -> Any:
        return None if text.lower() in ("none", "null") else parse(text)

    convert.__name__ = getattr(parse, "__name__", "value")
    return convert


def _json_value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _flag_kwargs(hint: Any) -> dict[str, Any]:
    """Return the argparse keyword arguments for a field of type ``hint``."""
    base, optional = _strip_none(hint)
    origin = typing.get_origin(base)
    if base is bool:
        return {"action": argparse.BooleanOptionalAction}
    if origin is typing.Literal:
        return {"choices": [str(a) for a in typing.get_args(base)]}
    if base in (int, float, str):
        parse: Any = {int: INT, float: FLOAT, str: str}[base]
    elif base is Mapping or origin in (Mapping, dict) or base is dict:
        return {"action": "append", "metavar": "NAME=VALUE"}
    elif origin in (tuple, list, Sequence) or base in (tuple, list):
        return {"nargs": "*"}
    else:
        parse = _json_value
    return {"type": _none_or(parse) if optional else parse}


def add_option_flags(
    parser: argparse.ArgumentParser, entry: Entry, *, reserved: Sequence[str] = ()
) -> None:
    """Add one flag per option of ``entry`` to ``parser`` (a group of its own).

    A field whose flag is taken by the command itself (``reserved``) is spelled
    ``--<kind>-<name>`` instead.
    """
    group = parser.add_argument_group(
        f"{entry.kind} {entry.name!r} options",
        f"{entry.description} (defaults are the class's)",
    )
    helps = param_help(entry.options)
    hints = _hints(entry.options)
    defaults = entry.defaults()
    for f in entry.fields():
        flag = "--" + f.name.replace("_", "-")
        if flag in reserved:
            flag = f"--{entry.kind.split()[-1]}-{f.name.replace('_', '-')}"
        flags = [flag, *LEGACY_FLAGS.get(f.name, ())]
        kwargs = _flag_kwargs(hints.get(f.name, Any))
        text = helps.get(f.name, "")
        if f.name in defaults and kwargs.get("action") != "append":
            text = f"{text} (default: {defaults[f.name]!r})".strip()
        if kwargs.get("action") == "append":
            text = f"{text} (repeatable NAME=VALUE, JSON values)".strip()
        elif "choices" not in kwargs and "action" not in kwargs:
            kwargs["metavar"] = f.name.upper()
        group.add_argument(*flags, dest=_DEST + f.name, help=text, **kwargs)


def collect_options(args: argparse.Namespace, entry: Entry) -> dict[str, Any]:
    """Collect the options given on the command line (flags left out are not included)."""
    out: dict[str, Any] = {}
    for f in entry.fields():
        value = getattr(args, _DEST + f.name, None)
        if value is None:
            continue
        if _is_mapping_field(entry, f):
            value = parse_assignments(value, "--" + f.name.replace("_", "-"))
        out[f.name] = value
    return out


def _is_mapping_field(entry: Entry, f: dataclasses.Field[Any]) -> bool:
    hint = _hints(entry.options).get(f.name, Any)
    base, _ = _strip_none(hint)
    origin = typing.get_origin(base)
    return base in (Mapping, dict) or origin in (Mapping, dict)


def parse_assignments(items: Sequence[str] | None, flag: str, *, json_values: bool = True) -> Any:
    """Parse ``NAME=VALUE`` pairs into a dict.

    Values are read as JSON when they parse (else kept as strings), or kept as strings
    with ``json_values=False``.

    Examples
    --------
    >>> parse_assignments(["a=1", "b=x"], "--option")
    {'a': 1, 'b': 'x'}
    """
    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise CogstatsError(f"{flag} must look like NAME=VALUE; got {item!r}")
        out[key] = _json_value(value) if json_values else value
    return out
