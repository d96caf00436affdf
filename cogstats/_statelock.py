"""One writer per state file: an exclusive lock file naming its holder (pid, host).

:class:`StateLock` guards a state path ``P`` with the lock file ``P.lock``.  Acquiring it
takes an OS lock on that file (``fcntl.flock``: the kernel releases it when the holder
dies, however it dies) and writes the holder's pid, host and start time into it, so that
a second writer is refused with a :class:`StateLockedError` naming them.  What the file
says when the OS lock is free decides the rest:

- nothing, or this host's process that is gone (or that released it): the lock is
  stale and taken over, with a :class:`StaleLockWarning` naming the dead holder;
- another host: never taken over automatically (an OS lock need not reach across a
  network file system, so that host's writer may be alive): refused, saying which file
  to remove once that host's process is known to be gone.

The lock file is opened with ``O_NOFOLLOW`` and must be a regular file: a lock path
that is a symbolic link (or a FIFO, a device) is refused with a :class:`StateWriteError`
naming it, and nothing is written through it.  Releasing removes the lock file.  An
acquire checks, after locking, that the file it locked is still the one at ``P.lock``
(another process may have released and removed it meanwhile), so two holders never
coexist.  POSIX only (``fcntl``); elsewhere the lock is a file created exclusively
(``O_EXCL``), whose stale takeover relies on the pid check alone.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import errno
import json
import os
import socket
import stat
import warnings
from pathlib import Path
from typing import Any

from cogstats._validation import CogstatsError

__all__ = ["StaleLockWarning", "StateLock", "StateLockedError", "StateWriteError", "holder_of"]

try:  # pragma: no cover - platform
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


class StateLockedError(CogstatsError):
    """Another live writer holds the state path (the message names its pid and host)."""


class StateWriteError(OSError):
    """A state could not be written (a full disk, a read-only folder, a symbolic link...).

    An :class:`OSError` with ``errno`` and ``filename`` set; the message names the path and
    says what was kept (the previous state).
    """


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def open_lock_file(path: Path, flags: int) -> int:
    """Open a lock file without following a symbolic link; it must be a regular file.

    Raises
    ------
    StateWriteError
        When ``path`` is a symbolic link or not a regular file (nothing is written).
    """
    try:
        fd = os.open(path, flags | _NOFOLLOW | _CLOEXEC | os.O_NONBLOCK, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise StateWriteError(
                exc.errno,
                f"the lock file {path} is a symbolic link; a lock is never written through "
                "one (remove the link and open again)",
                str(path),
            ) from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise StateWriteError(
            errno.EINVAL,
            f"the lock file {path} is not a regular file; remove it and open again",
            str(path),
        )
    return fd


class StaleLockWarning(UserWarning):
    """A lock left by a dead process of this host was taken over."""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def holder_of(lock_path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """Return what a lock file says about its holder (None: no file, or unreadable).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> holder_of(pathlib.Path(tempfile.mkdtemp()) / "state.npz.lock") is None
    True
    """
    try:
        fd = open_lock_file(Path(lock_path), os.O_RDONLY)
    except OSError:  # no file, a symbolic link, not a regular file
        return None
    try:
        with os.fdopen(fd, "rb") as fh:
            raw = fh.read(4096)
        data = json.loads(raw.decode("utf-8") or "null")
    except (OSError, ValueError, UnicodeDecodeError, RecursionError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("pid"), int):
        return None
    if not isinstance(data.get("host"), str):
        return None
    return data


def _describe(holder: dict[str, Any]) -> str:
    since = f", since {holder['since']}" if isinstance(holder.get("since"), str) else ""
    return f"pid {holder['pid']} on host {holder['host']!r}{since}"


class StateLock:
    """The exclusive lock of one state path (see the module notes).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "state.npz"
    >>> with StateLock(path) as lock:
    ...     holder_of(lock.lock_path)["pid"] == os.getpid()
    True
    >>> lock.lock_path.exists()
    False
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.lock_path = self.path.with_name(self.path.name + ".lock")
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        """Whether this object holds the lock."""
        return self._fd is not None

    def acquire(self) -> StateLock:
        """Take the lock; raise :class:`StateLockedError` when another writer holds it."""
        if self._fd is not None:
            return self
        self.lock_path.parent.mkdir(parents=True, exist_ok=True)
        for _ in range(50):  # retried only when the file was replaced while locking it
            fd = self._lock_fd()
            if fd is None:
                continue
            try:
                self._claim(fd)
            except BaseException:
                os.close(fd)
                raise
            self._fd = fd
            return self
        raise StateLockedError(f"{self.lock_path}: could not take the lock (contended)")

    def _lock_fd(self) -> int | None:
        if fcntl is None:  # pragma: no cover - Windows
            return self._exclusive_fd()
        try:
            fd = open_lock_file(self.lock_path, os.O_RDWR | os.O_CREAT)
        except StateWriteError:
            raise
        except OSError as exc:
            raise StateWriteError(
                exc.errno,
                f"cannot create the lock file {self.lock_path} ({exc.strerror}); a writer "
                "needs a folder it can write to (a reader needs no lock)",
                str(self.lock_path),
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            holder = holder_of(self.lock_path)
            who = _describe(holder) if holder else "another process"
            raise StateLockedError(
                f"{self.path} is open for writing by {who} (lock file {self.lock_path}); "
                "one writer per state: close that gate first, or save to another path"
            ) from None
        try:
            here = os.lstat(self.lock_path)
            same = os.fstat(fd).st_ino == here.st_ino and stat.S_ISREG(here.st_mode)
        except FileNotFoundError:
            same = False
        if not same:  # released and removed by its holder meanwhile: lock the new one
            os.close(fd)
            return None
        return fd

    def _exclusive_fd(self) -> int | None:  # pragma: no cover - Windows
        try:
            return os.open(self.lock_path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            holder = holder_of(self.lock_path)
            if holder and holder["host"] == socket.gethostname() and not _alive(holder["pid"]):
                self._warn_stale(holder)
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(self.lock_path)
                return None
            who = _describe(holder) if holder else "another process"
            raise StateLockedError(
                f"{self.path} is open for writing by {who} (lock file {self.lock_path})"
            ) from None

    def _claim(self, fd: int) -> None:
        previous = holder_of(self.lock_path)
        host = socket.gethostname()
        if previous is not None and previous["pid"] != os.getpid():
            if previous["host"] != host:
                raise StateLockedError(
                    f"{self.path} was locked by {_describe(previous)}, another host; a lock "
                    "of another host is never taken over automatically. If that process "
                    f"is gone, remove {self.lock_path} and open it again"
                )
            self._warn_stale(previous)
        since = _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")
        data = json.dumps({"pid": os.getpid(), "host": host, "since": since}).encode()
        os.ftruncate(fd, 0)
        os.pwrite(fd, data, 0)
        os.fsync(fd)

    def _warn_stale(self, previous: dict[str, Any]) -> None:
        state = "gone" if not _alive(previous["pid"]) else "no longer holding it"
        warnings.warn(
            StaleLockWarning(
                f"{self.lock_path}: took over the stale lock of {_describe(previous)} "
                f"(that process is {state})"
            ),
            stacklevel=5,
        )

    def release(self) -> None:
        """Release the lock and remove the lock file (nothing when not held)."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.lock_path)  # while still locked: no one else holds it
        finally:
            os.close(fd)

    def check_writable(self) -> None:
        """Raise :class:`StateLockedError` unless a save to the path is allowed now.

        Allowed when this object holds the lock, or when no live writer does (then the
        save takes and releases the lock around itself: see :meth:`acquire`).
        """
        if self._fd is not None:
            return
        self.acquire()
        self.release()

    def __enter__(self) -> StateLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __del__(self) -> None:  # pragma: no cover - a dropped lock object
        with contextlib.suppress(Exception):
            self.release()
