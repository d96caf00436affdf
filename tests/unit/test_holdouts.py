"""Holdouts of verified lessons: an option of the preset's retrieval policy (off by default),
at most one a run, logged with its propensity; the compiled engine refuses it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cogstats.retrieval import InProgressFirst
from cogstats.sim import load_spec, simulate
from cogstats.sim.engine import fast_support
from cogstats.store import Cadence, LessonStore

ROOT = Path(__file__).resolve().parents[2]


def _table() -> list[dict[str, object]]:
    rows: list[dict[str, object]] = [
        {"id": f"v{i}", "status": "verified", "created_at": i} for i in range(4)
    ]
    rows += [{"id": "a1", "status": "admitted", "created_at": 5, "trials": 0}]
    rows += [{"id": f"c{i}", "status": "candidate", "created_at": 6 + i} for i in range(3)]
    for r in rows:
        r.setdefault("trials", 0)
    return rows


def test_holdouts_are_off_by_default_and_change_nothing_then() -> None:
    base = InProgressFirst(max_facts=7, candidate_slots=2)
    assert base.holdout_prob == 0.0 and base.uniforms_per_run(9) == 2
    same = InProgressFirst(max_facts=7, candidate_slots=2, holdout_prob=0.0)
    for seed in range(5):
        assert base.select(_table(), rng=seed) == same.select(_table(), rng=seed)
    assert base.select(_table(), rng=1).propensities is None


def test_at_most_one_verified_lesson_a_run_with_its_propensity() -> None:
    pol = InProgressFirst(max_facts=7, candidate_slots=2, holdout_prob=0.25)
    assert pol.uniforms_per_run(9) == 3
    n = 1500
    withheld = np.zeros(4)
    for seed in range(n):
        sel = pol.select(_table(), rng=seed)
        props = sel.propensities
        assert props is not None
        verified = [f"v{i}" for i in range(4)]
        assert {f: props[f] for f in verified} == dict.fromkeys(verified, 1 - 0.25 / 4)
        missing = [f for f in verified if f not in sel.fact_ids]
        assert len(missing) <= 1 and "a1" in sel.fact_ids  # admitted: never withheld
        for f in missing:
            withheld[int(f[1])] += 1
    # each verified lesson is withheld with probability 0.25 / 4: within 4 Monte Carlo sd
    p = 0.25 / 4
    assert np.all(np.abs(withheld / n - p) < 4 * np.sqrt(p * (1 - p) / n)), withheld / n
    u = np.array([0.9, 0.9, 0.1])  # the third uniform draws the holdout
    held = pol.select_with_uniforms(_table(), None, u)
    assert len([f for f in held.fact_ids if f.startswith("v")]) == 3


def test_the_compiled_engine_refuses_holdouts_the_reference_runs_them() -> None:
    s = load_spec(ROOT / "simulations/poison_crater.toml").scenario.with_preset("recommended")
    s = s.with_values({"retrieval.holdout_prob": 0.2, "gate.recheck_verified": True})
    reason = fast_support(s)
    assert reason is not None and "holdout_prob" in reason and "reference" in reason
    with pytest.raises(ValueError, match="holdout_prob"):
        simulate(s, replicates=1, rng=1, engine="fast", progress=False)
    out = simulate(s, replicates=1, rng=1, progress=False)
    assert out.engine == "reference"


def _run_store(tmp: Path, holdout: float) -> str:
    """A verified lesson that is harmful (-0.25) in every run's prompt, 160 runs."""
    rng = np.random.default_rng(4)
    with LessonStore.open(
        tmp,
        gate="recommended",
        policy=InProgressFirst(max_facts=6, candidate_slots=2, holdout_prob=holdout),
        cadence=Cadence(recheck_verified=True),
    ) as store:
        store.add("V", status="verified")
        for j in range(4):
            store.add(f"c{j}")
        for i in range(160):
            sel = store.select(rng=rng)
            d = float(rng.normal(0, 0.05))
            harm = -0.25 if "V" in sel.fact_ids else 0.0
            y = float(np.clip(0.6 + d + harm + rng.normal(0, 0.03), 0, 1))
            store.record(f"r{i}", y, sel, {"difficulty_proxy": d})
        return str(store.lesson("V")["status"])


def test_a_verified_lesson_that_turns_harmful_is_detected_only_with_holdouts(
    tmp_path: Path,
) -> None:
    assert _run_store(tmp_path / "without", 0.0) == "verified"  # in every run: not judged apart
    assert _run_store(tmp_path / "with", 0.3) == "evicted"
