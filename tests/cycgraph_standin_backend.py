"""A stand-in for docs/scripts/cycgraph_vectors/harness.mjs, for the driver's tests.

It answers one ``cogstats-cycgraph-vectors/1`` request (stdin) with one response (stdout),
as the Node harness does with cycgraph's code, in one of two ways:

- by default with cogstats' own reproductions of cycgraph (``CycgraphGate``,
  ``welch_lift``, ``student_t_cdf``, ``benjamini_hochberg``, ``required_trials``,
  ``InProgressFirst``): the decisions are cycgraph's, the floats agree to 1e-9 (scipy's t
  distribution, not cycgraph's continued fraction);
- with ``--replay FILE``, from the outputs recorded in a vectors file, turned back into
  cycgraph's shapes (the report's promoted / evicted / held lists): the inverse of the
  driver's merge, so a replay must regenerate that file byte for byte.

Usage: ``python tests/cycgraph_standin_backend.py [--replay VECTORS] < request``.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

PROTOCOL = "cogstats-cycgraph-vectors/1"
GROUPS = {"promote": "promoted", "evict": "evicted", "hold": "held"}


def _encode(value: Any) -> Any:
    """Non-finite numbers as the protocol's strings (JSON cannot carry them)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {k: _encode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_encode(v) for v in value]
    return value


def _report(entries: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """File-layout decisions -> cycgraph's RetentionReport (snake_case keys)."""
    report: dict[str, list[dict[str, Any]]] = {"promoted": [], "evicted": [], "held": []}
    for e in entries:
        item: dict[str, Any] = {"fact_id": e["fact_id"]}
        if e["decision"] == "evict":
            item["reason"] = e["reason"]
        if e["decision"] == "hold":
            item["trials"] = e["trials"]
        if e["evidence"] is not None:
            item["evidence"] = e["evidence"]
        report[GROUPS[e["decision"]]].append(item)
    return report


def replay(request: dict[str, Any], vectors: dict[str, Any]) -> dict[str, Any]:
    """Answer from the outputs recorded in ``vectors`` (matched by position)."""
    policy = {k: v for k, v in vectors["policy_defaults"].items() if v is not None}
    return {
        "protocol": PROTOCOL,
        "policy_defaults": policy,
        "gate_cases": [_report(c["expected"]) for c in vectors["gate_cases"]],
        "welch_cases": [c["expected"] for c in vectors["welch_cases"]],
        "t_cdf_cases": [c["expected"] for c in vectors["t_cdf_cases"]],
        "bh_cases": [c["expected_reject"] for c in vectors["bh_cases"]],
        "required_trials_cases": [c["expected"] for c in vectors["required_trials_cases"]],
        "retrieval_cases": [c["expected_ids_in_order"] for c in vectors["retrieval_cases"]],
    }


def compute(request: dict[str, Any]) -> dict[str, Any]:
    """Answer with cogstats' reproductions of cycgraph's gate, statistics and retrieval."""
    from cogstats import Ledger
    from cogstats.estimators import (
        benjamini_hochberg,
        required_trials,
        student_t_cdf,
        welch_lift,
    )
    from cogstats.gates import CycgraphGate
    from cogstats.retrieval import InProgressFirst

    policy = {k: v for k, v in CycgraphGate().to_policy().items() if v is not None}
    gates = []
    for case in request["gate_cases"]:
        gate = CycgraphGate.from_policy(case["policy"])
        report = gate.evaluate(Ledger.from_records(case["runs"]), case["candidates"])
        entries = []
        for fact_id in case["candidates"]:
            got = report.decision(fact_id)
            evidence = None
            if got["lift"] is not None:
                evidence = {k: got[k] for k in ("lift", "se", "df", "trials")}
                # cycgraph's names for the gate's confidence columns
                evidence["p_promote"] = got["confidence_promote"]
                evidence["p_evict"] = got["confidence_evict"]
                evidence["baseline_runs"] = got["baseline_runs"]
                if got["alpha_bracket"] is not None:
                    evidence["alpha_bracket"] = got["alpha_bracket"]
            entries.append(
                {
                    "fact_id": fact_id,
                    "decision": got["decision"],
                    "reason": got["reason"],
                    "trials": got["trials"],
                    "evidence": evidence,
                }
            )
        gates.append(_report(entries))
    welch = []
    for c in request["welch_cases"]:
        r = welch_lift(
            c["mean_a"], c["var_a"], c["n_a"], c["mean_b"], c["var_b"], c["n_b"], c["margin"]
        )
        welch.append({k: getattr(r, k) for k in ("lift", "se", "df", "p_exceeds")})
    retrieval = request["retrieval"]
    ledger = Ledger.from_records(retrieval["ledger"])
    chosen = []
    for c in retrieval["cases"]:
        kwargs = {k: c[k] for k in ("max_facts", "candidate_slots", "rest_after_trials") if k in c}
        selection = InProgressFirst(**kwargs).select(
            retrieval["store"], ledger if c["use_ledger"] else None
        )
        chosen.append(list(selection.fact_ids))
    return {
        "protocol": PROTOCOL,
        "policy_defaults": policy,
        "gate_cases": gates,
        "welch_cases": welch,
        "t_cdf_cases": [student_t_cdf(c["t"], c["df"]) for c in request["t_cdf_cases"]],
        "bh_cases": [
            [bool(b) for b in benjamini_hochberg(c["pvalues"], c["q"])] for c in request["bh_cases"]
        ],
        "required_trials_cases": [
            int(required_trials(c["effect"], c["sd"], c["confidence"], c["power"]))
            for c in request["required_trials_cases"]
        ],
        "retrieval_cases": chosen,
    }


def main(argv: list[str]) -> int:
    request = json.load(sys.stdin)
    if request.get("protocol") != PROTOCOL:
        print(f"not a {PROTOCOL} request", file=sys.stderr)
        return 1
    if argv[:1] == ["--replay"]:
        response = replay(request, json.loads(Path(argv[1]).read_text()))
    else:
        response = compute(request)
    response["backend"] = {"name": "tests/cycgraph_standin_backend.py"}
    json.dump(_encode(response), sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
