"""Sizes that cannot fit are refused before anything is allocated; grids load in time
that scales with their sections, not their cells; ingestion refuses endless input.

Every input is generated here.  Nothing is timed (benchmarks/hostile_input.py times the
grid load); "before allocating" is checked with tracemalloc's peak, "no hang" by the
refusal returning at all.
"""

from __future__ import annotations

import dataclasses
import os
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from cogstats._validation import LedgerError, ParameterError, SpecError
from cogstats.sim import Scenario, simulate
from cogstats.sim.spec import spec_from_dict
from cogstats.sweep.spec import sweep_from_dict

BASE: dict[str, Any] = {
    "runs": 30,
    "lessons": {"listed": [{"id": "a", "effect": 0.1}, {"id": "b", "effect": -0.1}]},
    "gate": {"type": "cycgraph", "min_trials": 2},
}


def _peak_mb(call: Any) -> tuple[float, BaseException]:
    tracemalloc.start()
    try:
        call()
    except Exception as exc:  # the refusal under test
        caught = exc
    else:  # pragma: no cover - the test fails below
        raise AssertionError("not refused")
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak / 2**20, caught


def test_runs_that_cannot_fit_are_refused_naming_the_key_and_the_estimate() -> None:
    peak, exc = _peak_mb(lambda: spec_from_dict({**BASE, "runs": 10**11}, source="big.toml"))
    assert isinstance(exc, SpecError) and exc.key == "runs" and exc.source == "big.toml"
    assert "one replicate of 100,000,000,000 runs" in str(exc) and "TiB of memory" in str(exc)
    assert peak < 50  # refused before allocating (it asked for tens of TiB)
    # a scenario built around the door (dataclasses.replace) is refused by the engine
    small = Scenario.from_dict(BASE)
    peak, exc = _peak_mb(
        lambda: simulate(dataclasses.replace(small, runs=10**11), replicates=2, rng=1)
    )
    assert isinstance(exc, SpecError) and exc.key == "runs" and peak < 50


def test_a_grid_that_cannot_fit_is_refused_before_a_cell_is_built() -> None:
    grid = {"lessons.listed[0].effect": [0.01 * k for k in range(10)]}
    grid |= {"gate.min_trials": list(range(2, 12)), "gate.promote_margin": [0.01] * 10}
    grid |= {"gate.evict_margin": [0.02] * 10, "score.base": [0.5] * 10}
    grid |= {"score.noise_sd": [0.1] * 10, "gate.max_trials": list(range(12, 22))}
    grid |= {"runs": list(range(30, 40)), "retrieval.max_facts": list(range(2, 12))}
    grid |= {"retrieval.candidate_slots": list(range(1, 11))}
    assert len(grid) == 10  # 10 axes of 10 values: 10^10 cells
    peak, exc = _peak_mb(lambda: sweep_from_dict({**BASE, "grid": grid}, source="grid.toml"))
    assert isinstance(exc, SpecError) and exc.key == "grid" and exc.source == "grid.toml"
    assert "10,000,000,000 cells" in str(exc) and "of memory" in str(exc)
    assert peak < 50


def _sweep_grid() -> dict[str, list[Any]]:
    return {
        "gate.min_trials": list(range(2, 12)),
        "gate.evict_margin": [0.01 * k for k in range(1, 11)],
        "gate.promote_margin": [0.01 * k for k in range(1, 11)],
        "lessons.listed[0].effect": [0.1 * k for k in range(10)],
    }


def test_ten_thousand_cells_validate_each_section_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The gate's 1,000 combinations and the lesson's 10 are validated, not 10,000 cells
    (twice, as before)."""
    calls = []
    original = Scenario.with_values

    def counted(self: Scenario, values: Any, **kw: Any) -> Scenario:
        calls.append(dict(values))
        return original(self, values, **kw)

    monkeypatch.setattr(Scenario, "with_values", counted)
    spec = sweep_from_dict({**BASE, "replicates": 2, "grid": _sweep_grid()})
    assert spec.n_cells == 10_000 == spec.simulation.n_cells
    assert len(calls) == 1_010
    cells = spec.cells()
    assert len(cells) == 10_000 and spec.cells()[0].key == cells[0].key
    monkeypatch.setattr(Scenario, "with_values", original)
    for task in (cells[0], cells[4321], cells[-1]):  # the same as validating the cell alone
        alone = spec.simulation.scenario.with_values(task.values)
        assert task.scenario == alone, task.values


@pytest.mark.parametrize("preset", [None, "recommended"])
def test_cells_put_together_equal_cells_validated_alone(preset: str | None) -> None:
    data: dict[str, Any] = {
        **BASE,
        "difficulty": {
            "model": "iid",
            "sd": 0.1,
            "families": [{"name": "x", "weight": 1.0}, {"name": "y", "weight": 1.0}],
        },
        "grid": {
            "lessons.listed[0].effect": [0.0, 0.2],
            "difficulty.families[0].weight": [1.0, 2.0],
            "score.noise_sd": [0.05, 0.1],
            "gate.min_trials": [2, 3],
            "retrieval.max_facts": [3, 4],
            "name": ["p", "q"],
            "score.base": [0.5, 0.6],
            "zip": [["score.base", "name"]],
        },
    }
    if preset is not None:  # the preset's own options (its gate and retrieval in one piece)
        data["grid"]["gate.min_share"] = [0.1, 0.2]
    spec = spec_from_dict(data, preset=preset)
    built = spec.cells()
    assert len(built) == spec.n_cells == 2 ** (6 if preset is None else 7)
    for values, scenario in built:
        assert scenario == spec.scenario.with_values(values), values


def test_ingest_refuses_a_device_a_pipe_and_an_endless_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cogstats.gates import CycgraphGate, StreamingGate
    from cogstats.gates.streaming import _ingest

    gate = StreamingGate(CycgraphGate())
    with pytest.raises(ParameterError, match="/dev/zero is not a regular file"):
        gate.ingest("/dev/zero")
    fifo = tmp_path / "runs.fifo"
    os.mkfifo(fifo)
    fd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)  # a writer, so that opening returns
    try:
        with pytest.raises(ParameterError, match="is not a regular file"):
            gate.ingest(fifo)
    finally:
        os.close(fd)
    monkeypatch.setattr(_ingest, "MAX_LINE_BYTES", 1000)
    path = tmp_path / "runs.jsonl"
    path.write_text('{"run_id": "r1", "score": 0.5, "fact_ids": ["a"]}\n' + "x" * 5000)
    with pytest.raises(LedgerError, match=r"row 2: line 2 \(byte offset 50\) runs past 1,000"):
        gate.ingest(path)
    assert gate.stats.run_ids == ("r1",)  # the line before it is recorded
