"""Every case recorded from cycgraph's real code (cycgraph_gate_vectors.json) must pass.

Source: ``tests/data/cycgraph_gate_vectors.json``, a copy of cycgraph's recorded
gate vectors (recorded by running the gate,
retriever and statistics modules of wmcmahan/cycgraph, @cycgraph/memory 0.8.0, commit
46d97f9).  Tolerance: 1e-9 absolute on floats, exact on decisions, reasons and counts.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from cogstats import Ledger
from cogstats.estimators import benjamini_hochberg, required_trials, student_t_cdf, welch_lift
from cogstats.gates import CycgraphGate
from cogstats.retrieval import InProgressFirst

TOL = 1e-9
EVIDENCE_FIELDS = ("lift", "se", "df", "p_promote", "p_evict", "trials", "baseline_runs")
#: cycgraph's evidence names -> the gate's columns (cycgraph's p_* are confidences)
COLUMN = {"p_promote": "confidence_promote", "p_evict": "confidence_evict"}


def _close(got: float, want: float) -> bool:
    if math.isinf(want):
        return math.isinf(got) and (got > 0) == (want > 0)
    return abs(got - want) <= TOL


def _cases(vectors: dict[str, Any], key: str) -> list[Any]:
    return [pytest.param(c, id=c.get("name", str(i))) for i, c in enumerate(vectors[key])]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    import json
    from pathlib import Path

    data = json.loads(
        (Path(__file__).parents[1] / "data" / "cycgraph_gate_vectors.json").read_text()
    )
    for key in (
        "gate_cases",
        "welch_cases",
        "t_cdf_cases",
        "bh_cases",
        "required_trials_cases",
        "retrieval_cases",
    ):
        if key.removesuffix("s") in metafunc.fixturenames:
            metafunc.parametrize(key.removesuffix("s"), _cases(data, key))


def test_policy_defaults_match(vectors: dict[str, Any]) -> None:
    assert CycgraphGate().to_policy() == vectors["policy_defaults"]


def test_gate_case(gate_case: dict[str, Any]) -> None:
    ledger = Ledger.from_records(gate_case["runs"])
    gate = CycgraphGate.from_policy(gate_case["policy"])
    report = gate.evaluate(ledger, gate_case["candidates"])
    frame = report.to_frame()
    assert frame["fact_id"].to_list() == [e["fact_id"] for e in gate_case["expected"]]
    for want in gate_case["expected"]:
        got = report.decision(want["fact_id"])
        assert got["decision"] == want["decision"]
        assert got["reason"] == want["reason"]
        if "trials" in want:
            assert got["trials"] == want["trials"]
        evidence = want["evidence"]
        if evidence is None:
            for name in ("lift", "se", "df", "p_promote", "p_evict", "alpha_bracket"):
                assert got[COLUMN.get(name, name)] is None, name
            continue
        for name in EVIDENCE_FIELDS:
            value = got[COLUMN.get(name, name)]
            assert _close(value, evidence[name]), (name, value, evidence[name])
        assert got["alpha_bracket"] == evidence.get("alpha_bracket")


def test_welch_case(welch_case: dict[str, Any]) -> None:
    c = welch_case
    r = welch_lift(
        c["mean_a"], c["var_a"], c["n_a"], c["mean_b"], c["var_b"], c["n_b"], c["margin"]
    )
    for name in ("lift", "se", "df", "p_exceeds"):
        assert _close(getattr(r, name), c["expected"][name]), name


def test_t_cdf_case(t_cdf_case: dict[str, Any]) -> None:
    assert _close(student_t_cdf(t_cdf_case["t"], t_cdf_case["df"]), t_cdf_case["expected"])


def test_bh_case(bh_case: dict[str, Any]) -> None:
    got = benjamini_hochberg(bh_case["pvalues"], bh_case["q"])
    assert got.tolist() == bh_case["expected_reject"]


def test_required_trials_case(required_trials_case: dict[str, Any]) -> None:
    c = required_trials_case
    assert required_trials(c["effect"], c["sd"], c["confidence"], c["power"]) == c["expected"]


def test_retrieval_case(retrieval_case: dict[str, Any], vectors: dict[str, Any]) -> None:
    c = retrieval_case
    kwargs = {k: c[k] for k in ("max_facts", "candidate_slots", "rest_after_trials") if k in c}
    policy = InProgressFirst(**kwargs)
    ledger = Ledger.from_records(vectors["retrieval_ledger"]) if c["use_ledger"] else None
    got = policy.select(vectors["retrieval_store"], ledger)
    assert list(got.fact_ids) == c["expected_ids_in_order"]
