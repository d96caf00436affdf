"""Sweep specs: base scenarios, overrides, cell seeds and keys, errors before any cell runs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from cogstats._validation import SpecError
from cogstats.cli import main
from cogstats.sim import load_spec
from cogstats.sweep import cell_key, load_sweep, sweep_from_dict
from cogstats.sweep.spec import canonical_json, spec_from_resolved

ROOT = Path(__file__).resolve().parents[2]
SIMS = ROOT / "simulations"

BASE = """
name = "base"
runs = 20
replicates = 7
seed = 11
[[lessons.listed]]
id = "a"
effect = 0.05
[[lessons.poison]]
after_run = 3
count = 2
effect = -0.2
[retrieval]
policy = "in_progress_first"
max_facts = 4
candidate_slots = 2
rest_after_trials = 3
[gate]
type = "cycgraph"
decision_rule = "margin"
min_trials = 2
max_trials = 6
[grid]
runs = [20, 30]
"""

SWEEP = """
name = "over-base"
scenario = "base.toml"
seed = 5
[gate]
evict_margin = 0.08
[grid]
"gate.min_trials" = [2, 3]
"retrieval.rest_after_trials" = [3, 4, 5]
"gate.promote_margin" = [0.03, 0.06]
"gate.evict_margin" = [0.03, 0.06]
"gate.decision_rule" = ["margin", "inference"]
zip = [["gate.promote_margin", "gate.evict_margin"]]
"""


def _files(tmp_path: Path, sweep: str = SWEEP) -> Path:
    (tmp_path / "base.toml").write_text(BASE)
    path = tmp_path / "sweep.toml"
    path.write_text(sweep)
    return path


def test_base_file_overrides_and_grid(tmp_path: Path) -> None:
    spec = load_sweep(_files(tmp_path))
    sc = spec.simulation.scenario
    # 2 (min_trials) x 3 (rest) x 2 (zipped margins) x 2 (rule) cells
    assert spec.n_cells == 24
    assert spec.name == "over-base"
    assert spec.stem == "sweep"
    assert spec.base == str(tmp_path / "base.toml")
    # the sweep's [gate] merges into the base's key by key
    assert sc.gate.policy["evict_margin"] == 0.08
    assert sc.gate.policy["max_trials"] == 6
    assert sc.gate.policy["decision_rule"] == "margin"
    # replicates inherited from the base, seed overridden, base grid ignored
    assert spec.replicates == 7
    assert spec.seed == 5
    assert spec.axes == (
        "gate.min_trials",
        "retrieval.rest_after_trials",
        "gate.promote_margin",
        "gate.evict_margin",
        "gate.decision_rule",
    )
    cells = spec.cells()
    assert [c.index for c in cells] == list(range(24))
    # zipped axes move together in every cell
    assert all(c.values["gate.promote_margin"] == c.values["gate.evict_margin"] for c in cells)
    for c in cells:
        pol = c.scenario.gate.policy
        assert pol["min_trials"] == c.values["gate.min_trials"]
        assert pol["decision_rule"] == c.values["gate.decision_rule"]
        assert c.scenario.retrieval.rest_after_trials == c.values["retrieval.rest_after_trials"]


def test_cell_seeds_are_the_children_simulate_uses(tmp_path: Path) -> None:
    spec = load_sweep(_files(tmp_path))
    cells = spec.cells(seed=123, replicates=4)
    children = np.random.SeedSequence(123).spawn(len(cells))
    for c, child in zip(cells, children, strict=True):
        assert c.replicates == 4
        assert c.seed == {"entropy": 123, "spawn_key": [c.index]}
        assert np.array_equal(c.seed_sequence().generate_state(8), child.generate_state(8))


def test_cell_keys_are_stable_and_distinct(tmp_path: Path) -> None:
    spec = load_sweep(_files(tmp_path))
    keys = [c.key for c in spec.cells()]
    assert len(set(keys)) == len(keys)
    assert keys == [c.key for c in load_sweep(tmp_path / "sweep.toml").cells(seed=99)]
    first = spec.cells()[0]
    assert first.key == cell_key(dict(reversed(list(first.values.items()))))


def test_inline_scenario_table_and_no_base() -> None:
    inline = sweep_from_dict(
        {
            "scenario": {"runs": 10, "lessons": {"listed": [{"id": "a", "effect": 0.1}]}},
            "runs": 12,
            "grid": {"lessons.listed[0].effect": [0.0, 0.2]},
        }
    )
    assert inline.simulation.scenario.runs == 12
    assert [c.values for c in inline.cells()] == [
        {"lessons.listed[0].effect": 0.0},
        {"lessons.listed[0].effect": 0.2},
    ]
    plain = sweep_from_dict({"runs": 10, "lessons": {"listed": [{"id": "a", "effect": 0.1}]}})
    assert plain.n_cells == 1
    assert plain.cells()[0].values == {}


def test_resolved_spec_round_trips(tmp_path: Path) -> None:
    spec = load_sweep(_files(tmp_path))
    resolved = json.loads(canonical_json(spec.resolved()))
    again = spec_from_resolved(resolved, replicates=spec.replicates, seed=spec.seed)
    assert canonical_json(again.resolved()) == canonical_json(spec.resolved())
    assert [c.key for c in again.cells()] == [c.key for c in spec.cells()]
    assert [c.scenario for c in again.cells()] == [c.scenario for c in spec.cells()]


def test_column_types() -> None:
    spec = sweep_from_dict(
        {
            "runs": 10,
            "lessons": {"listed": [{"id": "a", "effect": 0.1}]},
            "grid": {
                "lessons.listed[0].effect": [0, 0.5],
                "gate.min_trials": [2, 3],
                "gate.decision_rule": ["margin", "inference"],
                "gate.recheck_verified": [True, False],
            },
        }
    )
    assert spec.column_types() == {
        "lessons.listed[0].effect": "float",
        "gate.min_trials": "int",
        "gate.decision_rule": "str",
        "gate.recheck_verified": "bool",
    }


MALFORMED = [
    (
        "unknown parameter",
        '"gate.min_trails" = [2, 3]',
        "grid.gate.min_trails",
        "names no parameter",
    ),
    ("empty list", '"gate.min_trials" = []', "grid.gate.min_trials", "non-empty list"),
    (
        "type mismatch",
        '"gate.min_trials" = ["two"]',
        "grid.gate.min_trials",
        "is a string but the scenario's value",
    ),
    (
        "invalid cell value",
        '"gate.min_trials" = [2, 0]',
        "gate.min_trials",
        "min_trials must be >= 1",
    ),
    ("unknown rule", '"gate.decision_rule" = ["margin", "bayes"]', "gate.decision_rule", "bayes"),
]


@pytest.mark.parametrize(("label", "line", "key", "text"), MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_grid_fails_before_any_cell_runs(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    label: str,
    line: str,
    key: str,
    text: str,
) -> None:
    path = _files(tmp_path, f'scenario = "base.toml"\nreplicates = 3\n[grid]\n{line}\n')
    with pytest.raises(SpecError) as err:
        load_sweep(path)
    assert err.value.key == key, label
    assert str(path) in str(err.value)
    assert text in str(err.value)
    # the command line: exit status 2, one message naming the key, and no store made
    out = tmp_path / "store"
    assert main(["sweep", str(path), "--out", str(out), "--no-progress", "--workers", "1"]) == 2
    message = capsys.readouterr().err
    assert f"key '{key}'" in message
    assert not out.exists()


def test_base_errors_name_the_base_file(tmp_path: Path) -> None:
    (tmp_path / "base.toml").write_text(BASE.replace("min_trials = 2", "min_trials = -1"))
    path = tmp_path / "sweep.toml"
    path.write_text('scenario = "base.toml"\n[grid]\n"gate.min_trials" = [2]\n')
    with pytest.raises(SpecError) as err:
        load_sweep(path)
    assert err.value.source == str(tmp_path / "base.toml")
    assert err.value.key == "gate.min_trials"


def test_bad_scenario_references(tmp_path: Path) -> None:
    path = tmp_path / "s.toml"
    path.write_text('scenario = "missing.toml"\n')
    with pytest.raises(SpecError, match="base scenario file not found") as err:
        load_sweep(path)
    assert err.value.key == "scenario"
    path.write_text("scenario = 3\n")
    with pytest.raises(SpecError, match="must be a path") as err:
        load_sweep(path)
    # a base that names the sweep file itself
    path.write_text('scenario = "s.toml"\nruns = 5\n')
    with pytest.raises(SpecError, match="cycle"):
        load_sweep(path)
    path.write_text("[scenario]\nruns = 5\nseed = 3\n")
    with pytest.raises(SpecError, match="top level") as err:
        load_sweep(path)
    assert err.value.key == "scenario.seed"
    path.write_text("runs = [")
    with pytest.raises(SpecError, match="malformed TOML"):
        load_sweep(path)
    with pytest.raises(FileNotFoundError):
        load_sweep(tmp_path / "nope.toml")


def test_overrides_are_validated(tmp_path: Path) -> None:
    spec = load_sweep(_files(tmp_path))
    with pytest.raises(ValueError, match="replicates must be >= 1"):
        spec.cells(replicates=0)
    with pytest.raises(ValueError, match="seed must be >= 0"):
        spec.cells(seed=-1)


@pytest.mark.parametrize(("name", "cells"), [("threshold_sweep", 96), ("threshold_sweep_ci", 16)])
def test_shipped_sweeps(name: str, cells: int) -> None:
    spec = load_sweep(SIMS / f"{name}.toml")
    assert spec.n_cells == cells
    assert spec.base == str(SIMS / "poison_crater.toml")
    assert set(spec.axes) == {
        "gate.min_trials",
        "retrieval.rest_after_trials",
        "gate.promote_margin",
        "gate.evict_margin",
        "gate.decision_rule",
    }
    # apart from the grid, every cell is the S2 poison-crater scenario
    base = load_spec(SIMS / "poison_crater.toml").scenario
    sc = spec.cells()[0].scenario
    assert (sc.runs, sc.streams, sc.poison, sc.difficulty, sc.score) == (
        base.runs,
        base.streams,
        base.poison,
        base.difficulty,
        base.score,
    )


def test_shipped_recommended_sweep_tunes_the_preset() -> None:
    spec = load_sweep(SIMS / "recommended_sweep.toml")
    assert spec.n_cells == 27
    assert set(spec.axes) == {"gate.crater_level", "gate.release_t", "retrieval.retest_floor"}
    cells = spec.cells()
    assert all(c.scenario.preset == "recommended" for c in cells)
    assert {c.scenario.gate.policy["crater_level"] for c in cells} == {0.05, 0.1, 0.2}
    assert {c.scenario.retrieval.retest_floor for c in cells} == {1.5, 2.0, 3.0}
    # the preset's own retrieval options are kept beside the swept one
    assert {c.scenario.retrieval.retest_order for c in cells} == {"likely_innocent"}
    # the caps are S2's, kept through the preset
    assert (cells[0].scenario.retrieval.max_facts, cells[0].scenario.retrieval.candidate_slots) == (
        12,
        6,
    )
