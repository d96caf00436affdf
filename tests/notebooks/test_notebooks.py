"""Static checks of the report notebooks (house style, "Thin notebooks").

Every notebook in notebooks/: the first cell is a code cell tagged ``parameters`` holding
only ``name: type = value  # help`` lines, all of which papermill can read; no outputs or
execution counts are committed; code cells define no functions or classes, run no loops
and start no processes; and the registry and the folder agree.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import nbformat
import papermill
import pytest

from cogstats.reports import REPORTS, RESERVED_PARAMETERS, default_notebook_dir

NOTEBOOKS = sorted(default_notebook_dir().glob("*.ipynb"))
PARAM_LINE = re.compile(r"^(\w+): (int|float|str|bool|list|dict) = (.+?)  # (\S.*)$")
FORBIDDEN_NODES = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.Lambda,
    ast.For,
    ast.AsyncFor,
    ast.While,
)
FORBIDDEN_MODULES = ("multiprocessing", "concurrent", "dask", "joblib", "threading")


def ids(paths: list[Path]) -> list[str]:
    return [p.stem for p in paths]


def test_registry_and_folder_agree() -> None:
    assert NOTEBOOKS, "no notebooks found"
    assert sorted(r.notebook for r in REPORTS.values()) == [p.name for p in NOTEBOOKS]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids(NOTEBOOKS))
def test_parameters_cell_first(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    first = nb.cells[0]
    assert first.cell_type == "code"
    assert "parameters" in first.metadata.get("tags", [])
    lines = [line for line in first.source.splitlines() if line.strip()]
    bad = [line for line in lines if not PARAM_LINE.match(line)]
    assert bad == [], "parameter lines must read 'name: type = value  # help'"
    # papermill must parse every line (it skips lines it cannot read, e.g. two '=')
    found = papermill.inspect_notebook(str(path))
    assert list(found) == [PARAM_LINE.match(line).group(1) for line in lines]  # type: ignore[union-attr]
    for name in RESERVED_PARAMETERS:
        assert name in found
    assert sum("parameters" in c.metadata.get("tags", []) for c in nb.cells) == 1


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids(NOTEBOOKS))
def test_no_outputs_committed(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == []
            assert cell.execution_count is None
        assert "papermill" not in cell.metadata
        assert "execution" not in cell.metadata
    assert "papermill" not in nb.metadata


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids(NOTEBOOKS))
def test_thin_code_cells(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert sum(c.cell_type == "markdown" for c in nb.cells) >= 3, "charts need prose"
    for cell in code:
        tree = ast.parse(cell.source)
        for node in ast.walk(tree):
            assert not isinstance(node, FORBIDDEN_NODES), (
                f"{path.name}: {type(node).__name__} in a code cell:\n{cell.source}"
            )
            if isinstance(node, ast.Import | ast.ImportFrom):
                names = [a.name for a in node.names]
                module = getattr(node, "module", None) or ""
                for name in [module, *names]:
                    assert name.split(".")[0] not in FORBIDDEN_MODULES, name
    # charts render as inline SVG so that the exported page needs no JavaScript; the one
    # exception is an interactive chart, embedded with its JavaScript inlined
    svg = any('alt.renderers.enable("svg")' in c.source for c in code)
    interactive = any("interactive_chart(" in c.source for c in code)
    assert svg or interactive
    # no machine path and no reference to material outside the repository
    text = "\n".join(c.source for c in nb.cells)
    assert "shared/" not in text and "/work/" not in text and "/home/" not in text


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids(NOTEBOOKS))
def test_published_look(path: Path) -> None:
    """A heading for the page title, one summary cell, file parameters read from anywhere."""
    nb = nbformat.read(path, as_version=4)
    first_md = next(c for c in nb.cells if c.cell_type == "markdown")
    assert first_md.source.startswith("# "), "the first prose cell is the page title"
    tagged = [c for c in nb.cells if "summary" in c.metadata.get("tags", [])]
    assert len(tagged) == 1 and "summary_block(" in tagged[0].source
    params = papermill.inspect_notebook(str(path))
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    for name in params:
        if name.endswith("_path"):
            assert f"resource_path({name})" in code, f"{name} must go through resource_path"
            default = params[name]["default"].strip("\"'")
            assert not default.startswith(("..", "/")), f"{name}: a default relative to the repo"


@pytest.mark.parametrize("name", sorted(REPORTS))
def test_registry_parameters_exist(name: str) -> None:
    report = REPORTS[name]
    declared = report.parameters()
    assert set(report.ci_parameters) <= set(declared)
    assert set(report.path_parameters) <= set(declared)
    # the CI values have the declared types (the same check as run_report's)
    assert report.validate(report.ci_parameters) == dict(report.ci_parameters)
    for info in declared.values():
        assert info["help"], "every parameter says what it is"
