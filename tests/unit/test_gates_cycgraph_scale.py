"""The cycgraph gate from additive statistics decides exactly as the row-by-row original.

Oracle: ``tests/oracle/v0.py``, the previous implementation (run-order baselines rescanned
for every lesson, one ``welch_lift`` call per candidate, statsmodels' Benjamini-Hochberg).
Decisions and reasons must be identical; trials and baseline runs equal; the evidence
numbers agree to 1e-9 (they come from sums in another order: last bits differ).  Scores
are drawn from a grid of multiples of 0.05 as well as continuously, so that exact margin
ties (``0.55 - 0.50 >= 0.05``) occur.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cogstats import Ledger
from cogstats.gates import CycgraphGate
from cogstats.stats import groups as lesson_groups
from tests.oracle.v0 import old_cycgraph_evaluate, old_stats

EVIDENCE = ("lift", "se", "df", "p_promote", "p_evict")


def _assert_same(new: pl.DataFrame, old: pl.DataFrame) -> None:
    for name in ("fact_id", "decision", "reason", "trials", "baseline_runs", "alpha_bracket"):
        assert new[name].to_list() == old[name].to_list(), name
    for name in EVIDENCE:
        for a, b in zip(new[name].to_list(), old[name].to_list(), strict=True):
            assert (a is None) == (b is None), name
            if a is not None and b is not None:
                assert math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12), (name, a, b)


@st.composite
def ledgers(draw: st.DrawFn) -> Ledger:
    n_runs = draw(st.integers(1, 60))
    n_facts = draw(st.integers(1, 8))
    grid = draw(st.booleans())
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    if grid:
        scores = rng.integers(0, 21, n_runs) * 0.05  # ties and exact margins
        scores = np.minimum(scores, 1.0)
    else:
        scores = rng.random(n_runs)
    p_in = draw(st.sampled_from([0.15, 0.3, 0.6]))
    records = []
    for i in range(n_runs):
        ids = [f"L{j}" for j in range(n_facts) if rng.random() < p_in]
        if ids and rng.random() < 0.1:
            ids.append(ids[0])  # a duplicate id counts once
        records.append({"run_id": f"r{i}", "score": float(scores[i]), "fact_ids": ids})
    return Ledger.from_records(records)


policies = st.fixed_dictionaries(
    {
        "decision_rule": st.sampled_from(["margin", "inference"]),
        "min_trials": st.integers(1, 4),
        "promote_margin": st.sampled_from([0.0, 0.05, 0.1]),
        "evict_margin": st.sampled_from([0.0, 0.05, 0.1]),
        "noise_floor_sd": st.sampled_from([0.0, 0.1]),
        "multiple_comparison": st.sampled_from(["bh", "none"]),
        "sequential_control": st.sampled_from(["doubling", "none"]),
        "max_baseline_runs": st.sampled_from([None, 5, 20]),
        "promote_confidence": st.sampled_from([0.6, 0.9]),
    }
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ledger=ledgers(), policy=policies, max_extra=st.sampled_from([None, 0, 3]))
def test_decisions_identical_to_the_row_by_row_original(
    ledger: Ledger, policy: dict, max_extra: int | None
) -> None:
    if max_extra is not None:
        policy = {**policy, "max_trials": policy["min_trials"] + max_extra}
    gate = CycgraphGate(**policy)
    candidates = [*ledger.fact_ids, "never-seen"]
    _assert_same(
        gate.evaluate(ledger, candidates).to_frame(),
        old_cycgraph_evaluate(gate, ledger, candidates),
    )


def _tie_ledger() -> tuple[Ledger, float]:
    """A ledger where the additive baseline mean differs from the run-order mean in the
    last bits while the run-order lift equals the margin exactly (found by search)."""
    rng = np.random.default_rng(7)
    for _ in range(20000):
        n = int(rng.integers(6, 30))
        scores = rng.integers(4, 14, n) * 0.05
        member = rng.random(n) < 0.3
        if member.sum() < 1 or 2 * (n - member.sum()) <= n:
            continue
        records = [
            {"run_id": f"r{i}", "score": float(scores[i]), "fact_ids": ["a"] if member[i] else []}
            for i in range(n)
        ]
        ledger = Ledger.from_records(records)
        (_, _, m_a, _, _, m_b, _) = old_stats(ledger, ["a"])[0]
        g = ledger._group_arrays(["a"])
        lift = m_a - m_b
        if g.mean_b[0] != m_b and not g.exact[0] and lift > 0:
            margin = lift  # the run-order lift sits exactly on the margin
            if (m_a - g.mean_b[0] >= margin) != (lift >= margin):
                return ledger, margin
    raise AssertionError("no tie found")  # pragma: no cover


def test_exact_ties_are_recomputed_in_run_order() -> None:
    ledger, margin = _tie_ledger()
    g = ledger._group_arrays(["a"])
    # the additive statistic alone would decide differently ...
    lift_tol, _, _ = lesson_groups.uncertainty(ledger._fact_arrays(), g)
    assert abs((g.mean_a[0] - g.mean_b[0]) - margin) <= lift_tol[0]
    gate = CycgraphGate(decision_rule="margin", min_trials=1, promote_margin=margin)
    new = gate.evaluate(ledger, ["a"]).to_frame()
    old = old_cycgraph_evaluate(gate, ledger, ["a"])
    # ... the gate recomputes the tie in run order and promotes, as cycgraph does
    assert new["decision"].to_list() == old["decision"].to_list() == ["promote"]


@pytest.mark.parametrize("rule", ["margin", "inference"])
def test_large_random_ledger_matches(rule: str) -> None:
    rng = np.random.default_rng(3)
    n, p, k = 3000, 120, 6
    effects = rng.normal(0, 0.05, p)
    records = []
    for i in range(n):
        ids = rng.choice(p, k, replace=False)
        score = float(np.clip(0.6 + effects[ids].sum() + rng.normal(0, 0.1), 0, 1))
        records.append({"run_id": f"r{i}", "score": score, "fact_ids": [f"L{j}" for j in ids]})
    ledger = Ledger.from_records(records)
    gate = CycgraphGate(decision_rule=rule, min_trials=3, max_baseline_runs=2900)
    new = gate.evaluate(ledger).to_frame()
    _assert_same(new, old_cycgraph_evaluate(gate, ledger))
    assert new["decision"].n_unique() > 1  # the comparison covers real decisions


def test_fact_arrays_in_blocks_equal_the_whole_array_formula(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Sums added a block at a time (``np.add.at``) are bit for bit the whole-array ones.

    Blocks of 7 pairs (the default is 262,144) cut runs and lessons at every boundary;
    the reference is the former whole-array computation (``np.bincount`` of ``y[rows]``
    and of ``(y[rows] - means[cols])**2``).
    """
    from cogstats.stats import groups

    rng = np.random.default_rng(11)
    lists = [
        [f"L{j}" for j in rng.choice(40, int(rng.integers(0, 9)), replace=True)] for _ in range(500)
    ]
    ids, rows, cols, pos = groups.facts_index(lists)
    # the index: first appearance order, the first listing of a lesson in a run kept
    assert ids == tuple(dict.fromkeys(f for fs in lists for f in fs))
    pairs = [(i, pos[f]) for i, fs in enumerate(lists) for f in dict.fromkeys(fs)]
    assert list(zip(rows.tolist(), cols.tolist(), strict=True)) == pairs
    y = rng.random(len(lists))
    monkeypatch.setattr(groups, "_BLOCK", 7)
    fa = groups.fact_arrays(y, rows, cols, len(ids))
    yr = y[rows]
    sums = np.bincount(cols, weights=yr, minlength=len(ids))
    trials = np.bincount(cols, minlength=len(ids))
    means = np.where(trials > 0, sums / np.maximum(trials, 1), 0.0)
    dev = yr - means[cols]
    ss = np.bincount(cols, weights=dev * dev, minlength=len(ids))
    assert fa.sums.tobytes() == sums.tobytes()
    assert fa.means.tobytes() == means.tobytes()
    assert fa.ss.tobytes() == ss.tobytes()


