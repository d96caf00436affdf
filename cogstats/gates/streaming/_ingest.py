"""JSON Lines ingestion for :class:`~cogstats.gates.StreamingGate`: markers and skipped lines.

:func:`ingest` records the complete lines of a growing JSON Lines file after the file's
marker (byte offset, line count, a digest of the first 4 KB), validated as
:meth:`Ledger.read <cogstats.ledger.Ledger.read>` reads JSON Lines; a bad line raises or
is skipped (:class:`SkippedLine`); :class:`IngestResult` says what one call did.
"""

from __future__ import annotations

import hashlib
import os
import stat
import warnings
from array import array
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from cogstats._validation import LedgerError, LedgerWarning, ParameterError, check_choice
from cogstats.gates._report import GateReport
from cogstats.ledger import parse_json_record


class _Fed(Protocol):
    """What ingestion needs of the :class:`~cogstats.gates.StreamingGate` it feeds.

    (A protocol, so that this module does not import the runner that imports it.)
    """

    _markers: dict[str, Marker]
    _skipped: list[SkippedLine]
    _sources: RunSources

    def _look(self) -> GateReport: ...

    def _commit(
        self, run_id: str, score: float, facts: list[str], covs: dict[str, Any]
    ) -> bool: ...

    def _holds(self, run_id: str, score: float, facts: list[str], covs: dict[str, Any]) -> bool: ...

    def _validate(
        self, rec: Mapping[str, Any], *, row: int | None, source: str | None
    ) -> tuple[str, float, list[str], dict[str, Any]]: ...


__all__ = ["DuplicateRun", "IngestResult", "RunSources", "SkippedLine", "ingest", "settle"]

#: bytes read from a JSON Lines file at a time by :meth:`StreamingGate.ingest`
_CHUNK = 1 << 22
#: bytes read at a time when settling a marker (usually a few lines past it)
_SETTLE_CHUNK = 1 << 16
#: bytes of a followed file's beginning whose digest the ingest marker keeps
_HEAD = 4096
#: skipped ingest lines kept in the state (the most recent)
SKIPPED_KEPT = 1000
#: the longest line ingestion reads (a run is a few hundred bytes; a line longer than this
#: without a line end is not a run being written)
MAX_LINE_BYTES = 1 << 26


@dataclass(frozen=True)
class SkippedLine:
    """A JSON Lines line that :meth:`StreamingGate.ingest` skipped (``on_error="skip"``).

    Attributes
    ----------
    path : str
        The file.
    line : int
        1-based line number.
    offset : int
        Byte offset of the line's start.
    error : str
        The error, naming the field.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from cogstats.gates import CycgraphGate, StreamingGate
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "runs.jsonl"
    >>> _ = path.write_text('{"run_id": "r1", "score": 2}' + chr(10))
    >>> skipped = StreamingGate(CycgraphGate()).ingest(path, on_error="skip").skipped
    >>> skipped[0].line, "score" in skipped[0].error
    (1, True)
    """

    path: str
    line: int
    offset: int
    error: str


@dataclass(frozen=True)
class DuplicateRun:
    """A run id that :meth:`StreamingGate.ingest` read from a second file.

    The line's run replaces the run of that id (as recording a run id again does; an
    identical run changes nothing), and the duplicate is reported here and by a
    :class:`~cogstats._validation.LedgerWarning` rather than silently.

    Attributes
    ----------
    run_id : str
        The run id.
    path : str
        The file being ingested.
    line : int
        Its 1-based line there.
    first_path : str
        The file the run id was ingested from before.
    replaced : bool
        Whether the run's content differed (so the earlier run was replaced).
    """

    run_id: str
    path: str
    line: int
    first_path: str
    replaced: bool


