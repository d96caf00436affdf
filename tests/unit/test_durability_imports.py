"""No import from data: a 'module:Class' name from a file imports only allowed modules.

Issue 19, Build 4.  The module under test writes a marker file when imported, so a test
sees whether its import-time code ran.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from cogstats import Ledger
from cogstats._imports import ENV
from cogstats._validation import CogstatsError, ParameterError
from cogstats.gates import GATES, allow_imports, make_gate

MODULE = "cogstats_test_hostile_gate"
SOURCE = '''
import dataclasses, pathlib, os
pathlib.Path(os.environ["COGSTATS_TEST_MARKER"]).write_text("ran")
from cogstats.gates import CycgraphGate

@dataclasses.dataclass(frozen=True)
class Gate(CycgraphGate):
    """A gate whose module has import-time code."""
'''


@pytest.fixture
def hostile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    (tmp_path / f"{MODULE}.py").write_text(SOURCE)
    marker = tmp_path / "marker"
    monkeypatch.setenv("COGSTATS_TEST_MARKER", str(marker))
    monkeypatch.delenv(ENV, raising=False)
    monkeypatch.chdir(tmp_path)  # importable only through the current directory
    sys.modules.pop(MODULE, None)
    yield marker
    sys.modules.pop(MODULE, None)
    for name in [n for n, e in GATES._entries.items() if e.cls.__module__ == MODULE]:
        GATES.unregister(name)


def test_make_gate_in_user_code_imports_with_cwd_appended(hostile: Path) -> None:
    before = list(sys.path)
    gate = make_gate(f"{MODULE}:Gate", min_trials=2)
    assert gate.min_trials == 2 and hostile.read_text() == "ran"
    assert sys.path == before  # appended for that import only


def test_a_spec_file_does_not_import(hostile: Path, tmp_path: Path) -> None:
    from cogstats.sim import load_spec

    spec = tmp_path / "s.toml"
    spec.write_text(
        f'runs = 10\nreplicates = 2\n[[lessons.listed]]\nid = "a"\neffect = 0.1\n'
        f'[gate]\ntype = "{MODULE}:Gate"\n'
    )
    with pytest.raises(CogstatsError, match=f"--allow-import {MODULE}"):
        load_spec(spec)
    assert not hostile.exists()
    assert load_spec(spec, allow_import=[MODULE]).scenario.gate.type == f"{MODULE}:Gate"
    assert hostile.exists()


def test_a_state_file_does_not_import(hostile: Path, tmp_path: Path) -> None:
    from cogstats.gates import StreamingGate

    with allow_imports([MODULE]):  # (the user's own code could also just import it)
        gate = make_gate(f"{MODULE}:Gate")
    sg = StreamingGate(gate)
    sg.record("r1", 0.5, ["a"])
    path = sg.save(tmp_path / "state.npz")
    sys.modules.pop(MODULE, None)
    hostile.unlink()
    with pytest.raises(ParameterError, match="the state file"):
        StreamingGate.load(path)
    assert not hostile.exists()
    back = StreamingGate.load(path, allow_import=[MODULE])
    assert back.report().to_frame().equals(sg.report().to_frame())


def test_report_parameter_and_env(hostile: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from cogstats.reports.audit import audit_ledger

    ledger = Ledger.from_records(
        [{"run_id": f"r{i}", "score": i / 4, "fact_ids": ["a"] if i % 2 else []} for i in range(4)]
    )
    with pytest.raises(ParameterError, match="report parameter"):
        audit_ledger(ledger, gates=["cycgraph", f"{MODULE}:Gate"])
    assert not hostile.exists()
    monkeypatch.setenv(ENV, MODULE)  # what --allow-import sets for kernels and workers
    audit = audit_ledger(ledger, gates=["cycgraph", f"{MODULE}:Gate"])
    assert hostile.exists() and len(audit.gates) == 2


def test_registered_names_work_everywhere(tmp_path: Path) -> None:
    from cogstats.gates import StreamingGate
    from cogstats.sim import load_spec

    spec = tmp_path / "s.toml"
    spec.write_text(
        'runs = 10\n[[lessons.listed]]\nid = "a"\neffect = 0.1\n[gate]\ntype = "evidence"\n'
    )
    assert load_spec(spec).scenario.gate.type == "evidence"
    sg = StreamingGate(make_gate("cycgraph"))
    sg.record("r1", 0.5, ["a"])
    assert StreamingGate.load(sg.save(tmp_path / "s.npz")).gate == sg.gate


def test_cli_allow_import_flag(hostile: Path, tmp_path: Path) -> None:
    from cogstats.cli import main

    spec = tmp_path / "s.toml"
    spec.write_text(
        f'runs = 8\nreplicates = 2\n[[lessons.listed]]\nid = "a"\neffect = 0.1\n'
        f'[gate]\ntype = "{MODULE}:Gate"\n'
    )
    assert main(["simulate", str(spec), "--engine", "reference"]) == 2
    assert not hostile.exists()
    try:
        assert main(["simulate", str(spec), "--engine", "reference", "--allow-import", MODULE]) == 0
    finally:
        os.environ.pop(ENV, None)
    assert hostile.exists()
