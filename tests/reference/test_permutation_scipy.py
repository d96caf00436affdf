"""The ``permutation`` method against scipy.stats.permutation_test and exact enumeration.

Monte Carlo tolerance.  Our p-value and scipy's are two independent estimates of the same
exact permutation p-value ``p`` from ``B`` random permutations each, both with the
``(1 + count) / (B + 1)`` convention (scipy's ``adjustment = 1`` for random resampling).
For a one-sided or absolute-value p-value the count is Binomial(B, p), so each estimate
has standard error ``sqrt(p (1 - p) / B)`` and their difference ``sqrt(2 p (1 - p) / B)``;
scipy's two-sided value is ``2 * min(one-sided)``, twice a binomial proportion of
``p / 2``, with standard error ``2 sqrt((p/2)(1 - p/2) / B)`` (difference: times
``sqrt(2)``).  We allow 4 standard errors of the difference (two-sided normal tail 6e-5
per comparison, under 0.5% over the ~60 comparisons in this file), with ``p`` estimated by
the mean of the two estimates and floored at ``1 / B``, plus ``2 / (B + 1)`` for the
discreteness of the counts.

Ties.  scipy treats null values within ``100 * eps * |observed|`` of the observed value as
ties.  With scores on a grid the mean differences of tied subsets, summed in different
orders, differ by up to a few ``1e-16`` in absolute terms, more than that tolerance when
the observed value is small, so scipy drops some exact ties (7% of its null distribution
for lesson G2 of the grid ledger).  cogstats counts values within ``1e-9 * max|score|`` as
ties.  To compare like with like, scipy's p-value is recounted from its own
``null_distribution`` with cogstats' tie rule; for the ledgers with continuous scores the
recount equals scipy's reported p-value exactly (asserted), so only the tie rule differs.

Against an exact p-value (enumeration) only one estimate varies:
``4 sqrt(p (1 - p) / B) + 1 / (B + 1)`` (the ``+1`` convention biases the estimate up by
at most ``1 / (B + 1)``).  Seeds are fixed.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest
from scipy import stats

from cogstats import Ledger, attribute
from tests.helpers import random_inclusion_ledger

B = 9999


def _diff(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(x, axis=axis) - np.mean(y, axis=axis)


def _abs_diff(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.abs(_diff(x, y, axis=axis))


def _recount(ref: Any, alternative: str, tie: float) -> float:
    """scipy's p-value recomputed from its null distribution with cogstats' tie tolerance."""
    null, observed = ref.null_distribution, float(ref.statistic)
    greater = (1 + np.count_nonzero(null >= observed - tie)) / (null.size + 1)
    less = (1 + np.count_nonzero(null <= observed + tie)) / (null.size + 1)
    if alternative == "greater":
        return float(greater)
    if alternative == "less":
        return float(less)
    return float(min(1.0, 2 * min(greater, less)))


def _tolerance_two(p1: float, p2: float, equal_tail: bool) -> float:
    p = max((p1 + p2) / 2, 1.0 / B)
    if equal_tail:
        half = min(p / 2, 0.5)
        se = 2 * math.sqrt(half * (1 - half) / B)
    else:
        se = math.sqrt(min(p, 1.0) * (1 - min(p, 1.0)) / B)
    return 4 * math.sqrt(2) * se + 2 / (B + 1)


def _grid_ledger(seed: int) -> Ledger:
    """Scores on a 0.05 grid (many exact ties) with lessons at different rates."""
    gen = np.random.default_rng(seed)
    n = 90
    rates = (0.2, 0.5, 0.7)
    x = gen.random((n, 3)) < np.asarray(rates)
    score = np.clip(np.round((0.5 + 0.08 * x[:, 0] + gen.normal(0, 0.15, n)) * 20) / 20, 0, 1)
    return Ledger.from_records(
        {
            "run_id": f"g{i}",
            "score": float(score[i]),
            "fact_ids": [f"G{j}" for j in range(3) if x[i, j]],
        }
        for i in range(n)
    )


LEDGERS = {
    "effects": lambda: random_inclusion_ledger(
        np.random.default_rng(101), effects=(0.06, 0.0, -0.04, 0.02)
    ),
    "small_unbalanced": lambda: random_inclusion_ledger(
        np.random.default_rng(202), n_runs=40, p=0.25, effects=(0.1, 0.0, 0.0)
    ),
    "ties": lambda: _grid_ledger(303),
}


@pytest.mark.parametrize("name", sorted(LEDGERS))
def test_pvalues_match_scipy_permutation_test(name: str) -> None:
    """Every p-value definition against scipy's, lesson by lesson (tolerance: module doc).

    ``pvalue_greater``/``pvalue_less``: scipy with the difference in means and that
    alternative.  ``pvalue_equal_tail``: scipy's two-sided.  ``pvalue`` (two-sided on the
    centred statistic; the centre is 0 without strata): scipy with ``|difference|`` and
    ``alternative="greater"``, which is the same definition.
    """
    ledger = LEDGERS[name]()
    result = attribute(ledger, method="permutation", rng=7, permutations=B)
    design = ledger.design()
    y = ledger.scores
    for k, fact in enumerate(design.fact_ids):
        x = design.dense()[:, k] > 0
        row = result.row(fact)
        assert row["null_mean"] == pytest.approx(0.0, abs=1e-12)  # closed form: 0 unstratified
        assert row["estimate"] == pytest.approx(y[x].mean() - y[~x].mean(), abs=1e-12)
        samples = (y[x], y[~x])
        cases = [
            ("pvalue_greater", _diff, "greater", False),
            ("pvalue_less", _diff, "less", False),
            ("pvalue_equal_tail", _diff, "two-sided", True),
            ("pvalue", _abs_diff, "greater", False),
        ]
        for column, statistic, alternative, equal_tail in cases:
            ref = stats.permutation_test(
                samples,
                statistic,
                permutation_type="independent",
                vectorized=True,
                n_resamples=B,
                alternative=alternative,
                rng=np.random.default_rng([k, len(column)]),
            )
            theirs = _recount(ref, alternative, 1e-9 * float(np.max(np.abs(y))))
            if name != "ties":
                assert theirs == float(ref.pvalue)
            ours = row[column]
            tol = _tolerance_two(ours, theirs, equal_tail)
            assert abs(ours - theirs) <= tol, (name, fact, column, ours, theirs)


def test_alternative_selects_the_pvalue_column() -> None:
    ledger = LEDGERS["effects"]()
    for alternative, column in (("greater", "pvalue_greater"), ("less", "pvalue_less")):
        frame = attribute(
            ledger, method="permutation", rng=3, permutations=999, alternative=alternative
        ).to_frame()
        assert frame["pvalue"].to_list() == frame[column].to_list()


def _strata_ledger(numeric: bool) -> Ledger:
    """18 runs in 3 strata of 6 with stratum-shifted scores; lesson A in 3, 2, 4 runs."""
    gen = np.random.default_rng(404)
    stratum = np.repeat(np.arange(3), 6)
    score = 0.3 + 0.15 * stratum + gen.uniform(0, 0.1, 18)
    a = np.zeros(18, dtype=bool)
    for s, m in zip(range(3), (3, 2, 4), strict=True):
        a[gen.choice(np.flatnonzero(stratum == s), m, replace=False)] = True
    c = gen.random(18) < 0.5
    records = []
    for i in range(18):
        label: float | str = (
            float(stratum[i] + gen.uniform(0, 0.5)) if numeric else "abc"[stratum[i]]
        )
        facts = (["A"] if a[i] else []) + (["C"] if c[i] else [])
        records.append({"run_id": f"s{i}", "score": float(score[i]), "fact_ids": facts, "s": label})
    return Ledger.from_records(records)


def _exact_within_strata(y: np.ndarray, x: np.ndarray, stratum: np.ndarray) -> np.ndarray:
    """The statistic under every within-strata reassignment of the lesson (all equally likely).

    Permuting scores within strata and keeping the inclusion fixed gives the same null
    distribution as choosing, independently in each stratum, which of its runs carry the
    lesson (as many as observed), uniformly among the subsets.
    """
    per_stratum = []
    for s in np.unique(stratum):
        runs = np.flatnonzero(stratum == s)
        m = int(x[runs].sum())
        per_stratum.append([tuple(c) for c in itertools.combinations(runs.tolist(), m)])
    values = []
    n1 = int(x.sum())
    n0 = len(y) - n1
    total = y.sum()
    for combo in itertools.product(*per_stratum):
        members = [i for group in combo for i in group]
        s_with = y[members].sum()
        values.append(s_with / n1 - (total - s_with) / n0)
    return np.asarray(values)


def test_stratified_pvalues_match_exact_enumeration() -> None:
    """Stratified p-values, null mean and sd against the exact within-strata distribution.

    3 strata of 6 runs; lesson A is in 3, 2 and 4 of them: C(6,3) C(6,2) C(6,4) = 4500
    equally likely reassignments, enumerated.  The p-values are Monte Carlo estimates of
    the exact ones (tolerance: module doc); the null mean and sd are closed forms that must
    match the enumeration to 1e-12.  The numeric covariate cut into 3 quantile bins gives
    the same strata as the string one (bin edges fall between the groups), so the results
    are identical.
    """
    ledger = _strata_ledger(numeric=False)
    result = attribute(ledger, method="permutation", rng=11, permutations=B, strata="s")
    y = ledger.scores
    stratum = np.asarray([ord(s) - ord("a") for s in ledger.covariate("s").to_list()])
    x = ledger.design().column("A")
    null = _exact_within_strata(y, x, stratum)
    assert null.size == 4500
    row = result.row("A")
    observed = y[x].mean() - y[~x].mean()
    assert row["estimate"] == pytest.approx(observed, abs=1e-12)
    centre = null.mean()
    assert row["null_mean"] == pytest.approx(centre, abs=1e-12)
    assert row["std_error"] == pytest.approx(null.std(), rel=1e-10)
    tie = 1e-9
    exact = {
        "pvalue_greater": float(np.mean(null >= observed - tie)),
        "pvalue_less": float(np.mean(null <= observed + tie)),
        "pvalue": float(np.mean(np.abs(null - centre) >= abs(observed - centre) - tie)),
    }
    for column, p in exact.items():
        tol = 4 * math.sqrt(p * (1 - p) / B) + 1 / (B + 1)
        assert abs(row[column] - p) <= tol, (column, row[column], p)
    # the unstratified test sees the stratum shift as signal; the stratified one does not
    assert exact["pvalue"] > 0.05

    numeric = attribute(
        _strata_ledger(numeric=True),
        method="permutation",
        rng=11,
        permutations=B,
        strata="s",
        n_strata=3,
    )
    assert numeric.to_frame().drop("method").equals(result.to_frame().drop("method"))
    assert numeric.extras["strata_codes"].tolist() == stratum.tolist()
