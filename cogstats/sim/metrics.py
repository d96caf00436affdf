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

The lesson lifecycle (from the status events, :meth:`RawChunk.status_events`,
and the injections; a lesson's status during run ``r`` is the one after the gate's looks
through run ``r - 1``):

- ``poison_exposure``: mean over poisons of the runs from the poison's arrival through its
  last injection, both counted (``last injection run - arrival + 1``; 0 when never
  injected).  Re-test injections of a suspended poison count.
- ``poison_out_last5``: poisons not injected in any of the last 5 runs / poisons.
- ``false_conviction_rate``: lessons of true effect >= 0 evicted as harmful / lessons of
  effect >= 0 with at least one trial (the goal that replaces ``false_eviction_rate``).
- ``helpful_lost_rate``: helpful lessons (true effect >= 0.05, :data:`HELPFUL_EFFECT`)
  retired, evicted, or still suspended after the last run / helpful lessons that arrived.
- ``genuine_suspended_runs``: median over the non-poison lessons ever suspended of the
  runs each spent suspended (a suspension after run ``s`` ended by a change after run
  ``t`` covers runs ``s + 1 .. t``, ``t - s`` runs; one still open at the end runs to the
  last run); NaN when no non-poison lesson was suspended.  :func:`pooled_median_suspended`
  pools the lessons over replicates.
