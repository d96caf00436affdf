"""Registries of swappable parts: one shape for all of them.

Gates, retrieval policies, spending functions, estimators, presets, reports, defences and
vector indexes are each held by one :class:`Registry`: name -> value, where the value is
an :class:`Entry` (gates, retrieval policies, spending functions: a class or function with
its options dataclass), or the part's own record (an estimator's ``EstimatorSpec``, a
``Preset``, a ``Report``) or class (a defence, an index).  Every registry

- validates a name once, when it is registered (lower-case letters, digits and
  underscores; a name is registered once: the same object again is a re-import, fine);
- loads lazily: the built-in parts live in modules that are imported only when a name is
  asked for (one module for one name; all of them to list the registry), so importing a
  registry costs nothing;
- fails a lookup by name with the registered names and a near-miss suggestion
  (:meth:`Registry.entry`: "unknown gate 'x' (did you mean ...)", or
  :meth:`Registry.lookup`: "method must be one of [...]; got 'x' (did you mean ...)");
- is a read-only mapping for listing (``sorted(GATES)``, ``GATES.items()``), whose
  ``registry[name] = value`` and ``del registry[name]`` register and unregister.

A part of one's own registers itself with the registry's ``register`` decorator (or the
package's ``register_*`` function), and a gate, retrieval policy or spending function can
always be named by import path, ``"package.module:Class"``: the module is imported (in a
spawned sweep worker too, which is how such a worker finds it) and the class used,
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
from typing import Any, Generic, TypeVar, cast

from cogstats import _imports
from cogstats._validation import ParameterError, suggest

__all__ = ["Entry", "Registry", "resolve_import_path"]

E = TypeVar("E")

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_PATH = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
#: a kernel piece: a module (its ``PIECE``) or ``module:ATTR``
_KERNEL = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*(:[A-Za-z_]\w*)?$")


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
    kernel : str or None
        Where the simulator's compiled kernel has the part's piece: the import path of
        the module holding it (its ``PIECE``, e.g. ``"cogstats.gates.cycgraph.kernel"``),
        or ``"module:ATTR"`` for a module that holds the pieces of several parts (the
        retrieval policies', ``"cogstats.retrieval.kernel:POOL_PIECE"``), or None
        (the part runs in the reference engine).  Named once, by the part's registration
        (``register_gate(..., kernel=...)``, ``register_policy(..., kernel=...)``).
    kind : str
        What the registry holds ("gate", "retrieval policy", "spending function").
    """

    name: str
    cls: Any
    options: type
    description: str
    kernel: str | None = None
    kind: str = "part"

    @property
    def compiled(self) -> bool:
        """Whether the simulator's compiled kernel covers the part: it names a kernel piece.

        Derived from :attr:`kernel` (read-only; there is no second flag to keep equal).
        """
        return self.kernel is not None

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


