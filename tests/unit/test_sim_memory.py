"""Memory stays flat as replicates grow (with keep_runs=False only the per-replicate rows
are kept): the traced peak for 20,000 replicates is within 1.5x of the peak for 2,000 at
the same chunk size (numpy reports its allocations to tracemalloc)."""

from __future__ import annotations

import tracemalloc

from cogstats.sim import Scenario, simulate

SCENARIO = Scenario.from_dict(
    {
        "runs": 40,
        "lessons": {
            "listed": [{"id": "a", "effect": 0.1}, {"id": "b", "effect": -0.2, "kind": "poison"}]
        },
        "retrieval": {"max_facts": 4, "candidate_slots": 2, "rest_after_trials": 5},
        "gate": {"type": "cycgraph", "min_trials": 3},
    }
)


def _peak(replicates: int) -> int:
    # compile / load the engine, and the modules its frames need (the lessons frame is
    # built when asked for: pyarrow's import must not fall in the measured window)
    _ = simulate(SCENARIO, replicates=10, rng=1, keep_runs=False).lessons
    tracemalloc.start()
    simulate(SCENARIO, replicates=replicates, rng=1, keep_runs=False, chunk_size=1000)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


def test_memory_flat_as_replicates_grow() -> None:
    small, large = _peak(2_000), _peak(20_000)
    assert large < 1.5 * small, (small, large)
