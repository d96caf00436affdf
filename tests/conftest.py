"""Shared fixtures: cycgraph's recorded gate vectors and the repository's data folder.

Everything the tests read lives in the repository (a plain clone runs every test):
``tests/data/cycgraph_gate_vectors.json`` (recorded from cycgraph's code) and the recorded
poisoning demo ``data/cycgraph_poison_demo_{runs,lessons}.csv`` (cycgraph's demo,
Apache-2.0; source and policy in ``data/README.md`` and ``docs/reference.md``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture(scope="session")
def vectors() -> dict[str, Any]:
    """cycgraph_gate_vectors.json: inputs and outputs recorded from cycgraph's gate code."""
    return json.loads((DATA / "cycgraph_gate_vectors.json").read_text())


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The repository root: ``shared_dir / "data"`` holds the recorded demo ledger.

    (The name is historical: the files used to be read from a folder beside the clone;
    they are copied into the repository's ``data/`` now.)
    """
    folder = ROOT / "data"
    for name in ("cycgraph_poison_demo_runs.csv", "cycgraph_poison_demo_lessons.csv"):
        assert (folder / name).is_file(), f"{folder / name} is missing from the repository"
    return ROOT
