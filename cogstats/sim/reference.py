"""The naive reference engine: the same loop in plain Python, as cycgraph runs it.

Every run builds the lesson table, asks the library's retrieval policy for the prompt,
records the outcome in a :class:`~cogstats.ledger.Ledger`, and calls the library's gate,
which rescans the whole ledger.

The lesson lifecycle is the lesson store's own wiring
(:class:`cogstats.store.lifecycle.Lifecycle`, the one implementation the store and
``tune``'s replay share): every outcome of the gate's report is applied through
``OUTCOME_STATUS`` (promote -> verified, admit -> admitted, suspend -> suspended,
release -> candidate, evict -> evicted, retire -> retired; hold and an outcome that
leads to the status a lesson has change nothing), and each change is written as a
status event (chunk replicate, run, lesson, from, to, reason, why) in
``RawChunk.events``.  Candidates, admitted and suspended lessons are judged at every
look (verified ones too when re-checking); a gate whose ``evaluate`` accepts
``statuses`` gets each judged lesson's ``LessonState(status, since)``.  Retrieval sees
the lifecycle's lesson table (``status_since``, ``gate_t``, ``gate_t_own``) and the
context of the coming run (``{"family": ..., "run": ...}``).  The simulated ledger names
the true difficulty ``true_difficulty`` (a covariate no gate selects by default).

It consumes the same pre-drawn numbers as the compiled engine (:mod:`cogstats.sim._loop`)
and must reach the same decisions; it exists for that cross-check and for benchmark C1,
not for production runs (it is about three orders of magnitude slower).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from cogstats import _codes as C
from cogstats.ledger import Ledger
from cogstats.sim._kernel_score import (
    injected_total,
    link_score,
    oracle_prompt_total,
    oracle_total,
    prompt_total,
)
from cogstats.sim.draws import LessonTable, Prepared
from cogstats.sim.raw import RawChunk, empty_raw
from cogstats.sim.spec import Scenario
from cogstats.store.lifecycle import Cadence, Change, Lifecycle, takes_rng

__all__ = ["run_reference"]

#: simulator status codes by name (the events' from/to)
_CODE = {name: i for i, name in enumerate(C.STATUS_NAMES)}


def _log_width(raw: RawChunk, width: int) -> None:
    """Widen the propensity log when a run logs more lessons than it holds (re-tests)."""
    have = raw.pid.shape[2]
    if width <= have:
        return
    n, runs = raw.pid.shape[:2]
    raw.pid = np.concatenate([raw.pid, np.full((n, runs, width - have), -1, np.int64)], axis=2)
    raw.pval = np.concatenate([raw.pval, np.zeros((n, runs, width - have))], axis=2)


def run_reference(
    s: Scenario, lessons: LessonTable, prep: Prepared, gate_object: Any = None
) -> RawChunk:
    """Simulate the chunk's replicates with the library objects (slow, obviously correct).

    The retrieval policy and the gate come from their registries (the spec's names, or
    import paths); the policy is called through its simulation protocol
    (``select_with_uniforms``, see :mod:`cogstats.retrieval`) and the gate through the
    gate protocol (``evaluate(ledger, candidates, rng=...)``).  ``gate_object`` replaces
    the scenario's gate: any object with that ``evaluate`` whose report's ``to_frame()``
    holds ``fact_id``, ``decision`` (promote, evict, hold, retire) and ``reason``.
    """
    n, runs = prep.noise.shape
    raw = empty_raw(s, lessons, n)
    policy = s.retrieval.build()
    gate = s.gate.build() if gate_object is None else gate_object
    gate_rng = gate is not None and takes_rng(gate)
    cadence = Cadence(s.gate.every, s.gate.from_run, bool(s.gate.recheck_verified))
    index = {f: j for j, f in enumerate(lessons.ids)}
    fam_names = [f.name for f in s.difficulty.families]
    base, sd = s.score.base, s.score.noise_sd
    sat = s.score.saturation or 0.0
    damp = s.score.poison_damping
    logistic = s.score.link == "logistic"
    logit_base = math.log(base / (1 - base)) if logistic else 0.0
    events: list[tuple[int, int, int, int, int, str | None, str | None]] = []
    for rep in range(n):
        ledger = Ledger()
        # the lifecycle wiring (statuses, since, gate_t, the judged set, the table)
        book = Lifecycle.for_parts(gate, policy, cadence)
        e = prep.effects[rep]
        for r in range(runs):
            run = r + 1
            for new in np.flatnonzero(lessons.arrival == run):
                j = int(new)
                fam = None if lessons.applies[j] < 0 else fam_names[lessons.applies[j]]
                book.add(lessons.ids[j], run, created_at=int(lessons.arrival[j]), family=fam)
            table = book.table()
            u = prep.retrieval[rep, r]
            if table.height == 0:
                fact_ids: tuple[str, ...] = ()
                props = None
            else:
                fam = fam_names[prep.family[rep, r]] if fam_names else None
                ctx = {"family": fam, "run": run}
                sel = policy.select_with_uniforms(table, ledger, u, context=ctx)
                fact_ids, props = sel.fact_ids, sel.propensities
            idx = sorted(index[f] for f in fact_ids)
            inj = np.asarray(idx, dtype=np.int64)
            tot = _prompt_value(e, lessons, prep, rep, r, inj, damp, sat)
            z = sd * float(prep.noise[rep, r])
            d = float(prep.difficulty[rep, r])
            y = link_score(base, logit_base, logistic, d, tot, z)
            raw.score[rep, r] = y
            raw.ninj[rep, r] = len(idx)
            raw.inj[rep, r, : len(idx)] = idx
            if props is not None:
                logged = sorted((index[f], p) for f, p in props.items())
                _log_width(raw, len(logged))
                raw.n_logged[rep, r] = len(logged)
                for i, (j, p) in enumerate(logged):
                    raw.pid[rep, r, i] = j
                    raw.pval[rep, r, i] = p
            if idx or s.record_empty_runs:
                raw.recorded[rep, r] = True
                covariates: dict[str, Any] = {"run_index": run, "true_difficulty": d}
                if prep.proxy is not None:
                    covariates["difficulty_proxy"] = float(prep.proxy[rep, r])
                if fam_names:
                    covariates["family"] = fam_names[prep.family[rep, r]]
                if props is not None:
                    covariates["eligible_ids"] = [lessons.ids[j] for j, _ in logged]
                    covariates["propensities"] = [p for _, p in logged]
                ledger.record(str(run), y, [lessons.ids[j] for j in idx], **covariates)
                for jj in idx:
                    if raw.first_trial[rep, jj] == 0:
                        raw.first_trial[rep, jj] = run
            if gate is None or not cadence.due(run):
                continue

            noise = prep.noise[rep] if gate_rng else None
            judge = _judge(gate, ledger, noise, run)
            for change in book.look(run, judge):
                _record(change, rep, index, raw, events)
        trials = ledger.fact_stats()
        for f, t in zip(trials["fact_id"], trials["trials"], strict=True):
            raw.trials[rep, index[f]] = t
    raw.events = events
    _fill_oracle(s, lessons, prep, raw)
    return raw


def _judge(gate: Any, ledger: Ledger, noise: np.ndarray | None, run: int) -> Any:
    """Return the gate's look on the ledger so far.

    Gates that draw (``noise`` not None) get a fixed stream per replicate and run, seeded
    from the replicate's noise.
    """

    def judge(ids: list[str], extra: dict[str, Any]) -> Any:
        if noise is not None:
            seed = int.from_bytes(noise.tobytes()[:8], "little")
            extra["rng"] = np.random.default_rng((seed, run))
        return gate.evaluate(ledger, ids, **extra)

    return judge


def _record(
    change: Change,
    rep: int,
    index: dict[str, int],
    raw: RawChunk,
    events: list[tuple[int, int, int, int, int, str | None, str | None]],
) -> None:
    """Write one status change into the chunk's arrays and its event list."""
    j = index[change.fact_id]
    run, d = change.run, change.decision
    if d == C.EVICT:
        raw.evict_run[rep, j] = run
        raw.evict_reason[rep, j] = C.evict_reason_code(change.reason)
    elif d == C.RETIRE:
        raw.retire_run[rep, j] = run
    elif change.new == C.VERIFIED and raw.promote_run[rep, j] == 0:
        raw.promote_run[rep, j] = run
    events.append((rep, run, j, _CODE[change.old], _CODE[change.new], change.reason, change.why))


