"""Benchmark S1 reproduction: cycgraph's published operating characteristics.

Reference: the 50-replicate table in docs/reference.md, produced by
cycgraph's own simulator (``gateOperatingCharacteristics``) with retrieval max_facts 8,
candidate_slots 4, rest 5 and the inference gate (min_trials 3, max_baseline_runs 40)
after every run.  "Correct verdict" is evict-as-harmful for negative effects and promote
for positive ones; at effect 0 the table gives false decisions (promote or evict as
harmful).

Tolerance: each published rate is k/50 from an independent simulation.  We estimate the
same rate with N = 3000 replicates (Monte Carlo SE at most 0.009) and ask whether k is a
plausible Binomial(50, p) draw at our p (clipped to [1/(2N), 1 - 1/(2N)]): the exact
two-sided binomial test must give p >= 0.001 in every one of the 20 cells.  With 20 cells
that keeps the family-wise false alarm rate near 2% (Bonferroni), while a real mismatch
of the size of the table's own range (e.g. 0.94 vs 0.5) fails at once.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from cogstats.sim.cli import simulate_spec
from cogstats.sim.spec import load_spec

ROOT = Path(__file__).resolve().parents[2]
BUDGETS = (10, 25, 50, 100)
PUBLISHED = {  # effect -> correct-verdict rate (false-decision rate at 0) by budget
    -0.3: (0.94, 1.00, 1.00, 0.94),
    -0.1: (0.06, 0.08, 0.02, 0.16),
    0.0: (0.02, 0.00, 0.02, 0.00),
    0.1: (0.14, 0.04, 0.14, 0.06),
    0.3: (0.94, 1.00, 0.98, 1.00),
}
N = 3000


@pytest.fixture(scope="module")
def table():
    spec = load_spec(ROOT / "simulations" / "cycgraph_oc.toml")
    return simulate_spec(spec, replicates=N, progress=False)


@pytest.mark.slow
def test_matches_published_table(table) -> None:
    col = "lessons.listed[0].effect"
    failures = []
    for effect, rates in PUBLISHED.items():
        for budget, published in zip(BUDGETS, rates, strict=True):
            row = table.filter((table[col] == effect) & (table["runs"] == budget)).row(
                0, named=True
            )
            if effect < 0:
                ours = row["evict_harmful_rate"]
            elif effect > 0:
                ours = row["promote_rate"]
            else:
                ours = row["promote_rate"] + row["evict_harmful_rate"]
            p = float(np.clip(ours, 1 / (2 * N), 1 - 1 / (2 * N)))
            k = round(published * 50)
            pvalue = stats.binomtest(k, 50, p).pvalue
            if pvalue < 0.001:
                failures.append((effect, budget, published, ours, pvalue))
    assert failures == []


@pytest.mark.slow
def test_small_effects_rarely_decided(table) -> None:
    # the write-up: cycgraph reaches a correct verdict on |e| = 0.1 in about 1 replicate
    # in 10 by 100 runs, and effect 0 almost never draws a false decision
    col = "lessons.listed[0].effect"
    at100 = table.filter(table["runs"] == 100)
    pos = at100.filter(at100[col] == 0.1)["promote_rate"][0]
    neg = at100.filter(at100[col] == -0.1)["evict_harmful_rate"][0]
    null = at100.filter(at100[col] == 0.0)
    assert 0.05 < pos < 0.2 and 0.05 < neg < 0.2
    assert null["promote_rate"][0] + null["evict_harmful_rate"][0] < 0.02
