"""Permutation attribution: every lesson tested at once by batched matrix products.

Two registered methods.

``permutation``
    The in/out permutation test of each lesson's leave-one-fact-out lift, the difference
    ``T_j`` between the mean score of the runs that carried lesson ``j`` and of those that
    did not.  Null hypothesis: the scores are exchangeable across runs (within strata when
    ``strata`` names a covariate), which holds for lesson ``j`` when it has no effect and
    its inclusion was randomized independently of the run (the randomization model).  For
    a batch of ``b`` permutations the permuted scores form a ``(b, n_runs)`` matrix;
    multiplying it by the ``(n_runs, n_lessons)`` inclusion matrix gives every lesson's
    permuted with-sum at once, and the statistic follows in closed form because the total
    of the scores (per stratum) does not change under permutation.  No Python loop runs
    over lessons or over single permutations.

``freedman_lane``
    Freedman & Lane's (1983) residual permutation test of each lesson's coefficient in
    ``score ~ 1 + lessons + covariates``: for lesson ``j`` fit the reduced model without
    it, permute the reduced residuals, add them back to the reduced fit and refit the full
    model; compare the permuted t-statistics with the observed one.  Since the full design
    is fixed, one QR factorization gives every refit by matrix products; a batch of
    permutations is processed for all lessons at once (see :func:`freedman_lane`).

p-values (B permutations, Phipson & Smyth 2010, ``(b + 1) / (B + 1)``)
    ``greater``: ``(1 + #{T*_b >= T}) / (B + 1)``; ``less``: ``(1 + #{T*_b <= T}) /
    (B + 1)``.  Two-sided (the ``pvalue`` column): ``(1 + #{|T*_b - c| >= |T - c|}) /
    (B + 1)``, where ``c`` is the exact permutation mean of the statistic (0 without
    strata).  scipy's ``permutation_test`` defines its two-sided p-value instead as
    ``min(1, 2 * min(p_greater, p_less))``; that equal-tail value is the
    ``pvalue_equal_tail`` column, and it is the test the two-sided confidence interval
    inverts.  The two agree for symmetric null distributions.  Permuted values within a
    tie tolerance of the observed one (1e-9 times the largest absolute score for the
    in/out test, 1e-9 times ``max(1, |t|)`` for Freedman-Lane) count as ties, so that
    rounding does not split exact ties (scipy uses 100 machine epsilons relative to the
    observed value for the same purpose, which misses some exact ties of mean differences
    when scores lie on a grid; see the reference tests).

Family-wise adjustment (``pvalue_maxt``)
    Westfall & Young's (1993) single-step max-T: the statistics are standardized (the
    in/out statistic by its exact permutation mean and standard deviation, Freedman-Lane
    by being t-statistics), and ``pvalue_maxt_j = (1 + #{max_k S*_bk >= S_j}) / (B + 1)``
    with ``S = |z|`` (two-sided), ``z`` (greater) or ``-z`` (less).  Every permuted maximum
    is at least the lesson's own permuted statistic, so ``pvalue_maxt >= pvalue``.

Random stream (SPEC 7)
    ``rng`` goes through ``numpy.random.default_rng``.  Without strata, permutation ``b``
    is the ``b``-th call ``rng.permutation(n_runs)`` (drawn in batches by
    ``rng.permuted``, which consumes the stream identically), so the results do not depend
    on ``batch_size`` (beyond rounding in the last bits of the permuted statistics); the
    permuted score of run ``i`` is ``score[perm[i]]``.  With strata,
    ``rng.spawn(n_groups)`` gives one child stream per stratum (strata in sorted order) and
    stratum ``s`` permutes its runs by successive ``child_s.permutation(n_s)`` calls.  The
    seed (when the stream came from an integer or ``None``) is on ``Attribution.seed`` and
    the generator's starting state in ``extras["rng_state"]``.

Validated against (tests/reference/test_permutation_scipy.py, tests/unit/test_permutation.py)
    ``scipy.stats.permutation_test`` (same p-values within Monte Carlo error), exact
    enumeration of the within-strata permutations, a one-permutation-at-a-time statsmodels
    OLS implementation of Freedman-Lane fed the same permutations (identical to float
    tolerance), and simulation (null calibration, family-wise error of max-T, coverage of
    the inverted intervals).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator, Sequence
from typing import Any, cast

import numpy as np
import polars as pl
from scipy import linalg, sparse, special

from cogstats._rng import generator_with_seed
from cogstats._validation import ParameterError, check_choice, check_int, check_probability
from cogstats.estimators._base import Attribution, make_table, register
from cogstats.estimators._linear import _check_bool, _Design, _prepare, contrast_setting
from cogstats.estimators.identifiability import DEFAULT_VIF_THRESHOLD, covariate_design
from cogstats.ledger import Ledger

__all__ = ["freedman_lane", "permutation"]

ALTERNATIVES = ("two-sided", "greater", "less")
INTERVALS = ("inversion", "none")
#: Working memory per batch of permutations when ``batch_size`` is None (bytes).
WORKING_BYTES = 64 * 2**20
#: The permuted statistics (``permutations x lessons`` float64) are kept on the result
#: when they take at most this many bytes; above it only their quantiles would not be
#: available, so the null is dropped and ``extras["null_distribution"]`` is None.
NULL_KEEP_BYTES = 256 * 2**20
#: Quantile levels of each lesson's null distribution kept in ``extras["null_quantiles"]``.
NULL_QUANTILES: tuple[float, ...] = (
    *(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5),
    *(0.75, 0.9, 0.95, 0.975, 0.99, 0.995, 0.999),
)
#: The dense inclusion matrix is used for the batched product up to this size (bytes);
#: above it the sparse one is (BLAS on the dense matrix is several times faster).
DENSE_BYTES = 64 * 2**20
#: Relative tie tolerance for comparing permuted with observed statistics.
TIE_TOLERANCE = 1e-9
# A bit-sliced overlap block is sized to stay in cache (bytes).
_OVERLAP_BLOCK_BYTES = 4 * 2**20
#: threads sharing the overlap counts of the exact intervals (at most the cores)
_OVERLAP_THREADS = 4
#: use the compiled overlap counter when numba is importable (tests switch it off to
#: check the numpy path)
_USE_NUMBA = True


def _permutation_batches(
    gen: np.random.Generator, source: np.ndarray, codes: np.ndarray | None, total: int, batch: int
) -> Iterator[np.ndarray]:
    """Yield ``(b, n)`` batches: row ``b`` is ``source[perm_b]``, ``perm_b`` from the stream.

    ``source`` is the run indices (then the rows are the permutations themselves) or the
    scores.  Fisher-Yates swaps positions whatever the values, so both consume the stream
    identically and give the same permutations.  The yielded array is a reused buffer:
    consume it before asking for the next batch.
    """
    n = source.size
    buf = np.empty((min(batch, total), n), dtype=source.dtype)
    if codes is None:
        for start in range(0, total, batch):
            out = buf[: min(batch, total - start)]
            out[:] = source
            gen.permuted(out, axis=1, out=out)
            yield out
        return
    order = np.argsort(codes, kind="stable")
    bounds = np.flatnonzero(np.diff(codes[order])) + 1
    members = np.split(order, bounds)  # run indices of each stratum, in ledger order
    children = gen.spawn(len(members))
    blocks = [np.empty((buf.shape[0], len(m)), dtype=source.dtype) for m in members]
    for start in range(0, total, batch):
        size = min(batch, total - start)
        out = buf[:size]
        # a loop over strata (few), each permuting a whole batch at once
        for m, child, block in zip(members, children, blocks, strict=True):
            blk = block[:size]
            blk[:] = source[m]
            child.permuted(blk, axis=1, out=blk)
            out[:, m] = blk
        yield out


def _batch_rows(batch_size: int | None, per_permutation_bytes: int, total: int) -> int:
    if batch_size is not None:
        return max(1, min(batch_size, total))
    return max(1, min(total, WORKING_BYTES // max(per_permutation_bytes, 1)))


# ---------------------------------------------------------------------- overlap counts
def _pack_columns(x: np.ndarray) -> np.ndarray:
    """Pack a boolean ``(n, k)`` matrix into ``(n, ceil(k / 64))`` little-endian uint64 words."""
    n, k = x.shape
    words = max(1, -(-k // 64))
    padded = np.zeros((n, words * 64), dtype=bool)
    padded[:, :k] = x
    return np.packbits(padded, axis=1, bitorder="little").view("<u8")


def _overlap_counts(bits: np.ndarray, idx: np.ndarray, k: int) -> np.ndarray:
    """``M[b, j] = #{i : X[i, j] = 1 and X[idx[b, i], j] = 1}`` for every permutation and lesson.

    numpy has no fast way to count, per column, the rows where two permuted 0/1 matrices
    are both 1: a gather-and-sum costs ``permutations x nonzeros`` random lookups (about
    4x slower at 5,000 runs x 500 lessons).  Hand-written here: the rows are ANDed as packed
    64-lesson words, then summed down the runs with a bit-sliced adder tree (the halves of
    the rows are added as binary numbers held one bit-plane per array), so each step
    works on whole contiguous words.  The permutations are split between threads (numpy
    releases the GIL in these whole-array operations), one block of each at a time.
    Checked against the direct definition in the tests.
    """
    out = np.empty((idx.shape[0], k), dtype=np.int64)
    count = _overlap_kernel()
    threads = max(1, min(_OVERLAP_THREADS, os.cpu_count() or 1, idx.shape[0]))
    if threads == 1:
        count(bits, idx, k, out)
        return out
    from concurrent.futures import ThreadPoolExecutor

    cuts = np.linspace(0, idx.shape[0], threads + 1).astype(int)
    with ThreadPoolExecutor(threads) as pool:
        jobs = [
            pool.submit(count, bits, idx[a:b], k, out[a:b])
            for a, b in itertools.pairwise(cuts.tolist())
        ]
        for job in jobs:
            job.result()
    return out


def _overlap_kernel() -> Any:
    """Return the compiled overlap counter when numba is installed (5x faster), else numpy."""
    if _USE_NUMBA:
        try:
            from cogstats.estimators._overlap_numba import overlap_counts
        except ImportError:  # numba is optional (the ``sim`` extra)
            pass
        else:

            def compiled(bits: np.ndarray, idx: np.ndarray, k: int, out: np.ndarray) -> None:
                overlap_counts(bits, np.ascontiguousarray(idx), out)

            return compiled
    return _overlap_block_counts


def _overlap_block_counts(bits: np.ndarray, idx: np.ndarray, k: int, out: np.ndarray) -> None:
    """:func:`_overlap_counts` for ``idx`` into ``out``, in blocks of permutations."""
    n, w = bits.shape
    rows = 1 << max(0, (n - 1).bit_length())  # a power of two: the tree never pads
    step = max(1, _OVERLAP_BLOCK_BYTES // (rows * w * 8))
    weights: np.ndarray | None = None
    buf = np.zeros((min(step, max(idx.shape[0], 1)), rows, w), dtype="<u8")
    for start in range(0, idx.shape[0], step):
        part = idx[start : start + step]
        size = part.shape[0]
        a = buf[:size]
        np.take(bits, part, axis=0, out=a[:, :n])
        a[:, :n] &= bits
        planes = [a]
        m = rows
        while m > 1:
            h = m // 2
            carry: np.ndarray | None = None
            summed = []
            for plane in planes:
                lo, hi = plane[:, :h], plane[:, h:m]
                x = lo ^ hi
                if carry is None:
                    summed.append(x)
                    carry = lo & hi
                else:
                    both = lo & hi
                    both |= carry & x
                    x ^= carry
                    summed.append(x)
                    carry = both
            summed.append(cast(np.ndarray, carry))
            planes = summed
            m = h
        stack = np.ascontiguousarray(np.stack([p[:, 0, :] for p in planes], axis=1))
        unpacked = np.unpackbits(stack.view(np.uint8), axis=2, bitorder="little")[:, :, :k]
        if weights is None or weights.size != len(planes):
            weights = np.left_shift(1, np.arange(len(planes), dtype=np.int64))
        out[start : start + size] = np.einsum("blk,l->bk", unpacked.astype(np.int64), weights)


# ---------------------------------------------------------------------- helpers
def _count_threshold(total: int, alpha: float, two_sided: bool) -> int:
    """Smallest count ``C`` whose p-value ``(1 + C) / (B + 1)`` exceeds ``alpha``.

    Two-sided: the equal-tail value ``min(1, 2 (1 + C) / (B + 1))`` is compared, in the
    same floating point arithmetic as the p-value columns.  ``B + 1`` when none does.
    """
    counts = np.arange(total + 1)
    p = (1.0 + counts) / (total + 1)
    if two_sided:
        p = np.minimum(1.0, 2.0 * p)
    ok = p > alpha
    return int(np.argmax(ok)) if ok.any() else total + 1


def _keep_extreme(kept: np.ndarray, new: np.ndarray, r: int, largest: bool) -> np.ndarray:
    """Keep the ``r`` smallest (or largest) values per column of ``kept`` and ``new``."""
    both = np.concatenate([kept, new], axis=0)
    if both.shape[0] <= r:
        return both
    if largest:
        return -np.partition(-both, r - 1, axis=0)[:r]
    return np.partition(both, r - 1, axis=0)[:r]


def _order_statistic(kept: np.ndarray, rank: np.ndarray, largest: bool) -> np.ndarray:
    """Per column, the ``rank``-th (1-based) smallest or largest kept value.

    ``rank <= 0`` gives -inf (+inf for largest): the test never rejects on that side;
    a rank beyond the kept values gives +inf (-inf): it always rejects.
    """
    k = kept.shape[1]
    if kept.shape[0] == 0:
        srt = np.full((1, k), np.inf)
    else:
        srt = np.sort(-kept if largest else kept, axis=0)
    pos = np.clip(rank - 1, 0, srt.shape[0] - 1)
    value = np.take_along_axis(srt, pos[None, :], axis=0)[0]
    value = np.where(rank > srt.shape[0], np.inf, value)
    value = np.where(rank <= 0, -np.inf, value)
    return -value if largest else value


def _maxt_pvalues(maxima: np.ndarray, observed: np.ndarray, tol: np.ndarray) -> np.ndarray:
    """``(1 + #{maxima >= observed - tol}) / (B + 1)`` for every lesson (sorted, vectorized)."""
    srt = np.sort(maxima)
    count = srt.size - np.searchsorted(srt, observed - tol, side="left")
    return np.asarray((1.0 + count) / (srt.size + 1.0))


def _check_batch_size(batch_size: Any) -> int | None:
    return check_int("batch_size", batch_size, minimum=1, optional=True)


def _null_summary(
    null: np.ndarray | None, fact_ids: Sequence[str]
) -> tuple[np.ndarray | None, pl.DataFrame | None]:
    if null is None:
        return None, None
    with np.errstate(invalid="ignore"):
        q = np.quantile(null, NULL_QUANTILES, axis=0) if null.shape[0] else None
    data: dict[str, Any] = {"fact_id": pl.Series(list(fact_ids), dtype=pl.String)}
    for level, row in zip(NULL_QUANTILES, q if q is not None else [], strict=False):
        data[f"q{level:g}"] = pl.Series(row, dtype=pl.Float64, nan_to_null=True)
    return null, pl.DataFrame(data)


# ---------------------------------------------------------------------- in/out test
def _strata_codes(ledger: Ledger, strata: Any, n_strata: int) -> tuple[np.ndarray | None, Any]:
    """Stratum code (0..S-1) of every run and the stratum labels, or None without strata."""
    if strata is None:
        return None, None
    if not isinstance(strata, str) or strata not in ledger.covariates:
        raise ParameterError(
            f"strata must be None or the name of a ledger covariate "
            f"(it has {ledger.covariates!r}); got {strata!r}"
        )
    if strata in ("eligible_ids", "propensities"):
        raise ParameterError(
            f"strata: {strata!r} holds logged propensities (lists), not a covariate to stratify on"
        )
    series = ledger.covariate(strata)
    nulls = series.is_null()
    if nulls.any():
        i = int(nulls.arg_true()[0])
        raise ParameterError(
            f"strata: covariate {strata!r} is null in row {i + 1} (run_id "
            f"{ledger.run_ids[i]!r}); every run needs a stratum"
        )
    if series.dtype.is_numeric():
        values = series.cast(pl.Float64).to_numpy()
        edges = np.quantile(values, np.linspace(0.0, 1.0, n_strata + 1)[1:-1])
        raw = np.searchsorted(edges, values, side="right")
        used, codes = np.unique(raw, return_inverse=True)
        bounds = np.concatenate([[-np.inf], edges, [np.inf]])
        labels = [(float(bounds[u]), float(bounds[u + 1])) for u in used.tolist()]
        return codes.astype(np.int64), labels
    values_list = series.to_list()
    levels = sorted(set(values_list))
    pos = {lev: i for i, lev in enumerate(levels)}
    codes = np.fromiter((pos[v] for v in values_list), dtype=np.int64, count=len(values_list))
    return codes, levels


def _inout_test(
    y: np.ndarray,
    x: sparse.csc_array,
    codes: np.ndarray | None,
    *,
    permutations: int,
    alternative: str,
    confidence_level: float,
    batch_size: int | None,
    gen: np.random.Generator,
    intervals: bool,
) -> dict[str, Any]:
    """Run the batched in/out permutation test of every column of ``x`` (array level).

    Returns arrays over all columns (NaN inference where a column cannot be tested: in
    every run, in none, or constant within every stratum).
    """
    out, moments = _inout_moments(y, x, codes)
    cols = moments["cols"]
    k_all, k, B = x.shape[1], cols.size, permutations
    if k == 0 or B == 0:
        return out
    counts = _inout_loop(
        y,
        x,
        codes,
        moments,
        permutations=B,
        alternative=alternative,
        confidence_level=confidence_level,
        batch_size=batch_size,
        gen=gen,
        intervals=intervals,
    )
    sd = moments["sd"]
    for key, values in (
        ("null_mean", moments["centre"]),
        ("null_sd", sd),
        ("z", np.where(sd > 0, moments["z_obs"], np.nan)),
        ("pvalue_greater", counts["p_g"]),
        ("pvalue_less", counts["p_l"]),
        ("pvalue_abs", counts["p_a"]),
        ("pvalue_maxt", counts["p_adj"]),
        ("ci_low", counts["lo"]),
        ("ci_high", counts["hi"]),
    ):
        out[key][cols] = values
    null = counts["null"]
    if null is not None and k == k_all:
        out["null"] = null
    elif null is not None:
        full = np.full((B, k_all), np.nan)
        full[:, cols] = null
        out["null"] = full
    out["maxima"] = counts["maxima"]
    out["batch_rows"] = counts["rows"]
    return out


def _inout_moments(
    y: np.ndarray, x: sparse.csc_array, codes: np.ndarray | None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Compute the observed lifts (the result skeleton) and the testable columns' null moments.

    Returns ``(out, moments)``: ``out`` holds every column's estimate and counts with NaN
    inference to fill; ``moments`` the testable columns (``cols``) and, for them, the
    per-stratum inclusion counts, the exact permutation mean (``centre``) and standard
    deviation (``sd``) of the lift and the observed standardized statistic (``z_obs``).
    """
    n, k_all = x.shape
    n1_all = np.asarray(x.sum(axis=0)).ravel()
    n0_all = n - n1_all
    group = np.zeros(n, dtype=np.int64) if codes is None else codes
    n_groups = int(group.max()) + 1 if n else 1
    size = np.bincount(group, minlength=n_groups).astype(float)
    mean = np.bincount(group, weights=y, minlength=n_groups) / np.maximum(size, 1)
    ss = np.bincount(group, weights=(y - mean[group]) ** 2, minlength=n_groups)
    onehot = sparse.csr_array(
        (np.ones(n), (np.arange(n), group)), shape=(n, n_groups), dtype=np.float64
    )
    inside = np.asarray((x.T @ onehot).toarray())  # lessons x strata: runs with the lesson
    spread = inside * (size[None, :] - inside)
    testable = (n1_all > 0) & (n0_all > 0) & (spread.sum(axis=1) > 0)
    cols = np.flatnonzero(testable)

    total = float(y.sum())
    s_obs_all = x.T @ y
    with np.errstate(invalid="ignore", divide="ignore"):
        estimate = np.where(
            (n1_all > 0) & (n0_all > 0),
            s_obs_all / n1_all - (total - s_obs_all) / n0_all,
            np.nan,
        )
    out: dict[str, Any] = {
        "testable": testable,
        "estimate": estimate,
        "n1": n1_all.astype(np.int64),
        "n0": n0_all.astype(np.int64),
    }
    nan = np.full(k_all, np.nan)
    for key in (
        "null_mean",
        "null_sd",
        "z",
        "pvalue_greater",
        "pvalue_less",
        "pvalue_abs",
        "pvalue_maxt",
        "ci_low",
        "ci_high",
    ):
        out[key] = nan.copy()
    out["null"] = None
    out["maxima"] = np.empty(0)
    out["batch_rows"] = 0
    moments: dict[str, Any] = {"cols": cols}
    if cols.size == 0:
        return out, moments
    n1 = n1_all[cols].astype(float)
    n0 = n0_all[cols].astype(float)
    var_factor = np.where(size >= 2, ss / np.maximum(size * (size - 1), 1), 0.0)
    exp_sum = inside[cols] @ mean
    var_sum = spread[cols] @ var_factor
    centre = exp_sum / n1 - (total - exp_sum) / n0
    sd = np.sqrt(var_sum) * (1.0 / n1 + 1.0 / n0)
    sd_eff = np.where(sd > 0, sd, 1.0)
    t_obs = estimate[cols]
    moments.update(
        n1=n1,
        n0=n0,
        total=total,
        t_obs=t_obs,
        centre=centre,
        sd=sd,
        sd_eff=sd_eff,
        z_obs=(t_obs - centre) / sd_eff,
    )
    return out, moments


def _inout_loop(
    y: np.ndarray,
    x: sparse.csc_array,
    codes: np.ndarray | None,
    moments: dict[str, Any],
    *,
    permutations: int,
    alternative: str,
    confidence_level: float,
    batch_size: int | None,
    gen: np.random.Generator,
    intervals: bool,
) -> dict[str, Any]:
    """Run the permutation batches of the in/out test: p-values, max-T, null, intervals."""
    n = x.shape[0]
    cols = moments["cols"]
    k, B = cols.size, permutations
    n1, n0, total = moments["n1"], moments["n0"], moments["total"]
    t_obs, centre, sd_eff, z_obs = (
        moments["t_obs"],
        moments["centre"],
        moments["sd_eff"],
        moments["z_obs"],
    )
    xs = sparse.csc_array(x[:, cols])
    gamma = TIE_TOLERANCE * max(float(np.max(np.abs(y))), np.finfo(float).tiny)
    gz = gamma / sd_eff
    sign = {"two-sided": 0, "greater": 1, "less": -1}[alternative]
    stat_obs = np.abs(z_obs) if sign == 0 else sign * z_obs

    dense = xs.toarray() if n * k * 8 <= DENSE_BYTES else None
    xt = None if dense is not None else sparse.csr_array(xs.T)
    per = 8 * (2 * n + 8 * k)
    rows = _batch_rows(batch_size, per, B)
    keep_null = B * k * 8 <= NULL_KEEP_BYTES
    null = np.empty((B, k)) if keep_null else None
    maxima = np.empty(B)
    cnt_g = np.zeros(k, dtype=np.int64)
    cnt_l = np.zeros(k, dtype=np.int64)
    cnt_a = np.zeros(k, dtype=np.int64)

    alpha = 1.0 - confidence_level
    r = _count_threshold(B, alpha, sign == 0)
    bits = _pack_columns(xs.toarray() > 0) if intervals else None
    low = np.empty((0, k))
    high = np.empty((0, k))
    zero_g = np.zeros(k, dtype=np.int64)  # permutations mapping the group onto itself ...
    zero_l = np.zeros(k, dtype=np.int64)  # ... that count as >= (resp. <=) at every shift

    # the intervals need the permutations themselves; the p-values only the permuted scores
    source = np.arange(n, dtype=np.intp) if bits is not None else y
    yp = np.empty((rows, n)) if bits is not None else None
    start = 0
    for batch in _permutation_batches(gen, source, codes, B, rows):
        b = batch.shape[0]
        if yp is not None:  # batch holds the permutations
            ypb = yp[:b]
            np.take(y, batch, out=ypb)
        else:  # batch holds the permuted scores
            ypb = batch
        s = ypb @ dense if dense is not None else np.asarray((xt @ ypb.T).T)
        w = s * (1.0 / n1 + 1.0 / n0) - total / n0  # mean with - mean without
        z = (w - centre) / sd_eff
        cnt_g += np.count_nonzero(z >= z_obs - gz, axis=0)
        cnt_l += np.count_nonzero(z <= z_obs + gz, axis=0)
        cnt_a += np.count_nonzero(np.abs(z) >= np.abs(z_obs) - gz, axis=0)
        stat = np.abs(z) if sign == 0 else sign * z
        maxima[start : start + b] = stat.max(axis=1)
        if null is not None:
            null[start : start + b] = w
        if bits is not None and r > 0:
            # shift model y - delta * x_j: the permuted statistic is w - delta * a_b with
            # 1 - a_b = n (n1 - M_b) / (n1 n0), M_b = overlap of the group with its image
            overlap = _overlap_counts(bits, batch, k)
            g = n * (n1 - overlap) / (n1 * n0)
            e = w - t_obs
            moving = g > 0
            theta = np.divide(-e, g, out=np.zeros_like(e), where=moving)
            zero_g += np.count_nonzero(~moving & (e >= -gamma), axis=0)
            zero_l += np.count_nonzero(~moving & (e <= gamma), axis=0)
            low = _keep_extreme(low, np.where(moving, theta, np.inf), r, largest=False)
            high = _keep_extreme(high, np.where(moving, theta, -np.inf), r, largest=True)
        start += b

    if bits is None:
        lo = np.full(k, np.nan)
        hi = np.full(k, np.nan)
    else:
        lo = _order_statistic(low, r - zero_g, largest=False)
        hi = _order_statistic(high, r - zero_l, largest=True)
        if sign == 1:
            hi = np.full(k, np.inf)
        elif sign == -1:
            lo = np.full(k, -np.inf)
    return {
        "p_g": (1.0 + cnt_g) / (B + 1.0),
        "p_l": (1.0 + cnt_l) / (B + 1.0),
        "p_a": (1.0 + cnt_a) / (B + 1.0),
        "p_adj": _maxt_pvalues(maxima, stat_obs, gz),
        "lo": lo,
        "hi": hi,
        "null": null,
        "maxima": maxima,
        "rows": rows,
    }


def _permutation_table(
    fact_ids: Sequence[str], y: np.ndarray, x: sparse.csc_array, res: dict[str, Any], alt: str
) -> pl.DataFrame:
    """Build the ``permutation`` method's table from the in/out test's arrays."""
    n1, n0 = res["n1"], res["n0"]
    s_with = x.T @ y
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_with = np.where(n1 > 0, s_with / np.maximum(n1, 1), np.nan)
        mean_without = np.where(n0 > 0, (y.sum() - s_with) / np.maximum(n0, 1), np.nan)
    p_main = {
        "two-sided": res["pvalue_abs"],
        "greater": res["pvalue_greater"],
        "less": res["pvalue_less"],
    }[alt]
    equal_tail = np.minimum(1.0, 2.0 * np.minimum(res["pvalue_greater"], res["pvalue_less"]))
    table = make_table(
        "permutation",
        {
            "fact_id": list(fact_ids),
            "estimate": res["estimate"],
            "std_error": res["null_sd"],
            "ci_low": res["ci_low"],
            "ci_high": res["ci_high"],
            "pvalue": p_main,
            "trials": n1,
            "baseline_runs": n0,
            "mean_with": mean_with,
            "mean_without": mean_without,
            "z": res["z"],
            "null_mean": res["null_mean"],
            "pvalue_maxt": res["pvalue_maxt"],
            "pvalue_greater": res["pvalue_greater"],
            "pvalue_less": res["pvalue_less"],
            "pvalue_equal_tail": equal_tail,
        },
    )
    return table


@register(
    "permutation",
    defaults={
        "permutations": 9999,
        "strata": None,
        "n_strata": 5,
        "alternative": "two-sided",
        "confidence_level": 0.95,
        "batch_size": None,
        "interval": "inversion",
    },
    description="in/out permutation test of every lesson's lift at once, max-T adjusted, "
    "intervals by test inversion",
    uses_rng=True,
    invalid={
        "permutations": 0,
        "strata": "no_such_covariate",
        "n_strata": 0,
        "alternative": "both",
        "confidence_level": 1.0,
        "batch_size": 0,
        "interval": "wald",
    },
)
def permutation(
    ledger: Ledger,
    *,
    rng: Any = None,
    permutations: int,
    strata: str | None,
    n_strata: int,
    alternative: str,
    confidence_level: float,
    batch_size: int | None,
    interval: str,
) -> Attribution:
    """In/out permutation test of every lesson's leave-one-fact-out lift, all at once.

    Parameters
    ----------
    ledger : Ledger
        The runs.
    rng : int, numpy.random.Generator or None
        Seed or generator (``numpy.random.default_rng``); see the module notes for the
        stream.
    permutations : int
        Number of random permutations ``B`` (>= 1).
    strata : str or None
        A ledger covariate: permute only within its strata.  Numeric covariates are cut
        into ``n_strata`` quantile bins (``numpy.quantile`` edges; a bin is
        ``[edge_i, edge_i+1)``, tied edges merge bins); strings and booleans are used as
        they are.
    n_strata : int
        Number of quantile bins of a numeric ``strata`` covariate (>= 1).
    alternative : {"two-sided", "greater", "less"}
        The ``pvalue`` column: ``greater`` tests a positive lift.  Two-sided compares
        ``|T* - c|`` with ``|T - c|`` (module notes); ``pvalue_equal_tail`` is scipy's
        two-sided definition.
    confidence_level : float
        Level of the interval, in (0, 1).
    batch_size : int or None
        Permutations per batched product; None picks the largest batch whose working
        memory stays within 64 MB.  Results do not depend on it.
    interval : {"inversion", "none"}
        ``inversion`` inverts the test under the constant-shift model (below);
        ``none`` skips the intervals (null ``ci_low``/``ci_high``), which saves the
        overlap counts, the costly part on large ledgers.

    Returns
    -------
    Attribution
        ``estimate`` is the lift ``T`` (mean with minus mean without); ``std_error`` the
        exact permutation standard deviation of ``T`` under the null (not simulated);
        ``pvalue`` as chosen by ``alternative``.  Method columns: ``mean_with``,
        ``mean_without``, ``z`` (``(T - c) / sd``, standardized by the exact permutation
        mean ``c`` (``null_mean``) and sd), ``null_mean``, ``pvalue_maxt`` (Westfall-Young
        single-step max-T, family-wise over the tested lessons), ``pvalue_greater``,
        ``pvalue_less``, ``pvalue_equal_tail``.  ``extras``: ``null_distribution``
        (``B x lessons`` permuted lifts, NaN columns for untested lessons; None above
        256 MB), ``null_quantiles`` (a frame), ``max_statistic`` (the ``B`` permuted
        maxima), ``permutations``, ``strata_codes``/``strata_labels``, ``batch_size``,
        ``rng_state``.

    Notes
    -----
    Intervals invert the test under the constant-shift model ``score = score0 + delta *
    x_j`` with ``score0`` exchangeable: ``delta`` is in the interval when the test on
    ``score - delta * x_j`` does not reject (two-sided: ``pvalue_equal_tail > alpha``,
    equal tails; one-sided alternatives give one-sided intervals).  With the same
    permutations, the permuted statistic on the shifted scores is linear in ``delta``:
    ``T*_b - delta * a_b`` against ``T - delta``, with ``1 - a_b = n (n1 - M_b) / (n1 n0)``
    where ``M_b`` counts the runs of the lesson that the permutation maps into the lesson's
    runs.  Each permutation therefore changes sides at one shift ``(T - T*_b) / (1 - a_b)``,
    and the endpoints are exact order statistics of those shifts (no search).  The
    overlap counts cost ``O(B n k / 64)`` word operations (bit-packed), more than the
    p-values themselves on large ledgers; ``interval="none"`` skips them.

    Lessons in every run, in no run, or (with strata) whose inclusion is constant within
    every stratum get null inference.  Validated against ``scipy.stats.permutation_test``
    and exact within-strata enumeration; see the module notes.

    Cost, with B permutations, n runs, k lessons: time O(B n k) multiply-adds for the permuted
    with-sums (one matrix product per batch, BLAS) and, for the exact intervals, O(B n k / 64)
    word operations for the overlap counts (split between threads); memory O(batch x (n + k))
    (64 MB batches) plus the kept null distribution, B x k floats when that is at most 256 MB.
    500 lessons x 5,000 runs x 9,999 permutations: a few seconds (benchmark C2).

    Examples
    --------
    >>> from cogstats import Ledger, attribute
    >>> ledger = Ledger.from_records(
    ...     [{"run_id": f"w{i}", "score": 0.8 + 0.01 * i, "fact_ids": ["a"]} for i in range(10)]
    ...     + [{"run_id": f"b{i}", "score": 0.5 + 0.01 * i, "fact_ids": []} for i in range(10)]
    ... )
    >>> result = attribute(ledger, method="permutation", rng=1, permutations=999)
    >>> row = result.row("a")
    >>> round(row["estimate"], 6), row["pvalue"], row["pvalue_maxt"]
    (0.3, 0.001, 0.001)
    >>> bool(row["ci_low"] < 0.3 < row["ci_high"])
    True
    """
    b = cast(int, check_int("permutations", permutations, minimum=1))
    n_bins = cast(int, check_int("n_strata", n_strata, minimum=1))
    alt = check_choice("alternative", alternative, ALTERNATIVES)
    level = check_probability("confidence_level", confidence_level)
    rows = _check_batch_size(batch_size)
    kind = check_choice("interval", interval, INTERVALS)
    codes, labels = _strata_codes(ledger, strata, n_bins)
    gen, seed, state = generator_with_seed(rng)

    design = ledger.design()
    y = ledger.scores
    x = sparse.csc_array(design.matrix)
    res = _inout_test(
        y,
        x,
        codes,
        permutations=b,
        alternative=alt,
        confidence_level=level,
        batch_size=rows,
        gen=gen,
        intervals=kind == "inversion",
    )
    table = _permutation_table(design.fact_ids, y, x, res, alt)
    null, quantiles = _null_summary(res["null"], design.fact_ids)
    settings: dict[str, Any] = {
        "permutations": b,
        "strata": strata,
        "n_strata": n_bins,
        "alternative": alt,
        "confidence_level": level,
        "batch_size": rows,
        "interval": kind,
        "tie_tolerance": TIE_TOLERANCE,
    }
    extras: dict[str, Any] = {
        "null_distribution": null,
        "null_quantiles": quantiles,
        "max_statistic": res["maxima"],
        "permutations": b,
        "strata_codes": codes,
        "strata_labels": labels,
        "batch_size": res["batch_rows"],
        "rng_state": state,
    }
    return Attribution("permutation", table, settings, seed, extras)


# ---------------------------------------------------------------------- Freedman-Lane
def _freedman_lane_test(
    y: np.ndarray,
    design: np.ndarray,
    lesson_cols: np.ndarray,
    *,
    permutations: int,
    alternative: str,
    batch_size: int | None,
    gen: np.random.Generator,
    contrasts: np.ndarray | None = None,
) -> dict[str, Any]:
    """Freedman-Lane for the columns ``lesson_cols`` of a full-rank ``design`` (array level).

    With ``contrasts`` (``(columns, k)``), the tested coefficients are the contrasts
    ``c' beta`` instead (``lesson_cols`` is then ignored): the reduced model is the fit
    constrained to ``c' beta = 0``, whose residual is ``e + (c' beta) Z (Z'Z)^-1 c /
    (c' (Z'Z)^-1 c)``, and the rows ``c_j`` below become ``c' (Z'Z)^-1 Z'``.

    With ``design = QR``, ``beta = R^-1 Q'y`` and ``c_j`` the j-th row of
    ``(Z'Z)^-1 Z'``, the reduced residual of lesson ``j`` is ``e_j = e + beta_j c_j / V_jj``
    (``e`` the full residual, ``V = (Z'Z)^-1``).  Refitting the full model on
    ``f_j + P e_j`` (``f_j`` the reduced fit) gives ``beta*_j = c_j' P e_j`` (``c_j`` is
    orthogonal to the reduced design) and residual sum of squares
    ``||e_j||^2 - ||Q' P e_j||^2``; so one product of the permuted residuals of every
    lesson with ``Q`` per batch gives every permuted t-statistic.
    """
    n, p = design.shape
    df = n - p
    q, r = np.linalg.qr(design)
    # LAPACK's triangular inverse (scipy's solve_triangular costs ~100x more at this size)
    r_inv, info = linalg.lapack.dtrtri(r, lower=0)
    if info != 0:  # pragma: no cover - the design is checked for full rank first
        raise np.linalg.LinAlgError(f"singular design (dtrtri info={info})")
    qty = q.T @ y
    beta = r_inv @ qty
    resid = y - q @ qty
    s2 = float(resid @ resid) / df
    v_diag = (r_inv**2).sum(axis=1)
    se = np.sqrt(s2 * v_diag)
    with np.errstate(invalid="ignore", divide="ignore"):
        t_all = beta / se
    if contrasts is None:
        cols = np.asarray(lesson_cols, dtype=np.intp)
        r_rows = r_inv[cols]
        vl = v_diag[cols]
        b_obs, se_obs, t_obs = beta[cols], se[cols], t_all[cols]
    else:
        r_rows = contrasts.T @ r_inv  # rows c' R^-1: c' beta = c' R^-1 Q'y
        vl = (r_rows**2).sum(axis=1)
        b_obs = contrasts.T @ beta
        se_obs = np.sqrt(s2 * vl)
        with np.errstate(invalid="ignore", divide="ignore"):
            t_obs = b_obs / se_obs
    k = r_rows.shape[0]
    coef = r_rows @ q.T  # rows c_j of (Z'Z)^-1 Z'
    reduced = resid[None, :] + coef * (b_obs / vl)[:, None]  # k x n
    rss_reduced = (reduced**2).sum(axis=1)
    sign = {"two-sided": 0, "greater": 1, "less": -1}[alternative]
    stat_obs = np.abs(t_obs) if sign == 0 else sign * t_obs
    tol = TIE_TOLERANCE * np.maximum(1.0, np.abs(t_obs))
    B = permutations
    per = 8 * (k * (n + p + 6) + n)
    rows = _batch_rows(batch_size, per, B)
    keep = B * k * 8 <= NULL_KEEP_BYTES
    null = np.empty((B, k)) if keep else None
    maxima = np.empty(B)
    cnt_g = np.zeros(k, dtype=np.int64)
    cnt_l = np.zeros(k, dtype=np.int64)
    cnt_a = np.zeros(k, dtype=np.int64)
    start = 0
    for idx in _permutation_batches(gen, np.arange(n, dtype=np.intp), None, B, rows):
        b = idx.shape[0]
        permuted = np.take(reduced, idx, axis=1)  # k x b x n: each lesson's residuals, permuted
        proj = (permuted.reshape(k * b, n) @ q).reshape(k, b, p)  # one GEMM for all
        beta_star = np.einsum("kbp,kp->kb", proj, r_rows)
        rss = rss_reduced[:, None] - (proj**2).sum(axis=2)
        with np.errstate(invalid="ignore", divide="ignore"):
            t_star = (beta_star / np.sqrt(np.maximum(rss, 0.0) / df * vl[:, None])).T
        cnt_g += np.count_nonzero(t_star >= t_obs - tol, axis=0)
        cnt_l += np.count_nonzero(t_star <= t_obs + tol, axis=0)
        cnt_a += np.count_nonzero(np.abs(t_star) >= np.abs(t_obs) - tol, axis=0)
        stat = np.abs(t_star) if sign == 0 else sign * t_star
        maxima[start : start + b] = stat.max(axis=1)
        if null is not None:
            null[start : start + b] = t_star
        start += b
    p_g = (1.0 + cnt_g) / (B + 1.0)
    p_l = (1.0 + cnt_l) / (B + 1.0)
    p_a = (1.0 + cnt_a) / (B + 1.0)
    return {
        "beta": b_obs,
        "se": se_obs,
        "t": t_obs,
        "df": df,
        "pvalue": {"two-sided": p_a, "greater": p_g, "less": p_l}[alternative],
        "pvalue_maxt": _maxt_pvalues(maxima, stat_obs, tol),
        "null": null,
        "maxima": maxima,
        "batch_rows": rows,
    }


def _t_interval(
    est: np.ndarray, se: np.ndarray, df: float, level: float, alternative: str
) -> tuple[np.ndarray, np.ndarray]:
    if alternative == "two-sided":
        q = special.stdtrit(df, 0.5 + level / 2)
        return est - q * se, est + q * se
    q = special.stdtrit(df, level)
    if alternative == "greater":
        return est - q * se, np.full(est.shape, np.inf)
    return np.full(est.shape, -np.inf), est + q * se


def _freedman_lane_fit(
    d: _Design,
    full: np.ndarray,
    n_base: int,
    permutations: int,
    alternative: str,
    batch_size: int | None,
    gen: np.random.Generator,
) -> dict[str, Any]:
    """Run the test on the reported lessons; arrays over every lesson (NaN where untested)."""
    k_all = len(d.fact_ids)
    report = np.flatnonzero(d.reported)
    out: dict[str, Any] = {
        name: np.full(k_all, np.nan) for name in ("est", "se", "t", "pvalue", "padj")
    }
    out.update(null=None, maxima=np.empty(0), batch_rows=0, df=d.n - full.shape[1])
    if report.size and d.n and np.ptp(d.y) == 0:
        # every run scored the same: the coefficients are exactly 0 (a fit and its
        # permutations would give t statistics of rounding noise over rounding noise)
        out["est"][report], out["se"][report] = 0.0, 0.0
        out["pvalue"][report], out["padj"][report] = 1.0, 1.0
    elif report.size and out["df"] >= 1:
        res = _freedman_lane_test(
            d.y,
            full,
            np.arange(n_base, full.shape[1]),
            permutations=permutations,
            alternative=alternative,
            batch_size=batch_size,
            gen=gen,
            contrasts=d.lesson_weights(full.shape[1]),
        )
        out["est"][report], out["se"][report], out["t"][report] = res["beta"], res["se"], res["t"]
        out["pvalue"][report], out["padj"][report] = res["pvalue"], res["pvalue_maxt"]
        out["maxima"], out["batch_rows"] = res["maxima"], res["batch_rows"]
        if res["null"] is not None:
            out["null"] = np.full((permutations, k_all), np.nan)
            out["null"][:, report] = res["null"]
    return out


def _freedman_lane_table(
    d: _Design, res: dict[str, Any], level: float, alternative: str
) -> pl.DataFrame:
    """Build the ``freedman_lane`` method's table."""
    est, se, t, df = res["est"], res["se"], res["t"], res["df"]
    df_col = np.where(np.isfinite(est), float(max(df, 0)), np.nan)
    lo, hi = _t_interval(est, se, float(max(df, 1)), level, alternative)
    with np.errstate(invalid="ignore"):
        p_ols = 2.0 * special.stdtr(max(df, 1), -np.abs(t))
    n1 = d.trials
    return make_table(
        "freedman_lane",
        {
            "fact_id": list(d.fact_ids),
            "estimate": est,
            "std_error": se,
            "ci_low": lo,
            "ci_high": hi,
            "pvalue": res["pvalue"],
            "trials": n1,
            "baseline_runs": d.n - n1,
            "t": t,
            "df": df_col,
            "pvalue_ols": p_ols,
            "pvalue_maxt": res["padj"],
            "identifiable": d.reported,
            "aliased_with": d.ident["aliased_with"],
            "relative_to": d.ident["relative_to"]
            if "relative_to" in d.ident.columns
            else pl.Series("relative_to", [None] * len(d.fact_ids), dtype=pl.String),
        },
    )


@register(
    "freedman_lane",
    defaults={
        "permutations": 9999,
        "covariates": (),
        "alternative": "two-sided",
        "confidence_level": 0.95,
        "batch_size": None,
        "mean_contrasts": True,
    },
    description="Freedman-Lane residual permutation test of OLS lesson coefficients "
    "(lessons + covariates), max-T adjusted",
    uses_rng=True,
    invalid={
        "permutations": 0,
        "covariates": ("no_such_covariate",),
        "alternative": "both",
        "confidence_level": 0.0,
        "batch_size": 0,
        "mean_contrasts": "no",
    },
)
def freedman_lane(
    ledger: Ledger,
    *,
    rng: Any = None,
    permutations: int,
    covariates: Sequence[str],
    alternative: str,
    confidence_level: float,
    batch_size: int | None,
    mean_contrasts: bool,
) -> Attribution:
    """Freedman-Lane permutation test of every lesson's coefficient in an OLS fit.

    The model is ``score = b0 + sum_j b_j x_j + covariates + error`` (the ``ols`` design:
    numeric covariates linearly, strings and booleans as dummies with the first sorted
    level as reference, via :func:`~cogstats.estimators.identifiability.covariate_design`).
    For each lesson the reduced model drops its column; its residuals are permuted (the
    same permutation for every lesson, so that max-T is valid), added to its fitted values,
    and the full model is refitted; ``pvalue`` compares the permuted t-statistics of the
    lesson with the observed one (Freedman & Lane 1983; Winkler et al. 2014 for max-T).

    Parameters
    ----------
    ledger : Ledger
        The runs.
    rng : int, numpy.random.Generator or None
        Seed or generator; permutation ``b`` is the ``b``-th ``rng.permutation(n_runs)``
        and the permuted residual of run ``i`` is ``e[perm[i]]``.
    permutations : int
        Number of random permutations ``B`` (>= 1).
    covariates : tuple of str
        Ledger covariates in the model (nuisance terms, not tested).
    alternative : {"two-sided", "greater", "less"}
        Two-sided compares ``|t*|`` with ``|t|``.
    confidence_level : float
        Level of the OLS t interval, in (0, 1).
    batch_size : int or None
        Permutations per batch; None keeps the working memory within 64 MB.  Results do
        not depend on it.
    mean_contrasts : bool
        On fixed-size prompts, test each lesson of a pool relative to its mean lesson
        (default True), as ``ols`` estimates it; False keeps them not identifiable.

    Returns
    -------
    Attribution
        ``estimate``: the OLS coefficient; ``std_error``: its classical OLS standard
        error; ``ci_low``/``ci_high``: the OLS t interval ``estimate +/- t_{df} *
        std_error`` (one-sided for one-sided alternatives; not a permutation interval:
        inverting Freedman-Lane has no closed form because the studentizing residual
        variance changes with the shift); ``pvalue``: the permutation p-value.  Method
        columns: ``t`` (observed t), ``df`` (``n - p``), ``pvalue_ols`` (the classical
        two-sided t-test), ``pvalue_maxt`` (Westfall-Young single-step max-T over the
        tested lessons), ``identifiable``, ``aliased_with``, ``relative_to``.  On
        fixed-size prompts (as for ``ols``) the tested coefficient of a lesson of a pool
        is its contrast with the pool's mean lesson (the reduced model is the fit
        constrained to a zero contrast).  ``extras``: ``null_distribution`` (``B x
        lessons`` permuted t, NaN columns for untested lessons), ``null_quantiles``,
        ``max_statistic``, ``permutations``, ``design_columns``, ``rng_state``.

    Notes
    -----
    Lessons the design cannot separate (in every run or none, duplicate inclusion
    patterns, collinear with other lessons or the covariates, as
    :func:`~cogstats.estimators.identifiability.lesson_identifiability` decides) are left
    out of the design and get null inference; with no residual degrees of freedom every
    lesson does.  Validated against statsmodels OLS (estimates, standard errors, t) and a
    one-permutation-at-a-time statsmodels loop given the same permutations (identical
    null distributions and p-values to float tolerance).

    Cost: one QR factorization of the dense full design (O(n k^2)), then per batch of b
    permutations O(b n k) for every lesson's refit at once; memory O(n k + b n).

    Examples
    --------
    >>> import numpy as np
    >>> from cogstats import Ledger, attribute
    >>> gen = np.random.default_rng(3)
    >>> records = []
    >>> for i in range(40):
    ...     facts = [f for f in ("a", "b") if gen.random() < 0.5]
    ...     score = 0.5 + 0.2 * ("a" in facts) + 0.05 * gen.standard_normal()
    ...     records.append({"run_id": f"r{i}", "score": float(np.clip(score, 0, 1)),
    ...                     "fact_ids": facts})
    >>> result = attribute(Ledger.from_records(records), method="freedman_lane", rng=1,
    ...                    permutations=999)
    >>> result.row("a")["pvalue"], bool(result.row("b")["pvalue"] > 0.05)
    (0.001, True)
    """
    b = cast(int, check_int("permutations", permutations, minimum=1))
    covariate_design(ledger, covariates)  # a bad name is reported first
    alt = check_choice("alternative", alternative, ALTERNATIVES)
    level = check_probability("confidence_level", confidence_level)
    rows = _check_batch_size(batch_size)
    gen, seed, state = generator_with_seed(rng)
    relative = _check_bool("mean_contrasts", mean_contrasts)
    d = _prepare(ledger, covariates, DEFAULT_VIF_THRESHOLD, contrasts=relative)
    controls = d.controls
    full = d.exog()
    n_base = 1 + controls.matrix.shape[1]
    if d.n and np.linalg.matrix_rank(full[:, :n_base]) < n_base:
        raise ParameterError(
            f"covariates: the columns {controls.columns!r} are collinear with each other or "
            "with the intercept; leave the redundant ones out"
        )
    res = _freedman_lane_fit(d, full, n_base, b, alt, rows, gen)
    table = _freedman_lane_table(d, res, level, alt)
    ids = list(d.fact_ids)
    null, quantiles = _null_summary(res["null"], ids)
    settings: dict[str, Any] = {
        "permutations": b,
        "covariates": tuple(controls.covariates),
        "alternative": alt,
        "confidence_level": level,
        "batch_size": rows,
        "interval": "wald" if alt == "two-sided" else "one-sided t",
        "tie_tolerance": TIE_TOLERANCE,
        "mean_contrasts": relative,
        **contrast_setting(d),
    }
    extras: dict[str, Any] = {
        "null_distribution": null,
        "null_quantiles": quantiles,
        "max_statistic": res["maxima"],
        "permutations": b,
        "design_columns": ("intercept", *d.exog_names()[1:]),
        "identifiability": d.ident,
        "batch_size": res["batch_rows"],
        "rng_state": state,
        "contrasts": d.plan,
    }
    return Attribution("freedman_lane", table, settings, seed, extras)
