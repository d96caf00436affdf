"""Estimators side by side on simulated ledgers, scored against the known true effects.

Report notebooks may not define functions or loop over statistics, so the loops live
here: :func:`compare_attributions` runs several registry methods on one ledger and stacks
their rows (with the truth when given); :func:`attribution_accuracy` does that over many
replicates of a simulation and summarises bias, RMSE and 95% coverage per method with
Monte Carlo standard errors that respect the clustering of lessons within replicates.

"True effect" is the scenario's additive effect on the score; with the clamp link a
lesson's realised effect is smaller where scores hit 0 or 1 (rare in S1/S2).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import polars as pl

from cogstats._validation import ParameterError, check_int
from cogstats.estimators import ATTRIBUTION_COLUMNS, attribute, get_spec
from cogstats.ledger import Ledger

if TYPE_CHECKING:  # the simulator (numba) is imported only by callers that have a result
    from cogstats.sim import SimulationResult

__all__ = ["attribution_accuracy", "compare_attributions", "relative_truth"]


def _method_table(
    methods: Mapping[str, Mapping[str, Any]],
) -> list[tuple[str, str, dict[str, Any]]]:
    """(label, registry method, options) per entry; validated against the registry."""
    if not isinstance(methods, Mapping) or not methods:
        raise ParameterError(
            "methods must be a non-empty mapping label -> {'method': name, **options}; "
            f"got {methods!r}"
        )
    out = []
    for label, entry in methods.items():
        if not isinstance(label, str) or not isinstance(entry, Mapping):
            raise ParameterError(
                f"methods[{label!r}] must map a label (str) to a mapping of options; got {entry!r}"
            )
        options = dict(entry)
        name = options.pop("method", label)
        spec = get_spec(name)  # unknown method: error naming the registered ones
        unknown = [k for k in options if k not in spec.defaults]
        if unknown:
            raise ParameterError(
                f"methods[{label!r}]: unknown option {unknown[0]!r} for method {name!r}; "
                f"allowed: {sorted(spec.defaults)}"
            )
        out.append((label, name, options))
    return out


def compare_attributions(
    ledger: Ledger,
    methods: Mapping[str, Mapping[str, Any]],
    *,
    truth: pl.DataFrame | None = None,
    rng: Any = None,
) -> pl.DataFrame:
    """Run several estimators on one ledger and stack their rows.

    Parameters
    ----------
    ledger : Ledger
        The runs (e.g. ``SimulationResult.ledger(r)``).
    methods : mapping
        ``label -> {"method": registry name, **options}``; ``method`` defaults to the
        label.  E.g. ``{"lift": {}, "ols + proxy": {"method": "ols", "covariates":
        ["difficulty_proxy"]}}``.
    truth : polars.DataFrame, optional
        ``fact_id`` with ``true_effect`` (and ``kind`` when present), e.g. one replicate
        of a simulation's ``lessons``; joined onto the rows.
    rng : int, numpy.random.Generator or None
        Seed; each method draws from its own child stream (``Generator.spawn``).

    Returns
    -------
    polars.DataFrame
        The fixed attribution columns (``method`` holds the label) and ``relative_to``
        (a pool's mean lesson, for estimates relative to it; null: an absolute effect),
        plus ``true_effect`` (what the row estimates: :func:`relative_truth`),
        ``true_effect_absolute`` (and ``kind``) with ``truth``.  Rows without an estimate (a
        lesson a method cannot separate) are kept with nulls.

    Examples
    --------
    >>> from cogstats.sim import Scenario, simulate
    >>> scenario = Scenario.from_dict({
    ...     "runs": 40, "gate": {"type": "none"},
    ...     "retrieval": {"policy": "randomized", "max_facts": 2, "candidate_slots": 2},
    ...     "lessons": {"listed": [{"id": "a", "effect": 0.1}, {"id": "b", "effect": 0.0},
    ...                            {"id": "c", "effect": -0.1}]},
    ... })
    >>> result = simulate(scenario, replicates=1, rng=4)
    >>> rows = compare_attributions(
    ...     result.ledger(0), {"lift": {}, "ols": {}},
    ...     truth=result.lessons.filter(result.lessons["replicate"] == 0), rng=1)
    >>> rows.select("method", "fact_id", "true_effect").rows()[:2]
    [('lift', 'a', 0.1), ('lift', 'b', 0.0)]
    """
    table = _method_table(methods)
    if not isinstance(ledger, Ledger):
        raise ParameterError(f"ledger must be a cogstats Ledger; got {type(ledger).__name__}")
    streams = np.random.default_rng(rng).spawn(len(table))
    frames = []
    for (label, name, options), stream in zip(table, streams, strict=True):
        result = attribute(ledger, method=name, rng=stream, **options)
        frame = result.to_frame()
        relative = (
            pl.col("relative_to")
            if "relative_to" in frame.columns
            else pl.lit(None, dtype=pl.String).alias("relative_to")
        )
        frames.append(
            frame.select(*ATTRIBUTION_COLUMNS, relative).with_columns(pl.lit(label).alias("method"))
        )
    rows = pl.concat(frames, how="vertical_relaxed")
    if truth is not None:
        missing = [c for c in ("fact_id", "true_effect") if c not in truth.columns]
        if missing:
            raise ParameterError(
                f"truth is missing column(s) {missing}; got columns {truth.columns}"
            )
        keep = ["fact_id", "true_effect", *(["kind"] if "kind" in truth.columns else [])]
        rows = relative_truth(
            rows.join(truth.select(keep).unique("fact_id"), on="fact_id", how="left")
        )
    return rows


def relative_truth(rows: pl.DataFrame) -> pl.DataFrame:
    """Make ``true_effect`` what each row estimates: relative to the pool's mean lesson.

    A row whose ``relative_to`` names a pool (fixed-size prompts,
    :mod:`cogstats.estimators.contrasts`) estimates the lesson's effect minus the mean
    effect of its pool, so its ``true_effect`` becomes the lesson's true effect minus the
    pool's mean true effect (the pool: the method's rows with the same ``relative_to``);
    ``true_effect_absolute`` keeps the lesson's own.

    Examples
    --------
    >>> rows = pl.DataFrame({"method": ["ols"] * 3, "fact_id": ["a", "b", "c"],
    ...                      "relative_to": ["mean of 2 lessons"] * 2 + [None],
    ...                      "true_effect": [0.3, 0.1, 0.05]})
    >>> relative_truth(rows)["true_effect"].round(6).to_list()
    [0.1, -0.1, 0.05]
    """
    pool_mean = pl.col("true_effect").mean().over(["method", "relative_to"])
    return rows.with_columns(
        pl.col("true_effect").alias("true_effect_absolute"),
        pl.when(pl.col("relative_to").is_not_null())
        .then(pl.col("true_effect") - pool_mean)
        .otherwise(pl.col("true_effect"))
        .alias("true_effect"),
    )


def attribution_accuracy(
    result: SimulationResult,
    methods: Mapping[str, Mapping[str, Any]],
    *,
    replicates: int | None = None,
    by: tuple[str, ...] = (),
    rng: Any = None,
) -> pl.DataFrame:
    """Bias, RMSE and interval coverage of each method over simulated replicates.

    For replicates ``0 .. replicates-1`` of ``result`` (a
    :class:`~cogstats.sim.SimulationResult` with its runs kept), every method estimates
    every lesson of that replicate's ledger; each (replicate, lesson) with an estimate
    is scored against the lesson's true effect (relative to its pool's mean where the
    estimate is, :func:`relative_truth`).

    Parameters
    ----------
    result : SimulationResult
        A simulation with known true effects.
    methods : mapping
        As in :func:`compare_attributions`.
    replicates : int, optional
        How many replicates to score (default: all).
    by : tuple of str
        Extra grouping columns of ``result.lessons`` (e.g. ``("kind",)``).
    rng : int, numpy.random.Generator or None
        Seed for the methods that draw.

    Returns
    -------
    polars.DataFrame
        One row per method (and ``by`` group): ``lessons`` (scored lesson-replicate
        pairs), ``estimated_share`` (share of pairs with an estimate), ``bias`` (mean of
        estimate - truth), ``rmse``, ``coverage`` (share of intervals holding the truth,
        among pairs with an interval), each with ``_mcse``, and ``replicates``.

    Notes
    -----
    Each figure is a ratio of per-replicate sums, ``sum_r S_r / sum_r n_r``; lessons of
    one replicate share its runs, so the Monte Carlo standard error treats replicates as
    the independent units (the delta-method / cluster-robust variance of a ratio
    estimator: ``sqrt(R / (R - 1) * sum_r (S_r - m n_r)^2) / sum_r n_r``); RMSE's
    follows by the delta method, ``se(MSE) / (2 RMSE)``.  Validated in
    ``tests/notebooks/test_reports.py`` against a direct numpy computation.

    Examples
    --------
    >>> from cogstats.sim import Scenario, simulate
    >>> scenario = Scenario.from_dict({
    ...     "runs": 40, "gate": {"type": "none"},
    ...     "retrieval": {"policy": "randomized", "max_facts": 2, "candidate_slots": 2},
    ...     "lessons": {"listed": [{"id": "a", "effect": 0.1}, {"id": "b", "effect": 0.0}]},
    ... })
    >>> result = simulate(scenario, replicates=20, rng=4)
    >>> acc = attribution_accuracy(result, {"lift": {}}, rng=1)
    >>> acc.select("method", "lessons", "replicates").row(0)
    ('lift', 40, 20)
    """
    table = _method_table(methods)
    total = int(result.replicates)
    n_rep = (
        total if replicates is None else cast(int, check_int("replicates", replicates, minimum=1))
    )
    if n_rep > total:
        raise ParameterError(
            f"replicates must be <= the {total} replicates of the result; got {replicates!r}"
        )
    by = tuple(by)
    missing = [c for c in by if c not in result.lessons.columns]
    if missing:
        raise ParameterError(
            f"by names column(s) {missing} that result.lessons lacks; "
            f"got columns {result.lessons.columns}"
        )
    streams = np.random.default_rng(rng).spawn(n_rep)
    frames = []
    lessons = result.lessons.select("replicate", "fact_id", "true_effect", *by)
    for r, stream in zip(range(n_rep), streams, strict=True):
        truth = lessons.filter(pl.col("replicate") == r).drop("replicate")
        rows = compare_attributions(result.ledger(r), methods, truth=None, rng=stream)
        rows = relative_truth(rows.join(truth, on="fact_id", how="left"))
        frames.append(rows.with_columns(pl.lit(r).alias("replicate")))
    scored = pl.concat(frames, how="vertical_relaxed")
    labels = [label for label, _, _ in table]
    return _summarise(scored, labels, list(by), n_rep)


def _ratio_mcse(s: np.ndarray, n: np.ndarray) -> tuple[float, float]:
    """Pooled ratio sum(s)/sum(n) and its cluster-robust standard error over replicates."""
    total = n.sum()
    if total == 0:
        return math.nan, math.nan
    m = s.sum() / total
    k = len(s)
    if k < 2:
        return float(m), math.nan
    var = k / (k - 1) * np.sum((s - m * n) ** 2)
    return float(m), float(math.sqrt(var) / total)


def _summarise(scored: pl.DataFrame, labels: list[str], by: list[str], n_rep: int) -> pl.DataFrame:
    est = pl.col("estimate").is_not_null() & pl.col("true_effect").is_not_null()
    has_ci = est & pl.col("ci_low").is_not_null() & pl.col("ci_high").is_not_null()
    err = pl.col("estimate") - pl.col("true_effect")
    covered = (pl.col("ci_low") <= pl.col("true_effect")) & (
        pl.col("true_effect") <= pl.col("ci_high")
    )
    per_rep = (
        scored.group_by(["method", *by, "replicate"])
        .agg(
            pl.len().alias("pairs"),
            est.sum().alias("n_est"),
            err.filter(est).sum().alias("s_err"),
            (err**2).filter(est).sum().alias("s_sq"),
            has_ci.sum().alias("n_ci"),
            covered.filter(has_ci).sum().alias("s_cov"),
        )
        .sort(["method", *by, "replicate"])
    )
    rows = []
    for key, group in per_rep.group_by(["method", *by], maintain_order=True):
        n_est = group["n_est"].to_numpy().astype(float)
        n_ci = group["n_ci"].to_numpy().astype(float)
        bias, bias_se = _ratio_mcse(group["s_err"].fill_null(0.0).to_numpy(), n_est)
        mse, mse_se = _ratio_mcse(group["s_sq"].fill_null(0.0).to_numpy(), n_est)
        cov, cov_se = _ratio_mcse(group["s_cov"].fill_null(0).to_numpy().astype(float), n_ci)
        rmse = math.sqrt(mse) if math.isfinite(mse) else math.nan
        rmse_se = mse_se / (2 * rmse) if rmse and math.isfinite(rmse) else math.nan
        pairs = int(group["pairs"].sum())
        rows.append(
            {
                "method": key[0],
                **{b: v for b, v in zip(by, key[1:], strict=True)},
                "lessons": pairs,
                "estimated_share": float(n_est.sum() / pairs) if pairs else math.nan,
                "bias": bias,
                "bias_mcse": bias_se,
                "rmse": rmse,
                "rmse_mcse": rmse_se,
                "coverage": cov,
                "coverage_mcse": cov_se,
                "replicates": n_rep,
            }
        )
    out = pl.DataFrame(rows)
    order = {label: i for i, label in enumerate(labels)}
    return (
        out.with_columns(pl.col("method").replace_strict(order, return_dtype=pl.Int64).alias("_o"))
        .sort(["_o", *by])
        .drop("_o")
    )
