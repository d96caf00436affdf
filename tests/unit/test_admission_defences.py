"""Defences: the admission rules one by one on a hand-built memory, every defence's
placement, the registry, and the read filter's mechanism (its recall loss is the
poisoned vectors' occupancy of the index's results, nothing else).

References: the hand-built memory's expected decisions are worked out in the comments
(cosines of explicit vectors); the mechanism checks compare exact search with and
without the poisoned vectors, query by query (exact equality).
"""

from __future__ import annotations

import numpy as np
import pytest

from cogstats._validation import ParameterError
from cogstats.admission import (
    DEFENCES,
    REASONS,
    AdmissionRules,
    admission_decisions,
    generate_world,
    get_defence,
    make_defence,
    make_index,
    recall_at_k,
    serve,
)
from cogstats.admission.defences import ReadFilterOptions, register_defence
from cogstats.admission.world import World
from tests.unit._admission import small_spec


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


def hand_world() -> World:
    """Two corpus memories and six writes in one tenant (centroid e0), dimension 8.

    Subject points s_j = unit(e0 + 0.5 e_{j+1}): cosine 0.894 with the centroid (distance
    0.106).  Writes (ids 2..7):
      2 benign, subject 0, value 2 (a disagreement), at s_0: near-duplicate of corpus 0
      3 poison, subject 0, unit(e0 + 0.5 e1 + 0.9 e7): cosine 0.779 with s_0 (not a
        near-duplicate at distance 0.2), centroid distance 0.303 (inside 0.35)
      4 poison, subject 1, at s_1: near-duplicate of corpus 1, whose provenance is 0.5
      5 benign, subject 2, unit(e0 + 2 e6): centroid distance 0.553 (off-centroid)
      6 poison, subject 3, at s_3, provenance 0.9 (nothing to contradict: admitted)
      7 benign, subject 3, value 0, at s_3: contradicts write 6 once 6 is in the store
    """
    e = np.eye(8)
    s = _unit(e[0] + 0.5 * e[1:7])
    vectors = np.stack(
        [
            s[0],
            s[1],
            s[0],
            _unit(e[0] + 0.5 * e[1] + 0.9 * e[7]),
            s[1],
            _unit(e[0] + 2 * e[6]),
            s[3],
            s[3],
        ]
    ).astype(np.float32)
    n = vectors.shape[0]
    return World(
        spec=small_spec().world,
        k=1,
        vectors=vectors,
        origin=np.array([0, 0, 1, 2, 2, 1, 2, 1], dtype=np.int8),
        kind=np.array([-1, -1, -1, 0, 0, -1, 1, -1], dtype=np.int8),
        tenant=np.zeros(n, dtype=np.int64),
        topic=np.zeros(n, dtype=np.int64),
        subject=np.array([0, 1, 0, 0, 1, 2, 3, 3]),
        value=np.array([0, 0, 2, 1, 1, 0, 1, 0]),
        provenance=np.array([0.95, 0.5, 0.9, 0.7, 0.9, 0.55, 0.9, 0.9]),
        region=np.zeros(n, dtype=np.int64),
        centroids=_unit(e[:1]),
        topic_centres=_unit(e[:1]),
        subject_points=s,
        queries=s[:2],
        query_subject=np.array([0, 1]),
        query_region=np.zeros(2, dtype=np.int64),
        truth=np.array([[0], [1]]),
    )


def test_rules_on_the_hand_built_memory() -> None:
    world = hand_world()
    one_by_one = admission_decisions(world, AdmissionRules(batch=1))
    assert not one_by_one.rejected[:2].any()  # the corpus is never judged
    assert one_by_one.low_provenance.tolist() == [0, 0, 0, 0, 0, 1, 0, 0]
    assert one_by_one.off_centroid.tolist() == [0, 0, 0, 0, 0, 1, 0, 0]
    # 2 contradicts corpus 0; 4's twin has low provenance; 7 contradicts the admitted 6
    assert one_by_one.contradiction.tolist() == [0, 0, 1, 0, 0, 0, 0, 1]
    assert [REASONS[r] for r in one_by_one.reason] == [
        "admitted",
        "admitted",
        "contradiction",
        "admitted",
        "admitted",
        "low_provenance",
        "admitted",
        "contradiction",
    ]
    # decided in one batch, 7 is checked against the store before 6 was admitted
    together = admission_decisions(world, AdmissionRules(batch=6))
    assert together.contradiction.tolist() == [0, 0, 1, 0, 0, 0, 0, 0]
    # benign writes 2, 5, 7: 3 rejected one by one; poisoned 3, 4, 6: all admitted
    assert one_by_one.benign_rejection_rate == 1.0
    assert one_by_one.poison_admission_rate == 1.0
    # thresholds move the rules: provenance 0.5 admits 5 on provenance (still off-centroid)
    loose = admission_decisions(world, AdmissionRules(min_provenance=0.5, batch=1))
    assert not loose.low_provenance.any() and loose.off_centroid[5]
    # a tighter near-duplicate radius (0.0001) still catches the exact duplicate 2
    tight = admission_decisions(world, AdmissionRules(duplicate_distance=1e-4, batch=1))
    assert tight.contradiction[2]
    # and a high-provenance bar above corpus 0's provenance protects nothing
    lax = admission_decisions(world, AdmissionRules(high_provenance=0.99, batch=1))
    assert not lax.contradiction.any()
    frame = one_by_one.to_frame()
    assert frame.columns == ["origin", "reason", "writes", "share"]
    assert "benign rejection 1.0000" in one_by_one.summary()


