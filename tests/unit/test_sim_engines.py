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
from cogstats.sim.draws import draw_uniforms, layout, prepare, scenario_lessons
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
    lessons = scenario_lessons(s)
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
    lessons = scenario_lessons(s)
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


# ---------------------------------------------------------------------- kernel pieces
def _sum_cases(seed: int, count: int) -> list[tuple[int, float, float, int, float, float]]:
    """Sufficient statistics of random ledgers, with the edge cases (n < 2, nb < 2, ties)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        tot_n = int(rng.integers(0, 12))
        n = int(rng.integers(0, tot_n + 1))
        y = rng.uniform(0, 1, tot_n) if rng.random() < 0.8 else np.full(tot_n, 0.5)
        ya = y[:n]
        out.append((n, float(ya.sum()), float(ya @ ya), tot_n, float(y.sum()), float(y @ y)))
    return out


def test_welch_moments_are_welch_lift() -> None:
    from cogstats.estimators.lift import welch_lift
    from cogstats.numerics import welch_moments

    for n, s, ss, tn, ts, tss in _sum_cases(5, 300):
        nb = tn - n
        if n < 2 or nb < 2:
            continue
        lift, se, df = welch_moments(n, s, ss, tn, ts, tss, 0.01)
        va, vb = (ss - s * s / n) / (n - 1), ((tss - ss) - (ts - s) ** 2 / nb) / (nb - 1)
        ref = welch_lift(
            s / n, max(va, 0.0), n, (ts - s) / nb, max(vb, 0.0), nb, 0.0, noise_floor_sd=0.1
        )
        assert (lift, se) == pytest.approx((ref.lift, ref.se), rel=1e-9, abs=1e-12)
        assert df == pytest.approx(ref.df, rel=1e-9)


def test_gauss_jordan_into_gives_the_estimators_bits() -> None:
    from cogstats import kernel as KC
    from cogstats.estimators.debiased_ridge import gauss_jordan_inverse
    from cogstats.numerics import gauss_jordan_into

    rng = np.random.default_rng(11)
    for p in (1, 3, 17):
        x = rng.normal(size=(3 * p, p))
        a = x.T @ x + np.eye(p)
        aug, out, out_c = np.empty((p, 2 * p)), np.empty((p, p)), np.empty((p, p))
        assert gauss_jordan_into(a, p, aug, out) and KC.gauss_jordan_into(a, p, aug, out_c)
        want = gauss_jordan_inverse(a)
        assert want is not None
        assert out.tobytes() == want.tobytes() == out_c.tobytes()
    singular = np.ones((2, 2))
    assert not gauss_jordan_into(singular, 2, np.empty((2, 4)), np.empty((2, 2)))
    assert gauss_jordan_inverse(singular) is None


def test_each_compiled_gate_reads_its_options_record() -> None:
    """A gate compiles by having a kernel piece: the piece passes the gate's options record
    (every numeric field of the gate, derived from its class, nothing else) to its step,
    and each gate's step is its own (one run loop per step); a block of the run loop or of
    a policy is filled by name, every slot and no other."""
    import dataclasses

    from cogstats._validation import ParameterError
    from cogstats.kernel import COMMON, IP_RUNS
    from cogstats.sim.engine import KERNEL_GATES, fast_support, params

    gates = {
        "cycgraph": {"type": "cycgraph", "min_trials": 2},
        "audit": {"type": "audit"},
        "evidence": {"type": "evidence", "method": "welch", "hold_unidentifiable": False},
        "recommended": {"type": "recommended"},
    }
    assert set(gates) == set(KERNEL_GATES)
    assert len({KERNEL_GATES[n].path for n in KERNEL_GATES}) == len(KERNEL_GATES)
    for name, spec in gates.items():
        s = _variant(gate=spec)
        assert fast_support(s) is None, name
        ip, _fp, _pi, _pf, o = params(s)
        assert ip[IP_RUNS] == s.runs
        gate = s.gate.build()
        numeric = [
            f.name
            for f in dataclasses.fields(gate)
            if isinstance(getattr(gate, f.name), int | float | str | type(None))
            and f.name not in ("method", "spending")
        ]
        assert list(o._fields[: len(numeric)]) == numeric, name
        for field in numeric:
            value = getattr(gate, field)
            if isinstance(value, int | float) and not isinstance(value, bool):
                assert getattr(o, field) == value, (name, field)
    with pytest.raises(ParameterError, match="missing \\['runs'"):
        COMMON.pack({"x": 2})


def test_the_wald_table_is_regressions() -> None:
    """One Wald table (cogstats.numerics.wald), the regression estimators' too; it equals
    scipy.stats' t / normal intervals and two-sided p-values (rtol 1e-12)."""
    from scipy import stats

    from cogstats.estimators import regression
    from cogstats.numerics import wald

    assert regression.wald is wald  # one copy
    rng = np.random.default_rng(2)
    est, se = rng.normal(size=50), rng.uniform(0.05, 0.3, 50)
    for df in (3.0, 40.5, np.inf):
        ref = stats.norm if not np.isfinite(df) else stats.t(df)
        for level in (0.9, 0.95):
            lo, hi, p, z = wald(est, se, df, level)
            q = ref.ppf(0.5 + level / 2)
            np.testing.assert_allclose(lo, est - q * se, rtol=1e-12)
            np.testing.assert_allclose(hi, est + q * se, rtol=1e-12)
            np.testing.assert_allclose(p, 2 * ref.sf(np.abs(est / se)), rtol=1e-10)
            np.testing.assert_allclose(z, est / se, rtol=1e-15)


def test_the_retest_design_options_are_compiled() -> None:
    """fill_empty and retest_window are compiled (issue 18): auto picks the kernel, and
    each option reaches its policy's block."""
    from cogstats.retrieval import kernel as KPOL
    from cogstats.sim.engine import fast_support, params
    from cogstats.sim.spec import Scenario

    base = {"runs": 6, "lessons": {"listed": [{"id": "a", "effect": 0.1}]}}
    assert fast_support(Scenario.from_dict(base)) is None
    s = Scenario.from_dict({**base, "retrieval": {"fill_empty": True, "retest_window": 5}})
    assert fast_support(s) is None
    _ip, _fp, pi, pf, _o = params(s)
    assert pi[KPOL.ORDER_BLOCK.i("fill_empty")] == 1
    assert pi[KPOL.WINDOW] == 5 and pf[KPOL.RETEST_PROB] == 0.5
