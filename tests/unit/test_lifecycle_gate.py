"""The recommended gate (cogstats.gates.recommended: LifecycleGate, registered recommended).

Every number a test compares is computed in the test from the ledger (scipy's pooled
two-sample t test for a lone lesson, the margin statistic by hand), not copied from the
gate; the status transitions are checked on the rule's arrays, where each input is set.
"""

from __future__ import annotations

import doctest
import importlib.util
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats as sps

from cogstats import Ledger
from cogstats import _codes as C
from cogstats._validation import ParameterError
from cogstats.gates import GATES, GateReport, make_gate, rule_options
from cogstats.gates.recommended import (
    LIFECYCLE_DECISION_COLUMNS,
    LIFECYCLE_WHY,
    LifecycleGate,
    LifecycleStatistics,
    lifecycle_rule,
)
from tests.helpers import random_inclusion_ledger

ROOT = Path(__file__).resolve().parents[2]


def _one_lesson_ledger(
    rng: np.random.Generator, effect: float, runs: int, sd: float = 0.1
) -> tuple[Ledger, np.ndarray, np.ndarray]:
    x = rng.random(runs) < 0.5
    x[:2] = [True, False]
    y = 0.5 + effect * x + rng.normal(0.0, sd, runs)  # no clamp: scale-free checks
    led = Ledger.from_records(
        {"run_id": f"r{i}", "score": float(y[i]), "fact_ids": ["a"] if x[i] else []}
        for i in range(runs)
    )
    return led, x, y


@pytest.fixture(scope="module")
def ledger() -> Ledger:
    return random_inclusion_ledger(
        np.random.default_rng(8), n_runs=120, effects=(0.15, 0.0, -0.25, 0.02)
    )


# ------------------------------------------------------------------ the protocol
def test_registered_and_protocol(ledger: Ledger) -> None:
    assert "recommended" in GATES
    gate = make_gate("recommended")
    assert isinstance(gate, LifecycleGate)
    stats = gate.statistics(ledger)
    a = gate.evaluate(ledger)
    b = gate.judge(stats, None, None)
    assert isinstance(a, GateReport) and a.gate == "recommended"
    assert a.to_frame().columns == list(LIFECYCLE_DECISION_COLUMNS)
    assert a.to_frame().equals(b.to_frame())
    frame = a.to_frame()
    assert set(frame["decision"]) <= set(C.OUTCOMES)
    assert set(frame["why"]) <= set(LIFECYCLE_WHY)
    # the harmful lesson (-0.25) is convicted, the helpful one (+0.15) promoted
    assert a.decision("L3")["reason"] == C.HARMFUL
    assert a.decision("L1")["decision"] == C.PROMOTE
    # candidates order and subset; statuses mapping read (evicted: not judged again)
    sub = gate.evaluate(ledger, ["L3", "L1"], statuses={"L3": "evicted"})
    assert sub.to_frame()["fact_id"].to_list() == ["L3", "L1"]
    assert sub.decision("L3")["decision"] == C.HOLD and sub.decision("L3")["why"] == "inactive"


def test_statuses_accept_lesson_state_objects(ledger: Ledger) -> None:
    @dataclass(frozen=True)
    class State:  # the protocol's LessonState shape (status, since)
        status: str
        since: int

    gate = LifecycleGate()
    a = gate.evaluate(ledger, statuses={"L1": State("verified", 40)})
    row = a.decision("L1")
    assert row["status"] == "verified" and row["decision"] == C.HOLD  # verified: harm only


def test_lone_lesson_is_the_pooled_t_test_and_tier1_by_hand() -> None:
    led, x, y = _one_lesson_ledger(np.random.default_rng(3), -0.3, 14)
    gate = LifecycleGate(covariates=())
    row = gate.evaluate(led).decision("a")
    ref = sps.ttest_ind(y[x], y[~x], equal_var=True)
    assert row["t_stat"] == pytest.approx(ref.statistic, rel=1e-9)
    assert row["df"] == pytest.approx(len(y) - 2, abs=1e-9)
    n, m = x.sum(), (~x).sum()
    pooled = math.sqrt(
        (((y[x] - y[x].mean()) ** 2).sum() + ((y[~x] - y[~x].mean()) ** 2).sum()) / (n + m - 2)
    )
    assert row["sigma"] == pytest.approx(pooled, rel=1e-9)
    assert row["info"] == pytest.approx(n * m / (n + m), rel=1e-9)
    est = y[x].mean() - y[~x].mean()
    se = pooled * math.sqrt(1 / n + 1 / m)
    assert row["margin_stat_harm"] == pytest.approx((est + gate.margin * pooled) / se, rel=1e-9)
    bound = sps.t.ppf(1 - gate.margin_level, n + m - 2)
    tier1 = n * m / (n + m) <= gate.margin_max_information and n + m - 2 >= gate.margin_min_df
    if tier1:
        assert row["margin_bound"] == pytest.approx(bound, rel=1e-9)
    convict = tier1 and (est + gate.margin * pooled) / se < -bound
    assert (row["why"] == "harm_margin") == convict


