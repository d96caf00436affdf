"""A non-additive lesson store in the simulator: spec keys, draws, score, oracle, metrics.

Paraphrase groups, interactions, effects by task family and changes of effect
(docs/scenarios.md).  The score and the oracle are checked against closed forms and a
brute force over every prompt; the metrics against hand-built raw results; an additive
spec against its old layout (its draws and figures do not move).
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest

from cogstats._codes import KIND_GENUINE, KIND_POISON
from cogstats._toml import SpecErrors
from cogstats._validation import SpecError
from cogstats.sim import Scenario, simulate, spec_from_dict
from cogstats.sim._kernel_score import (
    injected_total,
    oracle_prompt_total,
    oracle_total,
    prompt_total,
)
from cogstats.sim.draws import draw_uniforms, layout, pool_width, prepare, scenario_lessons
from cogstats.sim.engine import fast_support, run_fast
from cogstats.sim.metrics import replicate_metrics
from cogstats.sim.metrics_world import world_metrics
from cogstats.sim.raw import empty_raw
from cogstats.sim.reference import run_reference
from cogstats.sim.world import WorldDraws, mean_effects_at

FAMILIES = [{"name": "code", "weight": 1.0}, {"name": "web", "weight": 1.0}]

WORLD: dict[str, Any] = {
    "runs": 16,
    "lessons": {
        "ids": "shuffled",
        "listed": [
            {"id": "a1", "effect": 0.1, "group": "cite"},
            {"id": "b2", "effect": 0.06, "group": "cite", "arrives_at_run": 3},
            {"id": "c3", "effect": 0.05},
            {"id": "d4", "effect": 0.04},
            {"id": "e5", "effect": 0.02, "effect_by_family": {"code": 0.08, "web": -0.12}},
            {"id": "f6", "effect": 0.05, "changes": [{"after_runs": 6, "effect": -0.15}]},
        ],
        "streams": [
            {
                "per_run": 1,
                "from_run": 2,
                "to_run": 8,
                "effect": {"dist": "uniform", "low": 0.0, "high": 0.08},
                "paraphrase_prob": 0.5,
                "effect_by_family": {"web": {"dist": "uniform", "low": -0.05, "high": 0.0}},
            }
        ],
        "poison": [{"after_run": 3, "count": 2, "effect": -0.2}],
    },
    "interactions": [{"lessons": ["c3", "d4"], "effect": -0.15}],
    "difficulty": {"model": "iid", "sd": 0.05, "families": FAMILIES},
    "score": {"base": 0.55, "noise_sd": 0.05},
    "retrieval": {"max_facts": 5, "candidate_slots": 3, "rest_after_trials": 2},
    "gate": {"type": "cycgraph", "decision_rule": "margin", "min_trials": 2},
}


def _world(**changes: Any) -> Scenario:
    data = {**WORLD, **changes}
    return Scenario.from_dict(data)


def _prepared(s: Scenario, n: int = 4, seed: int = 3) -> Any:
    lessons = scenario_lessons(s)
    lay = layout(s)
    return (
        lessons,
        lay,
        prepare(s, lessons, draw_uniforms(np.random.SeedSequence(seed), 0, n, lay), lay),
    )


# ---------------------------------------------------------------------- spec keys
def test_world_keys_round_trip_and_are_not_additive() -> None:
    s = _world()
    assert not s.additive
    assert Scenario.from_dict(s.to_dict()) == s
    assert Scenario.from_dict(s.to_dict(full=True)) == s
    assert s.listed[0].group == "cite"
    assert dict(s.listed[4].effect_by_family) == {"code": 0.08, "web": -0.12}
    assert s.listed[5].changes[0].after_runs == 6
    assert s.streams[0].paraphrase_prob == 0.5
    assert s.interactions[0].lessons == ("c3", "d4")
    assert (s.ids, s.id_seed) == ("shuffled", 0)


def test_an_additive_spec_writes_no_world_key() -> None:
    s = Scenario.from_dict(
        {k: v for k, v in WORLD.items() if k != "interactions"}
        | {
            "lessons": {
                "listed": [{"id": "a", "effect": 0.1}],
                "streams": [{"per_run": 1, "from_run": 1, "to_run": 3, "effect": 0.0}],
            }
        }
    )
    assert s.additive
    d = s.to_dict()
    assert "interactions" not in d
    assert set(d["lessons"]) == {"listed", "streams"}
    assert set(d["lessons"]["listed"][0]) == {"id", "effect", "arrives_at_run"}
    assert "paraphrase_prob" not in d["lessons"]["streams"][0]
    assert "effect_by_family" not in d["lessons"]["streams"][0]


BAD_KEYS = [
    ("lessons.listed[0].group", {"group": 3}, "must be a non-empty string; got 3"),
    ("lessons.listed[0].effect_by_family", {"effect_by_family": 0.1}, "must be a table"),
    ("lessons.listed[0].effect_by_family.web", {"effect_by_family": {"web": "x"}}, "got 'x'"),
    ("lessons.listed[0].effect_by_family", {"effect_by_family": {"mobile": 0.1}}, "'mobile'"),
    (
        "lessons.listed[0].changes[0].after_runs",
        {"changes": [{"after_runs": 0, "effect": 0}]},
        "must be >= 1; got 0",
    ),
    (
        "lessons.listed[0].changes[1].after_runs",
        {"changes": [{"after_runs": 4, "effect": 0}, {"after_runs": 4, "effect": 1}]},
        "must increase",
    ),
    (
        "lessons.listed[0].changes[0].after_runs",
        {"changes": [{"after_runs": 16, "effect": 0}]},
        "never happens; got 16",
    ),
    ("lessons.listed[0].changes[0].effect", {"changes": [{"after_runs": 2}]}, "is required"),
    (
        "lessons.listed[0].changes[0].efect",
        {"changes": [{"after_runs": 2, "effect": 0, "efect": 0}]},
        "unknown key",
    ),
]


@pytest.mark.parametrize(("key", "extra", "message"), BAD_KEYS)
def test_listed_world_keys_are_checked(key: str, extra: dict[str, Any], message: str) -> None:
    data = {
        **WORLD,
        "interactions": [],
        "lessons": {"listed": [{"id": "x", "effect": 0.1, **extra}]},
    }
    with pytest.raises(SpecError) as err:
        Scenario.from_dict(data, source="w.toml")
    assert err.value.key == key, str(err.value)
    assert message in str(err.value)
    assert "w.toml" in str(err.value)


def test_every_world_error_is_reported_at_once() -> None:
    data = {
        **WORLD,
        "difficulty": {"model": "none"},
        "lessons": {
            "ids": "random",
            "id_seed": -1,
            "listed": [
                {"id": "a", "effect": 0.1, "group": "g", "effect_by_family": {"web": 0.1}},
                {"id": "b", "effect": 0.1},
            ],
            "streams": [
                {"per_run": 1, "from_run": 1, "to_run": 3, "effect": 0.0, "paraphrase_prob": 1.5}
            ],
        },
        "interactions": [
            {"lessons": ["a", "b"], "effect": -0.1},
            {"lessons": ["a"], "effect": -0.1},
            {"lessons": ["b", "zz"], "effect": -0.1},
        ],
    }
    with pytest.raises(SpecErrors) as err:
        Scenario.from_dict(data, source="w.toml")
    by_key = {e.key: str(e) for e in err.value.errors}
    assert "must be one of ['ordered', 'shuffled']; got 'random'" in by_key["lessons.ids"]
    assert "must be >= 0" in by_key["lessons.id_seed"]
    assert "must be <= 1.0; got 1.5" in by_key["lessons.streams[0].paraphrase_prob"]
    assert "needs task families" in by_key["lessons.listed[0].effect_by_family"]
    assert "two or more lesson ids" in by_key["interactions[1].lessons"]
    assert "may not be in a group" in by_key["interactions[0].lessons"]
    assert "names no listed lesson" in by_key["interactions[2].lessons"]
    assert "got 'zz'" in by_key["interactions[2].lessons"]


def test_interactions_name_at_most_ten_lessons() -> None:
    listed = [{"id": f"l{i}", "effect": 0.01} for i in range(12)]
    inter = [{"lessons": [f"l{i}", f"l{i + 1}"], "effect": -0.1} for i in range(0, 12, 2)]
    with pytest.raises(SpecError, match="at most 10 distinct lessons.*got 12") as err:
        Scenario.from_dict({"runs": 5, "lessons": {"listed": listed}, "interactions": inter})
    assert err.value.key == "interactions"


def test_grid_paths_reach_the_world_keys() -> None:
    data = {
        **WORLD,
        "replicates": 2,
        "grid": {
            "lessons.streams[0].paraphrase_prob": [0.0, 0.3],
            "interactions[0].effect": [-0.2, 0.1],
            "lessons.listed[5].changes[0].effect": [-0.3],
            "lessons.listed[4].effect_by_family.web": [-0.2],
            "lessons.listed[0].group": ["other"],
            "lessons.id_seed": [4],
        },
    }
    spec = spec_from_dict(data)
    cells = spec.cells()
    assert len(cells) == 4
    probs = sorted({sc.streams[0].paraphrase_prob for _, sc in cells})
    assert probs == [0.0, 0.3]
    assert sorted({sc.interactions[0].effect for _, sc in cells}) == [-0.2, 0.1]
    one = cells[0][1]
    assert one.listed[5].changes[0].effect == -0.3
    assert dict(one.listed[4].effect_by_family)["web"] == -0.2
    assert one.listed[0].group == "other" and one.id_seed == 4


def test_sweep_grid_paths_reach_the_world_keys() -> None:
    from cogstats.sweep import sweep_from_dict
    from cogstats.sweep.spec import spec_from_resolved

    sweep = sweep_from_dict(
        {
            "scenario": {k: v for k, v in WORLD.items()},
            "replicates": 2,
            "grid": {
                "interactions[0].effect": [-0.2, -0.1],
                "lessons.streams[0].paraphrase_prob": [0.2],
            },
        }
    )
    assert sweep.n_cells == 2
    again = spec_from_resolved(sweep.resolved(), replicates=2, seed=0)
    assert [c.scenario for c in again.cells()] == [c.scenario for c in sweep.cells()]
    with pytest.raises(SpecError) as err:
        sweep_from_dict({"scenario": dict(WORLD), "grid": {"interactions[3].effect": [0.1]}})
    assert err.value.key == "grid.interactions[3].effect"


# ---------------------------------------------------------------------- additive specs
def test_an_additive_spec_draws_as_before() -> None:
    """The layout of an additive spec is the old one: no uniform more, none moved."""
    s = Scenario.from_dict(
        {k: v for k, v in WORLD.items() if k != "interactions"}
        | {
            "lessons": {
                "streams": [
                    {
                        "per_run": 2,
                        "from_run": 1,
                        "to_run": 5,
                        "effect": {"dist": "uniform", "low": 0, "high": 0.1},
                    }
                ],
                "poison": [{"after_run": 2, "count": 2, "effect": -0.2}],
            }
        }
    )
    lay = layout(s)
    runs, n_les, pool = s.runs, s.n_lessons, pool_width(s)
    assert lay.size == 4 * runs + n_les + runs * (pool + 2)
    assert (lay.noise, lay.difficulty, lay.proxy, lay.family, lay.effect) == (
        0,
        runs,
        2 * runs,
        3 * runs,
        4 * runs,
    )
    lessons, _, prep = _prepared(s)
    assert lessons.world is None and prep.world is None


def test_shuffled_ids_do_not_sort_by_kind() -> None:
    """Over id seeds, a poison sorts before a co-arriving genuine lesson about half the time."""
    s = Scenario.from_dict(
        {
            "runs": 5,
            "lessons": {
                "ids": "shuffled",
                "streams": [{"per_run": 1, "from_run": 2, "to_run": 2, "effect": 0.0}],
                "poison": [{"after_run": 1, "count": 1, "effect": -0.2}],
            },
        }
    )
    first = []
    for seed in range(400):
        ids = scenario_lessons(s.with_values({"lessons.id_seed": seed})).ids
        assert all(len(i) == 6 and int(i, 16) >= 0 for i in ids)
        first.append(ids[1] < ids[0])  # the poison's id before the genuine lesson's
    share = float(np.mean(first))
    assert abs(share - 0.5) < 4 * math.sqrt(0.25 / 400)
    assert scenario_lessons(s).ids == scenario_lessons(s).ids  # the same seed, the same names
    ordered = scenario_lessons(s.with_values({"lessons.ids": "ordered"})).ids
    assert ordered == ("G0001", "P0002")


# ---------------------------------------------------------------------- draws
def test_paraphrases_join_an_earlier_group_of_their_kind() -> None:
    s = _world()
    lessons, _, prep = _prepared(s, n=2000, seed=5)
    wt, world = lessons.world, prep.world
    stream = np.flatnonzero(wt.paraphrase > 0)
    joined = world.group[:, stream] != stream[None, :]
    # a paraphrase's group is that of an earlier lesson of its kind, never an interaction's
    for j in stream:
        roots = world.group[:, j]
        assert (lessons.arrival[roots] < lessons.arrival[j])[roots != j].all()
        assert (lessons.kind[roots] == lessons.kind[j]).all()
        assert not wt.in_inter[roots].any()
    share = float(joined.mean())
    assert abs(share - 0.5) < 4 * math.sqrt(0.25 / joined.size)
    # listed members keep their group
    assert (world.group[:, 1] == 0).all()


def test_effects_by_family_and_changes() -> None:
    s = _world()
    lessons, _, prep = _prepared(s, n=500, seed=2)
    world = prep.world
    code, web = 0, 1
    e5 = 4
    fam = prep.family
    assert np.array_equal(world.run_effects[:, :, e5], np.where(fam == code, 0.08, -0.12))
    # a stream lesson: the drawn effect in code, its web distribution in web
    j = int(np.flatnonzero(lessons.world.paraphrase > 0)[0])
    assert np.allclose(world.fam_effects[:, j, code], prep.effects[:, j])
    web_draws = world.fam_effects[:, j, web]
    assert (web_draws <= 0).all() and (web_draws >= -0.05).all()
    assert abs(web_draws.mean() + 0.025) < 4 * 0.05 / math.sqrt(12 * 500)
    # f6 arrives at run 1, changes after 6 runs: -0.15 from run 7 on, in every family
    f6 = world.run_effects[:, :, 5]
    assert (f6[:, :6] == 0.05).all() and (f6[:, 6:] == -0.15).all()
    # its value alone: the change from run 7; e5's: the mean over the families
    assert np.allclose(mean_effects_at(lessons.world, world, 6)[:, 5], 0.05)
    assert np.allclose(mean_effects_at(lessons.world, world, 7)[:, 5], -0.15)
    assert np.allclose(mean_effects_at(lessons.world, world, 7)[:, e5], -0.02)


# ---------------------------------------------------------------------- score model
def _value(effects, kind, group, inj, damping=0.0, saturation=0.0, inter=()):
    ptr = np.asarray([0, *np.cumsum([len(m) for m, _ in inter])], dtype=np.int64)
    les = np.asarray([j for m, _ in inter for j in m], dtype=np.int64)
    eff = np.asarray([e for _, e in inter], dtype=float)
    inj = np.asarray(sorted(inj), dtype=np.int64)
    return prompt_total(
        np.asarray(effects, float),
        np.asarray(kind, np.int64),
        np.asarray(group, np.int64),
        inj,
        inj.size,
        damping,
        saturation,
        ptr,
        les,
        eff,
        np.zeros(len(effects), np.bool_),
    )


G, P = KIND_GENUINE, KIND_POISON


def test_prompt_value_closed_forms() -> None:
    eff, kind = [0.1, 0.06, 0.05, 0.04, -0.2], [G, G, G, G, P]
    group = [0, 0, 2, 3, 4]
    # a group counts once, its largest member in the prompt
    assert _value(eff, kind, group, [0, 1]) == pytest.approx(0.1)
    assert _value(eff, kind, group, [1]) == pytest.approx(0.06)
    assert _value(eff, kind, group, [0, 1, 2]) == pytest.approx(0.15)
    # an interaction adds when all its lessons are in the prompt
    inter = (([2, 3], -0.15),)
    assert _value(eff, kind, group, [2, 3], inter=inter) == pytest.approx(0.09 - 0.15)
    assert _value(eff, kind, group, [2, 4], inter=inter) == pytest.approx(0.05 - 0.2)
    # damping: the poison's effect halves beside a genuine lesson; saturation bends the rest
    assert _value(eff, kind, group, [0, 4], damping=0.5) == pytest.approx(0.1 - 0.1)
    sat = 0.1
    assert _value(eff, kind, group, [0, 2, 4], saturation=sat) == pytest.approx(
        sat * math.tanh(0.15 / sat) - 0.2
    )


def test_prompt_value_is_the_additive_one_without_groups_or_interactions() -> None:
    rng = np.random.default_rng(1)
    for _ in range(200):
        n = int(rng.integers(1, 9))
        eff = rng.normal(0, 0.1, n)
        kind = rng.choice([G, P], n)
        inj = np.sort(rng.choice(n, int(rng.integers(0, n + 1)), replace=False)).astype(np.int64)
        damping = float(rng.choice([0.0, 0.4]))
        sat = float(rng.choice([0.0, 0.15]))
        old = injected_total(eff, kind, inj, inj.size, damping, sat)
        new = _value(eff, kind, np.arange(n), inj, damping, sat)
        assert old == new  # bit for bit


def _oracle(effects, kind, group, arrival, run, max_facts, inter=(), damping=0.0, sat=0.0):
    n = len(effects)
    ptr = np.asarray([0, *np.cumsum([len(m) for m, _ in inter])], dtype=np.int64)
    les = np.asarray([j for m, _ in inter for j in m], dtype=np.int64)
    in_inter = np.zeros(n, np.bool_)
    in_inter[les] = True
    return oracle_prompt_total(
        np.asarray(effects, float),
        np.asarray(kind, np.int64),
        np.asarray(group, np.int64),
        np.asarray(arrival, np.int64),
        run,
        max_facts,
        damping,
        sat,
        ptr,
        les,
        np.asarray([e for _, e in inter], float),
        in_inter,
    )


def test_oracle_closed_forms() -> None:
    eff, kind = [0.1, 0.06, 0.05, 0.04, -0.2], [G, G, G, G, P]
    group, arrival = [0, 0, 2, 3, 4], [1, 1, 1, 1, 1]
    inter = (([2, 3], -0.15),)
    # two places: the group's best member and the best of the conflicting pair
    assert _oracle(eff, kind, group, arrival, 1, 2, inter) == pytest.approx(0.15)
    # three: not both of the harmful pair, not the second paraphrase
    assert _oracle(eff, kind, group, arrival, 1, 3, inter) == pytest.approx(0.15)
    # a helpful pair is taken whole
    helpful = (([2, 3], 0.05),)
    assert _oracle(eff, kind, group, arrival, 1, 3, helpful) == pytest.approx(0.24)
    # lessons not yet arrived are left out
    assert _oracle(eff, kind, group, [5, 1, 1, 1, 1], 1, 1, inter) == pytest.approx(0.06)
    # with no group and no interaction it is the additive oracle
    e = np.asarray([0.03, -0.1, 0.07, 0.02])
    ar = np.asarray([1, 1, 2, 1], np.int64)
    for run in (1, 2):
        assert _oracle(e, [G] * 4, np.arange(4), ar, run, 2) == pytest.approx(
            oracle_total(e, ar, run, 2, 0.0, np.empty(4))
        )


def test_oracle_is_the_best_prompt() -> None:
    """Brute force: every prompt of at most max_facts arrived lessons on tiny worlds."""
    rng = np.random.default_rng(7)
    for _ in range(150):
        n = int(rng.integers(2, 8))
        eff = rng.normal(0.0, 0.1, n)
        kind = np.where(eff < -0.1, P, G)
        arrival = rng.integers(1, 4, n)
        run = int(rng.integers(1, 4))
        n_inter = int(rng.integers(0, 3))
        inter = tuple(
            (sorted(rng.choice(n, 2, replace=False).tolist()), float(rng.normal(0, 0.1)))
            for _ in range(n_inter)
        )
        in_inter = {j for m, _ in inter for j in m}
        group = np.arange(n)
        for j in range(n):  # paraphrases among the lessons of no interaction
            if j not in in_inter and rng.random() < 0.4:
                earlier = [t for t in range(j) if t not in in_inter]
                if earlier:
                    group[j] = group[int(rng.choice(earlier))]
        max_facts = int(rng.integers(1, 4))
        sat = float(rng.choice([0.0, 0.1]))
        live = [j for j in range(n) if arrival[j] <= run]
        best = max(
            _value(eff, kind, group, list(c), 0.0, sat, inter)
            for k in range(0, max_facts + 1)
            for c in itertools.combinations(live, k)
        )
        got = _oracle(eff, kind, group, arrival, run, max_facts, inter, 0.0, sat)
        assert got == pytest.approx(best, abs=1e-12)


# ---------------------------------------------------------------------- engines
def test_both_engines_run_a_world_and_the_oracle_bounds_the_score() -> None:
    s = _world()
    assert fast_support(s) is None  # the compiled engine covers a non-additive store
    for engine in ("auto", "reference"):
        result = simulate(s, replicates=6, rng=4, engine=engine)
        assert result.engine == ("fast" if engine == "auto" else "reference")
        runs = result.runs
        assert (runs["oracle_score"] - runs["score"]).min() >= 0
    # the score is the model's, with the run's effects and groups
    lessons, _, prep = _prepared(s, n=2, seed=9)
    raw = run_reference(s, lessons, prep)
    assert run_fast(s, lessons, prep).differences(raw) == []
    wt, w = lessons.world, prep.world
    for rep in range(2):
        for r in range(s.runs):
            inj = raw.inj[rep, r, : raw.ninj[rep, r]]
            tot = prompt_total(
                w.run_effects[rep, r],
                lessons.kind,
                w.group[rep],
                inj,
                inj.size,
                0.0,
                0.0,
                wt.inter_ptr,
                wt.inter_les,
                wt.inter_eff,
                np.zeros(len(lessons.ids), np.bool_),
            )
            y = min(1.0, max(0.0, 0.55 + prep.difficulty[rep, r] + tot + 0.05 * prep.noise[rep, r]))
            assert raw.score[rep, r] == y


# ---------------------------------------------------------------------- metrics
def _hand_world() -> tuple[Scenario, Any, Any]:
    """Six lessons: a paraphrase pair, a harmful pair, a family lesson, a drifting one."""
    s = Scenario.from_dict(
        {
            "runs": 12,
            "gate": {"type": "none"},
            "lessons": {
                "listed": [
                    {"id": "a", "effect": 0.10, "group": "g"},
                    {"id": "b", "effect": 0.06, "group": "g"},
                    {"id": "c", "effect": 0.05},
                    {"id": "d", "effect": 0.04},
                    {"id": "e", "effect": 0.0, "effect_by_family": {"code": 0.08, "web": -0.12}},
                    {"id": "f", "effect": 0.05, "changes": [{"after_runs": 4, "effect": -0.15}]},
                    {"id": "p", "effect": -0.2, "kind": "poison"},
                ]
            },
            "interactions": [{"lessons": ["c", "d"], "effect": -0.15}],
            "difficulty": {"families": FAMILIES},
        }
    )
    lessons = scenario_lessons(s)
    raw = empty_raw(s, lessons, 1)
    n_les = len(lessons.ids)
    fam = np.zeros((1, 12), np.int64)
    fam[0, 6:] = 1  # runs 7-12 are web
    fam_eff = np.repeat(np.asarray([[0.1, 0.06, 0.05, 0.04, 0.0, 0.05, -0.2]])[:, :, None], 2, 2)
    fam_eff[0, 4] = [0.08, -0.12]
    run_eff = np.take_along_axis(fam_eff.transpose(0, 2, 1), fam[:, :, None], axis=1).copy()
    run_eff[0, 4:, 5] = -0.15  # f arrives at run 1: -0.15 from run 5 on
    world = WorldDraws(np.asarray([[0, 0, 2, 3, 4, 5, 6]]), fam_eff, run_eff)
    assert n_les == 7
    return s, lessons, (raw, world)


def _inject(raw: Any, runs: list[int], j: int) -> None:
    for run in runs:
        k = raw.ninj[0, run - 1]
        raw.inj[0, run - 1, k] = j
        raw.ninj[0, run - 1] = k + 1


def test_world_metrics_on_a_hand_built_replicate() -> None:
    _, lessons, (raw, world) = _hand_world()
    a, b, c, d, e, f, p = range(7)
    _inject(raw, [1, 2, 3], a)
    _inject(raw, [1, 2], b)
    _inject(raw, [2, 3, 4, 8], c)
    _inject(raw, [3, 4, 8, 9], d)  # c and d together in runs 3, 4 and 8
    _inject(raw, [1, 7, 8, 9, 10], e)  # web from run 7: 4 harmful runs
    _inject(raw, [2, 5, 6, 11], f)  # switch at run 5: 3 runs in the prompt after it
    _inject(raw, [1, 2, 3, 4, 5, 6], p)  # a poison injected 6 times
    raw.trials[0] = [3, 2, 4, 4, 5, 4, 6]
    # the paraphrase pair lost (a evicted as harmful after run 3, b suspended); f convicted
    # after run 6 (its value alone then -0.15: a true conviction); c evicted as harmful
    # after run 9 (value 0.05: a false one)
    raw.evict_run[0, [a, f, c]] = [3, 6, 9]
    raw.evict_reason[0, [a, f, c]] = 1
    raw.events = [
        (0, 3, a, 1, 3, "eval-gate:harmful", None),
        (0, 6, f, 1, 3, "eval-gate:harmful", None),
        (0, 9, c, 1, 3, "eval-gate:harmful", None),
        (0, 5, b, 1, 6, None, "suspect"),
    ]
    raw.oracle[0] = 0.7
    raw.score[0] = 0.6
    m = replicate_metrics(
        raw, lessons, np.asarray([[0.1, 0.06, 0.05, 0.04, 0.0, 0.05, -0.2]]), 0, world
    ).row(0, named=True)
    assert m["harmful_pair_runs"] == 3
    assert m["family_harmful_runs"] == 4  # e is the one family-specific lesson
    assert m["drift_runs_after_switch"] == 3
    assert m["poison_injected_5plus"] == 1.0
    assert m["group_lost_rate"] == 1.0 and m["group_lost_any"] == 1.0
    # units of value >= 0.05 at the end: the group (0.10), c (0.05); lost: both
    assert m["helpful_lost_rate"] == 1.0
    # helpful lessons alone: a, b, c; b is still suspended
    assert m["helpful_suspended_rate"] == pytest.approx(1 / 3)
    # value >= 0 at the reference run, tried: a, b, c, d, f (no: -0.15 at its conviction)
    # and e (mean -0.02 at the end: no); convicted among them: a, c
    assert m["false_conviction_rate"] == pytest.approx(2 / 4)
    assert m["regret_runs_1_10"] == pytest.approx(0.1)
    assert m["regret_runs_11_end"] == pytest.approx(0.1)


def test_world_metrics_keep_the_group_when_one_member_stays() -> None:
    _, lessons, (raw, world) = _hand_world()
    raw.evict_run[0, 0] = 3
    raw.evict_reason[0, 0] = 1
    raw.events = [(0, 3, 0, 1, 3, "eval-gate:harmful", None)]
    out = world_metrics(
        raw,
        lessons.kind,
        lessons.arrival,
        np.asarray([[0.1, 0.06, 0.05, 0.04, 0.0, 0.05, -0.2]]),
        np.asarray([[3, 1, 1, 1, 1, 1, 1]]),
        0.05,
        lessons.world,
        world,
    )
    assert out["group_lost_rate"].tolist() == [0.0]
    assert out["helpful_lost_rate"].tolist() == [0.0]
    assert out["harmful_pair_runs"].tolist() == [0.0]


# ---------------------------------------------------------------------- docs and specs
ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]


def _keys(node: Any, out: set[str]) -> set[str]:
    if isinstance(node, dict):
        for k, v in node.items():
            out.add(k)
            _keys(v, out)
    elif isinstance(node, list):
        for v in node:
            _keys(v, out)
    return out


def test_docs_list_every_key_of_a_spec() -> None:
    """docs/scenarios.md names every key a full scenario has (the parts' options aside)."""
    import tomllib

    doc = (ROOT / "docs" / "scenarios.md").read_text()
    example = doc.split("```toml\n", 1)[1].split("```", 1)[0]
    data = tomllib.loads(example)
    spec = spec_from_dict(data)  # the page's example is a valid spec
    full = spec.scenario.to_dict(full=True)
    full["lessons"]["poison"][0]["effect"] = 0.0
    for part in ("retrieval", "gate"):
        full[part] = {
            k: v
            for k, v in full[part].items()
            if k in ("policy", "type", "every", "from_run", "recheck_verified")
        }
    full.pop("policy")
    keys = _keys(full, set()) | {
        "replicates",
        "seed",
        "grid",
        "zip",
        "dist",
        "value",
        "low",
        "high",
        "mean",
        "sd",
        "values",
        "preset",
    }
    keys -= {"code", "web"}  # family names of the example
    import re

    missing = sorted(k for k in keys if not re.search(r"[`\[.{]" + k + r"[`\]. =,]", doc))
    assert missing == []


@pytest.mark.parametrize(
    "name", ["paraphrases", "conflicts", "families", "drift", "ceiling", "mix"]
)
def test_committed_real_store_specs(name: str) -> None:
    from cogstats.sim import load_spec

    spec = load_spec(ROOT / "simulations" / "real_stores" / f"{name}.toml")
    s = spec.scenario
    s2 = load_spec(ROOT / "simulations" / "poison_crater.toml").scenario
    assert spec.replicates >= 200 and s.runs == s2.runs and s.ids == "shuffled"
    assert s.retrieval.max_facts == s2.retrieval.max_facts
    assert s.additive == (name == "ceiling")
    lessons = scenario_lessons(s)
    # no name order follows the kinds: some poison sorts before some genuine lesson
    poisons = [i for i, k in zip(lessons.ids, lessons.kind, strict=True) if k == KIND_POISON]
    genuine = [i for i, k in zip(lessons.ids, lessons.kind, strict=True) if k == KIND_GENUINE]
    assert min(poisons) < max(genuine) and max(poisons) > min(genuine)
    assert Scenario.from_dict(s.to_dict()) == s


def test_the_lesson_table_says_what_the_store_adds() -> None:
    from cogstats.sim.spec_notes import lesson_table

    table = lesson_table(_world())
    notes = dict(zip(table["lessons"], table["store"], strict=True))
    assert notes["a1"] == "group cite"
    assert notes["c3"] == "with d4: -0.15"
    assert notes["e5"] == "code: 0.08; web: -0.12"
    assert notes["f6"] == "after 6 runs: -0.15"
    assert notes["1 a run (7)"] == "paraphrases 50%; web: uniform(-0.05, 0)"
    assert (
        "store"
        not in lesson_table(
            Scenario.from_dict({"runs": 3, "lessons": {"listed": [{"id": "a", "effect": 0.1}]}})
        ).columns
    )
