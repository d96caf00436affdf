"""Shared fixtures: the recorded cycgraph vectors and the ../shared data folder."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data"
SHARED = ROOT.parent / "shared"


@pytest.fixture(scope="session")
def vectors() -> dict[str, Any]:
    """cycgraph_gate_vectors.json, copied from ../shared/reference (recorded facts)."""
    return json.loads((DATA / "cycgraph_gate_vectors.json").read_text())


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """../shared; skipped locally when absent, a failure in CI (CI=true)."""
    if not (SHARED / "data").is_dir():
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but the shared data folder {SHARED / 'data'} is missing")
        pytest.skip(f"{SHARED / 'data'} not present")
    return SHARED
