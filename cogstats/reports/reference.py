"""cycgraph's published operating characteristics, and the comparison with a simulated S1 grid.

The published table (50 replicates per cell, from cycgraph's own simulator
``gateOperatingCharacteristics``) is restated in ``docs/reference.md``:
the correct-verdict rate (evict as harmful for a negative effect, promote for a positive
one) at 10/25/50/100 runs, and at effect 0 the rate of false decisions (promote or evict
as harmful).  ``tests/reference/test_s1_reproduction.py`` holds the same numbers.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from cogstats._validation import ParameterError, check_probability

__all__ = [
    "PUBLISHED_BUDGETS",
    "PUBLISHED_OC",
    "PUBLISHED_REPLICATES",
    "published_comparison",
    "published_oc",
    "verdict_rates",
]

#: Run budgets of the published table's columns.
PUBLISHED_BUDGETS: tuple[int, ...] = (10, 25, 50, 100)
#: Replicates per published cell.
PUBLISHED_REPLICATES = 50
#: effect -> rate by budget: correct verdicts, or false decisions at effect 0.
PUBLISHED_OC: dict[float, tuple[float, ...]] = {
    -0.3: (0.94, 1.00, 1.00, 0.94),
    -0.1: (0.06, 0.08, 0.02, 0.16),
    0.0: (0.02, 0.00, 0.02, 0.00),
    0.1: (0.14, 0.04, 0.14, 0.06),
    0.3: (0.94, 1.00, 0.98, 1.00),
}
#: The S1 spec's grid path of the lesson's true effect.
EFFECT = "lessons.listed[0].effect"


def published_oc(confidence_level: float = 0.95) -> pl.DataFrame:
    """Return the published table as rows: effect, budget, outcome, rate, replicates, low, high.

    ``outcome`` is ``correct_verdict_rate`` for a non-zero effect and
    ``wrong_verdict_rate`` at effect 0 (see :func:`verdict_rates`).  ``low``/``high``
    are exact (Clopper-Pearson) intervals for each published k/50, from statsmodels'
    ``proportion_confint(method="beta")``: how far a 50-replicate estimate can sit from
    the rate it estimates.

    Examples
    --------
    >>> t = published_oc()
    >>> t.height, t.filter(t["effect"] == 0.0)["outcome"].unique().to_list()
    (20, ['wrong_verdict_rate'])
    >>> row = t.filter((t["effect"] == -0.3) & (t["budget"] == 10)).row(0, named=True)
    >>> row["rate"], round(row["low"], 3), round(row["high"], 3)
    (0.94, 0.835, 0.987)
    """
    level = check_probability("confidence_level", confidence_level)
    rows = []
    for effect, rates in PUBLISHED_OC.items():
        outcome = "wrong_verdict_rate" if effect == 0 else "correct_verdict_rate"
        for budget, rate in zip(PUBLISHED_BUDGETS, rates, strict=True):
            k = round(rate * PUBLISHED_REPLICATES)
            low, high = proportion_confint(k, PUBLISHED_REPLICATES, alpha=1 - level, method="beta")
            rows.append((effect, budget, outcome, rate, PUBLISHED_REPLICATES, low, high))
    schema = {
        "effect": pl.Float64,
        "budget": pl.Int64,
        "outcome": pl.String,
        "rate": pl.Float64,
        "replicates": pl.Int64,
        "low": pl.Float64,
        "high": pl.Float64,
    }
    return pl.DataFrame(rows, schema=schema, orient="row")


def verdict_rates(cells: pl.DataFrame, *, effect: str = EFFECT) -> pl.DataFrame:
    """Add ``correct_verdict_rate`` and ``wrong_verdict_rate`` (with ``_mcse``) to a cell table.

    Correct: evicted as harmful when the effect is negative, promoted when positive (null
    at 0).  Wrong: promoted when negative, evicted as harmful when positive, either at 0
    (cycgraph's "false decisions").  With a ``replicates`` column, ``<rate>_mcse`` is the
    binomial standard error ``sqrt(p (1 - p) / replicates)``, exact for S1 where each
    replicate has one lesson under test.

    Examples
    --------
    >>> import polars as pl
    >>> cells = pl.DataFrame({EFFECT: [-0.1, 0.0, 0.1], "replicates": [100] * 3,
    ...                       "promote_rate": [0.01, 0.02, 0.3],
    ...                       "evict_harmful_rate": [0.2, 0.01, 0.0]})
    >>> out = verdict_rates(cells)
    >>> out["correct_verdict_rate"].to_list(), out["wrong_verdict_rate"].to_list()
    ([0.2, None, 0.3], [0.01, 0.03, 0.0])
    """
    if not isinstance(cells, pl.DataFrame):
        raise ParameterError(f"cells must be a polars DataFrame; got {type(cells).__name__}")
    missing = [c for c in (effect, "promote_rate", "evict_harmful_rate") if c not in cells.columns]
    if missing:
        raise ParameterError(
            f"verdict_rates: cells is missing column(s) {missing}; got columns {cells.columns}"
        )
    e = pl.col(effect).cast(pl.Float64)
    promote, harmful = pl.col("promote_rate"), pl.col("evict_harmful_rate")
    out = cells.with_columns(
        pl.when(e < 0)
        .then(harmful)
        .when(e > 0)
        .then(promote)
        .otherwise(None)
        .alias("correct_verdict_rate"),
        pl.when(e < 0)
        .then(promote)
        .when(e > 0)
        .then(harmful)
        .otherwise(promote + harmful)
        .alias("wrong_verdict_rate"),
    )
    if "replicates" in cells.columns:
        n = pl.col("replicates").cast(pl.Float64)
        out = out.with_columns(
            (pl.col(c) * (1 - pl.col(c)) / n).sqrt().alias(f"{c}_mcse")
            for c in ("correct_verdict_rate", "wrong_verdict_rate")
        )
    return out


def published_comparison(
    cells: pl.DataFrame, *, effect: str = EFFECT, budget: str = "runs"
) -> pl.DataFrame:
    """Each published cell beside the simulated one, with an exact binomial check.

    For each published (effect, budget): the published rate and its count k of 50, the
    simulated rate with its Monte Carlo standard error, and the two-sided exact binomial
    p-value (scipy.stats.binomtest) of k at the simulated rate (clipped to
    [1/(2N), 1 - 1/(2N)] for N simulated replicates, so that a simulated 0 or 1 does
    not make every other k impossible).  ``consistent`` is ``pvalue >= 0.001``, the
    per-cell criterion of ``tests/reference/test_s1_reproduction.py`` (with 20 cells a
    family-wise false alarm rate near 2%).

    Parameters
    ----------
    cells : polars.DataFrame
        The S1 cell table (:func:`cogstats.sim.cli.simulate_spec` on
        ``simulations/cycgraph_oc.toml``, or a sweep of it) with ``replicates``,
        ``promote_rate``, ``evict_harmful_rate``.
    effect, budget : str
        Columns of the true effect and the run budget.

    Returns
    -------
    polars.DataFrame
        effect, budget, outcome, published_rate, published_k, published_replicates,
        rate, rate_mcse, replicates, pvalue, consistent; one row per published cell
        that the table has (cells the table lacks are left out).

    Examples
    --------
    >>> import polars as pl
    >>> cells = pl.DataFrame({EFFECT: [0.3], "runs": [10], "replicates": [1000],
    ...                       "promote_rate": [0.95], "evict_harmful_rate": [0.0]})
    >>> row = published_comparison(cells).row(0, named=True)
    >>> row["published_rate"], row["rate"], row["consistent"]
    (0.94, 0.95, True)
    """
    needed = [effect, budget, "replicates", "promote_rate", "evict_harmful_rate"]
    missing = [c for c in needed if c not in cells.columns]
    if missing:
        raise ParameterError(
            f"published_comparison: cells is missing column(s) {missing}; "
            f"got columns {cells.columns}"
        )
    ours = verdict_rates(cells, effect=effect).select(
        pl.col(effect).cast(pl.Float64).alias("effect"),
        pl.col(budget).cast(pl.Int64).alias("budget"),
        pl.col("replicates").cast(pl.Int64),
        "correct_verdict_rate",
        "correct_verdict_rate_mcse",
        "wrong_verdict_rate",
        "wrong_verdict_rate_mcse",
    )
    published = published_oc().select(
        "effect",
        "budget",
        "outcome",
        pl.col("rate").alias("published_rate"),
        pl.col("replicates").alias("published_replicates"),
    )
    joined = published.join(ours, on=["effect", "budget"], how="inner")
    correct = pl.col("outcome") == "correct_verdict_rate"
    joined = joined.with_columns(
        pl.when(correct)
        .then(pl.col("correct_verdict_rate"))
        .otherwise(pl.col("wrong_verdict_rate"))
        .alias("rate"),
        pl.when(correct)
        .then(pl.col("correct_verdict_rate_mcse"))
        .otherwise(pl.col("wrong_verdict_rate_mcse"))
        .alias("rate_mcse"),
        (pl.col("published_rate") * pl.col("published_replicates"))
        .round()
        .cast(pl.Int64)
        .alias("published_k"),
    )
    pvalues = []
    for k, m, rate, n in joined.select(
        "published_k", "published_replicates", "rate", "replicates"
    ).iter_rows():
        p = float(np.clip(rate, 1 / (2 * n), 1 - 1 / (2 * n)))
        pvalues.append(float(stats.binomtest(k, m, p).pvalue) if math.isfinite(p) else math.nan)
    return (
        joined.with_columns(pl.Series("pvalue", pvalues, dtype=pl.Float64))
        .with_columns((pl.col("pvalue") >= 0.001).alias("consistent"))
        .select(
            "effect",
            "budget",
            "outcome",
            "published_rate",
            "published_k",
            "published_replicates",
            "rate",
            "rate_mcse",
            "replicates",
            "pvalue",
            "consistent",
        )
        .sort("effect", "budget")
    )
