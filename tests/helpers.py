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


#: The column mapping of :func:`write_user_ledger`'s file (ledger name -> its column).
USER_COLUMNS = {"run_id": "run", "score": "fitness", "fact_ids": "lessons_used"}
#: The planted lessons of :func:`write_user_ledger`: 2 harmful, 4 helpful, 24 null.
USER_HARMFUL = ("bad-tone", "bad-shortcut")
USER_HELPFUL = ("cite-sources", "check-units", "plan-first", "test-edges")


def write_user_ledger(path: str, *, n_runs: int = 400, seed: int = 7) -> None:
    """Write a new user's own ledger as CSV: other column names, covariates, planted lessons.

    Columns ``run``, ``fitness``, ``lessons_used`` (space-separated), ``task_family``
    (math/code/prose, score shifts -0.05/0/+0.05) and ``difficulty_estimate`` (the
    difficulty d ~ U(0, 1) the score falls with, 0.3 per unit); 3 to 6 of 30 lessons a
    run, drawn at random: :data:`USER_HARMFUL` (effect -0.15), :data:`USER_HELPFUL`
    (+0.08) and 24 null lessons ``note-00`` .. ``note-23``.  score = clip(0.7 - 0.3 d +
    family shift + effects + N(0, 0.08)), as in issue 20's trial of a user's ledger.
    """
    import csv

    rng = np.random.default_rng(seed)
    nulls = [f"note-{i:02d}" for i in range(24)]
    lessons = [*USER_HARMFUL, *USER_HELPFUL, *nulls]
    effect = {**dict.fromkeys(USER_HARMFUL, -0.15), **dict.fromkeys(USER_HELPFUL, 0.08)}
    shift = {"math": -0.05, "code": 0.0, "prose": 0.05}
    families = list(shift)
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["run", "fitness", "lessons_used", "task_family", "difficulty_estimate"])
        for r in range(n_runs):
            used = [str(x) for x in rng.choice(lessons, int(rng.integers(3, 7)), replace=False)]
            d = float(rng.uniform(0, 1))
            fam = families[r % 3]
            s = 0.7 - 0.3 * d + shift[fam] + sum(effect.get(x, 0.0) for x in used)
            s = float(np.clip(s + rng.normal(0, 0.08), 0, 1))
            w.writerow([f"run-{r}", round(s, 4), " ".join(used), fam, round(d, 3)])


def fixed_size_ledger(
    rng: np.random.Generator,
    *,
    n_runs: int = 240,
    effects: Sequence[float] = (-0.08, -0.08, 0.16) + (0.0,) * 9,
    per_run: int = 4,
    short_runs: int = 0,
    noise_sd: float = 0.04,
    link: str = "identity",
    pair: bool = False,
) -> Ledger:
    """Fixed-size prompts: every run carries ``per_run`` of the lessons, drawn at random.

    The first ``short_runs`` runs carry one lesson fewer.  Additive truth on the
    identity scale: score = 0.5 + family shift / 2 + difficulty + sum(effects of the
    injected) + N(0, noise_sd), difficulty ~ N(0, 0.03) observed exactly as
    ``difficulty_proxy``, 3 task families (``family``, shifts -0.05, 0, 0.05); the
    defaults keep every score inside (0, 1), so the clip at 0 and 1 never binds (checked).
    ``link="logit"``: the same linear predictor on the log-odds scale around 0, score =
    Binomial(20, expit(eta)) / 20 (the fractional logit's model).  ``pair``: the first two
    lessons always go in together (a duplicate inclusion pattern inside the pool).
    Lessons ``M01``, ``M02``, ... in effect order.
    """
    k = len(effects)
    ids = [f"M{j + 1:02d}" for j in range(k)]
    fam = rng.integers(0, 3, n_runs)
    difficulty = rng.normal(0.0, 0.03, n_runs)
    x = np.zeros((n_runs, k), dtype=bool)
    for i in range(n_runs):
        m = per_run - (i < short_runs)
        if pair and rng.random() < 0.4:
            x[i, :2] = True
            x[i, 2 + rng.choice(k - 2, m - 2, replace=False)] = True
        else:
            first = 2 if pair else 0
            x[i, first + rng.choice(k - first, m, replace=False)] = True
    eta = FAMILY_SHIFT[fam] / 2 + difficulty + x @ np.asarray(effects, dtype=float)
    if link == "logit":
        score = rng.binomial(20, 1.0 / (1.0 + np.exp(-eta))) / 20.0
    else:
        score = 0.5 + eta + rng.normal(0.0, noise_sd, n_runs)
        if not np.all((score > 0) & (score < 1)):
            raise ValueError("fixed_size_ledger: a score left (0, 1); lower the effects")
    records = [
        {
            "run_id": f"r{i}",
            "score": float(score[i]),
            "fact_ids": [ids[j] for j in range(k) if x[i, j]],
            "difficulty_proxy": float(difficulty[i]),
            "family": f"f{fam[i]}",
        }
        for i in range(n_runs)
    ]
    return Ledger.from_records(records)


#: :func:`write_episode_ledger`'s column mapping (ledger name -> its column)
EPISODE_COLUMNS = {"run_id": "episode", "score": "reward", "fact_ids": "memories_used"}


def write_episode_ledger(
    path: str,
    *,
    n_runs: int = 420,
    lessons: int = 64,
    per_run: int = 6,
    harmful: Sequence[str] = ("m04", "m18"),
    helpful: Sequence[str] = ("m06", "m31", "m45"),
    seed: int = 9,
) -> None:
    """Write a fixed-size-prompt ledger as a user would: every run holds ``per_run`` lessons.

    Columns ``episode, reward, memories_used, task_hardness, task_type`` (as issue 31's
    trial); lessons ``m01`` .. ``m64``; additive: reward = clip(0.6 - 0.2 hardness + task
    shift (-0.05, 0, 0.05) - 0.15 per harmful + 0.1 per helpful + N(0, 0.05)).
    """
    import csv

    gen = np.random.default_rng(seed)
    ids = [f"m{j:02d}" for j in range(1, lessons + 1)]
    effect = {**dict.fromkeys(harmful, -0.15), **dict.fromkeys(helpful, 0.1)}
    shift = {"math": -0.05, "code": 0.0, "prose": 0.05}
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["episode", "reward", "memories_used", "task_hardness", "task_type"])
        for r in range(n_runs):
            used = [ids[j] for j in gen.choice(lessons, per_run, replace=False)]
            hard = float(gen.uniform(0, 1))
            kind = ("math", "code", "prose")[r % 3]
            s = 0.6 - 0.2 * hard + shift[kind] + sum(effect.get(u, 0.0) for u in used)
            s = float(np.clip(s + gen.normal(0, 0.05), 0.0, 1.0))
            w.writerow([r, round(s, 4), ";".join(used), round(hard, 3), kind])
