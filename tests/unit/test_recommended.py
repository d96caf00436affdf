"""The recommended preset: the debiased ridge, the preset's parts, the covariate rule.

References: the debiased estimate and its per-lesson residual sum of squares and degrees
of freedom against a direct refit with the lesson's penalty removed (numpy least squares
on the augmented system, 1e-9); one lesson against scipy's pooled two-sample t test
(1e-10); a vanishing penalty against statsmodels OLS (1e-6).  The preset in specs, grids
and on the command line; the gate's covariate rule in batch, streaming and the CLI.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import polars as pl
import pytest
from scipy import stats

import cogstats
from cogstats import Ledger, attribute
from cogstats._validation import ParameterError, SpecError
from cogstats.estimators.debiased_ridge import (
    gauss_jordan_inverse,
    ridge_fit,
    ridge_statistics,
)
from cogstats.gates import LifecycleGate
from cogstats.presets import PRESETS, get_preset, recommended
from cogstats.sim import Scenario, load_spec, simulate
from cogstats.sim.engine import fast_support


def _ledger(n: int = 40, seed: int = 1, effects: tuple[float, ...] = (-0.2, 0, 0.05, 0, 0.1)):
    rng = np.random.default_rng(seed)
    x = rng.random((n, len(effects))) < 0.5
    p = rng.normal(size=n)
    y = np.clip(0.5 + 0.1 * p + x @ np.asarray(effects) + rng.normal(0, 0.05, n), 0, 1)
    records = [
        {
            "run_id": f"r{i}",
            "score": float(y[i]),
            "fact_ids": [f"L{j}" for j in range(len(effects)) if x[i, j]],
            "prox": float(p[i]),
        }
        for i in range(n)
    ]
    return Ledger.from_records(records), x, y, p


# ---------------------------------------------------------------------- the estimator
def test_debiased_estimate_equals_a_refit_without_the_lessons_own_penalty() -> None:
    ledger, x, y, p = _ledger()
    st = ridge_statistics(ledger, ("prox",))
    k = 5.0
    fit = ridge_fit(st, penalty=k, passes=1)
    n = len(y)
    for jj, f in enumerate(st.fact_ids):
        cols = [x[:, int(g[1:])].astype(float) for g in st.fact_ids]
        z = np.column_stack([np.ones(n), p, *cols])
        pen = np.full(z.shape[1], np.sqrt(k))
        pen[:2] = 0.0
        pen[2 + jj] = 0.0
        # ridge as least squares on the augmented system
        za = np.vstack([z, np.diag(pen)])
        ya = np.concatenate([y, np.zeros(z.shape[1])])
        b = np.linalg.lstsq(za, ya, rcond=None)[0]
        a = z.T @ z + np.diag(pen**2)
        hat = np.trace(np.linalg.solve(a, z.T @ z))
        rss = float(np.sum((y - z @ b) ** 2))
        df = n - hat
        se = np.sqrt(rss / df * np.linalg.inv(a)[2 + jj, 2 + jj])
        assert fit.estimate[jj] == pytest.approx(b[2 + jj], abs=1e-9), f
        assert fit.df[jj] == pytest.approx(df, abs=1e-9), f
        assert fit.std_error[jj] == pytest.approx(se, rel=1e-9), f


def test_lapack_path_for_many_lessons_equals_the_exact_elimination(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Above EXACT_COLUMNS the inverse goes to LAPACK; forcing both paths on one ledger of
    # 300 lessons (p = 302 with intercept and covariate) must give the same fit to 1e-9.
    from cogstats.estimators import debiased_ridge as dr

    effects = tuple([-0.3, -0.25, 0.1] + [0.0] * 297)
    ledger = _ledger(n=400, seed=7, effects=effects)[0]
    st = ridge_statistics(ledger, ("prox",))
    assert st.gram.shape[0] > dr.EXACT_COLUMNS
    fast = ridge_fit(st, penalty=40.0, passes=2)
    monkeypatch.setattr(dr, "EXACT_COLUMNS", 10_000)
    exact = ridge_fit(st, penalty=40.0, passes=2)
    for name in ("estimate", "std_error", "t", "info", "df", "sigma"):
        np.testing.assert_allclose(
            getattr(fast, name), getattr(exact, name), rtol=1e-9, atol=1e-12, err_msg=name
        )
    np.testing.assert_array_equal(fast.penalized, exact.penalized)
    worst = list(st.fact_ids).index("L0")
    assert np.isfinite(fast.t).all() and fast.t[worst] < -3  # the worst poison shows


def test_one_lesson_is_the_pooled_two_sample_t_test() -> None:
    _, x, y, _ = _ledger()
    ledger = Ledger.from_records(
        {"run_id": f"r{i}", "score": float(y[i]), "fact_ids": ["a"] if x[i, 0] else []}
        for i in range(len(y))
    )
    row = attribute(ledger, "debiased_ridge").row("a")
    ref = stats.ttest_ind(y[x[:, 0]], y[~x[:, 0]])
    assert row["t"] == pytest.approx(ref.statistic, abs=1e-10)
    assert row["pvalue"] == pytest.approx(ref.pvalue, abs=1e-10)
    assert row["df"] == pytest.approx(len(y) - 2, abs=1e-9)


def test_a_vanishing_penalty_is_ols() -> None:
    import statsmodels.api as sm

    ledger, x, y, p = _ledger(n=60)
    out = attribute(ledger, "debiased_ridge", covariates=("prox",), penalty=1e-9, passes=1)
    frame = out.to_frame()
    ids = frame["fact_id"].to_list()
    z = sm.add_constant(np.column_stack([p, *[x[:, int(f[1:])] for f in ids]]).astype(float))
    ols = sm.OLS(y, z).fit()
    assert frame["estimate"].to_numpy() == pytest.approx(ols.params[2:], abs=1e-6)
    assert frame["std_error"].to_numpy() == pytest.approx(ols.bse[2:], rel=1e-5)


def test_gauss_jordan_inverse_and_singular_matrices() -> None:
    rng = np.random.default_rng(0)
    m = rng.normal(size=(6, 6))
    a = m @ m.T + 6 * np.eye(6)
    assert gauss_jordan_inverse(a) == pytest.approx(np.linalg.inv(a), abs=1e-12)
    assert gauss_jordan_inverse(np.ones((2, 2))) is None


def test_lessons_in_every_run_or_sharing_a_pattern_are_not_identifiable() -> None:
    rows = []
    for i in range(12):
        ids = ["always"] + (["twin_a", "twin_b"] if i % 2 else []) + (["solo"] if i % 3 else [])
        rows.append({"run_id": f"r{i}", "score": 0.5 + 0.01 * i, "fact_ids": ids})
    frame = attribute(Ledger.from_records(rows), "debiased_ridge").to_frame()
    ident = dict(zip(frame["fact_id"], frame["identifiable"], strict=True))
    assert ident == {"always": False, "twin_a": False, "twin_b": False, "solo": True}
    held = frame.filter(~pl.col("identifiable"))
    assert held["estimate"].null_count() == held.height


def test_a_second_pass_frees_a_clear_poison_so_its_neighbours_are_not_blamed() -> None:
    rng = np.random.default_rng(11)
    n = 30
    x = rng.random((n, 8)) < 0.5
    x[:, 1] = x[:, 0] & (rng.random(n) < 0.6)  # a harmless lesson that rides with the poison
    y = np.clip(0.55 - 0.25 * x[:, 0] + rng.normal(0, 0.04, n), 0, 1)
    ledger = Ledger.from_records(
        {
            "run_id": f"r{i}",
            "score": float(y[i]),
            "fact_ids": [f"L{j}" for j in range(8) if x[i, j]],
        }
        for i in range(n)
    )
    st = ridge_statistics(ledger)
    one, four = ridge_fit(st, passes=1), ridge_fit(st, passes=4)
    i0, i1 = st.fact_ids.index("L0"), st.fact_ids.index("L1")
    assert not four.penalized[i0]  # the poison is free in the last pass
    assert abs(four.estimate[i1]) < abs(one.estimate[i1])  # its companion less blamed
    assert four.estimate[i0] == pytest.approx(-0.25, abs=0.05)


def test_noise_prior_adds_its_runs_to_the_degrees_of_freedom() -> None:
    ledger, *_ = _ledger()
    st = ridge_statistics(ledger)
    plain = ridge_fit(st, passes=1)
    prior = ridge_fit(st, passes=1, noise_prior_sd=0.05, noise_prior_runs=10)
    assert prior.df == pytest.approx(plain.df + 10, abs=1e-9)
    with pytest.raises(ParameterError, match="noise_prior_sd is not set"):
        ridge_fit(st, noise_prior_runs=3)


# ---------------------------------------------------------------------- the gate
def test_gate_without_the_covariate_skips_it_and_holds_thin_lessons() -> None:
    ledger = Ledger.from_records(
        [
            {"run_id": "r1", "score": 0.5, "fact_ids": ["a"]},
            {"run_id": "r2", "score": 0.6, "fact_ids": ["a", "b"]},
            {"run_id": "r3", "score": 0.4, "fact_ids": []},
        ]
    )
    gate = LifecycleGate()  # covariates=("difficulty_proxy",): absent here
    assert gate.covariates_in(ledger) == ()
    report = gate.evaluate(ledger, ["a", "b", "zz"])
    assert report.to_frame()["why"].to_list() == ["min_trials", "min_trials", "min_trials"]


# ---------------------------------------------------------------------- presets
def test_recommended_returns_the_pair() -> None:
    policy, gate = PRESETS["recommended"].build(
        policy_options={"max_facts": 12, "candidate_slots": 6}, gate_options={"alpha": 0.01}
    )
    assert isinstance(gate, LifecycleGate)
    assert (policy.max_facts, policy.candidate_slots, gate.alpha) == (12, 6, 0.01)
    assert cogstats.recommended is recommended and "recommended" in PRESETS
    # the recommended preset is the lifecycle gate with its re-test design
    policy, gate = recommended(max_facts=12, candidate_slots=6, alpha=0.01)
    assert (type(policy).__name__, type(gate).__name__) == ("InProgressFirst", "LifecycleGate")
    assert (policy.max_facts, policy.candidate_slots, gate.alpha) == (12, 6, 0.01)
    assert (policy.retest_order, policy.retest_prob, policy.fill_empty) == (
        "likely_innocent",
        1.0,
        True,
    )
    with pytest.raises(ParameterError, match="preset must be one of"):
        get_preset("recomended")


def test_spec_preset_keeps_caps_and_cadence_and_round_trips() -> None:
    spec = load_spec("simulations/poison_crater.toml", preset="recommended")
    s = spec.scenario
    assert (s.preset, s.retrieval.policy, s.gate.type) == (
        "recommended",
        "in_progress_first",
        "recommended",
    )
    assert (s.retrieval.max_facts, s.retrieval.candidate_slots) == (12, 6)
    assert s.gate.policy["min_trials"] == 3  # cycgraph's min_trials = 2 was replaced
    assert Scenario.from_dict(s.to_dict()) == s
    tuned = s.with_values({"gate.alpha": 0.01, "retrieval.retest_window": 3})
    assert tuned.gate.policy["alpha"] == 0.01 and tuned.retrieval.retest_window == 3


def test_grid_axes_on_replaced_settings_are_refused_naming_the_axis(tmp_path: Any) -> None:
    from cogstats.sim.spec import spec_from_dict

    base = {
        "runs": 10,
        "lessons": {"listed": [{"id": "a", "effect": 0.1}]},
        "retrieval": {"policy": "ucb1", "epsilon": 0.1},
        "gate": {"type": "cycgraph", "decision_rule": "margin"},
        "policy": {"preset": "recommended", "gate": {"alpha": 0.01}},
    }
    ok = spec_from_dict({**base, "grid": {"gate.min_trials": [2, 4]}})
    assert [sc.gate.policy["min_trials"] for _, sc in ok.cells()] == [2, 4]
    assert all(sc.gate.policy["alpha"] == 0.01 for _, sc in ok.cells())
    with pytest.raises(SpecError, match="grid.gate.decision_rule.*preset 'recommended'"):
        spec_from_dict({**base, "grid": {"gate.decision_rule": ["margin"]}})
    with pytest.raises(SpecError, match="grid.retrieval.epsilon"):
        spec_from_dict({**base, "grid": {"retrieval.epsilon": [0.2]}})
    with pytest.raises(SpecError, match="preset must be one of"):
        spec_from_dict({**base, "policy": {"preset": "nope"}})
    with pytest.raises(SpecError, match="prompt cap"):
        spec_from_dict({**base, "policy": {"preset": "recommended", "retrieval": {"max_facts": 3}}})


def test_cli_simulate_and_sweep_take_the_preset(tmp_path: Any, capsys: Any) -> None:
    from cogstats.cli import main

    spec = tmp_path / "s.toml"
    spec.write_text(
        'runs = 12\nreplicates = 3\nseed = 1\n[[lessons.listed]]\nid = "a"\neffect = -0.3\n'
        '[gate]\ntype = "cycgraph"\n[grid]\n"gate.min_trials" = [2, 3]\n'
    )
    assert main(["simulate", str(spec), "--policy", "recommended", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "2 cell(s)" in out and "fast" in out
    store = tmp_path / "store"
    code = main(
        ["sweep", str(spec), "--policy", "recommended", "--out", str(store), "--no-progress"]
    )
    assert code == 0
    from cogstats.sweep import read_sweep

    table = read_sweep(store)
    assert table.height == 2
    assert main(["simulate", str(spec), "--policy", "nope"]) == 2
    assert "preset must be one of" in capsys.readouterr().err


# ---------------------------------------------------------------------- the engines
def test_other_covariates_run_in_the_reference_engine() -> None:
    s = (
        load_spec("simulations/poison_crater.toml")
        .scenario.with_preset("recommended")
        .with_values({"gate.covariates": ["true_difficulty"]})
    )
    assert "adjusts for 'difficulty_proxy' only" in str(fast_support(s))
    result = simulate(s, replicates=1, rng=1, keep_runs=False)
    assert result.engine == "reference"


def test_streaming_refuses_a_covariate_that_comes_and_goes() -> None:
    from cogstats._validation import LedgerError
    from cogstats.gates import StreamingGate

    sg = StreamingGate(LifecycleGate())
    sg.record("r1", 0.5, ["a"])  # no proxy: the gate adjusts for none
    with pytest.raises(LedgerError, match="in every run or in none"):
        sg.record("r2", 0.5, ["a"], difficulty_proxy=0.3)


def test_cli_uses_a_difficulty_column_or_hints_at_one(tmp_path: Any, capsys: Any) -> None:
    from cogstats.cli import main

    ledger, *_ = _ledger(n=60, seed=2)
    path = tmp_path / "runs.parquet"
    ledger.frame.rename({"prox": "difficulty"}).write_parquet(path)
    assert main(["gate", str(path), "--gate", "recommended", "--format", "json"]) == 0
    out = capsys.readouterr()
    assert "adjusting for its 'difficulty' column" in out.err
    used = json.loads(out.out)
    args = ["gate", str(path), "--gate", "recommended", "--covariates", "difficulty"]
    assert main([*args, "--format", "json"]) == 0
    out = capsys.readouterr()
    assert out.err == "" and json.loads(out.out) == used  # the same as naming it
    other = tmp_path / "other.parquet"
    ledger.frame.rename({"prox": "hardness"}).write_parquet(other)
    assert main(["gate", str(other), "--gate", "recommended", "--format", "json"]) == 0
    assert "--covariates hardness would use them" in capsys.readouterr().err
    # a named column the ledger lacks: exit 2 with "did you mean", as attribute does
    args = ["gate", str(other), "--gate", "recommended", "--covariates", "hardnes"]
    assert main(args) == 2
    assert "did you mean 'hardness'?" in capsys.readouterr().err


# ---------------------------------------------------------------------- the covariate rule
def _difficulty_records(column: str, n: int = 70, seed: int = 4) -> list[dict[str, Any]]:
    """Runs whose score moves with a difficulty column named ``column``, one harmful lesson."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        ids = [f"L{j}" for j in range(5) if rng.random() < 0.5]
        d = float(rng.normal(0, 0.1))
        y = float(np.clip(0.55 + d - 0.2 * ("L0" in ids) + rng.normal(0, 0.05), 0, 1))
        out.append({"run_id": f"r{i}", "score": y, "fact_ids": ids, column: d})
    return out


