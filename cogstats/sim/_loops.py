"""The compiled run loop per gate: generated, cached on disk, in step with its sources.

**One loop per gate.**  The run loop's source is written once (:mod:`cogstats.sim._loop`);
a gate's step enters it by one line.  numba cannot disk-cache a function that takes
another compiled function as an argument, and a loop dispatching over a list of the gates
it knows would need an edit for every new gate; so for each gate the simulator runs,
:func:`loop_for` writes a copy of the loop's source whose line marked ``GATE-STEP``
imports that gate's step (its compiled piece's ``step``, from wherever the gate was
registered: a folder of this package or one of the user's), imports the copy as a module
and returns its ``run_chunk``, compiled with numba's disk cache.  A gate registered from
a temporary folder runs compiled like a built-in one, and adding a compiled gate edits
no line of the loop.

**The cache follows the sources.**  A copy's file name carries the digest of every
source it compiles: the loop, the kernel toolkit (:mod:`cogstats.kernel`), the retrieval
policies' piece, the score model, :mod:`cogstats.numerics` and :mod:`cogstats._codes`,
the gate's piece and its folder's modules, and the rule modules the piece compiles
(:func:`cogstats.kernel.compiled_sources`).  An edit to any of them gives another file name, which
numba compiles afresh (its disk cache is keyed on the file); the copies of older digests
of the same gate go, with their cache.  The pieces' own functions are not cached apart
(only the loops are), so no stale piece is ever linked into a loop.

**Where.**  ``cogstats/sim/__pycache__/loops/`` beside the package, or, where that is
not writable, ``$NUMBA_CACHE_DIR/cogstats-loops`` or the system's temporary folder.  The
first run of a gate compiles its loop (tens of seconds); later processes load it.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import re
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

__all__ = ["loop_for", "loop_source"]

_HERE = Path(__file__).resolve().parent
_PACKAGE = _HERE.parent
_TEMPLATE = _HERE / "_loop.py"
_MARKER = re.compile(r"^from \S+ import \S+ as gate_step  # GATE-STEP$", re.M)
#: files every loop compiles, relative to the package
_SHARED = (
    "sim/_loop.py",
    "sim/_kernel_score.py",
    "kernel/__init__.py",
    "kernel/state.py",
    "kernel/tdist.py",
    "retrieval/kernel.py",
    "numerics.py",
    "_codes.py",
)
_LOCK = threading.Lock()
_LOOPS: dict[tuple[str, str], Any] = {}


def loop_for(step: tuple[str, str] | None) -> Any:
    """Return the compiled run loop of a gate's step, ``(module, function)`` (None: no gate).

    Generated and imported once a process (thread-safe); numba compiles it on the first
    call, or loads it from its disk cache.
    """
    key = step or ("cogstats.kernel", "no_gate")
    with _LOCK:
        loop = _LOOPS.get(key)
        if loop is None:
            loop = _load(*key)
            _LOOPS[key] = loop
    return loop


def loop_source(module: str, function: str) -> str:
    """Return the run loop's source with the gate's step imported on the marked line."""
    text = _TEMPLATE.read_text(encoding="utf-8")
    line = f"from {module} import {function} as gate_step  # GATE-STEP"
    out, n = _MARKER.subn(line, text)
    if n != 1:  # pragma: no cover - the template has exactly one marked line
        raise RuntimeError(f"{_TEMPLATE} must have one line marked GATE-STEP; found {n}")
    return out


def _sources(module: str) -> list[Path]:
    """Every source file the loop of ``module``'s step compiles (sorted, resolved)."""
    from cogstats.kernel import compiled_sources

    piece = Path(importlib.import_module(module).__file__ or "").resolve()
    files = {(_PACKAGE / rel).resolve() for rel in _SHARED}
    files |= {p.resolve() for p in piece.parent.glob("*.py")}  # the gate's folder
    for owner in [piece, *files]:
        files |= {Path(f) for f in compiled_sources(owner)}
    return sorted(files)


def _digest(module: str, function: str) -> str:
    h = hashlib.sha256(f"{module}:{function}\0".encode())
    # names and contents, not where they are (a folder moved keeps its loop)
    parts = sorted(
        (path.name.encode(), path.read_bytes() if path.exists() else b"")
        for path in _sources(module)
    )
    for name, data in parts:
        h.update(name + b"\0" + data)
    return h.hexdigest()[:16]


def _folder() -> Path:
    """Return the folder the generated loops go to (the first writable candidate)."""
    candidates = [_HERE / "__pycache__" / "loops"]
    if os.environ.get("NUMBA_CACHE_DIR"):
        candidates.append(Path(os.environ["NUMBA_CACHE_DIR"]) / "cogstats-loops")
    candidates.append(Path(tempfile.gettempdir()) / f"cogstats-loops-{os.getuid()}")
    for folder in candidates:
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError:
            continue
        if os.access(folder, os.W_OK):
            return folder
    raise RuntimeError(f"no writable folder for the compiled run loops among {candidates}")


def _load(module: str, function: str) -> Any:
    """Write (when new), import and return the loop of one gate's step."""
    importlib.import_module(module)  # the piece first: its compiled rules are recorded
    folder = _folder()
    prefix = "loop_" + re.sub(r"\W", "_", f"{module}_{function}")
    stem = f"{prefix}_{_digest(module, function)}"
    path = folder / f"{stem}.py"
    if not path.exists():
        tmp = folder / f".{stem}.{os.getpid()}.tmp"
        tmp.write_text(loop_source(module, function), encoding="utf-8")
        os.replace(tmp, path)
        _forget_older(folder, prefix, stem)
    name = f"cogstats_loops.{stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:  # pragma: no cover - a .py file always loads
        raise RuntimeError(f"cannot import the generated run loop {path}")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod.run_chunk


def _forget_older(folder: Path, prefix: str, keep: str) -> None:
    """Delete the other digests' copies of a gate's loop and their numba cache files."""
    pattern = re.compile(re.escape(prefix) + r"_[0-9a-f]{16}$")
    for old in folder.glob(f"{prefix}_*.py"):
        if old.stem != keep and pattern.match(old.stem):
            old.unlink(missing_ok=True)
            for cached in (folder / "__pycache__").glob(f"{old.stem}.*"):
                cached.unlink(missing_ok=True)
