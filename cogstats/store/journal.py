"""The store's files: an append-only journal, atomic small files, its own temporaries.

**The journal** (``journal.jsonl``) holds one JSON object a line, each an operation the
store acknowledged (``{"op": "add", ...}`` or ``{"op": "run", ...}``) with ``"sum"``, the
first 16 hex digits of the SHA-256 of the line without it.  :meth:`Journal.append`
writes a line, flushes it and (by default) fsyncs the file before it returns, so
an acknowledged operation is on disk.  A line is complete when it ends with a newline
and its sum matches; a crash mid-write leaves at most one incomplete or damaged last line,
which :func:`read_journal` reports as the *torn tail* (the writer cuts it off when it
opens the store; it was never acknowledged).  A damaged line followed by other lines is
corruption: :class:`StoreCorruptError` names the file and the line.

**Small files** (the settings, a snapshot's description) are written by
:func:`atomic_write`: a temporary file in the same folder, fsynced, renamed over the
target, and the folder fsynced, so a reader sees the old file or the new one.

**Temporary files** are named ``.lesson-store.<8 random characters>.tmp`` (the
:data:`TMP_PATTERN`): the writer removes exactly those when it opens the store, never a
file of another program.

Writes never follow a symbolic link: the journal and the lock are opened with
``O_NOFOLLOW`` and must be regular files.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import stat
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cogstats._statelock import StateWriteError
from cogstats._validation import CogstatsError
from cogstats.ledger import load_json

__all__ = [
    "TMP_PATTERN",
    "Journal",
    "JournalLine",
    "StoreCorruptError",
    "atomic_write",
    "read_journal",
    "stray_temporaries",
]

#: the store's own temporary files: ``.lesson-store.`` + mkstemp's 8 characters + ``.tmp``
TMP_PATTERN = re.compile(r"^\.lesson-store\.[a-z0-9_]{8}\.tmp$")
_TMP_PREFIX, _TMP_SUFFIX = ".lesson-store.", ".tmp"
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


class StoreCorruptError(CogstatsError, ValueError):
    """A store's file is damaged beyond a torn last line (the message names file and line)."""


