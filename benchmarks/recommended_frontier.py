"""The recommended gate's tier-2 spending shape against S1 and S2: the trade-off it sits on.

Tier 2's boundary (the lifecycle gate's error spent over each lesson's information)
serves every lesson, and the benchmarks pull it two ways: S1 asks for power
at |e| = 0.05 by run 100 with at most 1% false decisions at effect 0 over the whole life
of a lesson (error kept for the late looks), S2 asks for a poison's removal within 8 runs
of its arrival (error spent early).  This script sweeps the Hwang-Shih-DeCani shape
``gamma`` and the per-side ``alpha`` of the preset's gate, everything else as shipped
(tier 1, the suspensions and the re-test design included),
and records for each:

- S1 (``simulations/cycgraph_oc.toml``, one lesson): the share of effect-0 replicates
  decided by run 100, the correct-verdict rates at +/-0.05 and +/-0.1 by run 100, at
  +/-0.2 by run 25 and at +/-0.3 by run 10;
- S2 (``simulations/poison_crater.toml``) and S2 with history
  (``simulations/s2_variants/with_history.toml``): poison recall, the pooled median
  removal delay, the false-eviction rate.

Run: ``.venv/bin/python -m benchmarks.recommended_frontier [--quick] [--json PATH]``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._common import cli, machine

ROOT = Path(__file__).resolve().parents[1]
SHAPES = [(-4.0, 0.0025), (-3.0, 0.0025), (-2.0, 0.0025), (-1.0, 0.0025), (0.0, 0.0025)]
S1_CELLS = [(0.0, 100), (0.05, 100), (-0.05, 100), (0.1, 100), (-0.2, 25), (0.2, 25), (0.3, 10)]


def _scenario(path: str, gate: dict[str, Any]) -> Any:
    from cogstats.sim import Scenario, load_spec

    spec = load_spec(ROOT / path, preset="recommended")
    data = spec.scenario.to_dict()
    data["policy"]["gate"].update(gate)
    return spec, Scenario.from_dict(data)


def _s1(gate: dict[str, Any], reps: int) -> dict[str, float]:
    from cogstats.sim import simulate

    _, base = _scenario("simulations/cycgraph_oc.toml", gate)
    out = {}
    for effect, runs in S1_CELLS:
        s = base.with_values({"lessons.listed[0].effect": effect, "runs": runs})
        r = simulate(s, replicates=reps, rng=11, keep_runs=False, progress=False)
        row = r.outcome_rates(by=()).row(0, named=True)
        if effect == 0:
            value = row["promote_rate"] + row["evict_harmful_rate"]
        else:
            value = row["promote_rate"] if effect > 0 else row["evict_harmful_rate"]
        out[f"effect {effect:+g} by run {runs}"] = value
    return out


def _s2(path: str, gate: dict[str, Any], reps: int) -> dict[str, float]:
    from cogstats.sim import simulate
    from cogstats.sim.metrics import pooled_median_delay

    spec, s = _scenario(path, gate)
    seed = np.random.SeedSequence(spec.seed).spawn(1)[0]
    r = simulate(s, replicates=reps, rng=seed, keep_runs=False, progress=False)
    m = r.metrics
    return {
        "poison_recall": float(np.nanmean(m["poison_recall"].to_numpy())),
        "median_removal_delay": pooled_median_delay(r.lessons, n_resamples=49, rng=1)["median"],
        "false_eviction_rate": float(np.nanmean(m["false_eviction_rate"].to_numpy())),
    }


def run(quick: bool = False) -> dict[str, Any]:
    """Sweep the spending shape and record S1 and S2 side by side."""
    s1_reps, s2_reps = (2000, 200) if quick else (20000, 1000)
    rows = []
    for gamma, alpha in SHAPES:
        gate = {"alpha": alpha, "spending_options": {"gamma": gamma}}
        rows.append(
            {
                "gamma": gamma,
                "alpha": alpha,
                "shipped": (gamma, alpha) == (-3.0, 0.0025),
                "s1": _s1(gate, s1_reps),
                "s2": _s2("simulations/poison_crater.toml", gate, s2_reps),
                "s2_with_history": _s2("simulations/s2_variants/with_history.toml", gate, s2_reps),
            }
        )
    return {
        "benchmark": "recommended gate: spending shape vs S1 and S2",
        "s1_replicates_per_cell": s1_reps,
        "s2_replicates": s2_reps,
        "rows": rows,
        "machine": machine(),
    }


if __name__ == "__main__":
    cli(run, __doc__)
