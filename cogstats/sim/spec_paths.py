"""Dotted paths into a scenario mapping: what a grid axis names and sets.

A path is keys joined by dots, with ``[k]`` after a key that holds a list
(``lessons.listed[0].effect``, ``gate.min_trials``); :func:`get_path` reads the value
there, :func:`set_path` replaces it, :func:`check_same_type` refuses a value of another
type than the scenario's.  Errors name the grid key and the file.
"""

from __future__ import annotations

import copy
import numbers
import re
from typing import Any

from cogstats._validation import SpecError, suggest

__all__ = ["check_same_type", "get_path", "set_path", "walk"]

_SEG = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(?:\[(\d+)\])?$")


def walk(data: Any, path: str, source: str | None, key: str) -> tuple[Any, str | int]:
    """Return the container that holds ``path``'s value and the value's key or index there.

    Examples
    --------
    >>> walk({"lessons": {"listed": [{"effect": 0.1}]}}, "lessons.listed[0].effect", None, "k")
    ({'effect': 0.1}, 'effect')
    """
    parts = path.split(".")
    node = data
    for i, part in enumerate(parts):
        m = _SEG.match(part)
        if not m:
            raise SpecError(f"malformed path segment {part!r}", key=key, source=source)
        name, index = m.group(1), m.group(2)
        last = i == len(parts) - 1
        if not isinstance(node, dict) or name not in node:
            options = sorted(node) if isinstance(node, dict) else []
            raise SpecError(
                f"names no parameter of the scenario{suggest(name, options)}"
                + (f"; at this level: {options}" if options else ""),
                key=key,
                source=source,
            )
        if index is None:
            if last:
                return node, name
            node = node[name]
            continue
        seq = node[name]
        k = int(index)
        if not isinstance(seq, list) or k >= len(seq):
            raise SpecError(f"index {k} is out of range", key=key, source=source)
        if last:
            return seq, k
        node = seq[k]
    raise SpecError("empty path", key=key, source=source)  # pragma: no cover


def get_path(data: Any, path: str, source: str | None, key: str | None = None) -> Any:
    """Return the value at ``path``; a path that names nothing is a SpecError naming ``key``.

    Examples
    --------
    >>> get_path({"gate": {"min_trials": 2}}, "gate.min_trials", None)
    2
    """
    node, leaf = walk(data, path, source, key or path)
    return node[leaf]


def set_path(data: Any, path: str, value: Any, source: str | None) -> None:
    """Replace the value at ``path`` by a copy of ``value`` (errors name ``grid.<path>``).

    Examples
    --------
    >>> data = {"interactions": [{"effect": -0.1}]}
    >>> set_path(data, "interactions[0].effect", -0.2, None); data
    {'interactions': [{'effect': -0.2}]}
    """
    node, leaf = walk(data, path, source, f"grid.{path}")
    node[leaf] = copy.deepcopy(value)


def check_same_type(current: Any, value: Any, key: str, source: str | None) -> None:
    """Refuse a grid value of another type than the scenario's (None takes any).

    Examples
    --------
    >>> check_same_type(0.1, "big", "grid.runs", None)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    cogstats._validation.SpecError: key 'grid.runs': value 'big' is a string but ...
    """

    def kind(v: Any) -> str:
        if isinstance(v, bool):
            return "boolean"
        if isinstance(v, numbers.Real):
            return "number"
        if isinstance(v, str):
            return "string"
        if isinstance(v, list):
            return "array"
        if isinstance(v, dict):
            return "table"
        return type(v).__name__

    if current is None:
        return
    if kind(current) != kind(value):
        raise SpecError(
            f"value {value!r} is a {kind(value)} but the scenario's value {current!r} is a "
            f"{kind(current)}",
            key=key,
            source=source,
        )
