"""Executors: run sweep cells on local worker processes or on a Dask cluster.

Every executor runs the same function, :func:`run_cell`, on the same
:class:`~cogstats.sweep.spec.CellTask` objects, and a cell's numbers depend only on its
scenario, replicates and seed, so the executors give identical tables; only the order in
which cells finish differs (the store sorts by cell).

Worker processes are started once and reused for every cell: a fresh process pays
several seconds to import the package and load numba's compiled kernel from its disk
cache.  Local workers use the "spawn" start method (polars' thread pool deadlocks in a
forked child) and exit on their own when the parent process dies (``kill -9`` included),
so an interrupted sweep leaves no stray workers behind.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Protocol

from cogstats._validation import CogstatsError, ParameterError, check_int
from cogstats.sweep.spec import CellTask

__all__ = [
    "CellOutput",
    "DaskExecutor",
    "Executor",
    "LocalExecutor",
    "default_workers",
    "make_executor",
    "run_cell",
]


@dataclass(frozen=True)
class CellOutput:
    """What a worker sends back for one cell: the summary row and how long it took."""

    index: int
    key: str
    summary: dict[str, Any]
    elapsed_s: float
    worker: str


def run_cell(task: CellTask) -> CellOutput:
    """Simulate one cell and summarise it (:meth:`SimulationResult.summary_row`).

    Uses the compiled engine without the run-level frame (``keep_runs=False``; the
    summary does not depend on it).

    Examples
    --------
    >>> from cogstats.sweep import sweep_from_dict
    >>> spec = sweep_from_dict({"runs": 10, "replicates": 5, "seed": 1,
    ...                         "lessons": {"listed": [{"id": "a", "effect": 0.1}]}})
    >>> out = run_cell(spec.cells()[0])
    >>> out.index, out.summary["replicates"]
    (0, 5)
    """
    from cogstats.sim.engine import simulate

    start = time.perf_counter()
    result = simulate(
        task.scenario,
        replicates=task.replicates,
        rng=task.seed_sequence(),
        keep_runs=False,
        progress=False,
    )
    summary = result.summary_row()
    return CellOutput(
        index=task.index,
        key=task.key,
        summary=summary,
        elapsed_s=time.perf_counter() - start,
        worker=f"{socket.gethostname()}:{os.getpid()}",
    )


def default_workers() -> int:
    """Return the number of cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        return os.cpu_count() or 1


class Executor(Protocol):
    """Runs cells and yields their outputs as they finish (a context manager)."""

    name: str
    workers: int

    def __enter__(self) -> Executor:
        """Start the executor."""
        ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Stop the executor."""
        ...

    def run(self, tasks: Sequence[CellTask]) -> Iterator[CellOutput]:
        """Yield one :class:`CellOutput` per task, in the order they finish."""
        ...


# ---------------------------------------------------------------------- local
def _watch_parent(parent: int) -> None:
    while True:
        time.sleep(0.5)
        if os.getppid() != parent:
            os._exit(3)


def _init_worker(parent: int) -> None:
    """Pool initializer: exit when the parent dies (ProcessPoolExecutor workers do not)."""
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()


class LocalExecutor:
    """Cells spread over local worker processes (``workers=1``: in this process).

    Parameters
    ----------
    workers : int, optional
        Worker processes (default: the cores this process may use).  With one worker
        the cells run in the calling process, which saves starting a process.

    Examples
    --------
    >>> from cogstats.sweep import sweep_from_dict
    >>> spec = sweep_from_dict({"runs": 10, "replicates": 5, "seed": 1,
    ...                         "lessons": {"listed": [{"id": "a", "effect": 0.1}]},
    ...                         "grid": {"runs": [10, 12]}})
    >>> with LocalExecutor(workers=1) as ex:
    ...     sorted(out.index for out in ex.run(spec.cells()))
    [0, 1]
    """

    name = "local"

    def __init__(self, workers: int | None = None) -> None:
        self.workers = int(
            check_int("workers", default_workers() if workers is None else workers, minimum=1) or 1
        )
        self._pool: ProcessPoolExecutor | None = None

    def __enter__(self) -> LocalExecutor:
        """Return this executor (its process pool starts on the first run)."""
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Shut the process pool down."""
        if self._pool is not None:
            self._pool.shutdown(wait=exc_type is None, cancel_futures=True)
            self._pool = None

    def run(self, tasks: Sequence[CellTask]) -> Iterator[CellOutput]:
        """Yield each cell's output as it finishes."""
        n = min(self.workers, len(tasks))
        if n <= 1:
            for task in tasks:
                yield run_cell(task)
            return
        if self._pool is None:
            self._pool = ProcessPoolExecutor(
                max_workers=n,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_init_worker,
                initargs=(os.getpid(),),
            )
        pending: set[Future[CellOutput]] = {self._pool.submit(run_cell, t) for t in tasks}
        try:
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for fut in sorted(done, key=lambda f: f.result().index):
                    yield fut.result()
        finally:
            for fut in pending:
                fut.cancel()


