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


class _Inverse:
    """An inverse of the penalized system kept up to date.

    ``M = (G_R + diag(k))^-1``, ``s = (M o M) k`` and the freed lessons ``free`` (reduced
    lesson positions, whose penalty is 0).
    """

    def __init__(self, m: np.ndarray, kvec: np.ndarray, free: np.ndarray) -> None:
        self.m = np.ascontiguousarray(m)
        self.k = kvec
        self.free = free
        self.s = (self.m * self.m) @ kvec

    def rank_one(self, nz: list[int], zv: np.ndarray) -> None:
        """``M`` after ``A += z z'`` (Sherman-Morrison, in place), and ``s`` with it."""
        from scipy.linalg import blas

        m = self.m
        u = m[:, nz] @ zv
        c = 1.0 + float(zv @ u[nz])
        w = m @ (u * self.k)
        # M -= u u' / c, in place (M.T is the same memory in Fortran order)
        self.m = blas.dger(-1.0 / c, u, u, a=m.T, overwrite_a=1).T
        self.s = self.s - (2.0 / c) * u * w + (u * u) * (float((u * u) @ self.k) / (c * c))


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
        self.base: _Inverse | None = None  # every lesson penalized (the first pass)
        # the inverse each later pass used at the last look (consecutive looks free
        # nearly the same lessons at the same pass)
        self.stars: list[_Inverse | None] = [None] * int(gate.passes)
        self.cols: np.ndarray | None = None  # the reduced columns (indices into the full)
        self.rep: np.ndarray | None = None  # each lesson's group representative
        self.nf = -1  # fixed columns the reduced system holds
        self._pos: dict[int, int] = {}
        self.since_refresh = 0
        self.fallbacks = 0
        self.refreshes = 0
        self.corrections = 0  # passes corrected from a kept inverse (a Woodbury step)
        #: a freed set that differs from the kept one in more lessons than this is
        #: inverted afresh (O(p^3)) rather than corrected (O(p^2) a lesson)
        self.max_correction = 48

    @property
    def m0(self) -> np.ndarray | None:
        """The all-penalized inverse (None: recomputed at the next look)."""
        return None if self.base is None else self.base.m

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
        """Update the kept inverses by the run just added to ``stats`` (``z`` at ``z_idx``).

        Drops them when the columns changed (recomputed at the next look).
        """
        if self.base is None or self.cols is None:
            return
        nf, gram, runs = stats.ridge.n_fixed, stats.ridge.gram, stats.ridge.runs
        rep = self._groups(gram, nf, runs)
        if self.rep is None or nf != self.nf or not np.array_equal(rep, self.rep):
            self._drop()
            return
        # the run's indicator on the reduced columns (a group is in the run as one)
        pos = self._pos
        nz: list[int] = []
        val: list[float] = []
        for c, v in zip(z_idx.tolist(), z.tolist(), strict=True):
            j = c if c < nf else pos.get(nf + int(rep[c - nf]))
            if j is not None and j not in nz:
                nz.append(j)
                val.append(v)
        zv = np.asarray(val)
        for kept in self._kept():
            kept.rank_one(nz, zv)
        self.since_refresh += 1
        if self.since_refresh >= self.refresh_every:
            self._drop()

    def _kept(self) -> list[_Inverse]:
        """Every inverse kept (each once)."""
        out: list[_Inverse] = [] if self.base is None else [self.base]
        for star in self.stars:
            if star is not None and all(star is not o for o in out):
                out.append(star)
        return out

    def _drop(self) -> None:
        self.base = None
        self.stars = [None] * len(self.stars)

    # ------------------------------------------------------------------ the fit
    def _kvec(self, p: int, free: np.ndarray) -> np.ndarray:
        kvec = np.full(p, self.k)
        kvec[: self.nf] = 0.0
        kvec[self.nf + free] = 0.0
        return kvec

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
                left = [int(x) for x in order[i:j]]  # column order within the block
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

    def _invert(self, stats: Any, free: np.ndarray) -> _Inverse | None:
        """Invert the system with ``free`` unpenalized afresh (None: not positive definite)."""
        if self.cols is None:
            return None
        a = stats.ridge.gram[np.ix_(self.cols, self.cols)]
        p = a.shape[0]
        kvec = self._kvec(p, free)
        full = a.copy()
        full[np.arange(p), np.arange(p)] += kvec
        try:
            chol = np.linalg.cholesky(full)
        except np.linalg.LinAlgError:
            return None
        if not np.min(np.diag(chol) ** 2) > 1e-12 * float(np.max(np.diag(full))):
            return None
        return _Inverse(np.linalg.inv(full), kvec, free)

    def _refresh(self, stats: Any) -> bool:
        """Recompute the columns and the all-penalized inverse (False: not PD)."""
        r = stats.ridge
        nf = r.n_fixed
        rep = self._groups(r.gram, nf, r.runs)
        m = rep.shape[0]
        keep = np.flatnonzero(rep == np.arange(m))
        cols = np.concatenate([np.arange(nf), nf + keep])
        self.nf, self.cols, self.rep = nf, cols, rep
        self._pos = {int(c): i for i, c in enumerate(cols.tolist())}
        self.base = self._invert(stats, np.zeros(0, dtype=np.int64))
        self.stars = [None] * len(self.stars)
        self.since_refresh = 0
        self.refreshes += 1
        return self.base is not None

    def fit(self, stats: Any) -> Any:
        """Return the gate's :class:`RidgeFit` of ``stats``, or None (use the batch fit)."""
        from cogstats.estimators.debiased_ridge import RidgeFit

        r = stats.ridge
        if r.gram.shape[0] < INCREMENTAL_FROM or r.runs < 2:
            return None
        if self.base is None and not self._refresh(stats):
            self.fallbacks += 1
            return None
        reduced = self._passes(stats)
        if reduced is None or self.cols is None or self.rep is None:
            self.fallbacks += 1
            self._drop()
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

        gate, r, cols, base = self.gate, stats.ridge, self.cols, self.base
        if cols is None or base is None:
            return None
        nf = self.nf
        zty = r.zty[cols]
        raw_info = np.diag(r.gram)[cols][nf:]
        ident = (raw_info > 0) & (raw_info < r.runs)
        pen = np.full(cols.shape[0] - nf, self.k)
        out = None
        for step in range(int(gate.passes)):
            free = np.flatnonzero(pen == 0.0)
            kept = base if free.size == 0 else self._nearest(stats, step, free)
            if kept is None:
                return None
            out = self._one_pass(kept, free, zty, r.yty, r.runs, pen)
            if out is None:
                return None
            if free.size:
                self._keep(step, free, kept, out[6:])
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
        est, se, t, info, df, s2 = out[:6]
        keep = ident & np.isfinite(se) & (se > 0)
        return (
            np.where(ident, est, np.nan),
            np.where(keep, se, np.nan),
            np.where(keep, t, np.nan),
            info,
            ident,
            pen,
            df,
            np.sqrt(s2),
        )

    def _nearest(self, stats: Any, step: int, free: np.ndarray) -> _Inverse | None:
        """Return the kept inverse nearest ``free`` (corrected from it), or a fresh one."""
        best, size = None, self.max_correction + 1
        for kept in self._kept():
            d = np.setxor1d(kept.free, free, assume_unique=True).size
            if d < size:
                best, size = kept, d
        if best is not None:
            return best
        fresh = self._invert(stats, free)
        if fresh is not None:
            self.stars[step] = fresh
        return fresh

    def _keep(
        self, step: int, free: np.ndarray, kept: _Inverse, extra: tuple[np.ndarray, ...]
    ) -> None:
        """Keep pass ``step``'s inverse (made explicit) for the next look's same pass."""
        if np.array_equal(kept.free, free):
            self.stars[step] = kept
        else:  # corrected: form it (O(p^2 |D|))
            self.stars[step] = self._formed(kept, free, extra)

    def _formed(self, kept: _Inverse, free: np.ndarray, extra: tuple[np.ndarray, ...]) -> _Inverse:
        """Return the corrected inverse made explicit: ``M + V S V'``, its ``(M o M) k``."""
        v, s_mat, mkm = extra
        out = _Inverse.__new__(_Inverse)
        out.m = np.ascontiguousarray(kept.m + (v @ s_mat) @ v.T) if v.size else kept.m.copy()
        out.k = self._kvec(kept.m.shape[0], free)
        out.free = free
        out.s = mkm.copy()
        return out

    def _one_pass(
        self,
        kept: _Inverse,
        free: np.ndarray,
        zty: np.ndarray,
        yty: float,
        runs: int,
        pen: np.ndarray,
    ) -> tuple[np.ndarray, ...] | None:
        """One pass from a kept inverse, corrected for the lessons whose penalty differs.

        Returns (estimate, se, t, info, df, s2) per lesson, then the correction ``V``,
        ``S`` and ``(M o M) k`` (None: not positive definite).
        """
        from cogstats.estimators.debiased_ridge import lesson_inference

        nf = self.nf
        m_b = kept.m
        p = m_b.shape[0]
        kvec = self._kvec(p, free)
        d = nf + np.setxor1d(kept.free, free, assume_unique=True)  # penalty changes
        b = m_b @ zty
        diag = np.diag(m_b).copy()
        if d.size == 0:
            v = np.zeros((p, 0))
            s_mat = np.zeros((0, 0))
            mkb = m_b @ (kvec * b)
            mkm = kept.s
        else:
            self.corrections += 1
            dk = kvec[d] - kept.k[d]
            v = m_b[:, d]  # p x |D|
            core = np.diag(1.0 / dk) + m_b[np.ix_(d, d)]
            try:
                s_mat = -np.linalg.inv(core)
            except np.linalg.LinAlgError:
                return None
            if not np.all(np.isfinite(s_mat)) or np.linalg.cond(core) > 1e10:
                return None
            s_mat = (s_mat + s_mat.T) / 2.0
            w = v @ s_mat  # p x |D|
            b = b + w @ (v.T @ zty)
            diag = diag + np.sum(w * v, axis=1)
            if not np.all(diag > 0):
                return None
            kb = kvec * b
            mkb = m_b @ kb + w @ (v.T @ kb)
            y = m_b @ (v * kvec[:, None])  # p x |D|
            q = v.T @ (v * kvec[:, None])  # |D| x |D|
            mkm = kept.s + (v * v) @ dk + 2.0 * np.sum(w * y, axis=1) + np.sum((w @ q) * w, axis=1)
        trace = p - float(kvec @ diag)
        rss = yty - float(b @ zty) - float(kvec @ (b * b))
        with np.errstate(divide="ignore", invalid="ignore"):
            est, se, t, info, df, s2 = lesson_inference(
                b[nf:], diag[nf:], pen, mkb[nf:], mkm[nf:], rss, trace, runs, 0.0, 0.0
            )
        return est, se, t, info, df, s2, v, s_mat, mkm
