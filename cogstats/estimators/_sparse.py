"""Cross-products and leverages of a sparse design, from each row's nonzeros.

A run x column design with ``r_i`` nonzeros in row ``i`` (the lessons of the run, plus the
intercept and dense covariate columns) has ``sum_i r_i^2`` within-row pairs of nonzeros;
``X' W X`` and the leverages ``h_i = x_i' A x_i`` are sums over those pairs.  Processing
them in chunks of about ``PAIR_CHUNK`` pairs costs O(sum_i r_i^2) time and O(PAIR_CHUNK +
k^2) memory, whatever the number of runs; a sparse-sparse product (scipy's ``X.T @ X``)
builds the same matrix more slowly when it is dense (lessons co-occur), and a dense
design does not fit in memory at 100,000 runs x 2,000 lessons.  Hand-written (numpy only)
because neither scipy nor statsmodels offers these two reductions on sparse rows.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from scipy import sparse

__all__ = ["PAIR_CHUNK", "gram", "leverages"]

#: pairs of nonzeros handled at once (bounds the working memory: ~40 bytes a pair)
PAIR_CHUNK = 4_000_000


def _row_blocks(
    csr: sparse.csr_array,
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Yield ``(rows, cols, vals)`` for blocks of rows with the same number of nonzeros.

    For a block of ``b`` rows with ``c`` nonzeros each: ``rows`` (b,), ``cols`` and
    ``vals`` (b, c), at most ``PAIR_CHUNK`` pairs a block.  Columns within a row are in
    increasing order.
    """
    n = csr.shape[0]
    indptr = csr.indptr.astype(np.int64)
    indices = csr.indices.astype(np.int64)
    data = csr.data.astype(np.float64)
    counts = np.diff(indptr)
    for c in np.unique(counts).tolist():
        if c == 0:
            continue
        rows_c = np.flatnonzero(counts == c)
        step = max(1, PAIR_CHUNK // (c * c))
        for start in range(0, rows_c.size, step):
            rows = rows_c[start : start + step]
            pos = indptr[rows][:, None] + np.arange(c)[None, :]
            yield rows, indices[pos], data[pos]
    del n


def gram(csr: sparse.csr_array, weights: np.ndarray | None = None) -> np.ndarray:
    """``X' diag(weights) X`` as a dense ``(k, k)`` array (``weights`` default 1).

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import sparse
    >>> x = sparse.csr_array(np.array([[1.0, 0.0, 2.0], [0.0, 1.0, 1.0]]))
    >>> w = np.array([2.0, 3.0])
    >>> bool(np.allclose(gram(x, w), x.toarray().T @ (x.toarray() * w[:, None])))
    True
    """
    k = csr.shape[1]
    csr = _sorted(csr)
    upper = np.zeros(k * k)
    keys: list[np.ndarray] = []
    values: list[np.ndarray] = []
    pending = 0
    for rows, cols, vals in _row_blocks(csr):
        c = cols.shape[1]
        ia, ib = np.triu_indices(c)  # each unordered pair once (columns increase in a row)
        contrib = vals[:, ia] * vals[:, ib]
        if weights is not None:
            contrib *= weights[rows][:, None]
        keys.append((cols[:, ia] * k + cols[:, ib]).ravel())
        values.append(contrib.ravel())
        pending += contrib.size
        if pending >= PAIR_CHUNK:  # one bincount per chunk of pairs, not per block
            upper += np.bincount(np.concatenate(keys), np.concatenate(values), k * k)
            keys, values, pending = [], [], 0
    if keys:
        upper += np.bincount(np.concatenate(keys), np.concatenate(values), k * k)
    out = upper.reshape(k, k)
    return out + out.T - np.diag(np.diag(out))


def leverages(csr: sparse.csr_array, inverse: np.ndarray) -> np.ndarray:
    """``h_i = x_i' A x_i`` for every row (``A`` = ``inverse``, symmetric ``(k, k)``).

    Examples
    --------
    >>> import numpy as np
    >>> from scipy import sparse
    >>> x = np.array([[1.0, 0.0], [1.0, 1.0], [1.0, 1.0]])
    >>> a = np.linalg.inv(x.T @ x)
    >>> bool(np.allclose(leverages(sparse.csr_array(x), a), np.diag(x @ a @ x.T)))
    True
    """
    n, k = csr.shape
    csr = _sorted(csr)
    flat = np.ascontiguousarray(inverse, dtype=np.float64).ravel()
    h = np.zeros(n)
    for rows, cols, vals in _row_blocks(csr):
        c = cols.shape[1]
        ia, ib = np.triu_indices(c)
        twice = np.where(ia == ib, 1.0, 2.0)  # off-diagonal pairs count both ways
        terms = vals[:, ia] * vals[:, ib] * flat[cols[:, ia] * k + cols[:, ib]]
        h[rows] = terms @ twice
    return h


def _sorted(csr: sparse.csr_array) -> sparse.csr_array:
    if csr.has_sorted_indices:
        return csr
    out = csr.copy()
    out.sort_indices()
    return out
