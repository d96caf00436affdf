"""The compiled simulation loop (numba).

One call simulates a chunk of replicates of one scenario.  Inside a replicate the loop is
sequential (retrieval depends on the ledger so far); per-lesson sufficient statistics
(count, sum, sum of squares, wins) are updated incrementally instead of rescanning the
ledger.  Every random number comes in pre-drawn (see :mod:`cogstats.sim.draws`), so the
plain-Python reference engine in :mod:`cogstats.sim.reference` consumes exactly the same
draws; the two must make the same decisions (tests/unit/test_sim_engines.py).

The kernel is split by concern, one module each:

- ``_kernel_score``: the score model (:func:`injected_total`, :func:`oracle_total`,
  :func:`link_score`), written once and called by both engines;
- ``_kernel_policies``: the retrieval policies (re-implementations of
  :mod:`cogstats.retrieval` in array form), with their own parameter blocks;
- ``_kernel_cycgraph``, ``_kernel_audit``, ``_kernel_evidence``, ``_kernel_lifecycle``,
  ``_kernel_margin_lift``: each gate's piece, with its own
  parameter block (``BLOCK``) and adapter (``PIECE``); the rule's arithmetic is the
  gate's own module's functions, compiled (``_kernel_common.compile_rule``), and the
  piece's dispatch code (``CODE``) is derived from the block's name
  (:func:`cogstats._codes.gate_code`);
- ``_kernel_common``: the parameter blocks (:class:`Block`, the run loop's
  :data:`COMMON`), the shared numerics compiled (:mod:`cogstats.numerics`: Welch's
  statistics, the Gauss-Jordan inverse) and the decision helpers;
- this module: the run loop, with one dispatch line per compiled gate.

Codes come from :mod:`cogstats._codes`.

Numba's on-disk cache of :func:`run_chunk` is keyed on this file alone, while the pieces
are inlined into it; so that an edited piece (``_kernel_*.py``, ``cogstats/numerics.py``,
``_tdist.py``) never runs stale, :func:`_drop_stale_cache` keeps a hash of every piece's
source beside the cache and deletes this module's cached loop when the hash changes
(numba then compiles it again).
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path

import numpy as np
from numba import njit

from cogstats._codes import GATE_NONE, STATUS_CANDIDATE, STATUS_FUTURE
from cogstats.sim import _kernel_audit as KAUD
from cogstats.sim import _kernel_cycgraph as KCYC
from cogstats.sim import _kernel_evidence as KEV
from cogstats.sim import _kernel_lifecycle as KLC
from cogstats.sim import _kernel_margin_lift as KML
from cogstats.sim._kernel_common import (
    COMMON,
    COMPILED_SOURCES,
    FP_BASE,
    FP_DAMP,
    FP_NOISE,
    FP_SAT,
    FP_WIN,
    IP_EVERY,
    IP_FROM,
    IP_GATE,
    IP_GRAM,
    IP_L,
    IP_LINK,
    IP_MAXF,
    IP_POLICY,
    IP_POOL,
    IP_RECEMPTY,
    IP_RECHECK,
    IP_RUNS,
    N_FP,
    N_IP,
    Block,
)
from cogstats.sim._kernel_policies import select
from cogstats.sim._kernel_score import injected_total, link_score, oracle_total

__all__ = [
    "COMMON",
    "FP_BASE",
    "FP_DAMP",
    "FP_NOISE",
    "FP_SAT",
    "FP_WIN",
    "IP_EVERY",
    "IP_FROM",
    "IP_GATE",
    "IP_GRAM",
    "IP_L",
    "IP_LINK",
    "IP_MAXF",
    "IP_POLICY",
    "IP_POOL",
    "IP_RECEMPTY",
    "IP_RECHECK",
    "IP_RUNS",
    "N_FP",
    "N_IP",
    "Block",
    "injected_total",
    "link_score",
    "oracle_total",
    "run_chunk",
]


def _drop_stale_cache() -> None:
    """Delete the cached compiled kernel when a piece inlined into it has changed.

    Numba checks only the timestamp of the file that defines a cached function, so the
    run loop (this file) and every piece's cached functions (``_kernel_lifecycle.judge``
    ...: they inline the gates' rules) would run old machine code after a rule changed
    in its own module.  The hash of every piece's source (the
    ``_kernel*.py`` pieces, ``_tdist.py``, and the modules whose plain functions the pieces
    compile: ``cogstats/numerics.py``, the gates' rules,
    :data:`~cogstats.sim._kernel_common.COMPILED_SOURCES`) is kept in
    ``__pycache__/_kernel.pieces.sha256``.  Without a writable ``__pycache__`` (or with
    ``NUMBA_CACHE_DIR`` elsewhere) nothing is done.
    """
    here = Path(__file__).resolve()
    package = here.parent.parent
    pieces = [
        *sorted(here.parent.glob("_kernel*.py")),
        here.parent / "_tdist.py",
        *(package / rel for rel in COMPILED_SOURCES),  # the gates' rules compiled
    ]
    digest = hashlib.sha256()
    for piece in pieces:
        if piece.exists():
            digest.update(piece.name.encode() + b"\0" + piece.read_bytes())
    cache = here.parent / "__pycache__"
    stamp = cache / "_kernel.pieces.sha256"
    try:
        if stamp.exists() and stamp.read_text() == digest.hexdigest():
            return
        if cache.is_dir():
            for old in cache.glob("_kernel*.nb[ic]"):  # the loop and every piece
                old.unlink(missing_ok=True)
            stamp.write_text(digest.hexdigest())
    except OSError:  # a read-only install: numba's own cache rules apply
        return


_drop_stale_cache()


@njit(cache=True, nogil=True)  # releases the GIL: cells run in threads side by side
def run_chunk(
    ip: np.ndarray,
    fp: np.ndarray,
    pi: np.ndarray,
    pf: np.ndarray,
    gi: np.ndarray,
    gf: np.ndarray,
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
    out_events: np.ndarray,
    out_n_events: np.ndarray,
) -> None:
    """Simulate ``noise.shape[0]`` replicates; write every output array in place.

    ``ip``/``fp`` are the run loop's block (:data:`COMMON`), ``pi``/``pf`` the retrieval
    policy's own block (``_kernel_policies``), ``gi``/``gf`` the gate's own block (its
    kernel piece's ``BLOCK``).  ``cov`` holds each run's covariates for the
    lifecycle gate (replicate x run x covariates) and ``levels`` its one-sided levels by
    trial count.  A gate that records its status changes (the lifecycle gate) writes them
    to ``out_events`` (rows: chunk replicate, run, lesson, from, to, outcome code, why
    code) and counts them in ``out_n_events[0]`` (beyond the buffer's rows too: the caller
    runs the chunk again with room when the count exceeds them).  ``since`` (the first run
    of each lesson's status) is kept for the retrieval's re-test window.
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
    recheck = ip[IP_RECHECK] == 1
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
    since = np.zeros(n_les, dtype=np.int64)
    gate_t = np.full((2, n_les), math.nan)  # each lesson's last gate t; 1 where its own
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
    ncov = cov.shape[2]
    nfix = 1 + ncov
    ridge = ip[IP_GRAM] == 1
    cov_lo = np.empty(max(ncov, 1))
    cov_hi = np.empty(max(ncov, 1))
    out_n_events[0] = 0
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
        since[:] = 0
        gate_t[:, :] = math.nan
        cov_lo[:] = math.inf
        cov_hi[:] = -math.inf
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
                    since[j] = run
            count, n_logged = select(
                ip,
                pi,
                pf,
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
                since,
                run,
                gate_t,
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
                        cov_lo[a] = min(cov_lo[a], frow[1 + a])
                        cov_hi[a] = max(cov_hi[a], frow[1 + a])
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
            # gate: one dispatch line per compiled gate (its code: cogstats._codes.gate_code)
            if gate == GATE_NONE or run < gate_from or (run - gate_from) % every != 0:
                continue
            if gate == KLC.CODE:
                KLC.lifecycle_gate(
                    gi,
                    gf,
                    recheck,
                    nfix,
                    cov_lo,
                    cov_hi,
                    levels,
                    status,
                    since,
                    n_with,
                    ss_with,
                    first_trial,
                    gram,
                    zty,
                    yty,
                    tot_n,
                    by_age,
                    run,
                    rep,
                    promote_run,
                    evict_run,
                    evict_reason,
                    retire_run,
                    out_events,
                    out_n_events,
                    gibuf,
                    gate_t,
                )
            elif gate == KEV.CODE:
                KEV.evidence_gate(
                    gi,
                    gf,
                    recheck,
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
            elif gate == KAUD.CODE:
                KAUD.audit_gate(gi, gf, status, n_with, wins, run, retire_run)
            elif gate == KCYC.CODE:
                KCYC.cycgraph_gate(
                    gi,
                    gf,
                    recheck,
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
                    gfbuf,
                )
            elif gate == KML.CODE:
                KML.margin_lift_gate(
                    gi,
                    gf,
                    recheck,
                    status,
                    n_with,
                    s_with,
                    tot_n,
                    tot_s,
                    run,
                    promote_run,
                    evict_run,
                    evict_reason,
                )
            else:
                raise ValueError("the kernel's run loop has no dispatch line for this gate code")
        for j in range(n_les):
            out_trials[rep, j] = n_with[j]
