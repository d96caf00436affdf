"""``render_demo_report(progress=...)``: one line per report started and finished (make demo)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from cogstats.reports import runner
from cogstats.reports.runner import ReportResult, render_demo_report


def _fake(fail: str | None = None) -> Any:
    def run_report(name: str, out: Path, *args: Any, **kwargs: Any) -> ReportResult:
        if name == fail:
            raise RuntimeError(f"{name} broke")
        page = out / f"{name}.html"
        page.write_text("<html></html>")
        return ReportResult(name, out / f"{name}.ipynb", page, (), execute_seconds=0.1)

    return run_report


@pytest.mark.parametrize("workers", [1, 2])
def test_one_line_per_report_start_and_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    monkeypatch.setattr(runner, "run_report", _fake())
    lines: list[str] = []
    names = ["quickstart", "tradeoffs", "tuning"]
    render_demo_report(tmp_path, reports=names, workers=workers, progress=lines.append)
    assert len(lines) == 2 * len(names)
    for k, name in enumerate(names, start=1):
        assert f"[{k}/3] {name}: started" in lines
        done = [x for x in lines if x.startswith(f"[{k}/3] {name}: done in ")]
        assert len(done) == 1 and re.search(
            r"done in \d+\.\d s \(\d of 3 done, \d+ s so far\)", done[0]
        )
        assert lines.index(f"[{k}/3] {name}: started") < lines.index(done[0])
    assert "(3 of 3 done, " in lines[-1]
    # silent by default
    render_demo_report(tmp_path, reports=names, workers=workers)


def test_a_failing_report_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "run_report", _fake(fail="tradeoffs"))
    lines: list[str] = []
    with pytest.raises(RuntimeError, match="tradeoffs broke"):
        render_demo_report(tmp_path, reports=["quickstart", "tradeoffs"], progress=lines.append)
    assert lines[-1].startswith("[2/2] tradeoffs: failed after ")
