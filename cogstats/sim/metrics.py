"""Scoring a simulated gate against the truth: per-lesson outcomes and per-replicate metrics.

Definitions (one replicate):

- ``poison_recall``: poisons removed (evicted for any reason, or retired) by the last run /
  poisons; ``poison_recall_harmful`` counts only evictions as harmful.
- ``false_eviction_rate``: non-poison lessons evicted as harmful / non-poison lessons that
  got at least one trial.
- ``false_promotion_rate``: promoted lessons with true effect <= 0 / lessons with effect
  <= 0 that got a trial.
- ``no_lift_rate``: lessons evicted as no_lift / lessons that got a trial.
- ``time_to_verdict``: mean over decided lessons of (first decision run - arrival run + 1).
- ``poison_time_to_eviction``: mean over removed poisons of (removal run - arrival + 1).
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
    REASON_BY_CODE,
    REASON_CODE_HARMFUL,
    REASON_CODE_NO_LIFT,
    REASON_CODE_NONE,
    REASON_CODE_RETIRE,
)
from cogstats.sim.draws import LessonTable
from cogstats.sim.raw import RawChunk

__all__ = ["METRIC_COLUMNS", "lesson_outcomes", "replicate_metrics"]

METRIC_COLUMNS: tuple[str, ...] = (
    "poison_recall",
    "poison_recall_harmful",
    "false_eviction_rate",
    "false_promotion_rate",
    "no_lift_rate",
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
