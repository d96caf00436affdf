"""The sweep store: one Parquet part per finished cell, a manifest, and a session log.

Layout of a store folder ``DIR``::

    DIR/manifest.json        the resolved spec, root seed, replicates, cell keys,
                             package versions and git commit of the run that made it
    DIR/sessions.jsonl       one line when a run starts and one when it ends
    DIR/parts/cell-000017-<key>.parquet
                             one row: the finished cell

A part is written to a temporary file in ``parts/`` and moved into place with
``os.replace`` (atomic on POSIX), so a run killed at any instant leaves either the whole
cell or no trace of it in the table; its file name carries the cell's index and key, so a
cell can never be counted twice.  Re-running the same command against the same ``DIR``
skips the finished cells and runs the rest; a ``DIR`` whose manifest disagrees with the
command (another spec, seed or number of replicates) is refused before anything runs.

Recovery.  A part that does not read back as its cell (truncated, empty, garbage, another
cell's row: a disk or a copy went wrong, since the store's own writes are atomic) is
named in a :class:`StoreWarning`, moved aside to ``DIR/damaged/`` and run again when
the sweep resumes; :func:`read_sweep` refuses to read a store holding one, naming the
file.  A damaged ``manifest.json`` is a
:class:`StoreCorruptError` saying how to recover: move it aside and run the same command
again; the store then recomputes the manifest from the command and keeps the finished
parts when every one carries the recomputed manifest's pin (a hidden ``store_pin``
column: the hash of spec, seed and replicates) and its cell key, else refuses, so no
finished cell is lost or counted for another sweep.
"""

from __future__ import annotations

import datetime as _dt
import io
import json
import os
import platform
import re
import socket
import subprocess
import uuid
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path
from typing import Any, cast

import polars as pl

from cogstats._validation import CogstatsError
from cogstats.sweep.spec import CellTask, SweepSpec, canonical_json

__all__ = [
    "FORMAT_VERSION",
    "TIMING_COLUMNS",
    "StoreCorruptError",
    "StoreMismatchError",
    "StoreWarning",
    "SweepStore",
    "make_manifest",
    "read_manifest",
    "read_sweep",
]

FORMAT_VERSION = 1
MANIFEST = "manifest.json"
#: hidden column of every part: the hash of what the manifest pins (for recovery)
PIN_COLUMN = "store_pin"
DAMAGED = "damaged"
SESSIONS = "sessions.jsonl"
PARTS = "parts"
#: per-cell wall-clock columns: kept in the parts, left out of the table by default
TIMING_COLUMNS: tuple[str, ...] = ("elapsed_s", "worker")
#: what a resumed run must agree on with the manifest
PINNED = ("format", "spec", "seed", "replicates")
_PART = re.compile(r"^cell-(\d{6,})-([0-9a-f]{16})\.parquet$")
_TMP = re.compile(r"^\.tmp-(\d+)-[0-9a-f]+\.parquet$")
_VERSIONED = (
    "cogstats",
    "numpy",
    "scipy",
    "numba",
    "polars",
    "pyarrow",
    "statsmodels",
    "dask",
    "distributed",
)


class StoreMismatchError(CogstatsError):
    """The store folder belongs to another sweep (spec, seed or replicates differ)."""


class StoreCorruptError(CogstatsError):
    """A store file does not read (a damaged manifest or part); the message says what to do."""


class StoreWarning(UserWarning):
    """A damaged part was moved aside (its cell runs again)."""