def _prompt_value(
    effects: np.ndarray,
    lessons: LessonTable,
    prep: Prepared,
    rep: int,
    r: int,
    inj: np.ndarray,
    damping: float,
    saturation: float,
) -> float:
    """Return the total effect of run ``r``'s prompt ``inj`` (the score model's).

    The replicate's ``effects`` add up in an additive scenario (:func:`injected_total`); a
    non-additive
    store's prompt is valued by :func:`prompt_total` with the run's effects and the
    replicate's groups.
    """
    wt, world = lessons.world, prep.world
    if wt is None or world is None:
        return float(injected_total(effects, lessons.kind, inj, inj.size, damping, saturation))
    return float(
        prompt_total(
            world.run_effects[rep, r],
            lessons.kind,
            world.group[rep],
            inj,
            inj.size,
            damping,
            saturation,
            wt.inter_ptr,
            wt.inter_les,
            wt.inter_eff,
            np.zeros(len(lessons.ids), dtype=np.bool_),
        )
    )


def _oracle_value(
    s: Scenario, lessons: LessonTable, prep: Prepared, rep: int, r: int, scratch: np.ndarray
) -> float:
    """Return the total effect of the oracle's prompt in run ``r`` (the score model's).

    The best ``max_facts`` helpful lessons that have arrived (:func:`oracle_total`); in a
    non-additive store the best prompt under its true value (:func:`oracle_prompt_total`).
    """
    sat = s.score.saturation or 0.0
    max_facts = int(s.retrieval.max_facts)
    wt, world = lessons.world, prep.world
    if wt is None or world is None:
        e = np.ascontiguousarray(prep.effects[rep])
        return float(oracle_total(e, lessons.arrival, r + 1, max_facts, sat, scratch))
    return float(
        oracle_prompt_total(
            world.run_effects[rep, r],
            lessons.kind,
            world.group[rep],
            lessons.arrival,
            r + 1,
            max_facts,
            s.score.poison_damping,
            sat,
            wt.inter_ptr,
            wt.inter_les,
            wt.inter_eff,
            wt.in_inter,
        )
    )


def _fill_oracle(s: Scenario, lessons: LessonTable, prep: Prepared, raw: RawChunk) -> None:
    """Oracle score: the best prompt of arrived lessons (see :func:`_oracle_value`), same noise."""
    n, runs = prep.noise.shape
    logistic = s.score.link == "logistic"
    base = s.score.base
    logit_base = math.log(base / (1 - base)) if logistic else 0.0
    scratch = np.empty(len(lessons.ids))
    for rep in range(n):
        for r in range(runs):
            g = _oracle_value(s, lessons, prep, rep, r, scratch)
            z = s.score.noise_sd * float(prep.noise[rep, r])
            d = float(prep.difficulty[rep, r])
            raw.oracle[rep, r] = link_score(base, logit_base, logistic, d, g, z)
