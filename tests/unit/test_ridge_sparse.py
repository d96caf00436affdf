"""The debiased ridge on a sparse Gram matrix equals the dense one (wide ledgers).

References: each pass's quantities (``b``, ``diag M``, ``M K b``, ``diag M K M``, the
trace) against numpy's dense inverse; the whole fit and the recommended gate's report on
the dense path (LAPACK, or the exact Gauss-Jordan path at few lessons), to 1e-9 relative
to the largest value, with the same decisions, at 200 and 2,000 lessons, on ledgers with
lessons that share a pattern, a lesson in every run and lessons kept from start to end.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from scipy import sparse

from cogstats import Ledger
from cogstats.estimators import debiased_ridge as dr
from cogstats.estimators._ridge_sparse import equal_patterns, layout, sparse_pass
from cogstats.gates import LifecycleGate
from cogstats.gates.recommended import LifecycleStatistics

REL = 1e-9


def _arrival_ledger(
    n_runs: int, n_lessons: int, *, pool: int = 40, seed: int = 7, twins: int = 3, everyone=True
) -> Ledger:
    """Lessons arriving over time (about 6 a run), effects -0.1/+0.05/0, three kinds of
    special lesson: ``twins`` pairs that always run together (one pattern), ``ALL`` in
    every run, and two kept from their arrival to the end."""
    rng = np.random.default_rng(seed)
    gap = n_runs / n_lessons
    arrive = np.minimum((np.arange(n_lessons) * gap).astype(np.int64), n_runs - 1)
    life = np.maximum(2, rng.exponential(pool * gap, n_lessons).astype(np.int64))
    life[[n_lessons // 5, n_lessons // 2]] = n_runs
    end = np.minimum(arrive + life, n_runs)
    x = np.zeros((n_runs, n_lessons), dtype=bool)
    for j in range(n_lessons):
        x[arrive[j] : end[j], j] = rng.random(end[j] - arrive[j]) < 6.0 / pool
        x[arrive[j], j] = True
    for t in range(twins):  # lesson 3t + 1 runs exactly where lesson 3t does
        x[:, 3 * t + 1] = x[:, 3 * t]
    effects = np.where(rng.random(n_lessons) < 0.05, -0.1, 0.0)
    effects[rng.random(n_lessons) < 0.05] = 0.05
    difficulty = rng.normal(0, 1, n_runs)
    y = np.clip(0.6 + x @ effects + 0.05 * difficulty + rng.normal(0, 0.08, n_runs), 0, 1)
    names = np.array([f"L{j}" for j in range(n_lessons)])
    facts = [["ALL"] * everyone + names[row].tolist() for row in x]
    frame = pl.DataFrame(
        {
            "run_id": [f"r{i}" for i in range(n_runs)],
            "score": y,
            "fact_ids": facts,
            "difficulty_proxy": difficulty,
        }
    )
    return Ledger.from_frame(frame)


@pytest.fixture(scope="module")
def small() -> Ledger:
    return _arrival_ledger(1500, 200)


@pytest.fixture(scope="module")
def wide() -> Ledger:
    return _arrival_ledger(8000, 2000, pool=60)


def _close(a: np.ndarray, b: np.ndarray, rel: float = REL) -> None:
    """Same NaN pattern; elsewhere within ``rel`` of the largest magnitude."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    np.testing.assert_array_equal(np.isfinite(a), np.isfinite(b))
    ok = np.isfinite(a)
    if ok.any():
        scale = float(np.max(np.abs(b[ok]))) or 1.0
        assert float(np.max(np.abs(a[ok] - b[ok]))) <= rel * scale


