"""The streaming gate's state file: one zip archive (numpy ``.npz``), written atomically.

The file holds ``manifest.json`` (format, version, the gate's registry name and options,
candidates, the previous look's decisions, ingest markers and skipped lines, the
statistics' totals and column types), ``runs.json`` (run ids, listed lesson ids, covariate
columns, lesson ids) and the statistics as ``.npy`` arrays (``scores``, ``lesson_*``,
``xtx``, ...; confseq's running sums under ``confseq/``, a deprecated adapter's own
state under ``adapter/``).  See docs/production.md, "Streaming gates".

Versions: 2 (this one) keeps confseq's sums under ``confseq/``; version 1 (cogstats
before the statistics package) kept them under ``adapter/``, which :func:`upgrade_arrays`
renames on reading, so version-1 files load unchanged.
"""

from __future__ import annotations

import dataclasses
import io
import json
import math
import os
import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from cogstats._validation import ParameterError

__all__ = [
    "READABLE_VERSIONS",
    "STATE_FORMAT",
    "STATE_VERSION",
    "read_state",
    "upgrade_arrays",
    "write_state",
]

#: The ``format`` field of a saved state.
STATE_FORMAT = "cogstats.streaming-gate"
#: The ``version`` field of a saved state (a state of another version raises on load).
STATE_VERSION = 2
#: The versions :func:`read_state` reads (1: confseq's sums under ``adapter/``).
READABLE_VERSIONS = (1, 2)


def write_state(
    path: Path,
    manifest: Mapping[str, Any],
    runs: Mapping[str, Any],
    arrays: Mapping[str, np.ndarray],
) -> Path:
    """Write the state to ``path`` (a temporary file in the same folder, then renamed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_STORED) as zf:
                zf.writestr("manifest.json", json.dumps(manifest, allow_nan=False))
                zf.writestr("runs.json", json.dumps(runs, allow_nan=False))
                for name, value in arrays.items():
                    buf = io.BytesIO()
                    np.save(buf, value, allow_pickle=False)
                    zf.writestr(f"{name}.npy", buf.getvalue())
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def read_state(path: Path) -> tuple[dict[str, Any], dict[str, Any], dict[str, np.ndarray]]:
    """Return ``(manifest, runs, arrays)`` of a state file of a readable version.

    Raises
    ------
    ParameterError
        For a file that is not a streaming-gate state, or of another version.
    """
    try:
        zf = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as exc:
        raise ParameterError(f"{path}: not a streaming-gate state file ({exc})") from None
    with zf:
        names = set(zf.namelist())
        if "manifest.json" not in names or "runs.json" not in names:
            raise ParameterError(f"{path}: not a streaming-gate state file (no manifest)")
        manifest = json.loads(zf.read("manifest.json"))
        if manifest.get("format") != STATE_FORMAT:
            raise ParameterError(
                f"{path}: format {manifest.get('format')!r} is not {STATE_FORMAT!r}"
            )
        version = manifest.get("version")
        if version not in READABLE_VERSIONS:
            raise ParameterError(
                f"{path}: state version {version!r}; this cogstats reads versions "
                f"{list(READABLE_VERSIONS)} (it writes version {STATE_VERSION})"
            )
        runs = json.loads(zf.read("runs.json"))
        arrays = {
            n[: -len(".npy")]: np.load(io.BytesIO(zf.read(n)), allow_pickle=False)
            for n in names
            if n.endswith(".npy")
        }
    return manifest, runs, arrays


def upgrade_arrays(
    manifest: Mapping[str, Any], arrays: Mapping[str, np.ndarray], *, confseq: bool
) -> dict[str, np.ndarray]:
    """Return a file's arrays in this version's names.

    Version 1 kept confseq's running sums under ``adapter/`` (the evidence gate's
    adapter); a gate that keeps them (``confseq=True``) reads them under ``confseq/``.
    """
    if manifest.get("version") != 1 or not confseq:
        return dict(arrays)
    return {
        ("confseq/" + k[len("adapter/") :] if k.startswith("adapter/") else k): v
        for k, v in arrays.items()
    }


def policy(gate: Any) -> dict[str, Any]:
    """Return a gate's options: its ``to_policy()``, else its dataclass fields."""
    to_policy = getattr(gate, "to_policy", None)
    if callable(to_policy):
        return dict(to_policy())
    if dataclasses.is_dataclass(gate):
        return {f.name: getattr(gate, f.name) for f in dataclasses.fields(gate) if f.init}
    raise ParameterError(
        f"cannot save the options of {type(gate).__name__}: a gate's options are its "
        "dataclass fields or its to_policy()"
    )


def encode(value: Any, where: str) -> Any:
    """Return JSON-ready options (tuples tagged so that they come back as tuples)."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            return {"__float__": repr(value)}
        return value
    if isinstance(value, tuple):
        return {"__tuple__": [encode(v, where) for v in value]}
    if isinstance(value, list):
        return [encode(v, where) for v in value]
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise ParameterError(f"{where}: mapping keys must be strings; got {k!r}")
            out[k] = encode(v, where)
        return out
    raise ParameterError(
        f"{where} must be JSON values (numbers, strings, booleans, null, lists, tuples, "
        f"mappings) to be saved; got {type(value).__name__} {value!r}"
    )


def decode(value: Any) -> Any:
    """Invert :func:`encode`."""
    if isinstance(value, list):
        return [decode(v) for v in value]
    if isinstance(value, dict):
        if set(value) == {"__tuple__"}:
            return tuple(decode(v) for v in value["__tuple__"])
        if set(value) == {"__float__"}:
            return float(value["__float__"])
        return {k: decode(v) for k, v in value.items()}
    return value


def version() -> str:
    """Return the cogstats version that writes the file."""
    try:
        from cogstats._version import __version__

        return __version__
    except ImportError:  # pragma: no cover
        return "unknown"
