"""The streaming gate's state file: one zip archive (numpy ``.npz``), written atomically.

The file holds ``manifest.json`` (format, version, the gate's registry name and options,
candidates, the previous look's decisions, ingest markers and skipped lines, the
statistics' totals and column types), ``runs.json`` (run ids, listed lesson ids, covariate
columns, lesson ids) and the statistics as ``.npy`` arrays (``scores``, ``lesson_*``,
``xtx``, ...; confseq's running sums under ``confseq/``).  See docs/production.md,
"Streaming gates".

Versions: 2 (this one) keeps confseq's sums under ``confseq/``; version 1 (cogstats
before the statistics package) kept them under ``adapter/``, which :func:`upgrade_arrays`
renames on reading, so version-1 files load unchanged.

**Checked.**  A version-2 manifest holds ``checksums``: the SHA-256 of every other
member's bytes (``runs.json`` and each array's ``.npy``) and of the manifest itself
(its JSON without the ``checksums`` field, as :func:`json.dumps` writes it).
:func:`read_state` recomputes them and refuses a file whose members differ, are missing
or are extra; any damage (not a zip, a bad member, bad JSON, a bad array) is a
:class:`~cogstats._validation.ParameterError` naming the file and what is wrong, never
another exception.  (Version-1 files have no checksums: they are checked by the
invariants alone.)  The archive is written deterministically (fixed member dates), so
saving the same state twice gives the same bytes.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import math
import os
import re
import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from cogstats._statelock import StateWriteError
from cogstats._validation import ParameterError
from cogstats.ledger import load_json

__all__ = [
    "READABLE_VERSIONS",
    "STATE_FORMAT",
    "STATE_VERSION",
    "read_state",
    "renamed_gate",
    "stray_temporaries",
    "upgrade_arrays",
    "write_state",
]

#: The ``format`` field of a saved state.
STATE_FORMAT = "cogstats.streaming-gate"
#: The ``version`` field of a saved state (a state of another version raises on load).
STATE_VERSION = 2
#: The versions :func:`read_state` reads (1: confseq's sums under ``adapter/``).
READABLE_VERSIONS = (1, 2)


#: the date of every member (fixed: saving the same state twice gives the same bytes)
_DATE = (1980, 1, 1, 0, 0, 0)
#: the manifest field holding the members' digests
CHECKSUMS = "checksums"


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _dump(value: Any) -> bytes:
    return json.dumps(value, allow_nan=False).encode("utf-8")


def _npy(value: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, value, allow_pickle=False)
    return buf.getvalue()


def write_state(
    path: Path,
    manifest: Mapping[str, Any],
    runs: Mapping[str, Any],
    arrays: Mapping[str, np.ndarray],
) -> Path:
    """Write the state to ``path`` (a temporary file in the same folder, then renamed).

    The manifest gets ``checksums`` (see the module notes); the archive's bytes depend
    on the state only.
    """
    members: dict[str, bytes] = {"runs.json": _dump(runs)}
    for name, value in arrays.items():
        members[f"{name}.npy"] = _npy(value)
    body = {k: v for k, v in manifest.items() if k != CHECKSUMS}
    digests = {"manifest.json": _digest(_dump(body))}
    digests.update((n, _digest(b)) for n, b in members.items())
    head = _dump({**body, CHECKSUMS: digests})
    tmp: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "wb") as fh:
            with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_STORED) as zf:
                for name, data in (("manifest.json", head), *members.items()):
                    info = zipfile.ZipInfo(name, date_time=_DATE)
                    info.external_attr = 0o644 << 16
                    zf.writestr(info, data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        tmp = None
    except OSError as exc:  # a full disk, a read-only folder: name the path
        raise StateWriteError(
            exc.errno,
            f"{path}: could not save the state ({exc.strerror}); the previous state file, "
            "if any, is kept",
            str(path),
        ) from None
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
    return path


def stray_temporaries(path: Path) -> list[Path]:
    """Return the temporary files :func:`write_state` leaves when killed mid-save.

    Exactly the names it gives them, ``<state name>.<8 random characters>.tmp``: the
    temporary file of a neighbouring state (``<state name>.canary``'s
    ``<state name>.canary.<8>.tmp``) never matches.
    """
    pattern = re.compile(re.escape(path.name) + r"\.[a-z0-9_]{8}\.tmp")
    try:
        names = os.listdir(path.parent)
    except FileNotFoundError:
        return []
    return sorted(path.parent / n for n in names if pattern.fullmatch(n))


#: a member may declare at most this many times the state file's size uncompressed (the
#: state writes its members stored, uncompressed: a larger member is not one it wrote)
_INFLATE_FACTOR = 2
_INFLATE_SLACK = 1 << 20


def _check_sizes(zf: zipfile.ZipFile, path: Path) -> None:
    """Refuse members that would inflate beyond the file, before decompressing any."""
    try:
        size = os.path.getsize(path)
    except OSError:
        size = 0
    cap = _INFLATE_FACTOR * size + _INFLATE_SLACK
    total = 0
    for info in zf.infolist():
        total += info.file_size
        if info.file_size > cap or total > cap:
            raise ParameterError(
                f"{path}: damaged state file: member {info.filename!r} declares "
                f"{info.file_size} bytes uncompressed ({total} in all) from a file of {size} "
                "bytes; a state file holds its members uncompressed, so it is refused "
                "before decompressing"
            )


def _json_member(zf: zipfile.ZipFile, name: str, path: Path) -> Any:
    raw = zf.read(name)
    try:
        return load_json(raw.decode("utf-8"))
    except Exception as exc:  # bad UTF-8, bad JSON, too deep, a repeated key
        raise ParameterError(f"{path}: damaged state file: {name} is not JSON ({exc})") from None


def read_state(path: Path) -> tuple[dict[str, Any], dict[str, Any], dict[str, np.ndarray]]:
    """Return ``(manifest, runs, arrays)`` of a state file of a readable version.

    Raises
    ------
    ParameterError
        For a file that is not a streaming-gate state, of another version, or damaged
        (a checksum that differs, a member that does not read), naming what is wrong.
    """
    try:
        return _read_state(path)
    except ParameterError:
        raise
    except (OSError, EOFError, zipfile.BadZipFile, zipfile.LargeZipFile) as exc:
        raise ParameterError(f"{path}: damaged state file ({type(exc).__name__}: {exc})") from None
    except Exception as exc:  # zlib, numpy's header parser, ...: a damaged file
        raise ParameterError(f"{path}: damaged state file ({type(exc).__name__}: {exc})") from None


def _read_state(path: Path) -> tuple[dict[str, Any], dict[str, Any], dict[str, np.ndarray]]:
    try:
        zf = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile, ValueError, EOFError) as exc:
        raise ParameterError(f"{path}: not a streaming-gate state file ({exc})") from None
    with zf:
        _check_sizes(zf, path)
        names = zf.namelist()
        if len(set(names)) != len(names):
            raise ParameterError(f"{path}: damaged state file: a member is repeated")
        if "manifest.json" not in names or "runs.json" not in names:
            raise ParameterError(f"{path}: not a streaming-gate state file (no manifest)")
        manifest = _json_member(zf, "manifest.json", path)
        if not isinstance(manifest, dict):
            raise ParameterError(f"{path}: damaged state file: the manifest is not an object")
        if manifest.get("format") != STATE_FORMAT:
            raise ParameterError(
                f"{path}: format {manifest.get('format')!r} is not {STATE_FORMAT!r}"
            )
        version = manifest.get("version")
        if version not in READABLE_VERSIONS or isinstance(version, bool):
            raise ParameterError(
                f"{path}: state version {version!r}; this cogstats reads versions "
                f"{list(READABLE_VERSIONS)} (it writes version {STATE_VERSION})"
            )
        raw = {n: zf.read(n) for n in names if n != "manifest.json"}
    if version >= 2:
        _check_digests(path, manifest, raw)
    elif CHECKSUMS in manifest:  # a version-2 file whose version was changed
        raise ParameterError(
            f"{path}: damaged state file: version 1 with checksums (version-1 files have "
            "none: its version field was changed)"
        )
    manifest.pop(CHECKSUMS, None)
    try:
        runs = load_json(raw["runs.json"].decode("utf-8"))
    except Exception as exc:  # bad UTF-8, bad JSON, too deep, a repeated key
        raise ParameterError(f"{path}: damaged state file: runs.json is not JSON ({exc})") from None
    if not isinstance(runs, dict):
        raise ParameterError(f"{path}: damaged state file: runs.json is not an object")
    arrays: dict[str, np.ndarray] = {}
    for n, data in raw.items():
        if not n.endswith(".npy"):
            continue
        try:
            value = np.load(io.BytesIO(data), allow_pickle=False)
        except Exception as exc:
            raise ParameterError(
                f"{path}: damaged state file: array {n} does not read ({exc})"
            ) from None
        if not isinstance(value, np.ndarray) or value.dtype.kind not in "biuf":
            raise ParameterError(f"{path}: damaged state file: array {n} is not numeric")
        arrays[n[: -len(".npy")]] = value
    return manifest, runs, arrays


def _check_digests(path: Path, manifest: dict[str, Any], raw: Mapping[str, bytes]) -> None:
    digests = manifest.get(CHECKSUMS)
    if not isinstance(digests, dict):
        raise ParameterError(
            f"{path}: damaged state file: the manifest has no checksums (every version-2 "
            "state written by cogstats has them)"
        )
    body = {k: v for k, v in manifest.items() if k != CHECKSUMS}
    try:
        mine = _digest(_dump(body))
    except ValueError as exc:
        raise ParameterError(f"{path}: damaged state file: the manifest ({exc})") from None
    if digests.get("manifest.json") != mine:
        raise ParameterError(
            f"{path}: damaged state file: the manifest's checksum differs (the manifest "
            "was changed after it was written)"
        )
    want = set(digests) - {"manifest.json"}
    if want != set(raw):
        missing, extra = sorted(want - set(raw)), sorted(set(raw) - want)
        raise ParameterError(
            f"{path}: damaged state file: members missing {missing}, unexpected {extra}"
        )
    for n, data in raw.items():
        if digests[n] != _digest(data):
            raise ParameterError(
                f"{path}: damaged state file: the checksum of {n} differs (its bytes "
                "changed after it was written)"
            )


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


#: options only the first recommended gate takes (``recommended`` before the lifecycle gate
#: took the name)
_V1_ONLY = ("max_trials", "noise_prior_sd", "noise_prior_runs")


def renamed_gate(
    name: str, options: Mapping[str, Any], written_by: Any = None
) -> tuple[str, str | None]:
    """Return the registry name a saved gate has now, and a note when it changed.

    The lifecycle gate took the name ``recommended`` (it was ``recommended_v2``): a state
    saved as ``recommended_v2`` is today's ``recommended``.  A state of the first
    recommended gate (saved as ``recommended_v1``, or as ``recommended`` with one of its
    own options ``max_trials``, ``noise_prior_sd``, ``noise_prior_runs``) is refused,
    naming the cogstats version that wrote it (``written_by``): that gate is gone.

    Examples
    --------
    >>> renamed_gate("recommended_v2", {})[0], renamed_gate("cycgraph", {})
    ('recommended', ('cycgraph', None))
    >>> renamed_gate("recommended", {"max_trials": None}, "0.1.0")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    cogstats._validation.ParameterError: this state was saved by cogstats 0.1.0 with ...
    """
    if name == "recommended_v1" or (name == "recommended" and any(k in options for k in _V1_ONLY)):
        raise ParameterError(
            f"this state was saved by cogstats {written_by or '(version not recorded)'} with "
            "the first recommended gate ('recommended_v1'), which this cogstats no longer "
            "has; the recommended gate is the lesson lifecycle gate now: start a new state "
            "with StreamingGate(LifecycleGate()) and record its runs again"
        )
    if name == "recommended_v2":
        return "recommended", (
            "this state was saved with the lifecycle gate under its earlier name "
            "'recommended_v2'; it is loaded as 'recommended' (the same gate)"
        )
    return name, None


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


# ---------------------------------------------------------------------- invariants
def _fail(path: Path, what: str) -> ParameterError:
    return ParameterError(f"{path}: inconsistent state file: {what}")


def _is_str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _array(
    path: Path, arrays: Mapping[str, np.ndarray], name: str, kinds: str, shape: tuple[int, ...]
) -> np.ndarray:
    value = arrays.get(name)
    if value is None:
        raise _fail(path, f"the array {name!r} is missing")
    if value.dtype.kind not in kinds or value.shape != shape:
        raise _fail(
            path,
            f"the array {name!r} has dtype {value.dtype} and shape {value.shape}; expected "
            f"shape {shape} of kind {kinds!r}",
        )
    return value


def check_invariants(
    path: Path,
    manifest: Mapping[str, Any],
    runs: Mapping[str, Any],
    arrays: Mapping[str, np.ndarray],
) -> None:
    """Refuse a state whose parts do not agree (a :class:`ParameterError` naming which).

    Checked: the manifest's fields and types; one run id, lesson list, score and
    covariate value per run (run ids unique, scores finite in [0, 1] as the ledger
    allows); the lesson table (unique ids, one row per lesson); every run's lessons as
    stored equal its listed lesson ids; and each lesson's trials, sum of scores,
    ``sum (y - 1/2)`` and ``sum (y - 1/2)^2``, and the totals, recomputed from the stored
    runs, equal the stored ones (trials exactly, sums to 1e-9 relative to the number of
    terms).  Cost O(runs x lessons a run).
    """
    n, L, totals, kinds = _check_manifest(path, manifest)
    run_ids, facts, covs, lesson_ids = _check_runs(path, runs, n, L, kinds)
    scores = _check_scores(path, arrays, run_ids, facts, covs)
    _check_lessons(path, arrays, scores, facts, (run_ids, lesson_ids))
    _check_totals(path, manifest, arrays, scores, totals, L)


def _check_manifest(path: Path, manifest: Mapping[str, Any]) -> tuple[Any, Any, Any, Any]:
    """Check the manifest's fields and types; return its runs, lessons, totals and kinds."""
    gate = manifest.get("gate")
    if not (
        isinstance(gate, dict)
        and isinstance(gate.get("name"), str)
        and isinstance(gate.get("options"), dict)
    ):
        raise _fail(path, "the manifest's 'gate' must be {'name': str, 'options': {...}}")
    cands = manifest.get("candidates")
    if cands is not None and not _is_str_list(cands):
        raise _fail(path, "the manifest's 'candidates' must be null or a list of lesson ids")
    n: Any = manifest.get("runs")
    L: Any = manifest.get("lessons")
    if not (_is_int(n) and _is_int(L) and n >= 0 and L >= 0):
        raise _fail(path, f"the manifest's runs ({n!r}) and lessons ({L!r}) must be counts")
    last = manifest.get("last_decisions")
    if not isinstance(last, dict) or not all(
        isinstance(v, list)
        and len(v) == 2
        and isinstance(v[0], str)
        and (v[1] is None or isinstance(v[1], str))
        for v in last.values()
    ):
        raise _fail(path, "the manifest's 'last_decisions' must map lessons to [decision, reason]")
    markers = manifest.get("markers")
    if not isinstance(markers, dict) or not all(
        isinstance(m, dict)
        and set(m) == {"offset", "line", "head", "head_len"}
        and all(_is_int(m[k]) and m[k] >= 0 for k in ("offset", "line", "head_len"))
        and isinstance(m["head"], str)
        for m in markers.values()
    ):
        raise _fail(path, "the manifest's 'markers' must map files to {offset, line, head, ...}")
    skipped = manifest.get("skipped")
    if not isinstance(skipped, list) or not all(
        isinstance(s, dict)
        and set(s) == {"path", "line", "offset", "error"}
        and isinstance(s["path"], str)
        and isinstance(s["error"], str)
        and _is_int(s["line"])
        and _is_int(s["offset"])
        for s in skipped
    ):
        raise _fail(path, "the manifest's 'skipped' must list {path, line, offset, error}")
    totals, kinds = manifest.get("totals"), manifest.get("kinds")
    if not isinstance(totals, dict) or not isinstance(kinds, dict):
        raise _fail(path, "the manifest's 'totals' and 'kinds' must be objects")
    if set(totals) != {"total_sum", "total_sumc", "total_sumsq", "y_min", "y_max"}:
        raise _fail(path, f"the manifest's totals have the fields {sorted(totals)}")
    return n, L, totals, kinds


