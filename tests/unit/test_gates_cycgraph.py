"""CycgraphGate validation and behaviour beyond the recorded vectors."""

from __future__ import annotations

import pytest

from cogstats import Ledger
from cogstats._validation import ParameterError
from cogstats.gates import CYCGRAPH_DECISION_COLUMNS, CycgraphGate, GateReport


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"decision_rule": "bayes"}, "decision_rule must be one of ['inference', 'margin']"),
        ({"min_trials": 0}, "min_trials must be >= 1; got 0"),
        ({"min_trials": 2.5}, "min_trials must be an integer"),
        ({"min_trials": True}, "min_trials must be an integer"),
        ({"promote_margin": -0.1}, "promote_margin must be >= 0"),
        ({"max_trials": 2}, "max_trials must be >= min_trials (3); got 2"),
        ({"max_baseline_runs": 1}, "max_baseline_runs must be >= 2"),
        ({"promote_confidence": 0.4}, "promote_confidence must be >= 0.5"),
        ({"evict_confidence": 1.0}, "evict_confidence must be <= 0.999"),
        ({"noise_floor_sd": float("nan")}, "noise_floor_sd must be finite"),
        ({"multiple_comparison": "holm"}, "multiple_comparison must be one of ['bh', 'none']"),
        ({"sequential_control": "obf"}, "sequential_control must be one of"),
    ],
)
def test_policy_validation(kwargs: dict, words: str) -> None:
    with pytest.raises(ParameterError) as err:
        CycgraphGate(**kwargs)
    assert words in str(err.value)


def test_unknown_policy_keys_are_errors() -> None:
    with pytest.raises(ParameterError, match="unknown policy key 'minTrial'.*'min_trials'"):
        CycgraphGate.from_policy({"minTrial": 2})
    with pytest.raises(ParameterError, match="unknown policy key .candidateTag."):
        CycgraphGate.from_policy({"candidateTag": "candidate"})
    with pytest.raises(ParameterError, match="twice"):
        CycgraphGate.from_policy({"minTrials": 2, "min_trials": 3})
    gate = CycgraphGate.from_policy({"decisionRule": "margin", "maxBaselineRuns": 9})
    assert gate.decision_rule == "margin"
    assert gate.max_baseline_runs == 9
    assert CycgraphGate.from_policy(gate.to_policy()) == gate


def test_report_shape_and_accessors() -> None:
    ledger = Ledger.from_records(
        [{"run_id": f"a{i}", "score": 0.9, "fact_ids": ["good"]} for i in range(5)]
        + [{"run_id": f"b{i}", "score": 0.1, "fact_ids": ["bad"]} for i in range(5)]
        + [{"run_id": f"n{i}", "score": 0.5, "fact_ids": []} for i in range(5)]
    )
    report = CycgraphGate().evaluate(ledger, ["good", "bad", "unseen"])
    assert isinstance(report, GateReport)
    assert tuple(report.to_frame().columns) == CYCGRAPH_DECISION_COLUMNS
    assert report.promoted == ("good",)
    assert report.evicted == ("bad",)
    assert report.held == ("unseen",)
    assert report.decision("bad")["reason"] == "eval-gate:harmful"
    assert report.decision("unseen")["trials"] == 0
    assert "promote=1" in report.summary()
    assert "<table" in report._repr_html_()
    with pytest.raises(ParameterError, match="was not judged"):
        report.decision("nope")
    default = CycgraphGate().evaluate(ledger)
    assert default.to_frame()["fact_id"].to_list() == ["good", "bad"]


def test_candidates_validation() -> None:
    ledger = Ledger.from_records([{"run_id": "r", "score": 0.5, "fact_ids": ["a"]}])
    with pytest.raises(ParameterError, match="repeat"):
        CycgraphGate().evaluate(ledger, ["a", "a"])
    with pytest.raises(ParameterError, match="candidates\\[0\\]"):
        CycgraphGate().evaluate(ledger, [3])  # type: ignore[list-item]
    with pytest.raises(ParameterError, match="Ledger"):
        CycgraphGate().evaluate([{"run_id": "r"}])  # type: ignore[arg-type]


def test_doubling_bracket_penalty() -> None:
    # 3 vs 3 identical runs with a clear lift: bracket 1 doubles the one-sided p-value
    ledger = Ledger.from_records(
        [{"run_id": f"w{i}", "score": s, "fact_ids": ["a"]} for i, s in enumerate([0.7, 0.75, 0.8])]
        + [{"run_id": f"b{i}", "score": s, "fact_ids": []} for i, s in enumerate([0.5, 0.55, 0.6])]
    )
    plain = CycgraphGate(sequential_control="none", multiple_comparison="none").evaluate(ledger)
    doubled = CycgraphGate(multiple_comparison="none").evaluate(ledger)
    p = 1 - plain.decision("a")["confidence_promote"]
    assert doubled.decision("a")["alpha_bracket"] == 1
    assert (p <= 0.1) == (plain.promoted == ("a",))
    assert (2 * p <= 0.1) == (doubled.promoted == ("a",))
