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
