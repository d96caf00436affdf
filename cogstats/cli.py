"""The ``cogstats`` command line: gate, attribute, simulate, sweep, report, demo, store, serve.

Every subcommand validates its input at the door and exits with status 2 and a one-line
message on bad input (a malformed ledger row names its row and field).  ``cogstats gate``
runs any registered gate (``--gate NAME``, or ``--gate package.module:Class`` for a gate
of one's own); its option flags are generated from the gate's options dataclass
(:mod:`cogstats._cli_options`).  The subcommands are one list, :data:`SUBCOMMANDS`.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import shutil
import sys
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from cogstats._cli_options import (
    INT,
    add_option_flags,
    collect_options,
    parse_assignments,
)
from cogstats._codes import ENGINES
from cogstats._validation import CogstatsError
from cogstats.admission import cli as admission_cli
from cogstats.serve import cli as serve_cli

__all__ = ["SUBCOMMANDS", "build_parser", "main"]

LEDGER_FORMATS = ["jsonl", "csv", "parquet", "cycgraph-json"]
#: the gate subcommand's own flags (a gate option with one of these names is spelled
#: --gate-NAME)
_GATE_FLAGS = (
    "--gate",
    "--ledger-format",
    "--column",
    "--delimiter",
    "--candidates",
    "--format",
    "--raw-csv",
    "--allow-import",
    "--seed",
    "--covariates",
    "--lessons",
    "--exclude-evicted",
    "--pool-lineage",
    "--help",
)


# ---------------------------------------------------------------------- shared helpers
def _emit(
    frame: pl.DataFrame, fmt: str, title: str | None = None, *, raw_csv: bool = False
) -> None:
    if fmt == "csv":  # formula cells neutralised unless --raw-csv (cogstats.ledger.write_csv)
        from cogstats.ledger import write_csv

        sys.stdout.write(write_csv(flat_frame(frame), raw=raw_csv))
    elif fmt == "json":
        sys.stdout.write(json.dumps(frame.to_dicts(), indent=1, default=str) + "\n")
    else:  # "table": the leading columns that fit the terminal; "wide": every column
        from cogstats.reports.display import terminal_table

        if title:
            print(title)
        print(terminal_table(frame, wide=fmt == "wide"))


def flat_frame(frame: pl.DataFrame) -> pl.DataFrame:
    """Flatten the nested columns of ``frame`` for CSV.

    Lists (and arrays) are joined with ``;``, structs written as JSON text.

    Examples
    --------
    >>> flat_frame(pl.DataFrame({"ids": [["a", "b"], []]}))["ids"].to_list()
    ['a;b', '']
    """
    exprs = []
    for name, dtype in frame.schema.items():
        col = pl.col(name)
        if isinstance(dtype, pl.Array):
            col = col.arr.to_list()
            dtype = pl.List(dtype.inner)
        if isinstance(dtype, pl.List):
            exprs.append(col.list.eval(pl.element().cast(pl.String)).list.join(";").alias(name))
        elif isinstance(dtype, pl.Struct):
            exprs.append(col.struct.json_encode().alias(name))
    return frame.with_columns(exprs) if exprs else frame


def _add_ledger_input(p: argparse.ArgumentParser) -> None:
    p.add_argument("ledger", help="ledger file (.jsonl, .csv, .parquet, cycgraph .json)")
    p.add_argument("--ledger-format", choices=LEDGER_FORMATS)
    p.add_argument(
        "--column",
        action="append",
        metavar="NAME=SOURCE",
        help="read ledger field NAME from the file's column SOURCE, e.g. run_id=run (repeatable)",
    )
    p.add_argument("--delimiter", help="CSV field delimiter (default: sniffed)")


def _read_ledger(args: argparse.Namespace) -> Any:
    """``Ledger.read`` with ``columns=``/``delimiter=`` passed only when given."""
    from cogstats.ledger import Ledger

    extra: dict[str, Any] = {}
    if args.column:
        extra["columns"] = parse_assignments(args.column, "--column", json_values=False)
    if args.delimiter is not None:
        extra["delimiter"] = args.delimiter
    try:
        return Ledger.read(args.ledger, format=args.ledger_format, **extra)
    except TypeError as exc:
        if extra and "unexpected keyword" in str(exc):
            raise CogstatsError(
                f"--column/--delimiter need a Ledger.read that takes {sorted(extra)}: {exc}"
            ) from None
        raise


def _add_lesson_input(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--lessons",
        metavar="FILE",
        help="the lesson table beside the ledger (id, created_at, status, consolidated_from, "
        "supersedes; CSV, JSON Lines, JSON or Parquet)",
    )
    p.add_argument(
        "--exclude-evicted",
        action="store_true",
        help="leave out the runs that carried a lesson the table marks evicted (needs --lessons)",
    )
    p.add_argument(
        "--pool-lineage",
        action="store_true",
        help="give each lesson the runs of the lessons it was consolidated from or supersedes "
        "(needs --lessons)",
    )


def _apply_lessons(args: argparse.Namespace, ledger: Any) -> tuple[Any, Any]:
    """Apply ``--lessons``/``--pool-lineage``/``--exclude-evicted``: (ledger, lesson table)."""
    if args.lessons is None:
        if args.exclude_evicted or args.pool_lineage:
            raise CogstatsError("--exclude-evicted and --pool-lineage need --lessons FILE")
        return ledger, None
    from cogstats.estimators.lineage import exclude_lessons, pool_lineage
    from cogstats.ledger import Ledger

    table = Ledger.read_lessons(args.lessons)
    if args.pool_lineage:
        ledger = pool_lineage(ledger, table)
    if args.exclude_evicted:
        ledger = exclude_lessons(ledger, table)
    return ledger, table


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


def _warn(command: str, message: str) -> None:
    print(f"cogstats {command}: warning: {message}", file=sys.stderr)


def _named_covariates(args: argparse.Namespace) -> list[str] | None:
    """Return the covariates named with ``--covariates`` (None: the flag was not given).

    The recommended gates take ``--covariates`` as their own option (``opt__covariates``);
    the others as the method's ``options.covariates``, as ``attribute`` does.
    """
    for dest in ("covariates", "opt__covariates"):
        value = getattr(args, dest, None)
        if value is not None:
            return [str(c) for c in value]
    return None


def _covariates_how(method: Any) -> str | None:
    """Return how to adjust for covariates with ``method``: its flag, or ``--method ols``."""
    from cogstats.estimators import METHODS

    try:
        takes = "covariates" in dict(METHODS.lookup(method).defaults)
    except (CogstatsError, TypeError, ValueError):  # a method of one's own, unregistered
        takes = False
    return None if takes else "--method ols {flag}"


def _covariate_rule(gate: Any, ledger: Any, args: argparse.Namespace) -> Any:
    """Apply the one covariate rule to ``gate`` on ``ledger``; its note on stderr.

    The rule is :func:`cogstats.covariates.choose_covariates`: a column named with
    ``--covariates`` that the ledger lacks is an error with "did you mean" (exit 2); a
    gate's default covariate (the recommended gate's ``difficulty_proxy``) may be
    skipped, with a note, and replaced by the ledger's ``difficulty`` column; when nothing
    is adjusted for although the ledger has a difficulty- or task-family-like column, a
    warning names it and the flag that would use it (``--covariates X``, or ``--gate
    recommended --covariates X`` for a gate that takes no covariates).  The simulator's
    ``true_difficulty`` is never chosen.  ``--covariates`` with no name means none, on
    purpose: no note.
    """
    from cogstats.covariates import check_named, choose_covariates, unused_hint

    named = _named_covariates(args)
    if named:
        check_named(named, ledger.covariates)
    wanted = getattr(gate, "covariates", None)
    if isinstance(wanted, tuple):  # a gate with its own covariates option
        if named is not None:
            return gate
        default = None
        if dataclasses.is_dataclass(gate) and not isinstance(gate, type):
            f = {f.name: f for f in dataclasses.fields(gate)}.get("covariates")
            if f is not None and f.default is not dataclasses.MISSING:
                default = tuple(f.default)
        choice = choose_covariates(wanted, ledger.covariates, default=default, style="flag")
        if choice.note:
            _warn("gate", choice.note)
        if choice.fallback:
            return dataclasses.replace(gate, covariates=choice.columns)
        return gate
    if named is not None:  # named (checked above) or none on purpose
        return gate
    options = getattr(gate, "options", None)
    if isinstance(options, Mapping):  # a method's options: --covariates sets them
        used = tuple(options.get("covariates") or ())
        used += tuple(str(options[k]) for k in _ADJUSTING_OPTIONS if options.get(k) is not None)
        how = _covariates_how(getattr(gate, "method", None))
    else:
        used, how = (), "--gate recommended {flag}"
    hint = unused_hint(ledger.covariates, used, style="flag", how=how)
    if hint:
        _warn("gate", f"gate {args.gate!r} adjusts for nothing; {hint}")
    return gate


# ---------------------------------------------------------------------- gate
def _gate_arguments(p: argparse.ArgumentParser, gate: str | None) -> None:
    from cogstats.gates import GATES, get_gate

    _add_ledger_input(p)
    p.add_argument(
        "--gate",
        default="cycgraph",
        help=f"the gate: one of {sorted(GATES.builtin)} (default cycgraph), or "
        "package.module:Class for a gate of your own; its options follow",
    )
    p.add_argument(
        "--candidates",
        default="all",
        help="'all' (every lesson in the ledger) or a file with one lesson id per line",
    )
    p.add_argument(
        "--format",
        choices=["table", "wide", "csv", "json"],
        default="table",
        help="table (the columns that fit the terminal), wide (every column), csv or json",
    )
    _add_raw_csv(p)
    p.add_argument("--seed", type=INT, help="seed for gates whose methods draw")
    _add_lesson_input(p)
    if gate is None:  # another subcommand runs: the gate's flags are not needed
        return
    entry = get_gate(gate)
    names = {f.name for f in entry.fields()}
    reserved: tuple[str, ...] = _GATE_FLAGS
    if "covariates" in names:  # the gate's own option (the recommended gate's)
        reserved = tuple(f for f in _GATE_FLAGS if f != "--covariates")
    elif "options" in names:
        p.add_argument(
            "--covariates",
            nargs="*",
            help="ledger covariate columns for the gate's method (sets options.covariates)",
        )
    else:
        p.add_argument(
            "--covariates",
            nargs="*",
            help=f"ledger covariate columns to adjust for; the {entry.name!r} gate adjusts for "
            "none (naming one is an error): --gate recommended --covariates NAME ... "
            "adjusts for them (default: its difficulty_proxy), as does --gate evidence",
        )
    add_option_flags(p, entry, reserved=reserved)


def _cmd_gate(args: argparse.Namespace) -> int:
    from cogstats.gates import get_gate

    entry = get_gate(args.gate)
    fields = {f.name for f in entry.fields()}
    if getattr(args, "covariates", None) and not {"covariates", "options"} & fields:
        raise CogstatsError(
            f"--covariates: the {args.gate!r} gate adjusts for no covariate; "
            f"--gate recommended --covariates {' '.join(args.covariates)} adjusts for them"
        )
    options = collect_options(args, entry)
    if getattr(args, "covariates", None) and "covariates" not in options:
        options["options"] = {**dict(options.get("options") or {}), "covariates": args.covariates}
    try:
        gate = entry.make(**options)
    except (ValueError, TypeError) as exc:  # ParameterError, or a gate of one's own
        raise CogstatsError(str(exc)) from None
    ledger, lessons = _apply_lessons(args, _read_ledger(args))
    gate = _covariate_rule(gate, ledger, args)
    extra: dict[str, Any] = {}
    if lessons is not None and getattr(gate, "uses_lessons", False):
        extra["lessons"] = lessons
    elif lessons is not None and not (args.exclude_evicted or args.pool_lineage):
        _warn(
            "gate",
            f"gate {args.gate!r} does not read the lesson table; --exclude-evicted or "
            "--pool-lineage apply it to the ledger",
        )
    candidates = _read_candidates(args.candidates)
    if candidates is not None:
        known = set(ledger.fact_ids)
        absent = [f for f in candidates if f not in known]
        if absent:
            shown = ", ".join(repr(f) for f in absent[:10])
            more = f" and {len(absent) - 10} more" if len(absent) > 10 else ""
            _warn(
                "gate",
                f"candidate(s) {shown}{more} not in the ledger {args.ledger} (no runs: judged "
                "with 0 trials)",
            )
    report = gate.evaluate(ledger, candidates, rng=args.seed, **extra)
    _emit(report.to_frame(), args.format, title=repr(report), raw_csv=args.raw_csv)
    if getattr(gate, "suspends", False) and args.format in ("table", "wide"):
        # a lifecycle gate judged once, without statuses (machine formats stay data only)
        note = (
            "note: this is one batch look at the whole ledger, without the lessons' status "
            "history; a lesson store judges run by run with statuses and can decide "
            "otherwise (docs/production.md, 'The batch gate and the store'; replay it with "
            "cogstats.tune(ledger=...) or cogstats.LessonStore)"
        )
        print(note)
    return 0


# ---------------------------------------------------------------------- attribute
def _attribute_arguments(p: argparse.ArgumentParser, gate: str | None) -> None:
    _add_ledger_input(p)
    p.add_argument("--method", default="lift", help="estimator name (see cogstats.estimators)")
    p.add_argument("--covariates", nargs="*", help="ledger covariate columns to adjust for")
    p.add_argument("--option", action="append", help="method option NAME=VALUE (JSON value)")
    p.add_argument("--seed", type=INT, help="seed for methods that draw (permutation)")
    p.add_argument(
        "--format",
        choices=["table", "wide", "csv", "json"],
        default="table",
        help="table (the columns that fit the terminal), wide (every column), csv or json",
    )
    _add_raw_csv(p)
    _add_lesson_input(p)


def _add_raw_csv(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--raw-csv",
        action="store_true",
        help="with --format csv: write cells starting with = + - @ as they are (by default "
        "they get a leading ' so that a spreadsheet does not run them as formulas)",
    )


#: method options that name a covariate the method adjusts for (besides ``covariates``)
_ADJUSTING_OPTIONS = ("strata", "groups", "cluster")


def _cmd_attribute(args: argparse.Namespace) -> int:
    from cogstats.covariates import check_named, unused_hint
    from cogstats.estimators import attribute, get_spec

    spec = get_spec(args.method)  # an unknown method: the error, before any note
    ledger, _ = _apply_lessons(args, _read_ledger(args))
    options = parse_assignments(args.option, "--option")
    adjusted = [
        str(options[k])
        for k in _ADJUSTING_OPTIONS
        if k in spec.defaults and options.get(k) is not None
    ]
    if args.covariates:
        check_named(args.covariates, ledger.covariates)  # "did you mean", as gate says
        options["covariates"] = args.covariates
    elif args.covariates is None and "covariates" not in options:
        if "groups" in spec.defaults and "groups" not in options:
            adjusted.append(str(spec.defaults["groups"]))
        hint = unused_hint(
            ledger.covariates, adjusted, style="flag", how=_covariates_how(args.method)
        )
        if hint:
            _warn("attribute", f"method {args.method!r} adjusts for nothing; {hint}")
    result = attribute(ledger, method=args.method, rng=args.seed, **options)
    frame = result.to_frame()
    if frame.height and frame["estimate"].null_count() == frame.height:
        raise CogstatsError(
            f"method {args.method!r} estimated none of the {frame.height} lessons: "
            f"{_why_nothing(result)}"
        )
    note = result.settings.get("contrasts")
    if note:
        print(f"cogstats attribute: note: {note}", file=sys.stderr)
    _emit(frame, args.format, title=repr(result), raw_csv=args.raw_csv)
    return 0


def _why_nothing(result: Any) -> str:
    """Say why an attribution has no estimate at all (its identifiability reasons, counted)."""
    ident = result.extras.get("identifiability")
    if isinstance(ident, pl.DataFrame) and "reason" in ident.columns:
        counts = ident.group_by("reason").len().sort("len", descending=True)
        if counts["reason"].null_count() < counts.height:
            listed = ", ".join(f"{n} {r}" for r, n in counts.rows() if r is not None)
            return (
                f"no lesson's effect can be told apart ({listed}; "
                "cogstats.estimators.check_identifiability gives each lesson's reason and "
                "the lessons it is aliased with); runs that carry other combinations of "
                "lessons separate them"
            )
    return (
        "every lesson needs runs with and without it (and, for this method, enough of "
        "each); the table's trials and baseline_runs columns give the counts"
    )


# ---------------------------------------------------------------------- simulate, sweep
def _simulate_arguments(p: argparse.ArgumentParser, gate: str | None) -> None:
    p.add_argument("spec", help="scenario spec file (simulations/*.toml)")
    p.add_argument("--replicates", type=INT)
    p.add_argument("--seed", type=INT)
    p.add_argument("--out", help="directory for the Parquet frames")
    p.add_argument(
        "--engine",
        choices=list(ENGINES),
        default="auto",
        help="auto (default): compiled when it covers the gate and policy, else reference",
    )
    p.add_argument("--workers", type=INT, help="threads for the cells (default: all cores)")
    _policy_argument(p)
    p.add_argument("--no-progress", action="store_true")


def _policy_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--policy",
        metavar="PRESET",
        help="replace the spec's retrieval policy and gate with a preset (e.g. recommended); "
        "the prompt caps and the gate's cadence are kept",
    )


def _cmd_simulate(args: argparse.Namespace) -> int:
    from cogstats.sim.cli import run_simulate

    return run_simulate(args)


def _sweep_arguments(p: argparse.ArgumentParser, gate: str | None) -> None:
    p.add_argument("spec")
    p.add_argument("--replicates", type=INT)
    p.add_argument("--seed", type=INT)
    p.add_argument("--out", help="directory of the sweep store (default: sweeps/<spec name>)")
    p.add_argument("--executor", choices=["local", "dask"], default="local")
    p.add_argument("--scheduler", help="dask scheduler address (default: a LocalCluster)")
    p.add_argument(
        "--workers",
        type=INT,
        help="worker processes (default: all cores; a small sweep runs in this process)",
    )
    _policy_argument(p)
    p.add_argument("--no-progress", action="store_true")


def _cmd_sweep(args: argparse.Namespace) -> int:
    from cogstats.sweep.cli import run_sweep

    return run_sweep(args)


# ---------------------------------------------------------------------- report, demo
def _report_arguments(p: argparse.ArgumentParser, gate: str | None) -> None:
    p.add_argument("name", nargs="?", help="report name (omit to list them)")
    p.add_argument("--out", default="reports", help="output folder (default: reports)")
    p.add_argument("--quick", action="store_true", help="the report's CI parameters")
    p.add_argument("--param", action="append", help="notebook parameter NAME=VALUE (JSON)")
    p.add_argument("--show-code", action="store_true", help="keep the code cells in the page")


def _cmd_report(args: argparse.Namespace) -> int:
    from cogstats.reports import get_report, report_names, run_report

    if not args.name:
        for name in report_names():
            print(f"{name}: {get_report(name).title}")
        return 0
    params = parse_assignments(args.param, "--param")
    result = run_report(
        args.name, Path(args.out), params or None, ci=args.quick, show_code=args.show_code
    )
    print(f"{args.name}: {result.html}")
    return 0


def _demo_arguments(p: argparse.ArgumentParser, gate: str | None) -> None:
    p.add_argument("--out", default="reports/demo")
    p.add_argument(
        "--quick",
        action="store_true",
        help="the short version: the simulations and the CI sweep, then four reports "
        "(quickstart, ledger_audit, poison_replay, tradeoffs) at CI parameters; the index "
        "lists the others with the command that renders each",
    )


def _cmd_demo(args: argparse.Namespace) -> int:
    from cogstats.demo import run_demo

    return run_demo(Path(args.out), quick=args.quick)


# ---------------------------------------------------------------------- store
def _store_arguments(p: argparse.ArgumentParser, gate: str | None) -> None:
    p.add_argument("action", choices=["show"], help="show: the lessons and their statuses")
    p.add_argument("state", help="the lesson store's folder (cogstats.LessonStore)")
    p.add_argument("--events", action="store_true", help="the status events instead")
    p.add_argument(
        "--format",
        choices=["table", "json", "csv"],
        default="table",
        help="table: 80 columns, lesson ids escaped; json, csv: every column",
    )


def _cmd_store(args: argparse.Namespace) -> int:
    from cogstats.store import LessonStore
    from cogstats.store.show import render

    with LessonStore.open(args.state, read_only=True) as store:
        if args.format == "table":
            width = max(80, min(shutil.get_terminal_size((80, 24)).columns, 160))
            sys.stdout.write(render(store, events=args.events, width=width))
        else:
            frame = store.events() if args.events else store.lessons()
            _emit(frame, args.format)
    return 0


#: The subcommands: (name, help, add its arguments (parser, gate name), run it).  A new
#: subcommand is one more entry.
SUBCOMMANDS: list[
    tuple[
        str,
        str,
        Callable[[argparse.ArgumentParser, str | None], None],
        Callable[[argparse.Namespace], int],
    ]
] = [
    (
        "gate",
        "run a gate (cycgraph's by default) on a ledger and print the decisions",
        _gate_arguments,
        _cmd_gate,
    ),
    (
        "attribute",
        "estimate every lesson's effect with one method",
        _attribute_arguments,
        _cmd_attribute,
    ),
    (
        "simulate",
        "simulate a scenario spec (TOML) and summarise",
        _simulate_arguments,
        _cmd_simulate,
    ),
    ("sweep", "run a sweep spec (TOML) over a grid; resumable", _sweep_arguments, _cmd_sweep),
    (
        "report",
        "run a report notebook (papermill) and export HTML",
        _report_arguments,
        _cmd_report,
    ),
    ("demo", "simulate, sweep and write the demo report", _demo_arguments, _cmd_demo),
    ("admission", admission_cli.HELP, admission_cli.add_arguments, admission_cli.run),
    (
        "store",
        "show a lesson store (cogstats.LessonStore): its lessons, statuses and events",
        _store_arguments,
        _cmd_store,
    ),
    ("serve", serve_cli.HELP, serve_cli.add_arguments, serve_cli.run),
]


def build_parser(gate: str | None = "cycgraph") -> argparse.ArgumentParser:
    """Build the argument parser, with the option flags of ``gate`` on the gate subcommand.

    No gate flags with ``gate=None``.  Exposed for documentation and tests.

    Examples
    --------
    >>> args = build_parser("cycgraph").parse_args(
    ...     ["gate", "runs.csv", "--decision-rule", "margin"])
    >>> args.opt__decision_rule, args.gate
    ('margin', 'cycgraph')
    """
    parser = argparse.ArgumentParser(
        prog="cogstats", description="Statistics of lesson attribution for self-improving agents."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for name, text, add_arguments, run in SUBCOMMANDS:
        p = sub.add_parser(name, help=text, description=text)
        add_arguments(p, gate)
        if not any("--allow-import" in a.option_strings for a in p._actions):
            p.add_argument(
                "--allow-import",
                action="append",
                metavar="MODULE",
                help="let a 'module:Class' name from a spec, a state file or a report "
                "parameter import MODULE (repeatable; --gate mod:Class needs none)",
            )
        p.set_defaults(func=run)
    return parser


@contextlib.contextmanager
def _plain_spec_warnings(command: str) -> Iterator[None]:
    """Print cogstats' own warnings as ``cogstats CMD: warning: ...`` lines.

    A spec's ``SpecWarning``, ``mixed``'s ``MixedFallbackWarning`` and the like: one clean
    line, no source path.  Other warnings keep Python's form.
    """
    with warnings.catch_warnings():
        shown = warnings.showwarning

        def show(message: Any, category: Any, *rest: Any, **kwargs: Any) -> None:
            if str(getattr(category, "__module__", "")).startswith("cogstats"):
                _warn(command, str(message))
            else:
                shown(message, category, *rest, **kwargs)

        warnings.showwarning = show
        yield


def _gate_name(argv: Sequence[str]) -> str | None:
    """Return the ``--gate`` value of a ``gate`` command line.

    The default is cycgraph; None for the other subcommands.
    """
    if not argv or argv[0] != "gate":
        return None
    for k, item in enumerate(argv):
        if item == "--gate" and k + 1 < len(argv):
            return argv[k + 1]
        if item.startswith("--gate="):
            return item.partition("=")[2]
    return "cycgraph"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``cogstats`` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:2] == ["sweep", "check"]:  # its own parser (sweep's first argument is a spec)
        from cogstats.sweep.check import check_main

        return check_main(argv[2:])
    try:
        # the gate's option flags depend on which gate: look it up first
        parser = build_parser(_gate_name(argv))
    except (CogstatsError, FileNotFoundError) as exc:
        print(f"cogstats {argv[0] if argv else ''}: error: {exc}", file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    allowed = getattr(args, "allow_import", None) or []
    if allowed:  # inherited by sweep workers and report kernels (cogstats._imports)
        from cogstats._imports import ENV

        os.environ[ENV] = ",".join([*filter(None, os.environ.get(ENV, "").split(",")), *allowed])
    try:
        with _plain_spec_warnings(args.command):
            return int(args.func(args))
    except (CogstatsError, FileNotFoundError) as exc:
        print(f"cogstats {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as exc:  # a minimal install: name the extra to install
        from cogstats._imports import missing_extra

        what = missing_extra(exc)
        if what is None:
            raise
        print(f"cogstats {args.command}: error: {what}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
