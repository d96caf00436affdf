"""Reading a sweep's cell table: operating characteristics, Pareto frontiers, a recommendation.

Every function takes the cell table of :func:`~cogstats.sweep.read_sweep` (or any frame
with the same columns) and returns frames or a result object; none of them simulates.
``missed_poison`` (= 1 - ``poison_recall``, with the same Monte Carlo standard error) is
added where ``poison_recall`` is present, so it can be used like any metric.

Monte Carlo error: each cell's metric is a mean over replicates and ``<metric>_mcse`` its
standard error.  :func:`recommend` can require a constraint to hold at a one-sided upper
(or lower) confidence bound, ``estimate + z * mcse``, instead of at the estimate, and it
lists the feasible cells whose objective is within Monte Carlo error of the best.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl
from scipy import stats

from cogstats._validation import ParameterError

__all__ = [
    "Constraint",
    "Recommendation",
    "grid_columns",
    "operating_characteristics",
    "pareto_frontier",
    "recommend",
    "with_derived",
]

#: columns of a cell table that are not grid axes
_FIXED = {"cell", "cell_key", "seed", "replicates", "engine", "elapsed_s", "worker", "cells"}
_RATES = {
    "promote_rate",
    "evict_harmful_rate",
    "evict_no_lift_rate",
    "retire_rate",
    "hold_rate",
    "mean_decision_run",
}
#: metrics of :func:`operating_characteristics` by default
OC_METRICS = (
    "poison_recall",
    "missed_poison",
    "false_eviction_rate",
    "false_promotion_rate",
    "time_to_verdict",
    "poison_time_to_eviction",
    "fitness_from_poison",
    "regret",
)


def _metric_names(table: pl.DataFrame) -> set[str]:
    return {c[: -len("_mcse")] for c in table.columns if c.endswith("_mcse")}


def grid_columns(table: pl.DataFrame) -> list[str]:
    """Return the grid axes of a cell table: every column that is not an id, seed or metric.

    Examples
    --------
    >>> import polars as pl
    >>> t = pl.DataFrame({"cell": [0], "gate.min_trials": [2], "seed": ["{}"],
    ...                   "regret": [0.1], "regret_mcse": [0.01]})
    >>> grid_columns(t)
    ['gate.min_trials']
    """
    metrics = _metric_names(table)
    return [
        c
        for c in table.columns
        if c not in _FIXED
        and c not in _RATES
        and c not in metrics
        and not c.endswith("_mcse")
        and c != "missed_poison"
    ]


def with_derived(table: pl.DataFrame) -> pl.DataFrame:
    """Add ``missed_poison`` = 1 - ``poison_recall`` (and its MCSE) when possible.

    Examples
    --------
    >>> import polars as pl
    >>> t = pl.DataFrame({"poison_recall": [0.75], "poison_recall_mcse": [0.05]})
    >>> with_derived(t).row(0)
    (0.75, 0.05, 0.25, 0.05)
    """
    if "poison_recall" in table.columns and "missed_poison" not in table.columns:
        table = table.with_columns((1.0 - pl.col("poison_recall")).alias("missed_poison"))
        if "poison_recall_mcse" in table.columns:
            table = table.with_columns(pl.col("poison_recall_mcse").alias("missed_poison_mcse"))
    return table


def _check_columns(table: pl.DataFrame, names: Sequence[str], what: str) -> None:
    for n in names:
        if n not in table.columns:
            metrics = sorted(_metric_names(table) | ({"missed_poison"} & set(table.columns)))
            raise ParameterError(
                f"{what} names {n!r}, which is not a column of the table; metrics: {metrics}, "
                f"grid columns: {grid_columns(table)}"
            )


def operating_characteristics(
    table: pl.DataFrame,
    by: str | Sequence[str] | None = None,
    metrics: Sequence[str] = OC_METRICS,
) -> pl.DataFrame:
    """Operating-characteristic table: each metric (with its MCSE) per setting of ``by``.

    Parameters
    ----------
    table : polars.DataFrame
        A sweep's cell table.
    by : str or sequence of str, optional
        Grid columns to tabulate by (default: every grid column, one row per cell).
        With fewer columns, each row averages the cells that share those values with
        equal weight, and the MCSE of that average is ``sqrt(sum mcse^2) / k`` over its
        ``k`` cells (cells are independent).
    metrics : sequence of str
        Metrics to report (those absent from the table are skipped).

    Returns
    -------
    polars.DataFrame
        ``by`` columns, ``cells``, then ``<metric>`` and ``<metric>_mcse`` for each
        metric, sorted by ``by``.

    Examples
    --------
    >>> import polars as pl
    >>> t = pl.DataFrame({
    ...     "cell": [0, 1, 2, 3], "rule": ["a", "a", "b", "b"], "k": [1, 2, 1, 2],
    ...     "regret": [0.1, 0.3, 0.2, 0.2], "regret_mcse": [0.03, 0.04, 0.0, 0.0],
    ... })
    >>> operating_characteristics(t, by="rule", metrics=["regret"]).rows()
    [('a', 2, 0.2, 0.025), ('b', 2, 0.2, 0.0)]
    """
    table = with_derived(table)
    keys = grid_columns(table) if by is None else [by] if isinstance(by, str) else list(by)
    _check_columns(table, keys, "by")
    if not keys:
        table = table.with_columns(pl.lit("all").alias("_all"))
        keys = ["_all"]
    present = [m for m in metrics if m in table.columns]
    aggs: list[pl.Expr] = [pl.len().cast(pl.Int64).alias("cells")]
    for m in present:
        aggs.append(pl.col(m).mean().alias(m))
        if f"{m}_mcse" in table.columns:
            aggs.append(((pl.col(f"{m}_mcse") ** 2).sum().sqrt() / pl.len()).alias(f"{m}_mcse"))
    out = table.group_by(keys, maintain_order=True).agg(aggs).sort(keys)
    return out.drop("_all") if keys == ["_all"] else out


def pareto_frontier(
    table: pl.DataFrame,
    x: str = "time_to_verdict",
    y: str = "false_eviction_rate",
) -> pl.DataFrame:
    """Return the cells not dominated in (``x``, ``y``), both minimized, sorted by ``x``.

    A cell is dominated when another is at least as good in both and better in one.
    Cells where ``x`` or ``y`` is NaN or null are left out.  The frontier is computed on
    the point estimates; the ``_mcse`` columns say how far each point could move.

    Parameters
    ----------
    table : polars.DataFrame
        A sweep's cell table.
    x, y : str
        Metrics to minimize, e.g. ``time_to_verdict`` against ``false_eviction_rate``
        or ``missed_poison`` (= 1 - poison_recall).

    Returns
    -------
    polars.DataFrame
        The frontier's rows (every column of the table), sorted by ``x`` then ``y``.

    Examples
    --------
    >>> import polars as pl
    >>> t = pl.DataFrame({"cell": [0, 1, 2, 3], "time_to_verdict": [3.0, 2.0, 4.0, 2.0],
    ...                   "false_eviction_rate": [0.01, 0.05, 0.01, 0.06]})
    >>> pareto_frontier(t)["cell"].to_list()
    [1, 0]
    """
    table = with_derived(table)
    _check_columns(table, [x, y], "pareto_frontier")
    clean = table.filter(
        pl.col(x).is_not_null()
        & pl.col(y).is_not_null()
        & pl.col(x).cast(pl.Float64).is_not_nan()
        & pl.col(y).cast(pl.Float64).is_not_nan()
    )
    if clean.height == 0:
        return clean
    xs = clean[x].cast(pl.Float64).to_numpy()
    ys = clean[y].cast(pl.Float64).to_numpy()
    order = np.lexsort((ys, xs))
    xs_s, ys_s = xs[order], ys[order]
    # Sorted by (x, y), cell i is dominated iff some cell before the first copy of its
    # (x, y) pair has y <= y_i: those are exactly the cells with smaller x, or equal x
    # and smaller y.
    new_pair = np.ones(len(xs_s), dtype=bool)
    new_pair[1:] = (xs_s[1:] != xs_s[:-1]) | (ys_s[1:] != ys_s[:-1])
    first = np.maximum.accumulate(np.where(new_pair, np.arange(len(xs_s)), 0))
    prefix_min = np.concatenate([[np.inf], np.minimum.accumulate(ys_s)])
    keep_sorted = prefix_min[first] > ys_s
    keep = order[keep_sorted]
    return clean[np.sort(keep)].sort([x, y], maintain_order=True)


# ---------------------------------------------------------------------- recommend
_CONSTRAINT = re.compile(  # (ASCII: a bound in other digits or with underscores is refused)
    r"^\s*([A-Za-z_][\w.\[\]]*)\s*(<=|>=|<|>)\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(%?)\s*$",
    re.ASCII,
)


@dataclass(frozen=True)
class Constraint:
    """``metric op bound`` with op one of <=, <, >=, >.

    Examples
    --------
    >>> Constraint.parse("false_eviction_rate <= 2%")
    Constraint(metric='false_eviction_rate', op='<=', bound=0.02)
    """

    metric: str
    op: str
    bound: float

    @classmethod
    def parse(cls, text: str) -> Constraint:
        """Parse ``"metric <= 0.02"`` (a trailing ``%`` divides the bound by 100)."""
        if not isinstance(text, str):
            raise ParameterError(f"constraint must be a string like 'metric <= 0.02'; got {text!r}")
        m = _CONSTRAINT.match(text)
        if not m:
            raise ParameterError(
                f"constraint must look like 'metric <= 0.02' (ops <=, <, >=, >); got {text!r}"
            )
        bound = float(m.group(3)) / (100.0 if m.group(4) else 1.0)
        return cls(m.group(1), m.group(2), bound)

    @property
    def upper(self) -> bool:
        """Whether the bound is an upper bound (<=, <)."""
        return self.op in ("<=", "<")

    def __str__(self) -> str:
        """Return the constraint as text (``metric op bound``)."""
        return f"{self.metric} {self.op} {self.bound:g}"


def _constraints(
    constraint: str | Sequence[str] | None,
    at_most: Mapping[str, float] | None,
    at_least: Mapping[str, float] | None,
) -> list[Constraint]:
    out: list[Constraint] = []
    if constraint is not None:
        texts = [constraint] if isinstance(constraint, str) else list(constraint)
        for t in texts:
            parts = re.split(r"\s+and\s+", t) if isinstance(t, str) else [t]
            out += [Constraint.parse(p) for p in parts]
    for name, bounds, op in (("at_most", at_most, "<="), ("at_least", at_least, ">=")):
        if bounds is None:
            continue
        if not isinstance(bounds, Mapping):
            raise ParameterError(f"{name} must be a mapping metric -> bound; got {bounds!r}")
        for metric, bound in bounds.items():
            if isinstance(bound, bool) or not isinstance(bound, int | float):
                raise ParameterError(f"{name}[{metric!r}] must be a number; got {bound!r}")
            out.append(Constraint(str(metric), op, float(bound)))
    return out


@dataclass(frozen=True, repr=False, eq=False)
class Recommendation:
    """The best cell under constraints, with its Monte Carlo errors.

    Attributes
    ----------
    feasible : bool
        Whether any cell meets every constraint.
    row : dict or None
        The chosen cell's row (every column, ``<metric>_mcse`` included); None when no
        cell is feasible.
    objective : str
        The metric optimized; ``minimize`` says in which direction.
    constraints : tuple of Constraint
        What had to hold, at the estimate or (``confidence`` set) at the one-sided
        confidence bound ``estimate +/- z * mcse``.
    n_feasible : int
        Cells meeting every constraint (of ``n_cells`` with a defined objective).
    ties : polars.DataFrame
        Feasible cells whose objective is within Monte Carlo error of the best (the
        difference is below ``z_tie`` times its standard error), best first; the choice
        among them is not resolved by this many replicates.
    closest : dict or None
        When no cell is feasible: the cell with the smallest total violation (in MCSE
        units where the MCSE is positive, else in the metric's units).
    message : str
        A sentence saying what was chosen, or that nothing was feasible and why.
    """

    feasible: bool
    row: dict[str, Any] | None
    objective: str
    minimize: bool
    constraints: tuple[Constraint, ...]
    confidence: float | None
    n_feasible: int
    n_cells: int
    ties: pl.DataFrame
    closest: dict[str, Any] | None
    message: str
    settings: Mapping[str, Any] = field(default_factory=dict)

    def to_frame(self) -> pl.DataFrame:
        """Return the chosen row followed by the tied cells (empty when nothing is feasible)."""
        return self.ties

    def summary(self) -> str:
        """Return the message and the chosen cell's metrics with their MCSE."""
        lines = [self.message]
        row = self.row if self.row is not None else self.closest
        if row is not None:
            grid = [c for c in grid_columns(pl.DataFrame([row]))]
            lines.append("  " + ", ".join(f"{g} = {row[g]!r}" for g in grid))
            for m in [self.objective, *[c.metric for c in self.constraints]]:
                mc = row.get(f"{m}_mcse")
                mc_text = f" +/- {mc:.4g} (MCSE)" if mc is not None else ""
                lines.append(f"  {m} = {row[m]:.4g}{mc_text}")
        if self.feasible and self.ties.height > 1:
            others = self.ties["cell"].to_list()[1:] if "cell" in self.ties.columns else []
            lines.append(
                f"  {self.ties.height - 1} other feasible cell(s) within Monte Carlo error of "
                f"the best: cells {others}"
            )
        return "\n".join(lines)

    def __str__(self) -> str:
        """Return the summary."""
        return self.summary()

    def __repr__(self) -> str:
        """Return a short text form."""
        cell = self.row.get("cell") if self.row else None
        return (
            f"Recommendation(feasible={self.feasible}, cell={cell!r}, "
            f"objective={self.objective!r}, n_feasible={self.n_feasible}/{self.n_cells})"
        )

    def _repr_html_(self) -> str:
        with pl.Config(float_precision=4):
            table = self.ties._repr_html_() if self.ties.height else ""
        body = html.escape(self.summary()).replace("\n", "<br>")
        return f"<div><p>{body}</p>{table}</div>"


def recommend(
    table: pl.DataFrame,
    constraint: str | Sequence[str] | None = None,
    objective: str = "time_to_verdict",
    *,
    minimize: bool = True,
    at_most: Mapping[str, float] | None = None,
    at_least: Mapping[str, float] | None = None,
    confidence: float | None = None,
    z_tie: float = 2.0,
) -> Recommendation:
    """Recommend the best cell by ``objective`` among those meeting every constraint.

    Parameters
    ----------
    table : polars.DataFrame
        A sweep's cell table.
    constraint : str or sequence of str, optional
        ``"false_eviction_rate <= 0.02"``; several joined by ``and`` or given as a list;
        a trailing ``%`` means percent (``"<= 2%"``).
    objective : str
        Metric to optimize (default ``time_to_verdict``).
    minimize : bool
        Minimize (default) or maximize the objective.
    at_most, at_least : mapping, optional
        Keyword form: ``at_most={"false_eviction_rate": 0.02}``,
        ``at_least={"poison_recall": 0.99}``.
    confidence : float, optional
        When set (e.g. 0.95), a constraint must hold at the one-sided confidence bound:
        ``estimate + z * mcse <= bound`` for upper bounds, ``estimate - z * mcse >=
        bound`` for lower bounds, with ``z = Phi^-1(confidence)``.  Default: at the
        estimate.
    z_tie : float
        Feasible cells whose objective differs from the best by less than ``z_tie``
        standard errors of the difference (``sqrt(mcse_best^2 + mcse^2)``) are listed
        in ``ties``.

    Returns
    -------
    Recommendation
        ``feasible`` False (with ``closest`` and a message naming the constraints that
        no cell meets) when nothing qualifies.  Ties in the objective are broken by the
        lowest cell index.

    Examples
    --------
    >>> import polars as pl
    >>> t = pl.DataFrame({
    ...     "cell": [0, 1, 2], "gate.min_trials": [2, 3, 4],
    ...     "time_to_verdict": [2.0, 3.0, 4.0], "time_to_verdict_mcse": [0.1, 0.1, 0.1],
    ...     "false_eviction_rate": [0.05, 0.015, 0.005],
    ...     "false_eviction_rate_mcse": [0.004, 0.004, 0.002],
    ... })
    >>> recommend(t, "false_eviction_rate <= 0.02").row["gate.min_trials"]
    3
    >>> recommend(t, "false_eviction_rate <= 0.02", confidence=0.95).row["gate.min_trials"]
    4
    >>> recommend(t, at_most={"false_eviction_rate": 0.001}).feasible
    False
    """
    table = with_derived(table)
    cons = tuple(_constraints(constraint, at_most, at_least))
    z = _check_recommend(table, objective, cons, confidence, z_tie)
    obj = pl.col(objective).cast(pl.Float64)
    usable = table.filter(obj.is_not_null() & obj.is_not_nan())
    marked = usable.with_columns(*_marks(cons, z, table))
    feasible = marked.filter(pl.col("_ok"))
    sort_cols = [objective, "cell"] if "cell" in table.columns else [objective]
    desc = [not minimize] + [False] * (len(sort_cols) - 1)
    common: dict[str, Any] = {
        "objective": objective,
        "minimize": minimize,
        "constraints": cons,
        "confidence": confidence,
        "n_cells": usable.height,
        "settings": {
            "constraints": [str(c) for c in cons],
            "objective": objective,
            "minimize": minimize,
            "confidence": confidence,
            "z_tie": z_tie,
        },
    }
    where = "" if confidence is None else f" at the one-sided {confidence:.0%} bound"
    if feasible.height == 0:
        return _infeasible(marked, (sort_cols, desc), z, table, where, common)
    ranked = feasible.sort(sort_cols, descending=desc).drop("_ok", "_violation")
    best = ranked.row(0, named=True)
    mc_col = f"{objective}_mcse"
    direction = "lowest" if minimize else "highest"
    mc_text = f" +/- {best[mc_col]:.3g}" if mc_col in best and best[mc_col] is not None else ""
    msg = (
        f"cell {best.get('cell')!r}: {direction} {objective} ({best[objective]:.4g}{mc_text}) "
        f"among {feasible.height} of {usable.height} cells meeting "
        f"{' and '.join(map(str, cons)) or 'no constraint'}{where}"
    )
    return Recommendation(
        feasible=True,
        row=best,
        n_feasible=feasible.height,
        ties=_ties(ranked, best, objective, z_tie),
        closest=None,
        message=msg,
        **common,
    )


def _check_recommend(
    table: pl.DataFrame,
    objective: Any,
    cons: Sequence[Constraint],
    confidence: Any,
    z_tie: Any,
) -> float:
    """Check :func:`recommend`'s arguments; return the confidence bound's z (0: none)."""
    if not isinstance(objective, str):
        raise ParameterError(f"objective must be a metric name; got {objective!r}")
    _check_columns(table, [objective], "objective")
    _check_columns(table, [c.metric for c in cons], "a constraint")
    z = 0.0
    if confidence is not None:
        if (
            isinstance(confidence, bool)
            or not isinstance(confidence, int | float)
            or not (0.5 <= float(confidence) < 1)
        ):
            raise ParameterError(f"confidence must be in [0.5, 1) or None; got {confidence!r}")
        z = float(stats.norm.ppf(float(confidence)))
    if isinstance(z_tie, bool) or not isinstance(z_tie, int | float) or not z_tie >= 0:
        raise ParameterError(f"z_tie must be a number >= 0; got {z_tie!r}")
    return z


def _marks(cons: Sequence[Constraint], z: float, table: pl.DataFrame) -> tuple[pl.Expr, pl.Expr]:
    """``_ok`` (every constraint holds) and ``_violation`` (by how much, in MCSE units)."""
    ok = pl.lit(True)
    violation = pl.lit(0.0)
    for c in cons:
        holds, bound, mcse = _holds(c, z, table)
        ok = ok & holds
        gap = (bound - c.bound) if c.upper else (c.bound - bound)
        scale = pl.when(mcse > 0).then(mcse).otherwise(1.0)
        violation = violation + pl.when(holds).then(0.0).otherwise(
            (gap.clip(lower_bound=0.0) / scale).fill_nan(math.inf)
        )
    return ok.alias("_ok"), violation.alias("_violation")


def _infeasible(
    marked: pl.DataFrame,
    order: tuple[list[str], list[bool]],
    z: float,
    table: pl.DataFrame,
    where: str,
    common: dict[str, Any],
) -> Recommendation:
    """Return the recommendation when no cell meets every constraint: the closest, and why."""
    sort_cols, desc = order
    cons: tuple[Constraint, ...] = common["constraints"]
    closest = None
    if marked.height:
        closest = (
            marked.sort(["_violation", *sort_cols], descending=[False, *desc])
            .drop("_ok", "_violation")
            .row(0, named=True)
        )
    unmet = [
        str(c)
        for c in cons
        if marked.height and not marked.select(_holds(c, z, table)[0].any()).item()
    ]
    msg = (
        f"no cell meets {' and '.join(map(str, cons)) or 'the constraints'}{where} "
        f"(of {common['n_cells']} cells with a defined {common['objective']})"
    )
    if unmet:
        msg += f"; no cell meets {', '.join(unmet)} even on its own"
    if closest is not None:
        msg += f"; closest: cell {closest.get('cell')!r}"
    return Recommendation(
        feasible=False,
        row=None,
        n_feasible=0,
        ties=marked.filter(pl.col("_ok")).drop("_ok", "_violation"),
        closest=closest,
        message=msg,
        **common,
    )


def _ties(ranked: pl.DataFrame, best: dict[str, Any], objective: str, z_tie: float) -> pl.DataFrame:
    """Return the feasible cells within ``z_tie`` standard errors of the best, best first."""
    mc_col = f"{objective}_mcse"
    if mc_col not in ranked.columns:
        return ranked.filter(pl.col(objective) == best[objective])
    best_mc = float(best[mc_col]) if best[mc_col] is not None else 0.0
    best_mc = 0.0 if math.isnan(best_mc) else best_mc
    se = (pl.col(mc_col).cast(pl.Float64).fill_nan(0.0).fill_null(0.0) ** 2 + best_mc**2).sqrt()
    diff = (pl.col(objective).cast(pl.Float64) - float(best[objective])).abs()
    return ranked.filter((diff == 0) | (diff < z_tie * se))


def _holds(c: Constraint, z: float, table: pl.DataFrame) -> tuple[pl.Expr, pl.Expr, pl.Expr]:
    """(whether the constraint holds, the bound tested, the MCSE) per cell."""
    est = pl.col(c.metric).cast(pl.Float64)
    mcse = (
        pl.col(f"{c.metric}_mcse").cast(pl.Float64).fill_nan(0.0).fill_null(0.0)
        if f"{c.metric}_mcse" in table.columns
        else pl.lit(0.0)
    )
    bound = est + z * mcse if c.upper else est - z * mcse
    tests = {
        "<=": bound <= c.bound,
        "<": bound < c.bound,
        ">=": bound >= c.bound,
        ">": bound > c.bound,
    }
    return tests[c.op].fill_null(False) & est.is_not_nan(), bound, mcse
