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

cycgraph's own TypeScript gate (``evaluateRetention`` of ``@cycgraph/memory`` on node,
with its ``InMemoryOutcomeLedger`` and ``InMemoryMemoryStore``) runs on the same ledger
when a built checkout is given (``--cycgraph PATH`` or ``$COGSTATS_CYCGRAPH``; see
benchmarks/c1_whole_command.py): the runs go to a temporary JSON Lines file (scores
written with Python's round-trip repr), a driver written next to it at run time records
them in cycgraph's ledger, puts every lesson in a fresh store as a candidate (in the
ledger's lesson order) and times one ``evaluateRetention`` call per rule (the ledger's
recording and the store's filling not included).  Its decisions and reasons, and the
trials it reports, must equal ours lesson by lesson.  Without a checkout, or without
``node``, that column is left out.

Run: ``.venv/bin/python -m benchmarks.p2_cycgraph_scale [--quick] [--cycgraph PATH]``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._common import CYCGRAPH_DIST, cycgraph_checkout, machine
from benchmarks._ledgers import scale_ledger
from cogstats import Ledger
from cogstats.gates import CycgraphGate
from tests.oracle.v0 import old_cycgraph_evaluate, old_design

TARGET_S = 0.1
SEED = 20261130
_STAT_CACHES = ("fact_arrays", "fact_stats")
_DECISION = {"promoted": "promote", "evicted": "evict", "held": "hold"}

_DRIVER = """
import {{ readFileSync }} from 'node:fs';
import {{ InMemoryMemoryStore }} from {store};
import {{ InMemoryOutcomeLedger }} from {ledger};
import {{ evaluateRetention }} from {gate};
const [runsPath, ...rules] = process.argv.slice(2);
const runs = readFileSync(runsPath, 'utf8').trim().split('\\n').map((l) => JSON.parse(l));
const ledger = new InMemoryOutcomeLedger();
let t = performance.now();
for (const r of runs) await ledger.recordOutcome(r);
const recordS = (performance.now() - t) / 1000;
const lessons = [];
const seen = new Set();
for (const r of runs) {{
  for (const f of r.fact_ids) if (!seen.has(f)) {{ seen.add(f); lessons.push(f); }}
}}
for (const rule of rules) {{
  const store = new InMemoryMemoryStore();
  for (const id of lessons) {{
    await store.putFact({{
      id, content: `lesson ${{id}}`, source_episode_ids: [], entity_ids: [],
      provenance: {{ source: 'system', created_at: new Date(0) }}, valid_from: new Date(0),
      access_count: 0, tags: ['lesson', 'candidate'],
    }});
  }}
  t = performance.now();
  const report = await evaluateRetention(store, ledger, {{ decisionRule: rule, minTrials: 3 }});
  const seconds = (performance.now() - t) / 1000;
  const decisions = {{}};
  for (const [kind, rows] of Object.entries(report)) {{
    for (const row of rows) {{
      const trials = row.trials ?? row.evidence?.trials ?? null;
      decisions[row.factId] = [kind, row.reason ?? null, trials];
    }}
  }}
  console.log(JSON.stringify({{ rule, seconds, record_s: recordS, decisions }}));
}}
"""


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


def _cycgraph_gate(ledger: Ledger, checkout: Path, rules: tuple[str, ...]) -> dict[str, Any]:
    """Run cycgraph's TypeScript gate on ``ledger`` under node; its result per rule."""
    node = shutil.which("node")
    assert node is not None
    dist = checkout / CYCGRAPH_DIST
    modules = {
        "store": dist / "store" / "in-memory-store.js",
        "ledger": dist / "consolidation" / "outcome-ledger.js",
        "gate": dist / "consolidation" / "retention-gate.js",
    }
    with tempfile.TemporaryDirectory() as tmp:
        runs = Path(tmp) / "runs.jsonl"
        frame = ledger.to_frame().select("run_id", "score", "fact_ids")
        with runs.open("w") as fh:
            for run_id, score, fact_ids in frame.iter_rows():
                fh.write(json.dumps({"run_id": run_id, "score": score, "fact_ids": fact_ids}))
                fh.write("\n")
        driver = Path(tmp) / "gate.mjs"
        driver.write_text(_DRIVER.format(**{k: json.dumps(v.as_uri()) for k, v in modules.items()}))
        t = time.perf_counter()
        out = subprocess.run(
            [node, "--max-old-space-size=4096", str(driver), str(runs), *rules],
            check=True,
            capture_output=True,
            text=True,
            cwd=tmp,
        )
        wall = time.perf_counter() - t
    results = {}
    for line in out.stdout.splitlines():
        row = json.loads(line)
        results[row["rule"]] = row
    return {"process_wall_s": wall, "rules": results}


def _same_as_cycgraph(frame: Any, theirs: dict[str, list[Any]]) -> dict[str, Any]:
    """Lesson-by-lesson comparison of our decisions frame with cycgraph's report."""
    ours = {
        f: (d, r, t)
        for f, d, r, t in frame.select("fact_id", "decision", "reason", "trials").iter_rows()
    }
    mismatches = []
    for fact_id, (kind, reason, trials) in theirs.items():
        got = ours.get(fact_id)
        want = (_DECISION[kind], reason)
        if got is None or got[:2] != want or (trials is not None and got[2] != trials):
            mismatches.append({"fact_id": fact_id, "cycgraph": [*want, trials], "ours": got})
    return {
        "lessons_compared": len(theirs),
        "same_lessons": set(theirs) == set(ours),
        "mismatches": mismatches[:20],
        "identical": not mismatches and set(theirs) == set(ours),
    }


def run(quick: bool = False, cycgraph: str | None = None) -> dict[str, Any]:
    """Time both implementations (and cycgraph's, given a checkout); return the figures."""
    n_runs = 20_000 if quick else 100_000
    checkout = cycgraph_checkout(cycgraph, "consolidation/retention-gate.js")
    if checkout is not None and shutil.which("node") is None:
        checkout = None
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
            "new_frame": new_frame,
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
    theirs = _cycgraph_gate(ledger, checkout, tuple(rules)) if checkout is not None else None
    for rule, r in rules.items():
        new_frame = r.pop("new_frame")
        if theirs is None:
            continue
        ts = theirs["rules"][rule]
        r["cycgraph_ts_s"] = ts["seconds"]
        r["ratio_cycgraph_ts_to_warm"] = ts["seconds"] / r["new_warm_s"]
        r["same_as_cycgraph_ts"] = _same_as_cycgraph(new_frame, ts["decisions"])
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
        "cycgraph_checkout": str(checkout) if checkout else None,
        "cycgraph_ts_record_s": theirs["rules"][next(iter(rules))]["record_s"] if theirs else None,
        "cycgraph_ts_process_wall_s": theirs["process_wall_s"] if theirs else None,
        "all_identical_to_cycgraph_ts": (
            all(r["same_as_cycgraph_ts"]["identical"] for r in rules.values()) if theirs else None
        ),
        "machine": machine(),
    }
    if theirs is None:
        out["note"] = (
            "no cycgraph checkout (set COGSTATS_CYCGRAPH or --cycgraph) or no node: "
            "cycgraph's TypeScript gate not run"
        )
    print(f"P2  cycgraph gate, {n_runs} runs x 2000 lessons (medians)")
    for rule, r in rules.items():
        print(
            f"  {rule:9s} new warm {r['new_warm_s']:.3f} s  cold {r['new_cold_s']:.3f} s  "
            f"cached {r['new_cached_s']:.4f} s | old {r['old_warm_s']:.2f} s  "
            f"({r['ratio_warm']:.0f}x)  identical decisions: {r['decisions_identical']}"
        )
        if "cycgraph_ts_s" in r:
            print(
                f"  {'':9s} cycgraph (TypeScript, node) {r['cycgraph_ts_s']:.1f} s "
                f"({r['ratio_cycgraph_ts_to_warm']:.0f}x warm)  identical decisions: "
                f"{r['same_as_cycgraph_ts']['identical']}"
            )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="20,000 runs")
    parser.add_argument("--cycgraph", help="cycgraph checkout (else $COGSTATS_CYCGRAPH)")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    out = run(quick=args.quick, cycgraph=args.cycgraph)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1, default=str))


if __name__ == "__main__":
    main()
