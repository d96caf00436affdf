"""The simulated shared vector memory: corpus, benign and poisoned writes, queries, truth.

:func:`generate_world` draws one replicate of the world an :class:`AdmissionSpec`
describes (see :class:`~cogstats.admission.spec.WorldSpec` for the geometry):

* tenants share a domain direction, topics cluster around their tenant, subjects around
  their topic; every vector is unit length and similarity is the inner product (cosine);
* the validated corpus: ``seed_per_subject`` memories per subject, in the subject's
  tenant, all making the store's claim about the subject (value 0);
* benign writes: Poisson(``writes_per_subject``) per subject, the store's claim except a
  ``disagreement_rate`` share (value 2: a correction or a mistake);
* poisoned writes: a false claim (value 1) about a targeted subject, from another tenant
  (``cross_tenant``, placed at the target) or from the target's tenant with an embedding
  pushed off the tenant's centroid (``off_centroid``), each kind with its own provenance;
* queries about random subjects, with their exact ``k`` nearest benign memories (the
  corpus and the benign writes: what a clean memory holds) as ground truth.

Memory ids are row numbers: the corpus first, then the writes in arrival order.  A
memory's *region* is its nearest topic centre; a region is *affected* when at least one
poisoned write lands in it, and a query is affected when its own region is.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from cogstats._results import frame_text
from cogstats._validation import check_int

if TYPE_CHECKING:  # annotations only: the spec module imports the defences, which import this
    from cogstats.admission.spec import AdmissionSpec, WorldSpec

__all__ = [
    "KINDS",
    "ORIGINS",
    "World",
    "draw_queries",
    "exact_neighbours",
    "generate_world",
]

#: memory origins (codes 0, 1, 2)
ORIGINS: tuple[str, ...] = ("seed", "benign", "poison")
#: poisoned-write kinds (codes 0, 1; -1 for benign memories)
KINDS: tuple[str, ...] = ("cross_tenant", "off_centroid")
SEED, BENIGN, POISON = 0, 1, 2
#: claim values: the store's, a poisoned claim, a benign disagreement
STORE_VALUE, POISON_VALUE, DISAGREEING_VALUE = 0, 1, 2


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


def _noise(rng: np.random.Generator, n: int, dim: int, spread: float) -> np.ndarray:
    # N(0, I / dim): about unit length, so ``spread`` is the offset's length
    return rng.standard_normal((n, dim)) * (spread / np.sqrt(dim))


@dataclass(frozen=True, repr=False, eq=False)
class World:
    """One replicate of the simulated memory (arrays indexed by memory id).

    Attributes
    ----------
    spec : WorldSpec
        The geometry it was drawn from.
    k : int
        Neighbours in the ground truth.
    vectors : numpy.ndarray
        ``(n, dim)`` float32 unit vectors: the corpus, then the writes in arrival order.
    origin : numpy.ndarray
        0 corpus (seed), 1 benign write, 2 poisoned write.
    kind : numpy.ndarray
        Poisoned-write kind (index into :data:`KINDS`), -1 for benign memories.
    tenant : numpy.ndarray
        The namespace the memory is written under (the writer's tenant).
    topic, subject, value : numpy.ndarray
        The claim: what it is about and the value it asserts (0 the store's, 1 poisoned,
        2 a benign disagreement).
    provenance : numpy.ndarray
        Provenance score in (0, 1).
    region : numpy.ndarray
        Nearest topic centre.
    centroids : numpy.ndarray
        ``(tenants, dim)``: each tenant's centroid as the operator knows it (the unit mean
        of its corpus).
    topic_centres, subject_points : numpy.ndarray
        The true cluster centres.
    queries : numpy.ndarray
        ``(n_queries, dim)`` benign queries.
    query_subject, query_region : numpy.ndarray
        What each query is about and its nearest topic centre.
    truth : numpy.ndarray
        ``(n_queries, k)`` ids of the exact ``k`` nearest benign memories.

    Examples
    --------
    >>> from cogstats.admission import AdmissionSpec, generate_world
    >>> world = generate_world(AdmissionSpec.from_dict({"world": {"dim": 64, "tenants": 2,
    ...     "topics_per_tenant": 2, "subjects_per_topic": 3, "queries": 5}}), rng=4)
    >>> world.n == world.vectors.shape[0], world.to_frame().columns[:3]
    (True, ['id', 'origin', 'kind'])
    """

    spec: WorldSpec
    k: int
    vectors: np.ndarray
    origin: np.ndarray
    kind: np.ndarray
    tenant: np.ndarray
    topic: np.ndarray
    subject: np.ndarray
    value: np.ndarray
    provenance: np.ndarray
    region: np.ndarray
    centroids: np.ndarray
    topic_centres: np.ndarray
    subject_points: np.ndarray
    queries: np.ndarray
    query_subject: np.ndarray
    query_region: np.ndarray
    truth: np.ndarray

    @property
    def n(self) -> int:
        """Memories (corpus and writes)."""
        return int(self.origin.size)

    @property
    def is_seed(self) -> np.ndarray:
        """Corpus memories."""
        return self.origin == SEED

    @property
    def is_write(self) -> np.ndarray:
        """Writes (benign or poisoned)."""
        return self.origin != SEED

    @property
    def is_poison(self) -> np.ndarray:
        """Poisoned writes."""
        return self.origin == POISON

    @property
    def is_benign(self) -> np.ndarray:
        """Corpus memories and benign writes."""
        return self.origin != POISON

    @property
    def centroid_distance(self) -> np.ndarray:
        """Cosine distance of each memory to its namespace's tenant centroid."""
        return 1.0 - np.einsum("ij,ij->i", self.vectors, self.centroids[self.tenant]).astype(
            np.float64
        )

    @property
    def affected_regions(self) -> np.ndarray:
        """Regions (topics) holding at least one poisoned write."""
        out = np.zeros(self.topic_centres.shape[0], dtype=bool)
        out[self.region[self.is_poison]] = True
        return out

    @property
    def affected_queries(self) -> np.ndarray:
        """Queries whose region is affected."""
        return self.affected_regions[self.query_region]

    def to_frame(self) -> pl.DataFrame:
        """Return one row per memory.

        Columns: id, origin, kind, tenant, topic, subject, value, provenance, region,
        centroid_distance.
        """
        kind = np.array(["", *KINDS], dtype=object)[self.kind + 1]
        return pl.DataFrame(
            {
                "id": np.arange(self.n),
                "origin": np.array(ORIGINS, dtype=object)[self.origin].tolist(),
                "kind": kind.tolist(),
                "tenant": self.tenant,
                "topic": self.topic,
                "subject": self.subject,
                "value": self.value,
                "provenance": self.provenance,
                "region": self.region,
                "centroid_distance": self.centroid_distance,
            }
        )

    def summary(self) -> str:
        """Count the memories by origin, the affected regions and queries."""
        counts = {o: int((self.origin == i).sum()) for i, o in enumerate(ORIGINS)}
        return (
            f"World: dim {self.spec.dim}, {self.spec.tenants} tenants, "
            f"{self.topic_centres.shape[0]} regions, {counts['seed']} corpus memories, "
            f"{counts['benign']} benign and {counts['poison']} poisoned writes; "
            f"{int(self.affected_regions.sum())} affected regions, "
            f"{int(self.affected_queries.sum())} of {self.queries.shape[0]} queries affected"
        )

    def __repr__(self) -> str:
        """Show the summary."""
        return self.summary()

    def _repr_html_(self) -> str:
        frame = self.to_frame().group_by("origin", "kind").len().sort("origin", "kind")
        return (
            f"<div><strong>{html.escape(self.summary())}</strong><pre>"
            + html.escape(frame_text(frame))
            + "</pre></div>"
        )