def _check_runs(
    path: Path, runs: Mapping[str, Any], n: int, L: int, kinds: Mapping[str, Any]
) -> tuple[Any, Any, Any, Any]:
    """Check runs.json: one run id, lesson list and covariate value per run, the lessons."""
    run_ids: Any = runs.get("run_ids")
    facts: Any = runs.get("fact_ids")
    covs: Any = runs.get("covariates")
    lesson_ids: Any = runs.get("lesson_ids")
    if not _is_str_list(run_ids) or len(run_ids) != n:
        raise _fail(path, f"runs.json must list {n} run ids (the manifest's runs)")
    if len(set(run_ids)) != n:
        raise _fail(path, "a run id is repeated in runs.json")
    if not isinstance(facts, list) or len(facts) != n or not all(map(_is_str_list, facts)):
        raise _fail(path, f"runs.json must list {n} lists of lesson ids")
    if not isinstance(covs, dict) or not all(
        isinstance(v, list) and len(v) == n for v in covs.values()
    ):
        raise _fail(path, f"runs.json's covariates must be columns of {n} values")
    if set(kinds) - set(covs):
        raise _fail(
            path, f"kinds name covariates that are not columns: {sorted(set(kinds) - set(covs))}"
        )
    if not _is_str_list(lesson_ids) or len(lesson_ids) != L or len(set(lesson_ids)) != L:
        raise _fail(path, f"runs.json must list {L} distinct lesson ids (the manifest's lessons)")
    sources: Any = runs.get("sources")
    if sources is not None and not (
        isinstance(sources, dict)
        and _is_str_list(sources.get("files"))
        and isinstance(sources.get("runs"), dict)
        and all(_is_int(k) and 0 <= k < len(sources["files"]) for k in sources["runs"].values())
    ):
        raise _fail(path, "runs.json's sources must map run ids to ingested files")
    return run_ids, facts, covs, lesson_ids


