"""``cogstats simulate SPEC.toml``: run a spec's cells and print a summary table.

After the table: the lessons as the spec defines them, each kind with where it came from,
and the kind rule (:mod:`cogstats.sim.spec_notes`).
"""

from __future__ import annotations

import argparse
import json
import os
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from cogstats._results import CLI_TABLE_WIDTH, frame_text
from cogstats._validation import ParameterError
from cogstats.sim.engine import fast_support, seed_record, simulate
from cogstats.sim.result import SimulationResult
from cogstats.sim.spec import SimulationSpec, load_spec
from cogstats.sim.spec_notes import KIND_RULE, lesson_table

__all__ = ["cell_row", "default_workers", "run_simulate", "simulate_spec"]

#: the metrics shown in the printed table (every metric is in the Parquet output)
SHOWN = (
    "poison_recall",
    "false_eviction_rate",
    "false_promotion_rate",
    "time_to_verdict",
    "fitness_mean",
    "regret",
)


#: what the agent experienced, shown first for a gate that suspends lessons (the
#: recommended preset): a suspended lesson is out of the prompt without a conviction, so
#: poison_recall, time_to_verdict and hold_rate (which count convictions) understate it
AGENT_METRICS = (
    "regret",
    "poison_exposure",
    "poison_out_last5",
    "helpful_lost_rate",
    "false_conviction_rate",
    "genuine_suspended_runs",
    "fitness_mean",
)
#: the line under the table of a gate that suspends
AGENT_NOTE = (
    "the gate suspends lessons (out of the prompt, re-tested, not convicted), so the "
    "agent's metrics come first: regret (oracle score minus score, per run), "
    "poison_exposure (runs from a poison's arrival to its last injection), "
    "poison_out_last5 (share of poisons not injected in the last 5 runs), "
    "helpful_lost_rate (lessons of effect >= 0.05 retired, evicted or still suspended; "
    "NaN without such lessons), false_conviction_rate (lessons of effect >= 0 evicted as "
    "harmful); poison_recall counts convictions only; every metric is in cells.parquet "
    "(--out)"
)


def _suspends(spec: SimulationSpec) -> bool:
    """Whether the spec's gate can suspend a lesson (the lesson lifecycle gate)."""
    from cogstats.gates import GATES
    from cogstats.gates.recommended import LifecycleGate

    name = spec.scenario.gate.type
    try:
        cls = GATES.lookup(name).cls
    except (ParameterError, ValueError, TypeError):
        return False
    return isinstance(cls, type) and issubclass(cls, LifecycleGate)


def cell_row(values: dict[str, Any], result: SimulationResult) -> dict[str, Any]:
    """One summary row of a cell: its grid values, then :meth:`SimulationResult.summary_row`."""
    return {**values, **result.summary_row()}


#: the line above the lesson table printed after the cells
LESSONS_HEADING = "the lessons as the spec defines them (a grid cell may change them)"

#: gated runs (cells x replicates x runs) from which a spec's cells run on every core
PARALLEL_MIN_RUNS = 200_000


def default_workers(spec: SimulationSpec, replicates: int) -> int:
    """Threads for a spec's cells: every core for large grids, one for small ones.

    Cells run in threads of this process, not in worker processes: the compiled kernel
    releases the GIL (numba ``nogil``), and so do the uniform draws (numpy) and most of
    the summary (polars), while a worker process costs about 5 s to start (imports and
    loading numba's compiled kernel from its cache), more than a whole S1 grid takes.
    """
    cells = spec.cells()
    work = sum(sc.runs for _, sc in cells) * replicates
    if len(cells) < 2 or work < PARALLEL_MIN_RUNS:
        return 1
    return max(1, min(len(cells), os.cpu_count() or 1))


def simulate_spec(
    spec: SimulationSpec,
    *,
    replicates: int | None = None,
    seed: int | None = None,
    out: Path | None = None,
    engine: str = "auto",
    progress: bool | None = None,
    workers: int | None = None,
) -> pl.DataFrame:
    """Run every cell of a spec (cell i uses child i of the root SeedSequence).

    Returns one row per cell (see :func:`cell_row`; ``engine`` says which engine ran it);
    with ``out``, each cell's frames go to ``out/cell-NNN/`` as Parquet and the table to
    ``out/cells.parquet``.  ``workers`` threads run the cells side by side (default
    :func:`default_workers`); the table does not depend on it.
    """
    reps = spec.replicates if replicates is None else replicates
    root = np.random.SeedSequence(spec.seed if seed is None else seed)
    cells = spec.cells()
    children = root.spawn(len(cells))
    n_workers = default_workers(spec, reps) if workers is None else workers
    if n_workers < 1:
        raise ParameterError(f"workers must be >= 1; got {workers!r}")
    if engine == "reference" or (
        engine == "auto" and any(fast_support(sc) is not None for _, sc in cells)
    ):
        n_workers = 1  # the reference engine is plain Python: threads would not help

    def one(i: int) -> dict[str, Any]:
        (values, scenario), child = cells[i], children[i]
        result = simulate(
            scenario,
            replicates=reps,
            rng=child,
            engine=engine,
            keep_runs=out is not None and reps * scenario.runs <= 2_000_000,
            progress=progress if n_workers == 1 else False,
        )
        if out is not None:
            result.write(out / f"cell-{i:03d}")
        return {"cell": i, **cell_row(values, result), "seed": json.dumps(seed_record(child))}

    if n_workers == 1:
        rows = [one(i) for i in range(len(cells))]
    else:
        # while one thread loads the compiled kernel from numba's cache (numba's lock makes
        # the others wait for it), the others draw their cells' random numbers
        with ThreadPoolExecutor(max_workers=n_workers) as pool:
            rows = list(pool.map(one, range(len(cells))))
    table = pl.DataFrame(rows)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        table.write_parquet(out / "cells.parquet")
    return table


def run_simulate(args: argparse.Namespace) -> int:
    """Run the CLI subcommand."""
    spec = load_spec(args.spec, preset=getattr(args, "policy", None))
    out = Path(args.out) if args.out else None
    table = simulate_spec(
        spec,
        replicates=args.replicates,
        seed=args.seed,
        out=out,
        engine=args.engine,
        progress=False if args.no_progress else None,
        workers=getattr(args, "workers", None),
    )
    grid_cols = [c for c in table.columns if c in spec.grid]
    shown = ["cell", *grid_cols, "replicates", "engine"]
    suspends = _suspends(spec)
    if suspends:
        shown += [c for c in (*AGENT_METRICS, "false_eviction_rate") if c in table.columns]
        shown += ["poison_recall", "evict_harmful_rate", "evict_no_lift_rate"]
    else:
        shown += [c for c in SHOWN if c in table.columns]
        shown += ["promote_rate", "evict_harmful_rate", "evict_no_lift_rate", "hold_rate"]
    seed = spec.seed if args.seed is None else args.seed
    print(f"{spec.scenario.name}: {len(table)} cell(s), seed {seed}")
    print(frame_text(table.select(shown), max_rows=200, width=CLI_TABLE_WIDTH))
    if suspends:
        print(textwrap.fill(AGENT_NOTE, width=min(CLI_TABLE_WIDTH, 100)))
    print(f"{spec.scenario.name}: {LESSONS_HEADING}")
    print(frame_text(lesson_table(spec.scenario), max_rows=20, width=CLI_TABLE_WIDTH))
    print(textwrap.fill(KIND_RULE, width=min(CLI_TABLE_WIDTH, 100)))
    if out is not None:
        print(f"frames written under {out}")
    return 0