- ``suspensions``: suspend events; ``retest_injections``: injections of a lesson while it
  was suspended (the re-test slot's).

A non-additive store (paraphrase groups, interactions, effects by family, changes of
effect) defines regret with the oracle's best prompt under the store's true value, and
``helpful_lost_rate`` and ``false_conviction_rate`` by each lesson's value alone and its
group, as :mod:`cogstats.sim.metrics_world` says; that module's :data:`WORLD_COLUMNS`
(regret by segment, helpful lessons still suspended, poisons injected 5 times or more,
and the diagnostics of the store's failure modes) end every metrics frame.

Undefined values (no poison, no lesson tried, ...) are NaN, and averages skip them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from cogstats._codes import (
    ADMITTED,
    EVICTED,
    KIND_POISON,
    KINDS,
    REASON_BY_CODE,
    REASON_CODE_HARMFUL,
    REASON_CODE_NO_LIFT,
    REASON_CODE_NONE,
    REASON_CODE_RETIRE,
    RETIRED,
    STATUS_NAMES,
    SUSPENDED,
)
from cogstats.sim.draws import LessonTable
from cogstats.sim.metrics_world import WORLD_COLUMNS, _ratio, world_metrics
from cogstats.sim.raw import RawChunk
from cogstats.sim.world import WorldDraws

__all__ = [
    "HELPFUL_EFFECT",
    "LIFECYCLE_COLUMNS",
    "METRIC_COLUMNS",
    "Lifecycle",
    "lesson_outcomes",
    "lifecycle",
    "pooled_median_delay",
    "pooled_median_exposure",
    "pooled_median_suspended",
    "removal_delays",
    "replicate_metrics",
    "status_event_frame",
]

#: A lesson at least this helpful counts in ``helpful_lost_rate``.
HELPFUL_EFFECT = 0.05
#: The runs at the end in which ``poison_out_last5`` asks that no poison be injected.
LAST_RUNS = 5
_SUS = STATUS_NAMES.index(SUSPENDED)
_ADM = STATUS_NAMES.index(ADMITTED)
_EVI = STATUS_NAMES.index(EVICTED)
_RET = STATUS_NAMES.index(RETIRED)
#: The lifecycle metrics, also in :data:`METRIC_COLUMNS`.
LIFECYCLE_COLUMNS: tuple[str, ...] = (
    "poison_exposure",
    "poison_out_last5",
    "false_conviction_rate",
    "helpful_lost_rate",
    "genuine_suspended_runs",
    "suspensions",
    "retest_injections",
)

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
    *LIFECYCLE_COLUMNS,
    *WORLD_COLUMNS,
)


def _masked_mean(values: np.ndarray, mask: np.ndarray) -> np.ndarray:
    n = mask.sum(axis=1)
    s = np.where(mask, values, 0.0).sum(axis=1)
    return _ratio(s, n)


@dataclass(frozen=True)
class Lifecycle:
    """Per-lesson lifecycle arrays of a chunk, (n, L) each (run 0: never).

    ``final``: status code after the last run (:data:`cogstats._codes.STATUS_NAMES`;
    arrived lessons start as candidates); ``last_injected``: run of the last injection;
    ``suspended_runs``: runs spent suspended; ``suspensions``: suspend events;
    ``retests``: injections while suspended; ``admitted``: first admit run;
    ``suspended_at`` / ``released_at``: per (replicate, lesson), the runs after which it
    was suspended / left suspension.
    """

    final: np.ndarray
    last_injected: np.ndarray
    suspended_runs: np.ndarray
    suspensions: np.ndarray
    retests: np.ndarray
    admitted: np.ndarray
    suspended_at: dict[tuple[int, int], list[int]]
    released_at: dict[tuple[int, int], list[int]]


def lifecycle(raw: RawChunk, lessons: LessonTable) -> Lifecycle:
    """Derive each lesson's lifecycle from the status events and the injections.

    Examples
    --------
    >>> import numpy as np
    >>> from cogstats.sim import Scenario
    >>> from cogstats.sim.draws import scenario_lessons
    >>> from cogstats.sim.raw import empty_raw
    >>> s = Scenario.from_dict({"runs": 6, "gate": {"type": "none"},
    ...     "lessons": {"listed": [{"id": "a", "effect": -0.2, "kind": "poison"}]}})
    >>> les = scenario_lessons(s)
    >>> raw = empty_raw(s, les, 1)
    >>> raw.inj[0, [0, 1, 4], 0] = 0; raw.ninj[0, [0, 1, 4]] = 1
    >>> raw.events = [(0, 2, 0, 1, 6, None, "suspect")]  # suspended after run 2
    >>> lc = lifecycle(raw, les)
    >>> int(lc.last_injected[0, 0]), int(lc.suspended_runs[0, 0]), int(lc.retests[0, 0])
    (5, 4, 1)
    """
    n, runs = raw.score.shape
    n_les = len(lessons.ids)
    rep_idx, run_idx, slot = np.nonzero(raw.inj >= 0)
    keep = slot < raw.ninj[rep_idx, run_idx]
    rep_idx, run_idx, les_idx = rep_idx[keep], run_idx[keep], raw.inj[rep_idx, run_idx, slot][keep]
    last = np.zeros((n, n_les), dtype=np.int64)
    np.maximum.at(last, (rep_idx, les_idx), run_idx + 1)
    final = np.repeat((lessons.arrival <= runs).astype(np.int64)[None, :], n, axis=0)
    sus_runs = np.zeros((n, n_les), dtype=np.int64)
    sus_count = np.zeros((n, n_les), dtype=np.int64)
    retests = np.zeros((n, n_les), dtype=np.int64)
    admitted = np.zeros((n, n_les), dtype=np.int64)
    suspended_at: dict[tuple[int, int], list[int]] = {}
    released_at: dict[tuple[int, int], list[int]] = {}
    open_since: dict[tuple[int, int], int] = {}
    intervals: list[tuple[int, int, int, int]] = []
    for rep, run, j, frm, to, _reason, _why in raw.status_events():
        key = (rep, j)
        final[rep, j] = to
        if to == _ADM and admitted[rep, j] == 0:
            admitted[rep, j] = run
        if to == _SUS:
            open_since[key] = run
            sus_count[rep, j] += 1
            suspended_at.setdefault(key, []).append(run)
        elif frm == _SUS and key in open_since:
            start = open_since.pop(key)
            sus_runs[rep, j] += run - start
            intervals.append((rep, j, start, run))
            released_at.setdefault(key, []).append(run)
    for (rep, j), start in open_since.items():
        sus_runs[rep, j] += runs - start
        intervals.append((rep, j, start, runs))
    if intervals:
        # injections while suspended: runs start + 1 .. end
        injected = np.zeros((n, runs + 1, n_les), dtype=np.bool_)
        injected[rep_idx, run_idx + 1, les_idx] = True
        for rep, j, start, end in intervals:
            retests[rep, j] += int(injected[rep, start + 1 : end + 1, j].sum())
    return Lifecycle(final, last, sus_runs, sus_count, retests, admitted, suspended_at, released_at)


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
    raw: RawChunk,
    lessons: LessonTable,
    effects: np.ndarray,
    start: int,
    world: WorldDraws | None = None,
) -> pl.DataFrame:
    """One row of metrics per replicate of the chunk (replicates numbered from ``start``).

    ``world`` is the chunk's non-additive truth (``Prepared.world``), None for an
    additive scenario; with it, ``helpful_lost_rate`` and ``false_conviction_rate`` are
    defined as :mod:`cogstats.sim.metrics_world` says.
    """
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
    lc = lifecycle(raw, lessons)
    arrived = np.broadcast_to((lessons.arrival <= runs)[None, :], tried.shape)
    exposure = np.where(lc.last_injected > 0, lc.last_injected - arrival + 1, 0)
    p_arrived = poison & arrived
    out_last = lc.last_injected <= runs - LAST_RUNS
    nonneg = eff >= 0
    helpful = (eff >= HELPFUL_EFFECT) & arrived
    lost = np.isin(lc.final, [_EVI, _RET, _SUS])
    ever_suspended = (lc.suspensions > 0) & ~poison
    genuine_sus = np.full(n, np.nan)
    for i in np.flatnonzero(ever_suspended.any(axis=1)):
        genuine_sus[i] = float(np.median(lc.suspended_runs[i][ever_suspended[i]]))
    extra = world_metrics(
        raw, lessons.kind, lessons.arrival, eff, lc.final, HELPFUL_EFFECT, lessons.world, world
    )
    frame = pl.DataFrame(
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
            "poison_exposure": _ratio(
                np.where(p_arrived, exposure, 0).sum(axis=1), p_arrived.sum(axis=1)
            ),
            "poison_out_last5": _ratio((p_arrived & out_last).sum(axis=1), p_arrived.sum(axis=1)),
            "false_conviction_rate": _ratio(
                (harmful & nonneg).sum(axis=1), (tried & nonneg).sum(axis=1)
            ),
            "helpful_lost_rate": _ratio((helpful & lost).sum(axis=1), helpful.sum(axis=1)),
            "genuine_suspended_runs": genuine_sus,
            "suspensions": lc.suspensions.sum(axis=1).astype(np.int64),
            "retest_injections": lc.retests.sum(axis=1).astype(np.int64),
        },
        nan_to_null=False,
    )
    overrides = [k for k in extra if k in frame.columns]  # a world's own definitions
    return frame.with_columns(
        *(pl.Series(k, extra[k], nan_to_null=False) for k in overrides)
    ).hstack([pl.Series(k, extra[k], nan_to_null=False) for k in WORLD_COLUMNS])


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
    lc = lifecycle(raw, lessons)
    # a lesson that never arrived stays a candidate in this frame (as before the lifecycle)
    final = np.asarray(STATUS_NAMES, dtype=object)[np.maximum(lc.final, 1)].astype(str)
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
            "admitted_at_run": zero_null(lc.admitted),
            "suspended_at_runs": _run_lists(lc.suspended_at, n, n_les),
            "released_at_runs": _run_lists(lc.released_at, n, n_les),
            "suspended_runs": lc.suspended_runs.ravel(),
            "retest_injections": lc.retests.ravel(),
            "last_injected_run": zero_null(lc.last_injected),
            EVENTS_COLUMN: _events_by_lesson(raw, n, n_les),
        }
    )


