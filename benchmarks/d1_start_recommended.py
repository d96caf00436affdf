"""Benchmark D1: the recommended gate's first decision against cycgraph's.

Programs, each in a fresh Python process with an empty per-user cache
(``COGSTATS_CACHE_DIR`` a new folder each time, so only the boundaries shipped with
cogstats help), interleaved round by round so that the load of the shared machine hits
them alike:

- *fresh* (``cycgraph``, ``recommended``): import cogstats, build a
  200-run ledger (20 lessons, 4 a run, a difficulty proxy), build the gate by its
  registry name and evaluate it once;
- *restart* (``restart_<gate>``): ``StreamingGate.load`` a state saved beforehand with
  the same 200 runs, record one run and report: a service's first decision after a
  restart;
- ``recommended_uncached``: the recommended gate with the shipped table hidden (what
  every first decision cost before the cache: the boundaries of 100 looks solved
  afresh);
- ``recommended_warm``: the recommended (lifecycle) gate with its default design's
  boundaries also in the per-user cache (solved once beforehand): against
  ``recommended``, what the shipped table ``cogstats/estimators/spending_table.json``
  saves or not (both should read the boundaries, not solve them).

The figures are the medians over rounds of the paired ratios to cycgraph's program of
the same kind, in wall time and in CPU time (the child's user + system time, which the
other jobs of a shared machine inflate less); the goal is at most 1.5.

Run: ``.venv/bin/python -m benchmarks.d1_start_recommended [--quick]``.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

from benchmarks._common import cli, machine

TARGET_RATIO = 1.5

_PROGRAM = (
    "import numpy as np\n"
    "from cogstats import Ledger\n"
    "from cogstats.gates import make_gate\n"
    "rng = np.random.default_rng(0)\n"
    "ledger = Ledger.from_records([{'run_id': f'r{i}', 'score': float(rng.random()),"
    " 'fact_ids': [f'L{j}' for j in rng.choice(20, 4, replace=False)],"
    " 'difficulty_proxy': float(rng.random())} for i in range(200)])\n"
    "{hide}"
    "report = make_gate('{gate}').evaluate(ledger)\n"
    "assert report.to_frame().height == 20\n"
)
_HIDE = (
    "from cogstats.estimators import spending\n"
    "spending._TABLE = {}\n"  # as if no table were shipped
)
_RESTART = (
    "from cogstats.gates import StreamingGate\n"
    "sg = StreamingGate.load({path!r})\n"
    "sg.record('r-new', 0.5, ['L1', 'L2'], difficulty_proxy=0.5)\n"
    "assert sg.report().to_frame().height == 20\n"
)
GATES = ("cycgraph", "recommended")
PROGRAMS = {
    **{g: _PROGRAM.replace("{hide}", "").replace("{gate}", g) for g in GATES},
    "recommended_uncached": _PROGRAM.replace("{hide}", _HIDE).replace("{gate}", "recommended"),
}
#: programs run with a per-user cache filled beforehand (the others: an empty one)
WARM = {"recommended_warm": "recommended"}
PROGRAMS["recommended_warm"] = PROGRAMS["recommended"]
#: each program's reference: cycgraph's program of the same kind
REFERENCE = {
    **{g: "cycgraph" for g in PROGRAMS},
    **{f"restart_{g}": "restart_cycgraph" for g in GATES},
}


def _states(folder: str) -> dict[str, str]:
    """The restart programs: a state of the 200 runs saved for each gate."""
    import numpy as np

    from cogstats.gates import StreamingGate, make_gate

    rng = np.random.default_rng(0)
    runs = [
        (f"r{i}", float(rng.random()), [f"L{j}" for j in rng.choice(20, 4, replace=False)])
        for i in range(200)
    ]
    difficulty = rng.random(200)
    out = {}
    for g in GATES:
        sg = StreamingGate(make_gate(g))
        for (run_id, score, facts), d in zip(runs, difficulty, strict=True):
            sg.record(run_id, score, facts, difficulty_proxy=float(d))
        path = sg.save(os.path.join(folder, f"{g}.npz"))
        out[f"restart_{g}"] = _RESTART.replace("{path!r}", repr(str(path)))
    return out


def _run_once(code: str, cache: str | None = None) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one fresh process running ``code``."""
    env = {**os.environ, "COGSTATS_CACHE_DIR": cache or tempfile.mkdtemp()}
    before = os.times()
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, env=env)
    wall = time.perf_counter() - t
    after = os.times()
    cpu = (after.children_user - before.children_user) + (
        after.children_system - before.children_system
    )
    return wall, cpu


def _paired(samples: dict[str, list[float]]) -> dict[str, float]:
    return {
        k: statistics.median(a / b for a, b in zip(samples[k], samples[REFERENCE[k]], strict=True))
        for k in samples
        if REFERENCE[k] != k
    }


def run(quick: bool = False) -> dict[str, Any]:
    """Time the programs side by side; return the figures (and print a table)."""
    rounds = 3 if quick else 9
    with tempfile.TemporaryDirectory() as folder:
        programs = {**PROGRAMS, **_states(folder)}
        warm = os.path.join(folder, "warm-cache")
        _run_once(programs["recommended"])  # warm the file cache (.pyc, shared libraries)
        _run_once(programs["recommended"], warm)  # its boundaries into the user cache
        wall: dict[str, list[float]] = {k: [] for k in programs}
        cpu: dict[str, list[float]] = {k: [] for k in programs}
        for k in range(rounds):
            names = list(programs) if k % 2 == 0 else list(reversed(programs))
            for name in names:
                w, c = _run_once(programs[name], warm if name in WARM else None)
                wall[name].append(w)
                cpu[name].append(c)
    med = {k: statistics.median(v) for k, v in wall.items()}
    med_cpu = {k: statistics.median(v) for k, v in cpu.items()}
    paired, paired_cpu = _paired(wall), _paired(cpu)
    goals = [k for k in paired if k.removeprefix("restart_") == "recommended"]
    out = {
        "benchmark": "D1",
        "rounds": rounds,
        "median_wall_s": med,
        "median_cpu_s": med_cpu,
        "all_wall_s": wall,
        "all_cpu_s": cpu,
        "median_paired_ratio_to_cycgraph": paired,
        "median_paired_cpu_ratio_to_cycgraph": paired_cpu,
        "target_ratio": TARGET_RATIO,
        "meets_target": {k: paired[k] <= TARGET_RATIO for k in goals},
        "meets_target_cpu": {k: paired_cpu[k] <= TARGET_RATIO for k in goals},
        "machine": machine(),
    }
    print(f"D1  first decision in a fresh process, empty user cache ({rounds} rounds)")
    for name in wall:
        ratio = (
            ""
            if REFERENCE[name] == name
            else f"   {paired[name]:.2f}x ({paired_cpu[name]:.2f}x CPU) {REFERENCE[name]}"
        )
        print(f"  {name:26s} {med[name]:6.2f} s wall, {med_cpu[name]:5.2f} s CPU{ratio}")
    print(f"  goal <= {TARGET_RATIO}x: wall {out['meets_target']}, CPU {out['meets_target_cpu']}")
    return out


if __name__ == "__main__":
    cli(run, __doc__)
