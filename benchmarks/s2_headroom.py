"""What the first recommended preset would need to meet the goals it misses (issue 9).

(The preset ``recommended_v1``, kept for comparison: the recommended preset is the lesson
lifecycle gate now, measured by ``benchmarks/v2_simulated.py``.)

The preset assumes nothing about the score noise: a young ledger's t reference carries
few degrees of freedom, which is what keeps it from deciding in the first runs of S1 and
S2.  This benchmark measures, on the same seeds as ``gate_comparison`` (each spec's own),
the preset as shipped beside the changes that would close the gaps:

- ``noise_prior``: a noise level known from earlier ledgers, ``noise_prior_sd`` = 0.1
  worth 50 runs (a round figure a team could read off its history; not the scenarios'
  own residual sd, which is 0.1 in S1 and about 0.08 in S2 once the proxy is used);
- ``full_prompt``: S2 with ``candidate_slots = max_facts`` (12), which is what the
  regret goal needs (with 6 candidate slots and no lesson shown helpful, half the prompt
  stays empty);
- the S2 runtime: 500 replicates on one process (goal: 30 s).

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
PRIOR = {"noise_prior_sd": 0.1, "noise_prior_runs": 50.0}


def _s2_figures(path: str, replicates: int, gate: dict[str, Any], full: bool) -> dict[str, Any]:
    from cogstats.sim import Scenario, load_spec, simulate, summarize_metrics
    from cogstats.sim.metrics import pooled_median_delay

    spec = load_spec(ROOT / path, preset="recommended_v1")
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

    spec = load_spec(ROOT / "simulations/cycgraph_oc.toml", preset="recommended_v1")
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
    """Measure the preset as shipped beside the changes that would close its gaps."""
    reps = 200 if quick else 2000
    from cogstats.sim import load_spec, simulate

    spec = load_spec(ROOT / SPECS["S2"], preset="recommended_v1")
    simulate(spec.scenario, replicates=2, rng=1, keep_runs=False)  # load the kernel
    t = time.perf_counter()
    simulate(spec.scenario, replicates=500, rng=1, keep_runs=False, progress=False)
    s2_seconds = time.perf_counter() - t
    variants: dict[str, Any] = {}
    for name, path in SPECS.items():
        variants[name] = {
            "shipped": _s2_figures(path, reps, {}, False),
            "noise_prior": _s2_figures(path, reps, PRIOR, False),
        }
    variants["S2"]["full_prompt"] = _s2_figures(SPECS["S2"], reps, {}, True)
    return {
        "benchmark": "S2 headroom (issue 9: what the recommended preset would need)",
        "replicates": reps,
        "noise_prior": PRIOR,
        "s2_500_replicates_s": s2_seconds,
        "s2_target_s": 30.0,
        "scenarios": variants,
        "s1_early_cells": {
            "shipped": _s1_cells(reps, {}),
            "noise_prior": _s1_cells(reps, PRIOR),
        },
        "machine": machine(),
    }


if __name__ == "__main__":
    cli(run, __doc__)
