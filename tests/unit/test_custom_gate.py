"""A gate of one's own is one class and one registration, and runs everywhere.

The module under test is the custom-gate example of ``docs/gates.md``, taken from the
guide as written (so the guide cannot drift): it is written to ``tmp_path``, put on
``sys.path`` and ``PYTHONPATH``, and then, with no other edit, it runs in ``cogstats gate``
(by import path and by its registered name), in ``simulate(..., engine="reference")``
(and under the default engine, which falls back to the reference engine by itself), and
in a sweep on spawned worker processes that find it by import path.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest

from cogstats import Ledger
from cogstats.cli import main
from cogstats.gates import GATES, REPORT_COLUMNS, get_gate
from cogstats.sim import Scenario, simulate

ROOT = Path(__file__).resolve().parents[2]
MODULE = "cogstats_test_mygates"
PATH = f"{MODULE}:EvictAt"


def _example() -> str:
    guide = (ROOT / "docs" / "gates.md").read_text(encoding="utf-8")
    after = guide.split("<!-- custom-gate-example -->", 1)[1]
    match = re.search(r"```python\n(.*?)```", after, flags=re.S)
    assert match is not None
    return match.group(1)


@pytest.fixture
def mygates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    (tmp_path / f"{MODULE}.py").write_text(_example(), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    old = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(tmp_path), old) if p))
    yield tmp_path
    if "evict_at" in GATES:
        GATES.unregister("evict_at")
    sys.modules.pop(MODULE, None)


SCENARIO = {
    "runs": 16,
    "lessons": {
        "listed": [
            {"id": "a", "effect": 0.1},
            {"id": "b", "effect": -0.1},
            {"id": "c", "effect": 0.0, "arrives_at_run": 3},
        ]
    },
    "retrieval": {"max_facts": 3, "candidate_slots": 2},
    "gate": {"type": PATH, "max_trials": 3},
}


def test_the_gate_registers_and_runs_on_the_command_line(
    mygates: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recs = [
        {"run_id": f"r{i}", "score": 0.5, "fact_ids": ["a"] if i < 5 else ["b"]} for i in range(8)
    ]
    ledger = Ledger.from_records(recs).write(tmp_path / "runs.csv")
    argv = ["gate", str(ledger), "--gate", PATH, "--max-trials", "4", "--format", "json"]
    assert main(argv) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["fact_id"], r["decision"], r["why"], r["trials"]) for r in rows] == [
        ("a", "evict", "max_trials", 5),
        ("b", "hold", "min_trials", 3),
    ]
    assert list(rows[0])[: len(REPORT_COLUMNS)] == list(REPORT_COLUMNS)
    # importing the module registered it: its name works too, and so does its help
    entry = get_gate("evict_at")
    assert entry.name == "evict_at" and not entry.compiled
    assert get_gate(PATH) is entry
    argv = ["gate", str(ledger), "--gate", "evict_at", "--max-trials", "6", "--format", "csv"]
    assert main(argv) == 0
    assert capsys.readouterr().out.splitlines()[1].startswith("a,hold,,min_trials,5")
    with pytest.raises(SystemExit):
        main(["gate", "--gate", "evict_at", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--max-trials MAX_TRIALS Trials after which a lesson is evicted as no_lift." in text
    assert "(default: 5)" in text
    assert main(["gate", str(ledger), "--gate", "evict_at", "--max-trials", "0"]) == 2
    assert "max_trials must be an integer >= 1" in capsys.readouterr().err


def test_the_gate_runs_in_the_simulator(mygates: Path) -> None:
    scenario = Scenario.from_dict(SCENARIO)
    assert scenario.gate.policy == {"max_trials": 3}
    result = simulate(scenario, replicates=4, rng=2, engine="reference")
    evicted = result.lessons.filter(pl.col("evicted_at_run").is_not_null())
    assert evicted.height > 0
    assert (evicted["trials"] == 3).all()
    assert set(evicted["reason"].to_list()) == {"eval-gate:no_lift"}
    auto = simulate(scenario, replicates=4, rng=2)
    assert auto.engine == "reference"
    assert auto.extras["engine_reason"] == f"the compiled engine has no gate {PATH!r}"
    assert auto.lessons.equals(result.lessons)
    with pytest.raises(Exception, match="has no gate"):
        simulate(scenario, replicates=1, rng=2, engine="fast")
    # the spec checks its options like any gate's: key and message
    bad = {**SCENARIO, "gate": {"type": PATH, "max_trails": 3}}
    with pytest.raises(Exception, match=r"key 'gate.max_trails'.*\(did you mean 'max_trials'"):
        Scenario.from_dict(bad)


def test_the_gate_runs_in_a_sweep_on_spawned_workers(mygates: Path, tmp_path: Path) -> None:
    from cogstats.sweep import read_sweep, sweep_from_dict, sweep_spec

    spec = sweep_from_dict(
        {**SCENARIO, "replicates": 3, "seed": 5, "grid": {"gate.max_trials": [2, 4]}}
    )
    result = sweep_spec(spec, out=tmp_path / "store", workers=2, progress=False)
    assert result.complete and result.workers == 2
    table = read_sweep(tmp_path / "store", timings=True)
    assert table["engine"].to_list() == ["reference", "reference"]
    # the cells ran in worker processes, which imported the gate by its path
    pids = {int(w.rsplit(":", 1)[1]) for w in table["worker"].to_list()}
    assert os.getpid() not in pids
    assert (table["evict_no_lift_rate"] > 0).all()
    early, late = table.sort("gate.max_trials")["mean_decision_run"].to_list()
    assert early < late
    # and the numbers are those of the same cells simulated in this process
    alone = simulate(
        spec.cells()[0].scenario,
        replicates=3,
        rng=spec.cells()[0].seed_sequence(),
        keep_runs=False,
    )
    assert alone.summary_row()["regret"] == table["regret"][0]
