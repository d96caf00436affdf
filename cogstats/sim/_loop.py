"""The compiled run loop: one chunk of replicates of one scenario, with one gate's step.

Inside a replicate the loop is sequential (retrieval depends on the ledger so far): the
lessons that arrive become candidates, the retrieval policy fills the prompt
(:func:`cogstats.retrieval.kernel.select`), the score model scores the run
(:mod:`cogstats.sim._kernel_score`), the running sums are updated instead of rescanning a
ledger, and at the gate's cadence the gate's compiled step runs, ``gate_step(st, o,
run)``, on the replicate's :class:`~cogstats.kernel.State` and the gate's options record
``o``.  Every random number comes in pre-drawn (:mod:`cogstats.sim.draws`), so the
plain-Python reference engine (:mod:`cogstats.sim.reference`) consumes exactly the same
draws and must make the same decisions (tests/unit/test_sim_engines.py).

This module is the loop's source, written once: :mod:`cogstats.sim._loops` writes one
copy of it per gate, the line marked ``GATE-STEP`` importing that gate's step (its piece's
``step``, wherever the gate was registered from), and compiles it with numba's disk cache
(the run loop is generated per gate because numba cannot cache a function that takes
another compiled function as an argument).  Imported as it is, it is the loop without a
gate.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import njit

from cogstats._codes import STATUS_CANDIDATE, STATUS_FUTURE
from cogstats.kernel import (
    FP_BASE,
    FP_DAMP,
    FP_NOISE,
    FP_SAT,
    FP_WIN,
    IP_EVERY,
    IP_FROM,
    IP_GRAM,
    IP_L,
    IP_LINK,
    IP_MAXF,
    IP_RECEMPTY,
    IP_RECHECK,
    IP_RUNS,
    IP_WORLD,
)
from cogstats.kernel import no_gate as gate_step  # GATE-STEP
from cogstats.kernel.state import Decided, Lessons, Prompt, Scratch, State
from cogstats.retrieval.kernel import select
from cogstats.sim._kernel_score import (
    injected_total,
    link_score,
    oracle_prompt_total,
    oracle_total,
    prompt_total,
)

__all__ = ["run_chunk"]


@njit(cache=True, nogil=True)  # releases the GIL: cells run in threads side by side
def run_chunk(inp: Any, out: Any, o: Any) -> None:
    """Simulate ``inp.noise.shape[0]`` replicates; write every output array in place.

    ``inp`` is the chunk's :data:`cogstats.sim.engine.Inputs` (the run loop's block,
    the policy's, the gate's table, the scenario and its draws), ``out`` its
    :data:`cogstats.sim.engine.Outputs`, ``o`` the gate's options record.  A gate that
    records its status changes (the lifecycle gate) writes them to ``out.events`` and
    counts them in ``out.n_events[0]`` (beyond the buffer's rows too: the caller runs the
    chunk again with room when the count exceeds them).
    """
    n_les = inp.ip[IP_L]
    ncov = inp.cov.shape[2]
    pg = 1 + ncov + n_les if inp.ip[IP_GRAM] == 1 else 1
    les = Lessons(
        np.zeros(n_les, dtype=np.int64),
        np.zeros(n_les, dtype=np.int64),
        np.full((2, n_les), math.nan),
        np.argsort(inp.age_rank),
        np.zeros(n_les, dtype=np.int64),
        np.zeros(n_les, dtype=np.int64),
        np.zeros(n_les, dtype=np.bool_),
        inp.age_rank,
        inp.newest_rank,
        inp.applies,
    )
    scr = Scratch(
        np.empty((3, n_les), dtype=np.int64),
        np.empty(n_les, dtype=np.int64),
        np.empty(n_les),
        np.empty((2, n_les), dtype=np.bool_),
    )
    width = out.pid.shape[2]
    prompt = Prompt(
        np.empty(inp.ip[IP_MAXF], dtype=np.int64), np.empty(width, dtype=np.int64), np.empty(width)
    )
    sums = (np.zeros(n_les), np.zeros(n_les), np.zeros(3))  # s_with, ss_with, tot
    ridge = (np.zeros((pg, pg)), np.zeros(pg), np.empty((2, max(ncov, 1))))
    scratch = (np.empty((3, n_les), dtype=np.int64), np.empty((2, n_les)))
    out.n_events[0] = 0
    _simulate(inp, out, o, (les, scr, prompt), (sums, ridge, scratch, np.zeros(n_les, np.bool_)))


@njit
def _simulate(inp: Any, out: Any, o: Any, records: Any, buffers: Any) -> None:
    """Run the chunk's replicates: arrivals, retrieval, score, the running sums, the gate.

    Every array is read off its record once, here (a field read of a record or a row view
    of an array in the loop costs a reference-count pair, every run; most of the loop's
    time is those).
    """
    les, scr, prompt = records
    (s_with, ss_with, tot), ridge, scratch, inprompt = buffers
    gram, zty, cov_range = ridge
    ip, fp, pi, pf, prop_table = inp.ip, inp.fp, inp.pi, inp.pf, inp.prop_table
    logistic = ip[IP_LINK] == 1
    base, noise_sd, damp, sat, win = fp[FP_BASE], fp[FP_NOISE], fp[FP_DAMP], fp[FP_SAT], fp[FP_WIN]
    max_facts, record_empty, with_gram = ip[IP_MAXF], ip[IP_RECEMPTY] == 1, ip[IP_GRAM] == 1
    every, first, recheck = ip[IP_EVERY], ip[IP_FROM], ip[IP_RECHECK] == 1
    logit_base = math.log(base / (1.0 - base)) if logistic else 0.0
    status, since, gate_t, by_age = les.status, les.since, les.gate_t, les.by_age
    n_with, wins, last_in = les.n_with, les.wins, les.last_in
    inj, pid, pval = prompt.inj, prompt.pid, prompt.pval
    arrival, kind, eff, table = inp.arrival, inp.kind, inp.eff, inp.table
    noise, diff, fam, ru, cov = inp.noise, inp.diff, inp.fam, inp.ru, inp.cov
    score, oracle, ninj, o_inj, o_logged = out.score, out.oracle, out.ninj, out.inj, out.n_logged
    o_pid, o_pval, o_recorded, trials = out.pid, out.pval, out.recorded, out.trials
    first_trials, events, n_events = out.first_trial, out.events, out.n_events
    promotes, evicts, reasons, retires = (
        out.promote_run,
        out.evict_run,
        out.evict_reason,
        out.retire_run,
    )
    world = ip[IP_WORLD] == 1  # a non-additive store: each run's effects and the groups
    w = inp.world
    run_eff, groups, iptr, iles, ieff, in_inter = (
        w.run_eff, w.group, w.inter_ptr, w.inter_les, w.inter_eff, w.in_inter
    )  # fmt: skip
    n_les = status.shape[0]
    helpful = np.empty(n_les)
    for rep in range(noise.shape[0]):
        # a new replicate: no lesson arrived, no run recorded, no outcome
        status[:] = STATUS_FUTURE
        since[:] = 0
        gate_t[:, :] = math.nan
        n_with[:] = 0
        wins[:] = 0
        last_in[:] = False
        s_with[:] = 0.0
        ss_with[:] = 0.0
        tot[:] = 0.0
        gram[:, :] = 0.0
        zty[:] = 0.0
        cov_range[0] = math.inf
        cov_range[1] = -math.inf
        first_trial = first_trials[rep]
        dec = Decided(status, promotes[rep], evicts[rep], reasons[rep])
        for a in (first_trial, dec.promote_run, dec.evict_run, dec.evict_reason, retires[rep]):
            a[:] = 0
        st = State(
            by_age, status, since, gate_t, recheck, n_with, s_with, ss_with, wins, first_trial,
            tot, gram, zty, 1 + cov.shape[2], cov_range, table, rep, retires[rep], dec, events,
            n_events, scratch[0], scratch[1],
        )  # fmt: skip
        e = eff[rep]
        for r in range(ip[IP_RUNS]):
            run = r + 1
            for j in range(n_les):
                if arrival[j] == run:
                    status[j] = STATUS_CANDIDATE
                    since[j] = run
            count, n_logged = select(
                ip, pi, pf, les, scr, prompt, prop_table, int(tot[0]), fam[rep, r], ru[rep, r], run
            )
            # score: effects summed in lesson order, as the reference engine does
            if count > 1:
                inj[:count] = np.sort(inj[:count])
            if world:  # the run's effects, a group counted once, the interactions
                er, gr = run_eff[rep, r], groups[rep]
                effect = prompt_total(
                    er, kind, gr, inj, count, damp, sat, iptr, iles, ieff, inprompt
                )
                best = oracle_prompt_total(
                    er, kind, gr, arrival, run, max_facts, damp, sat, iptr, iles, ieff, in_inter
                )
            else:
                effect = injected_total(e, kind, inj, count, damp, sat)
                # oracle: only helpful lessons that have arrived, the best max_facts of them
                best = oracle_total(e, arrival, run, max_facts, sat, helpful)
            z = noise_sd * noise[rep, r]
            d = diff[rep, r]
            y = link_score(base, logit_base, logistic, d, effect, z)
            score[rep, r] = y
            oracle[rep, r] = link_score(base, logit_base, logistic, d, best, z)
            ninj[rep, r] = count
            for i in range(count):
                o_inj[rep, r, i] = inj[i]
            o_logged[rep, r] = n_logged
            if n_logged > 0:  # logged propensities in lesson order, as the reference
                lorder = np.argsort(pid[:n_logged])
                for i in range(n_logged):
                    o_pid[rep, r, i] = pid[lorder[i]]
                    o_pval[rep, r, i] = pval[lorder[i]]
            recorded = count > 0 or record_empty
            o_recorded[rep, r] = recorded
            if recorded:  # the running sums, per lesson and in total
                tot[0] += 1
                tot[1] += y
                tot[2] += y * y
                last_in[:] = False
                for i in range(count):
                    j = inj[i]
                    n_with[j] += 1
                    s_with[j] += y
                    ss_with[j] += y * y
                    last_in[j] = True
                    if y >= win:
                        wins[j] += 1
                    if first_trial[j] == 0:
                        first_trial[j] = run
                if with_gram:
                    _gram(ridge, inj, count, y, cov[rep, r])
            # the gate, at its cadence: one line, the gate's compiled step
            if run >= first and (run - first) % every == 0:
                gate_step(st, o, run)
        for j in range(n_les):
            trials[rep, j] = n_with[j]


@njit(inline="always")
def _gram(ridge: Any, inj: np.ndarray, count: int, y: float, cov: np.ndarray) -> None:
    """Add a recorded run to the Gram matrix of [1, covariates, lessons], in run order.

    ``ridge`` is (the Gram matrix, ``Z'y``, each covariate's low and high so far).
    """
    gram, zty, cov_range = ridge
    nfix = cov.shape[0] + 1
    frow = np.empty(nfix)
    frow[0] = 1.0
    for a in range(nfix - 1):
        frow[1 + a] = cov[a]
        cov_range[0, a] = min(cov_range[0, a], frow[1 + a])
        cov_range[1, a] = max(cov_range[1, a], frow[1 + a])
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