#: The column of :func:`lesson_outcomes` holding each lesson's status events (a list of
#: structs); :class:`~cogstats.sim.SimulationResult` moves it to ``status_events()``.
EVENTS_COLUMN = "_status_events"
_EVENT_DTYPE = pl.List(
    pl.Struct(
        {
            "run": pl.Int64,
            "from": pl.String,
            "to": pl.String,
            "reason": pl.String,
            "why": pl.String,
        }
    )
)


def _lists(cell: np.ndarray, n_cells: int, child: Any) -> pl.Series:
    """Return a list column of ``n_cells`` rows from values sorted by their row ``cell``."""
    import pyarrow as pa  # the list columns only

    counts = np.bincount(cell, minlength=n_cells)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    out = pl.from_arrow(pa.ListArray.from_arrays(pa.array(offsets), child))
    assert isinstance(out, pl.Series)
    return out


def _run_lists(runs: dict[tuple[int, int], list[int]], n: int, n_les: int) -> pl.Series:
    import pyarrow as pa

    cell = np.asarray([rep * n_les + j for (rep, j), v in runs.items() for _ in v], np.int64)
    value = np.asarray([r for v in runs.values() for r in v], dtype=np.int64)
    order = np.lexsort((value, cell))
    return _lists(cell[order], n * n_les, pa.array(value[order], pa.int64()))


