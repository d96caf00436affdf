"""S1 (new ledger and with history) and S4 for the recommended preset, in the simulator.

Issue 18's single-lesson and null goals, measured with the compiled engine on the same
seeds for each contender (each spec's own seed):

- **S1, new ledger** (``simulations/cycgraph_oc.toml``) and **S1 with history**
  (``simulations/s1_history.toml``: 20 runs recorded before the lesson arrives; budgets
  counted from its arrival), each at noise 0.05, 0.1 and 0.2: the ``recommended`` preset
  (``contender_scenario("recommended", ...)``: the lifecycle gate with its retrieval) and
  cycgraph's inference rule (the spec's own gate and retrieval).  Per (effect, budget)
  cell: the correct-verdict rate (convicted when the effect is negative, promoted when
  positive) and, at effect 0, the share decided (promoted or convicted by either tier;
  a suspension or an admission is not a decision, a retirement for no lift is not one
  either), each with its binomial Monte Carlo error.  For a negative effect the share
  *out of the prompt* (convicted or suspended at the budget's last run) is reported
  beside it: the preset takes a harmful lesson out fast and does not re-inject it only
  to convict it.
- **S4** (``simulations/peeking_null.toml``: 20 null lessons injected at random, a
  verdict after every one of 200 runs): the share of null lessons promoted or convicted
  (goal: at most 5%), with the spec's randomized retrieval and the gate replaced by
  ``recommended`` (the gate's own error control), and with the whole preset.

Run: ``.venv/bin/python -m benchmarks.v2_s1_s4 [--quick] [--json PATH]`` (1,000
replicates a cell; ``--quick``: 100).
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._common import cli, machine

ROOT = Path(__file__).resolve().parents[1]
S1_SPECS = {"new": "simulations/cycgraph_oc.toml", "history": "simulations/s1_history.toml"}
NOISES = (0.05, 0.1, 0.2)
EFFECT = "lessons.listed[0].effect"
#: budgets (the lesson's own runs) by spec: the grid's ``runs`` minus the runs before it
BEFORE = {"new": 0, "history": 20}


def _s1_cells(path: str, contender: str, noise: float, replicates: int) -> list[dict[str, Any]]:
    """Per (effect, budget) cell: promoted, convicted and out-of-prompt shares.

    Cell ``i`` uses child ``i`` of the spec's root seed, as ``cogstats simulate`` does, so
    both contenders see the same draws cell by cell.
    """
    from cogstats.reports.comparison import contender_scenario
    from cogstats.sim import load_spec, simulate

    spec = load_spec(ROOT / path)
    cells = spec.cells()
    children = np.random.SeedSequence(int(spec.seed)).spawn(len(cells))
    out = []
    for (values, scenario), child in zip(cells, children, strict=True):
        ours = contender_scenario(contender, scenario.with_values({"score.noise_sd": noise}))
        result = simulate(ours, replicates=replicates, rng=child, keep_runs=False, progress=False)
        les = result.lessons
        reason = les["evict_reason"].fill_null("")
        convicted = (les["outcome"] == "evict") & (reason == "eval-gate:harmful")
        promoted = les["promoted_at_run"].fill_null(0) > 0
        out_of_prompt = convicted | (les["final_status"] == "suspended")
        out.append(
            {
                "effect": float(values[EFFECT]),
                "runs": int(values["runs"]),
                "replicates": les.height,
                "promote": float(promoted.mean()),
                "convict": float(convicted.mean()),
                "out_of_prompt": float(out_of_prompt.mean()),
                "engine": result.engine,
            }
        )
    return out


def _rate(p: float, n: int) -> dict[str, float]:
    return {"value": p, "mcse": math.sqrt(max(p * (1 - p), 0.0) / n) if n else math.nan}


def s1(replicates: int) -> dict[str, Any]:
    """S1 new ledger and with history, at every noise level, both contenders."""
    out: dict[str, Any] = {}
    for name, path in S1_SPECS.items():
        for noise in NOISES:
            for contender in ("recommended", "cycgraph_inference"):
                t = time.perf_counter()
                cells = _s1_cells(path, contender, noise, replicates)
                table = []
                for c in cells:
                    e, n = c["effect"], c["replicates"]
                    budget = c["runs"] - BEFORE[name]
                    row: dict[str, Any] = {"effect": e, "budget": budget, "replicates": n}
                    if e > 0:
                        row["correct"] = _rate(c["promote"], n)
                    elif e < 0:
                        row["correct"] = _rate(c["convict"], n)
                        row["out_of_prompt"] = _rate(c["out_of_prompt"], n)
                    else:
                        row["decided"] = _rate(c["promote"] + c["convict"], n)
                    table.append(row)
                out[f"{name}/noise {noise}/{contender}"] = {
                    "cells": table,
                    "seconds": time.perf_counter() - t,
                    "engine": cells[0]["engine"] if cells else None,
                }
    return out


def s4(replicates: int) -> dict[str, Any]:
    """S4: null lessons promoted or convicted, with the spec's retrieval and with the preset."""
    from cogstats.reports.comparison import contender_scenario
    from cogstats.sim import load_spec, simulate

    spec = load_spec(ROOT / "simulations/peeking_null.toml")
    variants = {
        "gate recommended, the spec's randomized retrieval": spec.scenario.with_values(
            {"gate.type": "recommended"}
        ),
        "the recommended preset": contender_scenario("recommended", spec.scenario),
    }
    out = {}
    for label, scenario in variants.items():
        result = simulate(
            scenario,
            replicates=replicates,
            rng=np.random.SeedSequence(int(spec.seed)),
            engine="auto",
            keep_runs=False,
            progress=False,
        )
        les = result.lessons
        reason = les["evict_reason"].fill_null("")
        convicted = (les["outcome"] == "evict") & (reason == "eval-gate:harmful")
        promoted = les["promoted_at_run"].fill_null(0) > 0
        false = (convicted | promoted).to_numpy().reshape(replicates, -1).mean(axis=1)
        out[label] = {
            "false_decision_rate": {
                "value": float(false.mean()),
                "mcse": float(false.std(ddof=1) / math.sqrt(replicates)),
            },
            "retired_for_no_lift": float(
                ((les["outcome"] == "evict") & (reason == "eval-gate:no_lift")).mean()
            ),
            "engine": result.engine,
        }
    return out


