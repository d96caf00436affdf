"""The ``cogstats`` command line: gate, attribute, simulate, sweep, demo.

Every subcommand validates its input at the door and exits with status 2 and a one-line
message on bad input (a malformed ledger row names its row and field).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import polars as pl

from cogstats._validation import CogstatsError

__all__ = ["main"]


def _policy_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("cycgraph policy (defaults are cycgraph's)")
    g.add_argument("--rule", dest="decision_rule", choices=["inference", "margin"])
    g.add_argument("--min-trials", type=int)
    g.add_argument("--promote-margin", type=float)
    g.add_argument("--evict-margin", type=float)
    g.add_argument("--max-trials", type=int)
    g.add_argument("--max-baseline-runs", type=int)
    g.add_argument("--promote-confidence", type=float)
    g.add_argument("--evict-confidence", type=float)
    g.add_argument("--noise-floor-sd", type=float)
    g.add_argument("--multiple-comparison", choices=["bh", "none"])
    g.add_argument("--sequential-control", choices=["doubling", "none"])


_POLICY_FIELDS = (
    "decision_rule",
    "min_trials",
    "promote_margin",
    "evict_margin",
    "max_trials",
    "max_baseline_runs",
    "promote_confidence",
    "evict_confidence",
    "noise_floor_sd",
    "multiple_comparison",
    "sequential_control",
)


def _emit(frame: pl.DataFrame, fmt: str, title: str | None = None) -> None:
    if fmt == "csv":
        sys.stdout.write(frame.write_csv())
    elif fmt == "json":
        sys.stdout.write(json.dumps(frame.to_dicts(), indent=1, default=str) + "\n")
    else:
        from cogstats._results import frame_text

        if title:
            print(title)
        print(frame_text(frame, max_rows=200))


def _read_candidates(spec: str) -> list[str] | None:
    if spec == "all":
        return None
    path = Path(spec)
    if not path.exists():
        raise CogstatsError(f"--candidates: file not found: {spec} (or pass 'all')")
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            out.append(line)
    return out


def _assignments(items: list[str] | None, flag: str) -> dict[str, Any]:
    """``NAME=VALUE`` pairs; values are read as JSON when they parse, else as strings."""
    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise CogstatsError(f"{flag} must look like NAME=VALUE; got {item!r}")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def _cmd_gate(args: argparse.Namespace) -> int:
    from cogstats.gates import CycgraphGate
    from cogstats.ledger import Ledger

    policy = {k: getattr(args, k) for k in _POLICY_FIELDS if getattr(args, k) is not None}
    gate = CycgraphGate(**policy)
    ledger = Ledger.read(args.ledger, format=args.ledger_format)
    report = gate.evaluate(ledger, _read_candidates(args.candidates))
    _emit(report.to_frame(), args.format, title=repr(report))
    return 0


def _cmd_attribute(args: argparse.Namespace) -> int:
    from cogstats.estimators import attribute
    from cogstats.ledger import Ledger

    ledger = Ledger.read(args.ledger, format=args.ledger_format)
    options = _assignments(args.option, "--option")
    if args.covariates:
        options["covariates"] = args.covariates
    result = attribute(ledger, method=args.method, rng=args.seed, **options)
    _emit(result.to_frame(), args.format, title=repr(result))
    return 0


def _cmd_simulate(args: argparse.Namespace) -> int:
    from cogstats.sim.cli import run_simulate

    return run_simulate(args)


def _cmd_sweep(args: argparse.Namespace) -> int:
    from cogstats.sweep.cli import run_sweep

    return run_sweep(args)


def _cmd_report(args: argparse.Namespace) -> int:
    from cogstats.reports import get_report, report_names, run_report

    if not args.name:
        for name in report_names():
            print(f"{name}: {get_report(name).title}")
        return 0
    params = _assignments(args.param, "--param")
    result = run_report(
        args.name, Path(args.out), params or None, ci=args.quick, show_code=args.show_code
    )
    print(f"{args.name}: {result.html}")
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from cogstats.demo import run_demo

    return run_demo(Path(args.out), quick=args.quick)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for documentation and tests)."""
    parser = argparse.ArgumentParser(
        prog="cogstats", description="Statistics of lesson attribution for self-improving agents."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("gate", help="run cycgraph's gate on a ledger and print the decisions")
    p.add_argument("ledger", help="ledger file (.jsonl, .csv, .parquet, cycgraph .json)")
    p.add_argument("--ledger-format", choices=["jsonl", "csv", "parquet", "cycgraph-json"])
    p.add_argument(
        "--candidates",
        default="all",
        help="'all' (every lesson in the ledger) or a file with one lesson id per line",
    )
    p.add_argument("--format", choices=["table", "csv", "json"], default="table")
    _policy_args(p)
    p.set_defaults(func=_cmd_gate)

    p = sub.add_parser("attribute", help="estimate every lesson's effect with one method")
    p.add_argument("ledger")
    p.add_argument("--ledger-format", choices=["jsonl", "csv", "parquet", "cycgraph-json"])
    p.add_argument("--method", default="lift", help="estimator name (see cogstats.estimators)")
    p.add_argument("--covariates", nargs="*", help="ledger covariate columns to adjust for")
    p.add_argument("--option", action="append", help="method option NAME=VALUE (JSON value)")
    p.add_argument("--seed", type=int, help="seed for methods that draw (permutation)")
    p.add_argument("--format", choices=["table", "csv", "json"], default="table")
    p.set_defaults(func=_cmd_attribute)

    p = sub.add_parser("simulate", help="simulate a scenario spec (TOML) and summarise")
    p.add_argument("spec", help="scenario spec file (simulations/*.toml)")
    p.add_argument("--replicates", type=int)
    p.add_argument("--seed", type=int)
    p.add_argument("--out", help="directory for the Parquet frames")
    p.add_argument("--engine", choices=["fast", "reference"], default="fast")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=_cmd_simulate)

    p = sub.add_parser("sweep", help="run a sweep spec (TOML) over a grid; resumable")
    p.add_argument("spec")
    p.add_argument("--replicates", type=int)
    p.add_argument("--seed", type=int)
    p.add_argument("--out", help="directory of the sweep store (default: sweeps/<spec name>)")
    p.add_argument("--executor", choices=["local", "dask"], default="local")
    p.add_argument("--scheduler", help="dask scheduler address (default: a LocalCluster)")
    p.add_argument(
        "--workers",
        type=int,
        help="worker processes (default: all cores; a small sweep runs in this process)",
    )
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=_cmd_sweep)

    p = sub.add_parser("report", help="run a report notebook (papermill) and export HTML")
    p.add_argument("name", nargs="?", help="report name (omit to list them)")
    p.add_argument("--out", default="reports", help="output folder (default: reports)")
    p.add_argument("--quick", action="store_true", help="the report's CI parameters")
    p.add_argument("--param", action="append", help="notebook parameter NAME=VALUE (JSON)")
    p.add_argument("--show-code", action="store_true", help="keep the code cells in the page")
    p.set_defaults(func=_cmd_report)

    p = sub.add_parser("demo", help="simulate, sweep and write the demo report")
    p.add_argument("--out", default="reports/demo")
    p.add_argument("--quick", action="store_true", help="CI-sized run")
    p.set_defaults(func=_cmd_demo)
    from cogstats.admission.cli import add_parser as add_admission_parser

    add_admission_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``cogstats`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except (CogstatsError, FileNotFoundError) as exc:
        print(f"cogstats {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
