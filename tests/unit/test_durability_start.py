"""Start fast: cached spending boundaries; a missing extra names its install (issue 19)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from cogstats.estimators import spending
from cogstats.estimators.spending import spending_boundaries


@pytest.fixture
def fresh_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("COGSTATS_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(spending, "_MEMO", {})
    return tmp_path / "spending"


@pytest.mark.parametrize("name", ["recommended"])
def test_a_built_in_gates_first_decision_needs_no_solving(
    fresh_cache: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    from cogstats import Ledger
    from cogstats.gates import make_gate

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the boundaries were solved, not read from the shipped table")

    monkeypatch.setattr(spending, "_solve", refuse)
    monkeypatch.setattr(spending, "_LOOK_LEVELS", {})  # no design computed in this process
    gate = make_gate(name)
    assert gate.nominal_levels().shape == (gate.looks + 1,)
    rng = np.random.default_rng(0)
    ledger = Ledger.from_records(
        {
            "run_id": f"r{i}",
            "score": float(rng.random()),
            "fact_ids": [f"L{j}" for j in rng.choice(20, 4, replace=False)],
            "difficulty_proxy": float(rng.random()),
        }
        for i in range(200)
    )
    assert gate.evaluate(ledger).to_frame().height == 20


def test_shipped_table_equals_a_fresh_solution(fresh_cache: Path) -> None:
    table = json.loads(spending.TABLE.read_text())
    assert table, "the table is empty: run docs/scripts/spending_table.py"
    key = min(table, key=lambda k: len(table[k]["z"]))
    inputs = table[key]["inputs"]
    assert inputs["solver"] == spending.SOLVER_VERSION
    t = [float.fromhex(v) for v in inputs["fractions"]]
    options = {
        k: float.fromhex(v) if isinstance(v, str) else v for k, v in inputs["options"].items()
    }
    fresh = spending_boundaries(
        t,
        float.fromhex(inputs["alpha"]),
        inputs["spending"],
        inputs["sides"],
        grid_points=inputs["grid_points"],
        spending_options=options,
        cache=False,
    )
    assert [float(v).hex() for v in fresh.z_boundaries] == table[key]["z"]


def test_user_cache_round_trip_and_damage(fresh_cache: Path) -> None:
    args = ([0.25, 0.5, 0.75, 1.0], 0.025, "pocock", 1)
    first = spending_boundaries(*args)
    files = list(fresh_cache.glob("*.json"))
    assert len(files) == 1
    spending._MEMO.clear()
    again = spending_boundaries(*args)
    assert again.z_boundaries == first.z_boundaries
    for damage in ("", "{", json.dumps({"inputs": {}, "z": []}), '{"z": ["nan"]}'):
        files[0].write_text(damage)
        spending._MEMO.clear()
        back = spending_boundaries(*args)  # recomputed, never a wrong boundary
        assert back.z_boundaries == first.z_boundaries
    assert np.isfinite(first.z_boundaries).all()
    other = spending_boundaries([0.25, 0.5, 0.75, 1.0], 0.05, "pocock", 1)  # another key
    assert other.z_boundaries != first.z_boundaries


def test_missing_extra_names_the_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from cogstats import cli

    def missing(args: object) -> int:
        raise ModuleNotFoundError("No module named 'papermill'", name="papermill")

    parser = cli.build_parser(None)
    monkeypatch.setattr(cli, "build_parser", lambda gate: parser)
    for action in parser._subparsers._group_actions:  # type: ignore[union-attr]
        action.choices["report"].set_defaults(func=missing)  # type: ignore[index]
    assert cli.main(["report", "ledger_audit"]) == 2
    assert "pip install 'cogstats[notebook]'" in capsys.readouterr().err
