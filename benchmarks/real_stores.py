"""The recommended preset and cycgraph's margin rule in real lesson stores (issue 30).

Runs the committed specs of ``simulations/real_stores/`` (paraphrases, conflicting pairs,
task families, drift, a score ceiling and their mix, each sized like S2 with random
lesson names; docs/scenarios.md) with two contenders on the same seeds (each spec's
own): cycgraph's margin rule with the spec's own gate and retrieval
(``contender_scenario("cycgraph_margin", ...)``) and the ``recommended`` preset
(``contender_scenario("recommended", ...)``).  The engine is the compiled one where it
covers the world, else the reference engine (recorded per contender).

Figures, each with its Monte Carlo standard error over replicates
(:mod:`cogstats.sim.metrics`, :mod:`cogstats.sim.metrics_world`): regret paired
difference recommended - margin, overall and per segment (runs 1-10, 11-30), with the
upper end of its two-sided 95% interval; helpful lost (by paraphrase group), helpful
lessons still suspended at the last run, false conviction (value alone >= 0 at the
decision); poisons injected 5 times or more and the pooled median poison exposure
(cluster bootstrap); and the world's diagnostics: runs with both members of a harmful
pair, runs of a family-specific lesson in its harmful family, paraphrase groups lost
(share of replicates that lost one), runs of a drifted lesson in the prompt after its
switch.

Run: ``.venv/bin/python -m benchmarks.real_stores [--quick] [--json PATH]`` (200
replicates a spec; ``--quick``: 20).
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._common import cli, machine

ROOT = Path(__file__).resolve().parents[1]
SPECS = {
    p.stem: f"simulations/real_stores/{p.name}"
    for p in sorted((ROOT / "simulations" / "real_stores").glob("*.toml"))
}
#: per-replicate metrics reported as means with their Monte Carlo errors
MEANS = (
    "regret",
    "regret_runs_1_10",
    "regret_runs_11_end",
    "helpful_lost_rate",
    "helpful_suspended_rate",
    "false_conviction_rate",
    "poison_injected_5plus",
    "poison_out_last5",
    "harmful_pair_runs",
    "family_harmful_runs",
    "group_lost_any",
    "group_lost_rate",
    "drift_runs_after_switch",
)
#: the paired differences recommended - margin
PAIRED = ("regret", "regret_runs_1_10", "regret_runs_11_end")
CONTENDERS = {"margin": "cycgraph_margin", "recommended": "recommended"}


def _mean(values: np.ndarray) -> dict[str, float | int]:
    v = values[~np.isnan(values)]
    n = int(v.size)
    mean = float(v.mean()) if n else math.nan
    se = float(v.std(ddof=1) / math.sqrt(n)) if n > 1 else math.nan
    return {"value": mean, "mcse": se, "n": n}


def measure(path: str | Path, replicates: int) -> dict[str, Any]:
    """Simulate one spec with both contenders on the same seeds; the paired figures."""
    from cogstats.reports.comparison import contender_scenario
    from cogstats.sim import load_spec, simulate
    from cogstats.sim.metrics import pooled_median_exposure

    spec = load_spec(ROOT / path)
    seed = int(spec.seed)
    out: dict[str, Any] = {"spec": str(path), "seed": seed, "replicates": replicates}
    metrics: dict[str, Any] = {}
    for label, name in CONTENDERS.items():
        scenario = contender_scenario(name, spec.scenario)
        t = time.perf_counter()
        result = simulate(
            scenario,
            replicates=replicates,
            rng=np.random.SeedSequence(seed),
            engine="auto",
            keep_runs=False,
            progress=False,
        )
        m = result.metrics.sort("replicate")
        metrics[label] = m
        med = pooled_median_exposure(result.lessons, n_resamples=999, rng=seed)
        out[label] = {
            "engine": result.engine,
            "seconds": time.perf_counter() - t,
            **{k: _mean(m[k].cast(float).fill_null(np.nan).to_numpy()) for k in MEANS},
            "median_poison_exposure": {"value": med["median"], "mcse": med["mcse"]},
        }
    for k in PAIRED:
        diff = metrics["recommended"][k].to_numpy() - metrics["margin"][k].to_numpy()
        paired = _mean(diff)
        paired["upper95"] = float(paired["value"]) + 1.959963984540054 * float(paired["mcse"])
        out[f"{k}_recommended_minus_margin"] = paired
    return out


def run(quick: bool = False) -> dict[str, Any]:
    """Measure both contenders on every committed real-store spec."""
    reps = 20 if quick else 200
    return {
        "benchmark": "the recommended preset beside cycgraph's margin rule in real lesson "
        "stores (paraphrases, conflicts, task families, drift, a score ceiling, the mix)",
        "replicates": reps,
        "scenarios": {name: measure(path, reps) for name, path in SPECS.items()},
        "machine": machine(),
    }


def table(out: dict[str, Any]) -> str:
    """A plain-text table of :func:`run`'s figures (recommended / margin)."""

    def f(x: dict[str, Any], digits: int = 3) -> str:
        if x["n"] == 0:
            return "-"
        return f"{x['value']:.{digits}f} ± {x['mcse']:.{digits}f}"

    lines = []
    for name, s in out["scenarios"].items():
        r, m = s["recommended"], s["margin"]
        lines.append(f"{name} ({s['replicates']} replicates; engines {r['engine']}/{m['engine']})")
        for k in PAIRED:
            p = s[f"{k}_recommended_minus_margin"]
            lines.append(
                f"  {k} recommended - margin: {p['value']:+.4f} ± {p['mcse']:.4f} "
                f"(upper95 {p['upper95']:+.4f})"
            )
        for k in MEANS:
            lines.append(f"  {k}: {f(r[k], 4)} / {f(m[k], 4)}")
        lines.append(
            f"  median poison exposure: {r['median_poison_exposure']['value']:.1f} / "
            f"{m['median_poison_exposure']['value']:.1f}"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    cli(run, __doc__)
