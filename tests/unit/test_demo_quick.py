"""``cogstats demo --quick``: a subset of the reports, the others named on the index."""

from __future__ import annotations

import html
from pathlib import Path

import pytest

from cogstats.cli import main
from cogstats.demo import QUICK_REPORTS
from cogstats.reports import REPORTS, render_demo_report


def test_quick_reports_are_registered_and_a_subset() -> None:
    assert set(QUICK_REPORTS) < set(REPORTS)
    assert "quickstart" in QUICK_REPORTS and "tradeoffs" in QUICK_REPORTS


def test_index_names_every_report_not_rendered(tmp_path: Path) -> None:
    index = render_demo_report(tmp_path, quick=True, reports=[]).read_text(encoding="utf-8")
    text = html.unescape(index)
    for name in REPORTS:
        assert f"cogstats report {name} --quick</code> renders it" in text
        assert f'href="{name}.html"' not in index
    assert "<script" not in index


def test_demo_help_describes_quick(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["demo", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "four reports (quickstart, ledger_audit, poison_replay, tradeoffs)" in out