def test_tier1_and_tier2_do_not_depend_on_the_noise_scale() -> None:
    """Scores a + b y: the same convictions, promotions and suspensions (admission and
    futility are in score units, so they are switched off here)."""
    rng = np.random.default_rng(11)
    led = random_inclusion_ledger(rng, n_runs=60, effects=(-0.2, 0.0, 0.1, 0.0, -0.05))
    recs = [{"run_id": r["run_id"], "score": r["score"], "fact_ids": r["fact_ids"]}
            for r in led.to_records()]  # fmt: skip
    gate = LifecycleGate(covariates=(), admit_margin=0.0, admit_level=1e-9, futility_margin=-9.0)
    for k in (12, 20, 40, 60):
        plain = Ledger.from_records(recs[:k])
        scaled = Ledger.from_records({**r, "score": 0.1 + 0.5 * r["score"]} for r in recs[:k])
        a = gate.evaluate(plain).to_frame()
        b = gate.evaluate(scaled).to_frame()
        assert a["decision"].to_list() == b["decision"].to_list()
        assert a["why"].to_list() == b["why"].to_list()
        np.testing.assert_allclose(
            a["t_stat"].fill_null(0.0).to_numpy(), b["t_stat"].fill_null(0.0).to_numpy(), rtol=1e-8
        )


