"""The per-lesson frames of a simulation are built when first asked for (issue 17, C1).

``simulate`` keeps a small simulation's raw arrays and builds the lessons frame (its
status events and list columns) and the decisions frame only when read; a large one
builds them chunk by chunk (flat memory, tests/unit/test_sim_memory.py).  Either way the
frames are the same.
"""

from __future__ import annotations

from typing import Any

import pytest

from cogstats.sim import Scenario, engine, simulate

SCENARIO = Scenario.from_dict(
    {
        "runs": 30,
        "lessons": {
            "listed": [
                {"id": "a", "effect": 0.15},
                {"id": "b", "effect": -0.3, "kind": "poison"},
                {"id": "c", "effect": 0.0, "kind": "neutral"},
            ]
        },
        "retrieval": {"max_facts": 3, "candidate_slots": 2, "rest_after_trials": 5},
        "gate": {"type": "cycgraph", "decision_rule": "margin", "min_trials": 3},
    }
)


def test_lessons_are_built_when_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = engine.lesson_outcomes

    def counting(*args: Any) -> Any:
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(engine, "lesson_outcomes", counting)
    result = simulate(SCENARIO, replicates=40, rng=3, keep_runs=False, chunk_size=16)
    assert calls == [] and result.metrics.height == 40  # the metrics are there at once
    assert result.lessons.height == 40 * 3
    assert len(calls) == 3  # one frame per chunk, built once
    _ = result.lessons, result.decisions, result.status_events()
    assert len(calls) == 3


@pytest.mark.parametrize("engine_name", ["fast", "reference"])
def test_lazy_and_chunk_by_chunk_frames_are_the_same(
    engine_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    lazy = simulate(SCENARIO, replicates=12, rng=5, engine=engine_name, chunk_size=5)
    monkeypatch.setattr(engine, "_LAZY_BYTES", 0)  # every chunk's frame built at once
    eager = simulate(SCENARIO, replicates=12, rng=5, engine=engine_name, chunk_size=5)
    assert lazy.decisions.height > 0
    for name in ("runs", "decisions", "lessons", "metrics"):
        assert getattr(lazy, name).equals(getattr(eager, name)), name
    assert lazy.status_events().equals(eager.status_events())
    assert "_status_events" not in lazy.lessons.columns
