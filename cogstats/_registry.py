"""Registries of swappable parts: gates, retrieval policies, spending functions.

One shape for all of them, after the estimator registry
(:mod:`cogstats.estimators._base`): an entry holds a name, one class (or function), its
options dataclass and a one-line description, validated once when it is registered.
Lookups by name fail with the registered names and a near-miss suggestion.  A registry
loads lazily: the built-in parts live in modules that are imported only when a name is
asked for (one module for one name; all of them to list the registry), so importing a
registry costs nothing.

A part of one's own registers itself with the registry's ``register`` decorator, and
can always be named by import path, ``"package.module:Class"``: the module is imported
(in a spawned sweep worker too, which is how such a worker finds it) and the class used,
registered or not.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from cogstats._validation import ParameterError, suggest

__all__ = ["Entry", "Registry", "resolve_import_path"]

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_PATH = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


@dataclass(frozen=True)
class Entry:
    """One registered part.

    Attributes
    ----------
    name : str
        The registry name (or the import path ``"package.module:Class"`` for a part named
        that way and not registered).
    cls : type or callable
        The class (gates, retrieval policies) or function (spending functions).
    options : type
        The options dataclass: its fields are the part's options, with their types,
        defaults and (in the class docstring) help.  For a frozen-dataclass class, the
        class itself.
    description : str
        One line for listings.
    compiled : bool
        Whether the simulator's compiled kernel covers the part (a gate or policy that it
        does not cover runs in the reference engine).
    kind : str
        What the registry holds ("gate", "retrieval policy", "spending function").
    """

    name: str
    cls: Any
    options: type
    description: str
    compiled: bool = False
    kind: str = "part"

    @property
    def function(self) -> Any:
        """The registered function (spending functions): the same object as :attr:`cls`."""
        return self.cls

    def fields(self) -> tuple[dataclasses.Field[Any], ...]:
        """Return the option fields (init fields of the options dataclass), in order."""
        return tuple(f for f in dataclasses.fields(self.options) if f.init)

    def defaults(self) -> dict[str, Any]:
        """Every option with its default (options without a default are left out)."""
        out: dict[str, Any] = {}
        for f in self.fields():
            if f.default is not dataclasses.MISSING:
                out[f.name] = f.default
            elif f.default_factory is not dataclasses.MISSING:
                out[f.name] = f.default_factory()
        return out

    def check_options(self, options: Mapping[str, Any]) -> None:
        """Reject option names the part does not take (naming the allowed ones)."""
        allowed = [f.name for f in self.fields()]
        for key in options:
            if key not in allowed:
                raise ParameterError(
                    f"unknown option {key!r} for {self.kind} {self.name!r}"
                    f"{suggest(str(key), allowed)}; allowed: {allowed}"
                )

    def make(self, **options: Any) -> Any:
        """Build the part with these options (validated by the class).

        A class may define ``from_policy(mapping)`` to accept other spellings of its
        options (cycgraph's gate accepts camelCase); it is used when present.  For a
        function entry the options are validated by the options dataclass and bound with
        :func:`functools.partial`.
        """
        from_policy = getattr(self.cls, "from_policy", None)
        if isinstance(self.cls, type) and callable(from_policy):
            return from_policy(options)
        self.check_options(options)
        if isinstance(self.cls, type):
            return self.cls(**options)
        validated = self.options(**options)
        return functools.partial(self.cls, **dataclasses.asdict(validated))


class Registry(Mapping[str, Entry]):
    """Name -> :class:`Entry`, with lazily imported built-in parts.

    Parameters
    ----------
    kind : str
        What it holds, for messages ("gate").
    builtin : mapping
        Built-in name -> the module that registers it (imported on first use).
    check : callable, optional
        ``check(obj)`` returns a complaint (a string) when ``obj`` cannot be such a part
        (e.g. a gate without ``evaluate``), else None.

    Examples
    --------
    >>> from dataclasses import dataclass
    >>> THINGS = Registry("thing", {})
    >>> @THINGS.register("plain", description="a thing with one option")
    ... @dataclass(frozen=True)
    ... class Plain:
    ...     size: int = 3
    >>> THINGS.make("plain", size=4)
    Plain(size=4)
    >>> THINGS.entry("plian")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    cogstats._validation.ParameterError: unknown thing 'plian' (did you mean 'plain'?); ...
    """

    def __init__(
        self,
        kind: str,
        builtin: Mapping[str, str],
        check: Callable[[Any], str | None] | None = None,
    ) -> None:
        self.kind = kind
        self.builtin = MappingProxyType(dict(builtin))
        self._check = check
        self._entries: dict[str, Entry] = {}

    # ------------------------------------------------------------------ registration
    def register(
        self,
        name: str,
        obj: Any = None,
        *,
        description: str,
        options: type | None = None,
        compiled: bool = False,
    ) -> Any:
        """Add a part; use as a class decorator or call with the object.

        Parameters
        ----------
        name : str
            Lower-case letters, digits and underscores.
        obj : class or function, optional
            The part (omit to use this as a decorator).
        description : str
            One line.
        options : dataclass type, optional
            Its options dataclass (default: ``obj`` itself, which must then be a
            dataclass).
        compiled : bool
            Whether the simulator's kernel covers it.
        """

        def add(target: Any) -> Any:
            self._entries[name] = self._validated(name, target, description, options, compiled)
            return target

        return add if obj is None else add(obj)

    def _validated(
        self, name: str, obj: Any, description: str, options: type | None, compiled: bool
    ) -> Entry:
        where = f"{self.kind} {name!r}"
        if not isinstance(name, str) or not _NAME.match(name):
            raise RuntimeError(
                f"{self.kind} name must be lower-case letters, digits and underscores; got {name!r}"
            )
        if not isinstance(description, str) or not description.strip() or "\n" in description:
            raise RuntimeError(f"{where} needs a one-line description; got {description!r}")
        opts = obj if options is None else options
        if not (isinstance(opts, type) and dataclasses.is_dataclass(opts)):
            raise RuntimeError(f"{where}: options must be a dataclass type; got {opts!r}")
        if self._check is not None:
            complaint = self._check(obj)
            if complaint:
                raise RuntimeError(f"{where}: {complaint}")
        old = self._entries.get(name)
        if old is not None and not _same_object(old.cls, obj):
            raise RuntimeError(f"{where} registered twice ({old.cls!r} and {obj!r})")
        return Entry(name, obj, opts, description.strip(), bool(compiled), self.kind)

    def unregister(self, name: str) -> None:
        """Remove a registered part.

        A built-in one comes back on the next lookup only if its module is imported again,
        which Python does not do: leave those alone.
        """
        if name not in self._entries:
            raise ParameterError(f"no {self.kind} {name!r} is registered")
        del self._entries[name]

    # ------------------------------------------------------------------ lookup
    def load(self) -> Registry:
        """Import every built-in module, so the registry is complete; return it."""
        for module in self.builtin.values():
            importlib.import_module(module)
        return self

    def entry(self, name: str) -> Entry:
        """Return the entry of ``name``: a registered name or an import path ``"pkg.mod:Class"``."""
        if not isinstance(name, str):
            raise ParameterError(f"{self.kind} must be a name string; got {name!r}")
        if name in self._entries:
            return self._entries[name]
        if name in self.builtin:
            importlib.import_module(self.builtin[name])
            return self._entries[name]
        if ":" in name:
            return self._from_path(name)
        self.load()
        names = sorted(self._entries)
        raise ParameterError(
            f"unknown {self.kind} {name!r}{suggest(name, names)}; registered: {names}, or "
            "name one of your own by import path 'package.module:Class'"
        )

    def make(self, name: str, **options: Any) -> Any:
        """Build the part ``name`` with ``options`` (validated by its class)."""
        return self.entry(name).make(**options)

    def _from_path(self, path: str) -> Entry:
        obj = resolve_import_path(path, self.kind)
        for entry in self._entries.values():
            if _same_object(entry.cls, obj):
                return entry
        if self._check is not None:
            complaint = self._check(obj)
            if complaint:
                raise ParameterError(f"{self.kind} {path!r}: {complaint}")
        if not (isinstance(obj, type) and dataclasses.is_dataclass(obj)):
            raise ParameterError(
                f"{self.kind} {path!r} must be a dataclass (its fields are its options) or "
                "registered with its options dataclass"
            )
        doc = (obj.__doc__ or "").strip().splitlines()
        return Entry(path, obj, obj, doc[0] if doc else path, False, self.kind)

    # ------------------------------------------------------------------ Mapping
    def __getitem__(self, name: str) -> Entry:
        if name not in self._entries and name in self.builtin:
            importlib.import_module(self.builtin[name])
        return self._entries[name]

    def __iter__(self) -> Iterator[str]:
        self.load()
        return iter(sorted(self._entries))

    def __len__(self) -> int:
        self.load()
        return len(self._entries)

    def __contains__(self, name: object) -> bool:
        if isinstance(name, str) and name in self.builtin:
            return True
        return name in self._entries

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {sorted(self)})"


def resolve_import_path(path: str, kind: str = "object") -> Any:
    """Return the object at ``"package.module:Name"`` (the module is imported).

    Examples
    --------
    >>> resolve_import_path("cogstats._registry:Registry") is Registry
    True
    """
    if not _PATH.match(path):
        raise ParameterError(
            f"{kind} import path must look like 'package.module:Class'; got {path!r}"
        )
    module_name, _, attr = path.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ParameterError(f"cannot import {kind} {path!r}: {exc}") from None
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ParameterError(f"cannot import {kind} {path!r}: {module_name} has no {attr!r}")
        obj = getattr(obj, part)
    return obj


def _same_object(a: Any, b: Any) -> bool:
    """Tell whether ``a`` and ``b`` are the same class or function, also across a re-import."""
    if a is b:
        return True
    key = (getattr(a, "__module__", None), getattr(a, "__qualname__", None))
    return key[1] is not None and key == (
        getattr(b, "__module__", None),
        getattr(b, "__qualname__", None),
    )
