"""Scoring a simulated gate against the truth: per-lesson outcomes and per-replicate metrics.

Definitions (one replicate):

- ``poison_recall``: poisons removed (evicted for any reason, or retired) by the last run /
  poisons; ``poison_recall_harmful`` counts only evictions as harmful.
- ``false_eviction_rate``: non-poison lessons evicted as harmful / non-poison lessons that
  got at least one trial.
- ``false_promotion_rate``: promoted lessons with true effect <= 0 / lessons with effect
  <= 0 that got a trial.
- ``no_lift_rate``: lessons evicted as no_lift / lessons that got a trial.
- ``false_no_lift_rate``: non-poison lessons evicted as no_lift / non-poison lessons that
  got a trial (the false evictions ``false_eviction_rate`` does not count).
- ``time_to_verdict``: mean over decided lessons of (first decision run - arrival run + 1).
- ``poison_time_to_eviction``: mean over removed poisons of (removal run - arrival + 1);
  :func:`removal_delays` lists them per lesson and :func:`pooled_median_delay` gives the
  median pooled over replicates with a bootstrap Monte Carlo error.
- ``fitness_mean``: mean score over the runs; ``fitness_before`` / ``_during`` /
  ``_after``: before the first poison arrives, from its arrival until the last poison is
  removed (to the end if one never is), and after that; ``fitness_from_poison``: from the
  first poison's arrival to the end.
- ``regret``: mean over runs of (oracle score - score), where the oracle injects the best
  ``max_facts`` helpful lessons that have arrived, under the same difficulty and noise.

Undefined values (no poison, no lesson tried, ...) are NaN, and averages skip them.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from cogstats._codes import (
    KIND_POISON,
    KINDS,
    REASON_BY_CODE,
    REASON_CODE_HARMFUL,
    REASON_CODE_NO_LIFT,
    REASON_CODE_NONE,
    REASON_CODE_RETIRE,
)
from cogstats.sim.draws import LessonTable
from cogstats.sim.raw import RawChunk

__all__ = [
    "METRIC_COLUMNS",
    "lesson_outcomes",
    "pooled_median_delay",
    "removal_delays",
    "replicate_metrics",
]

METRIC_COLUMNS: tuple[str, ...] = (
    "poison_recall",
    "poison_recall_harmful",
    "false_eviction_rate",
    "false_promotion_rate",
    "no_lift_rate",
    "false_no_lift_rate",
    "time_to_verdict",
    "poison_time_to_eviction",
    "fitness_mean",
    "fitness_before",
    "fitness_during",
    "fitness_after",
    "fitness_from_poison",
    "regret",
    "promotions",
    "evictions",
)


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.maximum(den, 1), np.nan)


def _masked_mean(values: np.ndarray, mask: np.ndarray) -> np.ndarray:
    n = mask.sum(axis=1)
    s = np.where(mask, values, 0.0).sum(axis=1)
    return _ratio(s, n)


def first_decision(raw: RawChunk) -> tuple[np.ndarray, np.ndarray]:
    """(run of the first decision, code 1 promote / 2 evict / 3 retire / 0 none) per lesson."""
    runs = np.stack([raw.promote_run, raw.evict_run, raw.retire_run])
    big = np.iinfo(np.int64).max
    masked = np.where(runs > 0, runs, big)
    which = masked.argmin(axis=0)
    first = masked.min(axis=0)
    code = np.where(first == big, 0, which + 1)
    return np.where(first == big, 0, first), code


def replicate_metrics(
    raw: RawChunk, lessons: LessonTable, effects: np.ndarray, start: int
) -> pl.DataFrame:
    """One row of metrics per replicate of the chunk (replicates numbered from ``start``)."""
    n, runs = raw.score.shape
    arrival = lessons.arrival[None, :]
    poison = (lessons.kind == KIND_POISON)[None, :]
    tried = raw.trials > 0
    removed_run = np.where(raw.evict_run > 0, raw.evict_run, raw.retire_run)
    removed = removed_run > 0
    n_poison = np.broadcast_to(poison, tried.shape).sum(axis=1)
    harmful = (raw.evict_run > 0) & (raw.evict_reason == REASON_CODE_HARMFUL)
    no_lift = (raw.evict_run > 0) & (raw.evict_reason == REASON_CODE_NO_LIFT)
    eff = effects
    dec_run, _ = first_decision(raw)
    decided = dec_run > 0
    time_to = np.where(decided, dec_run - arrival + 1, 0)
    ptime = np.where(removed & poison, removed_run - arrival + 1, 0)
    # fitness windows around the poisoning
    run_no = np.arange(1, runs + 1)[None, :]
    if poison.any():
        p_arrival = lessons.arrival[lessons.kind == KIND_POISON].min()
        all_removed = (removed | ~poison).all(axis=1)
        last_removal = np.where(poison, removed_run, 0).max(axis=1)
        end = np.where(all_removed, last_removal, runs)[:, None]
        before = run_no < p_arrival
        during = (run_no >= p_arrival) & (run_no <= end)
        after = run_no > end
        from_poison = np.broadcast_to(run_no >= p_arrival, raw.score.shape)
        fit_before = _masked_mean(raw.score, np.broadcast_to(before, raw.score.shape))
        fit_during = _masked_mean(raw.score, during)
        fit_after = _masked_mean(raw.score, after)
        fit_from = _masked_mean(raw.score, from_poison)
    else:
        fit_before = raw.score.mean(axis=1)
        fit_during = fit_after = fit_from = np.full(n, np.nan)
    nonpoison_tried = (tried & ~poison).sum(axis=1)
    nonpos_tried = (tried & (eff <= 0)).sum(axis=1)
    return pl.DataFrame(
        {
            "replicate": np.arange(start, start + n, dtype=np.int64),
            "poison_recall": _ratio((removed & poison).sum(axis=1), n_poison),
            "poison_recall_harmful": _ratio((harmful & poison).sum(axis=1), n_poison),
            "false_eviction_rate": _ratio((harmful & ~poison).sum(axis=1), nonpoison_tried),
            "false_promotion_rate": _ratio(
                ((raw.promote_run > 0) & (eff <= 0)).sum(axis=1), nonpos_tried
            ),
            "no_lift_rate": _ratio(no_lift.sum(axis=1), tried.sum(axis=1)),
            "false_no_lift_rate": _ratio((no_lift & ~poison).sum(axis=1), nonpoison_tried),
            "time_to_verdict": _ratio(time_to.sum(axis=1), decided.sum(axis=1)),
            "poison_time_to_eviction": _ratio(ptime.sum(axis=1), (removed & poison).sum(axis=1)),
            "fitness_mean": raw.score.mean(axis=1),
            "fitness_before": fit_before,
            "fitness_during": fit_during,
            "fitness_after": fit_after,
            "fitness_from_poison": fit_from,
            "regret": (raw.oracle - raw.score).mean(axis=1),
            "promotions": (raw.promote_run > 0).sum(axis=1).astype(np.int64),
            "evictions": (raw.evict_run > 0).sum(axis=1).astype(np.int64),
        },
        nan_to_null=False,
    )


def lesson_outcomes(
    raw: RawChunk, lessons: LessonTable, effects: np.ndarray, start: int
) -> pl.DataFrame:
    """One row per (replicate, lesson): truth, trials and what the gate did."""
    n, n_les = raw.trials.shape
    dec_run, code = first_decision(raw)
    outcome_names = np.array(["hold", "promote", "evict", "retire"])
    reason_names = np.array(REASON_BY_CODE)
    first_reason = np.where(
        code == 2, raw.evict_reason, np.where(code == 3, REASON_CODE_RETIRE, REASON_CODE_NONE)
    )
    final = np.where(
        raw.retire_run > 0,
        "retired",
        np.where(
            raw.evict_run > 0, "evicted", np.where(raw.promote_run > 0, "verified", "candidate")
        ),
    )
    eff = effects

    def zero_null(a: np.ndarray) -> pl.Series:
        # 0 means "never": null.  Through a float NaN mask (Series.replace is ~50x slower)
        flat = a.ravel()
        return pl.Series(np.where(flat == 0, np.nan, flat), nan_to_null=True).cast(pl.Int64)

    return pl.DataFrame(
        {
            "replicate": np.repeat(np.arange(start, start + n, dtype=np.int64), n_les),
            "fact_id": np.tile(np.asarray(lessons.ids, dtype=object), n).astype(str),
            "kind": np.tile(np.asarray(lessons.kind_names, dtype=object), n).astype(str),
            "true_effect": eff.ravel(),
            "arrives_at_run": np.tile(lessons.arrival, n),
            "first_trial_run": zero_null(raw.first_trial),
            "trials": raw.trials.ravel(),
            "outcome": outcome_names[code.ravel()],
            "reason": pl.Series(reason_names[first_reason.ravel()].tolist(), dtype=pl.String),
            "decided_at_run": zero_null(dec_run),
            "promoted_at_run": zero_null(raw.promote_run),
            "evicted_at_run": zero_null(raw.evict_run),
            "evict_reason": pl.Series(
                reason_names[raw.evict_reason.ravel()].tolist(), dtype=pl.String
            ),
            "retired_at_run": zero_null(raw.retire_run),
            "final_status": final.ravel(),
        }
    )


def removal_delays(lessons: pl.DataFrame, kind: str = KINDS[KIND_POISON]) -> pl.DataFrame:
    """Return the runs from arrival to removal of every removed lesson of one kind.

    ``delay = removal run - arrival run + 1`` (both runs counted), where the removal run
    is the eviction run (any reason), else the retirement run, as in
    ``poison_time_to_eviction``.  Lessons never removed are left out.

    Parameters
    ----------
    lessons : polars.DataFrame
        Per-lesson outcomes (:func:`lesson_outcomes`, ``SimulationResult.lessons``).
    kind : str
        The lesson kind (default the poisons).

    Returns
    -------
    polars.DataFrame
        replicate, fact_id, arrives_at_run, removed_at_run, delay; one row per removed
        lesson.

    Examples
    --------
    >>> import polars as pl
    >>> les = pl.DataFrame({"replicate": [0, 0, 1], "fact_id": ["P1", "P2", "P1"],
    ...     "kind": ["poison"] * 3, "arrives_at_run": [4, 4, 4],
    ...     "evicted_at_run": [5, None, None], "retired_at_run": [None, None, 9]})
    >>> removal_delays(les)["delay"].to_list()
    [2, 6]
    """
    removed = pl.coalesce(pl.col("evicted_at_run"), pl.col("retired_at_run"))
    return (
        lessons.filter((pl.col("kind") == kind) & removed.is_not_null())
        .select(
            "replicate",
            "fact_id",
            "arrives_at_run",
            removed.alias("removed_at_run"),
            (removed - pl.col("arrives_at_run") + 1).alias("delay"),
        )
        .sort("replicate", "fact_id")
    )


def pooled_median_delay(
    lessons: pl.DataFrame,
    *,
    kind: str = KINDS[KIND_POISON],
    confidence_level: float = 0.95,
    n_resamples: int = 999,
    rng: int | np.random.Generator | None = 0,
) -> dict[str, float | int]:
    """Return the median removal delay pooled over replicates, with its Monte Carlo error.

    The median is taken over every removed lesson of ``kind`` in every replicate
    (:func:`removal_delays`).  Lessons of one replicate share its runs, so the Monte
    Carlo error comes from a cluster bootstrap: the replicates (all of them, those with
    no removal included) are resampled with replacement and the pooled median is
    recomputed on each resample; ``mcse`` is the bootstrap standard error and
    ``low``/``high`` the percentile interval.  With one removed lesson per replicate this
    is ``scipy.stats.bootstrap(..., method="percentile")`` of the median, draw for draw
    (checked in tests/unit/test_gate_comparison.py).

    Parameters
    ----------
    lessons : polars.DataFrame
        Per-lesson outcomes of every replicate.
    kind : str
        The lesson kind (default the poisons).
    confidence_level : float
        Of the percentile interval.
    n_resamples : int
        Bootstrap resamples.
    rng : int, numpy.random.Generator or None
        Seed of the resampling.

    Returns
    -------
    dict
        ``median``, ``mcse``, ``low``, ``high`` (NaN when nothing was removed), ``n``
        (removed lessons) and ``replicates``.

    Examples
    --------
    >>> import polars as pl
    >>> les = pl.DataFrame({"replicate": [0, 1, 2, 3], "fact_id": ["P1"] * 4,
    ...     "kind": ["poison"] * 4, "arrives_at_run": [4] * 4,
    ...     "evicted_at_run": [5, 5, 6, None], "retired_at_run": [None] * 4})
    >>> out = pooled_median_delay(les, n_resamples=199, rng=1)
    >>> out["median"], out["n"], out["replicates"], out["low"] <= 2.0 <= out["high"]
    (2.0, 3, 4, True)
    """
    import warnings

    reps = np.unique(lessons["replicate"].to_numpy())
    delays = removal_delays(lessons, kind).with_columns(
        pl.int_range(pl.len()).over("replicate").alias("_slot")
    )
    out: dict[str, float | int] = {
        "median": np.nan,
        "mcse": np.nan,
        "low": np.nan,
        "high": np.nan,
        "n": delays.height,
        "replicates": int(reps.size),
    }
    if delays.height == 0:
        return out
    # one row per replicate, one column per removed lesson (NaN-padded): resampling rows
    # is resampling replicates
    width = int(delays["_slot"].to_numpy().max()) + 1
    table = np.full((reps.size, width), np.nan)
    row = np.searchsorted(reps, delays["replicate"].to_numpy())
    table[row, delays["_slot"].to_numpy()] = delays["delay"].to_numpy()
    out["median"] = float(np.nanmedian(table))
    if reps.size < 2:
        return out

    # By hand rather than scipy.stats.bootstrap: scipy has no cluster resampling (it
    # can resample the row indices, but then) a resample in which no replicate removed a
    # lesson has no median, and one NaN makes scipy's interval and error NaN.
    gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    medians = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a resample with no removal
        for done in range(0, n_resamples, 100):
            index = gen.integers(0, reps.size, (min(100, n_resamples - done), reps.size))
            medians.append(np.nanmedian(table[index].reshape(index.shape[0], -1), axis=1))
    boot = np.concatenate(medians)
    tail = 50 * (1 - confidence_level)
    out["mcse"] = float(np.nanstd(boot, ddof=1))
    out["low"], out["high"] = (float(q) for q in np.nanpercentile(boot, [tail, 100 - tail]))
    return out
