"""``cogstats sweep check``: cells crossing a bound, Monte Carlo slack, missing values, errors."""

from __future__ import annotations

import math

import polars as pl
import pytest

from cogstats._validation import ParameterError
from cogstats.sweep import check_sweep
from cogstats.sweep.__main__ import main as module_main
from cogstats.sweep.check import check_main

TABLE = pl.DataFrame(
    {
        "cell": [0, 1, 2, 3],
        "gate.min_trials": [2, 2, 4, 4],
        "gate.decision_rule": ["margin", "inference", "margin", "inference"],
        "replicates": [100] * 4,
        "false_eviction_rate": [0.010, 0.030, 0.021, 0.050],
        "false_eviction_rate_mcse": [0.002, 0.010, 0.002, 0.005],
        "poison_recall": [1.0, 0.9, 0.97, 0.5],
        "poison_recall_mcse": [0.0, 0.03, 0.01, 0.05],
        "time_to_verdict": [3.0, math.nan, 4.0, None],
        "time_to_verdict_mcse": [0.1, math.nan, 0.2, None],
    }
)


def test_maximum_names_the_crossing_cells() -> None:
    r = check_sweep(TABLE, "false_eviction_rate", maximum=0.02)
    assert r.crossing["cell"].to_list() == [1, 2, 3] and not r.passed and r.exit_code == 1
    text = str(r)
    assert text.startswith("FAIL: false_eviction_rate <= 0.02 in every cell: 3 of 4 cells")
    assert (
        "cell 2 (gate.min_trials=4, gate.decision_rule=margin): false_eviction_rate = 0.021" in text
    )
    # the bound itself passes (strict crossing)
    assert check_sweep(TABLE, "false_eviction_rate", maximum=0.05).passed


def test_mcse_slack_is_one_sided_per_cell() -> None:
    # cell 1: 0.03 - 2*0.01 = 0.01 <= 0.02 passes; cell 2: 0.021 - 2*0.002 = 0.017 passes;
    # cell 3: 0.05 - 2*0.005 = 0.04 > 0.02 fails
    r = check_sweep(TABLE, "false_eviction_rate", maximum=0.02, mcse=2)
    assert r.crossing["cell"].to_list() == [3]
    assert "by more than 2 MCSE" in str(r)


def test_minimum_and_derived_metric() -> None:
    r = check_sweep(TABLE, "poison_recall", minimum=0.95)
    assert r.crossing["cell"].to_list() == [1, 3] and r.op == ">="
    assert "poison_recall = 0.5 (MCSE 0.05) < 0.95" in str(r)
    # missed_poison = 1 - poison_recall is derived
    assert check_sweep(TABLE, "missed_poison", maximum=0.1).crossing["cell"].to_list() == [3]


def test_missing_values_fail_unless_allowed() -> None:
    r = check_sweep(TABLE, "time_to_verdict", maximum=10)
    assert r.crossing.height == 0 and r.missing["cell"].to_list() == [1, 3] and not r.passed
    assert "time_to_verdict has no value" in str(r) and "--allow-missing" in str(r)
    assert check_sweep(TABLE, "time_to_verdict", maximum=10, allow_missing=True).passed
    assert check_sweep(TABLE, "time_to_verdict", maximum=3.5, allow_missing=True).exit_code == 1


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"metric": "false_evict", "maximum": 1}, "did you mean 'false_eviction_rate'"),
        ({"metric": "gate.min_trials", "maximum": 1}, "got 'gate.min_trials'"),
        ({"metric": "regret", "maximum": 1}, "got 'regret'"),
        ({"metric": "poison_recall"}, "exactly one of maximum"),
        ({"metric": "poison_recall", "maximum": 1, "minimum": 0}, "exactly one of maximum"),
        ({"metric": "poison_recall", "maximum": 1, "mcse": -1}, "mcse must be a number >= 0"),
    ],
)
def test_errors_name_the_parameter(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ParameterError, match=message.replace("(", r"\(")):
        check_sweep(TABLE, **kwargs)  # type: ignore[arg-type]


def test_command_exit_codes(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    assert check_main([str(tmp_path / "none"), "--metric", "regret", "--max", "1"]) == 2
    assert "no sweep store" in capsys.readouterr().err
    assert module_main(["nope"]) == 2
    with pytest.raises(SystemExit):  # argparse: --max or --min is required
        check_main([str(tmp_path), "--metric", "regret"])