# ------------------------------------------------------------------ statistics
def test_add_run_equals_the_batch_statistics(ledger: Ledger) -> None:
    gate = LifecycleGate()
    full = gate.statistics(ledger)
    cov = full.ridge.covariates
    assert cov == ("difficulty_proxy",)
    recs = ledger.to_records()
    st = LifecycleStatistics.empty(cov)
    for rec in recs:
        st = st.add_run(rec["run_id"], rec["score"], rec["fact_ids"], rec)
    assert st.ridge.fact_ids == full.ridge.fact_ids
    np.testing.assert_allclose(st.ridge.gram, full.ridge.gram, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(st.ridge.zty, full.ridge.zty, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(st.with_ss, full.with_ss, rtol=1e-12, atol=1e-9)
    assert st.ridge.yty == pytest.approx(full.ridge.yty, rel=1e-12)
    a = gate.judge(st).to_frame()
    b = gate.judge(full).to_frame()
    assert a["decision"].to_list() == b["decision"].to_list()
    back = LifecycleStatistics.from_arrays(full.to_arrays())
    assert gate.judge(back).to_frame().equals(b)


def test_add_run_refuses_a_missing_covariate(ledger: Ledger) -> None:
    st = LifecycleGate().statistics(ledger)
    with pytest.raises(ParameterError, match=r"covariates\['difficulty_proxy'\].*got None"):
        st.add_run("new", 0.5, ["L1"], {})
    with pytest.raises(ParameterError, match="score must be a finite number; got nan"):
        st.add_run("new", float("nan"), ["L1"], {"difficulty_proxy": 0.1})


# ------------------------------------------------------------------ the rule
def _rule(status: str, **over: Any) -> tuple[tuple[str, str | None], str]:
    """One lesson through the rule; every input set, defaults a well-measured null."""
    base = dict(
        t=0.0, df=40.0, info=8.0, estimate=0.0, se=0.03, sigma=0.085, trials=12,
        identifiable=True, crater_p=0.5, level=1e-4,
    )  # fmt: skip
    base.update(over)
    x = {k: np.array([v], dtype=float) for k, v in base.items()}
    x["trials"] = x["trials"].astype(np.int64)
    x["identifiable"] = x["identifiable"].astype(bool)
    x["status"] = np.array([C.STATUS_NAMES.index(status)])
    out, why, _ = lifecycle_rule(x, rule_options(LifecycleGate()))
    return C.outcome_of_code(int(out[0])), LIFECYCLE_WHY[int(why[0])]


def _with_t(t: float, se: float = 0.03, **over: Any) -> dict[str, Any]:
    return dict(t=t, estimate=t * se, se=se, **over)


@pytest.mark.parametrize(
    ("status", "inputs", "want"),
    [
        # candidate: tier 1 (early, info in its window), tier 2, promote, suspend, admit
        ("candidate", _with_t(-6.0, info=2.5), (("evict", C.HARMFUL), "harm_margin")),
        (
            "candidate",
            _with_t(-4.5, info=10.0, level=1e-4),
            (("evict", C.HARMFUL), "harm_evidence"),
        ),
        ("candidate", _with_t(6.0, info=2.5), (("promote", None), "promote_margin")),
        ("candidate", _with_t(4.5, info=10.0), (("promote", None), "promote_evidence")),
        ("candidate", _with_t(-2.5, info=10.0), (("suspend", None), "suspect")),
        ("candidate", dict(trials=1, t=np.nan, crater_p=0.01), (("suspend", None), "crater")),
        ("candidate", _with_t(1.5, info=10.0), (("admit", None), "non_inferior")),
        ("candidate", _with_t(0.0, se=0.002, info=10.0), (("evict", C.NO_LIFT), "futility")),
        ("candidate", _with_t(0.3, info=10.0, se=0.1), (("hold", None), "insufficient_evidence")),
        ("candidate", dict(trials=2), (("hold", None), "min_trials")),
        ("candidate", dict(identifiable=False), (("hold", None), "not_identifiable")),
        # admitted: promoted or convicted, suspended on a lenient test; never admitted again
        ("admitted", _with_t(4.5, info=10.0), (("promote", None), "promote_evidence")),
        ("admitted", _with_t(-4.5, info=10.0), (("evict", C.HARMFUL), "harm_evidence")),
        ("admitted", _with_t(-2.5, info=10.0), (("suspend", None), "suspect")),
        ("admitted", _with_t(1.5, info=10.0), (("hold", None), "insufficient_evidence")),
        # suspended: released or convicted; not promoted, admitted or suspended again
        ("suspended", _with_t(-0.5, info=10.0), (("release", None), "cleared")),
        ("suspended", _with_t(-4.5, info=10.0), (("evict", C.HARMFUL), "harm_evidence")),
        ("suspended", _with_t(-1.5, info=10.0), (("hold", None), "suspended")),
        ("suspended", _with_t(4.5, info=10.0), (("release", None), "cleared")),
        # verified: judged for harm only
        ("verified", _with_t(-4.5, info=10.0), (("evict", C.HARMFUL), "harm_evidence")),
        ("verified", _with_t(-2.5, info=10.0), (("hold", None), "insufficient_evidence")),
        # evicted and retired lessons are not judged again
        ("evicted", _with_t(-9.0, info=10.0), (("hold", None), "inactive")),
        ("retired", _with_t(9.0, info=10.0), (("hold", None), "inactive")),
    ],
)
def test_status_transitions(status: str, inputs: dict, want: tuple) -> None:
    assert _rule(status, **inputs) == want


def test_futility_never_retires_a_lesson_that_may_be_harmful() -> None:
    # upper bound below the usefulness margin, lower bound below -admit_margin: kept
    got = _rule("candidate", **_with_t(-1.8, se=0.03, info=10.0))
    assert got[0] != ("evict", C.NO_LIFT)


def test_tier2_levels_grow_to_the_last_look_and_stay() -> None:
    g = LifecycleGate()
    lv = g.levels_at(np.array([g.max_information * 0.5, g.max_information, 2 * g.max_information]))
    assert 0 < lv[0] < lv[1] == lv[2] <= g.alpha
    assert g.levels_at(np.array([0.0, np.nan])).tolist() == [0.0, 0.0]


def test_every_outcome_leads_to_a_store_status() -> None:
    for code in (C.OUTCOME_ADMIT, C.OUTCOME_SUSPEND, C.OUTCOME_RELEASE):
        name, _ = C.outcome_of_code(code)
        assert C.OUTCOME_STATUS[name] in C.LESSON_STATUSES


# ------------------------------------------------------------------ errors
@pytest.mark.parametrize(
    ("options", "pattern"),
    [
        ({"alpha": 0.7}, r"alpha must be .*0\.5.*got 0\.7"),
        ({"margin": 0.0}, r"margin must be > 0; got 0\.0"),
        ({"margin_level": 0.0}, r"margin_level must be a one-sided level in \(0, 0\.5\); got 0\.0"),
        ({"release_t": 3.0}, r"release_t must be <= suspect_t \(1.5\).*; got 3"),
        ({"spending": "nope"}, r"nope"),
        ({"covariates": "difficulty"}, r"covariates must be a list .*got 'difficulty'"),
        ({"crater_max_trials": 0}, r"crater_max_trials"),
        ({"min_trials": 1}, r"min_trials"),
        ({"penalty": 0.0}, r"penalty must be > 0 .*got 0\.0"),
    ],
)
def test_invalid_options_name_parameter_allowed_and_got(options: dict, pattern: str) -> None:
    with pytest.raises(ParameterError, match=pattern):
        LifecycleGate(**options)


def test_invalid_arguments(ledger: Ledger) -> None:
    gate = LifecycleGate()
    with pytest.raises(ParameterError, match=r"statuses\['L1'\] must be a lesson status.*'gone'"):
        gate.evaluate(ledger, statuses={"L1": "gone"})
    with pytest.raises(ParameterError, match="stats must be the gate's statistics.*Ledger"):
        gate.judge(ledger)  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="candidates must be a sequence of lesson ids"):
        gate.evaluate(ledger, "L1")
    with pytest.raises(ParameterError, match="statuses must be a mapping"):
        gate.evaluate(ledger, statuses=["L1"])  # type: ignore[arg-type]


def test_options_round_trip() -> None:
    g = LifecycleGate(margin=1.2, spending_options={"gamma": -1.0}, covariates=("x",))
    assert LifecycleGate(**g.to_policy()) == g


# ------------------------------------------------------------------ the prototype harness
def _prototype() -> Any:
    path = ROOT / "docs" / "scripts" / "v2_prototype.py"
    spec = importlib.util.spec_from_file_location("v2_prototype", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["v2_prototype"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_s1_closed_form_equals_the_gate_on_a_ledger() -> None:
    """The S1 harness's closed-form statistics give the gate's own outcomes look by look."""
    proto = _prototype()
    rng = np.random.default_rng(5)
    _, x, y = _one_lesson_ledger(rng, -0.15, 30)
    gate = LifecycleGate(covariates=())
    recs = [
        {"run_id": f"r{i}", "score": float(y[i]), "fact_ids": ["a"] if x[i] else []}
        for i in range(30)
    ]
    outs = []
    for k in range(4, 31):
        rep = gate.evaluate(Ledger.from_records(recs[:k]), statuses={"a": "candidate"})
        outs.append(C.outcome_code(rep.decision("a")["decision"], rep.decision("a")["reason"]))
    want = proto.s1_outcomes_candidate(gate, x, y)
    assert want[3:] == outs


def test_module_doctests() -> None:
    from cogstats.gates.recommended import gate, rule

    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    results = [doctest.testmod(m, optionflags=flags) for m in (gate, rule)]
    assert sum(r.attempted for r in results) >= 6 and sum(r.failed for r in results) == 0


def test_recorded_demo_suspends_the_crater_group_and_convicts_no_genuine_lesson() -> None:
    """cycgraph's recorded demo: run 4 is the crater (P1-P3 with L3, L4, L5); replayed with
    the statuses carried, P1-P3 are out of the prompt after run 5, any other lesson out
    is one of the crater run's (suspended with it, not convicted), and no genuine lesson
    is convicted."""
    import polars as pl

    from cogstats.reports.audit import recorded_ledger
    from cogstats.reports.resources import resource_path

    runs = pl.read_csv(resource_path("data/cycgraph_poison_demo_runs.csv"))
    recs = recorded_ledger(runs).to_records()
    gate = LifecycleGate()
    statuses: dict[str, str] = {}
    for k in range(1, len(recs) + 1):
        report = gate.evaluate(Ledger.from_records(recs[:k]), statuses=statuses)
        for row in report.to_frame().iter_rows(named=True):
            new = C.OUTCOME_STATUS[row["decision"]]
            if new is not None:
                statuses[row["fact_id"]] = new
            if row["fact_id"].startswith("L"):
                assert row["reason"] != C.HARMFUL, row
        if recs[k - 1]["run_id"] == "5":
            out = {f for f, s in statuses.items() if s not in C.LIVE_STATUSES}
            crater = set(next(r["fact_ids"] for r in recs if r["run_id"] == "4"))
            assert {"P1", "P2", "P3"} <= out
            assert out <= crater and {"L3", "L4", "L5"} <= crater
            assert all(statuses[f] == C.SUSPENDED for f in out if f.startswith("L"))


def test_a_users_ledger_with_history_and_a_difficulty_column() -> None:
    """400 runs, 30 lessons (2 harmful at -0.15, 4 helpful at +0.05..+0.10, the rest small),
    a column named ``difficulty``, judged once with no options: both harmful lessons are
    evicted as harmful, no helpful one is evicted or retired, and the report says which
    column it adjusted for."""
    rng = np.random.default_rng(0)
    runs, k = 400, 30
    eff = np.zeros(k)
    eff[:2] = -0.15
    eff[2:6] = [0.05, 0.067, 0.083, 0.10]
    eff[6:] = rng.uniform(-0.02, 0.03, k - 6)
    x = rng.random((runs, k)) < 0.3
    d = rng.normal(0, 0.1, runs)
    y = np.clip(0.6 + d + x @ eff + rng.normal(0, 0.05, runs), 0, 1)
    led = Ledger.from_records(
        {
            "run_id": f"r{i}",
            "score": float(y[i]),
            "difficulty": float(d[i] + rng.normal(0, 0.05)),
            "fact_ids": [f"L{j}" for j in np.flatnonzero(x[i])],
        }
        for i in range(runs)
    )
    report = LifecycleGate().evaluate(led)
    for j in range(2):
        assert report.decision(f"L{j}")["reason"] == C.HARMFUL
    for j in range(2, 6):
        assert report.decision(f"L{j}")["decision"] not in (C.EVICT, C.RETIRE)
    assert "'difficulty'" in report.settings["covariate_note"]
    keep = ("run_id", "score", "fact_ids")
    bare = LifecycleGate().evaluate(
        Ledger.from_records({c: r[c] for c in keep} for r in led.to_records())
    )
    assert "covariate_note" not in bare.settings
    hard = LifecycleGate().evaluate(
        Ledger.from_records(
            {**{c: r[c] for c in keep}, "task_hardness": r["difficulty"]} for r in led.to_records()
        )
    )
    assert "task_hardness" in hard.settings["covariate_note"]


def _difficulty_runs(seed: int, n: int, column: str | None) -> list[dict[str, Any]]:
    """Runs of four lessons at random inclusion, one harmful, the score moving with a
    difficulty column (named ``column``; None: no covariate)."""
    rng = np.random.default_rng(seed)
    x = rng.random((n, 4)) < 0.5
    d = rng.normal(0.0, 0.1, n)
    y = np.clip(0.55 + d - 0.2 * x[:, 0] + rng.normal(0.0, 0.05, n), 0.0, 1.0)
    out = []
    for i in range(n):
        rec: dict[str, Any] = {
            "run_id": f"r{i}",
            "score": float(y[i]),
            "fact_ids": [f for f, on in zip("Pabc", x[i], strict=True) if on],
        }
        if column is not None:
            rec[column] = float(d[i])
        out.append(rec)
    return out


def _assert_stream_is_batch(gate: Any, recs: list[dict[str, Any]]) -> Any:
    """Feed ``recs`` to StreamingGate(gate); at every step the report equals the batch
    evaluate on the ledger so far: decisions identical, numbers within 1e-9."""
    from cogstats.gates import StreamingGate

    sg = StreamingGate(gate)
    same = ["fact_id", "decision", "reason", "why", "trials", "baseline_runs", "status"]
    numbers = ["estimate", "std_error", "t_stat", "df", "sigma", "info", "pvalue_promote"]
    for k, rec in enumerate(recs):
        covs = {c: v for c, v in rec.items() if c not in ("run_id", "score", "fact_ids")}
        sg.record(rec["run_id"], rec["score"], rec["fact_ids"], **covs)
        stream = sg.report().to_frame()
        whole = gate.evaluate(Ledger.from_records(recs[: k + 1]))
        assert dict(sg.report().settings) == dict(whole.settings), k  # the note too
        batch = whole.to_frame()
        for c in same:
            assert stream[c].to_list() == batch[c].to_list(), (k, c)
        for c in numbers:
            for u, v in zip(stream[c].to_list(), batch[c].to_list(), strict=True):
                assert (u is None) == (v is None), (k, c, u, v)
                if u is not None and not (math.isnan(u) and math.isnan(v)):
                    assert u == pytest.approx(v, rel=1e-9, abs=1e-12), (k, c)
    return sg


@pytest.mark.parametrize("column", ["difficulty_proxy", "difficulty"])
def test_streaming_adjusts_for_the_difficulty_column_as_batch_does(column: str) -> None:
    """StreamingGate(LifecycleGate()) on runs carrying a difficulty column (the proxy, or
    with the default covariates the `difficulty` fallback) equals batch evaluate on the
    ledger so far at every step, and both adjust for the column (they differ from the
    gate told to adjust for nothing)."""
    recs = _difficulty_runs(11, 60, column)
    gate = LifecycleGate()
    sg = _assert_stream_is_batch(gate, recs)
    ledger = Ledger.from_records(recs)
    assert gate.covariates_in(ledger) == (column,)
    unadjusted = LifecycleGate(covariates=()).evaluate(ledger).to_frame()["estimate"]
    adjusted = sg.report().to_frame()["estimate"]
    assert max(abs(a - b) for a, b in zip(adjusted, unadjusted, strict=True)) > 1e-3


def test_streaming_without_covariates_and_refusals() -> None:
    """Runs without a covariate stream as batch; a run that would give the chosen
    covariate nulls is refused before it is recorded (LedgerError naming the field)."""
    from cogstats._validation import LedgerError
    from cogstats.gates import StreamingGate

    _assert_stream_is_batch(LifecycleGate(), _difficulty_runs(12, 30, None))
    sg = StreamingGate(LifecycleGate())
    sg.record("r1", 0.5, ["a"], difficulty_proxy=0.1)
    with pytest.raises(LedgerError, match="every run or in none") as err:
        sg.record("r2", 0.6, ["a"])
    assert err.value.field == "difficulty_proxy"
    with pytest.raises(LedgerError, match="finite number"):  # the columns are numbers
        StreamingGate(LifecycleGate()).record("r1", 0.6, ["a"], difficulty_proxy="hard")
    assert len(sg) == 1
    sg.record("r2", 0.6, ["b"], difficulty_proxy=0.3, difficulty=0.2)  # unused: accepted
    assert len(sg) == 2
    # before any run: a report of nothing
    assert StreamingGate(LifecycleGate()).report().to_frame().height == 0


def test_streaming_with_replaced_runs_and_a_reload_stays_batch(tmp_path: Path) -> None:
    """A run recorded again (the statistics rebuilt from the runs) and a save/load midway
    keep StreamingGate(LifecycleGate()) equal to batch evaluate at every step."""
    from cogstats.gates import StreamingGate

    rng = np.random.default_rng(3)
    gate = LifecycleGate()
    sg = StreamingGate(gate)
    ledger = Ledger()
    for i in range(80):
        ids = [f"L{j}" for j in range(5) if rng.random() < 0.5]
        d = float(rng.normal(0, 0.1))
        y = float(np.clip(0.55 + d - 0.2 * ("L0" in ids) + rng.normal(0, 0.05), 0, 1))
        run = f"r{i - 3}" if i % 17 == 16 else f"r{i}"
        sg.record(run, y, ids, difficulty_proxy=d)
        ledger.record(run, y, ids, difficulty_proxy=d)
        if i == 40:
            sg = StreamingGate.load(sg.save(tmp_path / "gate.npz"))
        a, b = sg.report().to_frame(), gate.evaluate(ledger).to_frame()
        for c in ("fact_id", "decision", "reason", "why", "trials", "baseline_runs"):
            assert a[c].to_list() == b[c].to_list(), (i, c)
        for c in ("estimate", "std_error", "t_stat"):
            x, z = a[c].to_numpy(), b[c].to_numpy()
            assert np.allclose(x, z, rtol=1e-9, atol=1e-12, equal_nan=True), (i, c)
    assert "L0" in sg.report().evicted
