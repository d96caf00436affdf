"""Each gate's rule is written once: plain functions of the gate's folder's rule module.

The batch gate and StreamingGate call them on numpy arrays of candidates (vectorised);
the simulator's kernel pieces compile the very same function objects with numba and call
them lesson by lesson.  Checked here: the pieces compile the gates' functions (no copy of
their own), the gates' modules import no numba, and each function gives the same outcome
per lesson on arrays (numpy) as compiled on scalars (numba), on random inputs with ties
and edge cases.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cogstats import _codes as C
from cogstats import kernel as _kernel_common
from cogstats import numerics
from cogstats.estimators import debiased_ridge
from cogstats.gates import LifecycleGate, rule_options
from cogstats.gates.cycgraph import kernel as _kernel_cycgraph
from cogstats.gates.cycgraph import rule as cycgraph
from cogstats.gates.evidence import kernel as _kernel_evidence
from cogstats.gates.evidence import rule as evidence
from cogstats.gates.recommended import gate as lifecycle
from cogstats.gates.recommended import kernel as _kernel_lifecycle
from cogstats.gates.recommended import rule as lifecycle_rule

#: (kernel piece, the names it compiles, the module that owns them)
PIECES = [
    (
        _kernel_cycgraph,
        ("margin_outcome", "inference_outcome", "spending_factor", "spent_pvalue"),
        cycgraph,
    ),
    (_kernel_evidence, ("evidence_outcome", "group_sides", "side_alpha"), evidence),
    (_kernel_lifecycle, ("lesson_inference", "suspect_penalties"), debiased_ridge),
    (_kernel_lifecycle, ("not_identifiable", "duplicate_groups"), debiased_ridge),
    (
        _kernel_lifecycle,
        ("rule_evidence", "lifecycle_bounds", "lifecycle_outcome", "crater_t", "lifecycle_look"),
        lifecycle_rule,
    ),
]


@pytest.mark.parametrize(("piece", "names", "owner"), PIECES)
def test_the_kernel_compiles_the_gates_own_functions(piece: Any, names: Any, owner: Any) -> None:
    for name in names:
        compiled = getattr(piece, name)
        assert compiled.py_func is getattr(owner, name), (piece.__name__, name)
        source = str(Path(inspect.getsourcefile(owner) or "").resolve())
        assert source in _kernel_common.compiled_sources(piece.__file__)
    assert _kernel_common.welch_evidence.py_func is numerics.welch_evidence
    assert _kernel_cycgraph.bh_reject.py_func.__module__ == "cogstats.estimators.multiplicity"


@pytest.mark.parametrize(
    "owner",
    [cycgraph, evidence, debiased_ridge, lifecycle, lifecycle_rule],
)
def test_the_rules_modules_import_no_numba(owner: Any) -> None:
    tree = ast.parse(Path(inspect.getsourcefile(owner) or "").read_text(encoding="utf-8"))
    names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    names += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert not [m for m in names if m.split(".")[0] == "numba"]


def _random(rng: np.random.Generator, k: int) -> dict[str, np.ndarray]:
    n = rng.integers(0, 12, k)
    return {
        "n": n,
        "n_b": rng.integers(0, 12, k),
        "lift": np.round(rng.normal(0, 0.1, k), 2),
        "up": rng.random(k) < 0.3,
        "down": rng.random(k) < 0.3,
        "p": np.round(rng.random(k), 2),
        "t": np.where(rng.random(k) < 0.1, np.nan, np.round(rng.normal(0, 3, k), 1)),
        "info": np.where(rng.random(k) < 0.1, np.nan, rng.uniform(-1, 30, k)),
    }


def _same(batch: Any, piece: Any, args: list[Any], scalar: list[bool]) -> None:
    """``batch(*args)`` on arrays equals ``piece`` compiled, lesson by lesson."""
    want = batch(*args)
    k = len(next(a for a, s in zip(args, scalar, strict=True) if not s))
    for i in range(k):
        one = [a if s else a[i] for a, s in zip(args, scalar, strict=True)]
        got = piece(*one)
        if isinstance(want, tuple):
            for w, g in zip(want, got, strict=True):
                np.testing.assert_equal(np.asarray(w)[i], g)
        else:
            np.testing.assert_equal(np.asarray(want)[i], got)


def test_cycgraph_rules_on_arrays_equal_the_compiled_rules() -> None:
    rng = np.random.default_rng(1)
    r = _random(rng, 400)
    for mt in (0, 6):
        _same(
            cycgraph.margin_outcome,
            _kernel_cycgraph.margin_outcome,
            [r["n"], r["n_b"], r["lift"], 3, mt, 0.05, 0.05],
            [False, False, False, True, True, True, True],
        )
        _same(
            cycgraph.inference_outcome,
            _kernel_cycgraph.inference_outcome,
            [r["n"], r["n_b"], r["up"], r["down"], 2, mt, 9],
            [False, False, False, False, True, True, True],
        )
    _same(
        cycgraph.spending_factor, _kernel_cycgraph.spending_factor, [r["n_b"], True], [False, True]
    )
    _same(cycgraph.spent_pvalue, _kernel_cycgraph.spent_pvalue, [r["p"], 4.0], [False, True])
    # the doubling bracket is cycgraph's frexp bracket exactly
    nb = np.arange(0, 5000)
    expect = np.ldexp(1.0, np.frexp(np.maximum(nb, 1).astype(float))[1] - 1)
    np.testing.assert_array_equal(cycgraph.spending_factor(nb, True), expect)


def test_evidence_and_ridge_rules_on_arrays_equal_the_compiled_rules() -> None:
    rng = np.random.default_rng(2)
    r = _random(rng, 400)
    _same(
        evidence.evidence_outcome,
        _kernel_evidence.evidence_outcome,
        [r["n"], r["n_b"], r["up"], r["down"], 3, 8, 10],
        [False, False, False, False, True, True, True],
    )
    se = np.where(rng.random(400) < 0.1, 0.0, rng.uniform(0.01, 0.2, 400))
    with np.errstate(invalid="ignore", divide="ignore"):
        _same(
            evidence.group_sides,
            _kernel_evidence.group_sides,
            [r["lift"], se, 1.5, 0.01, 0.02],
            [False, False, True, True, True],
        )
    k = 200
    mjj = np.where(rng.random(k) < 0.1, 0.0, rng.uniform(0.001, 0.5, k))
    pen = np.where(rng.random(k) < 0.3, 0.0, 40.0)
    args = [
        rng.normal(0, 0.1, k),
        mjj,
        pen,
        rng.normal(0, 0.01, k),
        rng.uniform(0, 0.01, k),
        2.0,
        np.full(k, 3.0)[0],
        30,
        0.0,
        0.0,
    ]
    with np.errstate(invalid="ignore", divide="ignore"):
        _same(
            debiased_ridge.lesson_inference,
            _kernel_lifecycle.lesson_inference,
            args,
            [False, False, False, False, False, True, True, True, True, True],
        )
    with np.errstate(invalid="ignore"):
        _same(
            debiased_ridge.suspect_penalties,
            _kernel_lifecycle.suspect_penalties,
            [r["up"], r["t"], r["info"], r["n"].astype(float), 2.5, 0.3, 40.0],
            [False, False, False, False, True, True, True],
        )


def test_lifecycle_rule_on_arrays_equals_the_compiled_rule() -> None:
    """The recommended gate's rule (gates/recommended/rule.py) on arrays = compiled, lesson
    by lesson: every outcome and why code taken, NaNs and ties on every comparison."""
    rng = np.random.default_rng(3)
    k = 3000

    def some_nan(v: np.ndarray, share: float = 0.08) -> np.ndarray:
        return np.where(rng.random(k) < share, np.nan, v)

    t = some_nan(np.round(rng.normal(0.0, 3.0, k), 1))
    df = some_nan(rng.choice([0.5, 1.0, 3.0, 8.0, 20.0], k))
    se = some_nan(np.where(rng.random(k) < 0.05, 0.0, rng.uniform(0.005, 0.08, k)))
    info = some_nan(rng.choice([0.0, 2.0, 5.0, 6.0, 9.0], k))
    o = rule_options(
        LifecycleGate(margin_min_df=8.0, margin_min_information=2.0, margin_max_information=6.0)
    )
    _same(
        lifecycle_rule.rule_evidence,
        _kernel_lifecycle.rule_evidence,
        [t, df, se, info, o],
        [False, False, False, False, True],
    )
    _, _, finite, tier1 = lifecycle_rule.rule_evidence(t, df, se, info, o)
    est = np.where(np.isfinite(t * se), t * se, np.nan)
    sigma = rng.uniform(0.02, 0.1, k)
    tails = [np.where(rng.random(k) < 0.1, np.nan, rng.uniform(-3, 3, k)) for _ in range(3)]
    p = [np.round(rng.random(k), 3) for _ in range(2)]
    with np.errstate(invalid="ignore"):
        _same(
            lifecycle_rule.lifecycle_bounds,
            _kernel_lifecycle.lifecycle_bounds,
            [finite, tier1, est, se, sigma, 1.0, *tails, *p],
            [False] * 5 + [True] + [False] * 5,
        )
        bounds = lifecycle_rule.lifecycle_bounds(finite, tier1, est, se, sigma, 1.0, *tails, *p)
    statuses = [C.STATUS_CANDIDATE, C.STATUS_ADMITTED, C.STATUS_VERIFIED, C.STATUS_SUSPENDED]
    status = np.array([*statuses, C.STATUS_EVICTED])[rng.integers(0, 5, k)]
    trials = rng.integers(0, 10, k)
    ident = rng.random(k) < 0.85
    crater_p = np.where(rng.random(k) < 0.5, np.nan, np.round(rng.uniform(0, 0.1, k), 2))
    level = np.where(rng.random(k) < 0.4, 0.0, np.round(rng.uniform(0, 0.8, k), 1))
    ev = lifecycle_rule.Evidence(status, trials, ident, finite, t, info, crater_p, level, *bounds)
    o = rule_options(
        LifecycleGate(
            min_trials=3,
            suspect_t=2.0,
            release_t=1.0,
            release_min_trials=2,
            crater_level=0.05,
            crater_max_trials=2,
            admit_margin=0.05,
            futility_margin=0.5,
            futility_min_information=5.0,
        )
    )
    with np.errstate(invalid="ignore"):
        out, why = lifecycle_rule.lifecycle_outcome(ev, o)
    for i in range(k):  # compiled, lesson by lesson
        one = lifecycle_rule.Evidence(*(np.asarray(v)[i] for v in ev))
        assert _kernel_lifecycle.lifecycle_outcome(one, o) == (out[i], why[i]), i
    assert set(np.asarray(why).tolist()) == set(range(len(lifecycle_rule.LIFECYCLE_WHY)))
    # the crater test's t and the look
    n = rng.integers(0, 8, k).astype(float)
    runs = 8
    sw = np.round(rng.uniform(0, 1, k) * n, 2)
    ssw = np.where(rng.random(k) < 0.1, sw * sw / np.maximum(n, 1), sw * 0.8)
    with np.errstate(invalid="ignore", divide="ignore"):
        _same(
            lifecycle_rule.crater_t,
            _kernel_lifecycle.crater_t,
            [n, runs, sw, 4.0, ssw, 3.0],
            [False, True, False, True, False, True],
        )
        _same(
            lifecycle_rule.crater_t,
            _kernel_lifecycle.crater_t,
            [n, 2, sw, 4.0, ssw, 3.0],
            [False, True, False, True, False, True],
        )
    info2 = np.concatenate([info, [np.inf, -np.inf, 25.0, 1e9]])
    _same(
        lifecycle_rule.lifecycle_look,
        _kernel_lifecycle.lifecycle_look,
        [info2, 25.0, 20],
        [False, True, True],
    )


def test_duplicate_groups_compiled_equal_the_estimators() -> None:
    """The estimator's identifiability check and duplicate groups = compiled, on Gram
    matrices of random 0/1 designs with repeated, empty and full columns."""
    rng = np.random.default_rng(4)
    seen_groups = False
    for _ in range(200):
        runs = int(rng.integers(1, 12))
        k = int(rng.integers(1, 9))
        x = (rng.random((runs, k)) < rng.uniform(0.1, 0.9)).astype(float)
        for j in range(1, k):
            if rng.random() < 0.3:
                x[:, j] = x[:, int(rng.integers(0, j))]
        z = np.column_stack([np.ones(runs), rng.normal(size=runs), x])
        gram = np.ascontiguousarray(z.T @ z)
        for fn in ("not_identifiable", "duplicate_groups"):
            want = getattr(debiased_ridge, fn)(gram, 2, runs)
            got = getattr(_kernel_lifecycle, fn)(gram, 2, runs)
            assert want.tolist() == got.tolist(), (fn, gram)
        rep = debiased_ridge.duplicate_groups(gram, 2, runs)
        seen_groups |= bool((rep != np.arange(k)).any())
    assert seen_groups


def test_the_check_can_fail() -> None:
    """A rule that differs from its compiled copy in one lesson is caught."""

    def off_by_one(*args: Any) -> Any:
        out = np.asarray(cycgraph.margin_outcome(*args)).copy()
        out[3] = 9
        return out

    rng = np.random.default_rng(1)
    r = _random(rng, 10)
    with pytest.raises(AssertionError):
        _same(
            off_by_one,
            _kernel_cycgraph.margin_outcome,
            [r["n"], r["n_b"], r["lift"], 3, 0, 0.05, 0.05],
            [False, False, False, True, True, True, True],
        )