def _check_scores(
    path: Path, arrays: Mapping[str, np.ndarray], run_ids: Any, facts: Any, covs: Any
) -> np.ndarray:
    """Check every run as the ledger would accept it; return the scores."""
    n = len(run_ids)
    scores = _array(path, arrays, "scores", "f", (n,))
    if not np.all(np.isfinite(scores)) or (n and (scores.min() < 0.0 or scores.max() > 1.0)):
        bad = int(np.flatnonzero(~((scores >= 0.0) & (scores <= 1.0)))[0])
        value0 = float(scores[bad])
        raise _fail(path, f"run {run_ids[bad]!r} has score {value0!r}; scores lie in [0, 1]")
    if set(covs) & {"run_id", "score", "fact_ids"}:
        raise _fail(path, "a covariate column is named run_id, score or fact_ids")
    from cogstats._validation import LedgerError
    from cogstats.ledger import validate_record

    columns = list(covs.items())
    for i, run_id in enumerate(run_ids):  # each run as the ledger would accept it
        rec = {"run_id": run_id, "score": float(scores[i]), "fact_ids": facts[i]}
        rec.update((k, v[i]) for k, v in columns if v[i] is not None)
        try:
            validate_record(rec, row=i + 1, source=None, fact_ids_required=False)
        except LedgerError as exc:
            raise _fail(path, f"run {run_id!r} is not a valid run: {exc}") from None
    return scores


