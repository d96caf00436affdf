"""The examples run as scripts (a subprocess with this interpreter, in a temporary folder)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_production_gate_example_runs(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "production_gate.py"), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    assert "identical to the batch gate: True" in out.stdout
    assert "skipped: [(201," in out.stdout  # the malformed line is listed
    assert (tmp_path / "gate-state.npz").is_file()
    assert "100 runs new to the state" in out.stdout  # restart: saved runs not counted twice
    # one writer: the second service is refused naming the first; the killed service's
    # lock is taken over by the restart, which leaves no lock or temporary file
    assert "second service refused: " in out.stdout and "by pid " in out.stdout
    assert "crash after 320 runs" in out.stdout and "the state holds 300 runs" in out.stdout
    assert "took over the stale lock" in out.stdout
    assert "left behind: []" in out.stdout
    # the restart reads the 20 runs lost in the crash and the 80 written meanwhile only:
    # the saves moved the marker past the runs recorded live
    assert "started with 300 runs; read 100 lines" in out.stdout


def test_live_agent_example_runs(tmp_path: Path) -> None:
    """300 runs of a simulated agent on a lesson store, killed after run 150 and restarted:
    the outbox's run sent again changes nothing, every run is recorded once, the poisons
    are out of the prompt and no genuine lesson is convicted."""
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "live_agent.py"), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    assert "killed after run 150" in out.stdout
    assert "a reader sees 150 runs" in out.stdout
    assert "the outbox's run-150 sent again changed nothing: True" in out.stdout
    assert "the restart took over the stale lock: True" in out.stdout
    assert "300 runs recorded, each once: True" in out.stdout
    assert "poisons out of the prompt: ['P1', 'P2']" in out.stdout
    assert "genuine lessons convicted as harmful: []" in out.stdout
    assert "left behind: []" in out.stdout
