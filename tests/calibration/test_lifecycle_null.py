"""The second-version recommended gate's error at effect 0 (S1), by simulation (fixed seeds).

Claim (docs/recommended.md, "Second version"): a lesson of effect 0 judged after every
one of 100 runs, injected at 1/2, is promoted or convicted (either tier) in at most 1% of
replicates, in a new ledger and with 20 runs of history, at noise 0.1 and 0.2 (the tiers'
margins are in units of the estimated noise, so the rate does not depend on its scale).
Tolerance: three binomial Monte Carlo standard errors of the replicates (the measured
rates, 4,000 replicates a cell, are 0.85-1.00% by run 100: at the bound).  The
simulation is the prototype's closed form (docs/scripts/v2_prototype.py), which
tests/unit/test_lifecycle_gate.py checks against the gate on a ledger look by look.
"""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
BOUND = 0.01
REPS = 3000


def _gate() -> Any:
    # imported here, not at collection: importing registers "recommended", and the
    # protocol test parametrizes over GATES at collection (its why vocabulary does not
    # know the lifecycle words yet: /tmp/coord/requests.md)
    from cogstats.gates import LifecycleGate

    return LifecycleGate()


def _prototype() -> Any:
    path = ROOT / "docs" / "scripts" / "v2_prototype.py"
    spec = importlib.util.spec_from_file_location("v2_prototype", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["v2_prototype"] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize(("noise", "history"), [(0.1, 0), (0.2, 0), (0.2, 20)])
def test_null_decided_rate_at_most_one_percent(noise: float, history: int) -> None:
    cells = _prototype().s1_cells(_gate(), 0.0, noise, REPS, 20261203, history)
    for budget, cell in cells.items():
        tol = 3.0 * math.sqrt(BOUND * (1 - BOUND) / REPS)
        assert cell["decided"] <= BOUND + tol, (budget, cell)


def test_a_harmful_lesson_is_convicted_early() -> None:
    """The same simulation has power (it is not a rule that decides nothing): |e| = 0.3
    at noise 0.1 is convicted by run 10 in at least 0.5 (measured 0.58 ± 0.008), and by
    run 25 in at least 0.95 (measured 0.987)."""
    cells = _prototype().s1_cells(_gate(), -0.3, 0.1, 1000, 20261204)
    assert cells[10]["correct"] >= 0.5
    assert cells[25]["correct"] >= 0.95
