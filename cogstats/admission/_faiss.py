"""Lazy access to faiss (the ``admission`` extra), run on one thread.

faiss is imported on first use only, so importing :mod:`cogstats.admission` (or anything
on the production path) never loads it.  Every call into faiss here runs inside
:func:`faiss_threads`, which pins OpenMP to a fixed number of threads (one by default:
results are then bit-for-bit reproducible, and a shared machine is not flooded) and
restores the previous setting afterwards.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

__all__ = ["faiss_module", "faiss_threads"]


def faiss_module() -> Any:
    """Import ``faiss``; an ImportError naming the extra when it is not installed."""
    try:
        import faiss
    except ImportError as exc:  # pragma: no cover - the dev environment has it
        raise ImportError(
            "cogstats.admission needs faiss-cpu: pip install 'cogstats[admission]'"
        ) from exc
    return faiss


@contextlib.contextmanager
def faiss_threads(threads: int = 1) -> Iterator[Any]:
    """Run the block with faiss (OpenMP) on ``threads`` threads; yields the faiss module."""
    faiss = faiss_module()
    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(int(threads))
    try:
        yield faiss
    finally:
        faiss.omp_set_num_threads(before)
