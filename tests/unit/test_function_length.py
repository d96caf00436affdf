"""The house rules: no function in cogstats/ above 150 lines or 12 parameters.

Lines are counted from the ``def`` line to the function's last line (``ast``'s
``end_lineno``, docstring included); parameters are every named parameter plus ``*args``
and ``**kwargs``, not counting a method's ``self`` or ``cls``.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_LINES = 150


def long_functions(root: Path, limit: int = MAX_LINES) -> list[tuple[str, int]]:
    """Return the functions under ``root`` above ``limit`` lines: (``path::name``, lines)."""
    out = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = int(node.end_lineno or node.lineno) - node.lineno + 1
                if lines > limit:
                    out.append((f"{path.relative_to(root.parent).as_posix()}::{node.name}", lines))
    return out


def test_no_function_above_the_limit() -> None:
    found = [(name, n) for name, n in long_functions(ROOT / "cogstats")]
    assert found == [], f"split these by concern (at most {MAX_LINES} lines): {found}"


def test_the_check_can_fail(tmp_path: Path) -> None:
    pkg = tmp_path / "cogstats"
    pkg.mkdir()
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES))
    (pkg / "big.py").write_text(f"def big():\n{body}\n", encoding="utf-8")
    assert long_functions(pkg) == [("cogstats/big.py::big", MAX_LINES + 1)]


MAX_PARAMS = 12


def many_parameters(root: Path, limit: int = MAX_PARAMS) -> list[tuple[str, int]]:
    """Return the functions under ``root`` with more than ``limit`` parameters."""
    out = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                a = node.args
                names = [*a.posonlyargs, *a.args, *a.kwonlyargs]
                n = len(names) + (a.vararg is not None) + (a.kwarg is not None)
                if names and names[0].arg in ("self", "cls"):
                    n -= 1
                if n > limit:
                    out.append((f"{path.relative_to(root.parent).as_posix()}::{node.name}", n))
    return out


def test_no_function_above_the_parameter_limit() -> None:
    found = many_parameters(ROOT / "cogstats")
    assert found == [], f"pass a record instead (at most {MAX_PARAMS} parameters): {found}"


def test_the_checks_can_fail(tmp_path: Path) -> None:
    """Both checks find a function over their limit (and spare ``self``)."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES))
    params = ", ".join(f"a{i}" for i in range(MAX_PARAMS))
    (pkg / "m.py").write_text(
        f"def long():\n{body}\n\n"
        f"def wide({params}, *rest):\n    pass\n\n"
        f"class C:\n    def ok(self, {params}):\n        pass\n"
    )
    assert [n for n, _ in long_functions(pkg)] == ["pkg/m.py::long"]
    assert many_parameters(pkg) == [("pkg/m.py::wide", MAX_PARAMS + 1)]
