"""The compiled engine and the reference engine agree in a non-additive store, bit for bit.

Both engines consume the same pre-drawn numbers and score a prompt with the same score
model (:func:`cogstats.sim._kernel_score.prompt_total`, the oracle's
:func:`~cogstats.sim._kernel_score.oracle_prompt_total`).  One case per key of
docs/scenarios.md (a listed paraphrase group, paraphrases of a stream, interactions,
effects by family on listed lessons and streams, changes of effect) and their mix with
saturation, damping and the logistic link; and every committed spec of
``simulations/real_stores/`` as ``benchmarks/real_stores.py`` runs it: under cycgraph's
margin rule and the recommended preset, every output array equal (scores, oracle,
injections, propensities, decisions and status events), and ``simulate`` gives the same
frames through either engine.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cogstats.reports.comparison import contender_scenario
from cogstats.sim import Scenario, load_spec, simulate
from cogstats.sim._kernel_score import injected_total, link_score, oracle_total
from cogstats.sim.draws import draw_uniforms, layout, prepare, scenario_lessons
from cogstats.sim.engine import fast_support, run_fast
from cogstats.sim.reference import run_reference

ROOT = Path(__file__).resolve().parents[2]
REAL_STORES = ["ceiling", "conflicts", "drift", "families", "mix", "paraphrases"]
CONTENDERS = ["cycgraph_margin", "recommended"]

FAMILIES = [{"name": "code"}, {"name": "web", "weight": 2.0}]
STREAM: dict[str, Any] = {
    "per_run": 2,
    "from_run": 1,
    "to_run": 8,
    "effect": {"dist": "uniform", "low": -0.03, "high": 0.1},
}
BASE: dict[str, Any] = {
    "runs": 22,
    "lessons": {
        "ids": "shuffled",
        "listed": [
            {"id": "a1", "effect": 0.12},
            {"id": "b2", "effect": 0.08},
            {"id": "c3", "effect": 0.06, "arrives_at_run": 3},
            {"id": "d4", "effect": 0.05, "arrives_at_run": 3},
        ],
        "streams": [STREAM],
        "poison": [{"after_run": 3, "count": 2, "effect": -0.2}],
    },
    "difficulty": {"model": "iid", "sd": 0.08, "proxy_corr": 0.8, "families": FAMILIES},
    "score": {"base": 0.55, "noise_sd": 0.05},
    "retrieval": {"max_facts": 6, "candidate_slots": 3, "rest_after_trials": 2},
    "gate": {"type": "cycgraph", "decision_rule": "margin", "min_trials": 2},
}


def _case(
    listed: dict[int, dict[str, Any]] | None = None,
    stream: dict[str, Any] | None = None,
    **top: Any,
) -> dict[str, Any]:
    data = {**BASE, **top}
    lessons = dict(BASE["lessons"])
    lessons["listed"] = [
        {**x, **(listed or {}).get(k, {})} for k, x in enumerate(lessons["listed"])
    ]
    lessons["streams"] = [{**STREAM, **(stream or {})}]
    data["lessons"] = lessons
    return data


CASES = {
    "listed_group": _case({0: {"group": "g"}, 1: {"group": "g"}}),
    "paraphrase_stream": _case(stream={"paraphrase_prob": 0.5}),
    "interactions": _case(
        interactions=[
            {"lessons": ["a1", "b2"], "effect": -0.15},
            {"lessons": ["c3", "d4"], "effect": 0.05},
        ]
    ),
    "family_listed": _case({0: {"effect_by_family": {"web": -0.12}}}),
    "family_stream": _case(
        stream={"effect_by_family": {"web": {"dist": "uniform", "low": -0.14, "high": -0.06}}}
    ),
    "changes": _case(
        {1: {"changes": [{"after_runs": 6, "effect": -0.15}, {"after_runs": 12, "effect": 0.02}]}}
    ),
    "mix_saturation_damping_logistic": _case(
        {
            0: {"group": "g"},
            1: {"group": "g", "changes": [{"after_runs": 8, "effect": -0.1}]},
            2: {"effect_by_family": {"code": 0.1}},
        },
        stream={"paraphrase_prob": 0.3, "effect_by_family": {"web": -0.05}},
        interactions=[{"lessons": ["c3", "d4"], "effect": -0.2}],
        score={
            "base": 0.6,
            "noise_sd": 0.3,
            "link": "logistic",
            "saturation": 0.2,
            "poison_damping": 0.5,
        },
    ),
}


def _agree(s: Scenario, seed: int, n: int) -> Any:
    """Run ``n`` replicates through both engines; assert every array equal; the raw."""
    assert fast_support(s) is None
    lessons = scenario_lessons(s)
    lay = layout(s)
    prep = prepare(s, lessons, draw_uniforms(np.random.SeedSequence(seed), 0, n, lay), lay)
    fast = run_fast(s, lessons, prep)
    ref = run_reference(s, lessons, prep)
    assert fast.differences(ref) == []
    assert fast.status_events()  # the gate decided something: not a vacuous comparison
    assert (fast.oracle >= fast.score - 1e-12).all()
    if not s.additive:  # the store matters: valued as additive, some score would differ
        score, oracle = _additive_scores(s, lessons, prep, fast)
        assert (score != fast.score).any() or (oracle != fast.oracle).any()
    return fast


def _additive_scores(s: Scenario, lessons: Any, prep: Any, raw: Any) -> tuple[Any, Any]:
    """Return the scores and oracle scores of the runs' prompts if effects added up."""
    n, runs = raw.score.shape
    sc = s.score
    logistic = sc.link == "logistic"
    logit = float(np.log(sc.base / (1 - sc.base))) if logistic else 0.0
    sat = sc.saturation or 0.0
    score, oracle, scratch = np.zeros((n, runs)), np.zeros((n, runs)), np.empty(len(lessons.ids))
    for rep in range(n):
        e = np.ascontiguousarray(prep.effects[rep])
        for r in range(runs):
            inj = np.ascontiguousarray(raw.inj[rep, r, : raw.ninj[rep, r]])
            z, d = sc.noise_sd * prep.noise[rep, r], prep.difficulty[rep, r]
            tot = injected_total(e, lessons.kind, inj, inj.size, sc.poison_damping, sat)
            best = oracle_total(e, lessons.arrival, r + 1, s.retrieval.max_facts, sat, scratch)
            score[rep, r] = link_score(sc.base, logit, logistic, d, tot, z)
            oracle[rep, r] = link_score(sc.base, logit, logistic, d, best, z)
    return score, oracle