def _events_by_lesson(raw: RawChunk, n: int, n_les: int) -> pl.Series:
    """Each lesson's status events as a list of structs (run, from, to, reason, why)."""
    import pyarrow as pa

    events = raw.status_events()
    cell = np.asarray([ev[0] * n_les + ev[2] for ev in events], dtype=np.int64)
    run = np.asarray([ev[1] for ev in events], dtype=np.int64)
    order = np.lexsort((run, cell))
    names = np.asarray(STATUS_NAMES, dtype=object)
    frm = np.asarray([ev[3] for ev in events], dtype=np.int64)[order]
    to = np.asarray([ev[4] for ev in events], dtype=np.int64)[order]
    child = pa.StructArray.from_arrays(
        [
            pa.array(run[order], pa.int64()),
            pa.array(names[frm].tolist(), pa.string()),
            pa.array(names[to].tolist(), pa.string()),
            pa.array([events[i][5] for i in order], pa.string()),
            pa.array([events[i][6] for i in order], pa.string()),
        ],
        names=["run", "from", "to", "reason", "why"],
    )
    return _lists(cell[order], n * n_les, child).alias(EVENTS_COLUMN)


def status_event_frame(lessons: pl.DataFrame) -> pl.DataFrame:
    """Return the status events of per-lesson outcomes (:func:`lesson_outcomes`), in time order.

    One row per status change: replicate, run (the gate's look after which the status
    changed; the new status holds from the next run), fact_id, from, to, reason, why,
    kind, true_effect.  Sorted by (replicate, run, fact_id).

    Examples
    --------
    >>> from cogstats.sim import Scenario, simulate
    >>> s = Scenario.from_dict({"runs": 30,
    ...     "retrieval": {"max_facts": 2, "rest_after_trials": 4},
    ...     "lessons": {"listed": [{"id": "bad", "effect": -0.4, "kind": "poison"},
    ...                            {"id": "good", "effect": 0.1}]},
    ...     "gate": {"type": "cycgraph", "decision_rule": "margin", "min_trials": 3}})
    >>> ev = simulate(s, replicates=1, rng=1).status_events()
    >>> ev.select("fact_id", "from", "to", "reason").row(0)
    ('bad', 'candidate', 'evicted', 'eval-gate:harmful')
    """
    cols = ["replicate", "fact_id", "kind", "true_effect"]
    if EVENTS_COLUMN not in lessons.columns:
        return pl.DataFrame(
            schema={
                "replicate": pl.Int64,
                "run": pl.Int64,
                "fact_id": pl.String,
                "from": pl.String,
                "to": pl.String,
                "reason": pl.String,
                "why": pl.String,
                "kind": pl.String,
                "true_effect": pl.Float64,
            }
        )
    return (
        lessons.select(*cols, EVENTS_COLUMN)
        .filter(pl.col(EVENTS_COLUMN).list.len() > 0)
        .explode(EVENTS_COLUMN)
        .unnest(EVENTS_COLUMN)
        .select("replicate", "run", "fact_id", "from", "to", "reason", "why", "kind", "true_effect")
        .sort("replicate", "run", "fact_id")
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
    reps = np.unique(lessons["replicate"].to_numpy())
    delays = removal_delays(lessons, kind).rename({"delay": "_value"})
    return _pooled_median(reps, delays, confidence_level, n_resamples, rng)


def pooled_median_exposure(
    lessons: pl.DataFrame,
    *,
    confidence_level: float = 0.95,
    n_resamples: int = 999,
    rng: int | np.random.Generator | None = 0,
) -> dict[str, float | int]:
    """Return the median poison exposure pooled over replicates, with its Monte Carlo error.

    A poison's exposure is the runs from its arrival through its last injection, both
    counted (``last_injected_run - arrives_at_run + 1``; 0 when never injected; re-test
    injections count), as in ``poison_exposure``.  Every poison that arrived counts; the
    error is the cluster bootstrap of :func:`pooled_median_delay`.

    Examples
    --------
    >>> import polars as pl
    >>> les = pl.DataFrame({"replicate": [0, 0, 1], "kind": ["poison"] * 3,
    ...     "arrives_at_run": [4, 4, 4], "last_injected_run": [5, None, 9]})
    >>> out = pooled_median_exposure(les, n_resamples=99, rng=1)
    >>> out["median"], out["n"]
    (2.0, 3)
    """
    reps = np.unique(lessons["replicate"].to_numpy())
    rows = lessons.filter(pl.col("kind") == KINDS[KIND_POISON]).select(
        "replicate",
        (pl.col("last_injected_run") - pl.col("arrives_at_run") + 1).fill_null(0).alias("_value"),
    )
    return _pooled_median(reps, rows, confidence_level, n_resamples, rng)


def pooled_median_suspended(
    lessons: pl.DataFrame,
    *,
    confidence_level: float = 0.95,
    n_resamples: int = 999,
    rng: int | np.random.Generator | None = 0,
) -> dict[str, float | int]:
    """Return the median runs non-poison lessons spent suspended, pooled over replicates.

    Over every non-poison lesson ever suspended in every replicate (the per-lesson
    ``suspended_runs`` of :func:`lesson_outcomes`), with the cluster-bootstrap Monte Carlo
    error of :func:`pooled_median_delay` (replicates resampled).

    Examples
    --------
    >>> import polars as pl
    >>> les = pl.DataFrame({"replicate": [0, 0, 1, 2], "kind": ["genuine"] * 3 + ["poison"],
    ...     "suspended_at_runs": [[4], [], [3, 9], [2]], "suspended_runs": [2, 0, 6, 9]})
    >>> out = pooled_median_suspended(les, n_resamples=99, rng=1)
    >>> out["median"], out["n"], out["replicates"]
    (4.0, 2, 3)
    """
    reps = np.unique(lessons["replicate"].to_numpy())
    rows = lessons.filter(
        (pl.col("kind") != KINDS[KIND_POISON]) & (pl.col("suspended_at_runs").list.len() > 0)
    ).select("replicate", pl.col("suspended_runs").alias("_value"))
    return _pooled_median(reps, rows, confidence_level, n_resamples, rng)


def _pooled_median(
    reps: np.ndarray,
    values: pl.DataFrame,
    confidence_level: float,
    n_resamples: int,
    rng: int | np.random.Generator | None,
) -> dict[str, float | int]:
    """Pooled median of ``values["_value"]`` with a cluster bootstrap over ``reps``."""
    import warnings

    delays = values.with_columns(pl.int_range(pl.len()).over("replicate").alias("_slot"))
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
    table[row, delays["_slot"].to_numpy()] = delays["_value"].to_numpy()
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