def _check_lessons(
    path: Path,
    arrays: Mapping[str, np.ndarray],
    scores: np.ndarray,
    facts: Any,
    ids: tuple[Any, Any],
) -> None:
    """Check each run's stored lessons and each lesson's trials and sums, from the runs."""
    run_ids, lesson_ids = ids
    n, L = len(run_ids), len(lesson_ids)
    trials = _array(path, arrays, "lesson_trials", "iu", (L,))
    sums = {
        k: _array(path, arrays, k, "f", (L,))
        for k in ("lesson_sums", "lesson_sumc", "lesson_sumsq")
    }
    indptr = _array(path, arrays, "run_lessons_indptr", "iu", (n + 1,)).astype(np.int64)
    flat = arrays.get("run_lessons")
    if flat is None or flat.dtype.kind not in "iu" or flat.ndim != 1:
        raise _fail(path, "the array 'run_lessons' is missing or not integers")
    flat = flat.astype(np.int64)
    if indptr[0] != 0 or indptr[-1] != flat.size or np.any(np.diff(indptr) < 0):
        raise _fail(path, "run_lessons_indptr does not index run_lessons")
    pos = {f: j for j, f in enumerate(lesson_ids)}
    for i, listed in enumerate(facts):
        want = [pos.get(f, -1) for f in dict.fromkeys(listed)]
        if flat[indptr[i] : indptr[i + 1]].tolist() != want:
            raise _fail(
                path,
                f"the stored lessons of run {run_ids[i]!r} differ from its lesson ids {listed!r}",
            )
    counts = np.bincount(flat, minlength=L)[:L] if flat.size else np.zeros(L, np.int64)
    if not np.array_equal(counts, trials):
        j = int(np.flatnonzero(counts != trials)[0])
        raise _fail(
            path,
            f"lesson {lesson_ids[j]!r} has {int(trials[j])} trials stored but {int(counts[j])} "
            "runs carry it",
        )
    y = np.repeat(scores, np.diff(indptr))
    yc = y - 0.5
    for name, w in (("lesson_sums", y), ("lesson_sumc", yc), ("lesson_sumsq", yc * yc)):
        got = np.bincount(flat, weights=w, minlength=L)[:L] if flat.size else np.zeros(L)
        stored = sums[name]
        off = ~(np.abs(got - stored) <= 1e-9 * np.maximum(counts, 1))
        if off.any():
            j = int(np.flatnonzero(off)[0])
            raise _fail(
                path,
                f"lesson {lesson_ids[j]!r}: {name} is {float(stored[j])!r} stored but "
                f"{float(got[j])!r} recomputed from its runs",
            )


