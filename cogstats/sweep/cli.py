"""``cogstats sweep SPEC.toml``: run a sweep into a resumable store and print its table."""

from __future__ import annotations

import argparse
from pathlib import Path

from cogstats._results import CLI_TABLE_WIDTH, frame_text
from cogstats.sweep.runner import SHOWN, sweep_spec
from cogstats.sweep.spec import load_sweep

__all__ = ["run_sweep"]


def run_sweep(args: argparse.Namespace) -> int:
    r"""Run the ``sweep`` CLI subcommand.

    ``args`` has spec, replicates, seed, out, executor, scheduler, workers and
    no_progress (see :func:`cogstats.cli.build_parser`).

    The spec is loaded and every cell validated before anything runs; a store folder
    that holds another sweep is refused (exit status 2 through :func:`cogstats.cli.main`).

    Examples
    --------
    >>> import argparse, tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "s.toml").write_text(
    ...     'runs = 10\nreplicates = 5\nseed = 2\n[[lessons.listed]]\nid = "a"\n'
    ...     'effect = 0.1\n[grid]\n"gate.min_trials" = [2, 3]\n')
    >>> args = argparse.Namespace(spec=str(d / "s.toml"), replicates=None, seed=None,
    ...     out=str(d / "out"), executor="local", scheduler=None, workers=1, no_progress=True)
    >>> run_sweep(args)  # doctest: +ELLIPSIS
    scenario: 2/2 cells x 5 replicates, seed 2 (2 run now, 0 already done) ...
    0
    """
    spec = load_sweep(args.spec, preset=getattr(args, "policy", None))
    result = sweep_spec(
        spec,
        out=Path(args.out) if args.out else None,
        replicates=args.replicates,
        seed=args.seed,
        executor=args.executor,
        scheduler=args.scheduler,
        workers=args.workers,
        progress=False if args.no_progress else None,
    )
    m = result.manifest
    print(
        f"{m['name']}: {result.table.height}/{m['n_cells']} cells x {m['replicates']} "
        f"replicates, seed {m['seed']} ({result.ran} run now, {result.skipped} already done) "
        f"in {result.elapsed_s:.1f} s; store {result.directory}"
    )
    shown = ["cell", *result.axes(), "replicates"]
    shown += [c for c in SHOWN if c in result.table.columns]
    print(frame_text(result.table.select(shown), max_rows=200, width=CLI_TABLE_WIDTH))
    return 0
