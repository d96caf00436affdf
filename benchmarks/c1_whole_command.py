"""Benchmark C1, the whole command: ``cogstats simulate simulations/cycgraph_oc.toml
--replicates 999`` against cycgraph's own simulator on the same grid, side by side.

Each round runs, as fresh processes one after the other, the user's command (process
start, imports, loading the compiled kernel from numba's cache, the 36 cells, the printed
table) and cycgraph's ``gateOperatingCharacteristics`` (``@cycgraph/memory``, TypeScript
on node) on the S1 grid: effects -0.3 .. 0.3, budgets 10/25/50/100 runs, noise 0.1, 999
replicates a cell, retrieval max_facts 8 / candidate_slots 4 / rest_after_trials 5, the
inference gate with min_trials 3 and max_baseline_runs 40.  The figure is the median over
rounds of the ratio of the two wall times (absolute times on the shared machine vary
2-3x from day to day; the ratio does not).  Our command is also timed with
``--workers 1`` (one thread), to show what the second core buys.

cycgraph's code is not part of this repository.  Point the benchmark at a checkout of
``wmcmahan/cycgraph`` whose ``packages/memory`` is built (``npm install && npm run build``:
it needs ``packages/memory/dist/validation/gate-simulator.js`` and ``zod`` resolvable from
there) with ``--cycgraph PATH`` or the environment variable ``COGSTATS_CYCGRAPH``.  The
benchmark writes a ten-line driver that imports that file into a temporary directory and
runs it with ``node``.  Without a checkout it times our command alone and records no
ratio.  The printed rates of both are kept in the JSON (promote, harmful and no-lift
rates per cell), and compared: the two draw different random numbers (mulberry32
against PCG64), so they agree within Monte Carlo error only; ``agreement`` gives, over
the 36 cells and three rates, the largest two-sample z-score of the differences and how
many exceed 2 and 3 (about 5% and 0.3% of 108 would, by chance alone).

Run: ``.venv/bin/python -m benchmarks.c1_whole_command [--quick] [--cycgraph PATH]``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks import _common
from benchmarks._common import machine

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "simulations" / "cycgraph_oc.toml"
TARGET_RATIO = 20.0
SIMULATOR = "packages/memory/dist/validation/gate-simulator.js"

_DRIVER = """
import {{ gateOperatingCharacteristics }} from {module};
const rows = await gateOperatingCharacteristics({{
  effects: [-0.3, -0.2, -0.1, -0.05, 0, 0.05, 0.1, 0.2, 0.3], runCounts: [10, 25, 50, 100],
  noiseSds: [0.1], replicates: {replicates}, seed: 1,
  retrieval: {{ max_facts: 8, candidate_slots: 4, rest_after_trials: 5,
               maxFacts: 8, candidateSlots: 4, restAfterTrials: 5 }},
  policy: {{ min_trials: 3, max_baseline_runs: 40, minTrials: 3, maxBaselineRuns: 40 }},
}});
for (const r of rows) console.log(JSON.stringify(r));
"""


def _our_rates(table: list[str]) -> dict[tuple[float, int], dict[str, float]]:
    """(effect, runs) -> promote/harmful/no-lift rates, read from our printed table."""
    rows = [
        [c.strip() for c in line.strip().strip("│").split("┆")]
        for line in table
        if line.startswith("│")
    ]
    head = rows[0]
    col = {name: head.index(name) for name in head}
    effect = next(i for name, i in col.items() if name.endswith("effect"))
    out = {}
    for r in rows[1:]:
        out[(float(r[effect]), int(r[col["runs"]]))] = {
            "promote": float(r[col["promote_rate"]]),
            "harmful": float(r[col["evict_harmful_rate"]]),
            "no_lift": float(r[col["evict_no_lift_rate"]]),
        }
    return out


def agreement(table: list[str], theirs: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Two-sample z-scores of our rates against cycgraph's, cell by cell."""
    if not theirs:
        return None
    try:
        ours = _our_rates(table)
    except (ValueError, KeyError, IndexError, StopIteration):
        return None
    keys = {"promote": "promoteRate", "harmful": "harmfulEvictRate", "no_lift": "noLiftRate"}
    zs = []
    for row in theirs:
        mine = ours[(float(row["effect"]), int(row["runs"]))]
        n = row["replicates"]
        for name, key in keys.items():
            a, b = mine[name], float(row[key])
            p = (a + b) / 2
            se = (max(p * (1 - p), 0.0) * 2 / n) ** 0.5
            z = abs(a - b) / se if se > 0 else (0.0 if a == b else float("inf"))
            zs.append(
                {
                    "effect": row["effect"],
                    "runs": row["runs"],
                    "rate": name,
                    "ours": a,
                    "cycgraph": b,
                    "z": z,
                }
            )
    zs.sort(key=lambda r: -r["z"])
    return {
        "rates_compared": len(zs),
        "max_abs_z": zs[0]["z"],
        "over_2": sum(r["z"] > 2 for r in zs),
        "over_3": sum(r["z"] > 3 for r in zs),
        "largest": zs[:5],
    }


