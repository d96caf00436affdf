"""``cogstats sweep check STORE --metric NAME --max X``: fail CI when a metric crosses a bound.

:func:`check_sweep` reads a finished sweep store (or its cell table) and lists the cells
whose metric crosses the bound: above ``maximum`` or below ``minimum``.  A cell whose
metric has no value (NaN or null: e.g. ``time_to_verdict`` when no replicate reached a
verdict) is listed apart and fails the check unless ``allow_missing``.

Monte Carlo error: each cell's metric is a mean over replicates with standard error
``<metric>_mcse``.  With ``mcse=k`` a cell crosses only when the bound is crossed by more
than ``k`` standard errors (``estimate - k * mcse > maximum``, ``estimate + k * mcse <
minimum``): a one-sided test of the cell against the bound, so that a CI job does not fail
on Monte Carlo noise.  ``k = 0`` (the default) compares the estimates.

The command's exit status is 0 when no cell crosses, 1 when some do (each named with its
grid settings), 2 on a usage error (unknown metric, no store, no bound).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from cogstats._cli_options import FLOAT
from cogstats._validation import CogstatsError, ParameterError, suggest
from cogstats.sweep.analysis import grid_columns, with_derived

__all__ = ["SweepCheck", "add_check_arguments", "check_main", "check_sweep", "run_check"]


@dataclass(frozen=True, repr=False, eq=False)
class SweepCheck:
    """What :func:`check_sweep` found.

    Attributes
    ----------
    metric : str
        The metric checked.
    op : str
        ``"<="`` (a ``maximum``) or ``">="`` (a ``minimum``): what every cell must satisfy.
    bound : float
        The bound.
    mcse : float
        Standard errors a cell must cross the bound by to count (0: the estimate).
    n_cells : int
        Cells in the table.
    crossing : polars.DataFrame
        The cells that cross: ``cell``, the grid axes, the metric and its MCSE (when the
        table has it).
    missing : polars.DataFrame
        The cells whose metric has no value (same columns).
    allow_missing : bool
        Whether missing values pass.
    """

    metric: str
    op: str
    bound: float
    mcse: float
    n_cells: int
    crossing: pl.DataFrame
    missing: pl.DataFrame
    allow_missing: bool

    @property
    def passed(self) -> bool:
        """Whether no cell crosses the bound (and none lacks a value, unless allowed)."""
        return self.crossing.height == 0 and (self.allow_missing or self.missing.height == 0)

    @property
    def exit_code(self) -> int:
        """0 when the check passes, 1 otherwise."""
        return 0 if self.passed else 1

    def _cell_line(self, row: dict[str, object], axes: Sequence[str], what: str) -> str:
        settings = ", ".join(f"{a}={row[a]}" for a in axes)
        return f"  cell {row['cell']} ({settings}): {what}"

    def __str__(self) -> str:
        """Return the verdict and one line per failing cell."""
        noise = f" by more than {self.mcse:g} MCSE" if self.mcse else ""
        head = f"{self.metric} {self.op} {self.bound:g} in every cell{noise}"
        axes = [c for c in self.crossing.columns if c not in ("cell", self.metric, _se(self))]
        lines: list[str] = []
        cross = ">" if self.op == "<=" else "<"
        for row in self.crossing.iter_rows(named=True):
            se = row.get(_se(self))
            se_text = f" (MCSE {se:.4g})" if isinstance(se, float) and not math.isnan(se) else ""
            lines.append(
                self._cell_line(
                    row,
                    axes,
                    f"{self.metric} = {row[self.metric]:.4g}{se_text} {cross} {self.bound:g}",
                )
            )
        for row in self.missing.iter_rows(named=True):
            lines.append(self._cell_line(row, axes, f"{self.metric} has no value"))
        if self.passed:
            extra = (
                f"; {self.missing.height} cell(s) without a value allowed"
                if self.missing.height
                else ""
            )
            return f"PASS: {head} ({self.n_cells} cells{extra})"
        n_fail = self.crossing.height + (0 if self.allow_missing else self.missing.height)
        parts = [f"{self.crossing.height} cross the bound"]
        if self.missing.height:
            parts.append(
                f"{self.missing.height} without a value"
                + (" (allowed)" if self.allow_missing else " (--allow-missing to pass them)")
            )
        return "\n".join(
            [f"FAIL: {head}: {n_fail} of {self.n_cells} cells fail ({'; '.join(parts)})", *lines]
        )

    def __repr__(self) -> str:
        """Return the verdict line."""
        return f"<SweepCheck {str(self).splitlines()[0]}>"


def _se(check: SweepCheck) -> str:
    return f"{check.metric}_mcse"


def _numeric_metrics(table: pl.DataFrame) -> list[str]:
    axes = set(grid_columns(table))
    skip = {"cell", "replicates", "elapsed_s", "worker", "seed", "cell_key"}
    return sorted(
        c
        for c, dtype in table.schema.items()
        if dtype.is_numeric() and c not in axes and c not in skip and not c.endswith("_mcse")
    )


def check_sweep(
    source: str | Path | pl.DataFrame,
    metric: str,
    *,
    maximum: float | None = None,
    minimum: float | None = None,
    mcse: float = 0.0,
    allow_missing: bool = False,
) -> SweepCheck:
    """Check that ``metric`` stays within a bound in every cell of a sweep.

    Parameters
    ----------
    source : str, Path or polars.DataFrame
        A sweep store (``cogstats sweep --out DIR``) or its cell table
        (:func:`~cogstats.sweep.read_sweep`).
    metric : str
        A numeric column of the cell table (``missed_poison`` = 1 - ``poison_recall`` is
        added when possible).
    maximum, minimum : float
        Exactly one: a cell crosses when its metric is above ``maximum`` (below
        ``minimum``).
    mcse : float
        Count a cell only when it crosses by more than ``mcse`` Monte Carlo standard
        errors (needs ``<metric>_mcse``; >= 0; default 0: the estimate).
    allow_missing : bool
        Let cells whose metric is NaN or null pass (default: they fail).

    Returns
    -------
    SweepCheck
        ``passed``, ``exit_code``, the crossing and missing cells; ``str()`` names them.

    Examples
    --------
    >>> import polars as pl
    >>> t = pl.DataFrame({"cell": [0, 1], "gate.min_trials": [2, 4],
    ...                   "false_eviction_rate": [0.01, 0.05],
    ...                   "false_eviction_rate_mcse": [0.004, 0.01]})
    >>> r = check_sweep(t, "false_eviction_rate", maximum=0.02)
    >>> r.exit_code
    1
    >>> print(r)
    FAIL: false_eviction_rate <= 0.02 in every cell: 1 of 2 cells fail (1 cross the bound)
      cell 1 (gate.min_trials=4): false_eviction_rate = 0.05 (MCSE 0.01) > 0.02
    >>> check_sweep(t, "false_eviction_rate", maximum=0.02, mcse=4).passed
    True
    """
    if (maximum is None) == (minimum is None):
        raise ParameterError(
            f"give exactly one of maximum (--max) and minimum (--min); got maximum={maximum!r}, "
            f"minimum={minimum!r}"
        )
    bound = maximum if maximum is not None else minimum
    if isinstance(bound, bool) or not isinstance(bound, int | float) or math.isnan(bound):
        raise ParameterError(f"the bound must be a number; got {bound!r}")
    if isinstance(mcse, bool) or not isinstance(mcse, int | float) or not mcse >= 0:
        raise ParameterError(f"mcse must be a number >= 0 (standard errors); got {mcse!r}")
    if isinstance(source, pl.DataFrame):
        table = source
    else:
        from cogstats.sweep.store import read_sweep

        table = read_sweep(source)
    table = with_derived(table)
    allowed = _numeric_metrics(table)
    if metric not in allowed:
        raise ParameterError(
            f"metric must be a numeric column of the sweep's cell table, one of {allowed!r}; "
            f"got {metric!r}{suggest(metric, allowed)}"
        )
    se_col = f"{metric}_mcse"
    if mcse and se_col not in table.columns:
        raise ParameterError(
            f"mcse={mcse!r} needs the column {se_col!r}, which the cell table does not have"
        )
    axes = grid_columns(table)
    shown = ["cell", *axes, metric, *([se_col] if se_col in table.columns else [])]
    value = pl.col(metric).cast(pl.Float64)
    se = pl.col(se_col).cast(pl.Float64).fill_null(0.0).fill_nan(0.0) if mcse else pl.lit(0.0)
    is_missing = value.is_null() | value.is_nan()
    if maximum is not None:
        crosses = value - float(mcse) * se > float(bound)
        op = "<="
    else:
        crosses = value + float(mcse) * se < float(bound)
        op = ">="
    frame = table.select(shown).with_columns(_missing=is_missing, _crosses=crosses.fill_null(False))
    return SweepCheck(
        metric=metric,
        op=op,
        bound=float(bound),
        mcse=float(mcse),
        n_cells=table.height,
        crossing=frame.filter(~pl.col("_missing") & pl.col("_crosses")).select(shown),
        missing=frame.filter(pl.col("_missing")).select(shown),
        allow_missing=bool(allow_missing),
    )


def add_check_arguments(p: argparse.ArgumentParser) -> None:
    """Add the arguments of ``cogstats sweep check`` to ``p``."""
    p.add_argument("store", help="a sweep store (the --out folder of cogstats sweep)")
    p.add_argument("--metric", required=True, help="a metric column, e.g. false_eviction_rate")
    bound = p.add_mutually_exclusive_group(required=True)
    bound.add_argument("--max", type=FLOAT, dest="maximum", help="fail when a cell is above")
    bound.add_argument("--min", type=FLOAT, dest="minimum", help="fail when a cell is below")
    p.add_argument(
        "--mcse",
        type=FLOAT,
        default=0.0,
        metavar="K",
        help="count a cell only when it crosses by more than K Monte Carlo standard errors "
        "(default 0: the estimate)",
    )
    p.add_argument(
        "--allow-missing",
        action="store_true",
        help="let cells whose metric has no value (NaN) pass",
    )


def run_check(args: argparse.Namespace) -> int:
    """Run ``cogstats sweep check`` from parsed arguments; print the verdict, return 0 or 1."""
    result = check_sweep(
        args.store,
        args.metric,
        maximum=args.maximum,
        minimum=args.minimum,
        mcse=args.mcse,
        allow_missing=args.allow_missing,
    )
    print(result, flush=True)
    return result.exit_code


def check_main(argv: Sequence[str] | None = None, prog: str = "cogstats sweep check") -> int:
    """Parse ``argv`` (the words after ``sweep check``) and run the check.

    Returns the exit status: 0 pass, 1 a cell crosses, 2 a usage error (printed on stderr).

    Examples
    --------
    >>> check_main(["no/such/store", "--metric", "regret", "--max", "0.2"])
    2
    """
    import sys

    parser = argparse.ArgumentParser(
        prog=prog,
        description="fail (exit 1) when a sweep metric crosses a bound in any cell, naming them",
    )
    add_check_arguments(parser)
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        return run_check(args)
    except (CogstatsError, FileNotFoundError) as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
