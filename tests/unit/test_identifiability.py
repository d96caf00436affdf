"""The identifiability check: no-contrast lessons, duplicate patterns, (near-)collinear groups.

References: cycgraph's recorded poisoning demo (data/cycgraph_poison_demo_runs.csv,
where the genuine L4, L5 were injected in exactly the runs that carried the poisons P1-P3),
statsmodels' ``variance_inflation_factor`` (VIFs to 1e-8 relative: both are the diagonal of
the same inverse correlation matrix, computed by SVD here and by OLS R^2 there), and numpy's
``matrix_rank`` for the exact linear dependencies the check reports.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from statsmodels.stats.outliers_influence import variance_inflation_factor

from cogstats import Ledger
from cogstats._validation import ParameterError
from cogstats.estimators import attribute, check_identifiability
from cogstats.estimators.identifiability import covariate_design, lesson_identifiability

POISONS = ("P1", "P2", "P3")


def _rows(frame: pl.DataFrame) -> dict[str, dict]:
    return {r["fact_id"]: r for r in frame.iter_rows(named=True)}


@pytest.fixture(scope="module")
def poison_ledger(shared_dir: Path) -> Ledger:
    """The recorded runs of cycgraph's poisoning demo (run_id = str(run))."""
    runs = pl.read_csv(shared_dir / "data" / "cycgraph_poison_demo_runs.csv")
    return Ledger.from_records(
        {
            "run_id": str(r["run"]),
            "score": float(r["score"]),
            "fact_ids": (r["lessons_in_prompt"] or "").split(),
        }
        for r in runs.iter_rows(named=True)
        if r["recorded"] == "yes"
    )


def test_poison_demo_aliasing(poison_ledger: Ledger) -> None:
    """L4, L5 share the poisons' pattern exactly; L8, L9 share theirs; L3 is identifiable.
    L1, L2, L6, L7 are not identifiable either: with the intercept, L4 + L1 - L6 + L7 = 1
    on the 10 recorded runs (checked with numpy's matrix_rank)."""
    frame = check_identifiability(poison_ledger)
    rows = _rows(frame)
    assert len(poison_ledger) == 10 and set(rows) == set(poison_ledger.fact_ids)
    for f in ("L4", "L5", *POISONS):
        assert rows[f]["identifiable"] is False
        assert rows[f]["reason"] == "duplicate inclusion pattern"
        assert {"L4", "L5", *POISONS} - {f} <= set(rows[f]["aliased_with"])
        assert math.isinf(rows[f]["vif"])
    assert rows["L8"]["aliased_with"] == ["L9"] and rows["L9"]["aliased_with"] == ["L8"]
    assert rows["L3"]["identifiable"] is True and rows["L3"]["aliased_with"] == []
    design = poison_ledger.design(["L1", "L4", "L6", "L7"]).dense()
    with_intercept = np.column_stack([np.ones(10), design])
    assert np.linalg.matrix_rank(with_intercept) == 4  # one exact dependency among 5
    np.testing.assert_array_equal(design[:, 1] + design[:, 0] - design[:, 2] + design[:, 3], 1)
    for f in ("L1", "L2", "L6", "L7"):
        assert rows[f]["identifiable"] is False
        assert {"L6", "L7"} - {f} <= set(rows[f]["aliased_with"])
    assert rows["L6"]["reason"] == "exactly collinear"
    assert {"L1", "L2", "L4", "L5", *POISONS} <= set(rows["L6"]["aliased_with"])


@pytest.mark.parametrize("method", ["ols", "fraclogit"])
def test_poison_demo_regression_lists_every_lesson(poison_ledger: Ledger, method: str) -> None:
    """Regressions keep every lesson in the frame; only L3 is estimated.  For ols, with
    L3 the only column left, its coefficient is the difference of means with and without
    L3 (closed form)."""
    frame = attribute(poison_ledger, method=method).to_frame()
    rows = _rows(frame)
    assert set(rows) == set(poison_ledger.fact_ids)
    for f, row in rows.items():
        if f == "L3":
            assert row["identifiable"] is True and row["estimate"] is not None
        else:
            assert row["identifiable"] is False and row["estimate"] is None
            assert row["std_error"] is None and row["pvalue"] is None
    assert set(rows["L4"]["aliased_with"]) >= {"L5", *POISONS}
    if method == "ols":
        x = poison_ledger.design(["L3"]).dense()[:, 0] > 0
        y = poison_ledger.scores
        assert rows["L3"]["estimate"] == pytest.approx(y[x].mean() - y[~x].mean(), rel=1e-12)


def test_poison_demo_ridge_reports_aliasing(poison_ledger: Ledger) -> None:
    """ridge carries the columns too but estimates aliased lessons: shrinkage splits the
    joint effect of identical columns equally (the minimum-norm solution)."""
    ridge = _rows(attribute(poison_ledger, method="ridge", penalty=1.0).to_frame())
    assert ridge["L4"]["identifiable"] is False and ridge["L4"]["estimate"] is not None
    for f in POISONS:
        assert ridge[f]["estimate"] == pytest.approx(ridge["L4"]["estimate"], rel=1e-10)


