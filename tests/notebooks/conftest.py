"""One rendering of every report, shared by the page checks and the browser checks.

``render_demo_report(quick=True, workers=2)`` runs every registered report at its CI
parameters, two kernels at a time (benchmark C3's arrangement), once per test session:
with pytest-xdist the workers share the output folder under a file lock, so the reports
run once, not once per worker.  ``COGSTATS_RENDERED_REPORTS=DIR`` reuses a folder that a
previous session of this fixture completed (for working on the checks).  The wall time of
the rendering is written to ``.complete``: benchmark C3's three-minute goal is checked on
it (tests/notebooks/test_execute.py).
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

import pytest

from cogstats.reports import render_demo_report


@pytest.fixture(scope="session")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder holding every report page, notebook, figure and the index."""
    reuse = os.environ.get("COGSTATS_RENDERED_REPORTS")
    if reuse and (Path(reuse) / ".complete").exists():
        return Path(reuse)
    base = tmp_path_factory.getbasetemp()
    # with xdist every worker has its own basetemp under one per-session folder
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    out = root / "rendered-reports"
    done = out / ".complete"
    with open(root / "rendered-reports.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not done.exists():
                start = time.perf_counter()
                render_demo_report(out, quick=True, workers=2)
                done.write_text(f"{time.perf_counter() - start:.1f}\n")
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return out
