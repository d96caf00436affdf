"""The S2 variant specs, the removal-delay metrics and ``compare_gates``.

References: each variant spec is checked against simulations/poison_crater.toml (the
settings its header says it changes differ as stated, every other setting is S2's) and
runs; ``pooled_median_delay`` with one removed poison per replicate equals
``scipy.stats.bootstrap(np.median, method="percentile")`` draw for draw (1e-12), and its
median is numpy's median of the pooled delays; ``false_no_lift_rate`` equals the share
computed directly from the per-lesson outcomes (1e-12); every figure of
``compare_gates`` equals the one a direct ``simulate`` / ``simulate_spec`` call gives
with the spec's seed (exact), so every contender meets the same seeds.  Small replicate
counts: nothing here is a statistical claim about the gates.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy import stats

from cogstats._validation import ParameterError
from cogstats.reports.comparison import (
    RULES,
    GateComparison,
    compare_gates,
    contender_scenario,
    preset_installed,
)
from cogstats.sim import SimulationSpec, load_spec, simulate
from cogstats.sim.cli import simulate_spec
from cogstats.sim.metrics import (
    pooled_median_delay,
    pooled_median_exposure,
    pooled_median_suspended,
    removal_delays,
)

ROOT = Path(__file__).resolve().parents[2]
S2 = ROOT / "simulations" / "poison_crater.toml"
VARIANTS = ROOT / "simulations" / "s2_variants"

#: variant -> the settings that differ from S2 (dotted paths of Scenario.to_dict())
CHANGES = {
    "single_poison": {"lessons.poison": [{"after_run": 3, "count": 1, "effect": -0.2}]},
    "mild_poisons": {"lessons.poison": [{"after_run": 3, "count": 5, "effect": -0.12}]},
    "noisy_runs": {
        "runs": 40,
        "difficulty.sd": 0.15,
        "difficulty.proxy_corr": 0.7,
        "score.noise_sd": 0.08,
    },
    "two_waves": {
        "lessons.poison": [
            {"after_run": 5, "count": 2, "effect": -0.2},
            {"after_run": 15, "count": 2, "effect": -0.2},
        ]
    },
    "small_prompt": {
        "retrieval.max_facts": 8,
        "retrieval.candidate_slots": 4,
        "lessons.poison": [{"after_run": 1, "count": 3, "effect": -0.3}],
    },
    # not one of issue 9's five: a ledger with 33 runs of history when the poison comes
    "with_history": {
        "runs": 60,
        "lessons.poison": [{"after_run": 33, "count": 3, "effect": -0.2}],
    },
}


def _flat(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flat(v, key + "."))
        else:
            out[key] = v
    return out


def _lessons(delays: list[list[int]]) -> pl.DataFrame:
    """Per-lesson outcomes: one list of removal delays per replicate (arrival run 4)."""
    rows = []
    for rep, ds in enumerate(delays):
        for j, d in enumerate(ds):
            rows.append((rep, f"P{j}", "poison", 4, 4 + d - 1, None))
        rows.append((rep, "G", "genuine", 2, None, None))  # every replicate has a row
    return pl.DataFrame(
        rows,
        schema=[
            "replicate",
            "fact_id",
            "kind",
            "arrives_at_run",
            "evicted_at_run",
            "retired_at_run",
        ],
        orient="row",
    )


# ---------------------------------------------------------------- the variant specs
@pytest.mark.parametrize("name", sorted(CHANGES))
def test_variant_differs_from_s2_only_as_stated(name: str) -> None:
    path = VARIANTS / f"{name}.toml"
    lines = path.read_text(encoding="utf-8").splitlines()
    header = " ".join(line for line in lines[:4] if line.startswith("#"))
    assert header.startswith("# S2 variant") and "simulations/poison_crater.toml" in header
    base, spec = load_spec(S2), load_spec(path)
    assert spec.seed == base.seed and spec.replicates == base.replicates
    a = _flat(base.scenario.to_dict())
    b = _flat(spec.scenario.to_dict())
    changed = {k for k in a.keys() | b.keys() if a.get(k) != b.get(k)}
    assert changed == {"name", "description", *CHANGES[name]}
    for key, value in CHANGES[name].items():
        assert b[key] == value


def test_the_helpful_lessons_variant_differs_from_s2_only_in_its_genuine_effects() -> None:
    # issue 18: helpful lost is measured on S2 with genuine effects U(-0.03, 0.08); the
    # comparison runs it after the variants folder by default
    from cogstats.reports.comparison import _SPECS

    path = ROOT / _SPECS["helpful"]
    base, spec = load_spec(S2), load_spec(path)
    assert spec.seed == base.seed and spec.replicates == base.replicates
    a = _flat(base.scenario.to_dict())
    b = _flat(spec.scenario.to_dict())
    changed = {k for k in a.keys() | b.keys() if a.get(k) != b.get(k)}
    assert changed == {"name", "description", "lessons.streams"}
    (mine,), (theirs,) = b["lessons.streams"], a["lessons.streams"]
    assert mine["effect"] == {"dist": "uniform", "low": -0.03, "high": 0.08}
    assert {**mine, "effect": None} == {**theirs, "effect": None}
    result = simulate(spec.scenario, replicates=20, rng=1, keep_runs=False)
    assert result.metrics["helpful_lost_rate"].is_not_nan().all()  # helpful lessons exist


def test_every_variant_runs() -> None:
    specs = sorted(VARIANTS.glob("*.toml"))
    assert [p.stem for p in specs] == sorted(CHANGES)
    for path in specs:
        result = simulate(load_spec(path).scenario, replicates=3, rng=1, keep_runs=False)
        assert result.engine == "fast" and result.metrics.height == 3
        assert result.lessons.filter(pl.col("kind") == "poison").height > 0


# ---------------------------------------------------------------- metrics
def test_median_delay_one_poison_per_replicate_is_scipys_bootstrap() -> None:
    rng = np.random.default_rng(3)
    d = rng.integers(1, 12, size=150)
    out = pooled_median_delay(_lessons([[int(x)] for x in d]), n_resamples=999, rng=5)
    ref = stats.bootstrap(
        (d.astype(float),),
        np.median,
        n_resamples=999,
        method="percentile",
        rng=np.random.default_rng(5),
        vectorized=True,
    )
    assert out["median"] == np.median(d) and out["n"] == 150 and out["replicates"] == 150
    assert out["mcse"] == pytest.approx(ref.standard_error, abs=1e-12)
    assert out["low"] == pytest.approx(ref.confidence_interval.low, abs=1e-12)
    assert out["high"] == pytest.approx(ref.confidence_interval.high, abs=1e-12)


def test_median_delay_pools_replicates_and_resamples_those_without_removal() -> None:
    delays = [[2, 3, 9], [], [4], [], [2, 2], [7, 8]]
    les = _lessons(delays)
    pooled = [x for ds in delays for x in ds]
    assert sorted(removal_delays(les)["delay"].to_list()) == sorted(pooled)
    out = pooled_median_delay(les, n_resamples=499, rng=2)
    assert out["median"] == np.median(pooled) and out["n"] == len(pooled)
    assert out["replicates"] == 6 and out["mcse"] > 0
    assert out["low"] <= out["median"] <= out["high"]
    none = pooled_median_delay(_lessons([[], []]))
    assert none["n"] == 0 and math.isnan(none["median"]) and math.isnan(none["mcse"])


def test_false_no_lift_rate_counts_genuine_no_lift_evictions() -> None:
    spec = load_spec(S2)
    # the inference rule with a small trial cap evicts undecided lessons as no_lift
    scenario = spec.scenario.with_values({"gate.decision_rule": "inference", "gate.max_trials": 2})
    result = simulate(scenario, replicates=40, rng=7, keep_runs=False)
    les = result.lessons.filter((pl.col("kind") != "poison") & (pl.col("trials") > 0))
    direct = (
        les.group_by("replicate")
        .agg(
            (pl.col("evict_reason") == "eval-gate:no_lift").fill_null(False).mean().alias("direct")
        )
        .join(result.metrics.select("replicate", "false_no_lift_rate"), on="replicate")
    )
    assert direct["direct"].sum() > 0
    np.testing.assert_allclose(direct["false_no_lift_rate"], direct["direct"], atol=1e-12)


# ---------------------------------------------------------------- compare_gates
@pytest.fixture(scope="module")
def comparison() -> GateComparison:
    return compare_gates(
        [*RULES, "absent_preset"],
        replicates=6,
        variant_specs=[VARIANTS / "single_poison.toml", VARIANTS / "two_waves.toml"],
        n_resamples=99,
    )


def test_missing_preset_is_a_note(comparison: GateComparison) -> None:
    assert comparison.contenders == RULES
    assert comparison.notes == ("absent_preset preset not installed",)


def test_recommended_is_looked_up_by_name() -> None:
    out = compare_gates(
        ["cycgraph_margin", "recommended"],
        replicates=2,
        s1_spec=_tiny_s1(),
        variant_specs=[],
        n_resamples=9,
    )
    if preset_installed("recommended"):  # once the preset lands: it runs, no change here
        assert out.contenders == ("cycgraph_margin", "recommended")
    else:
        assert out.contenders == ("cycgraph_margin",)
        assert "recommended preset not installed" in out.notes


def _tiny_s1() -> SimulationSpec:
    spec = load_spec(ROOT / "simulations" / "cycgraph_oc.toml")
    return dataclasses.replace(spec, grid={"lessons.listed[0].effect": (0.3,), "runs": (10,)})


def test_figures_are_the_simulators_on_the_specs_seed(comparison: GateComparison) -> None:
    s2 = load_spec(S2)
    seed = np.random.SeedSequence(s2.seed).spawn(1)[0]
    for rule in RULES:
        direct = simulate(
            contender_scenario(rule, s2.scenario), replicates=6, rng=seed, keep_runs=False
        )
        ours = comparison.s2.filter((pl.col("benchmark") == "S2") & (pl.col("rule") == rule))
        by_metric = dict(zip(ours["metric"], ours["value"], strict=True))
        for metric in (
            "poison_recall",
            "false_eviction_rate",
            "false_no_lift_rate",
            "regret",
            "poison_exposure",
            "poison_out_last5",
            "false_conviction_rate",
        ):
            assert by_metric[metric] == pytest.approx(
                float(np.nanmean(direct.metrics[metric].to_numpy())), abs=1e-12
            )
        pooled = removal_delays(direct.lessons)["delay"].to_numpy()
        assert by_metric["median_removal_delay"] == np.median(pooled)
        # poison exposure pooled over every poison; nothing suspended under cycgraph's rules
        poisons = direct.lessons.filter(pl.col("kind") == "poison")
        exposure = (poisons["last_injected_run"] - poisons["arrives_at_run"] + 1).fill_null(0)
        assert by_metric["median_poison_exposure"] == np.median(exposure.to_numpy())
        assert pooled_median_exposure(direct.lessons, n_resamples=9)["n"] == poisons.height
        assert math.isnan(by_metric["median_suspended_runs"])
        assert pooled_median_suspended(direct.lessons, n_resamples=9)["n"] == 0
        # S2's genuine effects are all below 0.05: helpful lost is undefined there
        assert math.isnan(by_metric["helpful_lost_rate"])
        # regret paired with the margin rule on the same seeds
        if rule == "cycgraph_margin":
            margin_regret = direct.metrics.sort("replicate")["regret"].to_numpy()
            assert by_metric["regret_vs_margin"] == 0.0
        else:
            d = direct.metrics.sort("replicate")["regret"].to_numpy() - margin_regret
            assert by_metric["regret_vs_margin"] == pytest.approx(d.mean(), abs=1e-12)
            row = ours.filter(pl.col("metric") == "regret_vs_margin").row(0, named=True)
            assert row["mcse"] == pytest.approx(d.std(ddof=1) / math.sqrt(d.size), rel=1e-12)
    s1 = load_spec(ROOT / "simulations" / "cycgraph_oc.toml")
    cells = simulate_spec(s1, replicates=6, progress=False)
    ours = comparison.s1.filter(pl.col("rule") == "cycgraph_inference")
    joined = ours.join(
        cells.select(pl.col("lessons.listed[0].effect").alias("effect"), "runs", "promote_rate"),
        on=["effect", "runs"],
    )
    assert joined.height == 36
    np.testing.assert_array_equal(joined["promote_rate"], joined["promote_rate_right"])


def test_frames_and_goals(comparison: GateComparison) -> None:
    assert comparison.s1.height == 36 * 2
    assert set(comparison.s2["scenario"]) == {"poison-crater", "s2-single-poison", "s2-two-waves"}
    # scenarios x rules x figures (helpful lost and suspended runs are NaN figures here)
    assert comparison.s2.height == 3 * 2 * 13
    assert comparison.s4["metric"].to_list() == ["false_decision_rate", "any_decision_rate"] * 2
    goals = comparison.goals
    assert set(goals["benchmark"]) == {"S1", "S2", "S2 variant", "S4"}
    at_least = goals.filter(pl.col("direction") == "at least")
    at_most = goals.filter(pl.col("direction") == "at most")
    assert (at_least["met"] == (at_least["value"] >= at_least["target"] - 1e-12)).all()
    assert (at_most["met"] == (at_most["value"] <= at_most["target"] + 1e-12)).all()
    missed = goals.filter(~pl.col("met") & pl.col("value").is_not_nan())
    gap = (missed["value"] - missed["target"]).abs()
    np.testing.assert_allclose(missed["missed_by"], gap, atol=1e-12)
    assert (goals.filter(pl.col("met"))["missed_by"] == 0).all()
    # the regret goal: the paired difference from the margin rule, its upper 95% bound
    regret = goals.filter(pl.col("goal").str.starts_with("regret"))
    assert set(regret["metric"]) == {"regret_vs_margin"} and (regret["target"] == 0.005).all()
    assert regret.height == 3 * 2  # S2 and both variants, both rules
    high = comparison.s2.filter(pl.col("metric") == "regret_vs_margin")
    assert sorted(regret["value"].to_list()) == sorted(high["high"].to_list())
    assert regret.filter(pl.col("rule") == "cycgraph_margin")["met"].all()  # 0 vs itself
    # false conviction replaces false eviction as a goal; lifecycle goals where defined
    assert "false_eviction_rate" not in set(goals["metric"])
    assert {"false_conviction_rate", "median_poison_exposure", "poison_out_last5"} <= set(
        goals["metric"]
    )
    assert not {"helpful_lost_rate", "median_suspended_runs"} & set(goals["metric"])
    table = comparison.table("S2 variant")
    assert table.columns == [
        "scenario",
        "figure",
        "cycgraph margin rule",
        "cycgraph inference rule",
    ]
    assert " ± " in table["cycgraph margin rule"][0]
    counts = comparison.goal_counts()
    assert (counts["met"] + counts["missed"] == counts["goals"]).all()


def test_contenders_are_checked() -> None:
    with pytest.raises(ParameterError, match="contenders must be a non-empty list"):
        compare_gates("cycgraph_margin")
    with pytest.raises(ParameterError, match="none of the contenders"):
        compare_gates(["absent_preset"])
    with pytest.raises(ParameterError, match="replicates must be >= 2"):
        compare_gates(replicates=1)


def test_a_registered_preset_replaces_retrieval_and_gate_keeping_the_caps() -> None:
    from cogstats.presets import PRESETS, Preset, register_preset

    name = "test_comparison_preset"
    assert not preset_installed(name)
    register_preset(Preset(name, "in_progress_first", "cycgraph", "a preset, for this test"))
    try:
        assert preset_installed(name)
        s2 = load_spec(VARIANTS / "small_prompt.toml").scenario
        ours = contender_scenario(name, s2)
        assert ours.preset == name
        assert ours.gate.type == "cycgraph" and ours.retrieval.policy == "in_progress_first"
        # the preset's parts start from their defaults; the caps and the cadence are kept
        assert ours.gate.policy["decision_rule"] == "inference"
        assert (ours.retrieval.max_facts, ours.retrieval.candidate_slots) == (8, 4)
        assert ours.retrieval.rest_after_trials is None
        assert ours.gate.every == s2.gate.every and ours.gate.from_run == s2.gate.from_run
        assert (ours.poison, ours.streams, ours.score) == (s2.poison, s2.streams, s2.score)
        mine = contender_scenario("recommended", s2)
        assert (mine.gate.type, mine.retrieval.policy) == ("recommended", "in_progress_first")
        assert mine.retrieval.retest_order == "likely_innocent" and mine.retrieval.fill_empty
    finally:
        del PRESETS[name]
    with pytest.raises(ParameterError, match="no preset of that name"):
        contender_scenario(name, s2)
