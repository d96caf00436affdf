"""A simulated world replayed through LessonStore with the simulator's draws gives the
reference engine's prompts, statuses and events, bit for bit (one lifecycle wiring)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cogstats import _codes as C
from cogstats.sim import load_spec
from cogstats.sim.draws import draw_uniforms, layout, prepare, scenario_lessons
from cogstats.sim.reference import run_reference
from cogstats.store import Cadence, LessonStore

ROOT = Path(__file__).resolve().parents[2]

WORLDS = {
    "S2": ("simulations/poison_crater.toml", 3),
    "mild_poisons": ("simulations/s2_variants/mild_poisons.toml", 2),
    "two_waves": ("simulations/s2_variants/two_waves.toml", 2),
}


@pytest.mark.parametrize("name", list(WORLDS))
def test_the_store_replays_the_reference_engine_bit_for_bit(name: str, tmp_path: Path) -> None:
    spec, reps = WORLDS[name]
    s = load_spec(ROOT / spec).scenario.with_preset("recommended")
    lessons = scenario_lessons(s)
    lay = layout(s)
    prep = prepare(s, lessons, draw_uniforms(np.random.SeedSequence(20261203), 0, reps, lay), lay)
    raw = run_reference(s, lessons, prep)
    index = {f: j for j, f in enumerate(lessons.ids)}
    fams = [f.name for f in s.difficulty.families]
    runs = prep.noise.shape[1]
    suspended = 0
    for rep in range(reps):
        store = LessonStore.open(
            tmp_path / f"rep{rep}",
            preset="recommended",
            max_facts=s.retrieval.max_facts,
            candidate_slots=s.retrieval.candidate_slots,
            cadence=Cadence(s.gate.every, s.gate.from_run, bool(s.gate.recheck_verified)),
        )
        with store:
            for r in range(runs):
                run = r + 1
                for j in np.flatnonzero(lessons.arrival == run):
                    fam = None if lessons.applies[j] < 0 else fams[lessons.applies[j]]
                    store.add(lessons.ids[j], created_at=int(lessons.arrival[j]), family=fam)
                family = fams[prep.family[rep, r]] if fams else None
                sel = store.select_with_uniforms(prep.retrieval[rep, r], context={"family": family})
                idx = sorted(index[f] for f in sel.fact_ids)
                assert idx == raw.inj[rep, r, : raw.ninj[rep, r]].tolist(), (rep, run)  # prompt
                covs: dict[str, Any] = {
                    "run_index": run,
                    "true_difficulty": float(prep.difficulty[rep, r]),
                }
                if prep.proxy is not None:
                    covs["difficulty_proxy"] = float(prep.proxy[rep, r])
                if fams:
                    covs["family"] = family
                if sel.propensities is not None:
                    logged = sorted((index[f], p) for f, p in sel.propensities.items())
                    covs["eligible_ids"] = [lessons.ids[j] for j, _ in logged]
                    covs["propensities"] = [p for _, p in logged]
                    assert raw.pval[rep, r, : len(logged)].tolist() == [p for _, p in logged]
                score = float(raw.score[rep, r])  # the prompt is the engine's: so is the score
                store.record(str(run), score, [lessons.ids[j] for j in idx], covs)
            events = [
                (
                    rep,
                    e["run"],
                    index[e["fact_id"]],
                    C.STATUS_NAMES.index(e["from"]),
                    C.STATUS_NAMES.index(e["to"]),
                    e["reason"],
                    e["why"],
                )
                for e in store.events().iter_rows(named=True)
            ]
            assert events == [e for e in raw.events or () if e[0] == rep]  # why included
            final = dict(store.lessons().select("fact_id", "trials").iter_rows())
            assert all(raw.trials[rep, index[f]] == t for f, t in final.items())
            suspended += sum(e[4] == C.STATUS_SUSPENDED for e in events)
    assert suspended > 0  # the worlds exercise the lifecycle
