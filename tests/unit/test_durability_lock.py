"""One writer per state path: the lock file's lifecycle (issue 19, Build 2)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cogstats._statelock import StaleLockWarning, StateLock, StateLockedError, holder_of

HOLD = (
    "import sys, time\n"
    "from cogstats._statelock import StateLock\n"
    "lock = StateLock(sys.argv[1]).acquire()\n"
    "print('held', flush=True)\n"
    "time.sleep(60)\n"
)


def _pid(lock_path: Path) -> int:
    holder = holder_of(lock_path)
    assert holder is not None
    return int(holder["pid"])


def _holder(path: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(path)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_second_writer_is_refused_naming_pid_and_host(tmp_path: Path) -> None:
    path = tmp_path / "state.npz"
    proc = _holder(path)
    try:
        with pytest.raises(StateLockedError) as info:
            StateLock(path).acquire()
        assert f"pid {proc.pid}" in str(info.value)
        assert socket.gethostname() in str(info.value)
        with pytest.raises(StateLockedError):
            StateLock(path).check_writable()  # a save to a locked path
    finally:
        proc.kill()
        proc.wait()


def test_lock_of_a_killed_process_is_taken_over_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "state.npz"
    proc = _holder(path)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert _pid(path.with_name("state.npz.lock")) == proc.pid
    with pytest.warns(StaleLockWarning, match=f"pid {proc.pid}"):
        lock = StateLock(path).acquire()
    assert _pid(lock.lock_path) == os.getpid()
    lock.release()
    assert not lock.lock_path.exists()


def test_same_process_second_writer_and_release(tmp_path: Path) -> None:
    path = tmp_path / "state.npz"
    with StateLock(path) as first:
        assert first.held
        with pytest.raises(StateLockedError, match=f"pid {os.getpid()}"):
            StateLock(path).acquire()
        first.check_writable()  # the holder itself may save
    StateLock(path).check_writable()  # free again
    assert not first.lock_path.exists()


def test_another_hosts_lock_is_never_taken_over(tmp_path: Path) -> None:
    path = tmp_path / "state.npz"
    lock_path = path.with_name("state.npz.lock")
    other = {"pid": 12345, "host": "elsewhere.example", "since": "2026-12-02T10:00:00+00:00"}
    lock_path.write_text(json.dumps(other))
    with pytest.raises(StateLockedError, match="never taken over") as info:
        StateLock(path).acquire()
    assert "elsewhere.example" in str(info.value) and str(lock_path) in str(info.value)
    assert json.loads(lock_path.read_text()) == other  # left as it was
    lock_path.unlink()  # the advice, followed
    with StateLock(path):
        pass


def test_garbage_lock_file_is_stale(tmp_path: Path) -> None:
    path = tmp_path / "state.npz"
    path.with_name("state.npz.lock").write_bytes(b"\x00garbage{")
    t = time.perf_counter()
    with StateLock(path) as lock:
        assert _pid(lock.lock_path) == os.getpid()
    assert time.perf_counter() - t < 1.0


def test_a_lock_path_that_is_a_symlink_is_refused_and_its_target_untouched(
    tmp_path: Path,
) -> None:
    from cogstats._statelock import StateWriteError

    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    state = tmp_path / "s.npz"
    (tmp_path / "s.npz.lock").symlink_to(victim)
    with pytest.raises(StateWriteError, match="symbolic link") as err:
        StateLock(state).acquire()
    assert err.value.filename == str(tmp_path / "s.npz.lock")
    assert victim.read_text() == "precious\n"
    assert holder_of(tmp_path / "s.npz.lock") is None  # a link is never read either
    dangling = tmp_path / "d.npz.lock"
    dangling.symlink_to(tmp_path / "nowhere")
    with pytest.raises(StateWriteError, match="symbolic link"):
        StateLock(tmp_path / "d.npz").acquire()
    assert not (tmp_path / "nowhere").exists()  # not created through the link


def test_a_lock_path_that_is_not_a_regular_file_is_refused(tmp_path: Path) -> None:
    from cogstats._statelock import StateWriteError

    os.mkfifo(tmp_path / "f.npz.lock")
    with pytest.raises(StateWriteError, match="not a regular file"):
        StateLock(tmp_path / "f.npz").acquire()
    assert holder_of(tmp_path / "f.npz.lock") is None  # read without blocking
