"""The gate comparison page (rendered once with every report, see conftest.py).

At its CI parameters (20 replicates): the goals table lists every goal for every gate
that ran, the four charts (S1, S2, variants, S4) are inline, and while the recommended
preset is not installed the page says so in its summary instead of failing.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import nbformat
import pytest

from cogstats.reports.comparison import preset_installed


@pytest.mark.slow
def test_gate_comparison_page(rendered: Path) -> None:
    page = (rendered / "gate_comparison.html").read_text(encoding="utf-8")
    words = html.unescape(re.sub(r"<[^>]+>", " ", page))
    for caption in ("Goals met per gate", "Every goal, every gate", "S2 variants: every figure"):
        assert caption in words
    for label in ("cycgraph margin rule", "cycgraph inference rule"):
        assert label in words
    summary = words[: words.find("Goals met and missed")]  # the summary comes first
    if preset_installed("recommended"):
        assert "recommended preset" in words
    else:
        assert "recommended preset not installed" in summary
    assert page.count('<svg class="marks"') == 4
    for variant in (
        "s2-single-poison",
        "s2-mild-poisons",
        "s2-noisy-runs",
        "s2-two-waves",
        "s2-small-prompt",
    ):
        assert variant in words
    executed = nbformat.read(rendered / "gate_comparison.ipynb", as_version=4)
    assert executed.metadata["papermill"]["parameters"]["replicates"] == 20