# ---------------------------------------------------------------------- dask
class DaskExecutor:
    """Cells on a dask.distributed cluster: the one at ``scheduler``, else a LocalCluster.

    Parameters
    ----------
    scheduler : str, optional
        Address of a running scheduler (``tcp://host:8786``).  Its workers need cogstats
        installed.  Default: a LocalCluster on this machine.
    workers : int, optional
        Worker processes of the LocalCluster (one thread each; default: the cores this
        process may use).  Not allowed with ``scheduler``: the cluster has its own.

    Examples
    --------
    >>> from cogstats.sweep import sweep_from_dict
    >>> spec = sweep_from_dict({"runs": 10, "replicates": 5, "seed": 1,
    ...                         "lessons": {"listed": [{"id": "a", "effect": 0.1}]}})
    >>> ex = DaskExecutor(workers=1)
    >>> ex.name, ex.workers
    ('dask', 1)
    """

    name = "dask"

    def __init__(self, scheduler: str | None = None, workers: int | None = None) -> None:
        if scheduler is not None and (not isinstance(scheduler, str) or not scheduler):
            raise ParameterError(f"scheduler must be an address string; got {scheduler!r}")
        if scheduler is not None and workers is not None:
            raise ParameterError(
                "workers applies to the LocalCluster only; a cluster at a scheduler address "
                f"has its own workers (got workers={workers!r}, scheduler={scheduler!r})"
            )
        self.scheduler = scheduler
        self.workers = int(
            check_int("workers", default_workers() if workers is None else workers, minimum=1) or 1
        )
        self._client: Any = None
        self._cluster: Any = None

    def __enter__(self) -> DaskExecutor:
        """Start the Dask client (a local cluster unless a scheduler is given)."""
        try:
            from distributed import Client, LocalCluster
        except ImportError:  # pragma: no cover - dask is in the scale extra
            raise CogstatsError(
                "the dask executor needs dask[distributed]: pip install 'cogstats[scale]'"
            ) from None
        if self.scheduler is None:
            self._cluster = LocalCluster(
                n_workers=self.workers,
                threads_per_worker=1,
                processes=True,
                dashboard_address=None,
                silence_logs=logging.ERROR,
            )
            self._client = Client(self._cluster)
        else:
            self._client = Client(self.scheduler, timeout="30s")
            self.workers = max(1, len(self._client.scheduler_info().get("workers", {})))
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Close the client and any local cluster."""
        if self._client is not None:
            self._client.close()
            self._client = None
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None

    def run(self, tasks: Sequence[CellTask]) -> Iterator[CellOutput]:
        """Yield each cell's output as it finishes."""
        if self._client is None:
            raise CogstatsError("use the DaskExecutor as a context manager (with ...:)")
        from distributed import as_completed

        futures = self._client.map(run_cell, list(tasks), pure=False)
        try:
            for fut in as_completed(futures):
                out: CellOutput = fut.result()
                fut.release()
                yield out
        finally:
            self._client.cancel([f for f in futures if not f.done()])


def make_executor(
    executor: str = "local", *, workers: int | None = None, scheduler: str | None = None
) -> LocalExecutor | DaskExecutor:
    """Make the executor named ``executor`` ("local" or "dask")."""
    if executor == "local":
        if scheduler is not None:
            raise ParameterError(
                f"scheduler is for executor 'dask'; got scheduler={scheduler!r} with "
                "executor 'local'"
            )
        return LocalExecutor(workers)
    if executor == "dask":
        return DaskExecutor(scheduler, workers)
    raise ParameterError(f"executor must be one of ['dask', 'local']; got {executor!r}")
