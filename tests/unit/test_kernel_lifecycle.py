"""The recommended (lifecycle) gate compiled: the kernel equals the gate and the reference.

Three levels, each of which fails on a wrong copy:

- the scalar t quantile of the kernel (``cogstats.kernel.tdist.t_ppf``) against scipy's
  ``stdtrit``;
- the compiled statistics and rule (``cogstats.gates.recommended.kernel.judge``, ``rule``)
  against
  :meth:`LifecycleGate.decide` and :func:`lifecycle_rule` on random ledgers and random
  inputs: identical outcome and why codes, every statistic within 1e-9 (the NaN pattern
  identical);
- the whole simulation: for S2 (``simulations/poison_crater.toml`` with the v2 gate and
  its re-test design), the helpful-lessons spec, S2 variants (a new ledger and one with 33
  runs of history), a scenario without a difficulty proxy and every candidate-block
  retrieval policy, the compiled engine and the reference engine write the same arrays
  (scores, injections, logged propensities, decision runs) and the same status events,
  ``why`` included.

And the measured figure: S2 at 500 replicates with the v2 gate compiled (goal 30 s).
Replicate counts are small (the reference engine takes about 0.3 s a replicate of S2);
the compiled kernel is cached on disk.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import special

from cogstats import Ledger
from cogstats import _codes as C
from cogstats.gates import rule_options
from cogstats.gates.recommended import LIFECYCLE_WHY, LifecycleGate, lifecycle_rule
from cogstats.gates.recommended import kernel as KLC
from cogstats.kernel.tdist import t_ppf
from cogstats.sim import engine as E
from cogstats.sim import load_spec, simulate
from cogstats.sim.draws import draw_uniforms, layout, prepare, scenario_lessons
from cogstats.sim.reference import run_reference

ROOT = Path(__file__).resolve().parents[2]
#: the re-test design the v2 measurements use (benchmarks/v2_simulated.py)
V2 = {"gate.type": "recommended", "retrieval.retest_window": 5, "retrieval.fill_empty": True}


def _v2(path: str, **extra: Any) -> Any:
    return load_spec(ROOT / path).scenario.with_values({**V2, **extra})


#: the statuses a lesson may have when judged (candidate, admitted, verified, suspended,
#: and one inactive), by index
STATUSES = np.array(
    [C.STATUS_CANDIDATE, C.STATUS_ADMITTED, C.STATUS_VERIFIED, C.STATUS_SUSPENDED, C.STATUS_EVICTED]
)


# ---------------------------------------------------------------- the t quantile
def test_t_ppf_matches_scipy() -> None:
    """The kernel's quantile equals scipy's stdtrit to 1e-11 (relative) where the gate uses it."""
    worst = 0.0
    for df in (1.0, 1.4, 2.0, 3.7, 8.0, 20.5, 57.3, 250.0, 1e4):
        for p in (1e-6, 0.01, 0.2, 0.5, 0.6, 0.8, 0.95, 0.99, 0.999):
            want = float(special.stdtrit(df, p))
            got = t_ppf(p, df)
            worst = max(worst, abs(got - want) / max(1.0, abs(want)))
    assert worst < 1e-11, worst
    assert np.isnan(t_ppf(0.0, 3.0)) and np.isnan(t_ppf(0.5, 0.0))


# ---------------------------------------------------------------- the compiled rule
def _random_ledger(rng: np.random.Generator, proxy: bool) -> Ledger:
    n = int(rng.integers(2, 50))
    k = int(rng.integers(1, 10))
    x = rng.random((n, k)) < rng.uniform(0.2, 0.7)
    if rng.random() < 0.3 and k > 1:
        x[:, 1] = x[:, 0]  # two lessons sharing one pattern: not identifiable
    eff = rng.normal(0.0, 0.08, k)
    eff[0] = -0.25
    d = rng.normal(0.0, 0.1, n)
    y = np.clip(0.55 + d + x @ eff + rng.normal(0.0, 0.05, n), 0.0, 1.0)
    return Ledger.from_records(
        {
            "run_id": f"r{i}",
            "score": float(y[i]),
            "fact_ids": [f"l{j}" for j in range(k) if x[i, j]],
            **({"difficulty_proxy": float(d[i])} if proxy else {}),
        }
        for i in range(n)
    )


def _compiled_equals_gate(gate: LifecycleGate, stats: Any, status: np.ndarray) -> np.ndarray:
    """Run the compiled judge on ``stats``; assert it equals ``gate.decide``; its codes."""
    levels = np.ascontiguousarray(gate.nominal_levels())
    r = stats.ridge
    m = len(r.fact_ids)
    want_out, want_why, ex = gate.decide(stats, status)
    out, why = np.empty(m, np.int64), np.empty(m, np.int64)
    x, ident = np.empty((len(KLC.EVIDENCE_ROWS), m)), np.empty(m, np.bool_)
    KLC.judge(
        rule_options(gate),
        levels,
        np.ascontiguousarray(r.gram),
        np.ascontiguousarray(r.zty),
        float(r.yty),
        int(r.runs),
        int(r.n_fixed),
        np.ascontiguousarray(stats.with_ss),
        status,
        KLC.Judged(out, why, x, ident),
    )
    assert out.tolist() == want_out.tolist()
    assert why.tolist() == want_why.tolist()
    assert ident.tolist() == np.asarray(ex["identifiable"]).tolist()
    for row, name in enumerate(KLC.EVIDENCE_ROWS):
        np.testing.assert_allclose(
            x[row], np.asarray(ex[name], float), rtol=0, atol=1e-9, err_msg=name
        )
    return out


def test_compiled_judge_equals_the_gate_on_random_ledgers() -> None:
    """judge() on a ledger's statistics = LifecycleGate.decide: codes equal, evidence 1e-9."""
    rng = np.random.default_rng(20261202)
    gates = [LifecycleGate(), LifecycleGate(passes=1, margin=1.0, crater_max_trials=3)]
    checked = 0
    decided = set()
    for trial in range(80):
        gate = gates[trial % 2]
        stats = gate.statistics(_random_ledger(rng, proxy=trial % 3 != 0))
        m = len(stats.ridge.fact_ids)
        status = STATUSES[rng.integers(0, 5, m)].astype(np.int64)
        out = _compiled_equals_gate(gate, stats, status)
        checked += m
        decided |= {C.outcome_of_code(int(o))[0] for o in out}
    assert checked > 300
    assert {C.EVICT, C.SUSPEND, C.HOLD} <= decided  # the test sees real decisions