def exact_neighbours(
    vectors: np.ndarray, labels: np.ndarray, queries: np.ndarray, k: int, *, chunk: int = 512
) -> np.ndarray:
    """Labels of the exact ``k`` largest inner products per query, best first (numpy).

    Examples
    --------
    >>> import numpy as np
    >>> v = np.eye(3, dtype="float32")
    >>> exact_neighbours(v, np.array([7, 8, 9]), v[[2]], 2)[0, 0]
    np.int64(9)
    """
    k = int(check_int("k", k, minimum=1) or 1)
    labels = np.asarray(labels, dtype=np.int64)
    k_eff = min(k, labels.size)
    out = np.full((queries.shape[0], k), -1, dtype=np.int64)
    for start in range(0, queries.shape[0], chunk):
        sims = queries[start : start + chunk] @ vectors.T
        top = np.argpartition(sims, sims.shape[1] - k_eff, axis=1)[:, -k_eff:]
        order = np.argsort(-np.take_along_axis(sims, top, axis=1), axis=1, kind="stable")
        out[start : start + chunk, :k_eff] = labels[np.take_along_axis(top, order, axis=1)]
    return out


def draw_queries(
    spec: WorldSpec, subject_points: np.ndarray, subjects: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Benign queries about ``subjects``: ``unit(subject + query_spread * g)``.

    Examples
    --------
    >>> import numpy as np
    >>> from cogstats.admission.spec import WorldSpec
    >>> points = np.eye(64, dtype="float32")[:3]
    >>> q = draw_queries(WorldSpec(dim=64), points, np.array([0, 2]), np.random.default_rng(0))
    >>> q.shape, bool(np.allclose(np.linalg.norm(q, axis=1), 1, atol=1e-6))
    ((2, 64), True)
    """
    return _unit(subject_points[subjects] + _noise(rng, len(subjects), spec.dim, spec.query_spread))


def generate_world(spec: AdmissionSpec, *, rng: Any = None) -> World:
    """Draw one replicate of the memory the spec describes.

    Parameters
    ----------
    spec : AdmissionSpec
        World, benign writes and poisoning campaign (``spec.world``, ``spec.benign``,
        ``spec.poison``) and ``spec.k``.
    rng : int, numpy.random.Generator, SeedSequence or None
        Passed through ``numpy.random.default_rng``.

    Returns
    -------
    World

    Examples
    --------
    >>> from cogstats.admission import AdmissionSpec, generate_world
    >>> spec = AdmissionSpec.from_dict({"world": {"dim": 64, "tenants": 3,
    ...     "topics_per_tenant": 2, "subjects_per_topic": 3, "queries": 50},
    ...     "poison": {"targeted_topics": 1, "subject_share": 1.0}})
    >>> world = generate_world(spec, rng=1)
    >>> world.vectors.shape[1], int(world.is_seed.sum()), world.truth.shape
    (64, 108, (50, 10))
    >>> bool(world.is_poison.any()), bool(world.affected_regions.any())
    (True, True)
    """
    g = np.random.default_rng(rng)
    w, b, p = spec.world, spec.benign, spec.poison
    d, n_t, n_top, n_sub = w.dim, w.tenants, w.topics, w.subjects
    # the geometry: a domain, tenants, topics, subjects
    domain = _unit(g.standard_normal(d))
    tenant_c = _unit(domain + _noise(g, n_t, d, w.tenant_spread))
    topic_c = _unit(
        np.repeat(tenant_c, w.topics_per_tenant, 0) + _noise(g, n_top, d, w.topic_spread)
    )
    subject_p = _unit(
        np.repeat(topic_c, w.subjects_per_topic, 0) + _noise(g, n_sub, d, w.subject_spread)
    )
    sub_topic = np.arange(n_sub) // w.subjects_per_topic
    topic_tenant = np.arange(n_top) // w.topics_per_tenant

    # the validated corpus
    seed_subj = np.repeat(np.arange(n_sub), w.seed_per_subject)
    seed_vec = _unit(subject_p[seed_subj] + _noise(g, seed_subj.size, d, w.memory_spread))
    seed_prov = w.seed_provenance.draw(g, seed_subj.size)

    # benign writes
    ben_subj = np.repeat(np.arange(n_sub), g.poisson(b.writes_per_subject, n_sub))
    ben_vec = _unit(subject_p[ben_subj] + _noise(g, ben_subj.size, d, w.memory_spread))
    ben_prov = b.provenance.draw(g, ben_subj.size)
    ben_value = np.where(g.random(ben_subj.size) < b.disagreement_rate, DISAGREEING_VALUE, 0)

    # the poisoning campaign
    targets = g.choice(n_top, size=p.targeted_topics, replace=False)
    p_subj_list = []
    for topic in np.sort(targets):
        subs = topic * w.subjects_per_topic + np.flatnonzero(
            g.random(w.subjects_per_topic) < p.subject_share
        )
        counts = g.integers(p.per_subject[0], p.per_subject[1] + 1, size=subs.size)
        p_subj_list.append(np.repeat(subs, counts))
    p_subj = np.concatenate(p_subj_list) if p_subj_list else np.zeros(0, dtype=np.int64)
    n_p = p_subj.size
    weights = np.array([p.cross_tenant.weight, p.off_centroid.weight])
    p_kind = g.choice(2, size=n_p, p=weights / weights.sum())
    target_tenant = topic_tenant[sub_topic[p_subj]]
    other = (target_tenant + g.integers(1, n_t, size=n_p)) % n_t  # any other tenant
    p_tenant = np.where(p_kind == 0, other, target_tenant)
    kinds = (p.cross_tenant, p.off_centroid)
    p_prov = np.empty(n_p)
    offset = np.empty(n_p)
    for code, kind in enumerate(kinds):
        sel = p_kind == code
        p_prov[sel] = kind.provenance.draw(g, int(sel.sum()))
        offset[sel] = g.uniform(kind.offset[0], kind.offset[1], int(sel.sum()))
    direction = g.standard_normal((n_p, d))
    c_writer = tenant_c[p_tenant]
    direction -= np.einsum("ij,ij->i", direction, c_writer)[:, None] * c_writer
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    p_vec = _unit(subject_p[p_subj] + _noise(g, n_p, d, p.spread) + offset[:, None] * direction)

    # writes in arrival order (random times)
    w_vec = np.concatenate([ben_vec, p_vec])
    w_subj = np.concatenate([ben_subj, p_subj])
    w_origin = np.concatenate([np.full(ben_subj.size, BENIGN), np.full(n_p, POISON)])
    w_kind = np.concatenate([np.full(ben_subj.size, -1), p_kind])
    w_tenant = np.concatenate([topic_tenant[sub_topic[ben_subj]], p_tenant])
    w_value = np.concatenate([ben_value, np.full(n_p, POISON_VALUE)])
    w_prov = np.concatenate([ben_prov, p_prov])
    order = np.argsort(g.random(w_subj.size), kind="stable")

    vectors = np.concatenate([seed_vec, w_vec[order]])
    subject = np.concatenate([seed_subj, w_subj[order]])
    origin = np.concatenate([np.full(seed_subj.size, SEED), w_origin[order]]).astype(np.int8)
    kind_arr = np.concatenate([np.full(seed_subj.size, -1), w_kind[order]]).astype(np.int8)
    tenant = np.concatenate([topic_tenant[sub_topic[seed_subj]], w_tenant[order]])
    value = np.concatenate([np.zeros(seed_subj.size, dtype=np.int64), w_value[order]])
    provenance = np.concatenate([seed_prov, w_prov[order]])
    region = np.argmax(vectors @ topic_c.T, axis=1)

    # the tenant centroids the operator knows: unit mean of each tenant's corpus
    seed_tenant = tenant[: seed_subj.size]
    centroids = _unit(np.stack([seed_vec[seed_tenant == t].mean(axis=0) for t in range(n_t)]))

    # queries and their exact neighbours among the benign memories
    q_subj = g.integers(0, n_sub, size=w.queries)
    queries = draw_queries(w, subject_p, q_subj, g)
    benign = np.flatnonzero(origin != POISON)
    truth = exact_neighbours(vectors[benign], benign, queries, spec.k)
    return World(
        spec=w,
        k=spec.k,
        vectors=vectors,
        origin=origin,
        kind=kind_arr,
        tenant=tenant.astype(np.int64),
        topic=sub_topic[subject],
        subject=subject.astype(np.int64),
        value=value,
        provenance=provenance,
        region=region.astype(np.int64),
        centroids=centroids,
        topic_centres=topic_c,
        subject_points=subject_p,
        queries=queries,
        query_subject=q_subj,
        query_region=np.argmax(queries @ topic_c.T, axis=1).astype(np.int64),
        truth=truth,
    )