@dataclass(frozen=True)
class IngestResult:
    """What one :meth:`StreamingGate.ingest` call did.

    Attributes
    ----------
    recorded : int
        Runs recorded (a repeated run id replaces its run and counts here too).
    lines : int
        Complete lines read (blank ones included).
    skipped : tuple of SkippedLine
        Bad lines skipped in this call (``on_error="skip"``).
    changed : GateReport
        Decisions that changed between the previous look and the look after the last line.
    offset, line : int
        The marker after the call: the byte offset and line count read so far.
    duplicates : tuple of DuplicateRun
        Run ids of this file that an earlier ingested file held too.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from cogstats.gates import CycgraphGate, StreamingGate
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "runs.jsonl"
    >>> nl = chr(10)
    >>> _ = path.write_text('{"run_id": "r1", "score": 0.5}' + nl + nl + '{"run_id": "r2"')
    >>> result = StreamingGate(CycgraphGate()).ingest(path)  # the last line is incomplete
    >>> result.recorded, result.lines, result.offset
    (1, 2, 32)
    """

    recorded: int
    lines: int
    skipped: tuple[SkippedLine, ...]
    changed: GateReport
    offset: int
    line: int
    duplicates: tuple[DuplicateRun, ...] = ()


class RunSources:
    """Which ingested file each run came from (for duplicate reports), by run position.

    A file number per run (4 bytes a run; -1: a run not ingested, as :meth:`record`'s)
    rather than a dictionary of run ids (about 40 bytes a run).  ``index_of`` returns the
    position of a run id in the statistics (None: not recorded).

    Examples
    --------
    >>> ids = {"r1": 0, "r2": 1}
    >>> sources = RunSources(lambda: ids.get)
    >>> sources["r2"] = "a.jsonl"
    >>> sources.get("r1"), sources.get("r2"), sources.saved(["r1", "r2"])
    (None, 'a.jsonl', {'files': ['a.jsonl'], 'runs': {'r2': 0}})
    """

    def __init__(self, index_of: Callable[[], Callable[[str], int | None]]) -> None:
        self._index_of = index_of  # called each time: the statistics may be replaced
        self._files: list[str] = []
        self._number: dict[str, int] = {}
        self._at = array("i")

    def get(self, run_id: str, default: str | None = None) -> str | None:
        """Return the file run ``run_id`` was ingested from (``default``: none)."""
        i = self._index_of()(run_id)
        if i is None or i >= len(self._at) or self._at[i] < 0:
            return default
        return self._files[self._at[i]]

    def __setitem__(self, run_id: str, path: str) -> None:
        i = self._index_of()(run_id)
        if i is None:
            return  # not recorded: nothing to remember
        k = self._number.get(path)
        if k is None:
            k = self._number[path] = len(self._files)
            self._files.append(path)
        at = self._at
        while len(at) <= i:
            at.append(-1)
        at[i] = k

    def take(self, other: RunSources) -> None:
        """Hold ``other``'s sources (the same runs, in the same positions)."""
        self._files, self._number, self._at = (
            list(other._files),
            dict(other._number),
            array("i", other._at),
        )

    def saved(self, run_ids: Sequence[str]) -> dict[str, Any] | None:
        """Return the state file's form: ``{"files": [...], "runs": {run id: number}}``."""
        pairs = [(run_ids[i], k) for i, k in enumerate(self._at) if k >= 0]
        if not pairs:
            return None
        files = list(dict.fromkeys(self._files[k] for _, k in pairs))
        at = {f: n for n, f in enumerate(files)}
        return {"files": files, "runs": {r: at[self._files[k]] for r, k in pairs}}

    def restore(self, saved: Mapping[str, Any]) -> None:
        """Take back :meth:`saved` (run ids not recorded are ignored)."""
        files = saved["files"]
        for run_id, k in saved["runs"].items():
            self[run_id] = files[k]


@dataclass
class Marker:
    """Where :func:`ingest` stopped in one file (saved with the state)."""

    offset: int = 0
    line: int = 0
    head: str = ""  # sha256 of the file's first head_len bytes
    head_len: int = 0


