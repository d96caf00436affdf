"""Synthetic ledgers with known truth for tests (not part of the package API)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from cogstats import Ledger

FAMILY_SHIFT = np.array([-0.1, 0.0, 0.1])


def random_inclusion_ledger(
    rng: np.random.Generator,
    *,
    n_runs: int = 160,
    effects: Sequence[float] = (0.0,) * 6,
    p: float = 0.5,
    noise_sd: float = 0.1,
    difficulty_sd: float = 0.1,
    proxy_corr: float = 0.8,
    base: float = 0.5,
) -> Ledger:
    """Lessons injected independently with probability ``p`` (logged), under run difficulty.

    score = clip(base + family shift + difficulty + sum(effects of injected) + N(0, noise_sd))
    The ledger carries ``difficulty_proxy`` (correlation ``proxy_corr`` with the
    difficulty), ``family`` (3 task families with shifts -0.1, 0, 0.1), ``run_index``,
    and the logged propensities (``eligible_ids``/``propensities``, all lessons at ``p``).
    """
    k = len(effects)
    ids = [f"L{j + 1}" for j in range(k)]
    fam = rng.integers(0, 3, n_runs)
    difficulty = rng.normal(0.0, difficulty_sd, n_runs)
    proxy = proxy_corr * difficulty / difficulty_sd + np.sqrt(1 - proxy_corr**2) * rng.normal(
        size=n_runs
    )
    x = rng.random((n_runs, k)) < p
    score = base + FAMILY_SHIFT[fam] + difficulty + x @ np.asarray(effects, dtype=float)
    score = np.clip(score + rng.normal(0.0, noise_sd, n_runs), 0.0, 1.0)
    records = [
        {
            "run_id": f"r{i}",
            "score": float(score[i]),
            "fact_ids": [ids[j] for j in range(k) if x[i, j]],
            "difficulty_proxy": float(proxy[i]),
            "family": f"f{fam[i]}",
            "run_index": i,
            "eligible_ids": ids,
            "propensities": [p] * k,
        }
        for i in range(n_runs)
    ]
    return Ledger.from_records(records)
