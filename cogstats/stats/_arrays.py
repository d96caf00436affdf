"""Growing arrays and run hashes shared by the running statistics (internal)."""

from __future__ import annotations

import numpy as np

_MASK64 = (1 << 64) - 1


def grow(a: np.ndarray, size: int) -> np.ndarray:
    """Return ``a`` with room for ``size`` rows (capacity doubles; new rows are zero)."""
    if a.shape[0] >= size:
        return a
    cap = max(size, 2 * a.shape[0], 16)
    out = np.zeros((cap, *a.shape[1:]), dtype=a.dtype)
    out[: a.shape[0]] = a
    return out


def grow_square(a: np.ndarray, size: int) -> np.ndarray:
    """Return the square ``a`` with room for ``size`` rows and columns (new entries zero)."""
    if a.shape[0] >= size:
        return a
    cap = max(size, 2 * a.shape[0], 16)
    out = np.zeros((cap, cap), dtype=a.dtype)
    k = a.shape[0]
    out[:k, :k] = a
    return out


def splitmix(x: int) -> int:
    """SplitMix64: a 64-bit hash of a run position (Python ints, wrapped to 64 bits)."""
    x = (x + 0x9E3779B97F4A7C15) & _MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    return x ^ (x >> 31)


def run_hashes(position: int) -> np.ndarray:
    """Return the two 64-bit hashes of run ``position`` (summed per lesson: inclusion patterns)."""
    return np.array(
        [splitmix(position * 2 + 0x5EED), splitmix(position * 2 + 1 + 0xC0FFEE)],
        dtype=np.uint64,
    )
