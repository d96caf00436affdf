"""Every exported report page opened in a real browser, offline.

Headless Chromium (Debian's ``chromium`` package; ``.ci/run`` installs it when missing),
driven by playwright with the flags ``--headless=new --no-sandbox --disable-gpu
--disable-background-networking`` and a fresh profile, with the network switched off and
every request other than the page's own file recorded and refused.  For each page: no
request left the file, the charts are rendered (Vega's ``svg.marks`` elements, as many
as the notebook saved; the explorer renders its own inside its frame), and a full-page
screenshot is not blank (its grey levels vary: standard deviation above 20 on 0-255,
where a blank or single-colour page gives 0).  In the threshold explorer, moving a
widget changes the chart.  What a reader's eye catches is checked on every page and frame
with :func:`cogstats.reports.screenshots.page_problems` (the command that screenshots
every report runs the same checks): no table header is a raw expression (``len``, a
dotted path), no legend title is cut short, no missing value reads ``null`` (the
explorer's chosen-cell text included, for every value of every dropdown), and the
explorer's widgets use a sans-serif font and sit under the charts, as its text says.

This is the one test that may skip: on a machine with no Chromium and no way to install
it (``apt-get update && apt-get install -y chromium``, and ``pip install playwright``).
"""

from __future__ import annotations

import io
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cogstats.reports import REPORTS
from cogstats.reports.screenshots import page_problems

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
HOW = "install it with: apt-get update && apt-get install -y chromium; pip install playwright"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not Path(CHROMIUM).exists() and shutil.which("chromium") is None:
        pytest.skip(f"no Chromium at {CHROMIUM}; {HOW}")
    sync_api = pytest.importorskip("playwright.sync_api", reason=HOW)
    profile = tempfile.mkdtemp(prefix="cogstats-chromium-")
    with sync_api.sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            profile,
            executable_path=CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium"),
            headless=True,
            args=FLAGS,
            offline=True,
            viewport={"width": 1280, "height": 900},
        )
        try:
            yield context
        finally:
            context.close()
            shutil.rmtree(profile, ignore_errors=True)


def _open(browser: Any, path: Path) -> tuple[Any, list[str]]:
    page = browser.new_page()
    outside: list[str] = []

    def guard(route: Any) -> None:
        url = route.request.url
        if (url.startswith("file://") and url.split("#")[0].endswith(path.name)) or url.startswith(
            ("data:", "about:")
        ):
            route.continue_()
        else:
            outside.append(url)
            route.abort()

    page.route("**/*", guard)
    page.goto(path.as_uri(), wait_until="load")
    return page, outside


def _grey_spread(png: bytes) -> float:
    from PIL import Image, ImageStat

    image = Image.open(io.BytesIO(png)).convert("L")
    return float(ImageStat.Stat(image).stddev[0])


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(REPORTS))
def test_page_renders_offline(browser: Any, rendered: Path, name: str) -> None:
    html = rendered / f"{name}.html"
    page, outside = _open(browser, html)
    try:
        text = html.read_text(encoding="utf-8")
        charts = text.count('<svg class="marks"')
        if name == "threshold_explorer":
            frame = page.frame_locator("iframe.cogstats-interactive")
            frame.locator("svg.marks").first.wait_for(state="visible", timeout=30_000)
            assert frame.locator("svg.marks path, svg.marks text").count() > 10
        else:
            assert charts >= 2
            rendered_marks = page.locator("svg.marks")
            assert rendered_marks.count() == charts
            # each chart has drawn marks (paths or symbols), not an empty frame
            assert (
                page.locator(
                    "svg.marks g.mark-symbol path, svg.marks g.mark-rect path,"
                    " svg.marks g.mark-line path, svg.marks g.mark-rule line,"
                    " svg.marks g.mark-tick rect, svg.marks g.mark-area path"
                ).count()
                >= charts
            )
        assert page.title() and page.title() != "Notebook"
        shot = page.screenshot(full_page=True)
        assert _grey_spread(shot) > 20.0
        assert outside == [], f"the page tried to load {outside[:3]}"
    finally:
        page.close()


@pytest.mark.slow
def test_explorer_widgets_move_the_chart(browser: Any, rendered: Path) -> None:
    page, outside = _open(browser, rendered / "threshold_explorer.html")
    try:
        frame = page.frame_locator("iframe.cogstats-interactive")
        marks = frame.locator("svg.marks").first
        marks.wait_for(state="visible", timeout=30_000)
        widgets = frame.locator("form.vega-bindings select, form.vega-bindings input")
        assert widgets.count() >= 2  # one per grid axis that varies on its own
        before = marks.inner_html()
        select = frame.locator("form.vega-bindings select").first
        options = select.locator("option")
        current = select.input_value()
        other = next(
            v
            for v in (options.nth(i).get_attribute("value") for i in range(options.count()))
            if v != current
        )
        select.select_option(other)
        page.wait_for_timeout(300)
        after_select = marks.inner_html()
        assert after_select != before, "choosing another value left the chart unchanged"
        slider = frame.locator("form.vega-bindings input[type=range]").first
        slider.evaluate(
            "e => { e.value = e.max === e.value ? e.min : e.max;"
            " e.dispatchEvent(new Event('input', {bubbles: true})); }"
        )
        page.wait_for_timeout(300)
        assert marks.inner_html() != after_select, "moving the slider left the chart unchanged"
        assert outside == []
    finally:
        page.close()