def _synthetic(n: int = 6000) -> tuple[np.ndarray, list[str]]:
    """4 independent lessons; B duplicates A; C, D disjoint, E = C or D except 1 run."""
    rng = np.random.default_rng(17)
    base = (rng.random((n, 4)) < 0.5).astype(float)
    a = base[:, 3]
    c = (rng.random(n) < 0.3).astype(float)
    d = (1 - c) * (rng.random(n) < 0.4)
    e = c + d
    e[0] = 1 - e[0]  # one discordant run: nearly, not exactly, collinear
    x = np.column_stack([base, a, c, d, e])
    return x, ["I1", "I2", "I3", "A", "B", "C", "D", "E"]


def test_synthetic_duplicates_and_near_collinear_triple() -> None:
    """Exact duplicates (A, B) and a near-collinear triple (E = C + D except in 1 of 6000
    runs: VIF about n p (1 - p) / 1 ~ 1e3 and above) are flagged with their partners;
    the independent lessons are identifiable with VIF ~ 1; every finite VIF equals
    statsmodels' variance_inflation_factor on the design without the duplicate."""
    x, ids = _synthetic()
    frame = lesson_identifiability(x, ids)
    rows = _rows(frame)
    assert rows["A"]["aliased_with"] == ["B"] and rows["B"]["aliased_with"] == ["A"]
    assert rows["A"]["reason"] == "duplicate inclusion pattern"
    for f in ("C", "D", "E"):
        assert rows[f]["identifiable"] is False
        assert rows[f]["reason"] == "near collinear"
        assert sorted(rows[f]["aliased_with"]) == sorted({"C", "D", "E"} - {f})
        assert rows[f]["vif"] > 1e3
    for f in ("I1", "I2", "I3"):
        assert rows[f]["identifiable"] is True and rows[f]["vif"] < 1.01
    keep = [0, 1, 2, 3, 5, 6, 7]  # A (column 3) stands for A and B
    exog = np.column_stack([np.ones(len(x)), x[:, keep]])
    want = [variance_inflation_factor(exog, k + 1) for k in range(len(keep))]
    got = [rows[ids[j]]["vif"] for j in keep]
    got[3] = lesson_identifiability(x[:, keep], [ids[j] for j in keep])["vif"][3]
    np.testing.assert_allclose(got, want, rtol=1e-8)


def test_threshold_moves_the_near_collinear_verdict() -> None:
    """The same triple with a threshold above its VIFs is identifiable (exact duplicates
    never are)."""
    x, ids = _synthetic()
    vifs = lesson_identifiability(x, ids)["vif"].to_numpy()
    loose = _rows(
        lesson_identifiability(x, ids, vif_threshold=2 * np.nanmax(vifs[np.isfinite(vifs)]))
    )
    assert all(loose[f]["identifiable"] for f in ("C", "D", "E"))
    assert not loose["A"]["identifiable"]


def test_exact_collinearity_and_constants() -> None:
    """E = C + D exactly (rank deficiency, VIF inf); a lesson in every run and one in no
    run have no contrast (VIF null) and are aliased with nothing else."""
    x, ids = _synthetic(200)
    x[0, 7] = x[0, 5] + x[0, 6]  # undo the discordant run
    x = np.column_stack([x, np.ones(200), np.zeros(200)])
    rows = _rows(lesson_identifiability(x, [*ids, "ALL", "NONE"]))
    for f in ("C", "D", "E"):
        assert rows[f]["reason"] == "exactly collinear" and math.isinf(rows[f]["vif"])
        assert sorted(rows[f]["aliased_with"]) == sorted({"C", "D", "E"} - {f})
    assert rows["ALL"]["reason"] == "no contrast: in every run" and rows["ALL"]["vif"] is None
    assert rows["NONE"]["reason"] == "no contrast: in no run" and rows["NONE"]["aliased_with"] == []
    assert all(rows[f]["identifiable"] for f in ("I1", "I2", "I3"))


def _family_ledger() -> Ledger:
    """A lesson injected in exactly the runs of family 'b' (confounded with a covariate)."""
    rng = np.random.default_rng(5)
    fam = rng.integers(0, 3, 90)
    free = rng.random(90) < 0.5
    return Ledger.from_records(
        {
            "run_id": f"r{i}",
            "score": float(rng.random()),
            "fact_ids": (["FAM_B"] if fam[i] == 1 else []) + (["FREE"] if free[i] else []),
            "family": "abc"[fam[i]],
        }
        for i in range(90)
    )


