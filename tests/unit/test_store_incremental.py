"""The store's incremental look (cogstats.store.incremental) against the batch fit.

At more than 256 columns the store keeps the ridge's all-penalized inverse by rank-one
updates and derives each pass by a Woodbury correction; the fit must be the batch
fit's (LifecycleGate.fit on the same statistics) to rounding, and the decisions, whys and
the look's columns identical, look after look, through groups of identical inclusion
patterns (formed and split), a lesson in every run, freed suspects, new lessons and
refreshes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cogstats.gates import LifecycleGate
from cogstats.store.engine import LifecycleEngine
from cogstats.store.incremental import INCREMENTAL_FROM, IncrementalRidge

FIELDS = ("estimate", "std_error", "t", "info", "df", "sigma")


class _Stream:
    def __init__(self, lessons: int, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.eff = self.rng.normal(0.0, 0.03, lessons)
        self.eff[:6] = -0.25  # clear suspects: the passes free them
        self.lessons = lessons

    def run(self, i: int, avail: int) -> tuple[str, float, list[str], dict[str, Any]]:
        ids = self.rng.choice(avail, 8, replace=False)
        d = float(self.rng.normal(0.0, 0.1))
        y = float(np.clip(0.6 + d + self.eff[ids].sum() + self.rng.normal(0.0, 0.05), 0, 1))
        facts = [f"L{j}" for j in ids] + ["always"]  # one lesson in every run
        if i % 37 == 0:
            facts += ["twinA", "twinB"]  # one inclusion pattern: a group
        if i >= 1700 and i % 53 == 0:
            facts += ["twinA"]  # ... until it splits
        return f"r{i}", y, facts, {"difficulty_proxy": d}


def _close(a: np.ndarray, b: np.ndarray, name: str) -> float:
    """The largest relative difference (NaN in the same places)."""
    assert np.array_equal(np.isnan(a), np.isnan(b)), name
    ok = ~np.isnan(a)
    if not ok.any():
        return 0.0
    diff = np.abs(a[ok] - b[ok]) / np.maximum(np.abs(b[ok]), 1e-6)
    return float(diff.max())


def test_the_incremental_fit_is_the_batch_fit_and_decides_alike() -> None:
    gate = LifecycleGate()
    eng = LifecycleEngine(gate)
    eng.fast.refresh_every = 40  # refreshes during the test, too
    stream = _Stream(290, seed=8)
    for i in range(1600):  # history: lessons arriving, no look
        eng.add_run(*stream.run(i, min(stream.lessons, 30 + i // 6)))
    assert len(eng.ids) + 2 >= INCREMENTAL_FROM
    worst = 0.0
    used = 0
    freed = 0
    for i in range(1600, 1760):
        if i == 1720:
            stream.lessons += 1  # a new lesson: the columns change
        eng.add_run(*stream.run(i, stream.lessons))
        if i % 5 or i < 1640:
            continue
        st = eng.statistics()
        fast = eng.fast.fit(st)
        batch = gate.fit(st)
        assert fast is not None
        used += 1
        # a lesson in every run is the intercept: its numbers (masked as not identifiable
        # but for df, sigma, info) are rounding noise in both fits; every other lesson's
        # are compared
        some = np.diag(st.ridge.gram)[st.ridge.n_fixed :] < st.ridge.runs
        for name in FIELDS:
            a, b = getattr(fast, name)[some], getattr(batch, name)[some]
            worst = max(worst, _close(a, b, name))
        assert np.array_equal(fast.identifiable, batch.identifiable)
        assert np.array_equal(fast.penalized, batch.penalized)
        freed += int((~batch.penalized).sum())
        ids = [*eng.ids]
        statuses = {f: "suspended" for f in ids[:10:3]}
        look = eng.look(ids, statuses)
        eng_batch = LifecycleEngine(gate)
        eng_batch.fast = IncrementalRidge(gate)
        eng_batch.fast.fit = lambda stats: None  # type: ignore[method-assign]
        for attr in ("stats", "covariates", "ids", "col", "gram", "zty", "yty", "runs"):
            setattr(eng_batch, attr, getattr(eng, attr))
        for attr in ("with_ss", "low", "high"):
            setattr(eng_batch, attr, getattr(eng, attr))
        want = eng_batch.look(ids, statuses)
        for col in ("fact_id", "decision", "reason", "why", "identifiable"):
            assert look[col] == want[col], col
        for col in ("t_stat", "crater_t", "estimate", "std_error"):
            a = np.array([np.nan if v is None else v for v in look[col]])
            b = np.array([np.nan if v is None else v for v in want[col]])
            worst = max(worst, _close(a, b, col))
    assert used == 24 and freed > 0  # suspects were freed in some passes
    assert worst < 1e-8, worst
    assert eng.fast.refreshes >= 3 and eng.fast.fallbacks == 0
    assert eng.fast.corrections > 0  # passes corrected from a kept inverse (Woodbury)
    rep = eng.fast.rep
    assert rep is not None
    twins = [eng.col["twinA"], eng.col["twinB"]]
    assert rep[twins[1]] == twins[1]  # the twins split at run 1,700


def test_groups_from_hashes_are_the_batch_groups() -> None:
    from cogstats.estimators.debiased_ridge import duplicate_groups

    gate = LifecycleGate()
    eng = LifecycleEngine(gate)
    rng = np.random.default_rng(3)
    for i in range(120):
        facts = [f"L{j}" for j in range(12) if rng.random() < 0.3]
        if i % 10 == 0:
            facts += ["g1", "g2", "g3"]
        if i < 60 and i % 7 == 0:
            facts += ["h1", "h2"]
        facts += ["all1", "all2"]  # every run: never merged
        eng.add_run(f"r{i}", 0.5, facts, {"difficulty_proxy": float(rng.normal())})
        st = eng.statistics()
        r = st.ridge
        got = eng.fast._groups(r.gram, r.n_fixed, r.runs)
        assert np.array_equal(got, duplicate_groups(r.gram, r.n_fixed, r.runs)), i
