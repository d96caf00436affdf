"""The compiled engine and the plain-Python reference make the same decisions.

Both engines consume the same pre-drawn numbers; the reference calls the library's
retrieval policies and gates on a Ledger, rescanning it every gate (as cycgraph does), the
compiled engine keeps incremental sufficient statistics.  For every policy and gate, and
the scenario features (difficulty, families, poisoning, saturation, damping, logistic
link, cold start, gate cadence, re-checking verified lessons), every output array must be
equal: injections, scores, propensities, decisions and their runs.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from cogstats.sim import Scenario, simulate
from cogstats.sim.draws import draw_uniforms, layout, lesson_table, prepare
from cogstats.sim.engine import run_fast
from cogstats.sim.reference import run_reference

BASE: dict[str, Any] = {
    "runs": 24,
    "lessons": {
        "listed": [
            {"id": "good", "effect": 0.15, "arrives_at_run": 1},
            {"id": "meh", "effect": 0.0, "kind": "neutral", "arrives_at_run": 2},
        ],
        "streams": [
            {
                "kind": "genuine",
                "per_run": 2,
                "from_run": 1,
                "to_run": 8,
                "effect": {"dist": "uniform", "low": -0.05, "high": 0.1},
            },
        ],
        "poison": [{"after_run": 3, "count": 3, "effect": -0.2}],
    },
    "difficulty": {"model": "iid", "sd": 0.1, "proxy_corr": 0.8},
    "score": {"base": 0.55, "noise_sd": 0.05},
    "retrieval": {
        "policy": "in_progress_first",
        "max_facts": 6,
        "candidate_slots": 3,
        "rest_after_trials": 3,
    },
    "gate": {"type": "cycgraph", "decision_rule": "inference", "min_trials": 2},
}


def _variant(**changes: Any) -> Scenario:
    data = {k: (dict(v) if isinstance(v, dict) else v) for k, v in BASE.items()}
    for path, value in changes.items():
        section, _, key = path.partition("__")
        if key:
            data[section] = {**data[section], key: value}
        else:
            data[section] = value
    return Scenario.from_dict(data)


CASES = {
    "ipf_inference": _variant(),
    "ipf_margin_maxtrials": _variant(
        gate={"type": "cycgraph", "decision_rule": "margin", "min_trials": 2, "max_trials": 4}
    ),
    "ipf_inference_nobh_noseq": _variant(
        gate={
            "type": "cycgraph",
            "min_trials": 2,
            "multiple_comparison": "none",
            "sequential_control": "none",
            "max_baseline_runs": 8,
            "every": 2,
            "from_run": 3,
        }
    ),
    "ipf_recheck": _variant(
        gate={
            "type": "cycgraph",
            "decision_rule": "margin",
            "min_trials": 2,
            "recheck_verified": True,
        }
    ),
    "newest_first": _variant(
        retrieval={
            "policy": "newest_first",
            "max_facts": 5,
            "candidate_slots": 2,
            "rest_after_trials": 4,
        },
        gate={"type": "cycgraph", "decision_rule": "margin", "min_trials": 2},
    ),
    "fewest_trials_first": _variant(
        retrieval={"policy": "fewest_trials_first", "max_facts": 5, "candidate_slots": 2},
        gate={"type": "cycgraph", "decision_rule": "margin", "min_trials": 2},
    ),
    "randomized": _variant(
        retrieval={"policy": "randomized", "max_facts": 6, "candidate_slots": 3}
    ),
    "randomized_bernoulli_capped": _variant(
        retrieval={
            "policy": "randomized",
            "max_facts": 6,
            "candidate_slots": 3,
            "inclusion": "bernoulli",
            "inclusion_prob": 0.4,
        },
        gate={"type": "cycgraph", "decision_rule": "margin", "min_trials": 2},
    ),
    "randomized_capped_pool": _variant(
        retrieval={"policy": "randomized", "max_facts": 6, "candidate_slots": 3, "pool": 5},
        gate={"type": "cycgraph", "decision_rule": "margin", "min_trials": 2, "max_trials": 4},
    ),
    "designed_cold_start": _variant(
        retrieval={"policy": "designed", "max_facts": 6, "candidate_slots": 3},
        record_empty_runs=False,
    ),
    "ucb1_audit_families": _variant(
        retrieval={"policy": "ucb1", "max_facts": 4, "epsilon": 0.2, "win_threshold": 0.55},
        difficulty={
            "model": "ar1",
            "sd": 0.1,
            "ar": 0.7,
            "families": [
                {"name": "easy", "shift": 0.1},
                {"name": "hard", "shift": -0.1, "weight": 2},
            ],
            "regimes": [{"from_run": 12, "shift": -0.05}],
        },
        gate={"type": "audit", "min_hits": 3, "min_win_rate": 0.5, "win_threshold": 0.55},
    ),
    "ucb1_deterministic_nogate": _variant(
        retrieval={"policy": "ucb1", "max_facts": 3}, gate={"type": "none"}
    ),
    "saturation_damping_logistic": _variant(
        score={
            "base": 0.6,
            "noise_sd": 0.3,
            "link": "logistic",
            "saturation": 0.2,
            "poison_damping": 0.5,
        },
        gate={"type": "cycgraph", "decision_rule": "margin", "min_trials": 2},
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_engines_agree(name: str) -> None:
    s = CASES[name]
    lessons = lesson_table(s)
    lay = layout(s)
    u = draw_uniforms(np.random.SeedSequence(20261130), 0, 6, lay)
    prep = prepare(s, lessons, u, lay)
    fast = run_fast(s, lessons, prep)
    ref = run_reference(s, lessons, prep)
    assert fast.differences(ref) == []
    # the scenario really exercised the gate (not a vacuous comparison)
    if s.gate.type != "none":
        decided = (fast.promote_run > 0) | (fast.evict_run > 0) | (fast.retire_run > 0)
        assert decided.any()


def test_results_identical_through_simulate() -> None:
    s = CASES["randomized"]
    a = simulate(s, replicates=5, rng=7)
    b = simulate(s, replicates=5, rng=7, engine="reference")
    for name in ("runs", "decisions", "lessons", "metrics"):
        assert getattr(a, name).equals(getattr(b, name)), name


def test_same_seed_same_result_and_chunking() -> None:
    s = CASES["ipf_inference"]
    a = simulate(s, replicates=50, rng=123, chunk_size=7)
    b = simulate(s, replicates=50, rng=np.random.SeedSequence(123), chunk_size=50)
    for name in ("runs", "decisions", "lessons", "metrics"):
        assert getattr(a, name).equals(getattr(b, name)), name
    c = simulate(s, replicates=50, rng=124)
    assert not a.metrics.equals(c.metrics)


def test_replicates_are_prefix_stable() -> None:
    s = CASES["ipf_inference"]
    a = simulate(s, replicates=10, rng=5)
    b = simulate(s, replicates=25, rng=5)
    assert b.metrics.head(10).equals(a.metrics)


def test_any_gate_object_runs_in_the_reference_engine() -> None:
    """A user's gate (here: evict every lesson once it has 3 trials) plugs into the loop."""
    import polars as pl

    from cogstats.gates import GateReport

    class EvictAtThree:
        def evaluate(self, ledger, candidates):
            stats = dict(
                zip(ledger.fact_stats()["fact_id"], ledger.fact_stats()["trials"], strict=True)
            )
            rows = [
                {
                    "fact_id": f,
                    "decision": "evict" if stats.get(f, 0) >= 3 else "hold",
                    "reason": "eval-gate:no_lift" if stats.get(f, 0) >= 3 else None,
                    "trials": stats.get(f, 0),
                }
                for f in candidates
            ]
            return GateReport("custom", pl.DataFrame(rows))

    s = CASES["ipf_inference"]
    result = simulate(s, replicates=3, rng=1, engine="reference", gate=EvictAtThree())
    evicted = result.lessons.filter(pl.col("evicted_at_run").is_not_null())
    assert evicted.height > 0
    assert (evicted["trials"] == 3).all()
    with pytest.raises(Exception, match="engine='reference'"):
        simulate(s, replicates=1, rng=1, engine="fast", gate=EvictAtThree())
    # the default engine ("auto") runs a gate object in the reference engine by itself
    auto = simulate(s, replicates=3, rng=1, gate=EvictAtThree())
    assert auto.engine == "reference"
    assert auto.extras["engine_reason"] == "a gate object was passed"
    assert auto.lessons.equals(result.lessons)