def _near_reference(
    gate: CycgraphGate, g: lesson_groups.GroupArrays, d: dict, lift_tol, var_a_tol, var_b_tol
) -> np.ndarray:
    """The inference rule's near-threshold set as first written: the t density on every row.

    Source: cogstats/gates/cycgraph.py before the density was evaluated on the rows a
    density-free bound (1/sqrt(2 pi) < 0.5) leaves only; the two must give the same set.
    """
    from scipy import special

    tested = d["tested"]
    floor2 = gate.noise_floor_sd**2
    n = np.maximum(g.n_a, 1).astype(float)
    n_b = np.maximum(g.n_b, 1).astype(float)
    var_a = np.nan_to_num(g.var_a, nan=0.0)
    var_b = np.nan_to_num(g.var_b, nan=0.0)
    dsa = np.where(var_a + var_a_tol > floor2, var_a_tol, 0.0) / n
    dsb = np.where(var_b + var_b_tol > floor2, var_b_tol, 0.0) / n_b
    se = np.sqrt(d["sa"] + d["sb"])
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        dse = 2.0 * (dsa + dsb) / (2.0 * se)
        rel = 4.0 * (dsa + dsb) / (d["sa"] + d["sb"])
        tols = []
        for t in (d["t_up"], d["t_down"]):
            t = np.nan_to_num(np.abs(t), nan=np.inf)
            dt = (lift_tol + t * dse) / se
            x = np.maximum(t - dt, 0.0)
            df = d["df"]
            finite = np.isfinite(df) & (df < 1e12)
            nu = np.where(finite, df, 1.0)
            log_c = (
                special.gammaln((nu + 1) / 2) - special.gammaln(nu / 2) - 0.5 * np.log(nu * np.pi)
            )
            dens = np.where(
                finite,
                np.exp(log_c - (nu + 1) / 2 * np.log1p(x * x / nu)),
                np.exp(-0.5 * x * x) / np.sqrt(2 * np.pi),
            )
            tols.append(2.0 * d["factor"] * (dens * dt + rel))
        tol_up, tol_down = (np.where(np.isfinite(v), v, np.inf) for v in tols)
    zero_se_possible = (var_a <= var_a_tol) & (var_b <= var_b_tol) & (floor2 == 0.0)
    m = int(tested.sum())
    near = zero_se_possible & tested
    for p, tol, q in (
        (d["up_p"], tol_up, 1.0 - gate.promote_confidence),
        (d["down_p"], tol_down, 1.0 - gate.evict_confidence),
    ):
        with np.errstate(invalid="ignore"):
            if gate.multiple_comparison == "bh":
                rank = np.clip(np.rint(p * m / q), 1, m)
                gap = np.abs(p - rank / m * q)
            else:
                gap = np.abs(p - q)
            near |= tested & (gap <= tol)
    near &= ~g.exact | (var_a_tol > 0)
    return np.flatnonzero(near)