def _sum(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()[:16]


def encode_line(op: Mapping[str, Any]) -> bytes:
    """Return the journal line of one operation (JSON with its ``sum``, a newline).

    Examples
    --------
    >>> line = encode_line({"op": "add", "id": "a"})
    >>> line.startswith(b'{"op":"add","id":"a","sum":"'), decode_line(line)
    (True, {'op': 'add', 'id': 'a'})
    """
    body = json.dumps(dict(op), separators=(",", ":"), ensure_ascii=True, allow_nan=False)
    data = body.encode("utf-8")
    return data[:-1] + b',"sum":"' + _sum(data).encode() + b'"}\n'


def decode_line(raw: bytes) -> dict[str, Any] | None:
    """Return the operation of a complete journal line, or None when it is damaged."""
    if not raw.endswith(b'"}\n') or b',"sum":"' not in raw:
        return None
    head, _, tail = raw.rpartition(b',"sum":"')
    digest = tail[:-3]
    body = head + b"}"
    if len(digest) != 16 or _sum(body).encode() != digest:
        return None
    try:
        value = load_json(body.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return None
    return value if isinstance(value, dict) else None


@dataclass(frozen=True)
class JournalLine:
    """One acknowledged operation: its 1-based line, byte offset and content."""

    line: int
    offset: int
    end: int
    op: dict[str, Any]


@dataclass(frozen=True)
class JournalRead:
    """What :func:`read_journal` found: the good lines, where they end, any torn tail."""

    lines: list[JournalLine]
    end: int
    torn: int  # bytes of an incomplete or damaged last line (0: none)


def open_regular(path: Path, flags: int, mode: int = 0o644) -> int:
    """Open ``path`` without following a symbolic link; it must be a regular file."""
    try:
        fd = os.open(path, flags | _NOFOLLOW | _CLOEXEC, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise StateWriteError(
                exc.errno,
                f"{path} is a symbolic link; the store never reads or writes through one "
                "(remove the link)",
                str(path),
            ) from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise StateWriteError(
            errno.EINVAL, f"{path} is not a regular file; the store refuses it", str(path)
        )
    return fd


def read_journal(path: Path, start: int = 0) -> JournalRead:
    """Read the journal's complete lines from byte ``start``.

    Raises
    ------
    StoreCorruptError
        When a damaged line is followed by other lines (naming the file and the line).
    """
    try:
        fd = open_regular(path, os.O_RDONLY)
    except FileNotFoundError:
        return JournalRead([], start, 0)
    with os.fdopen(fd, "rb") as fh:
        fh.seek(start)
        data = fh.read()
    out: list[JournalLine] = []
    pos = 0
    number = 0
    while pos < len(data):
        nl = data.find(b"\n", pos)
        raw = data[pos:] if nl < 0 else data[pos : nl + 1]
        op = decode_line(raw) if nl >= 0 else None
        if op is None:
            rest = data[pos + len(raw) :]
            if rest.strip(b"\x00\n"):  # good lines after a damaged one: not a torn write
                raise StoreCorruptError(
                    f"{path}: line {number + 1} after byte {start + pos} is damaged and "
                    "followed by other lines; the journal was changed by something other "
                    "than the store (restore it from a backup)"
                )
            return JournalRead(out, start + pos, len(data) - pos)
        number += 1
        out.append(JournalLine(number, start + pos, start + pos + len(raw), op))
        pos += len(raw)
    return JournalRead(out, start + pos, 0)


class Journal:
    """The append-only journal, opened for writing (see the module notes).

    Parameters
    ----------
    path : Path
        The journal file (created when missing).
    end : int
        Where the good lines end: a torn tail after it is cut off now.
    sync_every : int
        ``fsync`` after every ``sync_every``-th append (1: every append, the default; more
        batches the fsyncs: a crash may lose up to ``sync_every - 1`` acknowledged
        operations, never half of one).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "journal.jsonl"
    >>> j = Journal(p, 0)
    >>> j.append({"op": "add", "id": "a"}); j.close()
    >>> [x.op["id"] for x in read_journal(p).lines]
    ['a']
    """

    def __init__(self, path: Path, end: int, *, sync_every: int = 1) -> None:
        self.path = path
        self.sync_every = int(sync_every)
        self._fd: int | None = open_regular(path, os.O_RDWR | os.O_CREAT)
        self._pending = 0
        size = os.fstat(self._fd).st_size
        if size > end:  # a torn tail of a crash: never acknowledged
            os.ftruncate(self._fd, end)
            os.fsync(self._fd)
        self.end = end

    def append(self, op: Mapping[str, Any], *, sync: bool | None = None) -> None:
        """Write one operation; on disk (fsynced) when it returns, unless batching.

        ``sync`` False defers the fsync to a later :meth:`sync` (a batch of operations
        acknowledged together); None follows ``sync_every``.

        Raises
        ------
        StateWriteError
            When the disk refuses (full, read-only, ...): naming the file; the journal is
            cut back to where it was, so the operation is not in it.
        """
        if self._fd is None:
            raise StateWriteError(errno.EBADF, f"{self.path} is closed", str(self.path))
        data = encode_line(op)
        try:
            os.lseek(self._fd, self.end, os.SEEK_SET)
            done = 0
            while done < len(data):
                done += os.write(self._fd, data[done:])
            self._pending += 1
            if sync or (sync is None and self._pending >= self.sync_every):
                os.fsync(self._fd)
                self._pending = 0
        except OSError as exc:
            self._cut_back()
            raise StateWriteError(
                exc.errno,
                f"{self.path}: could not write to the store's journal ({exc.strerror}); the "
                "operation was not recorded and the store is unchanged",
                str(self.path),
            ) from None
        self.end += len(data)

    def _cut_back(self) -> None:
        if self._fd is None:
            return
        try:
            os.ftruncate(self._fd, self.end)
            os.fsync(self._fd)
        except OSError:  # pragma: no cover - the line stays torn: cut at the next open
            pass

    def truncate(self, end: int) -> None:
        """Cut the journal back to byte ``end`` (an operation that failed after its write)."""
        if self._fd is None:
            return
        self.end = end
        self._cut_back()

    def sync(self) -> None:
        """``fsync`` now (the batched operations are on disk when it returns)."""
        if self._fd is not None and self._pending:
            os.fsync(self._fd)
            self._pending = 0

    def close(self) -> None:
        """Sync and close (nothing when closed)."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            if self._pending:
                os.fsync(fd)
        finally:
            os.close(fd)


def fsync_dir(folder: Path) -> None:
    """``fsync`` a folder (a rename in it is durable when it returns); best effort."""
    try:
        fd = os.open(folder, os.O_RDONLY | _CLOEXEC)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (temporary file, fsync, rename, folder fsync).

    Raises
    ------
    StateWriteError
        When the disk refuses, naming ``path``; the previous file is kept and the
        temporary file removed.
    """
    tmp: str | None = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=_TMP_PREFIX, suffix=_TMP_SUFFIX, dir=path.parent)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        tmp = None
        fsync_dir(path.parent)
    except OSError as exc:
        raise StateWriteError(
            exc.errno,
            f"{path}: could not write ({exc.strerror}); the previous file is kept",
            str(path),
        ) from None
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)


def stray_temporaries(folder: Path) -> Iterator[Path]:
    """Yield the store's own temporary files in ``folder`` (:data:`TMP_PATTERN` only)."""
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return
    for name in sorted(names):
        if TMP_PATTERN.match(name):
            yield folder / name