EVIDENCE_CASES = {
    "evidence_lift_fixed": {
        "type": "evidence",
        "method": "lift",
        "alpha": 0.05,
        "min_trials": 3,
        "max_trials": 12,
        "hold_unidentifiable": False,
    },
    "evidence_welch_group": {
        "type": "evidence",
        "method": "welch",
        "alpha": 0.01,
        "sequential": "group",
        "min_trials": 4,
        "max_trials": 14,
        "promote_margin": 0.02,
        "evict_margin": 0.02,
        "options": {"noise_floor_sd": 0.05},
        "hold_unidentifiable": False,
    },
    "evidence_welch_group_hsd": {
        "type": "evidence",
        "method": "welch",
        "alpha": 0.02,
        "sequential": "group",
        "spending": "hsd",
        "spending_options": {"gamma": 1.0},
        "min_trials": 3,
        "max_trials": 12,
        "hold_unidentifiable": False,
    },
    "evidence_lift_bonferroni": {
        "type": "evidence",
        "method": "lift",
        "alpha": 0.1,
        "multiplicity": "bonferroni",
        "min_trials": 3,
        "max_baseline_runs": 15,
        "hold_unidentifiable": False,
    },
}


@pytest.mark.parametrize("name", sorted(EVIDENCE_CASES))
def test_engines_agree_on_evidence_gates(name: str) -> None:
    s = _variant(
        gate=EVIDENCE_CASES[name],
        retrieval={
            "policy": "randomized",
            "max_facts": 6,
            "candidate_slots": 3,
            "inclusion": "bernoulli",
        },
    )
    lessons = lesson_table(s)
    lay = layout(s)
    u = draw_uniforms(np.random.SeedSequence(7), 0, 6, lay)
    prep = prepare(s, lessons, u, lay)
    fast = run_fast(s, lessons, prep)
    ref = run_reference(s, lessons, prep)
    assert fast.differences(ref) == []
    decided = (fast.promote_run > 0) | (fast.evict_run > 0)
    assert decided.any()


