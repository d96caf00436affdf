"""Scenario and simulation specs: parsing, grids, and errors that name the key and file."""

from __future__ import annotations

from pathlib import Path

import pytest

from cogstats._validation import SpecError
from cogstats.sim import Scenario, load_spec

ROOT = Path(__file__).resolve().parents[2]

GOOD = """
name = "t"
runs = 20
replicates = 3
seed = 1
[[lessons.listed]]
id = "a"
effect = 0.1
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
min_trials = 2
[grid]
"gate.min_trials" = [2, 3]
"lessons.listed[0].effect" = [0.0, 0.1]
"retrieval.rest_after_trials" = [2, 4]
zip = [["gate.min_trials", "retrieval.rest_after_trials"]]
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "spec.toml"
    path.write_text(text)
    return path


def test_good_spec_and_grid(tmp_path: Path) -> None:
    spec = load_spec(_write(tmp_path, GOOD))
    cells = spec.cells()
    assert len(cells) == 4  # zipped pair (2) x effect (2)
    values = [v for v, _ in cells]
    assert {(v["gate.min_trials"], v["retrieval.rest_after_trials"]) for v in values} == {
        (2, 2),
        (3, 4),
    }
    s = dict((tuple(sorted(v.items())), sc) for v, sc in cells)
    one = s[
        (
            ("gate.min_trials", 3),
            ("lessons.listed[0].effect", 0.1),
            ("retrieval.rest_after_trials", 4),
        )
    ]
    assert one.gate.build().min_trials == 3
    assert one.retrieval.rest_after_trials == 4
    assert one.listed[0].effect == 0.1
    assert one.n_lessons == 3


def test_round_trip() -> None:
    spec = load_spec(ROOT / "simulations" / "poison_crater.toml")
    s = spec.scenario
    assert Scenario.from_dict(s.to_dict()) == s
    assert Scenario.from_dict(s.to_dict(full=True)) == s


@pytest.mark.parametrize(
    "name",
    [
        "cycgraph_oc",
        "poison_crater",
        "cycgraph_demo",
        "s1_recommended",
        "adaptive_confounding",
        "peeking_null",
    ],
)
def test_shipped_specs_load(name: str) -> None:
    spec = load_spec(ROOT / "simulations" / f"{name}.toml")
    assert spec.replicates >= 50  # every shipped benchmark spec has a real sample size
    for _, scenario in spec.cells():
        assert Scenario.from_dict(scenario.to_dict()) == scenario


BAD = [
    ("unknown top key", GOOD.replace('name = "t"', 'name = "t"\nrun = 5'), "run"),
    (
        "unknown retrieval key",
        GOOD.replace("max_facts = 4", "max_facts = 4\nmax_fact = 3"),
        "retrieval.max_fact",
    ),
    (
        "negative slots",
        GOOD.replace("candidate_slots = 2", "candidate_slots = -1"),
        "retrieval.candidate_slots",
    ),
    (
        "effect not a number",
        GOOD.replace("effect = 0.1", 'effect = "big"'),
        "lessons.listed[0].effect",
    ),
    (
        "poison after last run",
        GOOD.replace("after_run = 3", "after_run = 20"),
        "lessons.poison[0].after_run",
    ),
    (
        "unknown gate policy key",
        GOOD.replace("min_trials = 2\n[grid]", "min_trial = 2\n[grid]"),
        "gate.min_trial",
    ),
    (
        "invalid gate value",
        GOOD.replace("min_trials = 2\n[grid]", "min_trials = 0\n[grid]"),
        "gate.min_trials",
    ),
    (
        "grid path unknown",
        GOOD.replace('"gate.min_trials" = [2, 3]', '"gate.min_trails" = [2, 3]'),
        "grid.gate.min_trails",
    ),
    (
        "grid empty",
        GOOD.replace('"lessons.listed[0].effect" = [0.0, 0.1]', '"lessons.listed[0].effect" = []'),
        "grid.lessons.listed[0].effect",
    ),
    (
        "grid type mismatch",
        GOOD.replace(
            '"lessons.listed[0].effect" = [0.0, 0.1]', '"lessons.listed[0].effect" = [0.0, "x"]'
        ),
        "grid.lessons.listed[0].effect",
    ),
    (
        "policy option that does not apply",
        GOOD.replace("rest_after_trials = 3", "rest_after_trials = 3\nepsilon = 0.1"),
        "retrieval.epsilon",
    ),
    (
        "unknown retrieval policy",
        GOOD.replace('policy = "in_progress_first"', 'policy = "in_progress_frist"'),
        "retrieval.policy",
    ),
    ("unknown gate type", GOOD.replace('type = "cycgraph"', 'type = "cycgrap"'), "gate.type"),
    (
        "gate import path that does not import",
        GOOD.replace('type = "cycgraph"', 'type = "no_such_module:Gate"'),
        "gate.type",
    ),
    (
        "invalid retrieval value (checked by the class)",
        GOOD.replace("rest_after_trials = 3", "rest_after_trials = 0"),
        "retrieval.rest_after_trials",
    ),
    ("stream past the end", GOOD + "", None),
]


@pytest.mark.parametrize(("label", "text", "key"), [b for b in BAD if b[2] is not None])
def test_bad_specs_name_key_and_file(tmp_path: Path, label: str, text: str, key: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(SpecError) as err:
        load_spec(path)
    assert err.value.key == key, (label, err.value.key, str(err.value))
    assert str(path) in str(err.value)


def test_malformed_toml(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="malformed TOML"):
        load_spec(_write(tmp_path, "runs = = 3"))


def test_invalid_grid_cell_fails_before_running(tmp_path: Path) -> None:
    # min_trials 0 is only invalid in one cell: the whole spec is rejected at load time
    text = GOOD.replace('"gate.min_trials" = [2, 3]', '"gate.min_trials" = [2, 0]')
    with pytest.raises(SpecError, match="min_trials must be >= 1"):
        load_spec(_write(tmp_path, text))


def test_with_values_rejects_unknown_paths() -> None:
    s = Scenario.from_dict({"runs": 5, "lessons": {"listed": [{"id": "a", "effect": 0.0}]}})
    with pytest.raises(SpecError, match="names no parameter"):
        s.with_values({"score.nosie_sd": 0.2})


def test_spec_tables_are_checked_by_the_registered_classes(tmp_path: Path) -> None:
    """The messages name the key, the file, the part and what it takes."""
    path = _write(tmp_path, GOOD.replace("rest_after_trials = 3", "epsilon = 0.1"))
    with pytest.raises(SpecError) as err:
        load_spec(path)
    text = str(err.value)
    assert "does not apply to retrieval policy 'in_progress_first'" in text
    assert "'epsilon' is an option of ['ucb1']" in text
    path = _write(tmp_path, GOOD.replace('type = "cycgraph"', 'type = "cycgrap"'))
    with pytest.raises(SpecError, match=r"unknown gate 'cycgrap' \(did you mean 'cycgraph'"):
        load_spec(path)


def test_switching_policy_or_gate_in_a_grid_starts_from_the_new_defaults() -> None:
    from cogstats.gates import EvidenceGate
    from cogstats.retrieval import UCB1

    s = Scenario.from_dict(
        {
            "runs": 10,
            "lessons": {"listed": [{"id": "a", "effect": 0.0}]},
            "retrieval": {"max_facts": 6, "candidate_slots": 2, "rest_after_trials": 4},
        }
    )
    ucb = s.with_values({"retrieval.policy": "ucb1", "retrieval.epsilon": 0.2})
    # max_facts carries over (both policies take it); the rest are UCB1's defaults
    assert ucb.retrieval.build() == UCB1(max_facts=6, epsilon=0.2)
    assert set(ucb.retrieval.options) == {f.name for f in ucb.retrieval.entry().fields()}
    ev = s.with_values({"gate.type": "evidence", "gate.alpha": 0.01})
    assert ev.gate.build() == EvidenceGate(alpha=0.01)
    assert Scenario.from_dict(ev.to_dict()) == ev
    with pytest.raises(SpecError, match="unknown retrieval policy 'ucb2'"):
        s.with_values({"retrieval.policy": "ucb2"})


def test_retrieval_options_read_as_attributes() -> None:
    s = Scenario.from_dict({"runs": 5, "lessons": {"listed": [{"id": "a", "effect": 0.0}]}})
    assert (s.retrieval.policy, s.retrieval.max_facts, s.retrieval.rest_after_trials) == (
        "in_progress_first",
        10,
        None,
    )
    with pytest.raises(AttributeError, match="has no option 'epsilon'"):
        _ = s.retrieval.epsilon


def test_every_error_of_a_spec_is_reported_at_once() -> None:
    from cogstats._toml import SpecErrors
    from cogstats.sim.spec import spec_from_dict

    data = {
        "replicates": 0,
        "runs": "forty",
        "lessons": {
            "listed": [
                {"id": "a", "effect": "big"},
                {"id": "b", "effect": 0.1, "kind": "poisson"},
                {"id": "c", "effect": 0.1},
            ]
        },
        "score": {"noise_sd": -1.0},
        "gaet": {},
    }
    with pytest.raises(SpecErrors) as info:
        spec_from_dict(data, source="s.toml")
    keys = [e.key for e in info.value.errors]
    # one error per broken piece, in the order of the file; the valid lesson costs none
    assert keys == [
        "replicates",
        "runs",
        "lessons.listed[0].effect",
        "lessons.listed[1].kind",
        "score.noise_sd",
        "gaet",
    ], keys
    text = str(info.value)
    assert text.startswith("6 errors:") and "did you mean 'gate'" in text


def test_an_unknown_run_count_raises_no_false_range_errors() -> None:
    from cogstats._validation import SpecError
    from cogstats.sim.spec import spec_from_dict

    data = {"runs": 0, "lessons": {"listed": [{"id": "a", "effect": 0.1, "arrives_at_run": 30}]}}
    with pytest.raises(SpecError) as info:  # only the run count: one error, itself
        spec_from_dict(data, source="s.toml")
    assert info.value.key == "runs"


def test_a_listed_lesson_without_a_kind_is_harmful_by_the_sign_of_its_effect() -> None:
    from cogstats.sim.spec import Scenario, spec_from_dict

    s = Scenario.from_dict(
        {
            "runs": 10,
            "lessons": {
                "listed": [
                    {"id": "bad", "effect": -0.2},
                    {"id": "good", "effect": 0.1},
                    {"id": "zero", "effect": 0.0},
                    {"id": "said", "effect": -0.2, "kind": "genuine"},
                ]
            },
        }
    )
    assert [les.kind for les in s.listed] == ["poison", "genuine", "genuine", "genuine"]
    again = Scenario.from_dict(s.to_dict())  # round trip keeps the rule, not a frozen kind
    assert [les.kind for les in again.listed] == ["poison", "genuine", "genuine", "genuine"]
    # per grid cell: the kind follows the cell's effect unless the spec names one
    spec = spec_from_dict(
        {
            "runs": 10,
            "replicates": 2,
            "lessons": {
                "listed": [
                    {"id": "a", "effect": 0.1},
                    {"id": "b", "effect": 0.1, "kind": "genuine"},
                ]
            },
            "grid": {"lessons.listed[0].effect": [0.1, -0.3], "lessons.listed[1].effect": [-0.3]},
        }
    )
    kinds = sorted(
        (cell.listed[0].effect, cell.listed[0].kind, cell.listed[1].kind)
        for _, cell in spec.cells()
    )
    assert kinds == [(-0.3, "poison", "genuine"), (0.1, "genuine", "genuine")]
