"""One typed reader for the TOML specs: simulation, sweep and admission.

:class:`TomlTable` wraps one table of a spec and reads typed values from it (numbers,
integers, booleans, strings, choices, lists, sub-tables); every error is a
:class:`~cogstats._validation.SpecError` that names the dotted key and the file.
:func:`read_toml` reads a file (a missing file is :class:`FileNotFoundError`, malformed
TOML a ``SpecError`` naming the file).

A reader either stops at the first error (the default) or, given a :class:`Problems`
collector, records every error and goes on with the default value, so that a spec can
report all its errors at once: ``Problems.check()`` then raises one :class:`SpecErrors`
listing them (or the single error itself when there is only one).

This module is shared on purpose by :mod:`cogstats.sim.spec`,
:mod:`cogstats.sweep.spec` and :mod:`cogstats.admission.spec`.
"""

from __future__ import annotations

import contextlib
import math
import numbers
import tomllib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from cogstats._validation import SpecError, suggest

__all__ = ["Problems", "SpecErrors", "TomlTable", "read_toml"]


class SpecErrors(SpecError):
    """Several errors of one spec, reported at once.

    Attributes
    ----------
    errors : tuple of SpecError
        Every error, in the order found.
    """

    def __init__(self, errors: Sequence[SpecError]) -> None:
        self.errors = tuple(errors)
        lines = "\n".join(f"  - {e}" for e in self.errors)
        source = next((e.source for e in self.errors if e.source is not None), None)
        super().__init__(f"{len(self.errors)} errors:\n{lines}", source=None)
        self.source = source


class Problems:
    """Collects the errors of a spec so that all of them are reported together.

    Examples
    --------
    >>> problems = Problems()
    >>> t = TomlTable({"runs": "ten", "alpha": 2.0}, "", "s.toml", problems=problems)
    >>> t.integer("runs", 10), t.number("alpha", 0.05, maximum=1.0)
    (10, 0.05)
    >>> problems.check()  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    cogstats._toml.SpecErrors: 2 errors:
      - s.toml, key 'runs': must be an integer; got 'ten'
      - s.toml, key 'alpha': must be <= 1.0; got 2.0
    """

    def __init__(self) -> None:
        self.errors: list[SpecError] = []

    def add(self, error: SpecError) -> None:
        """Record an error (the errors of a :class:`SpecErrors` one by one)."""
        if isinstance(error, SpecErrors):
            self.errors.extend(error.errors)
        else:
            self.errors.append(error)

    @contextlib.contextmanager
    def catch(self) -> Iterator[None]:
        """Record a :class:`SpecError` raised in the block instead of letting it through.

        Use it around one independent piece of a spec (a section, one lesson) so that
        the pieces after it are still checked.
        """
        try:
            yield
        except SpecError as exc:
            self.add(exc)

    def __bool__(self) -> bool:
        return bool(self.errors)

    def check(self) -> None:
        """Raise the one error, or a :class:`SpecErrors` of all of them; else nothing."""
        if len(self.errors) == 1:
            raise self.errors[0]
        if self.errors:
            raise SpecErrors(self.errors)