def ingest(
    sg: _Fed,
    path: str | os.PathLike[str],
    on_error: Literal["raise", "skip"] = "raise",
) -> IngestResult:
    """Record the runs of a JSON Lines file from where the last call stopped, then look.

    See :meth:`StreamingGate.ingest <cogstats.gates.StreamingGate.ingest>`.
    """
    check_choice("on_error", on_error, ("raise", "skip"))
    p = Path(path)
    key = str(p.resolve())
    src = str(p)
    mark = sg._markers.get(key, Marker())
    counts = [0, 0]  # runs recorded, lines read
    skipped: list[SkippedLine] = []
    duplicates: list[DuplicateRun] = []
    with p.open("rb") as fh:
        info = os.fstat(fh.fileno())
        if not stat.S_ISREG(info.st_mode):  # /dev/zero, a pipe: no end, no marker
            raise ParameterError(
                f"{src} is not a regular file (a device, a pipe or a socket); ingest follows "
                "a JSON Lines file on disk"
            )
        size = info.st_size
        if size < mark.offset:
            raise ParameterError(
                f"{src} has {size} bytes but the ingest marker is at byte {mark.offset}: "
                "the file was truncated or replaced; ingest it under another name or "
                "start a new StreamingGate"
            )
        if mark.head_len:
            head = fh.read(mark.head_len)
            if hashlib.sha256(head).hexdigest() != mark.head:
                raise ParameterError(
                    f"{src}: its first bytes changed since the last ingest (the marker is "
                    f"at byte {mark.offset}); the file was replaced, so the marker does "
                    "not describe it"
                )
        fh.seek(mark.offset)
        offset, line = mark.offset, mark.line
        try:
            _read_lines(sg, fh, key, src, on_error, offset, line, (skipped, duplicates), counts)
        finally:
            _finish_marker(sg, key, p)
            if duplicates:
                _warn_duplicates(duplicates)
    mark = sg._markers[key]
    changed = sg._look()
    return IngestResult(
        counts[0], counts[1], tuple(skipped), changed, mark.offset, mark.line, tuple(duplicates)
    )


def _warn_duplicates(duplicates: list[DuplicateRun]) -> None:
    d = duplicates[0]
    more = (
        f" ({len(duplicates) - 1} more run id(s) of this file too)" if len(duplicates) > 1 else ""
    )
    what = "replaces the earlier run" if d.replaced else "is identical to it (nothing changed)"
    warnings.warn(
        LedgerWarning(
            f"run id {d.run_id!r} of {d.path} (line {d.line}) was ingested before from "
            f"{d.first_path}; the new line {what}{more}. See IngestResult.duplicates"
        ),
        stacklevel=4,
    )


def _read_lines(
    sg: _Fed,
    fh: Any,
    key: str,
    src: str,
    on_error: str,
    offset: int,
    line: int,
    found: tuple[list[SkippedLine], list[DuplicateRun]],
    counts: list[int],
) -> None:
    """Read the complete lines from ``offset``, recording each (or, settling, checking it).

    With ``on_error="settle"`` nothing is recorded: reading stops at the first line whose
    run the state does not hold exactly as written (see :func:`settle`).
    """
    skipped, duplicates = found
    sources = sg._sources
    mark = sg._markers.setdefault(key, Marker())
    settling = on_error == "settle"
    pending = b""
    while True:
        chunk = fh.read(_SETTLE_CHUNK if settling else _CHUNK)
        if not chunk:
            return
        data = pending + chunk
        start = 0
        while True:
            nl = data.find(b"\n", start)
            if nl < 0:
                break
            raw = data[start:nl]
            if settling:
                parsed = _parse_line(sg, raw, line + 1, offset, src)
                if parsed is not None:
                    if sources.get(parsed[0], key) != key or not sg._holds(*parsed):
                        return  # a run the state does not hold as written: ingest's to read
                    sources[parsed[0]] = key
            else:
                try:  # one line, atomically: validated, then recorded (or nothing)
                    parsed = _parse_line(sg, raw, line + 1, offset, src)
                    changed = sg._commit(*parsed) if parsed is not None else False
                except Exception as exc:  # any failure of one line (a gate's check_run,
                    # its own add_run) leaves the statistics without it
                    if not isinstance(exc, LedgerError):
                        exc = LedgerError(
                            f"{type(exc).__name__}: {exc} (line {line + 1}, byte offset {offset})",
                            row=line + 1,
                            source=src,
                        )
                    if on_error == "raise":
                        raise exc from None  # the marker stays at the start of the bad line
                    skip = SkippedLine(src, line + 1, offset, str(exc))
                    skipped.append(skip)
                    sg._skipped.append(skip)
                    del sg._skipped[:-SKIPPED_KEPT]
                    parsed = None
                if parsed is not None:
                    run_id = parsed[0]
                    first = sources.get(run_id)
                    if first is not None and first != key:
                        duplicates.append(DuplicateRun(run_id, src, line + 1, first, changed))
                    sources[run_id] = key
                    counts[0] += 1
            counts[1] += 1
            line += 1
            offset += nl + 1 - start
            start = nl + 1
            mark.offset, mark.line = offset, line
        pending = data[start:]
        if len(pending) > MAX_LINE_BYTES:
            if settling:
                return
            raise LedgerError(
                f"line {line + 1} (byte offset {offset}) runs past {MAX_LINE_BYTES:,} bytes "
                "without a line end; a JSON Lines run is one line",
                row=line + 1,
                source=src,
            )


