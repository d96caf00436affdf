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

A second ledger is written by hand the way another agent framework might log it, with
nothing of cogstats' naming: ``episode``, ``reward``, ``memories`` (ids with spaces, in
the Python list form pandas writes, ``['tip 04', 'tip 11']``), ``hardness`` and a string
``agent_version`` column; 240 runs, 30
lessons drawn with probability 0.2 each, 4 of them harmful (-0.15), the others helping a
little (U(0, 0.03)), and a hardness that shifts every score.  The report reads it through
``--param columns=...`` (``hardness`` mapped onto ``difficulty``, which the audit then
adjusts for) and every evidence gate among the defaults (the ``recommended`` gate; the
evidence gate where it is not registered) must mark the four harmful lessons as harmful
and at most one harmless one in ``ledger_audit_decisions.csv``/``.parquet``.
"""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from cogstats.cli import main
from cogstats.reports import REPORTS
from cogstats.reports.audit import default_gates

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
    evidence = decisions.filter(pl.col("gate") == default_gates()[1])
    assert evidence.height == 20
    evicted = set(evidence.filter(pl.col("why") == "harm_evidence")["fact_id"].to_list())
    assert evicted >= HARMFUL
    assert len(evicted - HARMFUL) <= 1
    assert set(decisions["gate"].unique()) == set(default_gates())
    page = (tmp_path / "audit" / "ledger_audit.html").read_text(encoding="utf-8")
    assert "runs.csv" in page and str(tmp_path) not in page
    assert "difficulty" in page  # adjusted for the difficulty column found in the file
    attribution = pl.read_parquet(tmp_path / "audit" / "ledger_audit_attribution.parquet")
    assert set(attribution["method"].unique()) == {"lift", "ols + difficulty", "ridge + difficulty"}


FOREIGN_HARMFUL = {"tip 04", "tip 11", "tip 19", "tip 27"}


def write_foreign_ledger(path: Path, seed: int = 5, runs: int = 240, lessons: int = 30) -> None:
    """An agent's log in its own words: episode, reward, memories, hardness, agent_version."""
    rng = np.random.default_rng(seed)
    ids = [f"tip {i:02d}" for i in range(lessons)]
    effect = {f: -0.15 if f in FOREIGN_HARMFUL else float(rng.uniform(0, 0.03)) for f in ids}
    with path.open("w", newline="", encoding="utf-8") as fh:
        out = csv.writer(fh)
        out.writerow(["episode", "agent_version", "hardness", "reward", "memories"])
        for r in range(runs):
            hardness = float(rng.normal(0.0, 0.1))
            used = [f for f in ids if rng.random() < 0.2]
            reward = 0.6 - hardness + sum(effect[f] for f in used) + rng.normal(0, 0.05)
            reward = min(max(reward, 0.0), 1.0)
            version = "v2" if r >= runs // 2 else "v1"
            out.writerow([f"ep-{r:04d}", version, f"{hardness:.5f}", f"{reward:.5f}", str(used)])


@pytest.mark.slow
def test_ledger_audit_on_a_foreign_ledger_through_a_column_mapping(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write_foreign_ledger(tmp_path / "agent_runs.csv")
    monkeypatch.chdir(tmp_path)
    columns = (
        '{"run_id": "episode", "score": "reward", "fact_ids": "memories", "difficulty": "hardness"}'
    )
    argv = ["report", "ledger_audit", "--out", "audit"]
    argv += ["--param", 'ledger_path="agent_runs.csv"', "--param", f"columns={columns}"]
    assert main(argv) == 0, capsys.readouterr().err
    csv_table = pl.read_csv(tmp_path / "audit" / "ledger_audit_decisions.csv")
    decisions = pl.read_parquet(tmp_path / "audit" / "ledger_audit_decisions.parquet")
    assert {"fact_id", "gate", "decision", "why"} <= set(decisions.columns)
    assert csv_table.select("fact_id", "gate", "decision", "why").equals(
        decisions.select("fact_id", "gate", "decision", "why")
    )
    assert set(decisions["gate"].unique()) == set(default_gates())
    assert set(decisions["fact_id"].unique()) == {f"tip {i:02d}" for i in range(30)}
    for gate in default_gates()[1:]:  # the evidence gates (cycgraph's is not asked to)
        rows = decisions.filter(pl.col("gate") == gate)
        # marked harmful: evicted as harmful, or held with evidence of harm (an eviction
        # at the trial budget, ``no_lift``, says nothing about harm)
        marked = rows.filter(
            (pl.col("why") == "harm_evidence") | (pl.col("reason") == "eval-gate:harmful")
        )
        flagged = set(marked["fact_id"].to_list())
        assert flagged >= FOREIGN_HARMFUL, (gate, sorted(flagged))
        assert len(flagged - FOREIGN_HARMFUL) <= 1, (gate, sorted(flagged))
    attribution = pl.read_parquet(tmp_path / "audit" / "ledger_audit_attribution.parquet")
    assert "ols + difficulty" in set(attribution["method"].unique())
    page = (tmp_path / "audit" / "ledger_audit.html").read_text(encoding="utf-8")
    assert "agent_runs.csv" in page and str(tmp_path) not in page
    for lesson in FOREIGN_HARMFUL:
        assert lesson in page