def test_the_gate_adjusts_for_a_difficulty_column_as_the_cli_does() -> None:
    """With the default covariates and no proxy, evaluate adjusts for `difficulty` (as
    naming it does) and says so in the settings; named covariates get no fallback; the
    simulator's true_difficulty is never chosen."""
    ledger = Ledger.from_records(_difficulty_records("difficulty"))
    gate = LifecycleGate()
    assert gate.covariates_in(ledger) == ("difficulty",)
    report = gate.evaluate(ledger)
    named = LifecycleGate(covariates=("difficulty",)).evaluate(ledger)
    assert report.to_frame().equals(named.to_frame())
    assert "adjusting for its 'difficulty' column" in report.settings["covariate_note"]
    assert "covariate_note" not in named.settings
    none = LifecycleGate(covariates=()).evaluate(ledger).to_frame()["estimate"]
    assert np.max(np.abs(report.to_frame()["estimate"].to_numpy() - none.to_numpy())) > 1e-3
    with pytest.raises(ParameterError, match=r"\['other'\] that the ledger lacks"):
        LifecycleGate(covariates=("other",)).evaluate(ledger)  # named: never silent
    truth = Ledger.from_records(_difficulty_records("true_difficulty"))
    assert gate.covariates_in(truth) == ()
    assert (
        gate.evaluate(truth)
        .to_frame()
        .equals(LifecycleGate(covariates=()).evaluate(truth).to_frame())
    )