def _wait_for_charts(page: Any, name: str) -> None:
    if name == "threshold_explorer":
        frame = page.frame_locator("iframe.cogstats-interactive")
        frame.locator("svg.marks").first.wait_for(state="visible", timeout=30_000)
    else:
        page.locator("svg.marks").first.wait_for(state="visible", timeout=30_000)
    page.wait_for_timeout(200)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(REPORTS))
def test_page_reads_as_a_reader_expects(browser: Any, rendered: Path, name: str) -> None:
    page, _ = _open(browser, rendered / f"{name}.html")
    try:
        _wait_for_charts(page, name)
        assert page_problems(page) == []
    finally:
        page.close()


def test_the_checks_catch_what_they_look_for(browser: Any, tmp_path: Path) -> None:
    bad = tmp_path / "bad.html"
    bad.write_text(
        "<html><body><table><tr><th>len</th><th>lessons.listed[0].effect</th>"
        "<th>false eviction</th></tr><tr><td>null</td><td>1</td><td>2</td></tr></table>"
        '<svg class="marks"><g class="role-legend-title"><text>comparison gat\u2026</text>'
        "</g><text>chosen: null</text></svg>"
        '<form class="vega-bindings"><select><option>a</option></select></form>'
        "<p>null lessons are fine in prose</p><pre>VBox(children=(HTML(value='x'),))</pre>"
        "</body></html>",
        encoding="utf-8",
    )
    page, _ = _open(browser, bad)
    try:
        found = page_problems(page)
    finally:
        page.close()
    assert "raw table header 'len'" in found
    assert "raw table header 'lessons.listed[0].effect'" in found
    assert not any("false eviction" in f for f in found)
    assert "a table cell reads 'null'" in found
    assert any(f.startswith("legend title cut") for f in found)
    assert "a chart reads 'chosen: null'" in found
    assert any(f.startswith("widgets in the font") for f in found)
    assert not any("null lessons" in f for f in found)
    assert any(f.startswith("a widget's text form 'VBox(children=") for f in found)


@pytest.mark.slow
def test_explorer_widgets_use_the_page_font_sit_under_the_charts_and_never_read_null(
    browser: Any, rendered: Path
) -> None:
    page, outside = _open(browser, rendered / "threshold_explorer.html")
    try:
        _wait_for_charts(page, "threshold_explorer")
        frame = next(f for f in page.frames if f != page.main_frame)
        font = frame.evaluate(
            "getComputedStyle(document.querySelector('form.vega-bindings')).fontFamily"
        )
        assert "sans" in font.lower() or "system-ui" in font.lower()
        under = frame.evaluate(
            "() => { const f = document.querySelector('form.vega-bindings')"
            ".getBoundingClientRect();"
            " const b = Math.max(...[...document.querySelectorAll('svg.marks')]"
            ".map(s => s.getBoundingClientRect().bottom));"
            " return f.top >= b - 1; }"
        )
        assert under, "the widgets are not under the charts"
        text = (rendered / "threshold_explorer.html").read_text(encoding="utf-8")
        assert "dropdowns under the charts" in " ".join(text.split())
        selects = frame.locator("form.vega-bindings select")
        for k in range(selects.count()):
            select = selects.nth(k)
            values = [
                select.locator("option").nth(i).get_attribute("value")
                for i in range(select.locator("option").count())
            ]
            for value in values:
                select.select_option(value)
                page.wait_for_timeout(150)
                assert page_problems(page) == [], (k, value)
        assert outside == []
    finally:
        page.close()


@pytest.mark.slow
def test_the_screenshot_command_shoots_and_checks_pages(rendered: Path, tmp_path: Path) -> None:
    """``python -m cogstats.reports.screenshots OUT --pages DIR``, as the lead runs it (in a
    process of its own: playwright's sync API does not nest in this module's browser)."""
    import os
    import subprocess
    import sys

    from PIL import Image

    from cogstats.reports.screenshots import find_chromium

    if find_chromium() is None:
        pytest.skip(f"no Chromium; {HOW}")
    pytest.importorskip("playwright.sync_api", reason=HOW)
    names = ["quickstart", "threshold_explorer"]
    command = [sys.executable, "-m", "cogstats.reports.screenshots", str(tmp_path)]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run(
        [*command, "--pages", str(rendered), "--reports", *names],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines() == [f"{tmp_path / n}.png: ok" for n in names]
    for n in names:
        with Image.open(tmp_path / f"{n}.png") as image:
            assert image.width == 1280 and image.height > 900
    # a page that is not there: named, exit 1
    missing = subprocess.run(
        [*command, "--pages", str(tmp_path), "--reports", "quickstart"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert missing.returncode == 1 and "no page" in missing.stdout