def test_compiled_judge_frees_clearly_helpful_lessons_as_the_gate_does() -> None:
    """Long ledgers with strong helpful lessons: the ridge's second pass frees them
    (``helpful_min_info`` = the gate's ``max_information``) in both, decisions equal."""
    rng = np.random.default_rng(20261204)
    gate = LifecycleGate()
    freed = 0
    for _ in range(6):
        n, k = int(rng.integers(150, 400)), int(rng.integers(6, 14))
        x = rng.random((n, k)) < rng.uniform(0.15, 0.4)
        eff = np.zeros(k)
        eff[:2] = 0.12  # clearly helpful
        eff[2] = -0.2
        d = rng.normal(0.0, 0.1, n)
        y = np.clip(0.5 + d + x @ eff + rng.normal(0.0, 0.05, n), 0.0, 1.0)
        ledger = Ledger.from_records(
            {
                "run_id": f"r{i}",
                "score": float(y[i]),
                "fact_ids": [f"l{j}" for j in range(k) if x[i, j]],
                "difficulty_proxy": float(d[i]),
            }
            for i in range(n)
        )
        stats = gate.statistics(ledger)
        fit = gate.fit(stats)
        freed += int(np.sum(~fit.penalized & (fit.t > 0)))
        m = len(stats.ridge.fact_ids)
        _compiled_equals_gate(gate, stats, np.full(m, C.STATUS_CANDIDATE, dtype=np.int64))
    assert freed > 0  # the helpful branch ran


