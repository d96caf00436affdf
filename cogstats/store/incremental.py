"""The lifecycle gate's ridge fit, kept up to date run by run (a store with many lessons).

The lifecycle gate judges on the debiased ridge (:func:`~cogstats.estimators.debiased_ridge
.ridge_fit` with ``group_duplicates=True``): an inverse of ``A = Z'Z + K`` per pass, O(p^3)
(at 1,000 lessons about 0.1 s a pass, up to four passes) plus O(p^2) Python loops that
find duplicated inclusion patterns.  :class:`IncrementalRidge` gives the same fit for
O(p^2) a run:

- **the inverse of the all-penalized system** ``M0 = (G + k I)^-1`` (on the groups'
  columns) is kept by a rank-one (Sherman-Morrison) update per run, the run's indicator
  vector ``z`` being sparse; it is recomputed from ``G`` every ``refresh_every`` runs (the
  rounding of the updates never accumulates past that), and whenever the columns change
  (a new lesson, a group of identical inclusion patterns that forms or splits, a covariate
  that stops being constant);
- **the passes** free a few clear suspects (their penalty 0): their inverse is ``M0`` plus a
  correction of rank ``|F|`` (Woodbury), so a pass costs ``1 + |F|`` products of ``M0``
  with a vector;
- **the per-pass numbers** use ``A b = Z'y`` and ``G = A - K``: the residual sum of squares
  ``y'y - b'Z'y - sum k b^2`` and the trace ``p - sum k M_jj`` cost O(p); ``(M o M) k``
  (each lesson's ``(M K M)_jj``) is kept up to date with ``M0`` (one product a run) and
  corrected for the freed lessons;
- **duplicate patterns and identifiability** come from a 64-bit hash of each lesson's runs
  (equal patterns have equal hashes; every candidate pair is confirmed on ``G``), O(p) a
  look instead of O(p^2).

Every per-lesson number then goes through the estimator's own functions
(:func:`~cogstats.estimators.debiased_ridge.lesson_inference`,
:func:`~cogstats.estimators.debiased_ridge.suspect_penalties`), and the gate's rule
(:meth:`LifecycleGate.decide`) runs unchanged on the fit.  The numbers equal the batch
fit's to rounding (1e-9 relative, checked in tests/unit/test_store_incremental.py, where the
decisions are checked identical at every look of a long stream).  Anything unusual (a
system that is not positive definite, a Woodbury correction that is) falls back to the
batch fit for that look.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["INCREMENTAL_FROM", "IncrementalRidge"]

#: The incremental fit is used from this many columns on (at most this many, the batch
#: fit is the elementwise inverse the simulator's kernel mirrors bit for bit: a store
#: of that size decides bit for bit as the simulator; above it the batch fit is LAPACK's).
INCREMENTAL_FROM = 257

_M64 = (1 << 64) - 1


def _run_hash(i: int) -> int:
    """Return a 64-bit hash of run position ``i`` (splitmix64); a pattern sums them."""
    z = (i + 0x9E3779B97F4A7C15) & _M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return z ^ (z >> 31)


class IncrementalRidge:
    """The ridge fit of a :class:`~cogstats.store.engine.LifecycleEngine`, run by run.

    Parameters
    ----------
    gate : LifecycleGate
        The fit's options (``penalty``, ``passes``, ``suspect_z``, ``min_share``,
        ``max_information``).
    refresh_every : int
        Recompute the inverse from the statistics every this many runs.
    """

    def __init__(self, gate: Any, refresh_every: int = 500) -> None:
        self.gate = gate
        self.refresh_every = int(refresh_every)
        self.k = float(gate.penalty)
        self.hash = np.zeros(0, dtype=np.uint64)
        self.m0: np.ndarray | None = None  # (G_R + K_R)^-1 on the reduced columns
        self.s0: np.ndarray | None = None  # (M0 o M0) k0
        self.cols: np.ndarray | None = None  # the reduced columns (indices into the full)
        self.rep: np.ndarray | None = None  # each lesson's group representative
        self.nf = -1  # fixed columns the reduced system holds
        self.since_refresh = 0
        self.fallbacks = 0
        self.refreshes = 0

    # ------------------------------------------------------------------ runs
    def add_run(self, position: int, present: list[int], m: int) -> None:
        """Note a run (its position and its lesson columns; ``m`` lessons now)."""
        if self.hash.shape[0] < m:
            self.hash = np.concatenate([self.hash, np.zeros(m - self.hash.shape[0], np.uint64)])
        if present:
            h = np.uint64(_run_hash(position))
            with np.errstate(over="ignore"):
                self.hash[present] += h

    def update(self, stats: Any, z_idx: np.ndarray, z: np.ndarray) -> None:
        """Update ``M0`` by the run just added to ``stats`` (full indices ``z_idx``, values ``z``).

        Marks the system for a recomputation when its columns changed.
        """
        if self.m0 is None or self.cols is None:
            return
        nf, gram, runs = stats.ridge.n_fixed, stats.ridge.gram, stats.ridge.runs
        rep = self._groups(gram, nf, runs)
        if self.rep is None or nf != self.nf or not np.array_equal(rep, self.rep):
            self.m0 = None  # recomputed at the next look
            return
        # the run's indicator on the reduced columns (a group is in the run as one)
        pos = {int(c): i for i, c in enumerate(self.cols)}
        nz: list[int] = []
        val: list[float] = []
        for c, v in zip(z_idx.tolist(), z.tolist(), strict=True):
            if c < nf:
                nz.append(c)
                val.append(v)
            else:
                j = pos.get(nf + int(rep[c - nf]))
                if j is not None and j not in nz:
                    nz.append(j)
                    val.append(v)
        zv = np.asarray(val)
        m0 = self.m0
        u = m0[:, nz] @ zv
        c = 1.0 + float(zv @ u[nz])
        k0 = self._k0(m0.shape[0])
        w = m0 @ (u * k0)  # for (M0 o M0) k0 after the update
        from scipy.linalg import blas

        # M0 -= u u' / c, in place (M0.T is the same memory in Fortran order)
        self.m0 = blas.dger(-1.0 / c, u, u, a=m0.T, overwrite_a=1).T
        s0 = self.s0 if self.s0 is not None else np.zeros(m0.shape[0])
        self.s0 = s0 - (2.0 / c) * u * w + (u * u) * (float((u * u) @ k0) / (c * c))
        self.since_refresh += 1
        if self.since_refresh >= self.refresh_every:
            self.m0 = None

    # ------------------------------------------------------------------ the fit
    def _k0(self, p: int) -> np.ndarray:
        k0 = np.full(p, self.k)
        k0[: self.nf] = 0.0
        return k0

    def _groups(self, gram: np.ndarray, nf: int, runs: int) -> np.ndarray:
        """Return ``duplicate_groups(gram, nf, runs)``, from the pattern hashes."""
        m = gram.shape[0] - nf
        rep = np.arange(m)
        diag = np.diag(gram)[nf:]
        valid = (diag > 0) & (diag < runs)
        key = self.hash[:m]
        order = np.lexsort((np.arange(m), key, diag))
        o_key, o_diag, o_valid = key[order], diag[order], valid[order]
        same = (o_key[1:] == o_key[:-1]) & (o_diag[1:] == o_diag[:-1]) & o_valid[1:]
        if not same.any():
            return rep
        i = 0
        while i < m:  # each block of equal (diag, hash): confirm on G, earliest column leads
            j = i + 1
            while j < m and same[j - 1]:
                j += 1
            if j - i > 1 and o_valid[i]:
                block = [int(x) for x in order[i:j]]  # column order within the block
                left = block
                while left:
                    lead, rest = left[0], []
                    for other in left[1:]:
                        if gram[nf + lead, nf + other] == diag[lead]:
                            rep[other] = lead
                        else:
                            rest.append(other)
                    left = rest
            i = j
        return rep

    def _refresh(self, stats: Any) -> bool:
        """Recompute ``M0`` and ``(M0 o M0) k0`` from the statistics (False: not PD)."""
        r = stats.ridge
        nf = r.n_fixed
        rep = self._groups(r.gram, nf, r.runs)
        m = rep.shape[0]
        keep = np.flatnonzero(rep == np.arange(m))
        cols = np.concatenate([np.arange(nf), nf + keep])
        a = r.gram[np.ix_(cols, cols)].copy()
        a[np.arange(nf, a.shape[0]), np.arange(nf, a.shape[0])] += self.k
        try:
            chol = np.linalg.cholesky(a)
        except np.linalg.LinAlgError:
            return False
        if not np.min(np.diag(chol) ** 2) > 1e-12 * float(np.max(np.diag(a))):
            return False
        self.m0 = np.ascontiguousarray(np.linalg.inv(a))
        self.nf, self.cols, self.rep = nf, cols, rep
        self.s0 = (self.m0 * self.m0) @ self._k0(len(cols))
        self.since_refresh = 0
        self.refreshes += 1
        return True

    def fit(self, stats: Any) -> Any:
        """Return the gate's :class:`RidgeFit` of ``stats``, or None (use the batch fit)."""
        from cogstats.estimators.debiased_ridge import RidgeFit

        r = stats.ridge
        if r.gram.shape[0] < INCREMENTAL_FROM or r.runs < 2:
            return None
        if self.m0 is None and not self._refresh(stats):
            self.fallbacks += 1
            return None
        reduced = self._passes(stats)
        if reduced is None or self.cols is None or self.rep is None:
            self.fallbacks += 1
            return None
        est, se, t, info, ident, pen, df, sigma = reduced
        nf = r.n_fixed
        rep = self.rep
        m = rep.shape[0]
        keep = self.cols[nf:] - nf
        pos = np.zeros(m, dtype=np.int64)
        pos[keep] = np.arange(keep.shape[0])
        at = pos[rep]
        alone = np.bincount(rep, minlength=m)[rep] == 1
        nan = np.full(m, np.nan)
        return RidgeFit(
            estimate=np.where(alone, est[at], nan),
            std_error=np.where(alone, se[at], nan),
            t=t[at],
            info=info[at],
            identifiable=alone & ident[at],
            penalized=pen[at] > 0,
            df=df[at],
            sigma=sigma[at],
        )

    def _passes(self, stats: Any) -> tuple[np.ndarray, ...] | None:
        """Return the ridge's passes on the reduced system (``ridge_fit``, no inverse)."""
        from cogstats.estimators.debiased_ridge import suspect_penalties

        gate, r = self.gate, stats.ridge
        m0, s0, cols = self.m0, self.s0, self.cols
        if m0 is None or s0 is None or cols is None:
            return None
        nf = self.nf
        gram_r_diag = np.diag(r.gram)[cols]
        zty = r.zty[cols]
        p = cols.shape[0]
        raw_info = gram_r_diag[nf:]
        ident = (raw_info > 0) & (raw_info < r.runs)
        k0 = self._k0(p)
        b0 = m0 @ zty
        d0 = np.diag(m0).copy()
        pen = np.full(p - nf, self.k)
        out = None
        for step in range(int(gate.passes)):
            out = self._one_pass(pen, m0, s0, b0, d0, zty, k0, r.yty, r.runs, nf)
            if out is None:
                return None
            if step == int(gate.passes) - 1:
                break
            with np.errstate(invalid="ignore"):
                new = suspect_penalties(
                    ident,
                    out[2],
                    out[3],
                    raw_info,
                    float(gate.suspect_z),
                    float(gate.min_share),
                    self.k,
                    float(gate.max_information),
                )
            if np.array_equal(new, pen):
                break
            pen = new
        if out is None:
            return None
        est, se, t, info, df, s2 = out
        keep = ident & np.isfinite(se) & (se > 0)
        sigma = np.sqrt(s2)
        return (
            np.where(ident, est, np.nan),
            np.where(keep, se, np.nan),
            np.where(keep, t, np.nan),
            info,
            ident,
            pen,
            df,
            sigma,
        )

    def _one_pass(
        self,
        pen: np.ndarray,
        m0: np.ndarray,
        s0: np.ndarray,
        b0: np.ndarray,
        d0: np.ndarray,
        zty: np.ndarray,
        k0: np.ndarray,
        yty: float,
        runs: int,
        nf: int,
    ) -> tuple[np.ndarray, ...] | None:
        """One pass: per lesson (estimate, se, t, info, df, s2), or None (not PD)."""
        from cogstats.estimators.debiased_ridge import lesson_inference

        p = m0.shape[0]
        free = nf + np.flatnonzero(pen == 0.0)
        kvec = k0.copy()
        if free.size == 0:
            b, diag, mkm = b0, d0, s0
            mkb = m0 @ (kvec * b)
        else:
            kvec[free] = 0.0
            v = m0[:, free]  # p x |F|
            core = np.eye(free.size) / self.k - m0[np.ix_(free, free)]
            try:
                chol = np.linalg.cholesky(core)
            except np.linalg.LinAlgError:
                return None
            if not np.min(np.diag(chol) ** 2) > 1e-12 * float(np.max(np.abs(np.diag(core)))):
                return None
            s = np.linalg.inv(core)
            s = (s + s.T) / 2.0
            w = v @ s  # p x |F|
            b = b0 + w @ (v.T @ zty)
            diag = d0 + np.sum(w * v, axis=1)
            kb = kvec * b
            mkb = m0 @ kb + w @ (v.T @ kb)
            y = m0 @ (v * kvec[:, None])  # p x |F|
            q = v.T @ (v * kvec[:, None])  # |F| x |F|
            term1 = s0 - self.k * np.sum(v * v, axis=1)
            term2 = 2.0 * np.sum(w * y, axis=1)
            term3 = np.sum((w @ q) * w, axis=1)
            mkm = term1 + term2 + term3
        trace = p - float(kvec @ diag)
        rss = yty - float(b @ zty) - float(kvec @ (b * b))
        with np.errstate(divide="ignore", invalid="ignore"):
            est, se, t, info, df, s2 = lesson_inference(
                b[nf:], diag[nf:], pen, mkb[nf:], mkm[nf:], rss, trace, runs, 0.0, 0.0
            )
        return est, se, t, info, df, s2
