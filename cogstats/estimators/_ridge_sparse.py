"""The debiased ridge's pass on a sparse Gram matrix: memory that grows with the ledger.

One pass of :func:`cogstats.estimators.debiased_ridge.ridge_fit` needs, for ``A = Z'Z + K``
and ``M = A^-1``, the coefficients ``b = M Z'y``, ``M K b``, the diagonals of ``M`` and of
``M K M``, and ``tr(M Z'Z) = p - sum_j k_j M_jj``.  The dense pass inverts ``A``
(``O(p^2)`` memory, ``O(p^3)`` time: 9.6 GB and five minutes at 20,000 lessons).  Here,
exactly (to rounding) and without any ``p x p`` array:

- the columns are split into a dense *border* (the intercept, the covariates and the
  lessons that co-occur with lessons far apart in arrival order, such as a lesson kept
  for the whole ledger) and a *band*: the other lessons in order of first appearance,
  cut into consecutive blocks so that each block meets only its neighbours (lessons that
  arrive over time and leave the prompt again give a banded Gram matrix);
- the band ``B`` is block tridiagonal: its block LDL' factorisation solves with ``B``
  (``W = B^-1``), and the recursive selected inversion (the diagonal blocks of ``W``,
  backwards from the last) gives ``diag(W)``; the same recursion differentiated with
  respect to a scale ``s`` of the penalties (``A(s) = Z'Z + s K``, ``dM/ds = -M K M``)
  gives ``diag(W K W)``;
- the border joins by the Schur complement ``S = A_FF - C' W C`` (``C = A_LF``): ``M_FF =
  S^-1``, ``M_LF = -W C S^-1``, ``M_LL = W + W C S^-1 C' W``, whose diagonals and those
  of ``M K M`` are sums of rowwise products of ``p x r`` arrays (``r`` border columns).

Memory ``O(nnz + p (s + r))`` (``s`` the largest block), time ``O(p (s^2 + r^2))`` a pass.
The border and the blocks depend only on the Gram matrix's pattern (:func:`layout`,
computed once per fit); the border is the set of long-span lessons that minimises the
estimated cost.  A Gram matrix without such structure (every lesson co-occurring with
lessons of every era) gives one large block: exact still, at the dense cost.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse
from scipy.linalg import lapack

#: the smallest band block (smaller blocks waste BLAS time on short products)
MIN_BLOCK = 96
#: the largest border tried, in lessons (each border column costs a solve and ``p``
#: floats in four arrays)
MAX_BORDER = 600


@dataclass(frozen=True)
class Layout:
    """Border and band blocks of a Gram matrix's pattern (see the module docstring).

    Attributes
    ----------
    border : numpy.ndarray
        Column indices of the border (the fixed columns first, then border lessons).
    band : numpy.ndarray
        Column indices of the band, in band order.
    bounds : numpy.ndarray
        Block boundaries in band positions (``bounds[k]:bounds[k + 1]`` is block ``k``).
    """

    border: np.ndarray
    band: np.ndarray
    bounds: np.ndarray


def _upper_pairs(g: sparse.csr_array) -> tuple[np.ndarray, np.ndarray]:
    """Row and column indices of the strictly upper nonzeros of a square sparse matrix."""
    coo = g.tocoo()
    up = coo.row < coo.col
    return coo.row[up].astype(np.int64), coo.col[up].astype(np.int64)


def _blocks(reach: np.ndarray, n: int) -> np.ndarray:
    """Greedy block bounds so that position ``i`` meets nothing past the next block.

    ``reach[i]`` is the largest position that ``i`` meets (``i`` itself if none later).
    """
    bounds = [0]
    if n == 0:
        return np.asarray(bounds, dtype=np.int64)
    end = min(MIN_BLOCK, n)
    run_max = np.maximum.accumulate(reach)
    while True:
        bounds.append(end)
        if end >= n:
            break
        nxt = max(end + MIN_BLOCK, int(run_max[end - 1]) + 1)
        end = n if n - nxt < MIN_BLOCK else nxt
    return np.asarray(bounds, dtype=np.int64)


def _cost(bounds: np.ndarray, r: int, n: int) -> float:
    """Estimated flops of a pass: the band's recursion and the border's products."""
    s = np.diff(bounds).astype(float)
    return float(5.0 * np.sum(s**3) + 2.0 * r * np.sum(s**2) + 4.0 * n * r * r + r**3)


def layout(gram: sparse.csr_array, n_fixed: int) -> Layout:
    """Choose the border and the band blocks of a sparse Gram matrix (pattern only).

    Examples
    --------
    >>> from scipy import sparse
    >>> g = sparse.eye_array(1001, format="csr") * 2.0 + sparse.eye_array(1001, k=1)
    >>> lay = layout(sparse.csr_array(g + g.T), 1)  # 1,000 lessons in a chain
    >>> lay.border.tolist(), lay.band[:3].tolist(), lay.bounds.tolist()[:4]
    ([0], [1, 2, 3], [0, 96, 192, 288])
    """
    p = gram.shape[0]
    m = p - n_fixed
    lessons = sparse.csr_array(gram[n_fixed:, n_fixed:])
    rows, cols = _upper_pairs(lessons)
    far = np.arange(m, dtype=np.int64)
    np.maximum.at(far, rows, cols)
    span = far - np.arange(m)
    fixed = np.arange(n_fixed, dtype=np.int64)
    best: tuple[float, np.ndarray, np.ndarray] = (np.inf, np.zeros(m, dtype=bool), np.zeros(1))
    order = np.argsort(-span, kind="stable")
    # border candidates: lessons that reach well past the typical lesson
    long = int(np.sum(span > 2.0 * np.median(span))) if m else 0
    sizes = (0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 384, MAX_BORDER)
    for r in sorted({min(r, long) for r in sizes}):
        border = np.zeros(m, dtype=bool)
        border[order[:r]] = True
        pos = np.cumsum(~border) - 1
        keep = ~border[rows] & ~border[cols]
        n = m - r
        reach = np.arange(n, dtype=np.int64)
        np.maximum.at(reach, pos[rows[keep]], pos[cols[keep]])
        bounds = _blocks(reach, n)
        cost = _cost(bounds, r + n_fixed, n)
        if cost < best[0]:
            best = (cost, border, bounds)
    _, border, bounds = best
    lesson_border = np.flatnonzero(border) + n_fixed
    return Layout(
        border=np.concatenate([fixed, lesson_border]),
        band=np.flatnonzero(~border) + n_fixed,
        bounds=bounds,
    )


def _inverse(a: np.ndarray, floor: float) -> np.ndarray | None:
    """Inverse of a symmetric positive definite block, or None below the pivot floor."""
    if a.shape[0] == 0:
        return np.zeros((0, 0))
    c, info = lapack.dpotrf(a, lower=1, clean=1)
    if info != 0 or not np.min(np.diag(c)) ** 2 > floor:
        return None
    inv, info = lapack.dpotri(c, lower=1)
    if info != 0:  # pragma: no cover - a factor with positive pivots inverts
        return None
    inv = np.tril(inv)
    return inv + np.tril(inv, -1).T


class _Band:
    """Block LDL' of the band and the selected inversion (value and derivative).

    Block ``k + 1`` meets block ``k`` only through the columns ``C_k`` of block ``k``
    (its last lessons): ``E_k = B[k + 1, C_k]`` is kept dense and thin, and every product
    of the recursions is a block times a thin matrix, except one inverse a block.
    """

    def __init__(self, b: sparse.csr_array, bounds: np.ndarray, kb: np.ndarray):
        self.bounds = bounds
        nb = bounds.shape[0] - 1
        self.sl = [slice(int(bounds[k]), int(bounds[k + 1])) for k in range(nb)]
        self.kb = kb
        self.d = [b[s, :][:, s].toarray() for s in self.sl]
        self.cols: list[np.ndarray] = []  # C_k, positions within block k
        self.e: list[np.ndarray] = []  # E_k = B[block k + 1, C_k]
        for k in range(nb - 1):
            off = sparse.csr_array(b[self.sl[k + 1], :][:, self.sl[k]])
            c = np.unique(off.indices)
            self.cols.append(c)
            self.e.append(off[:, c].toarray())
        self.cols.append(np.zeros(0, dtype=np.int64))
        self.p: list[np.ndarray] = []  # P_k = Sigma_k^-1
        self.ddp: list[np.ndarray] = []  # diag(dP_k)
        self.dpc: list[np.ndarray] = []  # dP_k[:, C_k]
        self.pe: list[np.ndarray] = []  # P_k E_{k-1}
        self.dpe: list[np.ndarray] = []  # dP_k E_{k-1}

    def factor(self, floor: float) -> bool:
        """Forward recursion: ``P_k = Sigma_k^-1`` and the derivatives; False if singular.

        ``Sigma_k = D_k - E P_{k-1}[C, C] E'`` and ``dSigma_k = diag(k) - E dP_{k-1}[C, C]
        E'`` (``E = E_{k-1}``), ``dP_k = -P_k dSigma_k P_k``, applied to thin matrices only.
        """
        for k in range(len(self.sl)):
            sig = self.d[k]
            kb = self.kb[self.sl[k]]
            if k:
                e, c = self.e[k - 1], self.cols[k - 1]
                dpcc = self.dpc[k - 1][c]
                sig = sig - e @ (self.p[k - 1][np.ix_(c, c)] @ e.T)
            else:
                e = np.zeros((sig.shape[0], 0))
                dpcc = np.zeros((0, 0))
            inv = _inverse(sig, floor)
            if inv is None:
                return False

            def dp_times(
                x: np.ndarray,
                inv: np.ndarray = inv,
                kb: np.ndarray = kb,
                e: np.ndarray = e,
                dpcc: np.ndarray = dpcc,
            ) -> np.ndarray:
                px = inv @ x
                return -(inv @ (kb[:, None] * px - e @ (dpcc @ (e.T @ px))))

            ck = self.cols[k]
            eye = np.zeros((sig.shape[0], ck.shape[0]))
            eye[ck, np.arange(ck.shape[0])] = 1.0
            pe = inv @ e
            self.p.append(inv)
            self.dpc.append(dp_times(eye))
            self.pe.append(pe)
            self.dpe.append(dp_times(e))
            self.ddp.append(-((inv * inv) @ kb) + np.einsum("ij,ij->i", pe @ dpcc, pe))
        return True

    def selected(self) -> tuple[np.ndarray, np.ndarray]:
        """``diag(W)`` and ``diag(W K W)`` (``W = B^-1``), by the backward recursion.

        ``G_k = P_k + P_k[:, C] H_k P_k[C, :]`` with ``H_k = E_k' G_{k+1} E_k``, carried
        as ``Y_{k+1} = G_{k+1} E_k`` (and the derivatives alike).
        """
        n = int(self.bounds[-1])
        w = np.zeros(n)
        wkw = np.zeros(n)
        y = dy = np.zeros((0, 0))
        for k in range(len(self.sl) - 1, -1, -1):
            p, c, pe, dpe = self.p[k], self.cols[k], self.pe[k], self.dpe[k]
            gd, dgd = np.diag(p).copy(), self.ddp[k].copy()
            if c.shape[0]:
                e = self.e[k]
                h = e.T @ y
                dh = e.T @ dy
                h, dh = (h + h.T) / 2.0, (dh + dh.T) / 2.0
                pc, dpc = p[:, c], self.dpc[k]
                pch = pc @ h
                gd += np.einsum("ij,ij->i", pch, pc)
                dgd += 2.0 * np.einsum("ij,ij->i", dpc @ h, pc) + np.einsum("ij,ij->i", pc @ dh, pc)
                if k:
                    pec, dpec = pe[c], dpe[c]
                    y_new = pe + pch @ pec
                    dy = dpe + dpc @ (h @ pec) + pc @ (dh @ pec) + pch @ dpec
                    y = y_new
            else:
                y, dy = pe, dpe
            w[self.sl[k]] = gd
            wkw[self.sl[k]] = -dgd
        return w, wkw

    def solve(self, rhs: np.ndarray) -> np.ndarray:
        """``W rhs`` (block forward and backward substitution)."""
        nb = len(self.sl)
        if nb == 0:
            return np.zeros_like(rhs)
        y = [rhs[s] for s in self.sl]
        for k in range(1, nb):
            c = self.cols[k - 1]
            y[k] = y[k] - self.e[k - 1] @ (self.p[k - 1][c] @ y[k - 1])
        x: list[np.ndarray] = [np.zeros(0)] * nb
        for k in range(nb - 1, -1, -1):
            v = y[k]
            if k < nb - 1:
                v = v.copy()
                v[self.cols[k]] -= self.e[k].T @ x[k + 1]
            x[k] = self.p[k] @ v
        return np.concatenate(x, axis=0)


def sparse_pass(
    gram: sparse.csr_array,
    n_fixed: int,
    penalties: np.ndarray,
    zty: np.ndarray,
    lay: Layout,
    singular: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, float] | None:
    """Return ``(b, diag M, M K b, diag M K M, tr(M Z'Z))`` of one pass, or None if singular.

    ``penalties`` are the lesson columns' ``k_j``; ``singular`` is the relative pivot
    floor (a pivot squared below ``singular * max diag(A)`` counts as singular).

    Examples
    --------
    >>> from scipy import sparse
    >>> g = np.array([[4.0, 2, 1], [2, 2, 1], [1, 1, 1]])
    >>> k = np.array([1.0, 1.0])
    >>> b, mjj, mkb, mkm, tr = sparse_pass(sparse.csr_array(g), 1, k, np.ones(3),
    ...                                    layout(sparse.csr_array(g), 1), 1e-12)
    >>> m = np.linalg.inv(g + np.diag([0.0, 1, 1]))
    >>> bool(np.allclose(mjj, np.diag(m)) and np.allclose(b, m @ np.ones(3)))
    True
    """
    p = gram.shape[0]
    kvec = np.zeros(p)
    kvec[n_fixed:] = penalties
    a = sparse.csr_array(gram + sparse.diags_array(kvec, format="csr"))
    diag_a = a.diagonal()
    floor = singular * float(np.max(diag_a)) if p else 0.0
    fi, li = lay.border, lay.band
    a_l = sparse.csr_array(a[li, :])
    band = _Band(sparse.csr_array(a_l[:, li]), lay.bounds, kvec[li])
    if not band.factor(floor):
        return None
    c = a_l[:, fi].toarray()  # band x border
    a_ff = a[fi, :][:, fi].toarray()
    kf, kb = kvec[fi], kvec[li]
    first = band.solve(np.column_stack([c, zty[li]]))
    u, wz = first[:, :-1], first[:, -1]
    s_inv = _inverse(a_ff - c.T @ u, floor)
    if s_inv is None:
        return None
    v = u @ s_inv
    b_f = s_inv @ (zty[fi] - u.T @ zty[li])
    b_l = wz - u @ b_f
    r_f, r_l = kf * b_f, kb * b_l
    second = band.solve(np.column_stack([kb[:, None] * u, r_l]))
    wku, wr = second[:, :-1], second[:, -1]
    x_f = s_inv @ (r_f - u.T @ r_l)
    x_l = wr - u @ x_f
    w_diag, wkw_diag = band.selected()
    q = u.T @ (kb[:, None] * u)
    out_b, out_m, out_mkb, out_mkm = (np.zeros(p) for _ in range(4))
    out_b[fi], out_b[li] = b_f, b_l
    out_mkb[fi], out_mkb[li] = x_f, x_l
    out_m[fi] = np.diag(s_inv)
    out_m[li] = w_diag + np.einsum("ij,ij->i", v, u)
    out_mkm[fi] = np.einsum("ij,jk,ik->i", s_inv, q + np.diag(kf), s_inv)
    out_mkm[li] = (
        wkw_diag
        + 2.0 * np.einsum("ij,ij->i", wku, v)
        + np.einsum("ij,ij->i", v @ (q + np.diag(kf)), v)
    )
    trace = float(p - np.sum(kvec * out_m))
    return out_b, out_m, out_mkb, out_mkm, trace


def equal_patterns(gram: sparse.csr_array, n_fixed: int, runs: int) -> tuple[np.ndarray, ...]:
    """Lesson pairs ``i < j`` with the same inclusion pattern, and the excluded lessons.

    Returns ``(i, j, excluded)``: the pairs with ``G_ii = G_jj = G_ij`` among lessons in
    some but not every run, and a mask of the lessons in every run or in none.  O(nnz)
    (the dense functions compare every pair of lessons).

    Examples
    --------
    >>> from scipy import sparse
    >>> g = np.array([[4.0, 2, 2, 1], [2, 2, 2, 1], [2, 2, 2, 1], [1, 1, 1, 1]])
    >>> i, j, excluded = equal_patterns(sparse.csr_array(g), 1, 4)
    >>> i.tolist(), j.tolist(), excluded.tolist()
    ([0], [1], [False, False, False])
    """
    lessons = sparse.csr_array(gram[n_fixed:, n_fixed:])
    diag = lessons.diagonal()
    excluded = (diag >= runs) | (diag <= 0)
    coo = lessons.tocoo()
    i, j, v = coo.row.astype(np.int64), coo.col.astype(np.int64), coo.data
    same = (i < j) & ~excluded[i] & (diag[i] == diag[j]) & (v == diag[i])
    return i[same], j[same], excluded
