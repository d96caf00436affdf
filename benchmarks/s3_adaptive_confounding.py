"""Benchmark S3: bias, RMSE, coverage and rank correlation of each estimator under UCB1.

Simulates simulations/adaptive_confounding.toml and applies every estimator to each
replicate's final ledger; the truth is each lesson's additive effect.  Per method:
``rms_bias`` (root mean square over lessons of the replicate-averaged error), its
``bias_reduction`` relative to naive lift (1 - rms_bias / lift's), ``rmse``, 95% interval
``coverage`` with its Monte Carlo standard error, and the mean Spearman correlation of the
estimates with the truth.  Goal (docs/benchmarks.md): methods that use the logged
propensities or the difficulty covariates cut lift's bias by at least 80% with coverage in
93-97%.

Run: ``python -m benchmarks.s3_adaptive_confounding [--quick]``.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import polars as pl
from scipy import stats

from benchmarks._common import cli, machine
from cogstats import attribute
from cogstats.sim import load_spec, simulate

SPEC = Path(__file__).resolve().parents[1] / "simulations" / "adaptive_confounding.toml"

#: (label, method, options)
METHODS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("lift", "lift", {}),
    ("ols + family", "ols", {"covariates": ("family",)}),
    ("ols + family + proxy", "ols", {"covariates": ("family", "difficulty_proxy")}),
    ("ols + proxy", "ols", {"covariates": ("difficulty_proxy",)}),
    ("ipw (logged)", "ipw", {}),
    ("aipw + family", "aipw", {"covariates": ("family",)}),
    ("freedman_lane + family", "freedman_lane", {"covariates": ("family",), "permutations": 999}),
)


def evaluate(
    replicates: int,
    seed: int,
    methods: tuple[tuple[str, str, dict[str, Any]], ...] = METHODS,
) -> pl.DataFrame:
    """One row per (method, replicate, lesson): estimate, interval and the truth."""
    spec = load_spec(SPEC)
    result = simulate(spec.scenario, replicates=replicates, rng=seed)
    truth = result.lessons.select("replicate", "fact_id", "true_effect")
    parts = []
    for rep in range(replicates):
        ledger = result.ledger(rep)
        for label, method, options in methods:
            frame = attribute(ledger, method=method, rng=rep, **options).to_frame()
            parts.append(
                frame.select("fact_id", "estimate", "ci_low", "ci_high").with_columns(
                    pl.lit(label).alias("method"), pl.lit(rep).alias("replicate")
                )
            )
    return pl.concat(parts).join(truth, on=["replicate", "fact_id"])


def score(rows: pl.DataFrame) -> pl.DataFrame:
    """The S3 table: one row per method."""
    rows = rows.with_columns(
        (pl.col("estimate") - pl.col("true_effect")).alias("error"),
        ((pl.col("ci_low") <= pl.col("true_effect")) & (pl.col("true_effect") <= pl.col("ci_high")))
        .cast(pl.Float64)
        .alias("covered"),
    )
    per_lesson = rows.group_by("method", "fact_id").agg(pl.col("error").mean().alias("bias"))
    bias = per_lesson.group_by("method").agg((pl.col("bias") ** 2).mean().sqrt().alias("rms_bias"))
    rank = (
        rows.group_by("method", "replicate")
        .agg(pl.col("estimate"), pl.col("true_effect"))
        .with_columns(
            pl.struct("estimate", "true_effect")
            .map_elements(
                lambda s: float(stats.spearmanr(s["estimate"], s["true_effect"]).statistic),
                return_dtype=pl.Float64,
            )
            .alias("spearman")
        )
        .group_by("method")
        .agg(pl.col("spearman").mean())
    )
    table = (
        rows.group_by("method")
        .agg(
            (pl.col("error") ** 2).mean().sqrt().alias("rmse"),
            pl.col("covered").mean().alias("coverage"),
            pl.col("covered").count().alias("intervals"),
            pl.col("estimate").is_null().mean().alias("null_share"),
        )
        .join(bias, on="method")
        .join(rank, on="method")
    )
    lift_bias = float(table.filter(pl.col("method") == "lift")["rms_bias"][0])
    labels = rows["method"].unique(maintain_order=True).to_list()
    order = {label: i for i, label in enumerate(labels)}
    return (
        table.with_columns(
            (1 - pl.col("rms_bias") / lift_bias).alias("bias_reduction"),
            (pl.col("coverage") * (1 - pl.col("coverage")) / pl.col("intervals"))
            .sqrt()
            .alias("coverage_mcse"),
        )
        .with_columns(pl.col("method").replace_strict(order).alias("_o"))
        .sort("_o")
        .drop("_o")
        .select(
            "method",
            "rms_bias",
            "bias_reduction",
            "rmse",
            "coverage",
            "coverage_mcse",
            "spearman",
            "null_share",
            "intervals",
        )
    )


def run(quick: bool = False) -> dict[str, Any]:
    """Run S3 and return the table as records (and print it)."""
    seed = 20261130
    replicates = 20 if quick else load_spec(SPEC).replicates
    t = time.perf_counter()
    table = score(evaluate(replicates, seed))
    elapsed = time.perf_counter() - t
    with pl.Config(tbl_rows=20, float_precision=4, tbl_width_chars=140):
        print(f"S3  adaptive confounding, {replicates} replicates x 12 lessons")
        print(table)
    return {
        "benchmark": "S3",
        "replicates": replicates,
        "seed": seed,
        "seconds": elapsed,
        "table": table.to_dicts(),
        "machine": machine(),
    }


if __name__ == "__main__":
    cli(run, __doc__)
