"""The retrieval policies compiled: which lessons the simulator's next run carries.

Array re-implementations of :mod:`cogstats.retrieval` (the cycgraph orderings with the
rest bench, randomized and designed pools, UCB1) on the run loop's
:class:`~cogstats.kernel.Lessons`, reading the run loop's block
(:data:`cogstats.kernel.COMMON`: max_facts, pool size) and each policy's own block
(:data:`ORDER_BLOCK`, :data:`POOL_BLOCK`, :data:`UCB_BLOCK`).  The pieces
(:data:`ORDER_PIECE`, :data:`POOL_PIECE`, :data:`UCB_PIECE`: each a
:class:`~cogstats.kernel.KernelPolicy`, how the policy's options fill its block) are
named by the policies' registrations
(``register_policy(..., kernel="cogstats.retrieval.kernel:POOL_PIECE")``; one module holds
several pieces, so each is named by its attribute).  Imported only when the simulator
runs (numba).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import njit

from cogstats._codes import (
    POLICY_DESIGNED,
    POLICY_FEWEST_TRIALS_FIRST,
    POLICY_IN_PROGRESS_FIRST,
    POLICY_NEWEST_FIRST,
    POLICY_RANDOMIZED,
    POLICY_UCB1,
    STATUS_ADMITTED,
    STATUS_CANDIDATE,
    STATUS_SUSPENDED,
    STATUS_VERIFIED,
)
from cogstats.kernel import IP_MAXF, IP_POLICY, IP_POOL, Block, KernelPolicy

__all__ = [
    "ORDER_BLOCK",
    "ORDER_PIECE",
    "POOL_BLOCK",
    "POOL_PIECE",
    "UCB_BLOCK",
    "UCB_PIECE",
    "select",
]

#: the policies' own parameter blocks (filled by name by their pieces, below);
#: every candidate-block policy has its slot count first
SLOTS = 0
#: and the re-test slot's options (``retest_window`` 0: no window) second and third
#: in_progress_first, newest_first, fewest_trials_first (cycgraph's orderings)
ORDER_BLOCK = Block(
    "order",
    ints=("slots", "retest_window", "retest_order", "rest", "fill_empty"),
    floats=("retest_prob", "retest_floor"),
)
#: randomized, designed
POOL_BLOCK = Block(
    "pool",
    ints=("slots", "retest_window", "retest_order", "bernoulli", "fill_empty"),
    floats=("retest_prob", "retest_floor", "inclusion_prob"),
)
#: ucb1 (its win threshold is the run loop's: wins are counted there)
UCB_BLOCK = Block(
    "ucb1", ints=("min_facts",), floats=("epsilon", "cross_similarity", "exploration")
)
WINDOW = 1
RETEST_ORDER = 2
RETEST_PROB = 0
RETEST_FLOOR = 1
for _block in (ORDER_BLOCK, POOL_BLOCK):
    assert _block.i("slots") == SLOTS
    assert _block.i("retest_window") == WINDOW
    assert _block.i("retest_order") == RETEST_ORDER
    assert _block.f("retest_prob") == RETEST_PROB
    assert _block.f("retest_floor") == RETEST_FLOOR
#: the re-test orders (``retest_order``): uniform among the eligible suspects, or the
#: suspect most likely innocent first (the gate's last t, highest first)
RETEST_RANDOM = 0
RETEST_LIKELY_INNOCENT = 1
ORDER_REST = ORDER_BLOCK.i("rest")
ORDER_FILL = ORDER_BLOCK.i("fill_empty")
POOL_FILL = POOL_BLOCK.i("fill_empty")
assert ORDER_FILL == POOL_FILL
POOL_BERNOULLI = POOL_BLOCK.i("bernoulli")
POOL_PINC = POOL_BLOCK.f("inclusion_prob")
UCB_MINF = UCB_BLOCK.i("min_facts")
UCB_EPS = UCB_BLOCK.f("epsilon")
UCB_XSIM = UCB_BLOCK.f("cross_similarity")
UCB_EXPL = UCB_BLOCK.f("exploration")


# ---------------------------------------------------------------------- the policies' pieces
# how a policy's options fill its block (by slot name); each policy's registry entry names
# its piece here (register_policy(..., kernel="cogstats.retrieval.kernel:ORDER_PIECE"))
def _slots(policy: Any) -> int:
    return int(min(policy.candidate_slots, policy.max_facts))


def _retest_values(policy: Any) -> dict[str, float]:
    """Return the re-test slot's options (``retest_window`` None is 0 in the kernel)."""
    return {
        "slots": _slots(policy),
        "retest_window": policy.retest_window or 0,
        "retest_prob": policy.retest_prob,
        "retest_order": int(getattr(policy, "retest_order", "random") == "likely_innocent"),
        "retest_floor": float(getattr(policy, "retest_floor", 1.5)),
        "fill_empty": int(getattr(policy, "fill_empty", False)),
    }


