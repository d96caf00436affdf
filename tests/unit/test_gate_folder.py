"""A compiled gate is one folder plus its registration: nothing else of cogstats is edited.

docs/gates.md, "A compiled gate is one folder", shows the whole of a gate package,
``margin_lift/`` (its rule, its class with its options and their checks, its compiled
piece): this test writes exactly those blocks into a temporary folder, imports the package
(its registration runs) and holds it to the common check of every gate
(tests/unit/test_common_check.py): ``evaluate = judge(statistics)``, batch = streaming
after every run (decisions identical, evidence within 1e-9, the changed rows exactly),
a saved state loads, and the compiled engine decides as the reference engine does, run for
run, on the scenario with helpful, neutral and poisoned lessons.  No file of cogstats names
the gate.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cogstats.gates import GATES, LessonState, StreamingGate, make_gate
from tests.unit.test_common_check import (
    SCENARIO,
    _ledger,
    assert_same,
    check_streaming,
    ledger_runs,
)

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "gates.md"


def guide_files() -> dict[str, str]:
    """The guide's gate package: path -> source, as the page shows them."""
    text = GUIDE.read_text(encoding="utf-8")
    return dict(re.findall(r"<!-- file: (\S+) -->\n```python\n(.*?)```", text, flags=re.S))


@pytest.fixture(scope="module")
def margin_lift(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The guide's package, written to a temporary folder, imported and registered."""
    folder = tmp_path_factory.mktemp("user_gates")
    files = guide_files()
    assert sorted(files) == [
        f"margin_lift/{n}" for n in ("__init__.py", "gate.py", "kernel.py", "rule.py")
    ]
    for rel, source in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(source, encoding="utf-8")
    sys.path.insert(0, str(folder))
    try:
        import margin_lift as package

        yield package
    finally:
        GATES.unregister("margin_lift")
        sys.path.remove(str(folder))
        for name in [m for m in sys.modules if m == "margin_lift" or m.startswith("margin_lift.")]:
            del sys.modules[name]


def test_the_folder_registers_its_gate_and_names_its_piece(margin_lift: Any) -> None:
    from cogstats.sim.engine import KERNEL_GATES

    entry = GATES["margin_lift"]
    assert entry.cls is margin_lift.MarginLift and entry.kernel == "margin_lift.kernel"
    assert entry.compiled and KERNEL_GATES["margin_lift"] is sys.modules["margin_lift.kernel"].PIECE
    # its options are checked where they are declared
    with pytest.raises(ValueError, match="min_trials must be >= 1; got 0"):
        make_gate("margin_lift", min_trials=0)
    # no file of cogstats names it: the folder and its registration are the whole gate
    sources = [p for p in (ROOT / "cogstats").rglob("*.py") if "__pycache__" not in p.parts]
    named = [p for p in sources if "margin_lift" in p.read_text()]
    assert named == []


def test_batch_equals_judge_and_streaming_at_every_step(margin_lift: Any, tmp_path: Path) -> None:
    gate = margin_lift.MarginLift(min_trials=2, margin=0.05)
    runs = ledger_runs("plain", 11)
    ledger = _ledger(runs)
    candidates = [*ledger.fact_ids[:3], "never_seen"]
    statuses = {f: LessonState("candidate", 0) for f in candidates}
    assert_same(
        gate.judge(gate.statistics(ledger), statuses, candidates),
        gate.evaluate(ledger, candidates),
        "judge",
    )
    sg = check_streaming(gate, runs, "margin_lift")
    assert set(sg.report().to_frame()["decision"]) >= {"promote", "evict"}  # it decides
    back = StreamingGate.load(sg.save(tmp_path / "state.npz"))
    assert back.gate == gate
    assert_same(back.report(), sg.report(), "loaded")


@pytest.mark.parametrize(
    "options", [{}, {"min_trials": 2, "margin": 0.05}], ids=["defaults", "tuned"]
)
def test_the_compiled_engine_decides_as_the_reference_engine(
    margin_lift: Any, options: dict
) -> None:
    from cogstats.sim import Scenario, simulate
    from cogstats.sim.draws import draw_uniforms, layout, prepare, scenario_lessons
    from cogstats.sim.engine import fast_support, run_fast
    from cogstats.sim.reference import run_reference

    s = Scenario.from_dict({**SCENARIO, "gate": {"type": "margin_lift", **options}})
    assert fast_support(s) is None
    lessons = scenario_lessons(s)
    lay = layout(s)
    prep = prepare(s, lessons, draw_uniforms(np.random.SeedSequence(17), 0, 4, lay), lay)
    fast = run_fast(s, lessons, prep)
    assert fast.differences(run_reference(s, lessons, prep)) == []
    decided = (fast.promote_run > 0) | (fast.evict_run > 0)
    assert decided.any()
    assert simulate(s, replicates=3, rng=1, keep_runs=False).engine == "fast"