def test_compiled_rule_equals_lifecycle_rule_on_random_inputs() -> None:
    """rule() = lifecycle_rule on random statistics (NaNs, every status, every branch)."""
    rng = np.random.default_rng(5)
    k = 4000
    gate = LifecycleGate()
    o = rule_options(gate)

    def some_nan(v: np.ndarray, share: float = 0.05) -> np.ndarray:
        return np.where(rng.random(v.shape) < share, np.nan, v)

    t = some_nan(rng.normal(0.0, 3.0, k))
    df = some_nan(rng.uniform(0.5, 40.0, k))
    info = some_nan(rng.uniform(0.0, 12.0, k))
    se = some_nan(rng.uniform(0.005, 0.08, k))
    est = t * se
    sigma = rng.uniform(0.02, 0.1, k)
    trials = rng.integers(0, 12, k)
    ident = rng.random(k) < 0.9
    crater_p = some_nan(rng.uniform(0.0, 0.2, k), 0.3)
    status = STATUSES[rng.integers(0, 5, k)].astype(np.int64)
    level = np.where(rng.random(k) < 0.5, 0.0, rng.uniform(0.0, 0.01, k))
    inputs = {"t": t, "df": df, "info": info, "estimate": est, "se": se, "sigma": sigma,
              "trials": trials, "identifiable": ident, "crater_p": crater_p, "status": status,
              "level": level}  # fmt: skip
    want_out, want_why, ex = lifecycle_rule(inputs, o)
    x = np.full((len(KLC.EVIDENCE_ROWS), k), np.nan)
    rows = {name: i for i, name in enumerate(KLC.EVIDENCE_ROWS)}
    for name, v in (("t", t), ("df", df), ("info", info), ("estimate", est), ("se", se),
                    ("sigma", sigma), ("crater_p", crater_p), ("level", level)):  # fmt: skip
        x[rows[name]] = v
    out = np.empty(k, np.int64)
    why = np.empty(k, np.int64)
    for i in range(k):
        out[i], why[i] = KLC.rule(o, x, i, float(trials[i]), bool(ident[i]), int(status[i]))
    assert out.tolist() == want_out.tolist()
    assert why.tolist() == want_why.tolist()
    assert set(why.tolist()) == set(range(len(LIFECYCLE_WHY)))  # every branch taken
    for name in ("margin_harm", "margin_promote", "margin_bound", "p_promote", "p_evict"):
        np.testing.assert_allclose(x[rows[name]], ex[name], rtol=0, atol=1e-9, err_msg=name)
    for name in ("ci_low", "ci_high"):
        np.testing.assert_allclose(x[rows[name]], ex[name], rtol=0, atol=1e-9, err_msg=name)


# ---------------------------------------------------------------- kernel = reference engine
_POLICY = {"gate.type": "recommended", "retrieval.retest_window": 5}
#: the likely-innocent re-test order (one suspect a run, highest gate t first)
LIKELY = {
    "retrieval.retest_order": "likely_innocent",
    "retrieval.retest_prob": 1.0,
    "retrieval.retest_floor": 2.0,
}
#: name -> (spec, the values set on it, replicates); the cycgraph orderings with the v2
#: re-test design (V2), the other policies with the re-test window only (no fill_empty)
SCENARIOS: dict[str, tuple[str, dict[str, Any], int]] = {
    "S2": ("simulations/poison_crater.toml", V2, 3),
    "helpful_lessons": ("simulations/s2_helpful_lessons.toml", V2, 3),
    "mild_poisons": ("simulations/s2_variants/mild_poisons.toml", V2, 2),
    "with_history": ("simulations/s2_variants/with_history.toml", V2, 2),
    "no_proxy": ("simulations/poison_crater.toml", {**V2, "difficulty.proxy_corr": None}, 2),
    "no_window_no_fill": (
        "simulations/poison_crater.toml",
        {"gate.type": "recommended", "gate.every": 2},
        2,
    ),
    "randomized": ("simulations/poison_crater.toml", {"retrieval.policy": "randomized"}, 2),
    "bernoulli": (
        "simulations/poison_crater.toml",
        {"retrieval.policy": "randomized", "retrieval.inclusion": "bernoulli"},
        2,
    ),
    "designed": ("simulations/poison_crater.toml", {"retrieval.policy": "designed"}, 2),
    "S2_likely_innocent": ("simulations/poison_crater.toml", {**V2, **LIKELY}, 3),
    "helpful_likely_innocent": ("simulations/s2_helpful_lessons.toml", {**V2, **LIKELY}, 3),
    "small_prompt_likely_innocent": (
        "simulations/s2_variants/small_prompt.toml",
        {**V2, **LIKELY},
        3,
    ),
    "randomized_likely_innocent": (
        "simulations/poison_crater.toml",
        {"retrieval.policy": "randomized", **LIKELY},
        2,
    ),
    "ucb1": (
        "simulations/poison_crater.toml",
        {"gate.type": "recommended", "retrieval.policy": "ucb1", "retrieval.epsilon": 0.1},
        2,
    ),
}