@pytest.mark.parametrize("column", ["difficulty", "difficulty_proxy", "true_difficulty"])
def test_streaming_equals_batch_under_the_covariate_rule(column: str) -> None:
    """StreamingGate(LifecycleGate()) on runs with one difficulty-like column equals the
    batch gate on the ledger so far at every step, settings (the note) included."""
    from cogstats.gates import StreamingGate

    recs = _difficulty_records(column)
    gate = LifecycleGate()
    sg = StreamingGate(gate)
    for k, rec in enumerate(recs):
        sg.record(rec["run_id"], rec["score"], rec["fact_ids"], **{column: rec[column]})
        got = sg.report()
        want = gate.evaluate(Ledger.from_records(recs[: k + 1]))
        assert dict(got.settings) == dict(want.settings), k
        a, b = got.to_frame(), want.to_frame()
        for col in ("fact_id", "decision", "reason", "why", "trials", "baseline_runs"):
            assert a[col].to_list() == b[col].to_list(), (k, col)
        for col in ("estimate", "std_error", "t_stat", "df"):
            x, y = a[col].to_numpy(), b[col].to_numpy()
            assert np.allclose(x, y, rtol=1e-9, atol=1e-12, equal_nan=True), (k, col)
    assert "L0" in sg.report().evicted