def run(quick: bool = False) -> dict[str, Any]:
    """Measure S1 (new, history) at three noise levels and S4."""
    reps = 100 if quick else 1000
    return {
        "benchmark": "recommended preset: S1 (new ledger, with history; noise 0.05/0.1/0.2) "
        "and S4, beside cycgraph's inference rule on the same seeds",
        "replicates": reps,
        "s1": s1(reps),
        "s4": s4(200 if quick else 1000),
        "machine": machine(),
    }


if __name__ == "__main__":
    cli(run, __doc__)


def table(out: dict[str, Any]) -> str:
    """Plain-text tables of :func:`run`'s figures: S1 cells by noise and ledger, then S4.

    Each S1 cell: the preset's figure / cycgraph's inference rule's (correct verdicts;
    at effect 0 the share decided; for a negative effect the preset's share out of the
    prompt in brackets).
    """
    lines = []
    for name in S1_SPECS:
        for noise in NOISES:
            rec = out["s1"][f"{name}/noise {noise}/recommended"]["cells"]
            ref = out["s1"][f"{name}/noise {noise}/cycgraph_inference"]["cells"]
            lines.append(f"S1 {name} ledger, noise {noise}: recommended / cycgraph inference")
            budgets = sorted({c["budget"] for c in rec})
            lines.append("effect | " + " | ".join(f"by run {b}" for b in budgets))
            for e in sorted({c["effect"] for c in rec}):
                cells = []
                for b in budgets:
                    a = next(c for c in rec if c["effect"] == e and c["budget"] == b)
                    r = next(c for c in ref if c["effect"] == e and c["budget"] == b)
                    key = "decided" if e == 0 else "correct"
                    text = f"{a[key]['value']:.3f} / {r[key]['value']:.3f}"
                    if e < 0:
                        text += f" ({a['out_of_prompt']['value']:.2f})"
                    cells.append(text)
                lines.append(f"{e:+.2f} | " + " | ".join(cells))
            lines.append("")
    for label, s in out["s4"].items():
        f = s["false_decision_rate"]
        lines.append(f"S4, {label}: {f['value']:.4f} ± {f['mcse']:.4f} promoted or convicted")
    return "\n".join(lines)