def _scenario(name: str) -> Any:
    path, values, _ = SCENARIOS[name]
    base = load_spec(ROOT / path).scenario
    if "retrieval.policy" in values and name != "ucb1":
        base = base.with_values({"retrieval.policy": values["retrieval.policy"]})
        values = {**_POLICY, **values}
    return base.with_values(values)


def _both(s: Any, replicates: int, seed: int) -> tuple[Any, Any]:
    lessons = scenario_lessons(s)
    lay = layout(s)
    u = draw_uniforms(np.random.SeedSequence(seed), 0, replicates, lay)
    prep = prepare(s, lessons, u, lay)
    return E.run_fast(s, lessons, prep), run_reference(s, lessons, prep)


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_kernel_equals_reference_decision_for_decision(name: str) -> None:
    """Same runs, injections, propensities, decisions and status events (why included)."""
    s = _scenario(name)
    reps = SCENARIOS[name][2]
    assert s.gate.type == "recommended"
    assert E.fast_support(s) is None
    fast, ref = _both(s, reps, 20261202)
    assert fast.differences(ref) == []
    ev_fast, ev_ref = fast.status_events(), ref.status_events()
    assert ev_fast == ev_ref  # why included
    if name in ("S2", "helpful_lessons", "mild_poisons", "with_history", "randomized") or (
        "likely" in name
    ):
        assert any(ev[4] == C.STATUS_SUSPENDED for ev in ev_ref), "the scenario suspends"
    if name in ("S2", "helpful_lessons", "randomized"):
        assert fast.n_logged.any(), "re-tests log propensities"


def test_simulate_runs_v2_compiled_with_equal_status_events() -> None:
    """engine='auto' picks the kernel for the v2 gate; the result frames agree."""
    s = _v2("simulations/poison_crater.toml")
    a = simulate(s, replicates=2, rng=3, progress=False)
    b = simulate(s, replicates=2, rng=3, engine="reference", progress=False)
    assert a.engine == "fast" and b.engine == "reference"
    assert a.status_events().equals(b.status_events())
    assert a.metrics.equals(b.metrics)
    assert a.lessons.equals(b.lessons)


def test_an_overflowing_event_buffer_runs_the_chunk_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """With room for one event the chunk is run again with room for all: same events."""
    s = _v2("simulations/poison_crater.toml")
    lessons = scenario_lessons(s)
    lay = layout(s)
    u = draw_uniforms(np.random.SeedSequence(9), 0, 2, lay)
    prep = prepare(s, lessons, u, lay)
    roomy = E.run_fast(s, lessons, prep)
    monkeypatch.setattr(E, "_event_capacity", lambda s, n: 1)
    tight = E.run_fast(s, lessons, prep)
    assert len(roomy.status_events()) > 1
    assert tight.status_events() == roomy.status_events()
    assert tight.differences(roomy) == []


@pytest.mark.slow
def test_s2_at_500_replicates_compiled_within_30_seconds() -> None:
    """Issue 18 build 4: S2 (poison_crater.toml, v2 gate and re-test design) at 500
    replicates, warm, on one process: measured, goal <= 30 s."""
    s = _v2("simulations/poison_crater.toml")
    simulate(s, replicates=2, rng=1, engine="fast", keep_runs=False, progress=False)  # warm
    start = time.perf_counter()
    result = simulate(
        s, replicates=500, rng=20261130, engine="fast", keep_runs=False, progress=False
    )
    seconds = time.perf_counter() - start
    print(f"S2 v2 compiled, 500 replicates: {seconds:.2f} s")
    assert result.metrics.height == 500
    assert seconds <= 30.0, seconds
