"""The ledger audit on a ledger cogstats did not generate, through the command line.

A small generator writes a CSV the way an agent would log it: 150 runs, 20 lessons each
injected into a run with probability 1/4 (random co-injection, so the number of lessons
varies from run to run), a ``difficulty`` column that shifts every score, noise sd 0.05,
and three planted harmful lessons of effect -0.15 (the others help a little, U(0, 0.03)).
``cogstats report ledger_audit --param ledger_path='"runs.csv"'`` runs from the folder
holding the file; the decisions file written beside the page must mark the three harmful
lessons as evicted by the comparison gate (``why == "harm_evidence"``) and at most one
harmless lesson.  The seed is fixed; with this design a harmful lesson's OLS estimate has
a standard error near 0.012, so -0.15 is more than ten standard errors from zero.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from cogstats.cli import main
from cogstats.reports import REPORTS

HARMFUL = {"L03", "L09", "L16"}


def write_ledger(path: Path, seed: int = 11, runs: int = 150, lessons: int = 20) -> None:
    rng = np.random.default_rng(seed)
    ids = [f"L{i:02d}" for i in range(lessons)]
    effects = {f: (-0.15 if f in HARMFUL else float(rng.uniform(0, 0.03))) for f in ids}
    with path.open("w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["run_id", "score", "fact_ids", "difficulty"])
        for r in range(runs):
            difficulty = rng.normal(0, 0.1)
            chosen = [f for f in ids if rng.random() < 0.25]
            score = 0.6 - difficulty + sum(effects[f] for f in chosen) + rng.normal(0, 0.05)
            score = min(max(score, 0.0), 1.0)
            out.writerow([f"run-{r:03d}", f"{score:.6f}", " ".join(chosen), f"{difficulty:.6f}"])


def test_report_listing(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == len(REPORTS) >= 5
    for line in lines:
        name, _, description = line.partition(": ")
        assert name in REPORTS and len(description.split()) >= 6


@pytest.mark.slow
def test_ledger_audit_marks_planted_harm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write_ledger(tmp_path / "runs.csv")
    monkeypatch.chdir(tmp_path)
    status = main(["report", "ledger_audit", "--param", 'ledger_path="runs.csv"', "--out", "audit"])
    assert status == 0, capsys.readouterr().err
    decisions = pl.read_csv(tmp_path / "audit" / "ledger_audit_decisions.csv")
    evidence = decisions.filter(pl.col("gate") == "evidence")
    assert evidence.height == 20
    evicted = set(evidence.filter(pl.col("why") == "harm_evidence")["fact_id"].to_list())
    assert evicted >= HARMFUL
    assert len(evicted - HARMFUL) <= 1
    assert set(decisions["gate"].unique()) == {"cycgraph", "evidence"}
    page = (tmp_path / "audit" / "ledger_audit.html").read_text(encoding="utf-8")
    assert "runs.csv" in page and str(tmp_path) not in page
    assert "difficulty" in page  # adjusted for the difficulty column found in the file
    attribution = pl.read_parquet(tmp_path / "audit" / "ledger_audit_attribution.parquet")
    assert set(attribution["method"].unique()) == {"lift", "ols + difficulty", "ridge + difficulty"}
