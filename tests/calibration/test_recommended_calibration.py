"""The recommended preset's error control and power, by simulation (fixed seeds).

Claims (docs/recommended.md) and their checks, each with a tolerance of three Monte
Carlo standard errors (binomial, from the replicates):

- a lesson of effect 0, judged after every one of 100 runs (S1's setting), is promoted or
  evicted as harmful in at most ``2 * alpha`` = 0.8% of replicates (both sides);
- at |effect| = 0.1 it reaches the correct verdict by run 100 in at least 95% (S1's goal);
- 20 null lessons co-injected at random and judged after each of 200 runs (S4) are
  decided falsely in at most 5% (S4's goal, alpha = 0.05);
- in the poison crater (S2) genuine lessons are evicted as harmful in at most 2% of
  those tried, and in S2 with 33 runs of history the poisons are removed (recall at least
  0.97).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from cogstats.sim import load_spec, simulate

ROOT = Path(__file__).resolve().parents[2]


def _tol(p: float, n: int) -> float:
    return 3.0 * math.sqrt(max(p * (1 - p), 1e-4) / n)


def _s1(effect: float, replicates: int) -> dict:
    spec = load_spec(ROOT / "simulations" / "cycgraph_oc.toml", preset="recommended_v1")
    s = spec.scenario.with_values({"lessons.listed[0].effect": effect, "runs": 100})
    result = simulate(s, replicates=replicates, rng=20261201, keep_runs=False)
    assert result.engine == "fast"
    return result.outcome_rates(by=()).row(0, named=True)


@pytest.mark.slow
def test_effect_zero_is_rarely_decided_looking_after_every_run() -> None:
    n = 8000
    row = _s1(0.0, n)
    alpha = load_spec(ROOT / "simulations" / "cycgraph_oc.toml", preset="recommended_v1")
    two_sided = 2 * alpha.scenario.gate.policy["alpha"]
    false = row["promote_rate"] + row["evict_harmful_rate"]
    assert false <= two_sided + _tol(two_sided, n), false


@pytest.mark.slow
def test_power_at_a_tenth() -> None:
    n = 4000
    up, down = _s1(0.1, n)["promote_rate"], _s1(-0.1, n)["evict_harmful_rate"]
    assert up >= 0.95 - _tol(0.95, n) and down >= 0.95 - _tol(0.95, n), (up, down)


@pytest.mark.slow
def test_s4_false_decisions_at_most_alpha() -> None:
    spec = load_spec(ROOT / "simulations" / "peeking_null.toml", preset="recommended_v1")
    result = simulate(spec.scenario, replicates=400, rng=3, keep_runs=False)
    lessons = result.lessons
    false = (
        lessons["promoted_at_run"].is_not_null()
        | (
            lessons["evicted_at_run"].is_not_null()
            & (lessons["evict_reason"] == "eval-gate:harmful")
        )
    ).mean()
    n = lessons.height
    assert false <= 0.05 + _tol(0.05, n), false


@pytest.mark.slow
def test_s2_false_eviction_and_recall_with_history() -> None:
    spec = load_spec(ROOT / "simulations" / "poison_crater.toml", preset="recommended_v1")
    seed = np.random.SeedSequence(spec.seed).spawn(1)[0]
    s2 = simulate(spec.scenario, replicates=500, rng=seed, keep_runs=False)
    genuine = s2.lessons.filter((pl.col("kind") != "poison") & (pl.col("trials") > 0))
    fe = (genuine["evict_reason"] == "eval-gate:harmful").fill_null(False).mean()
    assert fe <= 0.02 + _tol(0.02, genuine.height), fe
    history = load_spec(ROOT / "simulations" / "s2_variants" / "with_history.toml")
    warm = simulate(
        history.scenario.with_preset("recommended_v1"), replicates=300, rng=4, keep_runs=False
    )
    recall = float(np.nanmean(warm.metrics["poison_recall"].to_numpy()))
    assert recall >= 0.97, recall
