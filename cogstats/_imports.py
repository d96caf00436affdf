"""No import from data: when a ``"package.module:Class"`` name may import its module.

A gate (retrieval policy, spending function) named by import path makes cogstats import
the module, which runs its import-time code.  That is the user's own decision when the
name comes from the command line (``--gate mod:Class``) or from Python code the user
wrote (``make_gate("mod:Class")``): those import it, with the current directory
*appended* to ``sys.path`` for that import only (installed modules are found first, and
``sys.path`` is as it was afterwards).  A name that comes from *data* (a spec's gate
type, a state file's manifest, a report parameter) is resolved inside
:func:`from_data`: its module is imported only when the user allowed it explicitly, by
``--allow-import MODULE`` on the command line (which sets ``COGSTATS_ALLOW_IMPORT`` so
that spawned workers and report kernels inherit it), the ``allow_import=`` parameter of
the function that reads the data, or :func:`allow_imports` around the call.  A module
already imported runs no code and is always allowed, and registered names never import
anything of the user's.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from types import ModuleType

from cogstats._validation import ParameterError

__all__ = [
    "ENV",
    "EXTRAS",
    "allow_imports",
    "from_data",
    "import_module",
    "missing_extra",
    "trusted",
]

#: Environment variable holding the allowed modules (comma-separated), set by
#: ``--allow-import`` so that worker processes and report kernels inherit it.
ENV = "COGSTATS_ALLOW_IMPORT"

# None: the name comes from the user's own code (trusted); else (what, allowed modules)
_DATA: ContextVar[tuple[str, frozenset[str]] | None] = ContextVar("cogstats_data", default=None)
_ALLOWED: ContextVar[frozenset[str]] = ContextVar("cogstats_allowed", default=frozenset())


def _modules(modules: Iterable[str] | str | None) -> frozenset[str]:
    if modules is None:
        return frozenset()
    if isinstance(modules, str):
        modules = [modules]
    out: set[str] = set()
    for m in modules:
        if not isinstance(m, str) or not m.strip():
            raise ParameterError(f"allow_import must name modules (strings); got {m!r}")
        out.update(p.strip() for p in m.split(",") if p.strip())
    return frozenset(out)


@contextlib.contextmanager
def allow_imports(modules: Iterable[str] | str | None) -> Iterator[None]:
    """Allow names from data to import ``modules`` (and their submodules) within the block.

    Examples
    --------
    >>> from cogstats.gates import make_gate
    >>> with allow_imports(["my_gates"]):
    ...     pass
    """
    token = _ALLOWED.set(_ALLOWED.get() | _modules(modules))
    try:
        yield
    finally:
        _ALLOWED.reset(token)


@contextlib.contextmanager
def from_data(what: str, allow_import: Iterable[str] | str | None = None) -> Iterator[None]:
    """Resolve names inside the block as coming from data (``what``: "the spec x.toml").

    Examples
    --------
    >>> from cogstats.gates import get_gate
    >>> with from_data("a state file"):
    ...     get_gate("cycgraph").name  # registered names keep working
    'cycgraph'
    >>> with from_data("a state file"):
    ...     get_gate("email.mime.audio:MIMEAudio")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    cogstats._validation.ParameterError: gate 'email.mime.audio:MIMEAudio' comes from a state...
    """
    token = _DATA.set((what, _modules(allow_import)))
    try:
        yield
    finally:
        _DATA.reset(token)


@contextlib.contextmanager
def trusted() -> Iterator[None]:
    """Resolve names inside the block as the user's own code (leaves any outer rule)."""
    yield


def _allowed(module: str, allowed: frozenset[str]) -> bool:
    return any(module == a or module.startswith(a + ".") for a in allowed)


def import_module(module: str, what: str) -> ModuleType:
    """Import ``module`` for the name ``what`` (e.g. ``"gate 'mod:Class'"``), by the rules above.

    Raises
    ------
    ParameterError
        The name comes from data and its module is not allowed (the message says how to
        allow it).  ``ImportError`` propagates when the module cannot be imported.
    """
    data = _DATA.get()
    if data is not None and module not in sys.modules:
        source, allowed = data
        env = _modules(os.environ.get(ENV) or None)
        if not _allowed(module, allowed | _ALLOWED.get() | env):
            top = module.split(".")[0]
            raise ParameterError(
                f"{what} comes from {source}; cogstats does not import a module named by "
                f"data (its import-time code would run). If you trust {module!r}, allow it: "
                f"--allow-import {top} on the command line, allow_import=[{top!r}] in "
                f"Python (or with cogstats.gates.allow_imports([{top!r}]): ...), or set "
                f"{ENV}={top}"
            )
    if module in sys.modules:
        return sys.modules[module]
    cwd = os.getcwd()
    if cwd in sys.path or "" in sys.path:
        return importlib.import_module(module)
    sys.path.append(cwd)  # appended: installed modules are found first
    try:
        return importlib.import_module(module)
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(cwd)


#: Optional packages -> the extra of cogstats that installs them.
EXTRAS = {
    "numba": "sim",
    "tqdm": "sim",
    "papermill": "notebook",
    "nbformat": "notebook",
    "nbconvert": "notebook",
    "nbclient": "notebook",
    "ipykernel": "notebook",
    "jupyter_client": "notebook",
    "jupyterlab": "notebook",
    "altair": "notebook",
    "vl_convert": "notebook",
    "dask": "scale",
    "distributed": "scale",
    "faiss": "admission",
    "ipywidgets": "tune",
    "anywidget": "tune",
    "fastapi": "serve",
    "starlette": "serve",
    "pydantic": "serve",
    "uvicorn": "serve",
}


def missing_extra(exc: ModuleNotFoundError) -> str | None:
    """Return what to install for a missing optional package (None: not an extra's).

    Examples
    --------
    >>> missing_extra(ModuleNotFoundError("No module named 'papermill'", name="papermill"))
    "the optional package 'papermill' is not installed: pip install 'cogstats[notebook]'"
    """
    name = (exc.name or "").split(".")[0]
    extra = EXTRAS.get(name)
    if extra is None:
        return None
    return f"the optional package {name!r} is not installed: pip install 'cogstats[{extra}]'"