# ---------------------------------------------------------------------- one pass
@pytest.mark.parametrize(("n_runs", "n_lessons", "pool"), [(2000, 400, 15), (4000, 1200, 25)])
def test_sparse_pass_equals_the_dense_inverse(n_runs: int, n_lessons: int, pool: int) -> None:
    ledger = _arrival_ledger(n_runs, n_lessons, pool=pool, twins=0, everyone=False)
    st = dr.ridge_statistics(ledger, ("difficulty_proxy",), sparse=False)
    f, p = st.n_fixed, st.gram.shape[0]
    pen = np.full(p - f, 40.0)
    pen[::17] = 0.0  # unpenalized lessons, as after a pass that found suspects
    g = sparse.csr_array(st.gram)
    lay = layout(g, f)
    assert lay.bounds.shape[0] > 3  # several band blocks
    assert lay.border.shape[0] > f  # the lessons kept to the end went to the border
    out = sparse_pass(g, f, pen, st.zty, lay, 1e-12)
    assert out is not None
    kvec = np.r_[np.zeros(f), pen]
    m = np.linalg.inv(st.gram + np.diag(kvec))
    b = m @ st.zty
    ref = (b, np.diag(m), m @ (kvec * b), (m * m) @ kvec)
    for got, want in zip(out[:4], ref, strict=True):
        _close(got, want)
    assert out[4] == pytest.approx(float(np.sum(m * st.gram.T)), rel=REL)


def test_layout_covers_every_column_once(wide: Ledger) -> None:
    st = dr.ridge_statistics(wide, ("difficulty_proxy",), sparse=True)
    lay = layout(st.gram, st.n_fixed)
    cols = np.sort(np.concatenate([lay.border, lay.band]))
    np.testing.assert_array_equal(cols, np.arange(st.gram.shape[0]))
    assert lay.bounds[0] == 0 and lay.bounds[-1] == lay.band.shape[0]
    assert np.all(np.diff(lay.bounds) > 0)
    # the band is block tridiagonal in these blocks: nothing beyond the next block
    b = sparse.csr_array(st.gram[lay.band, :][:, lay.band]).tocoo()
    block = np.searchsorted(lay.bounds, np.arange(lay.band.shape[0]), side="right") - 1
    assert int(np.max(np.abs(block[b.row] - block[b.col]))) <= 1


def test_singular_statistics_give_the_dense_answer() -> None:
    # two covariates, one twice the other: singular whatever the penalty
    rng = np.random.default_rng(3)
    x = rng.random((60, 5)) < 0.4
    c = rng.normal(size=60)
    frame = pl.DataFrame(
        {
            "run_id": [f"r{i}" for i in range(60)],
            "score": rng.random(60),
            "fact_ids": [[f"L{j}" for j in range(5) if x[i, j]] for i in range(60)],
            "c": c,
            "twice": 2.0 * c,
        }
    )
    ledger = Ledger.from_frame(frame)
    fits = [
        dr.ridge_fit(dr.ridge_statistics(ledger, ("c", "twice"), sparse=s)) for s in (False, True)
    ]
    for name in ("estimate", "std_error", "t", "info", "df", "sigma"):
        assert not np.isfinite(getattr(fits[0], name)).any()
        assert not np.isfinite(getattr(fits[1], name)).any()
    np.testing.assert_array_equal(fits[0].identifiable, fits[1].identifiable)


# ---------------------------------------------------------------------- patterns
@pytest.mark.parametrize("which", ["small", "wide"])
def test_pattern_groups_equal_the_dense_functions(
    which: str, request: pytest.FixtureRequest
) -> None:
    ledger = request.getfixturevalue(which)
    dense = dr.ridge_statistics(ledger, ("difficulty_proxy",), sparse=False)
    wide = dr.ridge_statistics(ledger, ("difficulty_proxy",), sparse=True)
    np.testing.assert_array_equal(wide.gram.toarray(), dense.gram)
    f, n = dense.n_fixed, dense.runs
    rep = dr.duplicate_groups(dense.gram, f, n)
    bad = dr.not_identifiable(dense.gram, f, n)
    np.testing.assert_array_equal(dr._groups(wide), rep)
    np.testing.assert_array_equal(dr._not_identifiable(wide), bad)
    assert (rep != np.arange(rep.shape[0])).sum() == 3  # the three twins
    assert bad[list(dense.fact_ids).index("ALL")]
    i, j, excluded = equal_patterns(wide.gram, f, n)
    assert i.shape == j.shape == (3,) and excluded.sum() == 1


