"""EvidenceGate: decisions against scipy/statsmodels references and the sequential modes."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from cogstats import Ledger
from cogstats._validation import ParameterError
from cogstats.estimators import confidence_sequence, spending_boundaries
from cogstats.gates import EVIDENCE_DECISION_COLUMNS, EvidenceGate, GateReport


def _ledger(effects: list[float], n: int = 120, seed: int = 1, sd: float = 0.1) -> Ledger:
    rng = np.random.default_rng(seed)
    x = rng.random((n, len(effects))) < 0.5
    y = np.clip(0.5 + x @ np.asarray(effects) + rng.normal(0, sd, n), 0, 1)
    ids = [f"L{j}" for j in range(len(effects))]
    return Ledger.from_records(
        {
            "run_id": f"r{i}",
            "score": float(y[i]),
            "fact_ids": [ids[j] for j in range(len(ids)) if x[i, j]],
        }
        for i in range(n)
    )


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"method": "lfit"}, "method must be one of"),
        ({"options": {"confidence_level": 0.9}}, "options must not set confidence_level"),
        ({"options": {"covariate": ["x"]}, "method": "ols"}, "unknown option 'covariate'"),
        ({"alpha": 0.6}, "alpha must be < 0.5"),
        ({"alpha": 0.0}, "alpha must be > 0"),
        ({"sequential": "anytime"}, "sequential='anytime' needs an anytime-valid method"),
        ({"sequential": "group"}, "plans its looks up to max_trials"),
        ({"sequential": "group", "max_trials": 10, "multiplicity": "bh"}, "multiplicity must be"),
        ({"multiplicity": "fdr"}, "multiplicity must be one of"),
        ({"min_trials": 5, "max_trials": 4}, "max_trials must be >= min_trials"),
    ],
)
def test_validation(kwargs: dict, words: str) -> None:
    with pytest.raises(ParameterError) as err:
        EvidenceGate(**kwargs)
    assert words in str(err.value)


def test_fixed_lift_matches_scipy_one_sided_welch() -> None:
    ledger = _ledger([0.06, -0.08, 0.0], seed=3)
    gate = EvidenceGate(method="lift", alpha=0.05, promote_margin=0.01, evict_margin=0.02)
    report = gate.evaluate(ledger)
    assert isinstance(report, GateReport)
    assert tuple(report.to_frame().columns) == EVIDENCE_DECISION_COLUMNS
    y = ledger.scores
    for f in ledger.fact_ids:
        on = ledger.design().column(f)
        up = stats.ttest_ind(y[on] - 0.01, y[~on], equal_var=False, alternative="greater")
        down = stats.ttest_ind(y[on] + 0.02, y[~on], equal_var=False, alternative="less")
        row = report.decision(f)
        assert row["pvalue_promote"] == pytest.approx(up.pvalue, abs=1e-10)
        assert row["pvalue_evict"] == pytest.approx(down.pvalue, abs=1e-10)
        want = "promote" if up.pvalue <= 0.05 else ("evict" if down.pvalue <= 0.05 else "hold")
        assert row["decision"] == want
        why = {"promote": "promote_evidence", "evict": "harm_evidence"}
        assert row["why"] == why.get(want, "insufficient_evidence")
    assert report.promoted == ("L0",) and report.evicted == ("L1",)


def test_bh_matches_statsmodels() -> None:
    ledger = _ledger([0.03, 0.02, -0.03, 0.0, 0.01, -0.02], n=200, seed=5)
    report = EvidenceGate(method="ols", alpha=0.1, multiplicity="bh").evaluate(ledger)
    frame = report.to_frame()
    up = multipletests(frame["pvalue_promote"].to_numpy(), alpha=0.1, method="fdr_bh")[0]
    down = multipletests(frame["pvalue_evict"].to_numpy(), alpha=0.1, method="fdr_bh")[0]
    got = frame["decision"].to_list()
    want = ["promote" if u else "evict" if d else "hold" for u, d in zip(up, down, strict=True)]
    assert got == want
    assert "promote" in got and "evict" in got


def test_bonferroni_uses_the_adjusted_interval() -> None:
    ledger = _ledger([0.04, 0.0, 0.0, 0.0], n=150, seed=8)
    plain = EvidenceGate(method="ols", alpha=0.05).evaluate(ledger).to_frame()
    bonf = EvidenceGate(method="ols", alpha=0.05, multiplicity="bonferroni").evaluate(ledger)
    # the Bonferroni interval is wider: one-sided alpha / 4 per side
    width = (bonf.to_frame()["ci_high"] - bonf.to_frame()["ci_low"]).to_numpy()
    assert np.all(width > (plain["ci_high"] - plain["ci_low"]).to_numpy())
    for row in bonf.to_frame().iter_rows(named=True):
        assert (row["decision"] == "promote") == (row["pvalue_promote"] <= 0.05 / 4)


def test_group_sequential_against_spending_boundaries() -> None:
    ledger = _ledger([0.05, -0.05], n=60, seed=11)
    gate = EvidenceGate(method="lift", alpha=0.025, sequential="group", min_trials=5, max_trials=40)
    report = gate.evaluate(ledger)
    bounds = spending_boundaries(
        [n / 40 for n in range(5, 41)], 0.025, "obrien_fleming", sides=1
    ).z_boundaries
    for row in report.to_frame().iter_rows(named=True):
        n = min(row["trials"], 40)
        assert row["boundary"] == pytest.approx(bounds[n - 5])
        z_up = row["estimate"] / row["std_error"]
        assert (row["decision"] == "promote") == (z_up >= row["boundary"])


def test_group_sequential_with_hsd_spending() -> None:
    gate = EvidenceGate(
        method="lift",
        alpha=0.025,
        sequential="group",
        min_trials=5,
        max_trials=20,
        spending="hsd",
        spending_options={"gamma": -2.0},
    )
    want = spending_boundaries(
        [n / 20 for n in range(5, 21)], 0.025, "hsd", sides=1, spending_options={"gamma": -2.0}
    ).z_boundaries
    assert list(gate.boundaries().values()) == pytest.approx(list(want))
    assert gate.to_policy()["spending_options"] == {"gamma": -2.0}
    assert EvidenceGate(**gate.to_policy()) == gate
    with pytest.raises(ParameterError, match="gamma must be"):
        EvidenceGate(spending="hsd", spending_options={"gamma": "steep"})
    with pytest.raises(ParameterError, match="unknown option 'gama'"):
        EvidenceGate(spending="hsd", spending_options={"gama": 1})
    with pytest.raises(ParameterError, match="unknown spending function 'haybittle'"):
        EvidenceGate(spending="haybittle")


def test_anytime_confseq_matches_the_sequence() -> None:
    ledger = _ledger([0.1, 0.0], n=150, seed=2)
    gate = EvidenceGate(method="confseq", alpha=0.025, sequential="anytime")
    report = gate.evaluate(ledger)
    for f in ledger.fact_ids:
        seq = confidence_sequence(ledger, f, confidence_level=0.95)
        last = seq.row(-1, named=True)
        row = report.decision(f)
        assert row["ci_low"] == pytest.approx(last["ci_low"])
        assert (row["decision"] == "promote") == (last["ci_low"] > 0)
    assert report.promoted == ("L0",)


def test_unidentifiable_lessons_are_held() -> None:
    # twin lessons always injected together: neither can be judged
    rng = np.random.default_rng(0)
    recs = []
    for i in range(80):
        on = rng.random() < 0.5
        other = rng.random() < 0.5
        ids = (["twin_a", "twin_b"] if on else []) + (["solo"] if other else [])
        recs.append(
            {
                "run_id": str(i),
                "score": float(np.clip(0.5 - 0.3 * on + 0.2 * other + rng.normal(0, 0.05), 0, 1)),
                "fact_ids": ids,
            }
        )
    ledger = Ledger.from_records(recs)
    report = EvidenceGate(method="ols").evaluate(ledger)
    twin = report.decision("twin_a")
    assert (twin["decision"], twin["reason"], twin["why"]) == ("hold", None, "not_identifiable")
    assert report.held == ("twin_a", "twin_b")
    assert report.promoted == ("solo",)
    lift_report = EvidenceGate(method="lift").evaluate(ledger)
    assert lift_report.held == ("twin_a", "twin_b")
    judged = EvidenceGate(method="lift", hold_unidentifiable=False).evaluate(ledger)
    assert set(judged.evicted) == {"twin_a", "twin_b"}


def test_stopping_rules_and_min_trials() -> None:
    ledger = _ledger([0.0, 0.0], n=40, seed=4)
    report = EvidenceGate(method="lift", max_trials=10, alpha=0.001).evaluate(ledger)
    for row in report.to_frame().iter_rows(named=True):
        assert (row["decision"], row["reason"], row["why"]) == (
            "evict",
            "eval-gate:no_lift",
            "max_trials",
        )
    held = EvidenceGate(method="lift", min_trials=100).evaluate(ledger, ["L0", "unseen"])
    assert held.held == ("L0", "unseen")
    assert held.decision("L0")["estimate"] is None
    assert held.to_frame()["why"].to_list() == ["min_trials", "min_trials"]


def test_fixed_gate_single_look_is_calibrated() -> None:
    """One look per null ledger: the promote rate is alpha within Monte Carlo error.

    400 ledgers x 3 null lessons; tolerance 3.5 * sqrt(a (1 - a) / 1200) around a = 0.05.
    """
    hits = 0
    total = 0
    for seed in range(400):
        report = EvidenceGate(
            method="welch",
            alpha=0.05,
            options={"noise_floor_sd": 0.0, "promote_margin": 0.0, "evict_margin": 0.0},
        ).evaluate(_ledger([0.0, 0.0, 0.0], n=60, seed=1000 + seed))
        hits += len(report.promoted)
        total += 3
    rate = hits / total
    assert abs(rate - 0.05) <= 3.5 * np.sqrt(0.05 * 0.95 / total)
