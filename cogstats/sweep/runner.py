"""Run a sweep into a resumable store, and re-run any single cell from a store."""

from __future__ import annotations

import html
import json
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from cogstats._progress import progress_bar
from cogstats._results import frame_text
from cogstats._validation import ParameterError, check_int
from cogstats.sweep.executors import make_executor
from cogstats.sweep.spec import CellTask, SweepSpec, check_overrides, load_sweep, spec_from_resolved
from cogstats.sweep.store import SweepStore, make_manifest, read_manifest

if TYPE_CHECKING:
    from cogstats.sim.result import SimulationResult

__all__ = ["SMALL_SWEEP_RUNS", "SweepResult", "rerun_cell", "sweep_spec"]

#: below this many simulated runs in all, the local executor's default is one worker (this
#: process): starting a worker process costs about as much CPU as this much simulation
#: (a package import and numba's cache load, about 10 s per process on this machine)
SMALL_SWEEP_RUNS = 1_000_000

#: metrics shown by :meth:`SweepResult.summary` (the table has them all)
SHOWN = (
    "poison_recall",
    "false_eviction_rate",
    "false_promotion_rate",
    "time_to_verdict",
    "fitness_from_poison",
    "regret",
)


@dataclass(frozen=True, repr=False, eq=False)
class SweepResult:
    """A sweep run: its cell table and where it is stored.

    Attributes
    ----------
    table : polars.DataFrame
        One row per cell, sorted by cell (see :func:`~cogstats.sweep.read_sweep`).
    directory : Path
        The store.
    manifest : mapping
        The store's manifest (spec, seed, replicates, versions, git commit).
    ran, skipped : int
        Cells run now, and cells found finished in the store and skipped.
    elapsed_s : float
        Wall-clock seconds of this call.
    executor : str
        "local" or "dask", with ``workers`` worker processes.
    """

    table: pl.DataFrame
    directory: Path
    manifest: Mapping[str, Any]
    ran: int
    skipped: int
    elapsed_s: float
    executor: str
    workers: int
    settings: Mapping[str, Any] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        """Whether every cell of the sweep is in the table."""
        return self.table.height == int(self.manifest["n_cells"])

    def to_frame(self) -> pl.DataFrame:
        """Return the cell table."""
        return self.table

    def axes(self) -> list[str]:
        """Return the grid columns."""
        return list(self.manifest["axes"])

    def summary(self) -> str:
        """Return a text report: counts, seed, and the main metrics per cell."""
        m = self.manifest
        head = (
            f"Sweep {m['name']!r}: {self.table.height}/{m['n_cells']} cells x "
            f"{m['replicates']} replicates, seed {m['seed']}, in {self.directory} "
            f"({self.ran} run now, {self.skipped} already done; {self.executor} executor, "
            f"{self.workers} worker(s), {self.elapsed_s:.1f} s)"
        )
        shown = ["cell", *self.axes()] + [c for c in SHOWN if c in self.table.columns]
        return f"{head}\n{frame_text(self.table.select(shown), max_rows=60)}"

    def __repr__(self) -> str:
        """Return a short text form."""
        return (
            f"SweepResult(name={self.manifest['name']!r}, cells={self.table.height}/"
            f"{self.manifest['n_cells']}, directory={str(self.directory)!r})"
        )

    def _repr_html_(self) -> str:
        shown = ["cell", *self.axes()] + [c for c in SHOWN if c in self.table.columns]
        with pl.Config(float_precision=4, tbl_rows=60):
            table = self.table.select(shown)._repr_html_()
        return f"<div><strong>{html.escape(repr(self))}</strong>{table}</div>"