# ---------------------------------------------------------------------- the fit
@pytest.mark.parametrize("which", ["small", "wide"])
@pytest.mark.parametrize("group", [False, True])
def test_sparse_fit_equals_the_dense_fit(
    which: str, group: bool, request: pytest.FixtureRequest
) -> None:
    ledger = request.getfixturevalue(which)
    fits = [
        dr.ridge_fit(
            dr.ridge_statistics(ledger, ("difficulty_proxy",), sparse=s),
            passes=4,
            group_duplicates=group,
            helpful_min_info=25.0,
        )
        for s in (False, True)
    ]
    dense, wide = fits
    for name in ("estimate", "std_error", "t", "info", "df", "sigma"):
        _close(getattr(wide, name), getattr(dense, name))
    np.testing.assert_array_equal(wide.identifiable, dense.identifiable)
    np.testing.assert_array_equal(wide.penalized, dense.penalized)
    assert (~dense.penalized).sum() > 0  # the later passes freed some lessons
    assert (~dense.identifiable).sum() == 7  # twins, ALL


def test_statistics_turn_sparse_above_the_threshold(small: Ledger, monkeypatch) -> None:
    assert not sparse.issparse(dr.ridge_statistics(small).gram)
    monkeypatch.setattr(dr, "SPARSE_LESSONS", 100)
    st = dr.ridge_statistics(small)
    assert sparse.issparse(st.gram)
    np.testing.assert_array_equal(st.trials, dr.ridge_statistics(small, sparse=False).trials)


# ---------------------------------------------------------------------- the gate
@pytest.mark.parametrize("which", ["small", "wide"])
def test_gate_decisions_unchanged_on_the_sparse_path(
    which: str, request: pytest.FixtureRequest
) -> None:
    ledger = request.getfixturevalue(which)
    gate = LifecycleGate()
    cov = gate.covariates_in(ledger)
    reports = [
        gate.judge(LifecycleStatistics.from_ledger(ledger, cov, sparse=s)).to_frame()
        for s in (False, True)
    ]
    dense, wide = reports
    assert wide["fact_id"].to_list() == dense["fact_id"].to_list()
    assert wide["decision"].to_list() == dense["decision"].to_list()
    assert wide["why"].to_list() == dense["why"].to_list()
    assert wide["identifiable"].to_list() == dense["identifiable"].to_list()
    assert len(set(dense["decision"].to_list())) >= 3
    for col in ("estimate", "std_error", "t_stat", "df", "sigma", "info", "ci_low", "ci_high"):
        _close(wide[col].fill_null(np.nan).to_numpy(), dense[col].fill_null(np.nan).to_numpy())
    if which == "wide":  # the default path at 2,000 lessons is the sparse one
        assert gate.evaluate(ledger).to_frame()["decision"].to_list() == dense["decision"].to_list()


def test_sparse_statistics_update_merge_and_round_trip(small: Ledger) -> None:
    gate = LifecycleGate()
    cov = gate.covariates_in(small)
    recs = small.to_records()
    half = len(recs) // 2
    first = Ledger.from_records(recs[:half])
    second = Ledger.from_records(recs[half:])
    parts = [LifecycleStatistics.from_ledger(x, cov, sparse=True) for x in (first, second)]
    merged = parts[0].merge(parts[1])
    full = LifecycleStatistics.from_ledger(small, cov, sparse=False)
    assert sparse.issparse(merged.ridge.gram)
    np.testing.assert_allclose(merged.ridge.gram.toarray(), full.ridge.gram, rtol=1e-12)
    grown = parts[0]
    for rec in recs[half : half + 50]:
        grown = grown.add_run(rec["run_id"], rec["score"], rec["fact_ids"], rec)
    ref = LifecycleStatistics.from_ledger(Ledger.from_records(recs[: half + 50]), cov)
    assert sparse.issparse(grown.ridge.gram) and grown.ridge.fact_ids == ref.ridge.fact_ids
    np.testing.assert_allclose(grown.ridge.gram.toarray(), ref.ridge.gram, rtol=1e-12, atol=1e-9)
    back = LifecycleStatistics.from_arrays(merged.to_arrays())
    assert sparse.issparse(back.ridge.gram)
    a = gate.judge(back).to_frame()
    assert a["decision"].to_list() == gate.judge(full).to_frame()["decision"].to_list()
