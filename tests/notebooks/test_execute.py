"""Every registered report, executed by papermill at its CI parameters (benchmark C3's run).

One pass through :func:`render_demo_report` (quick) runs every notebook into a temporary
folder; the checks then read what it wrote: each page exists, holds its charts as inline
``<svg>`` markup and loads nothing from a CDN or any other address, each chart the notebook
saved exists as SVG and PNG, the executed notebooks carry no error output, and the index
links every page.  About a minute and a half on two busy cores; benchmark C3 times it.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from cogstats.reports import REPORTS, render_demo_report

REMOTE_SCRIPT = re.compile(r"<script[^>]*\bsrc\s*=", re.I)
CDNS = ("cdn.jsdelivr", "cdnjs.cloudflare", "unpkg.com", "requirejs", "mathjax.org")


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("reports")
    index = render_demo_report(out, quick=True)
    assert index == out / "index.html"
    return out


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(REPORTS))
def test_report_page(demo: Path, name: str) -> None:
    page = (demo / f"{name}.html").read_text(encoding="utf-8")
    executed = nbformat.read(demo / f"{name}.ipynb", as_version=4)
    saves = sum(c.source.count("save_chart(") for c in executed.cells if c.cell_type == "code")
    svg_outputs = [
        o
        for c in executed.cells
        if c.cell_type == "code"
        for o in c.outputs
        if "image/svg+xml" in o.get("data", {})
    ]
    assert saves >= 2 and len(svg_outputs) == saves  # every saved chart is also shown
    assert page.count('data-mime-type="image/svg+xml"') == saves
    assert page.count('<svg class="marks"') == saves  # vl-convert's markup, inline
    for cdn in CDNS:
        assert cdn not in page.lower()
    assert REMOTE_SCRIPT.search(page) is None
    errors = [
        o
        for c in executed.cells
        if c.cell_type == "code"
        for o in c.outputs
        if o.output_type == "error"
    ]
    assert errors == []
    figures = sorted(p.name for p in (demo / f"{name}_figures").iterdir())
    stems = sorted({p.rsplit(".", 1)[0] for p in figures})
    assert len(stems) == saves
    assert figures == sorted(f"{s}.{ext}" for s in stems for ext in ("png", "svg"))


@pytest.mark.slow
def test_index_links_every_report(demo: Path) -> None:
    index = (demo / "index.html").read_text(encoding="utf-8")
    for name in REPORTS:
        assert f'href="{name}.html"' in index
    assert "<script" not in index