def sweep_spec(
    spec: SweepSpec | str | Path,
    *,
    out: str | Path | None = None,
    replicates: int | None = None,
    seed: int | None = None,
    executor: str = "local",
    scheduler: str | None = None,
    workers: int | None = None,
    progress: bool | None = None,
) -> SweepResult:
    """Run every cell of a sweep that the store does not hold yet, then read the table.

    Parameters
    ----------
    spec : SweepSpec, str or Path
        The sweep (a file is read with :func:`~cogstats.sweep.load_sweep`; every cell is
        validated before anything runs).
    out : str or Path, optional
        The store folder (default ``sweeps/<spec stem>``).  Re-running with the same
        ``out`` resumes: finished cells are skipped.  A folder holding another sweep
        (spec, seed or replicates differ) is refused before anything runs.
    replicates, seed : int, optional
        Override the spec's replicates per cell and root seed.  Cell ``i`` uses child
        ``i`` of ``numpy.random.SeedSequence(seed)``, as ``cogstats simulate`` does.
    executor : {"local", "dask"}
        Local worker processes, or a dask.distributed cluster.
    scheduler : str, optional
        Dask scheduler address (default: a LocalCluster).  Dask only.
    workers : int, optional
        Worker processes (local, or the LocalCluster's); default: the cores available,
        except that a local sweep of fewer than :data:`SMALL_SWEEP_RUNS` simulated runs
        (replicates x runs over the cells left to run) runs in this process, since
        starting a worker costs more than that much simulation.
    progress : bool, optional
        Progress bar over cells with an estimate of the time left (default: when stderr
        is a terminal).

    Returns
    -------
    SweepResult
        The table does not depend on ``executor``, ``workers`` or interruptions (checked
        by the tests: local vs Dask, and a run killed with SIGKILL then resumed, against
        an uninterrupted run).

    Examples
    --------
    >>> import tempfile
    >>> from cogstats.sweep import sweep_from_dict
    >>> spec = sweep_from_dict({
    ...     "runs": 12, "replicates": 20, "seed": 3,
    ...     "lessons": {"listed": [{"id": "bad", "effect": -0.3, "kind": "poison"}]},
    ...     "gate": {"decision_rule": "margin", "evict_margin": 0.05},
    ...     "grid": {"gate.min_trials": [2, 4]},
    ... })
    >>> d = tempfile.mkdtemp()
    >>> first = sweep_spec(spec, out=d, workers=1, progress=False)
    >>> first.ran, first.skipped, first.complete
    (2, 0, True)
    >>> again = sweep_spec(spec, out=d, workers=1, progress=False)
    >>> again.ran, again.skipped, again.table.equals(first.table)
    (0, 2, True)
    """
    started = time.perf_counter()
    if not isinstance(spec, SweepSpec):
        spec = load_sweep(spec)
    reps, root = check_overrides(spec, replicates, seed)
    directory = Path(out) if out is not None else spec.default_out()
    runner = make_executor(executor, workers=workers, scheduler=scheduler)
    manifest = make_manifest(spec, replicates=reps, seed=root)
    store = SweepStore.open(directory, manifest)
    tasks = spec.cells(replicates=reps, seed=root)
    done = store.done()
    todo = [t for t in tasks if t.index not in done]
    if executor == "local" and workers is None and _gated_runs(todo) < SMALL_SWEEP_RUNS:
        runner = make_executor("local", workers=1)
    by_index = {t.index: t for t in tasks}
    ran = 0
    status = "complete"
    if todo:
        store.log(
            event="start",
            argv=sys.argv,
            executor=runner.name,
            workers=runner.workers,
            scheduler=scheduler,
            cells=len(tasks),
            done_before=len(done),
            versions=manifest["versions"],
            git=manifest["git"],
        )
        bar = progress_bar(
            progress,
            total=len(tasks),
            initial=len(done),
            unit="cell",
            desc=spec.name,
            leave=True,
        )
        try:
            with runner:
                for output in runner.run(todo):
                    store.write_cell(
                        by_index[output.index],
                        output.summary,
                        elapsed_s=output.elapsed_s,
                        worker=output.worker,
                    )
                    ran += 1
                    if bar is not None:
                        bar.update(1)
        except BaseException:
            status = "interrupted"
            raise
        finally:
            if bar is not None:
                bar.close()
            store.log(event="end", status=status, ran=ran, elapsed_s=time.perf_counter() - started)
    return SweepResult(
        table=store.read(),
        directory=directory,
        manifest=store.manifest,
        ran=ran,
        skipped=len(done),
        elapsed_s=time.perf_counter() - started,
        executor=runner.name,
        workers=runner.workers,
        settings={
            "replicates": reps,
            "seed": root,
            "executor": executor,
            "scheduler": scheduler,
            "workers": runner.workers,
        },
    )


def _gated_runs(tasks: Sequence[CellTask]) -> int:
    return sum(t.replicates * t.scenario.runs for t in tasks)


def rerun_cell(
    directory: str | Path, cell: int, *, keep_runs: bool = True, engine: str = "auto"
) -> SimulationResult:
    """Simulate one cell of a stored sweep again, alone, from the seed in its row.

    Parameters
    ----------
    directory : str or Path
        The sweep store.
    cell : int
        The cell index.
    keep_runs : bool
        Keep the run-level frame (for ledgers of single replicates).
    engine : {"auto", "fast", "reference"}
        Simulation engine (see :func:`~cogstats.sim.simulate`; the reference engine
        cross-checks the compiled one).

    Returns
    -------
    SimulationResult
        With every frame; its ``summary_row()`` equals the cell's stored row.

    Examples
    --------
    >>> import tempfile
    >>> from cogstats.sweep import read_sweep, sweep_from_dict, sweep_spec
    >>> spec = sweep_from_dict({
    ...     "runs": 12, "replicates": 10, "seed": 3,
    ...     "lessons": {"listed": [{"id": "a", "effect": 0.1}]},
    ...     "grid": {"gate.min_trials": [2, 4]},
    ... })
    >>> d = tempfile.mkdtemp()
    >>> _ = sweep_spec(spec, out=d, workers=1, progress=False)
    >>> again = rerun_cell(d, 1)
    >>> again.summary_row()["regret"] == read_sweep(d)["regret"][1]
    True
    """
    from cogstats.sim.engine import simulate

    directory = Path(directory)
    manifest = read_manifest(directory)
    n = int(manifest["n_cells"])
    cell = int(check_int("cell", cell, minimum=0, maximum=n - 1) or 0)
    spec = spec_from_resolved(
        manifest["spec"],
        replicates=int(manifest["replicates"]),
        seed=int(manifest["seed"]),
        source=str(directory / "manifest.json"),
    )
    task = spec.cells()[cell]
    if task.key != manifest["cell_keys"][cell]:
        raise ParameterError(
            f"cell {cell} of the rebuilt spec has key {task.key}, the manifest "
            f"{manifest['cell_keys'][cell]}: the installed cogstats resolves the spec "
            "differently"
        )
    store = SweepStore(directory, manifest)
    table = store.read()
    row = table.filter(pl.col("cell") == cell)
    if row.height == 1:
        rec = json.loads(row["seed"][0])
        seed_seq = np.random.SeedSequence(entropy=rec["entropy"], spawn_key=tuple(rec["spawn_key"]))
    else:  # not run yet: the seed it will get
        seed_seq = task.seed_sequence()
    return simulate(
        task.scenario,
        replicates=task.replicates,
        rng=seed_seq,
        engine=engine,
        keep_runs=keep_runs,
        progress=False,
    )
