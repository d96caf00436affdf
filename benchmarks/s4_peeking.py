"""Benchmark S4: null lessons, a verdict after every run (peeking).

simulations/peeking_null.toml: 20 lessons of effect 0 injected independently with
probability 1/2 (logged), score = clamp01(0.6 + N(0, 0.1)), a look after each of 200 runs.
Share of lessons ever rejected (nominal alpha 0.05, two-sided) by:

- ``confseq`` with the logged propensities, and two-sample (anytime-valid);
- a fixed-sample Welch test looked at after every run (the naive baseline);
- cycgraph's inference gate with its doubling control (share of lessons ever promoted or
  evicted as harmful, simulated with the gate in the loop).

Run: ``python -m benchmarks.s4_peeking [--quick]``.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from scipy import special

from benchmarks._common import cli, machine
from cogstats.estimators import confseq_paths
from cogstats.sim import load_spec, simulate

SPEC = Path(__file__).resolve().parents[1] / "simulations" / "peeking_null.toml"
ALPHA = 0.05


def welch_every_run(y: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Two-sided Welch p-value of every lesson after every run, from cumulative sums."""
    n1 = np.cumsum(x, axis=0)
    n0 = np.arange(1, len(y) + 1)[:, None] - n1
    s1 = np.cumsum(x * y[:, None], axis=0)
    s0 = np.cumsum(y)[:, None] - s1
    q1 = np.cumsum(x * (y**2)[:, None], axis=0)
    q0 = np.cumsum(y**2)[:, None] - q1
    with np.errstate(invalid="ignore", divide="ignore"):
        m1, m0 = s1 / n1, s0 / n0
        a = (q1 - n1 * m1**2) / (n1 - 1) / n1
        b = (q0 - n0 * m0**2) / (n0 - 1) / n0
        t = (m1 - m0) / np.sqrt(a + b)
        df = (a + b) ** 2 / (a**2 / (n1 - 1) + b**2 / (n0 - 1))
        p = 2 * special.stdtr(df, -np.abs(t))
    return np.where((n1 >= 2) & (n0 >= 2), p, np.nan)


def run(quick: bool = False) -> dict[str, Any]:
    """Share of null lessons ever rejected under peeking, per method."""
    spec = load_spec(SPEC)
    reps = 30 if quick else spec.replicates
    t0 = time.perf_counter()
    ungated = simulate(
        spec.scenario.with_values({"gate.type": "none"}), replicates=reps, rng=spec.seed
    )
    counts = {"confseq (logged propensities)": 0, "confseq (two-sample)": 0, "Welch, every run": 0}
    total = 0
    for rep in range(reps):
        y, x, p, _ = ungated.arrays(rep)
        lg = confseq_paths(y, x, p, confidence_level=1 - ALPHA)
        ts = confseq_paths(y, x, None, confidence_level=1 - ALPHA)
        counts["confseq (logged propensities)"] += int(np.sum(np.nanmin(lg.pvalue, 0) <= ALPHA))
        counts["confseq (two-sample)"] += int(np.sum(np.nanmin(ts.pvalue, 0) <= ALPHA))
        counts["Welch, every run"] += int(np.sum(np.nanmin(welch_every_run(y, x), 0) <= ALPHA))
        total += x.shape[1]
    gated = simulate(spec.scenario, replicates=reps, rng=spec.seed, keep_runs=False)
    decided = gated.lessons.filter(
        (pl.col("outcome") == "promote")
        | ((pl.col("outcome") == "evict") & (pl.col("reason") == "eval-gate:harmful"))
    ).height
    rows = [
        (name, c / total, math.sqrt((c / total) * (1 - c / total) / total))
        for name, c in counts.items()
    ]
    share = decided / gated.lessons.height
    rows.append(
        (
            "cycgraph inference gate (doubling)",
            share,
            math.sqrt(share * (1 - share) / gated.lessons.height),
        )
    )
    table = pl.DataFrame(rows, schema=["method", "ever_rejected", "mcse"], orient="row")
    with pl.Config(tbl_rows=10, float_precision=4):
        print(f"S4  peeking: {reps} replicates x 20 null lessons, a look after each of 200 runs")
        print(table)
    return {
        "benchmark": "S4",
        "replicates": reps,
        "lessons": total,
        "alpha": ALPHA,
        "seed": spec.seed,
        "seconds": time.perf_counter() - t0,
        "table": table.to_dicts(),
        "machine": machine(),
    }


if __name__ == "__main__":
    cli(run, __doc__)
