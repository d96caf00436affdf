"""S2 with the recommended preset: its runtime and how much a full prompt would change.

Measured on the same seeds as ``gate_comparison`` (each spec's own): the preset as shipped
on S2 and every committed S2 variant, S2 with ``candidate_slots = max_facts`` (12:
``full_prompt``), the S1 cells at runs 10 and 25, and the S2 runtime: 500 replicates on
one process, the kernel loaded beforehand (goal: 30 s).

The first recommended preset's study of the same questions (its noise prior) is
docs/recommended.md's history.

Run: ``.venv/bin/python -m benchmarks.s2_headroom [--quick] [--json PATH]``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._common import cli, machine

ROOT = Path(__file__).resolve().parents[1]
SPECS = {
    "S2": "simulations/poison_crater.toml",
    **{
        f"S2 {p.stem}": f"simulations/s2_variants/{p.name}"
        for p in sorted((ROOT / "simulations" / "s2_variants").glob("*.toml"))
    },
}


def _s2_figures(path: str, replicates: int, gate: dict[str, Any], full: bool) -> dict[str, Any]:
    from cogstats.sim import Scenario, load_spec, simulate, summarize_metrics
    from cogstats.sim.metrics import pooled_median_delay

    spec = load_spec(ROOT / path, preset="recommended")
    data = spec.scenario.to_dict()
    data["policy"]["gate"].update(gate)
    if full:
        data["retrieval"]["candidate_slots"] = data["retrieval"]["max_facts"]
    scenario = Scenario.from_dict(data)
    seed = np.random.SeedSequence(spec.seed).spawn(1)[0]
    result = simulate(scenario, replicates=replicates, rng=seed, keep_runs=False, progress=False)
    means = {r["metric"]: r for r in summarize_metrics(result.metrics).iter_rows(named=True)}
    median = pooled_median_delay(result.lessons, n_resamples=199, rng=spec.seed)
    out = {
        m: {"value": means[m]["mean"], "mcse": means[m]["mcse"]}
        for m in ("poison_recall", "false_eviction_rate", "false_no_lift_rate", "regret")
    }
    out["median_removal_delay"] = {"value": median["median"], "mcse": median["mcse"]}
    return out


def _s1_cells(replicates: int, gate: dict[str, Any]) -> list[dict[str, Any]]:
    import dataclasses

    from cogstats.reports.reference import verdict_rates
    from cogstats.sim import Scenario, load_spec
    from cogstats.sim.cli import simulate_spec

    spec = load_spec(ROOT / "simulations/cycgraph_oc.toml", preset="recommended")
    data = spec.scenario.to_dict()
    data["policy"]["gate"].update(gate)
    ours = dataclasses.replace(spec, scenario=Scenario.from_dict(data))
    cells = verdict_rates(simulate_spec(ours, replicates=replicates, progress=False))
    keep = cells.filter(cells["runs"].is_in([10, 25]) & (cells["lessons.listed[0].effect"] != 0))
    return [
        {
            "effect": r["lessons.listed[0].effect"],
            "runs": r["runs"],
            "correct_verdict_rate": r["correct_verdict_rate"],
            "mcse": r["correct_verdict_rate_mcse"],
        }
        for r in keep.iter_rows(named=True)
    ]


def run(quick: bool = False) -> dict[str, Any]:
    """Measure the preset as shipped, its S2 runtime and the full-prompt variant."""
    reps = 200 if quick else 2000
    from cogstats.sim import load_spec, simulate

    spec = load_spec(ROOT / SPECS["S2"], preset="recommended")
    simulate(spec.scenario, replicates=2, rng=1, keep_runs=False)  # load the kernel
    t = time.perf_counter()
    simulate(spec.scenario, replicates=500, rng=1, keep_runs=False, progress=False)
    s2_seconds = time.perf_counter() - t
    variants: dict[str, Any] = {
        name: {"shipped": _s2_figures(path, reps, {}, False)} for name, path in SPECS.items()
    }
    variants["S2"]["full_prompt"] = _s2_figures(SPECS["S2"], reps, {}, True)
    return {
        "benchmark": "S2 with the recommended preset: runtime and the full-prompt variant",
        "replicates": reps,
        "s2_500_replicates_s": s2_seconds,
        "s2_target_s": 30.0,
        "scenarios": variants,
        "s1_early_cells": {"shipped": _s1_cells(reps, {})},
        "machine": machine(),
    }


if __name__ == "__main__":
    cli(run, __doc__)
