"""Every registered report, executed by papermill at its CI parameters (benchmark C3's run).

One pass of :func:`render_demo_report` (quick, two kernels at a time; see conftest.py)
runs every notebook into a temporary folder; the checks read what it wrote.  Each page:
its title is the notebook's heading and the summary block comes before the first section;
code is hidden; charts are inline ``<svg>`` markup (the threshold explorer: an iframe with
the Vega JavaScript inlined); nothing is loaded from any address; tables are plain (no
dtype rows, no quoted strings); no absolute machine path appears; the run manifest is at
the end.  The executed notebooks carry no error and no stderr output (kernel start-up
warnings are silenced), each chart saved exists as SVG and PNG (HTML for the explorer),
the ledger audit's tables lie beside its page, and the index lists every report with its
description, the date and the version.
"""

from __future__ import annotations

import html
import re
from importlib import metadata
from pathlib import Path

import nbformat
import pytest

from cogstats.reports import REPORTS, export_html, get_report
from cogstats.reports.audit import default_gates

ROOT = Path(__file__).resolve().parents[2]
REMOTE_SCRIPT = re.compile(r"<script[^>]*\bsrc\s*=", re.I)
CDNS = ("cdn.jsdelivr", "cdnjs.cloudflare", "unpkg.com", "requirejs", "mathjax.org")
INTERACTIVE = {"threshold_explorer"}


def _saves(executed: nbformat.NotebookNode) -> list[tuple[str, str]]:
    """(chart stem, formats) of every save_chart call in the executed notebook."""
    calls = []
    for cell in executed.cells:
        if cell.cell_type != "code":
            continue
        for m in re.finditer(
            r'save_chart\([^)]*?"([\w.-]+)"(?:, formats=\(([^)]*)\))?', cell.source
        ):
            formats = re.findall(r'"(\w+)"', m.group(2)) if m.group(2) else ["svg", "png"]
            calls.append((m.group(1), ",".join(formats)))
    return calls


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(REPORTS))
def test_report_page(rendered: Path, name: str) -> None:
    page = (rendered / f"{name}.html").read_text(encoding="utf-8")
    executed = nbformat.read(rendered / f"{name}.ipynb", as_version=4)
    # title and summary on top
    heading = next(c for c in executed.cells if c.cell_type == "markdown").source
    title = heading.splitlines()[0].removeprefix("# ").strip()
    shown = re.search(r"<title>(.*?)</title>", page, re.S)
    assert shown is not None and html.unescape(shown.group(1)) == title
    summary_at = page.find("cogstats-summary")
    assert 0 < summary_at < page.find("<h2"), "the summary block comes before the first section"
    assert page.rfind("Run manifest") > page.rfind("cogstats-summary")
    for item in ("package versions", "git commit", "seed", "cogstats report " + name):
        assert item in page
    # code hidden, nothing remote, no machine path, plain tables
    words = html.unescape(re.sub(r"<[^>]+>", "", page))  # the text, without markup
    assert "import polars" not in words and "save_chart(" not in words
    for cdn in CDNS:
        assert cdn not in page.lower()
    assert REMOTE_SCRIPT.search(page) is None
    for path in (str(rendered), str(ROOT), "/tmp/", "/root/", "/home/"):
        assert path not in page, f"machine path {path!r} in the page"
    assert "shape: (" not in page and 'class="dataframe"' not in page
    assert "&quot;" not in re.sub(r'srcdoc="[^"]*"', "", page)
    # charts: each saved chart is shown, inline
    saves = _saves(executed)
    assert len(saves) >= 1
    if name in INTERACTIVE:
        assert page.count('class="cogstats-interactive"') == len(saves)
        assert "vegaEmbed" in page
    else:
        assert len(saves) >= 2
        assert page.count('<svg class="marks"') == len(saves)
    figures = sorted(p.name for p in (rendered / f"{name}_figures").iterdir())
    expected = sorted(f"{stem}.{ext}" for stem, formats in saves for ext in formats.split(","))
    assert figures == expected
    # the executed notebook: no error, no stderr (kernel warnings silenced)
    outputs = [o for c in executed.cells if c.cell_type == "code" for o in c.outputs]
    assert [o for o in outputs if o.output_type == "error"] == []
    assert [o.text for o in outputs if o.get("name") == "stderr"] == []


@pytest.mark.slow
def test_every_report_renders_at_ci_parameters(rendered: Path) -> None:
    """Every report at its CI parameters renders a page, and the index beside them.

    How long they take is benchmark C3 (``python -m benchmarks.c3_notebooks``), not a
    timed test: a shared CI machine's load would decide it.
    """
    assert float((rendered / ".complete").read_text()) > 0
    assert sorted(p.stem for p in rendered.glob("*.html")) == sorted([*REPORTS, "index"])


@pytest.mark.slow
def test_ledger_audit_tables_beside_the_page(rendered: Path) -> None:
    import polars as pl

    for stem in ("attribution", "decisions"):
        csv = pl.read_csv(rendered / f"ledger_audit_{stem}.csv")
        parquet = pl.read_parquet(rendered / f"ledger_audit_{stem}.parquet")
        assert csv.height == parquet.height > 0
    decisions = pl.read_parquet(rendered / "ledger_audit_decisions.parquet")
    assert {"fact_id", "gate", "decision", "why"} <= set(decisions.columns)
    assert sorted(decisions["gate"].unique()) == sorted(default_gates())


@pytest.mark.slow
def test_show_code_keeps_the_code(rendered: Path, tmp_path: Path) -> None:
    page = export_html(rendered / "quickstart.ipynb", tmp_path / "q.html", show_code=True)
    text = page.read_text(encoding="utf-8")
    words = html.unescape(re.sub(r"<[^>]+>", "", text))
    assert "import polars" in words and "# Parameters" in words  # code and parameters shown
    for path in (str(rendered), str(ROOT), "/tmp/"):
        assert path not in text  # the parameters cell shows relative paths


@pytest.mark.slow
def test_index_links_every_report(rendered: Path) -> None:
    index = (rendered / "index.html").read_text(encoding="utf-8")
    for name in REPORTS:
        assert f'href="{name}.html"' in index
        assert get_report(name).title in html.unescape(index)
    assert f"cogstats {metadata.version('cogstats')}" in index
    assert re.search(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC", index)
    assert "<script" not in index