def versions() -> dict[str, str | None]:
    """Installed versions of Python and the packages that shape the numbers."""
    out: dict[str, str | None] = {"python": platform.python_version()}
    for name in _VERSIONED:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def git_state() -> dict[str, Any]:
    """Return the git commit of the cogstats checkout (and whether tracked files differ from it).

    ``{"commit": None, "dirty": None}`` when cogstats is not run from a git checkout.
    """
    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():
        return {"commit": None, "dirty": None}
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        status = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}
    return {"commit": head or None, "dirty": bool(status.strip())}


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def make_manifest(spec: SweepSpec, *, replicates: int, seed: int) -> dict[str, Any]:
    """Make the manifest of a sweep run: what it pins (spec, seed, replicates) and provenance.

    Examples
    --------
    >>> from cogstats.sweep import sweep_from_dict
    >>> spec = sweep_from_dict({"runs": 5, "lessons": {"listed": [{"id": "a", "effect": 0}]},
    ...                         "grid": {"runs": [5, 6]}})
    >>> m = make_manifest(spec, replicates=3, seed=1)
    >>> m["n_cells"], m["seed"], m["replicates"], m["axes"]
    (2, 1, 3, ['runs'])
    """
    cells = spec.cells(replicates=replicates, seed=seed)
    resolved = spec.resolved()
    return {
        "format": FORMAT_VERSION,
        "name": spec.name,
        "source": spec.source,
        "base": spec.base,
        "seed": seed,
        "replicates": replicates,
        "n_cells": len(cells),
        "axes": list(spec.axes),
        "column_types": spec.column_types(),
        "cell_keys": [c.key for c in cells],
        "spec": resolved,
        "spec_sha256": _sha(canonical_json(resolved)),
        "created": _now(),
        "versions": versions(),
        "git": git_state(),
        "host": socket.gethostname(),
    }


def pin_hash(manifest: Mapping[str, Any]) -> str:
    """Return the SHA-256 of what a manifest pins (format, spec, seed, replicates).

    Every part carries it, so a store whose manifest was lost can be told to be this
    sweep's, part by part.
    """
    return _sha(canonical_json({k: manifest.get(k) for k in PINNED}))


