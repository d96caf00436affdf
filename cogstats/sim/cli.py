"""``cogstats simulate SPEC.toml``: run a spec's cells and print a summary table."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from cogstats._results import CLI_TABLE_WIDTH, frame_text
from cogstats.sim.engine import seed_record, simulate
from cogstats.sim.result import SimulationResult
from cogstats.sim.spec import SimulationSpec, load_spec

__all__ = ["cell_row", "run_simulate", "simulate_spec"]

#: the metrics shown in the printed table (every metric is in the Parquet output)
SHOWN = (
    "poison_recall",
    "false_eviction_rate",
    "false_promotion_rate",
    "time_to_verdict",
    "fitness_mean",
    "regret",
)


def cell_row(values: dict[str, Any], result: SimulationResult) -> dict[str, Any]:
    """One summary row of a cell: its grid values, then :meth:`SimulationResult.summary_row`."""
    return {**values, **result.summary_row()}


def simulate_spec(
    spec: SimulationSpec,
    *,
    replicates: int | None = None,
    seed: int | None = None,
    out: Path | None = None,
    engine: str = "auto",
    progress: bool | None = None,
) -> pl.DataFrame:
    """Run every cell of a spec (cell i uses child i of the root SeedSequence).

    Returns one row per cell (see :func:`cell_row`; ``engine`` says which engine ran it);
    with ``out``, each cell's frames go to ``out/cell-NNN/`` as Parquet and the table to
    ``out/cells.parquet``.
    """
    reps = spec.replicates if replicates is None else replicates
    root = np.random.SeedSequence(spec.seed if seed is None else seed)
    cells = spec.cells()
    children = root.spawn(len(cells))
    rows = []
    for i, ((values, scenario), child) in enumerate(zip(cells, children, strict=True)):
        result = simulate(
            scenario,
            replicates=reps,
            rng=child,
            engine=engine,
            keep_runs=out is not None and reps * scenario.runs <= 2_000_000,
            progress=progress,
        )
        row = {"cell": i, **cell_row(values, result), "seed": json.dumps(seed_record(child))}
        rows.append(row)
        if out is not None:
            result.write(out / f"cell-{i:03d}")
    table = pl.DataFrame(rows)
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        table.write_parquet(out / "cells.parquet")
    return table


def run_simulate(args: argparse.Namespace) -> int:
    """The CLI subcommand."""
    spec = load_spec(args.spec)
    out = Path(args.out) if args.out else None
    table = simulate_spec(
        spec,
        replicates=args.replicates,
        seed=args.seed,
        out=out,
        engine=args.engine,
        progress=False if args.no_progress else None,
    )
    grid_cols = [c for c in table.columns if c in spec.grid]
    shown = ["cell", *grid_cols, "replicates", "engine"]
    shown += [c for c in SHOWN if c in table.columns]
    shown += ["promote_rate", "evict_harmful_rate", "evict_no_lift_rate", "hold_rate"]
    seed = spec.seed if args.seed is None else args.seed
    print(f"{spec.scenario.name}: {len(table)} cell(s), seed {seed}")
    print(frame_text(table.select(shown), max_rows=200, width=CLI_TABLE_WIDTH))
    if out is not None:
        print(f"frames written under {out}")
    return 0
