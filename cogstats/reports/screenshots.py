"""Screenshots of every report page, and the checks a reader's eye makes.

::

    python -m cogstats.reports.screenshots OUT              # render every report, then shoot
    python -m cogstats.reports.screenshots OUT --pages DIR  # shoot pages already rendered

renders every registered report at its CI parameters into ``OUT/pages`` (unless
``--pages`` names a folder holding ``<report>.html`` pages, as ``cogstats demo`` writes
them), opens each page offline in headless Chromium (playwright driving the system's
``chromium``, as the browser test does), waits for its charts and saves a full-page
``OUT/<report>.png``.  On every page (the explorer's frame included) it checks what a
reader would notice (:func:`page_problems`): a table header that is a raw expression
(``len``, a dotted path, an index in brackets), a legend title cut short (an ellipsis),
a missing value shown as ``null``, widgets in the browser's default serif font.  It
prints one line per page and exits 1 when a check fails.

Needs the ``dev`` extra's playwright and a Chromium (``apt-get install -y chromium``).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["CHROMIUM", "Shot", "find_chromium", "main", "page_problems", "screenshot_reports"]

#: Where Debian's chromium package puts the browser.
CHROMIUM = "/usr/bin/chromium"
_FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]

# JavaScript run in the page and in each frame: what a reader would notice
_LOOK = r"""
() => {
  const out = [];
  const raw = /^(len|[A-Za-z_][\w]*(\.[\w\[\]]+)+|.*\[\d+\].*)$/;
  for (const th of document.querySelectorAll('th')) {
    const t = th.textContent.trim();
    if (raw.test(t)) out.push(`raw table header '${t}'`);
  }
  for (const t of document.querySelectorAll(
      '.role-column-header text, .role-row-header text, .role-title-text text')) {
    const s = (t.textContent || '').trim();
    if (/^[a-z]+(_[a-z0-9]+)+$/.test(s)) out.push(`raw chart panel title '${s}'`);
  }
  for (const t of document.querySelectorAll('.role-legend-title text, .role-legend-title')) {
    const s = (t.textContent || '').trim();
    if (s.includes('\u2026')) out.push(`legend title cut: '${s}'`);
  }
  // a missing value shown as the word: a cell or a chart text that is "null", or "x: null"
  const isNull = (s) => /^\s*null\s*$/.test(s) || /[:=]\s*null\b/.test(s);
  for (const td of document.querySelectorAll('td')) {
    if (isNull(td.textContent || '')) out.push(`a table cell reads '${td.textContent.trim()}'`);
  }
  for (const t of document.querySelectorAll('svg text')) {
    if (isNull(t.textContent || '')) out.push(`a chart reads '${t.textContent.trim()}'`);
  }
  const text = document.body ? document.body.innerText : '';
  for (const line of text.split('\n')) {
    if (/[:=]\s*null\b/.test(line)) out.push(`the page reads '${line.trim().slice(0, 80)}'`);
    if (/^\s*[VH]?Box\(children=/.test(line))
      out.push(`a widget's text form '${line.trim().slice(0, 40)}'`);
  }
  const form = document.querySelector('form.vega-bindings');
  if (form) {
    const font = getComputedStyle(form).fontFamily.toLowerCase();
    if (!/sans|system-ui/.test(font)) out.push(`widgets in the font '${font}'`);
  }
  return out;
}
"""


def find_chromium() -> str | None:
    """Return the Chromium executable (Debian's path, else ``chromium`` on PATH), or None.

    Examples
    --------
    >>> find_chromium() is None or find_chromium().endswith("chromium")
    True
    """
    if Path(CHROMIUM).exists():
        return CHROMIUM
    return shutil.which("chromium")


@contextmanager
def _browser() -> Iterator[Any]:
    exe = find_chromium()
    if exe is None:
        raise RuntimeError(
            "no Chromium: install it with apt-get update && apt-get install -y chromium"
        )
    try:
        from playwright.sync_api import sync_playwright
    except ModuleNotFoundError:  # pragma: no cover - the dev extra has it
        raise RuntimeError("screenshots need playwright (pip install 'cogstats[dev]')") from None
    profile = tempfile.mkdtemp(prefix="cogstats-shots-")
    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            profile,
            executable_path=exe,
            headless=True,
            args=_FLAGS,
            offline=True,
            viewport={"width": 1280, "height": 900},
        )
        try:
            yield context
        finally:
            context.close()
            shutil.rmtree(profile, ignore_errors=True)


def page_problems(page: Any) -> list[str]:
    """Return what a reader would notice on an open page and in its frames (empty: none).

    Raw table headers (``len``, dotted paths, ``[0]``) and chart panel titles
    (``evict_harmful_rate``), legend titles cut short (an
    ellipsis), a missing value shown as ``null`` (a table cell or chart text that reads
    ``null``, or ``name: null`` in the text; the prose's "null lessons" is fine), a live
    widget's text form (``VBox(children=...``) where a page has no kernel, widgets
    (Vega's bindings) in a font other than a sans-serif one.  ``page`` is a
    playwright page.
    """
    found: list[str] = []
    for frame in page.frames:
        try:
            found += [str(x) for x in frame.evaluate(_LOOK)]
        except Exception as exc:  # a frame that went away: say so, do not hide it
            found.append(f"frame not readable: {exc}")
    return found


@dataclass(frozen=True)
class Shot:
    """One page's screenshot and what its checks found."""

    report: str
    png: Path
    problems: tuple[str, ...]


def _wait_for_charts(page: Any, html: str) -> None:
    if "cogstats-interactive" in html:
        frame = page.frame_locator("iframe.cogstats-interactive").first
        frame.locator("svg.marks").first.wait_for(state="visible", timeout=30_000)
    elif '<svg class="marks"' in html:
        page.locator("svg.marks").first.wait_for(state="visible", timeout=30_000)
    page.wait_for_timeout(300)


def screenshot_reports(
    out: str | Path, pages: str | Path | None = None, reports: Sequence[str] | None = None
) -> list[Shot]:
    """Render (unless ``pages``) and screenshot every report page; check each.

    Parameters
    ----------
    out : str or Path
        Folder for the PNGs (``<report>.png``) and, without ``pages``, the rendered pages
        (``pages/``).
    pages : str or Path, optional
        A folder of rendered pages (``<report>.html``).
    reports : sequence of str, optional
        Which reports (default: every registered one).

    Returns
    -------
    list of Shot
    """
    from cogstats.reports import render_demo_report, report_names

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    names = list(reports or report_names())
    if pages is None:
        pages = out / "pages"
        render_demo_report(pages, quick=True, reports=names, workers=2, progress=print)
    folder = Path(pages)
    shots = []
    with _browser() as browser:
        for name in names:
            path = folder / f"{name}.html"
            if not path.is_file():
                shots.append(Shot(name, out / f"{name}.png", (f"no page {path}",)))
                continue
            page = browser.new_page()
            try:
                page.goto(path.resolve().as_uri(), wait_until="load")
                _wait_for_charts(page, path.read_text(encoding="utf-8"))
                png = out / f"{name}.png"
                page.screenshot(path=str(png), full_page=True)
                shots.append(Shot(name, png, tuple(page_problems(page))))
            finally:
                page.close()
    return shots


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ``python -m cogstats.reports.screenshots OUT [--pages DIR]``."""
    parser = argparse.ArgumentParser(
        prog="python -m cogstats.reports.screenshots",
        description="Render every report, screenshot each page, check what a reader sees.",
    )
    parser.add_argument("out", help="folder for the PNGs (and the pages, without --pages)")
    parser.add_argument("--pages", help="a folder of rendered pages (<report>.html)")
    parser.add_argument("--reports", nargs="*", help="which reports (default: all)")
    args = parser.parse_args(argv)
    try:
        shots = screenshot_reports(args.out, args.pages, args.reports)
    except RuntimeError as exc:
        print(f"screenshots: error: {exc}", file=sys.stderr)
        return 2
    failed = False
    for shot in shots:
        status = "ok" if not shot.problems else "; ".join(shot.problems)
        failed = failed or bool(shot.problems)
        print(f"{shot.png}: {status}")
    return 1 if failed else 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
