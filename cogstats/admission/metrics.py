"""Serving queries through a defence, and the per-query measures (recall, poisoned hits).

Nothing here is scripted: results come from the index's own search, and the read-time
filter drops what it flags from what the index returned.  Recall at ``k`` is the share of
a query's exact ``k`` nearest benign memories among the (at most ``k``) results served.
"""

from __future__ import annotations

import numpy as np

from cogstats._validation import ParameterError
from cogstats.admission.index import VectorIndex

__all__ = ["recall_at_k", "serve"]


def serve(
    index: VectorIndex,
    queries: np.ndarray,
    k: int,
    *,
    flagged: np.ndarray | None = None,
    overfetch: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Search ``k + overfetch`` results, drop the flagged ones, keep the first ``k``.

    Parameters
    ----------
    index : VectorIndex
        A built index.
    queries : numpy.ndarray
        ``(n, dim)``.
    k : int
        Results served per query.
    flagged : numpy.ndarray of bool, optional
        By label: results the read-time filter drops (labels beyond its length are
        never flagged, e.g. consolidation summaries).
    overfetch : int
        Extra results fetched before filtering.

    Returns
    -------
    served : numpy.ndarray
        ``(n, k)`` labels, -1 where fewer than ``k`` survive.
    dropped : numpy.ndarray
        ``(n,)`` how many of the fetched results the filter dropped.

    Examples
    --------
    >>> import numpy as np
    >>> from cogstats.admission.index import make_index
    >>> x = np.eye(4, dtype="float32")
    >>> index = make_index("flat", 4)
    >>> index.build(x, np.arange(4))
    >>> q = np.array([[1.0, 0.5, 0.1, 0.0]], dtype="float32")
    >>> served, dropped = serve(index, q, 2, flagged=np.array([True, False, False, False]))
    >>> served.tolist(), dropped.tolist()
    ([[1, -1]], [1])
    >>> serve(index, q, 2, flagged=np.array([True, False, False, False]), overfetch=1)[0].tolist()
    [[1, 2]]
    """
    if k < 1 or overfetch < 0:
        raise ParameterError(f"k must be >= 1 and overfetch >= 0; got k={k}, overfetch={overfetch}")
    fetched = index.search(queries, k + overfetch)
    keep = fetched >= 0
    dropped = np.zeros(fetched.shape[0], dtype=np.int64)
    if flagged is not None:
        flagged = np.asarray(flagged, dtype=bool)
        in_range = keep & (fetched < flagged.size)
        hit = np.zeros_like(keep)
        hit[in_range] = flagged[fetched[in_range]]
        dropped = hit.sum(axis=1)
        keep &= ~hit
    order = np.argsort(~keep, axis=1, kind="stable")  # survivors first, in rank order
    served = np.take_along_axis(np.where(keep, fetched, -1), order, axis=1)[:, :k]
    return served, dropped


def recall_at_k(served: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """Per query: the share of the true neighbours (``truth``, ``(n, k)``) among ``served``.

    Examples
    --------
    >>> import numpy as np
    >>> recall_at_k(np.array([[3, 1, -1]]), np.array([[1, 2, 3]])).tolist()
    [0.6666666666666666]
    """
    served = np.asarray(served)
    truth = np.asarray(truth)
    if served.shape[0] != truth.shape[0]:
        raise ParameterError(
            f"served and truth must have one row per query; got {served.shape} and {truth.shape}"
        )
    valid = truth >= 0
    hits = ((served[:, :, None] == truth[:, None, :]) & valid[:, None, :]).any(axis=1)
    return hits.sum(axis=1) / np.maximum(valid.sum(axis=1), 1)