class Registry(Mapping[str, E], Generic[E]):
    """Name -> registered value (an :class:`Entry`, a record or a class), loaded lazily.

    Parameters
    ----------
    kind : str
        What it holds, for messages ("gate").
    builtin : mapping, optional
        Built-in name -> the module that registers it (imported on first use).
    check : callable, optional
        ``check(obj)`` returns a complaint (a string) when ``obj`` cannot be such a part
        (e.g. a gate without ``evaluate``), else None.  Applied by :meth:`register`.
    param : str, optional
        The parameter that names a part, for :meth:`lookup`'s message (default: ``kind``).
    values : mapping, optional
        Parts registered at once (name -> value), in order.
    sort : bool
        Iterate in sorted name order (default) or in the order registered.

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

    A registry of records or classes (no :class:`Entry`) is filled with :meth:`add`:

    >>> COLOURS = Registry("colour", param="colour", values={"red": "#f00"})
    >>> COLOURS.add("blue", "#00f")
    '#00f'
    >>> sorted(COLOURS), COLOURS.lookup("red")
    (['blue', 'red'], '#f00')
    >>> COLOURS.lookup("bleu")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    cogstats._validation.ParameterError: colour must be one of ['blue', 'red']; got 'bleu' (di...
    """

    def __init__(
        self,
        kind: str,
        builtin: Mapping[str, str] | None = None,
        check: Callable[[Any], str | None] | None = None,
        *,
        param: str | None = None,
        values: Mapping[str, E] | None = None,
        sort: bool = True,
    ) -> None:
        self.kind = kind
        self.param = param or kind
        self.builtin = MappingProxyType(dict(builtin or {}))
        self.sort = sort
        self._check = check
        self._entries: dict[str, E] = {}
        for name, value in (values or {}).items():
            self.add(name, value)

    # ------------------------------------------------------------------ registration
    def add(self, name: str, value: E) -> E:
        """Register ``value`` under ``name`` (validated once); return ``value``.

        The same object under the same name again (a module imported twice) is fine;
        another object under a registered name is an error.
        """
        if not isinstance(name, str) or not _NAME.match(name):
            raise RuntimeError(
                f"{self.kind} name must be lower-case letters, digits and underscores; got {name!r}"
            )
        old = self._entries.get(name)
        if old is not None and not _same_object(_payload(old), _payload(value)):
            raise RuntimeError(
                f"{self.kind} {name!r} registered twice ({_payload(old)!r} and {_payload(value)!r})"
            )
        self._entries[name] = value
        return value

    def register(
        self,
        name: str,
        obj: Any = None,
        *,
        description: str,
        options: type | None = None,
        kernel: str | None = None,
    ) -> Any:
        """Add a part as an :class:`Entry`; use as a class decorator or call with the object.

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
        kernel : str, optional
            The import path of the module holding the part's compiled piece (its
            ``PIECE``), or ``"module:ATTR"`` (the piece is the module's attribute
            ``ATTR``), when the simulator's kernel covers it: then :attr:`Entry.compiled`
            is True.
        """

        def add(target: Any) -> Any:
            entry = self._validated(name, target, description, options, kernel)
            self.add(name, cast(E, entry))
            return target

        return add if obj is None else add(obj)

    def _validated(
        self, name: str, obj: Any, description: str, options: type | None, kernel: str | None
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
        if kernel is not None and not (isinstance(kernel, str) and _KERNEL.match(kernel)):
            raise RuntimeError(
                f"{where}: kernel must be the import path of the module holding its compiled "
                "piece, e.g. 'cogstats.gates.cycgraph.kernel' (its PIECE), or 'module:ATTR'; "
                f"got {kernel!r}"
            )
        return Entry(name, obj, opts, description.strip(), kernel, self.kind)

    def unregister(self, name: str) -> None:
        """Remove a registered part.

        A built-in one comes back on the next lookup only if its module is imported again,
        which Python does not do: leave those alone.
        """
        if name not in self._entries:
            raise ParameterError(f"no {self.kind} {name!r} is registered")
        del self._entries[name]

    def __setitem__(self, name: str, value: E) -> None:
        self.add(name, value)

    def __delitem__(self, name: str) -> None:
        if name not in self._entries:
            raise KeyError(name)
        del self._entries[name]

    # ------------------------------------------------------------------ lookup
    def load(self) -> Registry[E]:
        """Import every built-in module, so the registry is complete; return it."""
        for module in self.builtin.values():
            importlib.import_module(module)
        return self

    def names(self) -> list[str]:
        """Return every registered name (the built-in ones loaded), in iteration order."""
        return list(self)

    def lookup(self, name: str) -> E:
        """Return the value registered as ``name``; else an error naming the registered ones.

        The message reads ``"<param> must be one of [...]; got 'x' (did you mean ...)"``.
        """
        if isinstance(name, str) and name in self:
            try:
                return self[name]
            except KeyError:
                pass
        names = sorted(self)
        hint = suggest(name, names) if isinstance(name, str) else ""
        raise ParameterError(f"{self.param} must be one of {names}; got {name!r}{hint}")

    def entry(self, name: str) -> E:
        """Return the entry of ``name``: a registered name or an import path ``"pkg.mod:Class"``."""
        if not isinstance(name, str):
            raise ParameterError(f"{self.kind} must be a name string; got {name!r}")
        if name in self._entries:
            return self._entries[name]
        if name in self.builtin:
            importlib.import_module(self.builtin[name])
            return self._entries[name]
        if ":" in name:
            return cast(E, self._from_path(name))
        self.load()
        names = sorted(self._entries)
        raise ParameterError(
            f"unknown {self.kind} {name!r}{suggest(name, names)}; registered: {names}, or "
            "name one of your own by import path 'package.module:Class'"
        )

    def make(self, name: str, **options: Any) -> Any:
        """Build the part ``name`` with ``options`` (validated by its class)."""
        return cast(Any, self.entry(name)).make(**options)

    def _from_path(self, path: str) -> Entry:
        obj = resolve_import_path(path, self.kind)
        for entry in self._entries.values():
            if isinstance(entry, Entry) and _same_object(entry.cls, obj):
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
        return Entry(path, obj, obj, doc[0] if doc else path, None, self.kind)

    # ------------------------------------------------------------------ Mapping
    def __getitem__(self, name: str) -> E:
        if name not in self._entries and name in self.builtin:
            importlib.import_module(self.builtin[name])
        return self._entries[name]

    def __iter__(self) -> Iterator[str]:
        self.load()
        return iter(sorted(self._entries) if self.sort else list(self._entries))

    def __len__(self) -> int:
        self.load()
        return len(self._entries)

    def __contains__(self, name: object) -> bool:
        if isinstance(name, str) and name in self.builtin:
            return True
        return name in self._entries

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {list(self)})"


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
    try:  # a name from data imports only an allowed module (cogstats._imports)
        module = _imports.import_module(module_name, f"{kind} {path!r}")
    except ImportError as exc:
        raise ParameterError(f"cannot import {kind} {path!r}: {exc}") from None
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ParameterError(f"cannot import {kind} {path!r}: {module_name} has no {attr!r}")
        obj = getattr(obj, part)
    return obj


def _payload(value: Any) -> Any:
    """Return what identifies a registered value: an entry's class, a spec's function."""
    if isinstance(value, Entry):
        return value.cls
    function = getattr(value, "function", None)
    return function if callable(function) else value


def _same_object(a: Any, b: Any) -> bool:
    """Tell whether ``a`` and ``b`` are the same class or function, also across a re-import."""
    if a is b:
        return True
    if not isinstance(a, type) and not callable(a):
        return False
    key = (getattr(a, "__module__", None), getattr(a, "__qualname__", None))
    return key[1] is not None and key == (
        getattr(b, "__module__", None),
        getattr(b, "__qualname__", None),
    )