def _order_values(policy: Any) -> dict[str, float]:
    return {
        **_retest_values(policy),
        "rest": policy.rest_after_trials or 0,
    }


def _pooled_values(policy: Any) -> dict[str, float]:
    bernoulli = getattr(policy, "inclusion", "fixed") == "bernoulli"
    return {
        **_retest_values(policy),
        "bernoulli": int(bernoulli),
        "inclusion_prob": policy.inclusion_prob if bernoulli else 0.0,
    }


def _ucb_values(policy: Any) -> dict[str, float]:
    return {
        "min_facts": policy.max_facts if policy.min_facts is None else policy.min_facts,
        "epsilon": policy.epsilon,
        "cross_similarity": policy.cross_similarity,
        "exploration": policy.exploration,
    }


#: in_progress_first, newest_first, fewest_trials_first (cycgraph's orderings)
ORDER_PIECE = KernelPolicy(ORDER_BLOCK, _order_values)
#: randomized, designed
POOL_PIECE = KernelPolicy(POOL_BLOCK, _pooled_values)
#: ucb1
UCB_PIECE = KernelPolicy(UCB_BLOCK, _ucb_values, lambda policy: policy.win_threshold)


@njit
def pick_smallest(
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


@njit(inline="always")
def select(
    ip: np.ndarray,
    pi: np.ndarray,
    pf: np.ndarray,
    les: Any,
    scr: Any,
    prompt: Any,
    prop_table: np.ndarray,
    rec_count: int,
    family: int,
    u: np.ndarray,
    run: int,
) -> tuple[int, int]:
    """Fill ``prompt.inj`` with the lessons of the coming run; return (count, logged).

    ``les`` is what retrieval reads of the lessons (:class:`~cogstats.kernel.Lessons`:
    statuses, trials, wins, the re-test window's ``since``, the gate's last t), ``scr``
    its scratch space, ``rec_count`` the runs recorded so far, ``run`` the coming run,
    ``family`` its task family, ``u`` its uniforms; logged propensities go to
    ``prompt.pid`` and ``prompt.pval`` (the randomized policy's from ``prop_table``).

    The lesson lifecycle, as :mod:`cogstats.retrieval` has it: UCB1 ranks every live
    lesson (candidates, admitted and verified); the other policies keep suspended lessons
    out but for the re-test slot (:func:`retest_slot`: at most one a run, in one of the
    candidate slots, its eligible suspects' propensities logged with the rest of the
    prompt at 1) and fill the verified block with verified lessons newest first, then
    admitted ones in rotation (fewest trials, then oldest); ``fill_empty`` (the cycgraph
    orderings) gives places still empty to further candidates, fewest trials first.
    Every array is read off its record once (a compiled call or a record's field costs a
    reference count, every run).
    """
    policy = ip[IP_POLICY]
    if policy == POLICY_UCB1:
        return _ucb1(ip, pi, pf, les, scr, prompt, rec_count, family, u)
    status, trials, age_rank = les.status, les.n_with, les.age_rank
    ibuf, kbuf, bbuf = scr.ibuf, scr.kbuf, scr.bbuf
    inj = prompt.inj
    n_les = status.shape[0]
    max_facts = ip[IP_MAXF]
    # the re-test slot (a suspended lesson, at most one a run), then the candidate block
    slots = pi[SLOTS]
    pick = -1
    n_elig = 0
    deferred = False
    if slots > 0:
        pick, n_elig, deferred = retest_slot(
            pi, pf, status, les.since, run, les.by_age, u[0], kbuf, les.gate_t, u[1]
        )
    if pick >= 0 and not deferred:
        slots -= 1
    count = 0
    n_logged = 0
    if policy in (POLICY_IN_PROGRESS_FIRST, POLICY_NEWEST_FIRST, POLICY_FEWEST_TRIALS_FIRST):
        # cycgraph's orderings with the rest bench
        cand = ibuf[0]
        rest = pi[ORDER_REST]
        n = 0
        for j in range(n_les):
            if status[j] != STATUS_CANDIDATE or (rest > 0 and trials[j] >= rest):
                continue
            cand[n] = j
            if policy == POLICY_IN_PROGRESS_FIRST:
                kbuf[n] = -trials[j] * (n_les + 1) + age_rank[j]
            elif policy == POLICY_NEWEST_FIRST:
                kbuf[n] = les.newest_rank[j]
            else:
                kbuf[n] = trials[j] * (n_les + 1) + age_rank[j]
            n += 1
        if n > 1:
            order = np.argsort(kbuf[:n], kind="mergesort")
        else:
            order = ibuf[2, :n]
            if n == 1:
                order[0] = 0
        for i in range(min(slots, n)):
            inj[count] = cand[order[i]]
            count += 1
    else:
        count, n_logged = _pool(
            ip, pi, pf, les, scr, prompt, slots, u, prop_table[int(pick >= 0)], rec_count
        )
    n_chosen = count
    if pick >= 0 and not deferred:
        inj[count] = pick
        count += 1
    # verified block (newest first, then admitted lessons in rotation) fills the places left
    room = max_facts - count
    if room > 0:
        count = _verified_block(
            status, trials, age_rank, les.newest_rank, n_les, room, inj, count, ibuf, kbuf, run - 1
        )
    if pi[ORDER_FILL] == 1 and count < max_facts:
        count = _fill_empty(
            status, trials, age_rank, n_les, max_facts, inj, count, kbuf, bbuf, run - 1
        )
    main = count
    if deferred:
        # a likely-guilty suspect (its own t below the floor) is re-tested only into a
        # place the prompt leaves empty: it displaces nothing (logged only when placed)
        if pick >= 0 and count < max_facts:
            inj[count] = pick
            count += 1
        else:
            pick = -1
            n_elig = 0
    if policy == POLICY_RANDOMIZED or n_elig > 0:
        n_logged = _log(
            pi,
            pf,
            les,
            scr,
            prompt,
            (count, n_logged, n_chosen, main),
            pick,
            (n_elig, deferred),
            (run, u[1], policy),
        )
    return count, n_logged


@njit(inline="always")
def _ucb1(
    ip: np.ndarray,
    pi: np.ndarray,
    pf: np.ndarray,
    les: Any,
    scr: Any,
    prompt: Any,
    rec_count: int,
    family: int,
    u: np.ndarray,
) -> tuple[int, int]:
    """UCB1 over every live lesson (in age order, oldest first); its propensities logged."""
    status, by_age, trials, wins, applies = (
        les.status,
        les.by_age,
        les.n_with,
        les.wins,
        les.applies,
    )
    n_les = status.shape[0]
    max_facts = ip[IP_MAXF]
    inj, pid, pval = prompt.inj, prompt.pid, prompt.pval
    count = 0
    n_logged = 0
    live = scr.ibuf[0]
    n = 0
    for jj in range(n_les):
        j = by_age[jj]
        if status[j] in (STATUS_CANDIDATE, STATUS_VERIFIED, STATUS_ADMITTED):
            live[n] = j
            n += 1
    # prompt size: uniform on min_facts..max_facts (coin u[1]), at most n
    span = max_facts - pi[UCB_MINF] + 1
    k = min(pi[UCB_MINF] + min(int(u[1] * span), span - 1), n)
    score = scr.fbuf[:n]
    total = max(rec_count, 1)
    for i in range(n):
        j = live[i]
        h = max(trials[j], 1)
        sim = 1.0 if applies[j] < 0 or applies[j] == family else pf[UCB_XSIM]
        score[i] = sim + wins[j] / h + math.sqrt(pf[UCB_EXPL] * math.log(total) / h)
    order = np.argsort(-score, kind="mergesort")
    chosen = scr.bbuf[0, :n]
    chosen[:] = False
    for i in range(k):
        chosen[order[i]] = True
    eps = pf[UCB_EPS]
    if eps > 0 and u[0] < eps:
        chosen = scr.bbuf[1, :n]
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
        kmin = pi[UCB_MINF]
        mean_k = 0.0
        for kk in range(kmin, max_facts + 1):
            mean_k += min(kk, n)
        mean_k /= span
        rank = scr.kbuf
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


@njit
def _pool(
    ip: np.ndarray,
    pi: np.ndarray,
    pf: np.ndarray,
    les: Any,
    scr: Any,
    prompt: Any,
    slots: int,
    u: np.ndarray,
    prop_row: np.ndarray,
    rec_count: int,
) -> tuple[int, int]:
    """Fill the candidate block of the randomized and designed pools: (count, logged).

    Over the active pool of the oldest candidates; the randomized policy's propensities
    logged (from the library's ``prop_row`` by pool size).
    """
    status, by_age, last_in = les.status, les.by_age, les.last_in
    ibuf, fbuf, bbuf = scr.ibuf, scr.fbuf, scr.bbuf
    inj, pid, pval = prompt.inj, prompt.pid, prompt.pval
    policy = ip[IP_POLICY]
    cand = ibuf[0]
    count = 0
    n_logged = 0
    n = 0
    pool_cap = ip[IP_POOL]
    for jj in range(status.shape[0]):
        j = by_age[jj]
        if status[j] == STATUS_CANDIDATE and n < pool_cap:
            cand[n] = j
            n += 1
    if policy == POLICY_RANDOMIZED:
        if pi[POOL_BERNOULLI] == 1:
            # each pool lesson drawn with probability p; at most `slots` kept
            drawn = 0
            for i in range(n):
                if u[2 + i] < pf[POOL_PINC]:
                    drawn += 1
            k = min(slots, drawn)
            # computed once by the library (cogstats.retrieval.randomized) for every pool
            # size (row 1: one slot less, taken by a re-test): both engines log the same
            prop = prop_row[n]
        else:
            k = min(slots, n)
            prop = k / n if n > 0 else 0.0
        count = pick_smallest(u[2 : n + 2], cand[:n], k, bbuf[0], inj, count)
        for i in range(n):
            pid[n_logged] = cand[i]
            pval[n_logged] = prop
            n_logged += 1
    elif policy == POLICY_DESIGNED:
        if rec_count % 2 == 0:
            k = min(slots, (n + 1) // 2)
            count = pick_smallest(u[2 : n + 2], cand[:n], k, bbuf[0], inj, count)
        else:
            rest = ibuf[1]
            nr = 0
            for i in range(n):
                if not last_in[cand[i]]:
                    rest[nr] = cand[i]
                    fbuf[nr] = u[2 + i]
                    nr += 1
            count = pick_smallest(fbuf[:nr], rest[:nr], min(slots, nr), bbuf[0], inj, count)
    return count, n_logged


@njit
def _log(
    pi: np.ndarray,
    pf: np.ndarray,
    les: Any,
    scr: Any,
    prompt: Any,
    counts: tuple[int, int, int, int],
    pick: int,
    retest: tuple[int, bool],
    at: tuple[int, float, int],
) -> int:
    """Log the prompt's propensities beyond the pool's; return the number logged.

    ``counts`` is (prompt size, logged so far, candidates chosen, the prompt before a
    deferred re-test), ``retest`` the re-test slot's (eligible count, deferred), ``at`` the
    coming run, its tie-breaking uniform and the policy's code.  The randomized policy
    logs its verified block at 1; a re-test draw makes the prompt random: every lesson in
    it is logged (at 1 given the draw, unless the policy logged it already), and every
    eligible suspect at its share of ``retest_prob``.
    """
    count, n_logged, n_chosen, main = counts
    n_elig, deferred = retest
    run, u_tie, policy = at
    inj, pid, pval = prompt.inj, prompt.pid, prompt.pval
    if policy == POLICY_RANDOMIZED:  # the verified block is logged at 1 (its pool above)
        for i in range(n_chosen + (pick >= 0 and not deferred), main):
            pid[n_logged] = inj[i]
            pval[n_logged] = 1.0
            n_logged += 1
    if n_elig > 0:
        if policy != POLICY_RANDOMIZED:
            for i in range(count):
                if inj[i] != pick:
                    pid[n_logged] = inj[i]
                    pval[n_logged] = 1.0
                    n_logged += 1
        share = pf[RETEST_PROB] / n_elig
        kbuf = scr.kbuf
        # the same list
        _eligible(pi, pf, les.status, les.since, run, les.by_age, kbuf, les.gate_t, u_tie)
        for i in range(n_elig):
            pid[n_logged] = kbuf[i]
            pval[n_logged] = share
            n_logged += 1
    return n_logged


@njit
def _eligible(
    pi: np.ndarray,
    pf: np.ndarray,
    status: np.ndarray,
    since: np.ndarray,
    run: int,
    by_age: np.ndarray,
    out: np.ndarray,
    gate_t: np.ndarray,
    u_tie: float,
) -> tuple[int, bool]:
    """Write the suspended lessons the re-test slot may draw, oldest first; return their count.

    :func:`cogstats.retrieval._base.retest_eligible`: every suspended lesson, or with a
    window (``retest_window`` > 0) those with ``run - since < retest_window``.  With the
    likely-innocent order only one is eligible
    (:func:`cogstats.retrieval._base.likely_innocent`): among those without a gate t yet
    (``gate_t[0]`` NaN) one drawn by ``u_tie``; else the one whose t is highest, ties
    oldest first, among those whose t is at least ``-retest_floor``; when there is none,
    the suspect whose own t (``gate_t[1]`` 1) is below it, highest first (the second
    value True: it is re-tested only into a place left empty); a t below it that is not
    the suspect's own (a group's, or a crater t) is never re-tested.
    """
    window = pi[WINDOW]
    likely = pi[RETEST_ORDER] == RETEST_LIKELY_INNOCENT
    floor = -pf[RETEST_FLOOR]
    m = 0
    best = -1
    best_t = -math.inf
    n_nan = 0
    for jj in range(status.shape[0]):
        j = by_age[jj]
        if status[j] == STATUS_SUSPENDED and (window <= 0 or run - since[j] < window):
            if likely:
                t = gate_t[0, j]
                if math.isnan(t):
                    out[n_nan] = j  # no t yet: these go first, one of them at random
                    n_nan += 1
                elif t >= floor and t > best_t:
                    best = j
                    best_t = t
            else:
                out[m] = j
                m += 1
    if likely and n_nan > 0:
        best = out[min(int(u_tie * n_nan), n_nan - 1)]
        best_t = math.inf
    guilty = False
    if likely and best < 0:
        # none likely innocent: the suspect with its own t, below the floor, highest t
        for jj in range(status.shape[0]):
            j = by_age[jj]
            if status[j] == STATUS_SUSPENDED and (window <= 0 or run - since[j] < window):
                t = gate_t[0, j]
                if gate_t[1, j] == 1.0 and not math.isnan(t) and t < floor and t > best_t:
                    best = j
                    best_t = t
        guilty = best >= 0
    if likely and best >= 0:
        out[0] = best
        m = 1
    return m, guilty


@njit
def retest_slot(
    pi: np.ndarray,
    pf: np.ndarray,
    status: np.ndarray,
    since: np.ndarray,
    run: int,
    by_age: np.ndarray,
    u0: float,
    scratch: np.ndarray,
    gate_t: np.ndarray,
    u_tie: float,
) -> tuple[int, int, bool]:
    """Draw the re-test slot: (the lesson re-tested or -1, the eligible count, deferred).

    :func:`cogstats.retrieval._base.retest_pick`: with ``m`` eligible suspects, one is
    re-tested with probability ``retest_prob`` (``u0 < retest_prob``), the
    ``int(u0 / retest_prob * m)``-th oldest.  ``deferred``: the likely-innocent order
    found only a likely-guilty suspect, re-tested only into a place left empty.
    """
    m, guilty = _eligible(pi, pf, status, since, run, by_age, scratch, gate_t, u_tie)
    if m == 0:
        return -1, 0, False
    prob = pf[RETEST_PROB]
    if u0 < prob:
        return scratch[min(int(u0 / prob * m), m - 1)], m, guilty
    return -1, m, guilty


@njit
def _verified_block(
    status: np.ndarray,
    trials: np.ndarray,
    age_rank: np.ndarray,
    newest_rank: np.ndarray,
    n_les: int,
    room: int,
    inj: np.ndarray,
    count: int,
    ibuf: np.ndarray,
    kbuf: np.ndarray,
    before: int,
) -> int:
    """Add up to ``room`` lessons of the verified block: verified newest first, then admitted.

    :func:`cogstats.retrieval._base.verified_block`: admitted lessons with at least as
    many runs without them as with them (of the ``before`` runs so far), in rotation,
    fewest trials first, then oldest.  Returns the new count.
    """
    ver = ibuf[1]
    vk = kbuf
    for group in range(2):
        nv = 0
        for j in range(n_les):
            if group == 0 and status[j] == STATUS_VERIFIED:
                ver[nv] = j
                vk[nv] = newest_rank[j]
                nv += 1
            elif group == 1 and status[j] == STATUS_ADMITTED and before >= 2 * trials[j]:
                # an admitted lesson keeps a baseline: in at most half the runs
                ver[nv] = j
                vk[nv] = trials[j] * (n_les + 1) + age_rank[j]
                nv += 1
        if nv == 0:
            continue
        if nv == 1:  # no sort (an argsort allocates: this runs once per simulated run)
            order = ibuf[2, :1]
            order[0] = 0
        else:
            order = np.argsort(vk[:nv], kind="mergesort")
        take = min(room, nv)
        for i in range(take):
            inj[count] = ver[order[i]]
            count += 1
        room -= take
        if room <= 0:
            break
    return count


@njit
def _fill_empty(
    status: np.ndarray,
    trials: np.ndarray,
    age_rank: np.ndarray,
    n_les: int,
    max_facts: int,
    inj: np.ndarray,
    count: int,
    kbuf: np.ndarray,
    bbuf: np.ndarray,
    before: int,
) -> int:
    """Give the places still empty to candidates not yet in, fewest trials, then oldest.

    :func:`cogstats.retrieval._base.fill_candidates` (benched candidates included), each
    only while it has at least as many runs without it as with it (of the ``before``
    runs so far): a baseline kept, so that a full prompt never makes a lesson one that
    is in every run.
    """
    taken = bbuf[0]
    taken[:] = False
    for i in range(count):
        taken[inj[i]] = True
    keys = np.empty(n_les, dtype=np.int64)
    rest = kbuf
    n = 0
    for j in range(n_les):
        if status[j] == STATUS_CANDIDATE and not taken[j] and before >= 2 * trials[j]:
            rest[n] = j
            keys[n] = trials[j] * (n_les + 1) + age_rank[j]
            n += 1
    if n == 0:
        return count
    order = np.argsort(keys[:n], kind="mergesort")
    for i in range(min(max_facts - count, n)):
        inj[count] = rest[order[i]]
        count += 1
    return count