class TomlTable:
    """Typed access to one table of a spec, with the dotted key and the file in every error.

    Parameters
    ----------
    data : mapping
        The table (a value read from TOML, or a plain dict).  A key whose value is None
        counts as absent.
    path : str
        Its dotted key ("" for the top level).
    source : str, optional
        The file, for messages.
    problems : Problems, optional
        Collect errors there and go on with the default (else raise at the first).

    Attributes
    ----------
    used : set of str
        The keys read so far (:meth:`done` rejects the others).

    Examples
    --------
    >>> t = TomlTable({"runs": 40, "gate": {"alpha": 0.1}}, "", "s.toml")
    >>> t.integer("runs", 10, minimum=1), t.table("gate").number("alpha", 0.05)
    (40, 0.1)
    >>> t.choice("kind", "a", ["a", "b"])
    'a'
    >>> TomlTable({"gate": {"alpah": 0.1}}, "", "s.toml").table("gate").done(["alpha"])
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    cogstats._validation.SpecError: s.toml, key 'gate.alpah': unknown key (did you mean 'alpha'?)...
    """

    def __init__(
        self, data: Any, path: str, source: str | None, *, problems: Problems | None = None
    ) -> None:
        self.path = path
        self.source = source
        self.problems = problems
        self.used: set[str] = set()
        if not isinstance(data, Mapping):
            error = SpecError(f"must be a table; got {data!r}", key=path or None, source=source)
            if problems is None:
                raise error
            problems.add(error)
            data = {}
        self.data = dict(data)

    # ------------------------------------------------------------------ basics
    def key(self, name: str) -> str:
        """Return the dotted key of ``name`` in this table."""
        return f"{self.path}.{name}" if self.path else name

    def error(self, name: str, message: str) -> SpecError:
        """Return a :class:`SpecError` about key ``name``."""
        return SpecError(message, key=self.key(name), source=self.source)

    def fail(self, name: str, message: str, fallback: Any = None) -> Any:
        """Raise the error about ``name``, or record it and return ``fallback``."""
        error = self.error(name, message)
        if self.problems is None:
            raise error
        self.problems.add(error)
        return fallback

    def get(self, name: str, default: Any = None) -> Any:
        """Return the raw value of ``name`` (``default`` when absent or None); mark it used."""
        self.used.add(name)
        value = self.data.get(name)
        return default if value is None else value

    def has(self, name: str) -> bool:
        """Whether the table holds the key ``name``."""
        return name in self.data

    # ------------------------------------------------------------------ scalars
    def number(
        self,
        name: str,
        default: float | None = None,
        *,
        minimum: float | None = None,
        maximum: float | None = None,
        positive: bool = False,
        optional: bool = False,
    ) -> Any:
        """Read a finite number within bounds (``positive``: > 0); None if optional, absent."""
        value = self.get(name, default)
        if value is None:
            return None if optional else self.fail(name, "is required")
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            return self.fail(name, f"must be a number; got {value!r}", default)
        value = float(value)
        if not math.isfinite(value):
            return self.fail(name, f"must be finite; got {value!r}", default)
        if positive and value <= 0:
            return self.fail(name, f"must be > 0; got {value!r}", default)
        if minimum is not None and value < minimum:
            return self.fail(name, f"must be >= {minimum}; got {value!r}", default)
        if maximum is not None and value > maximum:
            return self.fail(name, f"must be <= {maximum}; got {value!r}", default)
        return value

    def integer(
        self,
        name: str,
        default: int | None = None,
        *,
        minimum: int | None = None,
        maximum: int | None = None,
        optional: bool = False,
    ) -> Any:
        """Read an integer (not a bool) within bounds; None if optional and absent."""
        value = self.get(name, default)
        if value is None:
            return None if optional else self.fail(name, "is required")
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            return self.fail(name, f"must be an integer; got {value!r}", default)
        value = int(value)
        if minimum is not None and value < minimum:
            return self.fail(name, f"must be >= {minimum}; got {value!r}", default)
        if maximum is not None and value > maximum:
            return self.fail(name, f"must be <= {maximum}; got {value!r}", default)
        return value

    def boolean(self, name: str, default: bool) -> bool:
        """Read ``true`` or ``false``."""
        value = self.get(name, default)
        if not isinstance(value, bool):
            return bool(self.fail(name, f"must be true or false; got {value!r}", default))
        return value

    def string(
        self,
        name: str,
        default: str | None = None,
        *,
        optional: bool = True,
        empty: bool = False,
    ) -> Any:
        """Read a string (non-empty unless ``empty``); None if optional and absent."""
        value = self.get(name, default)
        if value is None and optional:
            return None
        if not isinstance(value, str) or (not value and not empty):
            kind = "a string" if empty else "a non-empty string"
            return self.fail(name, f"must be {kind}; got {value!r}", default)
        return value

    def choice(self, name: str, default: str, allowed: Sequence[str]) -> str:
        """Read one of ``allowed`` (listed in the given order in the message)."""
        value = self.get(name, default)
        if not isinstance(value, str) or value not in allowed:
            hint = suggest(value, allowed) if isinstance(value, str) else ""
            message = f"must be one of {list(allowed)}; got {value!r}{hint}"
            return str(self.fail(name, message, default))
        return value

    # ------------------------------------------------------------------ lists
    def choices(self, name: str, default: Sequence[str], allowed: Sequence[str]) -> tuple[str, ...]:
        """Read a non-empty list of distinct names among ``allowed``."""
        value = self.get(name, list(default))
        if not isinstance(value, list) or not value:
            message = f"must be a non-empty list of names; got {value!r}"
            return tuple(self.fail(name, message, tuple(default)))
        for v in value:
            if not isinstance(v, str) or v not in allowed:
                hint = suggest(v, allowed) if isinstance(v, str) else ""
                message = f"entries must be among {sorted(allowed)}; got {v!r}{hint}"
                return tuple(self.fail(name, message, tuple(default)))
        if len(set(value)) != len(value):
            return tuple(self.fail(name, f"lists a name twice: {value!r}", tuple(default)))
        return tuple(value)

    def numbers(
        self, name: str, default: Sequence[float], *, minimum: float, maximum: float
    ) -> tuple[float, ...]:
        """Read a non-empty list of numbers in ``[minimum, maximum]``."""
        value = self.get(name, list(default))
        if (
            not isinstance(value, list)
            or not value
            or any(isinstance(v, bool) or not isinstance(v, numbers.Real) for v in value)
        ):
            message = f"must be a non-empty list of numbers; got {value!r}"
            return tuple(self.fail(name, message, tuple(default)))
        out = tuple(float(v) for v in value)
        bad = [v for v in out if not minimum <= v <= maximum]
        if bad:
            message = f"values must lie in [{minimum}, {maximum}]; got {bad[0]!r}"
            return tuple(self.fail(name, message, tuple(default)))
        return out

    def interval(
        self, name: str, default: tuple[float, float], *, minimum: float = 0.0
    ) -> tuple[float, float]:
        """``[low, high]`` with ``minimum <= low <= high``."""
        value = self.get(name, list(default))
        ok = (
            isinstance(value, list)
            and len(value) == 2
            and all(not isinstance(v, bool) and isinstance(v, numbers.Real) for v in value)
        )
        if not ok or not minimum <= value[0] <= value[1]:
            message = f"must be [low, high] with {minimum} <= low <= high; got {value!r}"
            low, high = self.fail(name, message, default)
            return (float(low), float(high))
        return (float(value[0]), float(value[1]))

    # ------------------------------------------------------------------ tables
    def table(self, name: str) -> TomlTable:
        """Return the sub-table ``name`` (empty when absent)."""
        return TomlTable(self.get(name, {}), self.key(name), self.source, problems=self.problems)

    def table_list(self, name: str) -> list[TomlTable]:
        """Return the array of tables ``name`` (empty when absent)."""
        value = self.get(name, [])
        if not isinstance(value, list):
            return list(self.fail(name, f"must be an array of tables; got {value!r}", []))
        return [
            TomlTable(v, f"{self.key(name)}[{i}]", self.source, problems=self.problems)
            for i, v in enumerate(value)
        ]

    def done(self, allowed: Sequence[str] | None = None) -> None:
        """Reject keys not read (or, given ``allowed``, not among them), with a suggestion."""
        known = self.used if allowed is None else set(allowed)
        for name in self.data:
            if name not in known:
                names = sorted(known)
                self.fail(name, f"unknown key{suggest(name, names)}; allowed: {names}")


def read_toml(path: str | Path) -> dict[str, Any]:
    r"""Read a TOML file: a missing file is FileNotFoundError, malformed TOML a SpecError.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "s.toml"
    >>> _ = p.write_text("runs = 10\n")
    >>> read_toml(p)
    {'runs': 10}
    >>> _ = p.write_text("runs = \n")
    >>> read_toml(p)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    cogstats._validation.SpecError: ...s.toml: malformed TOML: ...
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"spec file not found: {path}")
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"malformed TOML: {exc}", source=str(path)) from None