@pytest.mark.parametrize("scale", [1.0, 1e8, 1e11, 1e13])
@pytest.mark.parametrize("multiple_comparison", ["bh", "none"])
@pytest.mark.parametrize("noise_floor_sd", [0.0, 0.1])
def test_near_threshold_set_equals_the_full_density_formula(
    scale: float, multiple_comparison: str, noise_floor_sd: float
) -> None:
    """Tolerances blown up by ``scale`` put many rows near a threshold: same set both ways."""
    from cogstats.gates.cycgraph import _fill_p, _p_exceeds
    from cogstats.stats import StreamingStats

    rng = np.random.default_rng(int(scale) % 1000 + len(multiple_comparison))
    gate = CycgraphGate(
        min_trials=2, multiple_comparison=multiple_comparison, noise_floor_sd=noise_floor_sd
    )
    found = 0
    for rep in range(20):
        stats = StreamingStats()
        n_lessons = int(rng.integers(5, 40))
        effects = rng.normal(0, 0.15, n_lessons)
        for i in range(int(rng.integers(10, 300))):
            chosen = rng.choice(n_lessons, size=int(rng.integers(0, 5)), replace=False)
            score = float(np.clip(0.5 + effects[chosen].sum() + rng.normal(0, 0.1), 0, 1))
            if rep % 3 == 0:
                score = round(score * 20) / 20  # ties and zero variances
            stats.add_run(f"r{i}", score, [f"L{j}" for j in chosen])
        g, lt, vat, vbt = stats.group_arrays(stats.order())
        d = gate._decide_core(g)
        full = {k: v.copy() for k, v in d.items()}
        _fill_p(full)  # every deferred p-value computed: the reference reads them all
        assert not full["lazy"].any()
        # ... equal to one eager call on every row (elementwise: the same floats)
        pp = _p_exceeds(d["lift"], d["se"], d["df"], 0.05)
        np.testing.assert_array_equal(full["p_promote"], pp)
        np.testing.assert_array_equal(
            full["p_evict"], 1.0 - _p_exceeds(d["lift"], d["se"], d["df"], -0.05)
        )
        tols = (lt * scale, vat * scale, vbt * scale)
        got = gate._near_thresholds(g, d, *tols)
        want = _near_reference(gate, g, full, *tols)
        assert got.tolist() == want.tolist()
        found += want.size
        # deferred p-values are the eager ones, bit for bit, once filled
        _fill_p(d)
        for name in ("p_promote", "p_evict", "up_p", "down_p"):
            np.testing.assert_array_equal(d[name], full[name])
    if scale >= 1e11:
        assert found > 0  # the comparison saw near rows