def test_streaming_checks_only_the_chosen_covariates() -> None:
    """A `difficulty` column in some runs is ignored while the proxy is chosen (the batch
    gate ignores it too); the proxy arriving after runs with `difficulty` only would give
    the chosen column nulls and is refused before it is recorded."""
    from cogstats._validation import LedgerError
    from cogstats.gates import StreamingGate

    sg = StreamingGate(LifecycleGate())
    sg.record("r1", 0.5, ["a"], difficulty_proxy=0.1, difficulty=0.3)
    sg.record("r2", 0.6, ["b"], difficulty_proxy=0.2)
    sg.record("r3", 0.4, ["a", "b"], difficulty_proxy=0.4)
    ledger = sg.to_ledger()
    assert LifecycleGate().covariates_in(ledger) == ("difficulty_proxy",)
    assert sg.report().to_frame().equals(LifecycleGate().evaluate(ledger).to_frame())
    fallback = StreamingGate(LifecycleGate())
    fallback.record("r1", 0.5, ["a"], difficulty=0.1)
    with pytest.raises(LedgerError, match="every run or in none") as err:
        fallback.record("r2", 0.6, ["a"], difficulty=0.2, difficulty_proxy=0.3)
    assert err.value.field == "difficulty_proxy" and len(fallback) == 1
