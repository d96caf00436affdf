"""Vector indexes behind one small interface: faiss HNSW, faiss IVF and exact search.

Every index stores unit vectors under integer labels (the memory ids) and answers
``search(queries, k)`` with the labels of the ``k`` largest inner products (cosine
similarity for unit vectors), ``-1`` where it finds fewer.  ``build`` (re)creates the
index from a set of vectors, ``add`` appends, ``remove`` takes labels out.

How the two approximate indexes hold what they are given, and so how poisoned vectors
that stay in them do harm (measured in docs/admission.md):

* **HNSW** (``faiss.IndexHNSWFlat``) is a graph: every inserted vector becomes a node
  with up to ``2 m`` neighbours on the bottom layer, and a search walks the graph
  greedily with a beam of ``ef_search`` candidates.  A poisoned vector inserted next to
  a benign neighbourhood takes edges and beam slots there.  faiss cannot delete from an
  HNSW graph, so :meth:`HNSWIndex.remove` rebuilds the graph from the remaining vectors.
* **IVF** (``faiss.IndexIVFFlat``) trains a coarse k-means quantizer (``nlist`` lists)
  on the vectors it is built from, files each vector in the list of its nearest
  centroid and scans ``nprobe`` lists per query.  Poisoned vectors sit in the lists of
  the region they target, and, when present at build, they also move the centroids.
  :meth:`IVFIndex.remove` deletes from the lists (``remove_ids``) but keeps the quantizer
  trained with them.

The index types form a registry, :data:`INDEXES` (name -> class), like the rest of
cogstats' swappable parts; each class has an ``Options`` dataclass.  faiss is imported
when an index is first built, never at import.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from cogstats._validation import ParameterError, check_int, check_real
from cogstats.admission._faiss import faiss_threads
from cogstats.admission.registry import INDEXES as _INDEXES

__all__ = [
    "INDEXES",
    "ExactIndex",
    "ExactOptions",
    "HNSWIndex",
    "HNSWOptions",
    "IVFIndex",
    "IVFOptions",
    "VectorIndex",
    "get_index",
    "make_index",
    "register_index",
]


@dataclass(frozen=True)
class HNSWOptions:
    """Options of :class:`HNSWIndex`.

    The defaults build a graph that stays connected on clustered data (clean recall at
    10 above 0.99 in the shipped world); faiss's own defaults (``m=16``,
    ``ef_construction=40``, ``ef_search=16``) strand whole regions now and then, and
    which ones depends on exactly what was inserted (docs/admission.md).

    Attributes
    ----------
    m : int
        Neighbours per node on the upper layers (``2 m`` on the bottom layer).
    ef_construction : int
        Beam width while inserting.
    ef_search : int
        Beam width while searching (faiss searches with ``max(ef_search, k)``).

    Examples
    --------
    >>> HNSWOptions(m=16).ef_search
    32
    """

    m: int = 32
    ef_construction: int = 64
    ef_search: int = 32

    def __post_init__(self) -> None:
        """Check the graph's settings."""
        check_int("m", self.m, minimum=2)
        check_int("ef_construction", self.ef_construction, minimum=1)
        check_int("ef_search", self.ef_search, minimum=1)


@dataclass(frozen=True)
class IVFOptions:
    """Options of :class:`IVFIndex`.

    Attributes
    ----------
    nlist_factor : float
        The quantizer has ``round(nlist_factor * sqrt(n))`` lists for ``n`` vectors at
        build (the usual sqrt(n) rule; at most ``n / 39`` so that k-means has the 39
        training points per centroid faiss asks for).
    nprobe : int
        Lists scanned per query.

    Examples
    --------
    >>> IVFIndex(16, IVFOptions(nprobe=2)).nlist(10_000)
    100
    """

    nlist_factor: float = 1.0
    nprobe: int = 4

    def __post_init__(self) -> None:
        """Check the list settings."""
        check_real("nlist_factor", self.nlist_factor, minimum=0.0, exclusive_minimum=True)
        check_int("nprobe", self.nprobe, minimum=1)


@dataclass(frozen=True)
class ExactOptions:
    """:class:`ExactIndex` has no options.

    Examples
    --------
    >>> ExactOptions()
    ExactOptions()
    """