def settle(sg: _Fed) -> None:
    """Move each followed file's marker past the lines whose runs are recorded already.

    A service that hands each run to :meth:`StreamingGate.record` *and* appends it to a
    file it ingests leaves the file's marker behind the runs it recorded live; a restart
    would read those lines again (an O(1) no-op each, but parsed).  Before a save, each
    file ingested before is read from its marker while its lines hold runs the state
    holds exactly as written (run id, score, lesson ids, covariates), and the marker
    moves past them: a restart then reads only the runs the state lacks.  Reading stops
    at the first other line (a run not recorded, recorded differently, from another
    file, or a bad line: all left to :meth:`ingest`) and at an incomplete last line.
    Best effort: a file that is gone, replaced or unreadable keeps its marker (the next
    ingest reports it).
    """
    for key, mark in list(sg._markers.items()):
        path = Path(key)
        try:
            with warnings.catch_warnings():  # warned when each run was recorded
                warnings.simplefilter("ignore")
                with path.open("rb") as fh:
                    if os.fstat(fh.fileno()).st_size <= mark.offset:
                        continue
                    if mark.head_len:
                        head = fh.read(mark.head_len)
                        if hashlib.sha256(head).hexdigest() != mark.head:
                            continue  # replaced: ingest says so
                    fh.seek(mark.offset)
                    _read_lines(
                        sg, fh, key, key, "settle", mark.offset, mark.line, ([], []), [0, 0]
                    )
                _finish_marker(sg, key, path)
        except Exception:  # the marker stays where it was (valid: it moves line by line)
            continue


def _finish_marker(sg: _Fed, key: str, path: Path) -> None:
    """Store the digest of the file's first bytes that the marker has passed."""
    mark = sg._markers.setdefault(key, Marker())
    want = min(mark.offset, _HEAD)
    if want != mark.head_len:
        with path.open("rb") as fh:
            mark.head = hashlib.sha256(fh.read(want)).hexdigest()
        mark.head_len = want


def _parse_line(
    sg: _Fed, raw: bytes, line: int, offset: int, src: str
) -> tuple[str, float, list[str], dict[str, Any]] | None:
    if raw.endswith(b"\r"):
        raw = raw[:-1]
    if offset == 0 and raw.startswith(b"\xef\xbb\xbf"):
        raw = raw[3:]
    where = f" (line {line}, byte offset {offset})"
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LedgerError(
            f"not UTF-8 text at byte offset {offset + exc.start}{where}", row=line, source=src
        ) from None
    if not text.strip():
        return None
    rec = parse_json_record(text, row=line, src=src, where=where)
    try:
        return sg._validate(rec, row=line, source=src)
    except LedgerError as exc:
        raise LedgerError(exc.message + where, row=line, field=exc.field, source=src) from None
