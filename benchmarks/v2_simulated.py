"""The recommended preset (the lesson lifecycle gate) measured in the simulator (issue 18).

Runs S2 (``simulations/poison_crater.toml``), every committed S2 variant
(``simulations/s2_variants/*.toml``), ``simulations/s2_helpful_lessons.toml`` and the
recorded demo's simulation (``simulations/cycgraph_demo.toml``) with
two contenders on the same seeds (each spec's own), in the compiled engine:

- ``margin``: cycgraph's margin rule with the spec's own gate options and retrieval
  (``contender_scenario("cycgraph_margin", ...)`` of the gate_comparison report);
- ``v2``: the ``recommended`` preset (``contender_scenario("recommended", ...)``): the
  lifecycle gate with its re-test design (in-progress-first candidates, one suspect
  re-tested a run, the most likely innocent first, the prompt kept full), the spec's
  prompt caps and gate cadence kept.

Figures per scenario, as the gate_comparison report defines them
(:mod:`cogstats.reports.comparison`, :mod:`cogstats.sim.metrics`), each with its Monte
Carlo standard error: regret paired difference v2 - margin (mean over replicates, se,
upper end of the two-sided 95% interval); pooled median poison exposure (cluster
bootstrap error); poisons not injected in the last 5 runs; false conviction (effect >= 0
evicted as harmful / such lessons tried); helpful lost (effect >= 0.05 evicted, retired
or suspended at the last run); median runs genuine lessons spend suspended (pooled over
those ever suspended) and the share of replicates where one was.

Run: ``.venv/bin/python -m benchmarks.v2_simulated [--quick] [--json PATH]`` (500
replicates a scenario, about 2 s a contender and scenario once compiled; ``--quick``: 40).
``measure(path, replicates, retrieval={...})`` measures the preset with other retrieval
values (the ablations of docs/recommended.md).
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
    "S2": "simulations/poison_crater.toml",
    # cycgraph's recorded demo's schedule and policy, with assumed true effects
    "cycgraph_demo": "simulations/cycgraph_demo.toml",
    "helpful_lessons": "simulations/s2_helpful_lessons.toml",
    **{
        p.stem: f"simulations/s2_variants/{p.name}"
        for p in sorted((ROOT / "simulations" / "s2_variants").glob("*.toml"))
    },
}
#: per-replicate metrics reported as means with their Monte Carlo errors
MEANS = ("regret", "poison_out_last5", "false_conviction_rate", "helpful_lost_rate")


def scenarios(path: str | Path, retrieval: dict[str, Any] | None = None) -> tuple[Any, Any, int]:
    """Return (margin scenario, recommended scenario, the spec's seed).

    ``retrieval``: dotted values set on the recommended scenario (e.g.
    ``{"retrieval.retest_order": "random"}`` to measure the design without its order).

    Examples
    --------
    >>> m, v, seed = scenarios(ROOT / "simulations/poison_crater.toml")
    >>> m.gate.policy["decision_rule"], v.gate.type, v.retrieval.retest_order
    ('margin', 'recommended', 'likely_innocent')
    >>> v.retrieval.max_facts == m.retrieval.max_facts, v.retrieval.fill_empty
    (True, True)
    """
    from cogstats.reports.comparison import contender_scenario
    from cogstats.sim import load_spec

    spec = load_spec(ROOT / path)
    margin = contender_scenario("cycgraph_margin", spec.scenario)
    v2 = contender_scenario("recommended", spec.scenario)
    if retrieval:
        v2 = v2.with_values(retrieval)
    return margin, v2, int(spec.seed)


def _mean(values: np.ndarray) -> dict[str, float | int]:
    v = values[~np.isnan(values)]
    n = int(v.size)
    mean = float(v.mean()) if n else math.nan
    se = float(v.std(ddof=1) / math.sqrt(n)) if n > 1 else math.nan
    return {"value": mean, "mcse": se, "n": n}


def figures(result: Any, seed: int) -> dict[str, Any]:
    """The issue's figures of one simulation result (means and pooled medians, with errors)."""
    from cogstats.sim.metrics import pooled_median_exposure, pooled_median_suspended

    m = result.metrics.sort("replicate")
    out: dict[str, Any] = {k: _mean(m[k].cast(float).fill_null(np.nan).to_numpy()) for k in MEANS}
    for name, fn in (
        ("median_poison_exposure", pooled_median_exposure),
        ("median_genuine_suspended_runs", pooled_median_suspended),
    ):
        med = fn(result.lessons, n_resamples=999, rng=seed)
        out[name] = {"value": med["median"], "mcse": med["mcse"], "n": med["n"]}
    sus = m["genuine_suspended_runs"].cast(float).fill_null(np.nan).to_numpy()
    out["replicates_with_genuine_suspended"] = _mean((~np.isnan(sus)).astype(float))
    out["suspensions_per_replicate"] = _mean(m["suspensions"].cast(float).to_numpy())
    out["retest_injections_per_replicate"] = _mean(m["retest_injections"].cast(float).to_numpy())
    return out


def measure(
    path: str | Path, replicates: int, retrieval: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Simulate one spec with the two contenders on the same seeds; the paired figures.

    ``retrieval`` as in :func:`scenarios`.
    """
    from cogstats.sim import simulate

    margin_s, v2_s, seed = scenarios(path, retrieval)
    out: dict[str, Any] = {"spec": str(path), "seed": seed, "replicates": replicates}
    regret: dict[str, np.ndarray] = {}
    for label, scenario in (("margin", margin_s), ("v2", v2_s)):
        t = time.perf_counter()
        result = simulate(
            scenario,
            replicates=replicates,
            rng=np.random.SeedSequence(seed),
            engine="auto",
            keep_runs=False,
            progress=False,
        )
        out[label] = {
            "engine": result.engine,
            "seconds": time.perf_counter() - t,
            **figures(result, seed),
        }
        regret[label] = result.metrics.sort("replicate")["regret"].to_numpy()
    paired = _mean(regret["v2"] - regret["margin"])
    paired["upper95"] = float(paired["value"]) + 1.959963984540054 * float(paired["mcse"])
    out["regret_v2_minus_margin"] = paired
    return out


def run(quick: bool = False) -> dict[str, Any]:
    """Measure the recommended preset beside the margin rule on S2, its variants and helpful."""
    reps = 40 if quick else 500
    return {
        "benchmark": "the recommended preset (lifecycle gate) in the simulator (issue 18), "
        "beside cycgraph's margin rule",
        "replicates": reps,
        "scenarios": {name: measure(path, reps) for name, path in SPECS.items()},
        "machine": machine(),
    }


def table(out: dict[str, Any]) -> str:
    """A plain-text table of :func:`run`'s figures."""

    def f(x: dict[str, Any], digits: int = 3) -> str:
        return f"{x['value']:.{digits}f} ± {x['mcse']:.{digits}f}"

    lines = [
        "scenario | regret v2-margin (upper95) | exposure v2/margin | last5 out v2 | "
        "false conv v2/margin | helpful lost v2/margin | genuine susp runs v2 (share)"
    ]
    for name, s in out["scenarios"].items():
        v, m, r = s["v2"], s["margin"], s["regret_v2_minus_margin"]
        lines.append(
            f"{name} | {r['value']:+.4f} ± {r['mcse']:.4f} ({r['upper95']:+.4f}) | "
            f"{f(v['median_poison_exposure'], 1)} / {m['median_poison_exposure']['value']:.1f} | "
            f"{f(v['poison_out_last5'])} | {f(v['false_conviction_rate'], 4)} / "
            f"{f(m['false_conviction_rate'], 4)} | {f(v['helpful_lost_rate'], 4)} / "
            f"{f(m['helpful_lost_rate'], 4)} | {f(v['median_genuine_suspended_runs'], 1)} "
            f"({v['replicates_with_genuine_suspended']['value']:.2f})"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    cli(run, __doc__)
