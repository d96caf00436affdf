"""The consolidation job: clusters of memories summarised into new, trusted memories.

A nightly job clusters the memories it is given with spherical k-means (faiss, about
``cluster_size`` memories per cluster) and writes one summary per cluster of at least
``min_members`` memories: a new memory whose embedding is the unit mean of its members
and whose provenance is the consolidator's own (``provenance``, high), whatever its
members' provenance was.

**Laundering.**  A summary is *laundered* when poison shaped it: when at least
``laundering_share`` of its members are poisoned writes.  The default, one member in
ten, models a summariser that keeps every claim a tenth of its notes make and drops
rarer ones as noise: a lone poisoned note in a cluster of 16 (6%) is dropped, two are
kept.  :meth:`Consolidation.laundered_at` counts the summaries at any other share
(docs/admission.md shows 0.05, 0.1, 0.25 and 0.5, a majority).  A laundered summary
carries the poison's claim with the consolidator's provenance: a read filter that trusts
high provenance serves it, and an admission check that compares with high-provenance
memories now defends it.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
from scipy import sparse

from cogstats._results import format_settings, frame_text
from cogstats._validation import ParameterError, check_int, check_real
from cogstats.admission._faiss import faiss_threads

__all__ = ["Consolidation", "consolidate"]


@dataclass(frozen=True, repr=False, eq=False)
class Consolidation:
    """The summaries one consolidation run wrote.

    Attributes
    ----------
    vectors : numpy.ndarray
        ``(summaries, dim)`` unit embeddings of the summaries.
    members : numpy.ndarray
        Members per summary.
    poisoned_members : numpy.ndarray
        Poisoned writes among them.
    assignment : numpy.ndarray
        For each input memory (in ``input_ids`` order), its summary, or -1 when its
        cluster was too small to summarise.
    input_ids : numpy.ndarray
        The memories the job read.
    settings : mapping
        cluster_size, min_members, provenance, laundering_share, iterations.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.random.default_rng(0).standard_normal((40, 8)).astype("float32")
    >>> x /= np.linalg.norm(x, axis=1, keepdims=True)
    >>> poisoned = np.arange(40) < 2
    >>> result = consolidate(x, poisoned, cluster_size=10, min_members=1, rng=0)
    >>> int(result.members.sum()), int(result.poisoned_members.sum())
    (40, 2)
    """

    vectors: np.ndarray
    members: np.ndarray
    poisoned_members: np.ndarray
    assignment: np.ndarray
    input_ids: np.ndarray
    settings: dict[str, Any]

    @property
    def provenance(self) -> float:
        """The provenance every summary carries (the consolidator's)."""
        return float(self.settings["provenance"])

    @property
    def poisoned_share(self) -> np.ndarray:
        """Poisoned members over members, per summary."""
        return self.poisoned_members / np.maximum(self.members, 1)

    @property
    def laundered(self) -> np.ndarray:
        """Summaries at or above ``laundering_share`` poisoned members."""
        return self.poisoned_share >= self.settings["laundering_share"]

    @property
    def laundered_summaries(self) -> int:
        """How many summaries are laundered."""
        return int(self.laundered.sum())

    def laundered_at(self, share: float) -> int:
        """How many summaries have at least ``share`` poisoned members (share > 0)."""
        share = float(check_real("share", share, minimum=0.0, exclusive_minimum=True) or 0)
        return int((self.poisoned_share >= share).sum())

    def to_frame(self) -> pl.DataFrame:
        """One row per summary: summary, members, poisoned_members, poisoned_share, laundered."""
        return pl.DataFrame(
            {
                "summary": np.arange(self.members.size),
                "members": self.members,
                "poisoned_members": self.poisoned_members,
                "poisoned_share": self.poisoned_share,
                "laundered": self.laundered,
            }
        )

    def summary(self) -> str:
        """Describe the counts, then the summaries with poisoned members."""
        head = (
            f"Consolidation({format_settings(self.settings)}): {self.members.size} summaries "
            f"of {self.input_ids.size} memories, {int((self.poisoned_members > 0).sum())} with "
            f"poisoned members, {self.laundered_summaries} laundered"
        )
        touched = self.to_frame().filter(pl.col("poisoned_members") > 0)
        return head + ("\n" + frame_text(touched) if touched.height else "")

    def __repr__(self) -> str:
        """Show the summary."""
        return self.summary()

    def _repr_html_(self) -> str:
        return "<pre>" + html.escape(self.summary()) + "</pre>"


def consolidate(
    vectors: np.ndarray,
    poisoned: np.ndarray,
    *,
    ids: np.ndarray | None = None,
    cluster_size: int = 16,
    min_members: int = 4,
    provenance: float = 0.95,
    laundering_share: float = 0.1,
    iterations: int = 10,
    rng: Any = None,
    threads: int = 1,
) -> Consolidation:
    """Cluster memories and summarise each cluster (see the module docstring).

    Parameters
    ----------
    vectors : numpy.ndarray
        ``(n, dim)`` unit embeddings of the memories the job reads.
    poisoned : numpy.ndarray of bool
        ``(n,)``: which of them are poisoned writes (the truth, for scoring only).
    ids : numpy.ndarray, optional
        Their memory ids (default ``0 .. n - 1``).
    cluster_size : int
        Memories per cluster on average (k-means with ``round(n / cluster_size)``).
    min_members : int
        Smallest cluster that is summarised.
    provenance : float
        The consolidator's provenance, carried by every summary.
    laundering_share : float
        Poisoned share of members from which a summary counts as laundered.
    iterations : int
        k-means iterations.
    rng : int, numpy.random.Generator, SeedSequence or None
        Seeds the k-means initialisation (through ``numpy.random.default_rng``).
    threads : int
        faiss threads.

    Returns
    -------
    Consolidation

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> centres = rng.standard_normal((4, 32))
    >>> x = np.repeat(centres, 10, axis=0) + 0.1 * rng.standard_normal((40, 32))
    >>> x = (x / np.linalg.norm(x, axis=1, keepdims=True)).astype("float32")
    >>> poisoned = np.zeros(40, dtype=bool)
    >>> poisoned[:4] = True  # 4 of the first cluster's 10 members
    >>> result = consolidate(x, poisoned, cluster_size=10, rng=1)
    >>> sorted(result.members.tolist()), result.laundered_summaries
    ([10, 10, 10, 10], 1)
    """
    x = np.ascontiguousarray(vectors, dtype=np.float32)
    if x.ndim != 2 or x.shape[0] == 0:
        raise ParameterError(f"vectors must be a non-empty (n, dim) array; got shape {x.shape}")
    poisoned = np.asarray(poisoned, dtype=bool)
    if poisoned.shape != (x.shape[0],):
        raise ParameterError(f"poisoned must have shape ({x.shape[0]},); got {poisoned.shape}")
    ids = np.arange(x.shape[0]) if ids is None else np.asarray(ids, dtype=np.int64)
    cluster_size = int(check_int("cluster_size", cluster_size, minimum=1) or 1)
    min_members = int(check_int("min_members", min_members, minimum=1) or 1)
    check_real("provenance", provenance, minimum=0.0, maximum=1.0)
    check_real(
        "laundering_share", laundering_share, minimum=0.0, maximum=1.0, exclusive_minimum=True
    )
    iterations = int(check_int("iterations", iterations, minimum=1) or 1)
    seed = int(np.random.default_rng(rng).integers(0, 2**31 - 1))
    n_clusters = max(1, min(round(x.shape[0] / cluster_size), x.shape[0]))
    with faiss_threads(threads) as faiss:
        kmeans = faiss.Kmeans(
            x.shape[1],
            n_clusters,
            niter=iterations,
            seed=seed,
            spherical=True,
            verbose=False,
            min_points_per_centroid=1,
            max_points_per_centroid=x.shape[0],
        )
        kmeans.train(x)
        _, label = kmeans.index.search(x, 1)
    label = label[:, 0].astype(np.int64)
    counts = np.bincount(label, minlength=n_clusters)
    kept = np.flatnonzero(counts >= min_members)
    new_id = np.full(n_clusters, -1, dtype=np.int64)
    new_id[kept] = np.arange(kept.size)
    assignment = new_id[label]
    members = counts[kept]
    poisoned_members = np.bincount(label[poisoned], minlength=n_clusters)[kept]
    # member sums per cluster: a sparse one-hot (clusters x members) times the embeddings
    onehot = sparse.csr_matrix(
        (np.ones(label.size), (label, np.arange(label.size))), shape=(n_clusters, label.size)
    )
    summary_vectors = np.asarray(onehot @ x.astype(np.float64))[kept]
    norms = np.linalg.norm(summary_vectors, axis=1, keepdims=True)
    summary_vectors = (summary_vectors / np.where(norms > 0, norms, 1.0)).astype(np.float32)
    return Consolidation(
        vectors=summary_vectors,
        members=members,
        poisoned_members=poisoned_members,
        assignment=assignment,
        input_ids=ids,
        settings={
            "cluster_size": cluster_size,
            "min_members": min_members,
            "provenance": float(provenance),
            "laundering_share": float(laundering_share),
            "iterations": iterations,
        },
    )
