"""``cogstats admission SPEC``: the admission experiment from the command line.

``add_parser(subparsers)`` adds the subcommand to cogstats' parser and ``run(args)``
runs it, so that ``cogstats/cli.py`` only registers it.  Writes ``defences.parquet``
(one row per defence and index) and ``admission_roc.parquet`` (the threshold sweep)
under ``--out``, with the per-replicate tables beside them; ``--monitor`` adds the recall
monitor's experiment (``monitor.parquet``, ``monitor_paths.parquet``).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from cogstats._cli_options import INT
from cogstats._results import frame_text
from cogstats._validation import CogstatsError

__all__ = ["HELP", "add_arguments", "add_parser", "run"]


HELP = (
    "write-path admission against read filtering in a simulated shared vector memory "
    "(faiss HNSW and IVF)"
)


def add_arguments(p: argparse.ArgumentParser, gate: str | None = None) -> None:
    """Add the ``admission`` subcommand's arguments to ``p``.

    ``gate`` is unused: it is in the signature of every entry of
    :data:`cogstats.cli.SUBCOMMANDS`.

    Examples
    --------
    >>> import argparse
    >>> p = argparse.ArgumentParser(prog="cogstats admission")
    >>> add_arguments(p)
    >>> p.parse_args(["spec.toml", "--replicates", "3"]).replicates
    3
    """
    p.add_argument("spec", help="admission spec (simulations/write_path_admission.toml)")
    p.add_argument("--replicates", type=INT, help="independent worlds (default: the spec's)")
    p.add_argument("--seed", type=INT, help="root seed (default: the spec's)")
    p.add_argument(
        "--out", help="directory for defences.parquet, admission_roc.parquet and the rest"
    )
    p.add_argument(
        "--monitor", action="store_true", help="also run the recall monitor's experiment"
    )
    p.add_argument("--monitor-replicates", type=INT, help="default: the spec's [monitor]")
    p.add_argument("--threads", type=INT, default=1, help="faiss threads (default 1)")
    p.add_argument("--no-progress", action="store_true")


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``admission`` to an ``argparse`` subparsers object; returns its parser.

    Examples
    --------
    >>> import argparse
    >>> sub = argparse.ArgumentParser(prog="cogstats").add_subparsers(dest="command")
    >>> add_parser(sub).parse_args(["spec.toml", "--replicates", "3"]).replicates
    3
    """
    p: argparse.ArgumentParser = subparsers.add_parser("admission", help=HELP)
    add_arguments(p)
    p.set_defaults(func=run)
    return p


def run(args: argparse.Namespace) -> int:
    """Run the subcommand; print the tables; write them under ``--out``.

    Returns the exit status (0); invalid input raises a :class:`CogstatsError`, which
    ``cogstats.cli.main`` turns into status 2 and a one-line message.

    Examples
    --------
    >>> from cogstats.cli import main
    >>> main(["admission", "no-such-spec.toml"])  # the message goes to stderr
    2
    """
    from cogstats.admission.run import run_admission, run_monitor
    from cogstats.admission.spec import load_admission_spec

    spec = load_admission_spec(args.spec)
    for flag in ("replicates", "monitor_replicates", "threads"):
        value = getattr(args, flag)
        if value is not None and value < 1:
            raise CogstatsError(f"--{flag.replace('_', '-')} must be >= 1; got {value}")
    if args.seed is not None and args.seed < 0:
        raise CogstatsError(f"--seed must be >= 0; got {args.seed}")
    progress = False if args.no_progress else None
    seed = spec.seed if args.seed is None else args.seed
    result = run_admission(
        spec, replicates=args.replicates, rng=seed, progress=progress, threads=args.threads
    )
    print(result.summary())
    print("admission thresholds (each swept with the others at their defaults):")
    print(frame_text(result.roc.drop("replicates"), max_rows=100))
    out = Path(args.out) if args.out else None
    if out is not None:
        result.write(out)
    if args.monitor:
        monitor = run_monitor(
            spec,
            replicates=args.monitor_replicates,
            rng=seed,
            progress=progress,
            threads=args.threads,
        )
        print(monitor.summary())
        if out is not None:
            monitor.write(out)
    if out is not None:
        names = sorted(p.name for p in out.glob("*.parquet"))
        print(f"written under {out}: {', '.join(names)}")
    return 0
