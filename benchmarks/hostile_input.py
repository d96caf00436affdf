"""Benchmark H1: inputs a hostile or careless user hands over, at sizes that used to hang.

Two measurements, each side by side with a reference in the same run (ratios travel,
absolute times on a shared 2-core machine do not):

* ``wide``: a CSV ledger of three runs and a header of N covariate columns (N = 20,000,
  100,000 and, without ``--quick``, 1,000,000), read by ``Ledger.read``; the reference is
  ``polars.read_csv`` of the same file (no validation, C code).  Reading was quadratic
  in N (a ``list.count`` per column): 20,000 columns took 6.5 s, 100,000 took 354 s on
  the loaded 2-core machine.  The goal is linear: the time per column flat in N.
* ``grid``: ``load_sweep`` of a sweep spec whose grid has 10,000 cells (four axes of ten
  values: three gate options and a lesson's effect); the reference is one validation of
  the base scenario (``Scenario.from_dict``), so the ratio says how many scenario
  validations the load costs.  Every cell used to be validated on its own, twice
  (72 s in the issue; 62 s here before the change).

Run: ``.venv/bin/python -m benchmarks.hostile_input [--quick] [--json PATH]``.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._common import cli, machine

WIDE = (20_000, 100_000, 1_000_000)
GRID_TOML = """name = "grid-load"
runs = 50
replicates = 2
[[lessons.listed]]
id = "a"
effect = 0.1
[[lessons.listed]]
id = "b"
effect = -0.1
[gate]
type = "cycgraph"
min_trials = 2
[grid]
"gate.min_trials" = [2, 3, 4, 5, 6, 7, 8, 9, 10, 11]
"gate.evict_margin" = [0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08, 0.09, 0.1]
"gate.promote_margin" = [0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08, 0.09, 0.1]
"lessons.listed[0].effect" = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
"""


def _wide_file(folder: Path, n: int) -> Path:
    path = folder / f"wide_{n}.csv"
    header = "run_id,score,fact_ids," + ",".join(f"c{j}" for j in range(n))
    rows = [f"r{i},0.5,a b," + ",".join(str((i + j) % 7) for j in range(n)) for i in range(3)]
    path.write_text(header + "\n" + "\n".join(rows) + "\n", encoding="utf-8")
    return path


def _timed(fn: Any) -> tuple[float, Any]:
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def _wide(folder: Path, sizes: tuple[int, ...]) -> list[dict[str, Any]]:
    import polars as pl

    from cogstats import Ledger

    rows = []
    for n in sizes:
        path = _wide_file(folder, n)
        ref, frame = _timed(lambda path=path: pl.read_csv(path))
        ours, ledger = _timed(lambda path=path: Ledger.read(path))
        assert len(ledger.covariates) == n == frame.width - 3
        rows.append(
            {
                "columns": n,
                "ledger_read_s": round(ours, 3),
                "polars_read_csv_s": round(ref, 3),
                "ratio": round(ours / ref, 1),
                "us_per_column": round(ours / n * 1e6, 1),
            }
        )
        print(rows[-1], flush=True)
    return rows


def _grid(folder: Path) -> dict[str, Any]:
    from cogstats._toml import read_toml
    from cogstats.sim import Scenario
    from cogstats.sweep.spec import load_sweep

    path = folder / "grid.toml"
    path.write_text(GRID_TOML, encoding="utf-8")
    base = {k: v for k, v in read_toml(path).items() if k not in ("grid", "replicates")}
    one, _ = _timed(lambda: Scenario.from_dict(base))
    load, spec = _timed(lambda: load_sweep(path))
    assert spec.n_cells == 10_000
    out = {
        "cells": spec.n_cells,
        "load_s": round(load, 3),
        "one_validation_s": round(one, 5),
        "ratio": round(load / one, 1),
    }
    print(out, flush=True)
    return out


def run(quick: bool = False) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        wide = _wide(folder, WIDE[:2] if quick else WIDE)
        grid = _grid(folder)
    return {"machine": machine(), "wide": wide, "grid": grid}


if __name__ == "__main__":
    cli(run, __doc__)
