"""The simulator's lesson lifecycle (issue 18): status events, the re-test slot, the metrics.

A tiny scripted gate (defined here) suspends, releases, admits and evicts lessons at
fixed runs, so that every status event, every injection and every lifecycle metric of
the reference engine can be checked against values worked out by hand.  For today's
gates the compiled engine's events (derived from its promote / evict / retire arrays)
must equal the reference engine's.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import polars as pl
import pytest

from cogstats import Ledger
from cogstats.retrieval import InProgressFirst, Randomized
from cogstats.retrieval._base import retest_pick
from cogstats.sim import Scenario, simulate
from cogstats.sim.draws import draw_uniforms, layout, prepare, scenario_lessons
from cogstats.sim.engine import run_fast
from cogstats.sim.metrics import pooled_median_suspended
from cogstats.sim.reference import run_reference


class _Report:
    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self.rows = rows

    def to_frame(self) -> pl.DataFrame:
        return pl.DataFrame(
            self.rows,
            schema={
                "fact_id": pl.String,
                "decision": pl.String,
                "reason": pl.String,
                "why": pl.String,
            },
            orient="row",
        )


class ScriptedGate:
    """Apply ``script[run] = {fact_id: (decision, reason)}`` after run ``run``; hold the rest.

    Records the candidates and statuses it is shown at every look.
    """

    def __init__(self, script: dict[int, dict[str, tuple[str, str | None]]]) -> None:
        self.script = script
        self.seen: dict[int, tuple[list[str], dict[str, tuple[str, int]]]] = {}

    def evaluate(
        self, ledger: Ledger, candidates: Any = None, *, rng: Any = None, statuses: Any = None
    ) -> _Report:
        run = int(ledger.frame["run_id"][-1])
        states = {
            f: (getattr(st, "status", None) or st[0], getattr(st, "since", None) or st[1])
            for f, st in (statuses or {}).items()
        }
        self.seen[run] = (list(candidates), states)
        self.covariates = list(ledger.covariates)
        rows = []
        for f in candidates:
            decision, reason = self.script.get(run, {}).get(f, ("hold", None))
            rows.append({"fact_id": f, "decision": decision, "reason": reason, "why": "script"})
        return _Report(rows)


HARM = "eval-gate:harmful"
LESSONS = [
    {"id": "P", "effect": -0.3, "kind": "poison"},
    {"id": "G", "effect": 0.1},
    {"id": "N", "effect": 0.0},
    {"id": "H", "effect": 0.06},
]
#: after run 2: suspend P and G, admit H; 5: release G; 7: convict P (suspended);
#: 8: convict N (effect 0: a false conviction), suspend H (helpful, never released)
SCRIPT: dict[int, dict[str, tuple[str, str | None]]] = {
    2: {"P": ("suspend", None), "G": ("suspend", None), "H": ("admit", None)},
    5: {"G": ("release", None)},
    7: {"P": ("evict", HARM)},
    8: {"N": ("evict", HARM), "H": ("suspend", None)},
}


def _scenario(retest_prob: float, runs: int = 12, slots: int = 4) -> Scenario:
    return Scenario.from_dict(
        {
            "runs": runs,
            "lessons": {"listed": LESSONS},
            "retrieval": {
                "policy": "in_progress_first",
                "max_facts": 4,
                "candidate_slots": slots,
                "retest_prob": retest_prob,
            },
            "gate": {"type": "cycgraph"},
            "score": {"noise_sd": 0.05},
        }
    )


@pytest.fixture(scope="module")
def scripted() -> tuple[Any, ScriptedGate]:
    gate = ScriptedGate(SCRIPT)
    return simulate(_scenario(0.0), replicates=1, rng=5, gate=gate), gate


def test_status_events_are_the_scripted_changes(scripted: tuple[Any, ScriptedGate]) -> None:
    result, _ = scripted
    ev = result.status_events()
    got = ev.select("run", "fact_id", "from", "to", "reason").rows()
    assert got == [
        (2, "G", "candidate", "suspended", None),
        (2, "H", "candidate", "admitted", None),
        (2, "P", "candidate", "suspended", None),
        (5, "G", "suspended", "candidate", None),
        (7, "P", "suspended", "evicted", HARM),
        (8, "H", "admitted", "suspended", None),
        (8, "N", "candidate", "evicted", HARM),
    ]
    assert set(ev["why"]) == {"script"}
    les = {r["fact_id"]: r for r in result.lessons.iter_rows(named=True)}
    assert {f: r["final_status"] for f, r in les.items()} == {
        "P": "evicted",
        "G": "candidate",
        "N": "evicted",
        "H": "suspended",
    }
    assert les["G"]["suspended_at_runs"] == [2] and les["G"]["released_at_runs"] == [5]
    assert les["H"]["admitted_at_run"] == 2 and les["H"]["suspended_at_runs"] == [8]
    assert {f: r["suspended_runs"] for f, r in les.items()} == {"P": 5, "G": 3, "N": 0, "H": 4}
    assert les["P"]["evicted_at_run"] == 7 and les["P"]["outcome"] == "evict"
    assert les["P"]["last_injected_run"] == 2 and les["G"]["last_injected_run"] == 12


def test_the_gate_judges_admitted_and_suspended_lessons_with_their_states(
    scripted: tuple[Any, ScriptedGate],
) -> None:
    _, gate = scripted
    cands, states = gate.seen[3]
    assert sorted(cands) == ["G", "H", "N", "P"]
    # since: the first run in the status (arrival, or the run after the decision)
    assert states == {
        "P": ("suspended", 3),
        "G": ("suspended", 3),
        "N": ("candidate", 1),
        "H": ("admitted", 3),
    }
    cands, states = gate.seen[9]
    assert sorted(cands) == ["G", "H"] and states["G"] == ("candidate", 6)


def test_injections_follow_the_statuses(scripted: tuple[Any, ScriptedGate]) -> None:
    result, _ = scripted
    runs = dict(result.runs.select("run", "fact_ids").iter_rows())
    # H, admitted after run 2, keeps a baseline: in only while it has at least as many
    # recorded runs without it as with it (runs 5 and 7: 4 >= 2 x 2, 6 >= 2 x 3)
    expect = {1: "GHNP", 2: "GHNP", 3: "N", 4: "N", 5: "HN", 6: "GN", 7: "GHN", 8: "GN"}
    expect.update({r: "G" for r in range(9, 13)})
    assert {r: "".join(sorted(f)) for r, f in runs.items()} == expect
    st = result.injected_statuses()
    at3 = dict(st.filter(pl.col("run") == 3).select("fact_id", "status").iter_rows())
    assert at3 == {"N": "candidate"}
    at5 = dict(st.filter(pl.col("run") == 5).select("fact_id", "status").iter_rows())
    assert at5 == {"H": "admitted", "N": "candidate"}
    assert st.filter(pl.col("status") == "suspended").height == 0  # retest_prob 0


def test_lifecycle_metrics_by_hand(scripted: tuple[Any, ScriptedGate]) -> None:
    result, _ = scripted
    m = result.metrics.row(0, named=True)
    assert m["poison_exposure"] == 2  # arrives at run 1, last injected at run 2
    assert m["poison_out_last5"] == 1.0  # not injected in runs 8..12
    assert m["false_conviction_rate"] == pytest.approx(1 / 3)  # N of G, N, H (effect >= 0)
    assert m["helpful_lost_rate"] == 0.5  # H (0.06) still suspended; G (0.1) kept
    assert m["genuine_suspended_runs"] == 3.5  # median of G's 3 and H's 4
    assert m["suspensions"] == 3 and m["retest_injections"] == 0
    med = pooled_median_suspended(result.lessons, n_resamples=9)
    assert (med["median"], med["n"]) == (3.5, 2)


def test_retest_slot_injects_one_suspended_lesson_per_run() -> None:
    # two suspects from run 3 to 5 and retest_prob 1: exactly one of them every run,
    # each with logged propensity 1/2; G released at 5 leaves P alone (propensity 1)
    gate = ScriptedGate({2: {"P": ("suspend", None), "G": ("suspend", None)}, 5: SCRIPT[5]})
    result = simulate(_scenario(1.0, runs=10), replicates=2, rng=3, gate=gate)
    st = result.injected_statuses()
    sus = st.filter(pl.col("status") == "suspended")
    per_run = sus.group_by("replicate", "run").len()
    assert per_run["len"].max() == 1
    assert sorted(per_run.filter(pl.col("replicate") == 0)["run"]) == list(range(3, 11))
    assert set(sus.filter(pl.col("run") > 5)["fact_id"]) == {"P"}
    assert set(sus.filter(pl.col("run") <= 5)["fact_id"]) <= {"P", "G"}
    led = result.ledger(0)
    frame = led.frame.filter(pl.col("run_id").cast(pl.Int64).is_between(3, 5))
    # the suspects' propensities; the rest of the prompt is logged with 1
    for el, pr, ids in zip(
        frame["eligible_ids"], frame["propensities"], frame["fact_ids"], strict=True
    ):
        logged = dict(zip(el, pr, strict=True))
        assert logged == {"P": 0.5, "G": 0.5, **{f: 1.0 for f in ids if f not in "PG"}}
    later = led.frame.filter(pl.col("run_id").cast(pl.Int64) > 5)
    for el, pr in zip(later["eligible_ids"], later["propensities"], strict=True):
        assert dict(zip(el, pr, strict=True))["P"] == 1.0
    m = result.metrics.row(0, named=True)
    assert m["retest_injections"] == 8  # runs 3..10, one re-test each
    assert m["poison_exposure"] == 10  # re-test injections count: P re-tested at run 10


def test_retest_pick_propensity_is_known() -> None:
    u = np.random.default_rng(11).random(40_000)
    picks = [retest_pick(["a", "b", "c"], float(x), 0.6)[0] for x in u]
    for f in "abc":
        share = sum(p == f for p in picks) / u.size
        assert abs(share - 0.2) < 4 * math.sqrt(0.2 * 0.8 / u.size), (f, share)
    assert sum(p is None for p in picks) / u.size == pytest.approx(0.4, abs=0.01)


STORE = [
    {"id": "c1", "status": "candidate", "created_at": 1},
    {"id": "c2", "status": "candidate", "created_at": 2},
    {"id": "v1", "status": "verified", "created_at": 1},
    {"id": "a1", "status": "admitted", "created_at": 2},
    {"id": "a2", "status": "admitted", "created_at": 3},
    {"id": "s1", "status": "suspended", "created_at": 4},
    {"id": "s2", "status": "suspended", "created_at": 5},
]


@pytest.mark.parametrize(
    "policy",
    [
        InProgressFirst(max_facts=4, candidate_slots=2, retest_prob=0.5),
        Randomized(max_facts=4, candidate_slots=2, retest_prob=0.5),
    ],
    ids=["in_progress_first", "randomized"],
)
def test_policies_keep_suspects_apart(policy: Any) -> None:
    ledger = Ledger.from_records([{"run_id": "r1", "score": 0.5, "fact_ids": ["a1"]}])
    n = policy.uniforms_per_run(7)
    for u0, expect in ((0.1, "s1"), (0.4, "s2"), (0.7, None)):
        u = np.full(n, 0.05)
        u[0] = u0
        sel = policy.select_with_uniforms(STORE, ledger, u)
        sus = [f for f in sel.fact_ids if f.startswith("s")]
        assert sus == ([] if expect is None else [expect])
        assert len(sel.fact_ids) <= 4
        assert sel.propensities is not None
        assert sel.propensities["s1"] == sel.propensities["s2"] == 0.25
        # verified first, then admitted in rotation (a2 has no trials: before a1)
        block = [f for f in sel.fact_ids if f[0] in "va"]
        assert block == ["v1", "a2", "a1"][: len(block)]


def test_admitted_lessons_rotate_and_keep_a_baseline() -> None:
    """Admitted lessons take turns (fewest trials first), each only while it has at least
    as many runs without it as with it: by hand, a0 a1 | a2 | a0 a1 | a2 | a0 a1 | a2."""
    policy = InProgressFirst(max_facts=2, candidate_slots=1)
    store = [{"id": f"a{i}", "status": "admitted", "created_at": i} for i in range(3)]
    ledger = Ledger()
    seen = []
    for r in range(6):
        ids = policy.select(store, ledger).fact_ids
        seen.append(ids)
        ledger.record(str(r), 0.5, list(ids))
    assert seen == [("a0", "a1"), ("a2",)] * 3
    counts = dict(ledger.fact_stats().select("fact_id", "trials").iter_rows())
    assert counts == {"a0": 3, "a1": 3, "a2": 3}  # each in half the runs: a baseline


def test_no_suspended_lesson_no_change() -> None:
    # today's statuses: the selection and its (absent) propensities are cycgraph's
    store = [s for s in STORE if s["status"] != "suspended"]
    sel = InProgressFirst(max_facts=4, candidate_slots=2).select(store)
    assert sel.propensities is None and sel.fact_ids == ("v1", "a1", "c2", "c1")


@pytest.mark.parametrize(
    "gate",
    [
        {"type": "cycgraph", "decision_rule": "margin", "min_trials": 3},
        {"type": "cycgraph", "decision_rule": "margin", "min_trials": 2, "recheck_verified": True},
        {"type": "audit", "min_hits": 3, "min_win_rate": 0.6},
    ],
    ids=["margin", "recheck", "audit"],
)
def test_engines_write_equal_status_events_for_todays_gates(gate: dict[str, Any]) -> None:
    s = Scenario.from_dict(
        {
            "runs": 25,
            "lessons": {
                "listed": [
                    {"id": "bad", "effect": -0.3, "kind": "poison", "arrives_at_run": 3},
                    {"id": "g1", "effect": 0.15},
                    {"id": "g2", "effect": 0.05},
                    {"id": "n1", "effect": 0.0},
                ]
            },
            "retrieval": {"max_facts": 3, "candidate_slots": 2, "rest_after_trials": 4},
            "gate": gate,
            "score": {"noise_sd": 0.08},
        }
    )
    lessons = scenario_lessons(s)
    lay = layout(s)
    prep = prepare(s, lessons, draw_uniforms(np.random.SeedSequence(7), 0, 6, lay), lay)
    fast, ref = run_fast(s, lessons, prep), run_reference(s, lessons, prep)
    assert fast.events is None and ref.events is not None
    assert fast.differences(ref) == []
    assert [e[:6] for e in fast.status_events()] == [e[:6] for e in ref.status_events()]
    assert ref.status_events(), "the scenario should change some status"
    a = simulate(s, replicates=6, rng=7, engine="fast").status_events()
    b = simulate(s, replicates=6, rng=7, engine="reference").status_events()
    assert a.drop("why").equals(b.drop("why")) and a.height > 0
    assert a["why"].is_null().all() and b["why"].is_not_null().all()


def test_simulated_ledgers_name_the_true_difficulty_true_difficulty() -> None:
    s = _scenario(0.0, runs=4)
    led = simulate(s, replicates=1, rng=1).ledger(0)
    assert "true_difficulty" in led.covariates and "difficulty" not in led.covariates
    gate = ScriptedGate({})
    simulate(s, replicates=1, rng=1, gate=gate)
    # the reference engine's own ledger, as the gate sees it
    assert "true_difficulty" in gate.covariates and "difficulty" not in gate.covariates


def test_many_suspects_widen_the_propensity_log() -> None:
    # four suspects in a two-lesson prompt: the log holds more lessons than the prompt
    gate = ScriptedGate({1: {str(f["id"]): ("suspend", None) for f in LESSONS}})
    s = Scenario.from_dict(
        {
            "runs": 6,
            "lessons": {"listed": LESSONS},
            "retrieval": {"max_facts": 2, "candidate_slots": 1, "retest_prob": 1.0},
            "gate": {"type": "cycgraph"},
        }
    )
    result = simulate(s, replicates=1, rng=2, gate=gate)
    assert result.runs is not None
    later = result.runs.filter(pl.col("run") > 1)
    assert later["fact_ids"].list.len().to_list() == [1] * 5  # one re-test, nothing else
    for el, pr in zip(later["eligible_ids"], later["propensities"], strict=True):
        assert sorted(el) == ["G", "H", "N", "P"] and pr.to_list() == [0.25] * 4


def test_an_unknown_decision_is_an_error() -> None:
    gate = ScriptedGate({1: {"P": ("quarantine", None)}})
    with pytest.raises(ValueError, match=r"decision must be one of \['hold', 'promote'"):
        simulate(_scenario(0.0, runs=3), replicates=1, rng=1, gate=gate)


def test_retest_frequency_in_the_simulator_matches_the_logged_propensity() -> None:
    # three suspects from run 2 on, retest_prob 0.6: each re-tested in a share 0.2 of the
    # runs (binomial Monte Carlo tolerance, 4 sd), and the ledger logs exactly that
    gate = ScriptedGate({1: {f: ("suspend", None) for f in ("P", "G", "N")}})
    s = _scenario(0.6, runs=40)
    result = simulate(s, replicates=8, rng=4, gate=gate)
    st = result.injected_statuses().filter(pl.col("status") == "suspended")
    opportunities = 8 * 39
    for f in ("P", "G", "N"):
        share = st.filter(pl.col("fact_id") == f).height / opportunities
        assert abs(share - 0.2) < 4 * math.sqrt(0.2 * 0.8 / opportunities), (f, share)
    led = result.ledger(3).frame.filter(pl.col("run_id").cast(pl.Int64) >= 2)
    for el, pr in zip(led["eligible_ids"], led["propensities"], strict=True):
        logged = dict(zip(el, pr, strict=True))
        assert [logged[f] for f in ("P", "G", "N")] == pytest.approx([0.2] * 3, abs=1e-15)


# --- the re-test window and the full prompt (retest_window, fill_empty) -------------------


def _window_scenario(retest_prob: float, window: int | None, runs: int, **extra: Any) -> Scenario:
    s = _scenario(retest_prob, runs=runs)
    return s.with_values({"retrieval.retest_window": window, **extra})


def test_retest_window_is_respected_in_the_simulator() -> None:
    # P, G suspended after run 2 (since 3), N after run 6 (since 7); window 3, prob 1:
    # runs 3-5 re-test one of P, G (1/2 each), run 6 none, runs 7-9 N (1), then none
    gate = ScriptedGate(
        {2: {"P": ("suspend", None), "G": ("suspend", None)}, 6: {"N": ("suspend", None)}}
    )
    result = simulate(_window_scenario(1.0, 3, runs=12), replicates=3, rng=8, gate=gate)
    sus = result.injected_statuses().filter(pl.col("status") == "suspended")
    for rep in range(3):
        mine = sus.filter(pl.col("replicate") == rep).sort("run")
        assert mine["run"].to_list() == [3, 4, 5, 7, 8, 9]
        assert set(mine.filter(pl.col("run") <= 5)["fact_id"]) <= {"P", "G"}
        assert set(mine.filter(pl.col("run") >= 7)["fact_id"]) == {"N"}
        frame = result.ledger(rep).frame
        for run_id, el, pr in zip(
            frame["run_id"], frame["eligible_ids"], frame["propensities"], strict=True
        ):
            run = int(run_id)
            logged = {} if el is None else dict(zip(el, pr, strict=True))
            # the lessons suspended at this run (N is a candidate, logged with 1, to run 6)
            suspended = "PGN" if run >= 7 else "PG"
            suspects = {f: logged[f] for f in suspended if f in logged}
            if 3 <= run <= 5:
                assert suspects == {"P": 0.5, "G": 0.5}, (run, logged)
            elif 7 <= run <= 9:
                assert suspects == {"N": 1.0}, (run, logged)
            elif run >= 6:
                # nobody eligible: no suspect drawn or logged (a deterministic run logs
                # its injected lessons with 1)
                assert suspects == {}, (run, logged)
                assert set(logged.values()) <= {1.0}


def test_retest_window_propensities_equal_the_empirical_frequency() -> None:
    # suspensions after runs 1, 3, 5 (since 2, 4, 6), window 4, retest_prob 0.6: each
    # suspect is eligible for 4 runs, sharing the slot with another in some of them.  The
    # logged propensities are retest_prob / m_eligible exactly, and their sum over runs
    # and replicates is the expected re-test count: the empirical count is within 4
    # binomial standard errors of it (fixed seed)
    gate = ScriptedGate(
        {1: {"P": ("suspend", None)}, 3: {"G": ("suspend", None)}, 5: {"N": ("suspend", None)}}
    )
    reps = 150
    result = simulate(_window_scenario(0.6, 4, runs=10), replicates=reps, rng=21, gate=gate)
    expect = {
        "P": {2: 0.6, 3: 0.6, 4: 0.3, 5: 0.3},
        "G": {4: 0.3, 5: 0.3, 6: 0.3, 7: 0.3},
        "N": {6: 0.3, 7: 0.3, 8: 0.6, 9: 0.6},
    }
    logged_sum = dict.fromkeys(expect, 0.0)
    var = dict.fromkeys(expect, 0.0)
    for rep in range(reps):
        frame = result.ledger(rep).frame
        for run_id, el, pr in zip(
            frame["run_id"], frame["eligible_ids"], frame["propensities"], strict=True
        ):
            logged = {} if el is None else dict(zip(el, pr, strict=True))
            for f, by_run in expect.items():
                p = by_run.get(int(run_id))
                if p is None:
                    assert f not in logged or logged[f] == 1.0  # injected by rule, or out
                    continue
                assert logged[f] == pytest.approx(p, abs=1e-15), (rep, run_id, f)
                logged_sum[f] += p
                var[f] += p * (1 - p)
    sus = result.injected_statuses().filter(pl.col("status") == "suspended")
    for f in expect:
        count = sus.filter(pl.col("fact_id") == f).height
        assert abs(count - logged_sum[f]) < 4 * math.sqrt(var[f]), (f, count, logged_sum[f])
        runs_seen = set(sus.filter(pl.col("fact_id") == f)["run"].to_list())
        assert runs_seen <= set(expect[f]), (f, runs_seen)


FILL_STORE = [
    {"id": "v1", "status": "verified", "created_at": 0},
    *({"id": f"c{i}", "status": "candidate", "created_at": i} for i in range(1, 6)),
]


def test_fill_empty_fills_the_prompt_with_further_candidates() -> None:
    # c1, c2 have a trial (benched at 1 trial) in two runs: cycgraph's selection is v1 +
    # c3, c4 (two candidate slots) and leaves two places empty; fill_empty gives them to
    # c5, then c1 (fewest trials, then oldest): deterministic, no propensities
    ledger = Ledger.from_records(
        [
            {"run_id": "r1", "score": 0.5, "fact_ids": ["c1", "c2"]},
            {"run_id": "r2", "score": 0.5, "fact_ids": []},
        ]
    )
    opts: dict[str, Any] = {"max_facts": 6, "candidate_slots": 2, "rest_after_trials": 1}
    plain = InProgressFirst(**opts).select(FILL_STORE, ledger)
    assert plain.fact_ids == ("v1", "c3", "c4")
    full = InProgressFirst(**opts, fill_empty=True).select(FILL_STORE, ledger)
    assert full.fact_ids == ("v1", "c3", "c4", "c5", "c1", "c2")
    assert full.propensities is None
    small = InProgressFirst(**{**opts, "max_facts": 4}, fill_empty=True).select(FILL_STORE, ledger)
    assert small.fact_ids == ("v1", "c3", "c4", "c5")
    # with a suspect in its window: one re-test at u < prob, the fills logged with 1
    store = [*FILL_STORE, {"id": "s1", "status": "suspended", "created_at": 9, "status_since": 2}]
    pol = InProgressFirst(**opts, fill_empty=True, retest_window=2, retest_prob=0.5)
    sel = pol.select_with_uniforms(store, ledger, np.array([0.2, 0.5]), context={"run": 3})
    # (the re-test takes a candidate slot: c3 chosen, then c4, c5, c1 fill the places)
    assert sel.fact_ids == ("v1", "c3", "c4", "c5", "c1", "s1")
    assert sel.propensities == {"v1": 1.0, "c3": 1.0, "c4": 1.0, "c5": 1.0, "c1": 1.0, "s1": 0.5}
    # past its window (run 4 - since 2 >= 2): not drawn, not logged, the prompt full
    late = pol.select_with_uniforms(store, ledger, np.array([0.2, 0.5]), context={"run": 4})
    assert late.fact_ids == ("v1", "c3", "c4", "c5", "c1", "c2")
    assert late.propensities is None
    # a baseline kept: in a ledger of one run c1 and c2 (one trial each) are not filled,
    # and the coming run's number (context) counts runs whose empty prompt went unrecorded
    one = Ledger.from_records([{"run_id": "r1", "score": 0.5, "fact_ids": ["c1", "c2"]}])
    assert InProgressFirst(**opts, fill_empty=True).select(FILL_STORE, one).fact_ids == (
        "v1",
        "c3",
        "c4",
        "c5",
    )
    ctx = {"run": 3}  # run 2 had an empty prompt, not recorded
    sel = InProgressFirst(**opts, fill_empty=True).select(FILL_STORE, one, context=ctx)
    assert sel.fact_ids == ("v1", "c3", "c4", "c5", "c1", "c2")


def test_fill_empty_keeps_the_simulated_prompt_full() -> None:
    gate = ScriptedGate({})
    base = _scenario(0.5, runs=6, slots=1).with_values({"retrieval.rest_after_trials": 1})
    plain = simulate(base, replicates=1, rng=2, gate=gate)
    full = simulate(
        base.with_values({"retrieval.fill_empty": True}), replicates=1, rng=2, gate=gate
    )
    assert plain.runs is not None and full.runs is not None
    # one candidate a run until all four are benched after their first trial: then empty
    assert plain.runs["fact_ids"].list.len().to_list() == [1, 1, 1, 1, 0, 0]
    # the fill keeps a baseline: a lesson is filled only while it has at least as many
    # runs without it as with it, so the four lessons are in every other run
    assert full.runs["fact_ids"].list.len().to_list() == [4, 0, 4, 0, 4, 0]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"retest_window": 0}, r"retest_window must be an integer >= 1 \(runs\) or None; got 0"),
        ({"retest_window": True}, r"retest_window must be .*; got True"),
        ({"retest_window": 2.5}, r"retest_window must be .*; got 2.5"),
        ({"fill_empty": "yes"}, r"fill_empty must be True or False; got 'yes'"),
    ],
)
def test_retest_options_are_validated(options: dict[str, Any], message: str) -> None:
    from cogstats._validation import ParameterError

    with pytest.raises(ParameterError, match=message):
        InProgressFirst(**options)


def test_retest_window_needs_the_run_and_the_since_column() -> None:
    from cogstats._validation import ParameterError

    pol = InProgressFirst(retest_window=3)
    store = [{"id": "s1", "status": "suspended", "created_at": 1, "status_since": 2}]
    with pytest.raises(ParameterError, match=r"context\['run'\]"):
        pol.select(store)
    with pytest.raises(ParameterError, match="'status_since' column"):
        pol.select([{"id": "s1", "status": "suspended", "created_at": 1}], context={"run": 3})
    # without suspects the window asks for nothing
    assert pol.select([{"id": "c", "status": "candidate", "created_at": 1}]).fact_ids == ("c",)


@pytest.mark.parametrize(
    "policy",
    [
        InProgressFirst(max_facts=4, candidate_slots=2, retest_prob=0.5, retest_window=2),
        Randomized(max_facts=4, candidate_slots=2, retest_prob=0.5, retest_window=2),
    ],
    ids=["in_progress_first", "randomized"],
)
def test_every_retest_slot_honours_the_window(policy: Any) -> None:
    # s1 suspended since run 1, s2 since run 3; at run 4 with window 2 only s2 (4 - 3 < 2)
    since: dict[Any, int] = {"s1": 1, "s2": 3}
    store = [{**row, "status_since": since.get(row["id"], 1)} for row in STORE]
    ledger = Ledger.from_records([{"run_id": "r1", "score": 0.5, "fact_ids": ["a1"]}])
    n = policy.uniforms_per_run(7)
    for u0, expect in ((0.1, "s2"), (0.45, "s2"), (0.7, None)):
        u = np.full(n, 0.05)
        u[0] = u0
        sel = policy.select_with_uniforms(store, ledger, u, context={"run": 4})
        assert [f for f in sel.fact_ids if f.startswith("s")] == (
            [] if expect is None else [expect]
        )
        assert sel.propensities is not None
        assert sel.propensities["s2"] == 0.5 and "s1" not in sel.propensities
    # at run 5 neither is eligible: no suspect drawn, none logged
    sel = policy.select_with_uniforms(store, ledger, np.full(n, 0.05), context={"run": 5})
    assert not [f for f in sel.fact_ids if f.startswith("s")]
    assert sel.propensities is None or not {"s1", "s2"} & set(sel.propensities)
