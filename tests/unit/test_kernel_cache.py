"""The compiled run loop's disk cache follows every source it compiles (cogstats.sim._loops).

A gate's loop is a generated file whose name carries the digest of what it compiles: the
loop, the kernel toolkit, the policies, the gate's piece and its folder, and the rule
modules the piece compiles (wherever they are: a stale compiled rule once ran an old rule
after an edit).  The same sources keep the file and its numba cache; a changed piece, a
changed rule module or a changed shared source give a new file, and the older file goes
with its cache; other cached functions stay.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from cogstats.sim import _loops

PIECE = """
from numba import njit

from cogstats.kernel import KernelGate, compile_rule
from probe_rules import rule

twice = compile_rule(rule.twice)


@njit
def step(st, o, run):
    st.tot[0] = twice(st.tot[0])
"""


@pytest.fixture
def probe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A piece (``probe_piece.kernel``) compiling a rule of another folder, and a copy of
    the package's shared sources, with the loops written to a folder of the test's."""
    for pkg, files in {
        "probe_piece": {"kernel.py": PIECE},
        "probe_rules": {"rule.py": "def twice(x):\n    return 2 * x\n"},
    }.items():
        (tmp_path / pkg).mkdir()
        (tmp_path / pkg / "__init__.py").write_text("")
        for name, text in files.items():
            (tmp_path / pkg / name).write_text(text)
    package = tmp_path / "cogstats"
    for rel in _loops._SHARED:
        (package / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(_loops._PACKAGE / rel, package / rel)
    loops = tmp_path / "loops"
    (loops / "__pycache__").mkdir(parents=True)
    monkeypatch.setattr(_loops, "_folder", lambda: loops)
    monkeypatch.setattr(_loops, "_PACKAGE", package)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in [m for m in sys.modules if m.startswith(("probe_piece", "probe_rules"))]:
        del sys.modules[name]


def _loop_file(loops: Path) -> Path:
    (path,) = loops.glob("loop_probe_piece_kernel_step_*.py")
    return path


def _reload(name: str) -> None:
    """A fresh process's view of a module: imported again from its (edited) source."""
    sys.modules.pop(name, None)


def test_the_loop_file_follows_its_sources(probe: Path) -> None:
    loops = probe / "loops"
    first = _loops._load("probe_piece.kernel", "step")
    path = _loop_file(loops)
    assert "from probe_piece.kernel import step as gate_step  # GATE-STEP" in path.read_text()
    assert callable(first)
    cached = loops / "__pycache__" / f"{path.stem}.run_chunk-54.py311.nbi"
    other = loops / "__pycache__" / "tdist.t_cdf-100.py311.1.nbc"  # not a loop of this gate
    cached.write_text("x")
    other.write_text("x")
    _loops._load("probe_piece.kernel", "step")  # the same sources: the file and cache stay
    assert _loop_file(loops) == path and cached.exists()
    # a rule module the piece compiles, in another folder, changes: a new loop
    rule = probe / "probe_rules" / "rule.py"
    rule.write_text(rule.read_text() + "# edited\n")
    _loops._load("probe_piece.kernel", "step")
    edited = _loop_file(loops)
    assert edited != path and not path.exists() and not cached.exists() and other.exists()
    # the piece itself changes: a new loop again
    piece = probe / "probe_piece" / "kernel.py"
    piece.write_text(piece.read_text() + "# edited\n")
    _reload("probe_piece.kernel")
    _loops._load("probe_piece.kernel", "step")
    assert _loop_file(loops) != edited and not edited.exists()
    # a shared source of the run loop changes (the numerics the pieces compile): a new loop
    before = _loop_file(loops)
    numerics = probe / "cogstats" / "numerics.py"
    numerics.write_text(numerics.read_text() + "# edited\n")
    _loops._load("probe_piece.kernel", "step")
    assert _loop_file(loops) != before and other.exists()


def test_loop_for_is_one_loop_a_step_and_process() -> None:
    from cogstats.gates.audit import kernel as audit

    a = _loops.loop_for(audit.PIECE.path)
    assert _loops.loop_for(audit.PIECE.path) is a
    assert _loops.loop_for(None) is not a
    assert a.__module__.startswith("cogstats_loops.loop_cogstats_gates_audit_kernel_step_")
