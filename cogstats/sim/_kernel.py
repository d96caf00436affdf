"""The compiled simulation loop (numba).

One call simulates a chunk of replicates of one scenario.  Inside a replicate the loop is
sequential (retrieval depends on the ledger so far); per-lesson sufficient statistics
(count, sum, sum of squares, wins) are updated incrementally instead of rescanning the
ledger.  Every random number comes in pre-drawn (see :mod:`cogstats.sim.draws`), so the
plain-Python reference engine in :mod:`cogstats.sim.reference` consumes exactly the same
draws; the two must make the same decisions (tests/unit/test_sim_engines.py).

The policies and gates here are re-implementations of :mod:`cogstats.retrieval` and
:mod:`cogstats.gates` (cycgraph margin and inference rules, the evidence gate on the Welch
statistics, the audit rule) in array form; their codes come from :mod:`cogstats._codes`.
The score model (:func:`injected_total`, :func:`oracle_total`, :func:`link_score`) is
written once here and called by both engines: inlined into the loop here (numba's
``inline="always"``, so the compiled loop is as it was when the model was written out in
it), and called from Python by the reference engine (numba functions are callable from
Python).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from cogstats._codes import (
    DECISION_EVICT_HARMFUL,
    DECISION_EVICT_NO_LIFT,
    DECISION_HOLD,
    DECISION_PROMOTE,
    GATE_AUDIT,
    GATE_EVIDENCE,
    GATE_MARGIN,
    GATE_NONE,
    GATE_RECOMMENDED,
    KIND_GENUINE,
    KIND_POISON,
    POLICY_DESIGNED,
    POLICY_FEWEST_TRIALS_FIRST,
    POLICY_IN_PROGRESS_FIRST,
    POLICY_NEWEST_FIRST,
    POLICY_RANDOMIZED,
    POLICY_SUSPECT_FIRST,
    POLICY_UCB1,
    REASON_CODE_HARMFUL,
    REASON_CODE_NO_LIFT,
    STATUS_CANDIDATE,
    STATUS_EVICTED,
    STATUS_FUTURE,
    STATUS_RETIRED,
    STATUS_VERIFIED,
)
from cogstats.sim._tdist import t_cdf

# ip (int parameters) layout
IP_RUNS, IP_L, IP_POLICY, IP_MAXF, IP_SLOTS, IP_REST, IP_POOL, IP_GATE = 0, 1, 2, 3, 4, 5, 6, 7
IP_MINT, IP_MAXT, IP_MAXB, IP_BH, IP_DOUBLING, IP_EVERY, IP_FROM = 8, 9, 10, 11, 12, 13, 14
IP_RECEMPTY, IP_RECHECK, IP_LINK, IP_AUDIT_HITS, IP_P = 15, 16, 17, 18, 19
IP_BERNOULLI, IP_MINF, IP_EV_GROUP, IP_EV_BONF = 20, 21, 22, 23
IP_NCOV, IP_PASSES, IP_FRESH = 24, 25, 26
N_IP = 27
# fp (float parameters) layout
FP_BASE, FP_NOISE, FP_PM, FP_EM, FP_PC, FP_EC, FP_FLOOR, FP_SAT = 0, 1, 2, 3, 4, 5, 6, 7
FP_DAMP, FP_EPS, FP_XSIM, FP_WIN, FP_EXPL, FP_AUDIT_RATE, FP_PINC = 8, 9, 10, 11, 12, 13, 14
FP_ALPHA = 15
FP_PENALTY, FP_GATE_SUSZ, FP_MIN_SHARE, FP_PRIOR_SS, FP_PRIOR_RUNS, FP_POL_SUSZ = (
    16,
    17,
    18,
    19,
    20,
    21,
)
FP_MAX_INFO = 22
N_FP = 23


# ---------------------------------------------------------------------- the score model
@njit(cache=True, inline="always")
def injected_total(
    effects: np.ndarray,
    kind: np.ndarray,
    inj: np.ndarray,
    count: int,
    damping: float,
    saturation: float,
) -> float:
    """Total effect of the injected lessons ``inj[:count]`` (in ascending lesson order).

    A poison's effect is scaled by ``1 - damping`` in runs that also carry a genuine
    lesson; with ``saturation > 0`` the positive effects G are summed and bent to
    ``saturation * tanh(G / saturation)`` (see :class:`cogstats.sim.spec.ScoreSpec`).
    """
    has_genuine = False
    for i in range(count):
        if kind[inj[i]] == KIND_GENUINE:
            has_genuine = True
    pos = 0.0
    tot = 0.0
    for i in range(count):
        j = inj[i]
        x = effects[j]
        if kind[j] == KIND_POISON and damping > 0 and has_genuine:
            x *= 1.0 - damping
        if saturation > 0 and x > 0:
            pos += x
        else:
            tot += x
    if saturation > 0:
        tot += saturation * math.tanh(pos / saturation)
    return tot


@njit(cache=True, inline="always")
def oracle_total(
    effects: np.ndarray,
    arrival: np.ndarray,
    run: int,
    max_facts: int,
    saturation: float,
    scratch: np.ndarray,
) -> float:
    """Total effect of the oracle's prompt.

    The oracle's prompt holds the best ``max_facts`` helpful lessons that have arrived by
    ``run`` (saturated like :func:`injected_total`); ``scratch`` holds at least one float
    per lesson.
    """
    nh = 0
    for j in range(effects.shape[0]):
        if arrival[j] <= run and effects[j] > 0:
            scratch[nh] = effects[j]
            nh += 1
    gsum = 0.0
    if nh == 1:
        gsum = scratch[0]
    elif nh > 1:
        hs = np.sort(scratch[:nh])
        for i in range(min(max_facts, nh)):
            gsum += hs[nh - 1 - i]
    if saturation > 0:
        gsum = saturation * math.tanh(gsum / saturation)
    return gsum


@njit(cache=True, inline="always")
def link_score(
    base: float, logit_base: float, logistic: bool, difficulty: float, total: float, z: float
) -> float:
    """Return a run's score.

    The score is ``expit(logit_base + d + total + z)`` with the logistic link, else
    ``base + d + total + z`` clamped to [0, 1].
    """
    if logistic:
        return 1.0 / (1.0 + math.exp(-(logit_base + difficulty + total + z)))
    return min(1.0, max(0.0, base + difficulty + total + z))


@njit(cache=True)
def _bh(p: np.ndarray, q: float) -> np.ndarray:
    """Benjamini-Hochberg rejections (inclusive ``p_(k) <= (k / m) * q``)."""
    m = p.shape[0]
    order = np.argsort(p, kind="mergesort")
    max_rank = 0
    for rank in range(1, m + 1):
        if p[order[rank - 1]] <= (rank / m) * q:
            max_rank = rank
    out = np.zeros(m, dtype=np.bool_)
    for rank in range(max_rank):
        out[order[rank]] = True
    return out


#: slack on the pruning comparisons, far above the rounding of either tail (about 1e-16)
_PRUNE_MARGIN = 1e-9


@njit(cache=True)
def _tail_bound(t: float) -> float:
    """Return a lower bound on ``P(T <= t)`` for Student's t with any degrees of freedom.

    The bound is the normal CDF for ``t < 0`` (t is a scale mixture of normals with
    E[1/scale^2] = 1, and the normal tail is convex in the squared scale, so Jensen's
    inequality applies), 1/2 for ``t >= 0``.  Costs an ``erfc`` (about 30 ns) instead of
    the t CDF's continued fraction (about 370 ns).
    """
    if t >= 0.0:
        return 0.5
    return 0.5 * math.erfc(-t / math.sqrt(2.0))


@njit(cache=True)
def _pick_smallest(
    u: np.ndarray, members: np.ndarray, k: int, picked: np.ndarray, inj: np.ndarray, count: int
) -> int:
    """Inject the ``k`` of ``members`` with the smallest uniforms ``u``, in member order.

    ``u`` is aligned with ``members``; ``picked`` is scratch of at least ``len(u)``.
    """
    m = u.shape[0]
    order = np.argsort(u, kind="mergesort")
    picked[:m] = False
    for i in range(k):
        picked[order[i]] = True
    for i in range(m):
        if picked[i]:
            inj[count] = members[i]
            count += 1
    return count


@njit(cache=True, inline="always")
def _select(
    ip: np.ndarray,
    fp: np.ndarray,
    status: np.ndarray,
    trials: np.ndarray,
    wins: np.ndarray,
    last_in: np.ndarray,
    age_rank: np.ndarray,
    newest_rank: np.ndarray,
    applies: np.ndarray,
    family: int,
    rec_count: int,
    u: np.ndarray,
    inj: np.ndarray,
    pid: np.ndarray,
    pval: np.ndarray,
    by_age: np.ndarray,
    ibuf: np.ndarray,
    kbuf: np.ndarray,
    fbuf: np.ndarray,
    bbuf: np.ndarray,
    prop_table: np.ndarray,
    s_with: np.ndarray,
    ss_with: np.ndarray,
    tot: np.ndarray,
) -> tuple[int, int]:
    """Fill ``inj`` with the lessons of the next run; return (count, logged propensities).

    ``s_with``/``ss_with`` are the per-lesson score sums and sums of squares and ``tot``
    the totals (runs, sum, sum of squares) for the suspect-first policy.

    ``ibuf`` (3 x L int), ``kbuf`` (L int), ``fbuf`` (L float) and ``bbuf`` (2 x L bool)
    are scratch space, allocated once per chunk.
    """
    n_les = status.shape[0]
    policy = ip[IP_POLICY]
    max_facts = ip[IP_MAXF]
    slots = ip[IP_SLOTS]
    count = 0
    n_logged = 0
    if policy == POLICY_UCB1:  # UCB1 over every live lesson (in age order, oldest first)
        live = ibuf[0]
        n = 0
        for jj in range(n_les):
            j = by_age[jj]
            if status[j] == STATUS_CANDIDATE or status[j] == STATUS_VERIFIED:
                live[n] = j
                n += 1
        # prompt size: uniform on min_facts..max_facts (coin u[1]), at most n
        span = max_facts - ip[IP_MINF] + 1
        k_draw = ip[IP_MINF] + min(int(u[1] * span), span - 1)
        k = min(k_draw, n)
        score = fbuf[:n]
        total = max(rec_count, 1)
        for i in range(n):
            j = live[i]
            h = max(trials[j], 1)
            sim = 1.0 if applies[j] < 0 or applies[j] == family else fp[FP_XSIM]
            score[i] = sim + wins[j] / h + math.sqrt(fp[FP_EXPL] * math.log(total) / h)
        order = np.argsort(-score, kind="mergesort")
        in_top = bbuf[0, :n]
        in_top[:] = False
        for i in range(k):
            in_top[order[i]] = True
        eps = fp[FP_EPS]
        chosen = in_top
        if eps > 0 and u[0] < eps:
            chosen = bbuf[1, :n]
            chosen[:] = False
            rand_order = np.argsort(u[2 : n + 2], kind="mergesort")
            for i in range(k):
                chosen[rand_order[i]] = True
        for i in range(n):
            if chosen[i]:
                inj[count] = live[i]
                count += 1
        if eps > 0:
            # inclusion probability over the exploration coin and the prompt-size draw
            kmin = ip[IP_MINF]
            mean_k = 0.0
            for kk in range(kmin, max_facts + 1):
                mean_k += min(kk, n)
            mean_k /= span
            rank = kbuf
            for i in range(n):
                rank[order[i]] = i
            for i in range(n):
                top = 0
                for kk in range(kmin, max_facts + 1):
                    if min(kk, n) > rank[i]:
                        top += 1
                pid[n_logged] = live[i]
                pval[n_logged] = (1 - eps) * (top / span) + eps * (mean_k / n)
                n_logged += 1
        return count, n_logged

    # candidate block
    cand = ibuf[0]
    n = 0
    if policy == POLICY_SUSPECT_FIRST:
        count = _suspect_first(
            ip, fp, status, trials, s_with, ss_with, tot, by_age, u, inj, ibuf, fbuf
        )
    elif policy in (POLICY_IN_PROGRESS_FIRST, POLICY_NEWEST_FIRST, POLICY_FEWEST_TRIALS_FIRST):
        # cycgraph-style orderings with the rest bench
        rest = ip[IP_REST]
        keys = kbuf
        for j in range(n_les):
            if status[j] != STATUS_CANDIDATE:
                continue
            if rest > 0 and trials[j] >= rest:
                continue
            cand[n] = j
            if policy == POLICY_IN_PROGRESS_FIRST:
                keys[n] = -trials[j] * (n_les + 1) + age_rank[j]
            elif policy == POLICY_NEWEST_FIRST:
                keys[n] = newest_rank[j]
            else:
                keys[n] = trials[j] * (n_les + 1) + age_rank[j]
            n += 1
        if n > 1:
            order = np.argsort(keys[:n], kind="mergesort")
        else:
            order = ibuf[2, :n]
            if n == 1:
                order[0] = 0
        take = min(slots, n)
        for i in range(take):
            inj[count] = cand[order[i]]
            count += 1
    else:  # randomized / designed over the active pool (oldest candidates first)
        pool_cap = ip[IP_POOL]
        for jj in range(n_les):
            j = by_age[jj]
            if status[j] == STATUS_CANDIDATE and n < pool_cap:
                cand[n] = j
                n += 1
        if policy == POLICY_RANDOMIZED:
            if ip[IP_BERNOULLI] == 1:
                # each pool lesson drawn with probability p; at most `slots` kept
                p_inc = fp[FP_PINC]
                drawn = 0
                for i in range(n):
                    if u[2 + i] < p_inc:
                        drawn += 1
                k = min(slots, drawn)
                # computed once by the library (cogstats.retrieval.randomized) for every
                # pool size, so both engines log the same numbers
                prop = prop_table[n]
            else:
                k = min(slots, n)
                prop = k / n if n > 0 else 0.0
            count = _pick_smallest(u[2 : n + 2], cand[:n], k, bbuf[0], inj, count)
            for i in range(n):
                pid[n_logged] = cand[i]
                pval[n_logged] = prop
                n_logged += 1
        elif policy == POLICY_DESIGNED:
            if rec_count % 2 == 0:
                k = min(slots, (n + 1) // 2)
                count = _pick_smallest(u[2 : n + 2], cand[:n], k, bbuf[0], inj, count)
            else:
                rest = ibuf[1]
                ur = fbuf
                nr = 0
                for i in range(n):
                    if not last_in[cand[i]]:
                        rest[nr] = cand[i]
                        ur[nr] = u[2 + i]
                        nr += 1
                count = _pick_smallest(ur[:nr], rest[:nr], min(slots, nr), bbuf[0], inj, count)
    # verified block (newest first) fills the remaining places
    room = max_facts - count
    if room > 0:
        ver = ibuf[1]
        vk = kbuf
        nv = 0
        for j in range(n_les):
            if status[j] == STATUS_VERIFIED:
                ver[nv] = j
                vk[nv] = newest_rank[j]
                nv += 1
        if nv == 0:
            return count, n_logged
        if nv == 1:  # no sort (an argsort allocates: this runs once per simulated run)
            order = ibuf[2, :1]
            order[0] = 0
        else:
            order = np.argsort(vk[:nv], kind="mergesort")
        for i in range(min(room, nv)):
            j = ver[order[i]]
            inj[count] = j
            count += 1
            if policy == POLICY_RANDOMIZED:
                pid[n_logged] = j
                pval[n_logged] = 1.0
                n_logged += 1
    return count, n_logged


@njit(cache=True, inline="always")
def _welch_z(n: int, s: float, ss: float, tot_n: int, tot_s: float, tot_ss: float) -> float:
    """:func:`cogstats.retrieval.recommended.welch_z`, the same operations in order."""
    nb = tot_n - n
    if n < 2 or nb < 2:
        return 0.0
    mean_a = s / n
    sb = tot_s - s
    mean_b = sb / nb
    va = max(max((ss - s * mean_a) / (n - 1), 0.0), 0.0)
    vb = max(max(((tot_ss - ss) - sb * mean_b) / (nb - 1), 0.0), 0.0)
    se = math.sqrt(va / n + vb / nb)
    if not se > 0.0:
        return 0.0
    return (mean_a - mean_b) / se


@njit(cache=True)
def _suspect_first(
    ip: np.ndarray,
    fp: np.ndarray,
    status: np.ndarray,
    trials: np.ndarray,
    s_with: np.ndarray,
    ss_with: np.ndarray,
    tot: np.ndarray,
    by_age: np.ndarray,
    u: np.ndarray,
    inj: np.ndarray,
    ibuf: np.ndarray,
    fbuf: np.ndarray,
) -> int:
    """Fill :class:`cogstats.retrieval.SuspectFirst`'s candidate block.

    Suspects (lowest Welch statistic first), fresh candidates (oldest first), then the
    rest (lowest statistic first), each drawn with probability ``inclusion_prob`` until
    the slots are taken.
    """
    n_les = status.shape[0]
    slots = ip[IP_SLOTS]
    fresh_trials = ip[IP_FRESH]
    susz = fp[FP_POL_SUSZ]
    p_inc = fp[FP_PINC]
    tot_n = int(tot[0])
    cand = ibuf[0]
    order = ibuf[1]
    cls = ibuf[2]
    z = fbuf
    n = 0
    for jj in range(n_les):
        j = by_age[jj]
        if status[j] == STATUS_CANDIDATE:
            cand[n] = j
            n += 1
    for i in range(n):
        j = cand[i]
        z[i] = _welch_z(trials[j], s_with[j], ss_with[j], tot_n, tot[1], tot[2])
        if z[i] < -susz:
            cls[i] = 0
        elif trials[j] < fresh_trials:
            cls[i] = 1
        else:
            cls[i] = 2
    n_ord = 0
    for c in range(3):
        m = 0
        for i in range(n):
            if cls[i] == c:
                m += 1
        if m == 0:
            continue
        pos = np.empty(m, dtype=np.int64)
        key = np.empty(m)
        k = 0
        for i in range(n):
            if cls[i] == c:
                pos[k] = i
                key[k] = z[i] if c != 1 else 0.0  # fresh: oldest first (positions)
                k += 1
        ro = np.argsort(key, kind="mergesort")
        for k in range(m):
            order[n_ord] = pos[ro[k]]
            n_ord += 1
    count = 0
    chosen = cls  # reuse: mark chosen positions
    for i in range(n):
        chosen[i] = 0
    for k in range(n_ord):
        if count >= slots:
            break
        i = order[k]
        if u[2 + i] < p_inc:
            chosen[i] = 1
            count += 1
    count = 0
    for i in range(n):
        if chosen[i] == 1:
            inj[count] = cand[i]
            count += 1
    return count


@njit(cache=True)
def _gj_inverse(a: np.ndarray, p: int, aug: np.ndarray, out: np.ndarray) -> bool:
    """Invert as :func:`cogstats.estimators.debiased_ridge.gauss_jordan_inverse` does.

    The same operations in the same order (``aug`` is p x 2p scratch); False when
    singular.
    """
    scale = 0.0
    for i in range(p):
        scale = max(scale, abs(a[i, i]))
    for i in range(p):
        for c in range(2 * p):
            aug[i, c] = 0.0
        for c in range(p):
            aug[i, c] = a[i, c]
        aug[i, p + i] = 1.0
    for k in range(p):
        piv = aug[k, k]
        if not piv > 1e-12 * scale:
            return False
        for c in range(2 * p):
            aug[k, c] = aug[k, c] / piv
        for i in range(p):
            if i == k:
                continue
            fi = aug[i, k]
            for c in range(2 * p):
                aug[i, c] = aug[i, c] - fi * aug[k, c]
    for i in range(p):
        for c in range(p):
            out[i, c] = aug[i, p + c]
    return True


@njit(cache=True)
def _ridge_pass(
    gram: np.ndarray,
    zty: np.ndarray,
    yty: float,
    runs: int,
    f: int,
    p: int,
    pen: np.ndarray,
    prior_ss: float,
    prior_runs: float,
    a: np.ndarray,
    aug: np.ndarray,
    m: np.ndarray,
    b: np.ndarray,
    gb: np.ndarray,
    t_out: np.ndarray,
    info: np.ndarray,
    df_out: np.ndarray,
) -> bool:
    """Run one pass of :func:`cogstats.estimators.debiased_ridge._one_pass`.

    The pass runs on the compact statistics (``p`` columns, ``f`` fixed), the same
    operations in the same order; writes each lesson's t, info and df (NaN where
    undefined); False when singular.
    """
    for i in range(p):
        for c in range(p):
            a[i, c] = gram[i, c]
    for i in range(f, p):
        a[i, i] = a[i, i] + pen[i - f]
    for i in range(p - f):
        t_out[i] = math.nan
        info[i] = math.nan
        df_out[i] = math.nan
    if not _gj_inverse(a, p, aug, m):
        return False
    for i in range(p):
        acc = 0.0
        for c in range(p):
            acc += m[i, c] * zty[c]
        b[i] = acc
    for i in range(p):
        acc = 0.0
        for c in range(p):
            acc += gram[i, c] * b[c]
        gb[i] = acc
    bg = 0.0
    for i in range(p):
        bg += b[i] * zty[i]
    bgb = 0.0
    for i in range(p):
        bgb += b[i] * gb[i]
    rss = yty - 2.0 * bg + bgb
    trace = 0.0
    for i in range(p):
        ri = 0.0
        for c in range(p):
            ri += m[i, c] * gram[c, i]
        trace += ri
    for i in range(f, p):
        k = pen[i - f]
        mjj = m[i, i]
        if mjj > 0.0:
            info[i - f] = 1.0 / mjj - k
        own = 1.0 - k * mjj
        if not (own > 0.0 and mjj > 0.0):
            continue
        mkb = 0.0
        mkm = 0.0
        for c in range(f, p):
            mkb += m[i, c] * (pen[c - f] * b[c])
            mkm += (m[i, c] * m[i, c]) * pen[c - f]
        cj = k * b[i] / own
        gap = mjj - mkm
        rss_j = rss - 2.0 * cj * mkb + cj * cj * gap
        df = runs - (trace + k * gap / own) + prior_runs
        if not df >= 1.0:
            continue
        s2 = (max(rss_j, 0.0) + prior_ss) / df
        est = b[i] / own
        se = math.sqrt(s2 * mjj / own)
        if se > 0.0:
            t_out[i - f] = est / se
            df_out[i - f] = df
    return True


@njit(cache=True)
def _recommended_gate(
    ip: np.ndarray,
    fp: np.ndarray,
    levels: np.ndarray,
    status: np.ndarray,
    n_with: np.ndarray,
    first_trial: np.ndarray,
    gram_full: np.ndarray,
    zty_full: np.ndarray,
    yty: float,
    runs: int,
    by_age: np.ndarray,
    run: int,
    promote_run: np.ndarray,
    evict_run: np.ndarray,
    evict_reason: np.ndarray,
    ibuf: np.ndarray,
) -> None:
    """Run :class:`~cogstats.gates.RecommendedGate` on the running Gram matrix.

    The debiased ridge over the lessons tried so far (in order of first trial, as a ledger
    lists them), then a t test against the level spent at each lesson's age (recorded runs
    since its first trial).
    """
    n_les = status.shape[0]
    f = 1 + ip[IP_NCOV]
    # the lessons tried so far, in order of first appearance (first trial run, index)
    act = ibuf[0]
    m_act = 0
    for j in range(n_les):
        if n_with[j] > 0:
            act[m_act] = j
            m_act += 1
    if m_act == 0:
        return
    keys = np.empty(m_act, dtype=np.int64)
    for i in range(m_act):
        keys[i] = first_trial[act[i]] * (n_les + 1) + act[i]
    order = np.argsort(keys, kind="mergesort")
    cols = np.empty(m_act, dtype=np.int64)
    for i in range(m_act):
        cols[i] = act[order[i]]
    p = f + m_act
    gram = np.empty((p, p))
    zty = np.empty(p)
    for r in range(p):
        rr = r if r < f else f + cols[r - f]
        zty[r] = zty_full[rr]
        for c in range(p):
            cc = c if c < f else f + cols[c - f]
            gram[r, c] = gram_full[rr, cc]
    # not identifiable: in every run, or sharing an inclusion pattern
    ident = np.ones(m_act, dtype=np.bool_)
    for i in range(m_act):
        di = gram[f + i, f + i]
        if di >= runs or di <= 0:
            ident[i] = False
            continue
        for k in range(i + 1, m_act):
            if gram[f + k, f + k] == di and gram[f + i, f + k] == di:
                ident[i] = False
                ident[k] = False
    k_pen = fp[FP_PENALTY]
    pen = np.full(m_act, k_pen)
    new = np.empty(m_act)
    a = np.empty((p, p))
    aug = np.empty((p, 2 * p))
    mm = np.empty((p, p))
    b = np.empty(p)
    gb = np.empty(p)
    t = np.empty(m_act)
    info = np.empty(m_act)
    dfs = np.empty(m_act)
    passes = ip[IP_PASSES]
    susz = fp[FP_GATE_SUSZ]
    share = fp[FP_MIN_SHARE]
    ok = False
    for step in range(passes):
        ok = _ridge_pass(
            gram,
            zty,
            yty,
            runs,
            f,
            p,
            pen,
            fp[FP_PRIOR_SS],
            fp[FP_PRIOR_RUNS],
            a,
            aug,
            mm,
            b,
            gb,
            t,
            info,
            dfs,
        )
        if not ok or step == passes - 1:
            break
        same = True
        for i in range(m_act):
            strong = ident[i] and t[i] < -susz and info[i] >= share * gram[f + i, f + i]
            new[i] = 0.0 if strong else k_pen
            if new[i] != pen[i]:
                same = False
        if same:
            break
        for i in range(m_act):
            pen[i] = new[i]
    pos = np.full(n_les, -1, dtype=np.int64)
    for i in range(m_act):
        pos[cols[i]] = i
    min_trials = ip[IP_MINT]
    max_trials = ip[IP_MAXT]
    recheck = ip[IP_RECHECK] == 1
    for jj in range(n_les):
        j = by_age[jj]
        if not (status[j] == STATUS_CANDIDATE or (recheck and status[j] == STATUS_VERIFIED)):
            continue
        i = pos[j]
        n = n_with[j]
        if i < 0 or n < min_trials or not ident[i]:
            continue
        ti = t[i]
        if not ok or math.isnan(ti) or math.isinf(ti):
            continue
        top = levels.shape[0] - 1
        look = 0
        if info[i] > 0.0:
            look = min(int(info[i] / fp[FP_MAX_INFO] * top), top)  # info > 0: int is floor
        level = levels[look]
        up = t_cdf(-ti, dfs[i])
        down = t_cdf(ti, dfs[i])
        d = DECISION_HOLD
        if level > 0.0 and up <= level:
            d = DECISION_PROMOTE
        elif level > 0.0 and down <= level:
            d = DECISION_EVICT_HARMFUL
        elif look >= top or (max_trials > 0 and n >= max_trials):
            d = DECISION_EVICT_NO_LIFT
        _apply(d, j, run, status, promote_run, evict_run, evict_reason)


@njit(cache=True, inline="always")
def _welch(
    n: int, s: float, ss: float, tot_n: int, tot_s: float, tot_ss: float, floor_var: float
) -> tuple[float, float, float]:
    """Return lift, Welch standard error and Welch-Satterthwaite df of a lesson.

    For a lesson with n trials, from the sufficient statistics of its runs (n, s, ss) and
    of all recorded runs.
    """
    nb = tot_n - n
    mean_a = s / n
    sb = tot_s - s
    mean_b = sb / nb
    va = max(max((ss - s * mean_a) / (n - 1), 0.0), floor_var)
    vb = max(max(((tot_ss - ss) - sb * mean_b) / (nb - 1), 0.0), floor_var)
    sa = va / n
    sbv = vb / nb
    se = math.sqrt(sa + sbv)
    df = math.inf
    if se > 0.0:
        df = (sa + sbv) ** 2 / (sa**2 / (n - 1) + sbv**2 / (nb - 1))
    return mean_a - mean_b, se, df


@njit(cache=True, inline="always")
def _apply(
    d: int,
    j: int,
    run: int,
    status: np.ndarray,
    promote_run: np.ndarray,
    evict_run: np.ndarray,
    evict_reason: np.ndarray,
) -> None:
    """Apply decision code ``d`` (``cogstats._codes.DECISION_*``)."""
    if d == DECISION_PROMOTE:
        if status[j] == STATUS_CANDIDATE:
            status[j] = STATUS_VERIFIED
            promote_run[j] = run
    elif d in (DECISION_EVICT_HARMFUL, DECISION_EVICT_NO_LIFT):
        status[j] = STATUS_EVICTED
        evict_run[j] = run
        harmful = d == DECISION_EVICT_HARMFUL
        evict_reason[j] = REASON_CODE_HARMFUL if harmful else REASON_CODE_NO_LIFT


@njit(cache=True, inline="always")
def _gate(
    ip: np.ndarray,
    fp: np.ndarray,
    status: np.ndarray,
    n_with: np.ndarray,
    s_with: np.ndarray,
    ss_with: np.ndarray,
    wins: np.ndarray,
    tot_n: int,
    tot_s: float,
    tot_ss: float,
    by_age: np.ndarray,
    run: int,
    promote_run: np.ndarray,
    evict_run: np.ndarray,
    evict_reason: np.ndarray,
    retire_run: np.ndarray,
    ibuf: np.ndarray,
    fbuf: np.ndarray,
) -> None:
    """One gate pass; ``ibuf`` (3 x L int) and ``fbuf`` (2 x L float) are scratch space."""
    gate = ip[IP_GATE]
    recheck = ip[IP_RECHECK] == 1
    n_les = status.shape[0]
    if gate == GATE_AUDIT:
        min_hits = ip[IP_AUDIT_HITS]
        rate = fp[FP_AUDIT_RATE]
        for j in range(n_les):
            if status[j] == STATUS_CANDIDATE or status[j] == STATUS_VERIFIED:
                h = n_with[j]
                if h >= min_hits and wins[j] / h < rate:
                    status[j] = STATUS_RETIRED
                    retire_run[j] = run
        return
    min_trials = ip[IP_MINT]
    max_trials = ip[IP_MAXT]
    max_base = ip[IP_MAXB]
    judged = ibuf[0]
    tested = ibuf[1]
    p_prom = fbuf[0]
    p_evic = fbuf[1]
    n_tested = 0
    floor_var = fp[FP_FLOOR] ** 2
    pm = fp[FP_PM]
    em = fp[FP_EM]
    q_prom = 1.0 - fp[FP_PC]
    q_evic = 1.0 - fp[FP_EC]
    n_judged = 0
    for jj in range(n_les):
        j = by_age[jj]
        if status[j] == STATUS_CANDIDATE or (recheck and status[j] == STATUS_VERIFIED):
            judged[n_judged] = j
            n_judged += 1
    decision = ibuf[2]
    for ii in range(n_judged):
        decision[judged[ii]] = DECISION_HOLD
    for ii in range(n_judged):
        j = judged[ii]
        n = n_with[j]
        nb = tot_n - n
        max_hit = max_trials > 0 and n >= max_trials
        if n == 0 or n < min_trials:
            continue
        if gate == GATE_MARGIN:
            if nb == 0:
                if max_hit:
                    decision[j] = DECISION_EVICT_NO_LIFT
                continue
            lift = s_with[j] / n - (tot_s - s_with[j]) / nb
            if lift >= pm:
                decision[j] = DECISION_PROMOTE
            elif -lift >= em:
                decision[j] = DECISION_EVICT_HARMFUL
            elif max_hit:
                decision[j] = DECISION_EVICT_NO_LIFT
            continue
        if n < 2 or nb < 2:
            if max_hit:
                decision[j] = DECISION_EVICT_NO_LIFT
            continue
        lift, se, df = _welch(n, s_with[j], ss_with[j], tot_n, tot_s, tot_ss, floor_var)
        factor = 1.0
        if ip[IP_DOUBLING] == 1:
            k = 0
            v = nb
            while v > 1:
                v >>= 1
                k += 1
            factor = 2.0**k
        if se == 0.0:
            pp = 1.0 if lift > pm else 0.0
            pex = 1.0 if lift > -em else 0.0
            promote_p = 1.0 - pp
            evict_p = 1.0 - (1.0 - pex)
        else:
            # A side whose p-value cannot reach its level is not computed: the t tail is
            # at least the normal tail (t is a scale mixture of normals), so when the
            # normal bound times the spending factor exceeds q the side is not rejected
            # (and a p-value above q changes no Benjamini-Hochberg decision).
            t_up = (pm - lift) / se
            if _tail_bound(t_up) * factor > q_prom + _PRUNE_MARGIN:
                promote_p = 1.0
            else:
                promote_p = 1.0 - (1.0 - t_cdf(t_up, df))
            t_dn = (-em - lift) / se
            if _tail_bound(-t_dn) * factor > q_evic + _PRUNE_MARGIN:
                evict_p = 1.0
            else:
                pex = 1.0 - t_cdf(t_dn, df)
                evict_p = 1.0 - (1.0 - pex)
        if ip[IP_DOUBLING] == 1:
            promote_p = min(1.0, promote_p * factor)
            evict_p = min(1.0, evict_p * factor)
        tested[n_tested] = j
        p_prom[n_tested] = promote_p
        p_evic[n_tested] = evict_p
        n_tested += 1
    if n_tested > 0:
        bh = ip[IP_BH] == 1 and n_tested > 1
        if bh:
            up = _bh(p_prom[:n_tested], q_prom)
            down = _bh(p_evic[:n_tested], q_evic)
        for i in range(n_tested):
            j = tested[i]
            nb = tot_n - n_with[j]
            if bh:
                up_i, down_i = up[i], down[i]
            else:  # BH with one hypothesis is the plain comparison p <= q
                up_i, down_i = p_prom[i] <= q_prom, p_evic[i] <= q_evic
            if up_i and down_i:
                continue
            if up_i:
                decision[j] = DECISION_PROMOTE
            elif down_i:
                decision[j] = DECISION_EVICT_HARMFUL
            elif (max_trials > 0 and n_with[j] >= max_trials) or (max_base > 0 and nb >= max_base):
                decision[j] = DECISION_EVICT_NO_LIFT
    for ii in range(n_judged):
        j = judged[ii]
        _apply(decision[j], j, run, status, promote_run, evict_run, evict_reason)


@njit(cache=True, inline="always")
def _evidence_gate(
    ip: np.ndarray,
    fp: np.ndarray,
    bounds: np.ndarray,
    status: np.ndarray,
    n_with: np.ndarray,
    s_with: np.ndarray,
    ss_with: np.ndarray,
    tot_n: int,
    tot_s: float,
    tot_ss: float,
    by_age: np.ndarray,
    run: int,
    promote_run: np.ndarray,
    evict_run: np.ndarray,
    evict_reason: np.ndarray,
    ibuf: np.ndarray,
) -> None:
    """Run :class:`~cogstats.gates.EvidenceGate` on the Welch statistics.

    Methods lift and welch; sequential fixed or group; multiplicity none, or Bonferroni
    when fixed.
    """
    recheck = ip[IP_RECHECK] == 1
    n_les = status.shape[0]
    min_trials = ip[IP_MINT]
    max_trials = ip[IP_MAXT]
    max_base = ip[IP_MAXB]
    group = ip[IP_EV_GROUP] == 1
    pm = fp[FP_PM]
    em = fp[FP_EM]
    floor_var = fp[FP_FLOOR] ** 2
    judged = ibuf[0]
    n_judged = 0
    m = 0
    for jj in range(n_les):
        j = by_age[jj]
        if status[j] == STATUS_CANDIDATE or (recheck and status[j] == STATUS_VERIFIED):
            judged[n_judged] = j
            n_judged += 1
            if n_with[j] >= min_trials and n_with[j] < tot_n:
                m += 1
    alpha = fp[FP_ALPHA]
    if ip[IP_EV_BONF] == 1 and m > 1:
        alpha = alpha / m
    for ii in range(n_judged):
        j = judged[ii]
        n = n_with[j]
        nb = tot_n - n
        d = DECISION_HOLD
        if n >= min_trials and nb >= 2 and n >= 2:
            est, se, df = _welch(n, s_with[j], ss_with[j], tot_n, tot_s, tot_ss, floor_var)
            up = False
            down = False
            if se == 0.0:
                up = est > pm
                down = est < -em
            elif group:
                b = bounds[min(n, max_trials)]
                up = (est - pm) / se >= b
                down = (-em - est) / se >= b
            else:  # the normal tail bounds the t tail from below (see _gate)
                z_up = (est - pm) / se
                z_dn = (-em - est) / se
                up = _tail_bound(-z_up) < alpha + _PRUNE_MARGIN and (1.0 - t_cdf(z_up, df) < alpha)
                down = _tail_bound(-z_dn) < alpha + _PRUNE_MARGIN and (
                    1.0 - t_cdf(z_dn, df) < alpha
                )
            if up and not down:
                d = DECISION_PROMOTE
            elif down and not up:
                d = DECISION_EVICT_HARMFUL
        stop = (max_trials > 0 and n >= max_trials) or (max_base > 0 and nb >= max_base)
        if d == DECISION_HOLD and n > 0 and n >= min_trials and stop:
            d = DECISION_EVICT_NO_LIFT
        _apply(d, j, run, status, promote_run, evict_run, evict_reason)


@njit(cache=True, nogil=True)  # releases the GIL: cells run in threads side by side
def run_chunk(
    ip: np.ndarray,
    fp: np.ndarray,
    prop_table: np.ndarray,
    bounds: np.ndarray,
    levels: np.ndarray,
    arrival: np.ndarray,
    kind: np.ndarray,
    age_rank: np.ndarray,
    newest_rank: np.ndarray,
    applies: np.ndarray,
    noise: np.ndarray,
    diff: np.ndarray,
    fam: np.ndarray,
    eff: np.ndarray,
    ru: np.ndarray,
    cov: np.ndarray,
    out_score: np.ndarray,
    out_recorded: np.ndarray,
    out_inj: np.ndarray,
    out_ninj: np.ndarray,
    out_pid: np.ndarray,
    out_pval: np.ndarray,
    out_np: np.ndarray,
    out_oracle: np.ndarray,
    out_first_trial: np.ndarray,
    out_trials: np.ndarray,
    out_promote_run: np.ndarray,
    out_evict_run: np.ndarray,
    out_evict_reason: np.ndarray,
    out_retire_run: np.ndarray,
) -> None:
    """Simulate ``noise.shape[0]`` replicates; write every output array in place.

    ``cov`` holds each run's covariates for the recommended gate (replicate x run x
    ``ip[IP_NCOV]``) and ``levels`` its one-sided levels by trial count.
    """
    n_rep = noise.shape[0]
    runs = ip[IP_RUNS]
    n_les = ip[IP_L]
    max_facts = ip[IP_MAXF]
    gate = ip[IP_GATE]
    every = ip[IP_EVERY]
    gate_from = ip[IP_FROM]
    rec_empty = ip[IP_RECEMPTY] == 1
    logistic = ip[IP_LINK] == 1
    base = fp[FP_BASE]
    noise_sd = fp[FP_NOISE]
    sat = fp[FP_SAT]
    damp = fp[FP_DAMP]
    win_thr = fp[FP_WIN]
    logit_base = 0.0
    if logistic:
        logit_base = math.log(base / (1.0 - base))
    by_age = np.argsort(age_rank)
    status = np.zeros(n_les, dtype=np.int64)
    n_with = np.zeros(n_les, dtype=np.int64)
    s_with = np.zeros(n_les)
    ss_with = np.zeros(n_les)
    wins = np.zeros(n_les, dtype=np.int64)
    last_in = np.zeros(n_les, dtype=np.bool_)
    inj = np.empty(max_facts, dtype=np.int64)
    width = out_pid.shape[2]
    pid = np.empty(width, dtype=np.int64)
    pval = np.empty(width)
    helpful = np.empty(n_les)
    ibuf = np.empty((3, n_les), dtype=np.int64)
    kbuf = np.empty(n_les, dtype=np.int64)
    fbuf = np.empty(n_les)
    bbuf = np.empty((2, n_les), dtype=np.bool_)
    gibuf = np.empty((3, n_les), dtype=np.int64)
    gfbuf = np.empty((2, n_les))
    ncov = ip[IP_NCOV]
    nfix = 1 + ncov
    ridge = gate == GATE_RECOMMENDED
    pg = nfix + n_les if ridge else 1
    gram = np.zeros((pg, pg))
    zty = np.zeros(pg)
    frow = np.empty(nfix)
    tot3 = np.zeros(3)
    for rep in range(n_rep):
        status[:] = STATUS_FUTURE
        n_with[:] = 0
        s_with[:] = 0.0
        ss_with[:] = 0.0
        wins[:] = 0
        last_in[:] = False
        tot_n = 0
        tot_s = 0.0
        tot_ss = 0.0
        rec_count = 0
        yty = 0.0
        gram[:, :] = 0.0
        zty[:] = 0.0
        tot3[:] = 0.0
        first_trial = out_first_trial[rep]
        first_trial[:] = 0
        promote_run = out_promote_run[rep]
        evict_run = out_evict_run[rep]
        evict_reason = out_evict_reason[rep]
        retire_run = out_retire_run[rep]
        promote_run[:] = 0
        evict_run[:] = 0
        evict_reason[:] = 0
        retire_run[:] = 0
        e = eff[rep]
        for r in range(runs):
            run = r + 1
            for j in range(n_les):
                if arrival[j] == run:
                    status[j] = STATUS_CANDIDATE
            count, n_logged = _select(
                ip,
                fp,
                status,
                n_with,
                wins,
                last_in,
                age_rank,
                newest_rank,
                applies,
                fam[rep, r],
                rec_count,
                ru[rep, r],
                inj,
                pid,
                pval,
                by_age,
                ibuf,
                kbuf,
                fbuf,
                bbuf,
                prop_table,
                s_with,
                ss_with,
                tot3,
            )
            # score: effects summed in lesson order, as the reference engine does
            if count > 1:
                inj[:count] = np.sort(inj[:count])
            tot = injected_total(e, kind, inj, count, damp, sat)
            z = noise_sd * noise[rep, r]
            y = link_score(base, logit_base, logistic, diff[rep, r], tot, z)
            out_score[rep, r] = y
            # oracle: only helpful lessons that have arrived, the best max_facts of them
            gsum = oracle_total(e, arrival, run, max_facts, sat, helpful)
            out_oracle[rep, r] = link_score(base, logit_base, logistic, diff[rep, r], gsum, z)
            out_ninj[rep, r] = count
            for i in range(count):
                out_inj[rep, r, i] = inj[i]
            out_np[rep, r] = n_logged
            if n_logged > 0:  # logged propensities in lesson order, as the reference
                lorder = np.argsort(pid[:n_logged])
                for i in range(n_logged):
                    out_pid[rep, r, i] = pid[lorder[i]]
                    out_pval[rep, r, i] = pval[lorder[i]]
            # record
            if count > 0 or rec_empty:
                out_recorded[rep, r] = True
                rec_count += 1
                tot_n += 1
                tot_s += y
                tot_ss += y * y
                last_in[:] = False
                for i in range(count):
                    j = inj[i]
                    n_with[j] += 1
                    s_with[j] += y
                    ss_with[j] += y * y
                    last_in[j] = True
                    if y >= win_thr:
                        wins[j] += 1
                    if first_trial[j] == 0:
                        first_trial[j] = run
                tot3[0] = tot_n
                tot3[1] = tot_s
                tot3[2] = tot_ss
                if ridge:  # the Gram matrix of [1, covariates, lessons], in run order
                    frow[0] = 1.0
                    for a in range(ncov):
                        frow[1 + a] = cov[rep, r, a]
                    for a in range(nfix):
                        fa = frow[a]
                        for c in range(nfix):
                            gram[a, c] += fa * frow[c]
                        zty[a] += fa * y
                        for i in range(count):
                            j = nfix + inj[i]
                            gram[a, j] += fa
                            gram[j, a] += fa
                    for i in range(count):
                        j = nfix + inj[i]
                        zty[j] += y
                        for i2 in range(count):
                            gram[j, nfix + inj[i2]] += 1.0
                    yty += y * y
            else:
                out_recorded[rep, r] = False
            # gate
            if ridge and run >= gate_from and (run - gate_from) % every == 0:
                _recommended_gate(
                    ip,
                    fp,
                    levels,
                    status,
                    n_with,
                    first_trial,
                    gram,
                    zty,
                    yty,
                    tot_n,
                    by_age,
                    run,
                    promote_run,
                    evict_run,
                    evict_reason,
                    gibuf,
                )
            elif gate == GATE_EVIDENCE and run >= gate_from and (run - gate_from) % every == 0:
                _evidence_gate(
                    ip,
                    fp,
                    bounds,
                    status,
                    n_with,
                    s_with,
                    ss_with,
                    tot_n,
                    tot_s,
                    tot_ss,
                    by_age,
                    run,
                    promote_run,
                    evict_run,
                    evict_reason,
                    gibuf,
                )
            elif gate != GATE_NONE and run >= gate_from and (run - gate_from) % every == 0:
                _gate(
                    ip,
                    fp,
                    status,
                    n_with,
                    s_with,
                    ss_with,
                    wins,
                    tot_n,
                    tot_s,
                    tot_ss,
                    by_age,
                    run,
                    promote_run,
                    evict_run,
                    evict_reason,
                    retire_run,
                    gibuf,
                    gfbuf,
                )
        for j in range(n_les):
            out_trials[rep, j] = n_with[j]
