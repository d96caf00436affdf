"""``cogstats demo``: the main job end to end: simulate, sweep, render the report.

1. simulate benchmark S2 (simulations/poison_crater.toml: co-injected candidates, run
   difficulty, three poisons) under cycgraph's recorded gate, and the recorded demo's
   scenario, writing the frames as Parquet;
2. sweep the gate's thresholds on S2 (simulations/threshold_sweep.toml; the CI-sized
   threshold_sweep_ci.toml with ``--quick``) into a resumable store and print the setting
   that evicts poison fastest with recall >= 0.99 and false eviction <= 2% (benchmark
   S2's goals), or the closest one when none meets them;
3. render the report notebooks (papermill, offline HTML with inline SVG charts; two
   kernels at a time) with the trade-off report reading that sweep, printing one line
   when each report starts and one with its time when it ends, and write ``index.html``.
   ``--quick`` renders :data:`QUICK_REPORTS` at their CI parameters (the index lists the
   others with the command that renders each); each phase prints its wall time and the
   CPU time of the process and its children (the report kernels).

The specs come from the checkout's ``simulations/`` folder, or the installed copy
(:func:`cogstats.reports.resource_root`), so the demo runs outside a checkout too.
"""

from __future__ import annotations

import time
from pathlib import Path

from cogstats._results import frame_text

__all__ = ["QUICK_REPORTS", "run_demo"]


#: the reports ``cogstats demo --quick`` renders (the one-minute version): from a ledger to
#: decisions, the recorded demo replayed, the trade-offs of the sweep it just ran; the
#: others are listed on the index page with the command that renders them
QUICK_REPORTS = ("quickstart", "ledger_audit", "poison_replay", "tradeoffs")


def _say(message: str) -> None:
    print(message, flush=True)


def _clock() -> tuple[float, float, float]:
    """Wall time, and the user and system CPU seconds of this process and its children."""
    import resource

    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.perf_counter(), me.ru_utime + kids.ru_utime, me.ru_stime + kids.ru_stime


def _took(since: tuple[float, float, float]) -> str:
    """``"12 s (CPU: user 20 s, sys 1 s)"`` since a :func:`_clock` reading."""
    now = _clock()
    wall, user, system = (b - a for a, b in zip(since, now, strict=True))
    return f"{wall:.0f} s (CPU: user {user:.0f} s, sys {system:.0f} s)"


def run_demo(out: Path, *, quick: bool = False) -> int:
    """Run the demo into ``out``; returns the process exit status (0).

    Examples
    --------
    The full run takes a few minutes; ``quick=True`` uses CI-sized parameters::

        run_demo(Path("reports/demo"), quick=True)
    """
    from cogstats.reports import render_demo_report, resource_root
    from cogstats.sim import load_spec, simulate
    from cogstats.sweep import recommend, sweep_spec

    simulations = resource_root() / "simulations"
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    started = phase = _clock()

    _say("1/3 simulate: S2 poison crater and the recorded demo's scenario")
    for name in ("poison_crater", "cycgraph_demo"):
        spec = load_spec(simulations / f"{name}.toml")
        reps = min(spec.replicates, 100) if quick else spec.replicates
        result = simulate(spec.scenario, replicates=reps, rng=spec.seed)
        result.write(out / "simulate" / name)
        _say(result.summary())
    _say(f"simulated in {_took(phase)}")

    _say("\n2/3 sweep: gate thresholds on S2 (resumable store)")
    phase = _clock()
    sweep_file = simulations / ("threshold_sweep_ci.toml" if quick else "threshold_sweep.toml")
    sweep_dir = out / "sweep" / sweep_file.stem
    sweep = sweep_spec(sweep_file, out=sweep_dir, progress=None)
    table = sweep.table
    _say(f"{table.height} cells in {sweep_dir}")
    # the S2 goals: poison recall >= 0.99 and false eviction <= 2%, fastest poison eviction
    rec = recommend(
        table,
        constraint=["poison_recall >= 0.99", "false_eviction_rate <= 0.02"],
        objective="poison_time_to_eviction",
    )
    _say(str(rec))
    shown = [c for c in table.columns if c.startswith(("gate.", "retrieval."))]
    shown += ["poison_recall", "false_eviction_rate", "poison_time_to_eviction"]
    _say(frame_text(table.select(shown).sort("false_eviction_rate"), max_rows=12))
    _say(f"swept in {_took(phase)}")

    _say("\n3/3 report: papermill notebooks -> offline HTML")
    phase = _clock()
    names = QUICK_REPORTS if quick else None
    sweep_reports = ("tradeoffs", "threshold_explorer")
    index = render_demo_report(
        out / "report",
        quick=quick,
        reports=names,
        parameters={
            n: {"sweep_path": str(sweep_dir.resolve())}
            for n in sweep_reports
            if names is None or n in names
        },
        workers=2,
        progress=_say,
    )
    _say(f"reports rendered in {_took(phase)}")
    _say(f"report: {index}")
    _say(f"done in {_took(started)}")
    return 0