class VectorIndex(ABC):
    """A vector index over unit vectors with integer labels (inner-product search).

    Parameters
    ----------
    dim : int
        Vector dimension.
    options : the class's ``Options`` or None
        Index settings (defaults when None).
    seed : int
        Seed for the index's own randomness (the IVF quantizer's k-means).
    threads : int
        faiss (OpenMP) threads; 1 makes every result reproducible.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.eye(3, dtype="float32")
    >>> index = make_index("flat", 3)
    >>> index.build(x, np.array([10, 11, 12]))
    >>> len(index), index.search(x[[1]], 2)[0, 0]
    (3, np.int64(11))
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    Options: ClassVar[type] = ExactOptions

    def __init__(self, dim: int, options: Any = None, *, seed: int = 0, threads: int = 1) -> None:
        self.dim = int(check_int("dim", dim, minimum=1) or 0)
        if options is None:
            options = self.Options()
        if not isinstance(options, self.Options):
            raise ParameterError(
                f"options of index {self.name!r} must be {self.Options.__name__}; "
                f"got {type(options).__name__}"
            )
        self.options: Any = options
        self.seed = int(check_int("seed", seed, minimum=0) or 0)
        self.threads = int(check_int("threads", threads, minimum=1) or 1)
        self._labels = np.empty(0, dtype=np.int64)

    def __len__(self) -> int:
        """Count the vectors in the index."""
        return int(self._labels.size)

    @property
    def labels(self) -> np.ndarray:
        """The labels held, in insertion order (a copy)."""
        return self._labels.copy()

    def _check(self, vectors: np.ndarray, labels: np.ndarray | None = None) -> np.ndarray:
        x = np.ascontiguousarray(vectors, dtype=np.float32)
        if x.ndim != 2 or x.shape[1] != self.dim:
            raise ParameterError(f"vectors must have shape (n, {self.dim}); got {x.shape}")
        if labels is not None and np.asarray(labels).shape != (x.shape[0],):
            raise ParameterError(
                f"labels must have one entry per vector ({x.shape[0]}); got "
                f"{np.asarray(labels).shape}"
            )
        return x

    def copy(self) -> VectorIndex:
        """Return an independent copy of the built index (``faiss.clone_index``)."""
        out = object.__new__(type(self))
        out.__dict__.update(self.__dict__)
        with faiss_threads(self.threads) as faiss:
            out._index = faiss.clone_index(self._index)  # type: ignore[attr-defined]
        out._labels = self._labels.copy()
        if hasattr(self, "_vectors"):
            out._vectors = self._vectors.copy()  # type: ignore[attr-defined]
        return out

    @abstractmethod
    def build(self, vectors: np.ndarray, labels: np.ndarray) -> None:
        """Create the index from scratch over ``vectors`` labelled ``labels``."""

    @abstractmethod
    def add(self, vectors: np.ndarray, labels: np.ndarray) -> None:
        """Append vectors to a built index."""

    @abstractmethod
    def remove(self, labels: np.ndarray) -> None:
        """Take the vectors with these labels out of the index."""

    @abstractmethod
    def search(self, queries: np.ndarray, k: int) -> np.ndarray:
        """Labels of the ``k`` nearest vectors per query, ``(n, k)``, -1 where none."""


#: The registry: index name -> class (a :class:`~cogstats._registry.Registry`).
#: (:data:`cogstats.admission.registry.INDEXES`, below the spec that checks names.)
INDEXES = _INDEXES


def register_index(cls: type[VectorIndex]) -> type[VectorIndex]:
    """Class decorator adding an index type to :data:`INDEXES` under ``cls.name``.

    Examples
    --------
    >>> @register_index
    ... class Exact2(ExactIndex):
    ...     name = "exact_doc"
    >>> get_index("exact_doc") is Exact2
    True
    >>> del INDEXES["exact_doc"]  # (keep the registry as shipped)
    """
    # names() lists what is registered so far (the built-in module loading now included)
    if not cls.name or cls.name in INDEXES.names():
        raise RuntimeError(f"index {cls.name!r} registered twice or without a name")
    return INDEXES.add(cls.name, cls)


def get_index(name: str) -> type[VectorIndex]:
    """Return the index class registered as ``name``.

    Examples
    --------
    >>> get_index("hnsw").__name__
    'HNSWIndex'
    >>> get_index("hsnw")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    cogstats._validation.ParameterError: index must be one of ['flat', 'hnsw', 'ivf']; ...
    """
    return INDEXES.lookup(name)


def make_index(
    name: str, dim: int, options: Any = None, *, seed: int = 0, threads: int = 1
) -> VectorIndex:
    """Create a new, empty index of the registered type ``name``.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> x = rng.standard_normal((200, 16)).astype("float32")
    >>> x /= np.linalg.norm(x, axis=1, keepdims=True)
    >>> index = make_index("hnsw", 16)
    >>> index.build(x, np.arange(1000, 1200))
    >>> index.search(x[:2], 1).tolist()
    [[1000], [1001]]
    """
    return get_index(name)(dim, options, seed=seed, threads=threads)


def _labelled(internal: np.ndarray, labels: np.ndarray) -> np.ndarray:
    out = np.full(internal.shape, -1, dtype=np.int64)
    ok = internal >= 0
    out[ok] = labels[internal[ok]]
    return out


@register_index
class ExactIndex(VectorIndex):
    """Exact inner-product search (``faiss.IndexFlatIP``): the reference, and quarantine's store.

    Examples
    --------
    >>> get_index("flat") is ExactIndex
    True
    """

    name = "flat"
    description = "exact search (faiss IndexFlatIP)"
    Options = ExactOptions

    def build(self, vectors: np.ndarray, labels: np.ndarray) -> None:
        """Build the exact index from ``vectors`` with their ``labels``."""
        x = self._check(vectors, labels)
        with faiss_threads(self.threads) as faiss:
            self._index = faiss.IndexFlatIP(self.dim)
            self._index.add(x)
        self._labels = np.asarray(labels, dtype=np.int64).copy()

    def add(self, vectors: np.ndarray, labels: np.ndarray) -> None:
        """Add ``vectors`` with their ``labels``."""
        x = self._check(vectors, labels)
        with faiss_threads(self.threads):
            self._index.add(x)
        self._labels = np.concatenate([self._labels, np.asarray(labels, dtype=np.int64)])

    def remove(self, labels: np.ndarray) -> None:
        """Remove the vectors with these ``labels``."""
        keep = ~np.isin(self._labels, labels)
        vectors = self._index.reconstruct_n(0, self._index.ntotal)[keep]
        self.build(vectors, self._labels[keep])

    def search(self, queries: np.ndarray, k: int) -> np.ndarray:
        """Return the labels of the exact ``k`` nearest vectors of each query."""
        q = self._check(queries)
        with faiss_threads(self.threads):
            _, internal = self._index.search(q, int(k))
        return _labelled(internal, self._labels)


@register_index
class HNSWIndex(VectorIndex):
    """faiss HNSW graph (``IndexHNSWFlat``, inner product).

    faiss cannot delete nodes from an HNSW graph: :meth:`remove` rebuilds the graph from
    the vectors that remain, in their insertion order.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.random.default_rng(0).standard_normal((100, 8)).astype("float32")
    >>> x /= np.linalg.norm(x, axis=1, keepdims=True)
    >>> index = HNSWIndex(8)
    >>> index.build(x, np.arange(100))
    >>> index.remove(np.array([0]))
    >>> len(index), int(index.search(x[:1], 1)[0, 0]) != 0
    (99, True)
    """

    name = "hnsw"
    description = "faiss IndexHNSWFlat: a navigable small-world graph"
    Options = HNSWOptions

    def build(self, vectors: np.ndarray, labels: np.ndarray) -> None:
        """Build the HNSW graph from ``vectors`` with their ``labels``."""
        x = self._check(vectors, labels)
        o: HNSWOptions = self.options
        with faiss_threads(self.threads) as faiss:
            self._index = faiss.IndexHNSWFlat(self.dim, o.m, faiss.METRIC_INNER_PRODUCT)
            self._index.hnsw.efConstruction = o.ef_construction
            self._index.hnsw.efSearch = o.ef_search
            self._index.add(x)
        self._vectors = x.copy()
        self._labels = np.asarray(labels, dtype=np.int64).copy()

    def add(self, vectors: np.ndarray, labels: np.ndarray) -> None:
        """Insert ``vectors`` with their ``labels`` into the graph."""
        x = self._check(vectors, labels)
        with faiss_threads(self.threads):
            self._index.add(x)
        self._vectors = np.concatenate([self._vectors, x])
        self._labels = np.concatenate([self._labels, np.asarray(labels, dtype=np.int64)])

    def remove(self, labels: np.ndarray) -> None:
        """Rebuild the graph without these ``labels`` (HNSW cannot delete)."""
        keep = ~np.isin(self._labels, labels)
        self.build(self._vectors[keep], self._labels[keep])

    def search(self, queries: np.ndarray, k: int) -> np.ndarray:
        """Return the labels of the ``k`` nearest vectors the graph finds per query."""
        q = self._check(queries)
        with faiss_threads(self.threads):
            _, internal = self._index.search(q, int(k))
        return _labelled(internal, self._labels)


@register_index
class IVFIndex(VectorIndex):
    """faiss inverted lists over a k-means quantizer (``IndexIVFFlat``, inner product).

    The quantizer is trained at :meth:`build` on the vectors given there (k-means seeded
    from ``seed``); :meth:`add` files new vectors under the existing centroids and
    :meth:`remove` deletes from the lists without retraining.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.random.default_rng(0).standard_normal((400, 8)).astype("float32")
    >>> x /= np.linalg.norm(x, axis=1, keepdims=True)
    >>> index = IVFIndex(8, seed=1)
    >>> index.build(x, np.arange(400))
    >>> index.nlist(400), int(index.search(x[:1], 1)[0, 0])
    (10, 0)
    """

    name = "ivf"
    description = "faiss IndexIVFFlat: inverted lists over a k-means quantizer"
    Options = IVFOptions

    def nlist(self, n: int) -> int:
        """Return the number of lists for ``n`` training vectors (see :class:`IVFOptions`)."""
        o: IVFOptions = self.options
        return int(max(1, min(round(o.nlist_factor * math.sqrt(n)), n // 39)))

    def build(self, vectors: np.ndarray, labels: np.ndarray) -> None:
        """Train the quantizer on ``vectors`` and fill the lists."""
        x = self._check(vectors, labels)
        o: IVFOptions = self.options
        with faiss_threads(self.threads) as faiss:
            self._quantizer = faiss.IndexFlatIP(self.dim)
            nlist = self.nlist(x.shape[0])
            self._index = faiss.IndexIVFFlat(
                self._quantizer, self.dim, nlist, faiss.METRIC_INNER_PRODUCT
            )
            self._index.cp.seed = self.seed % (2**31)
            self._index.train(x)
            self._index.nprobe = min(o.nprobe, nlist)
            self._index.add_with_ids(x, np.asarray(labels, dtype=np.int64))
        self._labels = np.asarray(labels, dtype=np.int64).copy()

    def add(self, vectors: np.ndarray, labels: np.ndarray) -> None:
        """Add ``vectors`` with their ``labels`` to their lists."""
        x = self._check(vectors, labels)
        with faiss_threads(self.threads):
            self._index.add_with_ids(x, np.asarray(labels, dtype=np.int64))
        self._labels = np.concatenate([self._labels, np.asarray(labels, dtype=np.int64)])

    def remove(self, labels: np.ndarray) -> None:
        """Delete the vectors with these ``labels`` from their lists."""
        drop = np.intersect1d(self._labels, np.asarray(labels, dtype=np.int64))
        with faiss_threads(self.threads):
            self._index.remove_ids(drop)
        self._labels = self._labels[~np.isin(self._labels, drop)]

    def search(self, queries: np.ndarray, k: int) -> np.ndarray:
        """Return the labels of the ``k`` nearest vectors in the probed lists."""
        q = self._check(queries)
        with faiss_threads(self.threads):
            _, found = self._index.search(q, int(k))
        return np.asarray(found, dtype=np.int64)