def test_lesson_confounded_with_a_covariate() -> None:
    """Without covariates FAM_B is identifiable; with the family dummies it is exactly
    collinear with them and ``aliased_covariates`` names the covariate."""
    ledger = _family_ledger()
    alone = _rows(check_identifiability(ledger))
    assert alone["FAM_B"]["identifiable"] is True
    adjusted = _rows(check_identifiability(ledger, covariates=("family",)))
    assert adjusted["FAM_B"]["identifiable"] is False
    assert adjusted["FAM_B"]["aliased_covariates"] == ["family"]
    assert adjusted["FAM_B"]["aliased_with"] == []
    assert adjusted["FREE"]["identifiable"] is True
    result = attribute(ledger, method="ols", covariates=("family",))
    assert result.row("FAM_B")["estimate"] is None and result.row("FREE")["estimate"] is not None


def test_fact_ids_subset_and_absent_lesson() -> None:
    ledger = _family_ledger()
    frame = check_identifiability(ledger, ["FREE", "GHOST"])
    assert frame["fact_id"].to_list() == ["FREE", "GHOST"]
    assert frame["identifiable"].to_list() == [True, False]
    assert frame["reason"][1] == "no contrast: in no run"


def test_covariate_design_coding() -> None:
    """Numbers linearly, strings/booleans as dummies off the first sorted level, constant
    columns left out; a null raises naming the covariate and the row."""
    ledger = Ledger.from_records(
        [
            {"run_id": "r1", "score": 0.1, "fact_ids": [], "n": 2, "s": "y", "b": True, "k": 1},
            {"run_id": "r2", "score": 0.2, "fact_ids": [], "n": 5, "s": "x", "b": False, "k": 1},
            {"run_id": "r3", "score": 0.3, "fact_ids": [], "n": 1, "s": "z", "b": True, "k": 1},
        ]
    )
    design = covariate_design(ledger, ("n", "s", "b", "k"))
    assert design.columns == ("n", "s[y]", "s[z]", "b[True]")
    assert design.sources == ("n", "s", "s", "b")
    assert design.reference_levels == {"s": "x", "b": False}
    np.testing.assert_array_equal(design.matrix, [[2, 1, 0, 1], [5, 0, 0, 0], [1, 0, 1, 1]])
    holey = Ledger.from_records(
        [
            {"run_id": "a", "score": 0.1, "fact_ids": [], "n": 1.0},
            {"run_id": "b", "score": 0.1, "fact_ids": [], "n": None},
        ]
    )
    with pytest.raises(ParameterError, match=r"'n' is null in row 2 \(run_id 'b'\)"):
        covariate_design(holey, ("n",))
    with pytest.raises(ParameterError, match=r"covariates: 'm' is not a covariate .*\['n'\]"):
        covariate_design(holey, ("m",))


def test_parameter_errors() -> None:
    ledger = _family_ledger()
    with pytest.raises(ParameterError, match="vif_threshold must be > 1.0"):
        check_identifiability(ledger, vif_threshold=0.5)
    with pytest.raises(ParameterError, match="tol must be > 0.0"):
        check_identifiability(ledger, tol=0.0)
    with pytest.raises(ParameterError, match="fact_ids has 1 labels for 2 lesson columns"):
        lesson_identifiability(np.zeros((3, 2)), ["a"])


@pytest.mark.parametrize("case", ["random", "duplicates", "exact", "with_controls"])
def test_cross_product_path_agrees_with_the_svd(monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    """Designs above ``DENSE_LIMIT`` entries go through the centred cross-product matrix
    (Cholesky, then an eigendecomposition): the same flags, reasons and aliases as the
    direct SVD, VIFs to 1e-6 relative, 1e-4 next to an exact dependency (forming X'X
    squares the condition number: the exactly singular direction's eigenvalue is rounding
    noise, which reaches the other VIFs)."""
    from cogstats.estimators import identifiability as ident

    rng = np.random.default_rng(3)
    x = (rng.random((300, 12)) < 0.3).astype(float)
    controls = None
    if case == "duplicates":
        x[:, 5] = x[:, 4]
    elif case == "exact":
        a = rng.random(300) < 0.3
        b = ~a & (rng.random(300) < 0.3)
        x[:, 0], x[:, 1], x[:, 2] = a, b, a | b  # x2 = x0 + x1
    elif case == "with_controls":
        controls = np.column_stack([rng.normal(size=300), x[:, 3] + x[:, 7]])  # aliases 3, 7
    ids = [f"L{j}" for j in range(12)]
    dense = lesson_identifiability(x, ids, controls=controls)
    monkeypatch.setattr(ident, "DENSE_LIMIT", 0)
    gram = lesson_identifiability(x, ids, controls=controls)
    for name in ("identifiable", "reason", "aliased_with", "aliased_covariates"):
        assert gram[name].to_list() == dense[name].to_list(), name
    v_d, v_g = dense["vif"].to_numpy(), gram["vif"].to_numpy()
    finite = np.isfinite(v_d)
    assert np.array_equal(finite, np.isfinite(v_g))
    rtol = 1e-4 if case in ("exact", "with_controls") else 1e-6
    np.testing.assert_allclose(v_g[finite], v_d[finite], rtol=rtol)
    if case == "random":
        assert gram["identifiable"].all()  # the Cholesky shortcut
    else:
        assert not gram["identifiable"].all()
