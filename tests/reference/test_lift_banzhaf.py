"""``lift`` is the Banzhaf value's maximum-sample-reuse (MSR) estimator under p = 1/2.

Reference: Wang & Jia (2023), "Data Banzhaf": with subsets S drawn by including each
player independently with probability 1/2, the MSR estimate of player j's Banzhaf value is
mean U(S) over samples containing j minus mean U(S) over samples not containing j, which
is the leave-one-fact-out lift when runs are samples and scores are utilities.  The
Banzhaf value itself is the average marginal contribution over all subsets of the other
players; for U(S) = c + sum_{j in S} a_j + b [1 in S and 2 in S] it is a_j + b/2 for the
two interacting players and a_j for the others (closed form).

Checks: (1) lift equals the MSR estimate computed independently here, to 1e-12; (2) with
20,000 samples it recovers the closed-form Banzhaf values within 4 Monte Carlo standard
errors (SE of a difference of two means of about 10,000 samples each, from the sample
variances).
"""

from __future__ import annotations

import itertools

import numpy as np

from cogstats import Ledger, attribute

A = np.array([0.05, -0.04, 0.02, 0.0, 0.03])
B = 0.06
C = 0.4


def utility(members: np.ndarray) -> float:
    return float(C + A[members].sum() + B * (0 in members and 1 in members))


def exact_banzhaf() -> np.ndarray:
    n = len(A)
    out = np.zeros(n)
    for j in range(n):
        others = [k for k in range(n) if k != j]
        total = 0.0
        for r in range(n):
            for subset in itertools.combinations(others, r):
                s = np.array(subset, dtype=int)
                total += utility(np.append(s, j)) - utility(s)
        out[j] = total / 2 ** (n - 1)
    return out


def test_closed_form_is_right() -> None:
    want = A.copy()
    want[:2] += B / 2
    assert np.allclose(exact_banzhaf(), want, atol=1e-15)


def test_lift_is_the_msr_estimator() -> None:
    rng = np.random.default_rng(20261130)
    m, n = 20_000, len(A)
    x = rng.random((m, n)) < 0.5
    u = np.array([utility(np.flatnonzero(row)) for row in x])
    ids = [f"p{j}" for j in range(n)]
    ledger = Ledger.from_records(
        {"run_id": str(i), "score": float(u[i]), "fact_ids": [ids[j] for j in np.flatnonzero(x[i])]}
        for i in range(m)
    )
    result = attribute(ledger, method="lift").to_frame()
    est = dict(zip(result["fact_id"], result["estimate"], strict=True))
    truth = exact_banzhaf()
    for j in range(n):
        msr = u[x[:, j]].mean() - u[~x[:, j]].mean()
        assert abs(est[ids[j]] - msr) < 1e-12
        se = np.sqrt(
            u[x[:, j]].var(ddof=1) / x[:, j].sum() + u[~x[:, j]].var(ddof=1) / (~x[:, j]).sum()
        )
        assert abs(est[ids[j]] - truth[j]) <= 4 * se, (j, est[ids[j]], truth[j], se)