def _ours_command(replicates: int, workers: int | None) -> list[str]:
    script = Path(sys.executable).with_name("cogstats")
    head = [str(script)] if script.exists() else [sys.executable, "-m", "cogstats.cli"]
    cmd = [*head, "simulate", str(SPEC), "--replicates", str(replicates), "--no-progress"]
    return cmd if workers is None else [*cmd, "--workers", str(workers)]


def _timed(cmd: list[str], cwd: Path | None = None) -> tuple[float, str]:
    t = time.perf_counter()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=cwd)
    return time.perf_counter() - t, out.stdout


def cycgraph_checkout(path: str | None = None) -> Path | None:
    """The cycgraph checkout from ``path`` or ``COGSTATS_CYCGRAPH`` (None when absent)."""
    return _common.cycgraph_checkout(path, "validation/gate-simulator.js")


def run(quick: bool = False, cycgraph: str | None = None, rounds: int | None = None) -> dict:
    """Time both commands side by side; return the figures (and print a short table)."""
    replicates = 199 if quick else 999
    rounds = rounds or (1 if quick else 3)
    checkout = cycgraph_checkout(cycgraph)
    node = shutil.which("node")
    _timed(_ours_command(10, None))  # numba compiles (or loads) the kernel once: not timed
    ours, ours_1, theirs, ratios = [], [], [], []
    ours_out = theirs_out = ""
    with tempfile.TemporaryDirectory() as tmp:
        driver = Path(tmp) / "oc.mjs"
        if checkout is not None and node is not None:
            module = json.dumps((checkout / SIMULATOR).as_uri())
            driver.write_text(_DRIVER.format(module=module, replicates=replicates))
        for _ in range(rounds):
            t_ours, ours_out = _timed(_ours_command(replicates, None))
            ours.append(t_ours)
            ours_1.append(_timed(_ours_command(replicates, 1))[0])
            if driver.exists():
                t_theirs, theirs_out = _timed([str(node), str(driver)], cwd=Path(tmp))
                theirs.append(t_theirs)
                ratios.append(t_theirs / t_ours)
    out: dict[str, Any] = {
        "benchmark": "C1 (whole command)",
        "quick": quick,
        "replicates": replicates,
        "rounds": rounds,
        "command": " ".join(_ours_command(replicates, None)[1:]),
        "ours_s": ours,
        "ours_median_s": statistics.median(ours),
        "ours_one_thread_s": ours_1,
        "ours_one_thread_median_s": statistics.median(ours_1),
        "cycgraph_checkout": str(checkout) if checkout else None,
        "cycgraph_s": theirs,
        "cycgraph_median_s": statistics.median(theirs) if theirs else None,
        "ratio_per_round": ratios,
        "ratio_median": statistics.median(ratios) if ratios else None,
        "target_ratio": TARGET_RATIO,
        "meets_target": bool(ratios) and statistics.median(ratios) >= TARGET_RATIO,
        "ours_table": ours_out.splitlines(),
        "cycgraph_rows": [json.loads(line) for line in theirs_out.splitlines() if line],
        "machine": machine(),
    }
    out["agreement"] = agreement(out["ours_table"], out["cycgraph_rows"])
    if checkout is None or node is None:
        out["note"] = (
            "no cycgraph checkout (set COGSTATS_CYCGRAPH or --cycgraph) or no node: "
            "our command timed alone, no ratio recorded"
        )
    print(f"C1  whole command, S1 grid, {replicates} replicates a cell ({rounds} rounds)")
    print(
        f"  cogstats simulate     {out['ours_median_s']:7.2f} s  "
        f"(one thread: {out['ours_one_thread_median_s']:.2f} s)"
    )
    if ratios:
        print(f"  cycgraph (node)       {out['cycgraph_median_s']:7.2f} s")
        print(f"  ratio                 {out['ratio_median']:7.1f} x  (goal {TARGET_RATIO:.0f}x)")
        if out["agreement"]:
            a = out["agreement"]
            print(
                f"  rates, ours - cycgraph's: largest |z| {a['max_abs_z']:.2f} over "
                f"{a['rates_compared']} ({a['over_2']} above 2, {a['over_3']} above 3)"
            )
    else:
        print(f"  {out['note']}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="199 replicates, one round")
    parser.add_argument("--cycgraph", help="cycgraph checkout (else $COGSTATS_CYCGRAPH)")
    parser.add_argument("--rounds", type=int, help="rounds (default 3; quick 1)")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    out = run(quick=args.quick, cycgraph=args.cycgraph, rounds=args.rounds)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1, default=str))


if __name__ == "__main__":
    main()
