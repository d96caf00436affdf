"""The ledgers in data/ are what the simulator produces for their documented seeds."""

from __future__ import annotations

from pathlib import Path

import pytest

from cogstats import Ledger
from cogstats.sim import load_spec, simulate

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("spec", "data"),
    [
        ("poison_crater", "poison_crater_ledger"),
        ("adaptive_confounding", "ucb1_families_ledger"),
    ],
)
def test_bundled_ledger_regenerates(spec: str, data: str, tmp_path: Path) -> None:
    scenario = load_spec(ROOT / "simulations" / f"{spec}.toml").scenario
    fresh = simulate(scenario, replicates=1, rng=20261130).ledger(0)
    bundled = Ledger.read(ROOT / "data" / f"{data}.csv")
    # through CSV and back, as the bundled file was written
    again = Ledger.read(fresh.write(tmp_path / "fresh.csv"))
    assert bundled.frame.equals(again.frame)
    assert len(bundled) == scenario.runs
