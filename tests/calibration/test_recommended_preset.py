"""The recommended preset (the lesson lifecycle gate with its re-test design), by simulation.

Claims (docs/recommended.md, "What it achieves"; measured there at 500-1,000 replicates)
checked here with the compiled engine at fewer replicates, fixed seeds, each tolerance
three Monte Carlo standard errors of the replicates used:

- S2 (``simulations/poison_crater.toml``): the agent's regret is below cycgraph's margin
  rule's on the same seeds (paired; measured -0.0215 ± 0.0008), poisons leave the prompt
  within a median of 4 runs (measured 1), at least 97% are not injected in the last 5
  runs (measured 0.999), lessons of effect >= 0 are convicted in at most 2% of those
  tried (measured 0.04%), genuine lessons are suspended a median of at most 5 runs
  (measured 5);
- the small-prompt variant (three -0.3 poisons after run 1, where the first lifecycle gate
  did worst): regret below the margin rule's (measured -0.040);
- S1 at noise 0.2 (``simulations/cycgraph_oc.toml``, a new ledger, where cycgraph's
  inference rule decides 7.5-9% of null lessons): effect 0 promoted or convicted in at
  most 1% at every budget (measured 0.3-0.6%);
- S4 (``simulations/peeking_null.toml``, 20 null lessons injected at random, a verdict
  after every one of 200 runs) with the gate on the spec's randomized retrieval: at most
  5% promoted or convicted (measured 0.75% ± 0.06).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cogstats.reports.comparison import contender_scenario
from cogstats.sim import load_spec, simulate
from cogstats.sim.metrics import pooled_median_exposure, pooled_median_suspended

ROOT = Path(__file__).resolve().parents[2]


def _pair(path: str, replicates: int) -> tuple[Any, Any]:
    spec = load_spec(ROOT / path)
    out = []
    for name in ("cycgraph_margin", "recommended"):
        scenario = contender_scenario(name, spec.scenario)
        out.append(
            simulate(
                scenario,
                replicates=replicates,
                rng=np.random.SeedSequence(int(spec.seed)),
                keep_runs=False,
                progress=False,
            )
        )
    return out[0], out[1]


def _paired_regret(margin: Any, rec: Any) -> tuple[float, float]:
    d = (
        rec.metrics.sort("replicate")["regret"].to_numpy()
        - margin.metrics.sort("replicate")["regret"].to_numpy()
    )
    return float(d.mean()), float(d.std(ddof=1) / math.sqrt(d.size))


def test_s2_the_agent_does_better_and_every_lifecycle_promise_holds() -> None:
    reps = 300
    margin, rec = _pair("simulations/poison_crater.toml", reps)
    assert rec.engine == "fast"
    mean, se = _paired_regret(margin, rec)
    assert mean + 3 * se < 0.0, (mean, se)
    exposure = pooled_median_exposure(rec.lessons, n_resamples=199, rng=1)
    assert exposure["median"] <= 4, exposure
    m = rec.metrics
    last5 = m["poison_out_last5"].drop_nulls().to_numpy()
    assert last5.mean() >= 0.97 - 3 * last5.std(ddof=1) / math.sqrt(last5.size)
    fc = m["false_conviction_rate"].drop_nulls().to_numpy()
    assert fc.mean() <= 0.02, fc.mean()
    suspended = pooled_median_suspended(rec.lessons, n_resamples=199, rng=1)
    assert suspended["median"] <= 5 + 3 * suspended["mcse"], suspended
    # the margin rule, on the same seeds, convicts many genuine lessons (16% measured)
    assert margin.metrics["false_conviction_rate"].drop_nulls().mean() > 0.1


def test_small_prompt_regret_below_the_margin_rules() -> None:
    margin, rec = _pair("simulations/s2_variants/small_prompt.toml", 200)
    mean, se = _paired_regret(margin, rec)
    assert mean + 3 * se < 0.0, (mean, se)


@pytest.mark.parametrize("budget", [10, 50, 100])
def test_s1_effect_zero_at_noise_two_tenths_decided_at_most_one_percent(budget: int) -> None:
    reps = 1500
    spec = load_spec(ROOT / "simulations/cycgraph_oc.toml")
    scenario = contender_scenario("recommended", spec.scenario).with_values(
        {"runs": budget, "score.noise_sd": 0.2, "lessons.listed[0].effect": 0.0}
    )
    result = simulate(scenario, replicates=reps, rng=20261204 + budget, progress=False)
    les = result.lessons
    reason = les["evict_reason"].fill_null("")
    decided = ((les["outcome"] == "evict") & (reason == "eval-gate:harmful")) | (
        les["promoted_at_run"].fill_null(0) > 0
    )
    rate = float(decided.mean())
    assert rate <= 0.01 + 3 * math.sqrt(0.01 * 0.99 / reps), rate


def test_s4_the_gate_keeps_its_error_under_random_inclusion() -> None:
    reps = 200
    spec = load_spec(ROOT / "simulations/peeking_null.toml")
    scenario = spec.scenario.with_values({"gate.type": "recommended"})
    result = simulate(scenario, replicates=reps, rng=int(spec.seed), progress=False)
    les = result.lessons
    reason = les["evict_reason"].fill_null("")
    wrong = ((les["outcome"] == "evict") & (reason == "eval-gate:harmful")) | (
        les["promoted_at_run"].fill_null(0) > 0
    )
    per_rep = wrong.to_numpy().reshape(reps, -1).mean(axis=1)
    se = per_rep.std(ddof=1) / math.sqrt(reps)
    assert per_rep.mean() <= 0.05 + 3 * se, per_rep.mean()
    assert per_rep.mean() > 0.0  # it does decide sometimes: the check can fail