def test_quarantine_has_no_provenance_rule_and_only_trusts_the_corpus() -> None:
    world = hand_world()
    placement = make_defence("quarantine").place(world)
    d = placement.decisions
    assert d is not None and not d.low_provenance.any()
    # 2 contradicts corpus 0; 7 contradicts only write 6, which is not validated corpus
    assert d.contradiction.tolist() == [0, 0, 1, 0, 0, 0, 0, 0]
    assert placement.removed.tolist() == [0, 0, 1, 0, 0, 1, 0, 0]
    assert placement.build.all() and placement.indexed.tolist() == [1, 1, 0, 1, 1, 0, 1, 1]


def test_invalid_rules() -> None:
    with pytest.raises(ParameterError, match="min_provenance must be <= 1.0"):
        AdmissionRules(min_provenance=1.2)
    with pytest.raises(ParameterError, match="rules must be AdmissionRules"):
        admission_decisions(hand_world(), {"min_provenance": 0.6})  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="must be ReadFilterOptions"):
        make_defence("read_filter", AdmissionRules())


def test_registry() -> None:
    assert list(DEFENCES) == ["clean", "none", "read_filter", "admission", "quarantine"]
    with pytest.raises(ParameterError, match="did you mean 'quarantine'"):
        get_defence("quarantaine")
    with pytest.raises(RuntimeError, match="registered twice"):
        register_defence(get_defence("clean"))


@pytest.fixture(scope="module")
def world():  # type: ignore[no-untyped-def]
    return generate_world(small_spec(), rng=21)


def test_placements(world) -> None:  # type: ignore[no-untyped-def]
    poison = world.is_poison
    clean = make_defence("clean").place(world)
    assert np.array_equal(clean.written, ~poison) and np.array_equal(clean.indexed, ~poison)
    none = make_defence("none").place(world)
    assert none.indexed.all() and not none.read_flagged.any()
    rf = make_defence("read_filter").place(world)
    assert rf.indexed.all() and np.array_equal(rf.read_flagged, poison)
    assert rf.consolidation_input.all() and not rf.served[poison].any()
    filtered = make_defence("read_filter", ReadFilterOptions(consolidate_filtered=True)).place(
        world
    )
    assert np.array_equal(filtered.consolidation_input, ~poison)
    adm = make_defence("admission").place(world)
    assert adm.decisions is not None
    assert np.array_equal(adm.indexed, adm.decisions.admitted)
    assert np.array_equal(adm.consolidation_input, adm.indexed)
    assert adm.decisions.benign_rejection_rate < 0.02
    assert adm.decisions.poison_admission_rate < 0.5
    q = make_defence("quarantine").place(world)
    assert q.build.all() and np.array_equal(q.indexed, ~q.removed)


def test_read_filter_loss_is_occupancy(world) -> None:  # type: ignore[no-untyped-def]
    """Exact search: a query loses recall under the read filter exactly when, and as much
    as, poisoned vectors took its top-k slots; over-fetching past them restores it."""
    dim, k = world.vectors.shape[1], world.k
    everything = make_index("flat", dim)
    everything.build(world.vectors, np.arange(world.n))
    benign = np.flatnonzero(world.is_benign)
    clean = make_index("flat", dim)
    clean.build(world.vectors[benign], benign)
    served, dropped = serve(everything, world.queries, k, flagged=world.is_poison)
    baseline, _ = serve(clean, world.queries, k)
    assert not np.isin(served, np.flatnonzero(world.is_poison)).any()  # no poisoned result
    untouched = dropped == 0
    assert np.array_equal(served[untouched], baseline[untouched])
    recall = recall_at_k(served, world.truth)
    assert np.allclose(recall, 1.0 - dropped / k)  # exact search: every lost slot is a loss
    assert dropped[world.affected_queries].mean() > 0
    assert dropped[~world.affected_queries].mean() < dropped[world.affected_queries].mean()
    refetched, _ = serve(
        everything, world.queries, k, flagged=world.is_poison, overfetch=int(dropped.max())
    )
    assert np.array_equal(refetched, baseline)


@pytest.mark.parametrize("name", ["hnsw", "ivf"])
def test_read_filter_on_ann_indexes(world, name: str) -> None:  # type: ignore[no-untyped-def]
    index = make_index(name, world.vectors.shape[1], seed=1)
    index.build(world.vectors, np.arange(world.n))
    fetched = index.search(world.queries, world.k)
    served, dropped = serve(index, world.queries, world.k, flagged=world.is_poison)
    assert not np.isin(served, np.flatnonzero(world.is_poison)).any()
    assert np.array_equal(dropped, world.is_poison[fetched].sum(axis=1))
    assert np.array_equal((served == -1).sum(axis=1), dropped)
