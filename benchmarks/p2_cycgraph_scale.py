"""Benchmark P2: cycgraph's gate on 100,000 runs x 2,000 lessons (about 8 a run).

Side by side in one process, on the same ledger: the gate as it is now (per-lesson
statistics from additive sums over the inclusion pairs, a vectorised decision step) and
the previous implementation, kept as an oracle in tests/oracle/v0.py (each lesson's
baseline rescanned over every run, one Welch call per lesson).  Both rules (inference,
the default, and margin).  Decisions and reasons must be identical.

Three timings of the new gate:

* ``warm``: the ledger's inclusion index (which run carries which lesson) is built, as in
  a service that has evaluated before; statistics and decisions computed afresh.  The
  goal (0.1 s) applies here.
* ``cold``: every ledger cache cleared: the index is rebuilt from the runs' id lists
  (a pass over 800,000 Python strings), then as ``warm``.
* ``cached``: nothing changed since the last evaluation (statistics cached).

The old implementation is timed with its inclusion design prebuilt likewise (``warm``).

Run: ``.venv/bin/python -m benchmarks.p2_cycgraph_scale [--quick]``.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from benchmarks._common import cli, machine
from benchmarks._ledgers import scale_ledger
from cogstats import Ledger
from cogstats.gates import CycgraphGate
from tests.oracle.v0 import old_cycgraph_evaluate, old_design

TARGET_S = 0.1
SEED = 20261130
_STAT_CACHES = ("fact_arrays", "fact_stats")


def _time(fn: Any, repeats: int) -> tuple[float, list[float], Any]:
    times, result = [], None
    for _ in range(repeats):
        t = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), times, result


def _warm(gate: CycgraphGate, ledger: Ledger) -> Any:
    for key in _STAT_CACHES:
        ledger._cache.pop(key, None)
    return gate.evaluate(ledger)


def _cold(gate: CycgraphGate, ledger: Ledger) -> Any:
    ledger._cache.clear()
    return gate.evaluate(ledger)


def run(quick: bool = False) -> dict[str, Any]:
    """Time both implementations on the P2 ledger; return the figures."""
    n_runs = 20_000 if quick else 100_000
    t = time.perf_counter()
    ledger, _ = scale_ledger(n_runs, 2000, 8.0, seed=SEED)
    build_s = time.perf_counter() - t
    repeats = 3 if quick else 7
    rules: dict[str, Any] = {}
    for rule in ("inference", "margin"):
        gate = CycgraphGate(decision_rule=rule, min_trials=3)
        gate.evaluate(ledger)  # first call: imports, index
        warm, warm_all, report = _time(lambda g=gate: _warm(g, ledger), repeats)
        cold, cold_all, _ = _time(lambda g=gate: _cold(g, ledger), max(1, repeats // 2))
        cached, _, _ = _time(lambda g=gate: g.evaluate(ledger), repeats)
        design = old_design(ledger)
        old, old_all, old_frame = _time(
            lambda g=gate, d=design: old_cycgraph_evaluate(g, ledger, None, d), 1 if quick else 2
        )
        new_frame = report.to_frame()
        identical = all(
            new_frame[c].to_list() == old_frame[c].to_list()
            for c in ("fact_id", "decision", "reason", "trials", "baseline_runs")
        )
        counts = dict(new_frame["decision"].value_counts().iter_rows())
        rules[rule] = {
            "new_warm_s": warm,
            "new_warm_all_s": warm_all,
            "new_cold_s": cold,
            "new_cold_all_s": cold_all,
            "new_cached_s": cached,
            "old_warm_s": old,
            "old_warm_all_s": old_all,
            "ratio_warm": old / warm,
            "decisions_identical": identical,
            "decision_counts": counts,
        }
    out = {
        "benchmark": "P2",
        "quick": quick,
        "seed": SEED,
        "n_runs": n_runs,
        "n_lessons": 2000,
        "lessons_per_run_mean": float(ledger.fact_stats()["trials"].sum()) / n_runs,
        "ledger_build_s": build_s,
        "rules": rules,
        "target_warm_s": TARGET_S,
        "meets_target": all(r["new_warm_s"] <= TARGET_S for r in rules.values()),
        "all_identical": all(r["decisions_identical"] for r in rules.values()),
        "machine": machine(),
    }
    print(f"P2  cycgraph gate, {n_runs} runs x 2000 lessons (medians)")
    for rule, r in rules.items():
        print(
            f"  {rule:9s} new warm {r['new_warm_s']:.3f} s  cold {r['new_cold_s']:.3f} s  "
            f"cached {r['new_cached_s']:.4f} s | old {r['old_warm_s']:.2f} s  "
            f"({r['ratio_warm']:.0f}x)  identical decisions: {r['decisions_identical']}"
        )
    return out


if __name__ == "__main__":
    cli(run, __doc__)
