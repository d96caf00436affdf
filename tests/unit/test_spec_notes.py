"""Simulation semantics a user can trust (issue 20, item 4): the kind rule stated where the
lessons are printed, and retrieval defaults that change what a spec says are warnings."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest

from cogstats.cli import main
from cogstats.sim import Scenario, spec_from_dict
from cogstats.sim.spec_notes import KIND_RULE, SpecWarning, lesson_table, slot_warning

BASE: dict[str, Any] = {
    "runs": 12,
    "lessons": {"listed": [{"id": "bad", "effect": -0.2}, {"id": "ok", "effect": 0.0}]},
}


def _scenario(retrieval: dict[str, Any]) -> Scenario:
    return Scenario.from_dict({**BASE, "retrieval": retrieval})


@pytest.mark.parametrize("policy", ["randomized", "in_progress_first", "designed"])
def test_max_facts_without_candidate_slots_warns_with_the_number_and_the_key(policy: str) -> None:
    with pytest.warns(SpecWarning) as caught:
        s = _scenario({"policy": policy, "max_facts": 8})
    assert len(caught) == 1
    text = str(caught[0].message)
    slots = s.retrieval.candidate_slots
    assert slots < 8
    assert "key 'retrieval.max_facts'" in text
    assert f"at most candidate_slots = {slots} candidate lessons a run" in text
    assert f"a run carries {slots} lessons" in text and "set candidate_slots" in text


@pytest.mark.parametrize(
    "retrieval",
    [
        {"policy": "randomized", "max_facts": 8, "candidate_slots": 8},  # said: no warning
        {"policy": "randomized", "max_facts": 8, "candidate_slots": 2},  # said, even if small
        {"policy": "randomized"},  # nothing said: the defaults are what it says
        {"policy": "randomized", "max_facts": 2},  # the default slots fill it
        {"policy": "ucb1", "max_facts": 5},  # no candidate slots at all
    ],
)
def test_no_warning_when_the_spec_says_it_or_nothing_is_capped(retrieval: dict[str, Any]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", SpecWarning)
        _scenario(retrieval)


def test_a_grid_warns_once_not_once_per_cell() -> None:
    data = {
        **BASE,
        "retrieval": {"policy": "randomized", "max_facts": 8},
        "grid": {"gate.min_trials": [2, 3, 4]},
    }
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cells = spec_from_dict(data).cells()
    spec_warnings = [w for w in caught if issubclass(w.category, SpecWarning)]
    assert len(cells) == 3 and len(spec_warnings) == 1


def test_slot_warning_is_none_for_objects_without_slots() -> None:
    assert slot_warning("mine", {"max_facts": 3}, object()) is None


def test_the_lesson_table_says_where_each_kind_came_from() -> None:
    s = Scenario.from_dict(
        {
            "runs": 12,
            "lessons": {
                "listed": [
                    {"id": "bad", "effect": -0.2},
                    {"id": "ok", "effect": 0.01},
                    {"id": "said", "effect": -0.1, "kind": "genuine"},
                ],
                "streams": [{"per_run": 2, "from_run": 2, "to_run": 4, "effect": 0.0}],
                "poison": [{"after_run": 3, "count": 2, "effect": -0.3}],
            },
        }
    )
    rows = lesson_table(s).rows(named=True)
    assert [(r["lessons"], r["kind"], r["kind from"]) for r in rows] == [
        ("bad", "poison", "kind rule: negative effect"),
        ("ok", "genuine", "kind rule: effect >= 0"),
        ("said", "genuine", "spec"),
        ("2 a run (6)", "genuine", "stream"),
        ("2", "poison", "poison event"),
    ]
    assert [s.listed[k].kind for k in range(3)] == ["poison", "genuine", "genuine"]


def test_cogstats_simulate_prints_the_lessons_the_rule_and_a_plain_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "mine.toml"
    spec.write_text(
        'name = "mine"\nruns = 10\nreplicates = 3\nseed = 1\n'
        '[[lessons.listed]]\nid = "bad"\neffect = -0.2\n'
        '[[lessons.listed]]\nid = "ok"\neffect = 0.0\n'
        '[retrieval]\npolicy = "randomized"\nmax_facts = 6\n'
        '[gate]\ntype = "cycgraph"\ndecision_rule = "margin"\nmin_trials = 2\n'
    )
    assert main(["simulate", str(spec), "--no-progress"]) == 0
    out = capsys.readouterr()
    assert "cogstats simulate: warning: " in out.err and "key 'retrieval.max_facts'" in out.err
    assert "SpecWarning" not in out.err  # plain, not Python's warning form
    assert "kind rule: negative effect" in out.out
    flat = " ".join(out.out.split())
    assert " ".join(KIND_RULE.split()) in flat


def test_a_preset_with_max_facts_alone_warns_too() -> None:
    from cogstats.presets import get_preset

    preset = get_preset("recommended")
    default = preset.policy_entry().make(**dict(preset.policy_options))
    data = {**BASE, "policy": {"preset": "recommended"}, "retrieval": {"max_facts": 9}}
    if "candidate_slots" in dict(preset.policy_options) or default.candidate_slots >= 9:
        pytest.skip("the preset sets its candidate slots")
    with pytest.warns(SpecWarning, match="set candidate_slots"):
        Scenario.from_dict(data)