def test_audit_with_its_own_win_threshold_under_ucb1_runs_in_the_reference_engine() -> None:
    """The kernel counts wins at one threshold; an audit whose threshold differs from
    UCB1's is not covered, and "auto" says so and runs it in the reference engine."""
    s = CASES["ucb1_audit_families"]
    other = s.with_values({"gate.win_threshold": 0.6})
    with pytest.raises(Exception, match="counts wins at one threshold"):
        simulate(other, replicates=1, rng=1, engine="fast")
    auto = simulate(other, replicates=2, rng=1, keep_runs=False)
    assert auto.engine == "reference" and "win_threshold (0.6)" in auto.extras["engine_reason"]
    same = simulate(s, replicates=2, rng=1, keep_runs=False)
    assert same.engine == "fast"
    assert not auto.lessons.equals(same.lessons)  # the threshold matters


def test_gates_beyond_the_compiled_ones_run_in_the_reference_engine_automatically() -> None:
    s = _variant(gate={"type": "evidence", "method": "ols", "min_trials": 3})
    with pytest.raises(Exception, match="method 'ols'.*engine='reference'"):
        simulate(s, replicates=1, rng=1, engine="fast")
    auto = simulate(s, replicates=2, rng=1, keep_runs=False)
    assert auto.engine == "reference"
    assert "method 'ols'" in auto.extras["engine_reason"]
    assert "reference engine: the compiled engine's evidence gate" in auto.summary()
    ref = simulate(s, replicates=2, rng=1, engine="reference", keep_runs=False)
    assert auto.lessons.equals(ref.lessons)
    # a scenario the kernel covers takes the compiled engine
    fast = simulate(CASES["ipf_inference"], replicates=2, rng=1, keep_runs=False)
    assert (fast.engine, fast.extras["engine_reason"]) == ("fast", None)
