"""The simulated memory and the index registry (faiss HNSW, IVF, exact).

References: ground truth is checked against a brute-force numpy sort (exact equality of
the sets); the indexes are checked against exact search (recall bounds on clean data)
and for what removal does (no removed label ever comes back; IVF keeps its trained
quantizer, HNSW is rebuilt).
"""

from __future__ import annotations

import numpy as np
import pytest

from cogstats._validation import ParameterError
from cogstats.admission import INDEXES, generate_world, get_index, make_index, recall_at_k
from cogstats.admission.index import HNSWIndex, IVFOptions, register_index
from cogstats.admission.world import KINDS, exact_neighbours
from tests.unit._admission import small_spec


@pytest.fixture(scope="module")
def world():  # type: ignore[no-untyped-def]
    return generate_world(small_spec(), rng=11)


def test_world_geometry(world) -> None:  # type: ignore[no-untyped-def]
    spec = world.spec
    assert np.allclose(np.linalg.norm(world.vectors, axis=1), 1.0, atol=1e-5)
    assert int(world.is_seed.sum()) == spec.subjects * spec.seed_per_subject
    assert world.is_seed[: int(world.is_seed.sum())].all()  # corpus first, then writes
    # memories are nearer their own subject than any other subject, as a rule
    nearest = np.argmax(world.vectors @ world.subject_points.T, axis=1)
    assert np.mean(nearest[world.is_benign] == world.subject[world.is_benign]) > 0.9
    # poisoned writes: a false claim; cross-tenant ones come from another tenant
    p = world.is_poison
    assert p.any() and (world.value[p] == 1).all()
    cross = p & (world.kind == KINDS.index("cross_tenant"))
    target_tenant = world.topic // spec.topics_per_tenant
    assert (world.tenant[cross] != target_tenant[cross]).all()
    off = p & (world.kind == KINDS.index("off_centroid"))
    assert (world.tenant[off] == target_tenant[off]).all()
    # the off-centroid payload pushes the embedding away from the tenant centroid
    assert world.centroid_distance[off].mean() > world.centroid_distance[world.is_seed].mean()
    # affected regions are exactly those holding a poisoned write
    assert set(np.flatnonzero(world.affected_regions)) == set(world.region[p])
    assert world.affected_queries.any() and not world.affected_queries.all()


def test_truth_is_exact(world) -> None:  # type: ignore[no-untyped-def]
    benign = np.flatnonzero(world.is_benign)
    sims = world.queries[:50] @ world.vectors[benign].T
    brute = benign[np.argsort(-sims, axis=1)[:, : world.k]]
    for got, want in zip(world.truth[:50], brute, strict=True):
        assert set(got) == set(want)
    assert not np.isin(world.truth, np.flatnonzero(world.is_poison)).any()


def test_same_seed_same_world() -> None:
    a = generate_world(small_spec(), rng=5)
    b = generate_world(small_spec(), rng=5)
    c = generate_world(small_spec(), rng=6)
    assert np.array_equal(a.vectors, b.vectors) and np.array_equal(a.truth, b.truth)
    assert not np.array_equal(a.vectors[:10], c.vectors[:10])
    assert "affected regions" in a.summary() and a.to_frame().height == a.n


def test_registry() -> None:
    assert {"hnsw", "ivf", "flat"} <= set(INDEXES)
    assert get_index("ivf").__name__ == "IVFIndex"
    with pytest.raises(ParameterError, match="did you mean 'hnsw'"):
        get_index("hnws")
    with pytest.raises(RuntimeError, match="registered twice"):
        register_index(HNSWIndex)
    with pytest.raises(ParameterError, match="must be IVFOptions"):
        make_index("ivf", 8, options=object())
    with pytest.raises(ParameterError, match="nprobe"):
        IVFOptions(nprobe=0)


@pytest.mark.parametrize("name", ["hnsw", "ivf", "flat"])
def test_indexes_against_exact_search(world, name: str) -> None:  # type: ignore[no-untyped-def]
    ids = np.flatnonzero(world.is_benign)
    index = make_index(name, world.vectors.shape[1], seed=3)
    index.build(world.vectors[ids], ids)
    found = index.search(world.queries, world.k)
    recall = recall_at_k(found, world.truth)
    assert recall.mean() > (0.999999 if name == "flat" else 0.95)
    assert len(index) == ids.size
    # removal: a removed label never comes back; the copy is independent
    gone = world.truth[:20, 0]
    copy = index.copy()
    copy.remove(gone)
    assert not np.isin(copy.search(world.queries[:20], world.k), gone).any()
    assert len(copy) == ids.size - np.unique(gone).size
    assert np.isin(gone, index.search(world.queries[:20], world.k)).all()  # original intact


def test_ivf_removal_keeps_the_quantizer(world) -> None:  # type: ignore[no-untyped-def]
    ids = np.arange(world.n)
    index = make_index("ivf", world.vectors.shape[1], seed=3)
    index.build(world.vectors, ids)
    before = index._quantizer.reconstruct_n(0, index._quantizer.ntotal)  # type: ignore[attr-defined]
    index.remove(np.flatnonzero(world.is_poison))
    after = index._quantizer.reconstruct_n(0, index._quantizer.ntotal)  # type: ignore[attr-defined]
    assert np.array_equal(before, after)
    # a rebuild without them trains a different quantizer
    other = make_index("ivf", world.vectors.shape[1], seed=3)
    keep = np.flatnonzero(~world.is_poison)
    other.build(world.vectors[keep], keep)
    retrained = other._quantizer.reconstruct_n(0, other._quantizer.ntotal)  # type: ignore[attr-defined]
    assert before.shape != retrained.shape or not np.array_equal(before, retrained)


def test_exact_neighbours_validates() -> None:
    v = np.eye(4, dtype=np.float32)
    with pytest.raises(ParameterError, match="k must be >= 1"):
        exact_neighbours(v, np.arange(4), v, 0)
    out = exact_neighbours(v, np.arange(4), v[:1], 6)  # more than there are: -1 padding
    assert out[0, 0] == 0 and (out[0, 4:] == -1).all()