def _sha(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()


def _diff(a: Any, b: Any, path: str = "") -> list[str]:
    """Dotted paths where two JSON-like values differ (first few)."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        out: list[str] = []
        for k in sorted(set(a) | set(b), key=str):
            sub = f"{path}.{k}" if path else str(k)
            if k not in a:
                out.append(f"{sub}: absent in the store, {b[k]!r} now")
            elif k not in b:
                out.append(f"{sub}: {a[k]!r} in the store, absent now")
            else:
                out += _diff(a[k], b[k], sub)
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        out = []
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            out += _diff(x, y, f"{path}[{i}]")
        return out
    if canonical_json(a) != canonical_json(b):
        return [f"{path}: {a!r} in the store, {b!r} now"]
    return []


def _atomic_write(path: Path, data: bytes) -> None:
    tmp = path.parent / f".tmp-{os.getpid()}-{uuid.uuid4().hex}{path.suffix}"
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def read_manifest(directory: str | Path) -> dict[str, Any]:
    """Read the manifest of a sweep store (raises FileNotFoundError when there is none)."""
    path = Path(directory) / MANIFEST
    if not path.exists():
        raise FileNotFoundError(f"no sweep store at {directory} (no {MANIFEST})")
    return _load_manifest(path)


def _load_manifest(path: Path) -> dict[str, Any]:
    """Return the manifest, or raise a StoreCorruptError naming the file and the way back."""
    problem = None
    try:
        data = json.loads(path.read_bytes().decode("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        problem = f"{type(exc).__name__}: {str(exc)[:120]}"
    else:
        keys = data.get("cell_keys") if isinstance(data, dict) else None
        if not isinstance(data, dict):
            problem = f"it holds a {type(data).__name__}, not the manifest object"
        elif not (isinstance(keys, list) and all(isinstance(k, str) for k in keys)):
            problem = "it has no list of cell keys"
        elif not all(k in data for k in (*PINNED, "column_types", "n_cells")):
            missing = [k for k in (*PINNED, "column_types", "n_cells") if k not in data]
            problem = f"it lacks {missing}"
    if problem is None:
        return cast(dict[str, Any], data)
    directory = path.parent
    raise StoreCorruptError(
        f"{path} is damaged ({problem}). The finished cells in {directory / PARTS} are "
        f"intact. To recover, move the manifest aside (mv {path} {path}.damaged) and run "
        f"the same sweep command with --out {directory} again: the manifest is recomputed "
        "from the command and every finished cell whose key it pins is kept, the rest run"
    )


class SweepStore:
    """A sweep store folder (see the module notes): open it, list, write and read cells.

    Use :meth:`open` to create a store or check that an existing one belongs to the same
    sweep; :func:`read_sweep` reads a finished (or partial) table.

    Examples
    --------
    >>> import tempfile
    >>> from cogstats.sweep import sweep_from_dict
    >>> spec = sweep_from_dict({"runs": 5, "lessons": {"listed": [{"id": "a", "effect": 0}]},
    ...                         "grid": {"runs": [5, 6]}})
    >>> store = SweepStore.open(tempfile.mkdtemp(), make_manifest(spec, replicates=3, seed=1))
    >>> store.done()
    {}
    """

    def __init__(self, directory: str | Path, manifest: Mapping[str, Any]) -> None:
        self.directory = Path(directory)
        self.manifest = dict(manifest)
        self.parts = self.directory / PARTS

    @classmethod
    def open(cls, directory: str | Path, manifest: Mapping[str, Any]) -> SweepStore:
        """Create the store, or reopen it when its manifest pins the same sweep.

        Raises
        ------
        StoreMismatchError
            The folder holds another sweep: the message lists what differs.
        """
        directory = Path(directory)
        path = directory / MANIFEST
        if path.exists():
            stored = _load_manifest(path)
            problems = []
            for key in PINNED:
                if key == "spec":
                    problems += _diff(stored.get("spec"), manifest["spec"], "spec")
                elif stored.get(key) != manifest[key]:
                    problems.append(
                        f"{key}: {stored.get(key)!r} in the store, {manifest[key]!r} now"
                    )
            if problems:
                shown = "; ".join(problems[:6]) + (" ..." if len(problems) > 6 else "")
                raise StoreMismatchError(
                    f"{directory} holds another sweep ({shown}); pass a new --out folder "
                    "(or delete this one) to run this sweep"
                )
            store = cls(directory, stored)
        else:
            if directory.exists() and any(directory.iterdir()):
                _check_adoptable(directory, manifest)
            directory.mkdir(parents=True, exist_ok=True)
            _atomic_write(path, (json.dumps(dict(manifest), indent=1) + "\n").encode())
            store = cls(directory, manifest)
        store.parts.mkdir(exist_ok=True)
        store._clean_temporaries()
        store._set_aside_damaged()
        return store

    def _set_aside_damaged(self) -> list[Path]:
        """Move parts that do not read back as their cell to ``damaged/`` (they run again)."""
        import warnings

        moved = []
        for p in self.part_files():
            problem = self._part_problem(p)
            if problem is None:
                continue
            aside = self.directory / DAMAGED
            aside.mkdir(exist_ok=True)
            target = aside / f"{p.name}.{uuid.uuid4().hex[:8]}"
            os.replace(p, target)
            moved.append(target)
            warnings.warn(
                StoreWarning(
                    f"the cell part {p} does not read ({problem}); moved to {target}, and "
                    "the cell runs again"
                ),
                stacklevel=3,
            )
            self.log(event="damaged_part", part=p.name, moved_to=str(target), problem=problem)
        return moved

    def _part_problem(self, path: Path) -> str | None:
        """Why ``path`` is not its cell's one-row table (None when it is)."""
        m = _PART.match(path.name)
        if m is None:  # pragma: no cover - part_files lists matching names only
            return "not a part name"
        try:
            frame = pl.read_parquet(path)
        except Exception as exc:  # polars raises several types; all mean "cannot read it"
            text = str(exc).strip().splitlines()
            return f"{type(exc).__name__}: {text[0][:120] if text else ''}"
        index, key = int(m.group(1)), m.group(2)
        if frame.height != 1 or not {"cell", "cell_key"} <= set(frame.columns):
            return f"{frame.height} rows with columns {frame.columns[:4]}, not a cell's row"
        if frame["cell"][0] != index or frame["cell_key"][0] != key:
            return f"it holds cell {frame['cell'][0]!r} ({frame['cell_key'][0]!r})"
        return None

    def _clean_temporaries(self) -> None:
        """Delete temporary parts left by runs that died (their process is gone)."""
        for p in self.parts.iterdir():
            m = _TMP.match(p.name)
            if m and not _alive(int(m.group(1))):
                p.unlink(missing_ok=True)

    def part_files(self) -> list[Path]:
        """Return the finished parts, in cell order."""
        files = (
            [p for p in self.parts.iterdir() if _PART.match(p.name)] if self.parts.exists() else []
        )
        return sorted(files, key=lambda p: p.name)

    def done(self) -> dict[int, str]:
        """Finished cells: index -> key.

        Raises
        ------
        StoreMismatchError
            A part whose key is not the manifest's key for its index.
        """
        keys = self.manifest["cell_keys"]
        out: dict[int, str] = {}
        for p in self.part_files():
            m = _PART.match(p.name)
            if m is None:  # pragma: no cover - part_files lists matching names only
                continue
            index, key = int(m.group(1)), m.group(2)
            if index >= len(keys) or keys[index] != key:
                raise StoreMismatchError(
                    f"{p} does not belong to this sweep (cell {index} has key "
                    f"{keys[index] if index < len(keys) else None!r}); the store is corrupt"
                )
            out[index] = key
        return out

    def write_cell(
        self, task: CellTask, summary: Mapping[str, Any], *, elapsed_s: float, worker: str
    ) -> Path:
        """Write one finished cell atomically; return its part file."""
        frame = cell_frame(task, summary, self.manifest["column_types"])
        frame = frame.with_columns(
            pl.lit(float(elapsed_s), dtype=pl.Float64).alias("elapsed_s"),
            pl.lit(str(worker), dtype=pl.String).alias("worker"),
            pl.lit(pin_hash(self.manifest), dtype=pl.String).alias(PIN_COLUMN),
        )
        buf = io.BytesIO()
        frame.write_parquet(buf)
        path = self.parts / f"cell-{task.index:06d}-{task.key}.parquet"
        _atomic_write(path, buf.getvalue())
        return path

    def log(self, **entry: Any) -> None:
        """Append one line to ``sessions.jsonl``."""
        line = json.dumps({"time": _now(), "pid": os.getpid(), **entry}, default=str)
        with open(self.directory / SESSIONS, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")

    def read(self, *, timings: bool = False) -> pl.DataFrame:
        """Read the table of finished cells, sorted by cell (see :func:`read_sweep`)."""
        self.done()  # check that every part belongs here
        files = self.part_files()
        if not files:
            schema: dict[str, Any] = {"cell": pl.Int64, "cell_key": pl.String}
            schema.update({a: _DTYPES[t] for a, t in self.manifest["column_types"].items()})
            schema.update({"seed": pl.String, "replicates": pl.Int64})
            return pl.DataFrame(schema=schema)
        frames = []
        for f in files:
            problem = self._part_problem(f)
            if problem is not None:
                raise StoreCorruptError(
                    f"the cell part {f} does not read ({problem}); run the same sweep "
                    f"command with --out {self.directory} again: it moves the part aside to "
                    f"{self.directory / DAMAGED} and runs that cell again"
                )
            frames.append(pl.read_parquet(f))
        table = pl.concat(frames, how="diagonal").sort("cell")
        table = table.drop([c for c in (PIN_COLUMN,) if c in table.columns])
        if not timings:
            table = table.drop([c for c in TIMING_COLUMNS if c in table.columns])
        return table


_DTYPES: dict[str, Any] = {
    "bool": pl.Boolean,
    "int": pl.Int64,
    "float": pl.Float64,
    "str": pl.String,
    "json": pl.String,
}


def _check_adoptable(directory: Path, manifest: Mapping[str, Any]) -> None:
    """Allow a store folder without a manifest only when it is this sweep's (recovery).

    Its contents must be a store's (parts, the session log, set-aside files) and every
    part's key the new manifest's key for that cell; anything else is refused.
    """
    known = {PARTS, SESSIONS, DAMAGED}
    odd = [
        p.name
        for p in directory.iterdir()
        if p.name not in known and not p.name.startswith(MANIFEST)
    ]
    if odd or not (directory / PARTS).is_dir():
        raise StoreMismatchError(
            f"{directory} exists, is not empty and has no {MANIFEST}: not a sweep "
            "store; pass a new --out folder"
        )
    keys = manifest["cell_keys"]
    pin = pin_hash(manifest)
    for p in (directory / PARTS).iterdir():
        m = _PART.match(p.name)
        if m is None:
            continue
        index, key = int(m.group(1)), m.group(2)
        try:
            stored = pl.read_parquet(p, columns=[PIN_COLUMN])[PIN_COLUMN].to_list()
        except Exception:  # unreadable, or written before the pin: cannot be vouched for
            stored = []
        if index >= len(keys) or keys[index] != key or stored != [pin]:
            raise StoreMismatchError(
                f"{directory} has no {MANIFEST} and its part {p.name} is not a cell of this "
                "sweep (another spec, seed or replicates made it, or it does not read); "
                "pass a new --out folder, or move that part aside"
            )


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _axis_value(value: Any, kind: str) -> Any:
    if kind == "float":
        return float(value)
    if kind == "json":
        return canonical_json(value)
    return value


def cell_frame(
    task: CellTask, summary: Mapping[str, Any], column_types: Mapping[str, str]
) -> pl.DataFrame:
    """One cell's row with a fixed schema: cell, cell_key, grid values, seed, summary.

    Grid columns are typed by the axis (see :meth:`SweepSpec.column_types`); ``cell``
    and ``replicates`` are Int64, ``seed`` the JSON of the cell's SeedSequence (as
    ``cogstats simulate`` writes it), every other summary value Float64.
    """
    columns: dict[str, pl.Series] = {
        "cell": pl.Series("cell", [task.index], dtype=pl.Int64),
        "cell_key": pl.Series("cell_key", [task.key], dtype=pl.String),
    }
    for axis, kind in column_types.items():
        columns[axis] = pl.Series(axis, [_axis_value(task.values[axis], kind)], dtype=_DTYPES[kind])
    columns["seed"] = pl.Series("seed", [json.dumps(dict(task.seed))], dtype=pl.String)
    for name, value in summary.items():
        if name == "replicates":
            columns[name] = pl.Series(name, [int(value)], dtype=pl.Int64)
        elif isinstance(value, str):  # e.g. the engine that ran the cell
            columns[name] = pl.Series(name, [value], dtype=pl.String)
        else:
            columns[name] = pl.Series(
                name, [None if value is None else float(value)], dtype=pl.Float64
            )
    return pl.DataFrame(list(columns.values()))


def read_sweep(directory: str | Path, *, timings: bool = False) -> pl.DataFrame:
    """Read the cell table of a sweep store: one row per finished cell, sorted by cell.

    Parameters
    ----------
    directory : str or Path
        The store (``--out`` of ``cogstats sweep``).
    timings : bool
        Also return the wall-clock columns (``elapsed_s``, ``worker``).  They are left
        out by default: the rest of the table does not depend on the executor, the
        number of workers or interruptions.

    Returns
    -------
    polars.DataFrame
        ``cell``, ``cell_key``, one column per grid axis (named by its dotted path),
        ``seed`` (JSON of the cell's SeedSequence: ``numpy.random.SeedSequence(**json.
        loads(seed))``), ``replicates``, every simulator metric with ``<metric>_mcse``,
        the first-outcome rates and ``mean_decision_run``.  A partial sweep gives the
        finished cells only (compare the height with ``read_manifest(d)["n_cells"]``).

    Examples
    --------
    >>> import tempfile
    >>> from cogstats.sweep import sweep_from_dict, sweep_spec
    >>> spec = sweep_from_dict({
    ...     "runs": 12, "replicates": 20, "seed": 3,
    ...     "lessons": {"listed": [{"id": "bad", "effect": -0.3, "kind": "poison"}]},
    ...     "grid": {"gate.min_trials": [2, 4]},
    ... })
    >>> d = tempfile.mkdtemp()
    >>> _ = sweep_spec(spec, out=d, workers=1, progress=False)
    >>> read_sweep(d).select("cell", "gate.min_trials", "replicates").rows()
    [(0, 2, 20), (1, 4, 20)]
    """
    directory = Path(directory)
    return SweepStore(directory, read_manifest(directory)).read(timings=timings)
