"""The permutation intervals' overlap counts, compiled (used when numba is installed).

``M[b, j] = #{i : X[i, j] = 1 and X[idx[b, i], j] = 1}`` from the rows of ``X`` packed as
64-lesson words: AND a row with its image under the permutation, and add the ANDed words
into per-lesson counters held bit-sliced (one 64-lesson word per bit plane: ones, twos,
fours, ...).  Sixteen runs at a time go through a carry-save adder tree (Harley-Seal), so
each word costs a handful of branch-free word operations, O(B n k / 64) in all, whatever
the inclusion density (a loop over the set bits mispredicts a branch on most words).  The
planes are read back into counts once per permutation.  numba is an optional dependency
(the ``sim`` extra): :mod:`cogstats.estimators.permutation` imports this module only when
a permutation test with intervals runs, and falls back to numpy without numba.  The
kernel releases the GIL so that threads share the permutations; its compiled code is
cached on disk.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit


@njit(inline="always")
def _csa(a: Any, b: Any, c: Any) -> tuple[Any, Any]:
    """Carry-save adder on words: ``(carry, sum)`` of the bitwise three-way addition."""
    u = a ^ b
    return (a & b) | (u & c), u ^ c


@njit(cache=True, nogil=True)
def overlap_counts(bits: np.ndarray, idx: np.ndarray, out: np.ndarray) -> None:
    """Fill ``out`` (``(B, k)`` int64) with the overlap counts."""
    n, w = bits.shape
    k = out.shape[1]
    blocks = n // 16
    high = 1  # planes for the number of sixteens (at most blocks)
    while (1 << high) <= blocks:
        high += 1
    planes = 4 + high
    acc = np.zeros((planes, w), dtype=np.uint64)  # ones, twos, fours, eights, 16s, 32s, ...
    one = np.uint64(1)
    for b in range(idx.shape[0]):
        acc[:, :] = 0
        perm = idx[b]
        for blk in range(blocks):
            i = blk * 16
            r0, r1, r2, r3 = bits[i], bits[i + 1], bits[i + 2], bits[i + 3]
            r4, r5, r6, r7 = bits[i + 4], bits[i + 5], bits[i + 6], bits[i + 7]
            r8, r9, r10, r11 = bits[i + 8], bits[i + 9], bits[i + 10], bits[i + 11]
            r12, r13, r14, r15 = bits[i + 12], bits[i + 13], bits[i + 14], bits[i + 15]
            s0, s1, s2, s3 = bits[perm[i]], bits[perm[i + 1]], bits[perm[i + 2]], bits[perm[i + 3]]
            s4, s5 = bits[perm[i + 4]], bits[perm[i + 5]]
            s6, s7 = bits[perm[i + 6]], bits[perm[i + 7]]
            s8, s9 = bits[perm[i + 8]], bits[perm[i + 9]]
            s10, s11 = bits[perm[i + 10]], bits[perm[i + 11]]
            s12, s13 = bits[perm[i + 12]], bits[perm[i + 13]]
            s14, s15 = bits[perm[i + 14]], bits[perm[i + 15]]
            for q in range(w):
                ones, twos, fours, eights = acc[0, q], acc[1, q], acc[2, q], acc[3, q]
                ta, ones = _csa(ones, r0[q] & s0[q], r1[q] & s1[q])
                tb, ones = _csa(ones, r2[q] & s2[q], r3[q] & s3[q])
                fa, twos = _csa(twos, ta, tb)
                ta, ones = _csa(ones, r4[q] & s4[q], r5[q] & s5[q])
                tb, ones = _csa(ones, r6[q] & s6[q], r7[q] & s7[q])
                fb, twos = _csa(twos, ta, tb)
                ea, fours = _csa(fours, fa, fb)
                ta, ones = _csa(ones, r8[q] & s8[q], r9[q] & s9[q])
                tb, ones = _csa(ones, r10[q] & s10[q], r11[q] & s11[q])
                fa, twos = _csa(twos, ta, tb)
                ta, ones = _csa(ones, r12[q] & s12[q], r13[q] & s13[q])
                tb, ones = _csa(ones, r14[q] & s14[q], r15[q] & s15[q])
                fb, twos = _csa(twos, ta, tb)
                eb, fours = _csa(fours, fa, fb)
                carry, eights = _csa(eights, ea, eb)
                acc[0, q], acc[1, q], acc[2, q], acc[3, q] = ones, twos, fours, eights
                for p in range(4, planes):  # add the sixteens (ripple, no branch)
                    v = acc[p, q]
                    acc[p, q] = v ^ carry
                    carry = v & carry
        for i in range(blocks * 16, n):  # the last runs, one at a time
            r = bits[i]
            s = bits[perm[i]]
            for q in range(w):
                carry = r[q] & s[q]
                for p in range(planes):
                    v = acc[p, q]
                    acc[p, q] = v ^ carry
                    carry = v & carry
        row = out[b]
        for q in range(w):
            base = q * 64
            for t in range(min(64, k - base)):
                c = np.int64(0)
                for p in range(planes):
                    c += np.int64((acc[p, q] >> np.uint64(t)) & one) << p
                row[base + t] = c