@pytest.mark.parametrize("preset", [None, "recommended"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_engines_agree_in_a_world(name: str, preset: str | None) -> None:
    data = dict(CASES[name])
    if preset is not None:
        data["policy"] = {"preset": preset}
    s = Scenario.from_dict(data)
    assert not s.additive
    _agree(s, 20300130, 5)


@pytest.mark.parametrize("contender", CONTENDERS)
@pytest.mark.parametrize("name", REAL_STORES)
def test_engines_agree_on_the_committed_real_stores(name: str, contender: str) -> None:
    spec = load_spec(ROOT / "simulations" / "real_stores" / f"{name}.toml")
    s = contender_scenario(contender, spec.scenario)
    assert s.additive == (name == "ceiling")
    _agree(s, int(spec.seed), 3)


def test_simulate_runs_a_world_compiled_with_the_reference_frames() -> None:
    s = Scenario.from_dict(CASES["mix_saturation_damping_logistic"])
    auto = simulate(s, replicates=4, rng=11)
    assert auto.engine == "fast" and auto.extras["engine_reason"] is None
    ref = simulate(s, replicates=4, rng=11, engine="reference")
    for name in ("runs", "metrics"):
        assert getattr(auto, name).equals(getattr(ref, name)), name
    # the lessons frame: the same outcomes (the compiled engine records no ``why``)
    cols = [c for c in ref.lessons.columns if "why" not in c]
    assert auto.lessons.select(cols).equals(ref.lessons.select(cols))
