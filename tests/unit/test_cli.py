"""The command line: gate and error handling."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cogstats import Ledger
from cogstats.cli import main


@pytest.fixture
def ledger_file(tmp_path: Path) -> Path:
    ledger = Ledger.from_records(
        [{"run_id": f"w{i}", "score": 0.9, "fact_ids": ["a"]} for i in range(5)]
        + [{"run_id": f"b{i}", "score": 0.5, "fact_ids": ["b"]} for i in range(5)]
    )
    return ledger.write(tmp_path / "runs.csv")


def test_gate_json(ledger_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["gate", str(ledger_file), "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["fact_id"], r["decision"]) for r in rows] == [("a", "promote"), ("b", "evict")]


def test_gate_policy_flags_and_candidates(
    ledger_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cands = tmp_path / "cands.txt"
    cands.write_text("# candidates\nb\n")
    code = main(
        [
            "gate",
            str(ledger_file),
            "--rule",
            "margin",
            "--min-trials",
            "6",
            "--candidates",
            str(cands),
            "--format",
            "csv",
        ]
    )
    assert code == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("fact_id,decision,reason,trials")
    assert out[1].startswith("b,hold,,5")


def test_gate_table(ledger_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["gate", str(ledger_file)]) == 0
    assert "GateReport" in capsys.readouterr().out


def test_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("run_id,score,fact_ids\nr1,2,a\n")
    assert main(["gate", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "row 1, field 'score'" in err
    assert main(["gate", str(bad), "--max-trials", "1"]) == 2
    assert "max_trials must be >= min_trials" in capsys.readouterr().err
    assert main(["gate", str(tmp_path / "none.csv")]) == 2
