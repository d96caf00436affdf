"""The consolidation job: clustering, summaries, and the laundering definition.

References: summary embeddings against the unit mean of each cluster's members computed
with numpy (1e-5); member counts against the assignment (exact); laundering against
its definition (poisoned share of members at or above the threshold).
"""

from __future__ import annotations

import numpy as np
import pytest

from cogstats._validation import ParameterError
from cogstats.admission import consolidate


def clusters(rng: np.random.Generator, n: int = 6, size: int = 12, dim: int = 32) -> np.ndarray:
    centres = rng.standard_normal((n, dim)) * 3
    x = np.repeat(centres, size, axis=0) + rng.standard_normal((n * size, dim)) * 0.2
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def test_summaries_are_unit_means_of_their_members() -> None:
    x = clusters(np.random.default_rng(0))
    poisoned = np.zeros(len(x), dtype=bool)
    result = consolidate(x, poisoned, cluster_size=12, min_members=1, rng=3)
    assert result.members.size == 6 and result.members.sum() == len(x)
    assert np.array_equal(result.members, np.bincount(result.assignment, minlength=6))
    for j in range(result.members.size):
        mean = x[result.assignment == j].mean(axis=0)
        assert np.allclose(result.vectors[j], mean / np.linalg.norm(mean), atol=1e-5)
    assert result.provenance == 0.95 and result.laundered_summaries == 0


def test_laundering_is_the_poisoned_share_of_members() -> None:
    x = clusters(np.random.default_rng(1), n=8, size=12)
    poisoned = np.zeros(len(x), dtype=bool)
    poisoned[[0, 12, 13]] = True
    poisoned[24:30] = True
    result = consolidate(x, poisoned, cluster_size=12, laundering_share=0.1, rng=2)
    # the definition, from the assignment itself
    expected = np.array(
        [poisoned[result.assignment == j].sum() for j in range(result.members.size)]
    )
    assert np.array_equal(result.poisoned_members, expected)
    assert np.allclose(result.poisoned_share, expected / result.members)
    assert np.array_equal(result.laundered, result.poisoned_share >= 0.1)
    assert result.laundered_summaries == int((expected / result.members >= 0.1).sum())
    assert result.laundered_summaries >= 1  # the cluster with 6 poisoned members
    counts = [result.laundered_at(s) for s in (0.05, 0.1, 0.25, 0.5, 1.0)]
    assert counts == sorted(counts, reverse=True)
    assert counts[0] == int((result.poisoned_share >= 0.05).sum())
    frame = result.to_frame()
    assert frame.columns == [
        "summary",
        "members",
        "poisoned_members",
        "poisoned_share",
        "laundered",
    ]
    assert f"{result.laundered_summaries} laundered" in result.summary()


def test_small_clusters_are_not_summarised_and_ids_are_kept() -> None:
    x = clusters(np.random.default_rng(2), n=3, size=5)
    ids = np.arange(100, 100 + len(x))
    result = consolidate(
        x, np.zeros(len(x), dtype=bool), ids=ids, cluster_size=5, min_members=6, rng=0
    )
    assert result.members.size == 0 and (result.assignment == -1).all()
    assert np.array_equal(result.input_ids, ids)


def test_same_seed_same_summaries() -> None:
    x = clusters(np.random.default_rng(3), n=10, size=9)
    p = np.random.default_rng(4).random(len(x)) < 0.1
    a = consolidate(x, p, cluster_size=7, rng=5)
    b = consolidate(x, p, cluster_size=7, rng=5)
    assert np.array_equal(a.assignment, b.assignment) and np.array_equal(a.vectors, b.vectors)


def test_validation() -> None:
    x = clusters(np.random.default_rng(0), n=2, size=4)
    with pytest.raises(ParameterError, match="poisoned must have shape"):
        consolidate(x, np.zeros(3, dtype=bool))
    with pytest.raises(ParameterError, match="laundering_share must be > 0"):
        consolidate(x, np.zeros(len(x), dtype=bool), laundering_share=0.0)
    with pytest.raises(ParameterError, match="non-empty"):
        consolidate(np.zeros((0, 4)), np.zeros(0, dtype=bool))
