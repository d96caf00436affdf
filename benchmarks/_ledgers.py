"""Synthetic ledgers for the production benchmarks (P2, P4, P5)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa

from cogstats import Ledger


def scale_frame(
    n_runs: int = 100_000,
    n_lessons: int = 2000,
    per_run: float = 8.0,
    *,
    seed: int = 20261130,
    first_run: int = 0,
) -> tuple[pl.DataFrame, np.ndarray]:
    """A ledger frame and the true effects (lesson ``L{j}`` has effect ``effects[j]``).

    Every lesson goes into a run independently with probability ``per_run / n_lessons``
    (about ``per_run`` a run; a fixed count per run would make the lesson columns sum to
    a constant, collinear with the intercept, and no lesson identifiable by regression).
    Effects ~ N(0, 0.03); covariate ``difficulty`` ~ N(0, 1) shifts the score by 0.05 per
    unit; score = clip(0.6 + effects + 0.05 difficulty + N(0, 0.1), 0, 1).
    """
    rng = np.random.default_rng(seed)
    effects = np.random.default_rng(seed + 1).normal(0.0, 0.03, n_lessons)
    counts = rng.binomial(n_lessons, per_run / n_lessons, n_runs)
    total = int(counts.sum())
    # distinct lessons within a run: draw with replacement, redraw the few collisions
    cols = rng.integers(0, n_lessons, total)
    starts = np.concatenate([[0], np.cumsum(counts)])
    row = np.repeat(np.arange(n_runs), counts)
    for _ in range(20):
        key = row * n_lessons + cols
        order = np.argsort(key, kind="stable")
        dup = np.zeros(total, dtype=bool)
        dup[order[1:]] = key[order[1:]] == key[order[:-1]]
        if not dup.any():
            break
        cols[dup] = rng.integers(0, n_lessons, int(dup.sum()))
    difficulty = rng.normal(0.0, 1.0, n_runs)
    lift = np.bincount(row, weights=effects[cols], minlength=n_runs)
    score = np.clip(0.6 + lift + 0.05 * difficulty + rng.normal(0.0, 0.1, n_runs), 0.0, 1.0)
    names = pa.array([f"L{j}" for j in range(n_lessons)], type=pa.large_string())
    # run i's lessons are cols[starts[i]:starts[i + 1]]: one Arrow list array from the
    # offsets (no Python list per run)
    lists = pa.LargeListArray.from_arrays(pa.array(starts, type=pa.int64()), names.take(cols))
    fact_ids = pl.Series("fact_ids", lists).cast(pl.List(pl.String))
    run_id = pl.int_range(first_run, first_run + n_runs, eager=True).cast(pl.String)
    frame = pl.DataFrame(
        {
            "run_id": ("r" + run_id).alias("run_id"),
            "score": score,
            "fact_ids": fact_ids,
            "difficulty": difficulty,
        }
    )
    return frame, effects


def scale_ledger(
    n_runs: int = 100_000, n_lessons: int = 2000, per_run: float = 8.0, *, seed: int = 20261130
) -> tuple[Ledger, np.ndarray]:
    """As :func:`scale_frame`, as a validated Ledger."""
    frame, effects = scale_frame(n_runs, n_lessons, per_run, seed=seed)
    return Ledger.from_frame(frame), effects


def arrival_frame(
    n_runs: int = 100_000,
    n_lessons: int = 20_000,
    per_run: float = 12.0,
    *,
    pool: int = 150,
    evergreen: int = 10,
    seed: int = 20261201,
) -> tuple[pl.DataFrame, np.ndarray]:
    """A ledger frame of a growing playbook, and the true effects (``L{j}``: ``effects[j]``).

    Lessons arrive over time, evenly spread over the runs (lesson ``j`` at run about
    ``j * n_runs / n_lessons``), and each stays in the live pool for an exponential time
    whose mean keeps about ``pool`` lessons live at once; ``evergreen`` of them (spread
    over the ids) stay from their arrival to the end.  A live lesson goes into each run
    independently with probability ``per_run / pool`` (about ``per_run`` lessons a run
    once the pool has filled, not a fixed count).  Effects: 2% of the lessons -0.10, 3%
    +0.05, the rest 0; covariate ``difficulty_proxy`` ~ N(0, 1) shifts the score by
    0.05 a unit; score = clip(0.6 + effects + 0.05 difficulty + N(0, 0.1), 0, 1).
    """
    rng = np.random.default_rng(seed)
    gap = n_runs / n_lessons
    arrive = np.minimum(
        (np.arange(n_lessons) * gap + rng.uniform(0, gap, n_lessons)).astype(np.int64),
        n_runs - 1,
    )
    life = np.maximum(1, rng.exponential(pool * gap, n_lessons).astype(np.int64))
    if evergreen:
        life[np.linspace(0, n_lessons - 1, evergreen).astype(np.int64)] = n_runs
    end = np.minimum(arrive + life, n_runs)
    span = end - arrive
    q = per_run / pool
    trials = np.maximum(1, rng.binomial(span, q))
    col = np.repeat(np.arange(n_lessons), trials)
    row = np.repeat(arrive, trials) + (rng.random(col.size) * np.repeat(span, trials)).astype(
        np.int64
    )
    key = np.unique(row * n_lessons + col)  # one entry per (run, lesson), runs in order
    row, col = key // n_lessons, key % n_lessons
    effects = np.zeros(n_lessons)
    kind = rng.random(n_lessons)
    effects[kind < 0.02] = -0.10
    effects[(kind >= 0.02) & (kind < 0.05)] = 0.05
    difficulty = rng.normal(0.0, 1.0, n_runs)
    lift = np.bincount(row, weights=effects[col], minlength=n_runs)
    score = np.clip(0.6 + lift + 0.05 * difficulty + rng.normal(0.0, 0.1, n_runs), 0.0, 1.0)
    counts = np.bincount(row, minlength=n_runs)
    starts = np.concatenate([[0], np.cumsum(counts)])
    names = pa.array([f"L{j}" for j in range(n_lessons)], type=pa.large_string())
    lists = pa.LargeListArray.from_arrays(pa.array(starts, type=pa.int64()), names.take(col))
    fact_ids = pl.Series("fact_ids", lists).cast(pl.List(pl.String))
    run_id = pl.int_range(0, n_runs, eager=True).cast(pl.String)
    frame = pl.DataFrame(
        {
            "run_id": ("r" + run_id).alias("run_id"),
            "score": score,
            "fact_ids": fact_ids,
            "difficulty_proxy": difficulty,
        }
    )
    return frame, effects


def arrival_ledger(
    n_runs: int = 100_000, n_lessons: int = 20_000, per_run: float = 12.0, **options: object
) -> tuple[Ledger, np.ndarray]:
    """As :func:`arrival_frame`, as a validated Ledger."""
    frame, effects = arrival_frame(n_runs, n_lessons, per_run, **options)  # type: ignore[arg-type]
    return Ledger.from_frame(frame), effects