def _check_totals(
    path: Path,
    manifest: Mapping[str, Any],
    arrays: Mapping[str, np.ndarray],
    scores: np.ndarray,
    totals: Mapping[str, Any],
    L: int,
) -> None:
    """Check the totals (recomputed from the scores) and the regression arrays' shapes."""
    n = scores.size
    sc = scores - 0.5
    for name, value in (
        ("total_sum", scores.sum()),
        ("total_sumc", sc.sum()),
        ("total_sumsq", (sc * sc).sum()),
    ):
        t = totals[name]
        if (
            not isinstance(t, (int, float))
            or isinstance(t, bool)
            or not abs(t - value) <= 1e-9 * max(n, 1)
        ):
            raise _fail(path, f"the total {name} is {t!r} stored but {float(value)!r} recomputed")
    lo, hi = (float(scores.min()), float(scores.max())) if n else (None, None)
    if totals["y_min"] != lo or totals["y_max"] != hi:
        raise _fail(path, "the totals' y_min / y_max differ from the stored scores")
    reg = manifest.get("regression")
    if reg is not None:
        cols = reg.get("columns") if isinstance(reg, dict) else None
        if not isinstance(cols, list):
            raise _fail(path, "the manifest's 'regression' has no columns")
        k = len(cols)
        _array(path, arrays, "xtx", "f", (k, k))
        _array(path, arrays, "xty", "f", (k,))
        _array(path, arrays, "lesson_column", "iu", (L,))
        _array(path, arrays, "lesson_hash", "u", (L, 2))
