"""Pages that tell the truth, checked in a real browser (headless Chromium, offline).

Rendered here: ``ledger_audit`` on a user's fixed-size-prompt ledger written as a user
would (64 lessons, six a run, columns ``episode, reward, memories_used, task_hardness,
task_type``), once with every lesson drawn (the default) and once with ``max_lessons=20``;
and ``quickstart`` at its CI parameters.  In the browser:

* every one of the 64 lessons is drawn in every chart with a lesson axis, or (with
  ``max_lessons``) the page names each lesson left out;
* the decision charts' legends give each outcome its own colour, the palette's
  (:data:`cogstats.charts.VERDICT_COLORS`), with admit, hold and suspend apart;
* the audit's prose says the estimates are relative to the mean lesson and does not say
  the lessons cannot be told apart;
* the quickstart page shows the recommended gate's decisions.

Skips only where no browser can be had (as tests/notebooks/test_browser.py).
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cogstats.charts import VERDICT_COLORS
from cogstats.reports import run_report
from tests.helpers import EPISODE_COLUMNS, write_episode_ledger

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
HOW = "install it with: apt-get update && apt-get install -y chromium; pip install playwright"
LESSONS = [f"m{j:02d}" for j in range(1, 65)]


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


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("truthful")
    ledger = root / "episodes.csv"
    write_episode_ledger(str(ledger))
    common = {
        "ledger_path": str(ledger),
        "columns": EPISODE_COLUMNS,
        "covariates": ["task_hardness", "task_type"],
    }
    out = {
        "audit": run_report("ledger_audit", root / "all", common).html,
        "audit20": run_report("ledger_audit", root / "some", {**common, "max_lessons": 20}).html,
        "quickstart": run_report("quickstart", root / "quick", None, ci=True).html,
    }
    return out


def _open(browser: Any, path: Path) -> Any:
    page = browser.new_page()
    page.route(
        "**/*",
        lambda route: (
            route.continue_()
            if route.request.url.startswith(("file://", "data:", "about:"))
            else route.abort()
        ),
    )
    page.goto(path.as_uri(), wait_until="load")
    return page


def _chart_texts(page: Any) -> list[str]:
    """The text drawn in each chart (its SVG text elements), chart by chart."""
    return list(
        page.evaluate(
            "() => [...document.querySelectorAll('svg.marks')].map("
            "s => [...s.querySelectorAll('text')].map(t => t.textContent).join('\\n'))"
        )
    )


def _legends(page: Any) -> list[dict[str, str]]:
    """Each chart's legend: label -> the fill the browser computes for its symbol."""
    return list(
        page.evaluate(
            """() => [...document.querySelectorAll('svg.marks')].map(s => {
                const out = {};
                for (const g of s.querySelectorAll('g.role-legend-symbol')) {
                    const label = g.parentElement.querySelector('g.role-legend-label text');
                    const sym = g.querySelector('path');
                    if (label && sym) out[label.textContent] = getComputedStyle(sym).fill;
                }
                return out;
            })"""
        )
    )


def _rgb(hex_colour: str) -> str:
    r, g, b = (int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgb({r}, {g}, {b})"


@pytest.mark.slow
def test_audit_draws_every_lesson(browser: Any, pages: dict[str, Path]) -> None:
    page = _open(browser, pages["audit"])
    try:
        assert page.get_by_text("The charts draw every one of the 64 lessons.").is_visible()
        texts = _chart_texts(page)
        with_lessons = [t for t in texts if "m01" in t or "m64" in t]
        assert len(with_lessons) >= 3  # the forest, the decisions, the timeline
        for text in with_lessons:
            drawn = set(re.findall(r"\bm\d\d\b", text))
            assert drawn == set(LESSONS), sorted(set(LESSONS) - drawn)
    finally:
        page.close()


@pytest.mark.slow
def test_audit_names_the_lessons_it_leaves_out(browser: Any, pages: dict[str, Path]) -> None:
    page = _open(browser, pages["audit20"])
    try:
        body = page.inner_text("body")
        note = next(line for line in body.splitlines() if line.startswith("The charts draw 20"))
        left = note.split("left out: ")[1].rstrip(".").split(", ")
        texts = [t for t in _chart_texts(page) if re.search(r"\bm\d\d\b", t)]
        for text in texts:
            drawn = set(re.findall(r"\bm\d\d\b", text))
            assert len(drawn) == 20
            assert drawn | set(left) == set(LESSONS) and not drawn & set(left)
    finally:
        page.close()


@pytest.mark.slow
def test_decision_charts_give_each_outcome_its_own_colour(
    browser: Any, pages: dict[str, Path]
) -> None:
    page = _open(browser, pages["audit"])
    try:
        legends = [leg for leg in _legends(page) if set(leg) & set(VERDICT_COLORS)]
        assert legends, "no decision legend found"
        seen: set[str] = set()
        for legend in legends:
            known = {k: v for k, v in legend.items() if k in VERDICT_COLORS}
            assert len(set(known.values())) == len(known), legend
            for label, fill in known.items():
                assert fill == _rgb(VERDICT_COLORS[label]), (label, fill)
            seen |= set(known)
        # the recommended gate on this ledger admits, holds and suspends lessons
        assert {"admit", "hold", "suspend"} <= seen, seen
    finally:
        page.close()


@pytest.mark.slow
def test_audit_prose_matches_the_data(browser: Any, pages: dict[str, Path]) -> None:
    page = _open(browser, pages["audit"])
    try:
        body = page.inner_text("body")
        assert "64 of 64 lessons are estimated relative to the mean lesson" in body
        assert "cannot be told apart from others" not in body
        assert "None: the regressions estimate every lesson" in body
        reading = body.split("Reading this audit", 1)[1]
        assert "relative to the mean lesson" in reading
    finally:
        page.close()


@pytest.mark.slow
def test_quickstart_shows_the_recommended_gate(browser: Any, pages: dict[str, Path]) -> None:
    page = _open(browser, pages["quickstart"])
    try:
        summary = page.locator(".cogstats-summary")
        assert summary.is_visible()
        assert "the recommended gate: " in summary.inner_text()
        caption = page.get_by_text("The recommended gate's decisions, beside cycgraph's")
        assert caption.is_visible()
        body = page.inner_text("body")
        assert re.search(r"recommended gate (evicts|suspends)\s+\d+", body)
    finally:
        page.close()
