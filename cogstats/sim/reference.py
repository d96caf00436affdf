"""The naive reference engine: the same loop in plain Python, as cycgraph runs it.

Every run builds the lesson table, asks the library's retrieval policy for the prompt,
records the outcome in a :class:`~cogstats.ledger.Ledger`, and calls the library's gate,
which rescans the whole ledger.  It consumes the same pre-drawn numbers as the compiled
engine (:mod:`cogstats.sim._kernel`) and must reach the same decisions; it exists for that
cross-check and for benchmark C1, not for production runs (it is about three orders of
magnitude slower).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from cogstats.gates import AuditGate, CycgraphGate, EvidenceGate, audit_entries_from_ledger
from cogstats.ledger import Ledger
from cogstats.retrieval import (
    UCB1,
    Designed,
    FewestTrialsFirst,
    InProgressFirst,
    NewestFirst,
    Randomized,
)
from cogstats.sim._kernel import (
    KIND_GENUINE,
    KIND_POISON,
    REASON_HARMFUL,
    REASON_NO_LIFT,
)
from cogstats.sim.draws import LessonTable, Prepared
from cogstats.sim.raw import RawChunk, empty_raw
from cogstats.sim.spec import Scenario

__all__ = ["run_reference"]


def _policy(s: Scenario) -> Any:
    r = s.retrieval
    if r.policy == "in_progress_first":
        return InProgressFirst(r.max_facts, r.candidate_slots, r.rest_after_trials)
    if r.policy == "newest_first":
        return NewestFirst(r.max_facts, r.candidate_slots, r.rest_after_trials)
    if r.policy == "fewest_trials_first":
        return FewestTrialsFirst(r.max_facts, r.candidate_slots, r.rest_after_trials)
    if r.policy == "randomized":
        return Randomized(r.max_facts, r.candidate_slots, r.pool, r.inclusion, r.inclusion_prob)
    if r.policy == "designed":
        return Designed(r.max_facts, r.candidate_slots, r.pool)
    return UCB1(
        r.max_facts, r.exploration, r.win_threshold, r.cross_similarity, r.epsilon, r.min_facts
    )


def run_reference(
    s: Scenario, lessons: LessonTable, prep: Prepared, gate_object: Any = None
) -> RawChunk:
    """Simulate the chunk's replicates with the library objects (slow, obviously correct).

    ``gate_object`` replaces the scenario's gate: any object whose
    ``evaluate(ledger, candidates)`` returns a report with ``to_frame()`` holding
    ``fact_id``, ``decision`` (promote, evict, hold, retire) and ``reason``.
    """
    n, runs = prep.noise.shape
    raw = empty_raw(s, lessons, n)
    policy = _policy(s)
    gate = s.gate.build() if gate_object is None else gate_object
    index = {f: j for j, f in enumerate(lessons.ids)}
    fam_names = [f.name for f in s.difficulty.families]
    base, sd = s.score.base, s.score.noise_sd
    sat = s.score.saturation or 0.0
    damp = s.score.poison_damping
    logistic = s.score.link == "logistic"
    logit_base = math.log(base / (1 - base)) if logistic else 0.0
    order = np.argsort(lessons.age_rank)
    for rep in range(n):
        ledger = Ledger()
        status: dict[str, str] = {}
        e = prep.effects[rep]
        for r in range(runs):
            run = r + 1
            for new in np.flatnonzero(lessons.arrival == run):
                status[lessons.ids[new]] = "candidate"
            table = [
                {
                    "id": lessons.ids[j],
                    "status": status[lessons.ids[j]],
                    "created_at": int(lessons.arrival[j]),
                    "applies_to": None if lessons.applies[j] < 0 else fam_names[lessons.applies[j]],
                }
                for j in order
                if status.get(lessons.ids[j]) in ("candidate", "verified")
            ]
            u = prep.retrieval[rep, r]
            if not table:
                fact_ids: tuple[str, ...] = ()
                props = None
            elif isinstance(policy, UCB1):
                fam = fam_names[prep.family[rep, r]] if fam_names else None
                sel = policy.select_with_uniforms(table, ledger, u, context={"family": fam})
                fact_ids, props = sel.fact_ids, sel.propensities
            elif isinstance(policy, Randomized | Designed):
                sel = policy.select_with_uniforms(table, ledger, u[2:])
                fact_ids, props = sel.fact_ids, sel.propensities
            else:
                sel = policy.select(table, ledger)
                fact_ids, props = sel.fact_ids, sel.propensities
            idx = sorted(index[f] for f in fact_ids)
            has_genuine = any(lessons.kind[j] == KIND_GENUINE for j in idx)
            pos = 0.0
            tot = 0.0
            for j in idx:
                x = float(e[j])
                if lessons.kind[j] == KIND_POISON and damp > 0 and has_genuine:
                    x *= 1.0 - damp
                if sat > 0 and x > 0:
                    pos += x
                else:
                    tot += x
            if sat > 0:
                tot += sat * math.tanh(pos / sat)
            z = sd * float(prep.noise[rep, r])
            d = float(prep.difficulty[rep, r])
            if logistic:
                y = 1.0 / (1.0 + math.exp(-(logit_base + d + tot + z)))
            else:
                y = min(1.0, max(0.0, base + d + tot + z))
            raw.score[rep, r] = y
            raw.ninj[rep, r] = len(idx)
            raw.inj[rep, r, : len(idx)] = idx
            if props is not None:
                logged = sorted((index[f], p) for f, p in props.items())
                raw.n_logged[rep, r] = len(logged)
                for i, (j, p) in enumerate(logged):
                    raw.pid[rep, r, i] = j
                    raw.pval[rep, r, i] = p
            if idx or s.record_empty_runs:
                raw.recorded[rep, r] = True
                covariates: dict[str, Any] = {"run_index": run, "difficulty": d}
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
            if gate is None or run < s.gate.from_run or (run - s.gate.from_run) % s.gate.every:
                continue
            # the audit pass looks at every live lesson; cycgraph's gate at candidates
            # (and verified lessons when re-checking)
            recheck = s.gate.recheck_verified or isinstance(gate, AuditGate)
            judged = [
                lessons.ids[j]
                for j in order
                if status.get(lessons.ids[j]) == "candidate"
                or (recheck and status.get(lessons.ids[j]) == "verified")
            ]
            if not judged:
                continue
            if isinstance(gate, AuditGate):
                entries = audit_entries_from_ledger(
                    ledger, win_threshold=s.retrieval.win_threshold, fact_ids=judged
                )
                report = gate.evaluate(entries)
            elif isinstance(gate, CycgraphGate):
                report = gate.evaluate(ledger, judged)
            elif isinstance(gate, EvidenceGate):
                # a fixed stream per replicate and run, for methods that draw
                seed = int.from_bytes(prep.noise[rep].tobytes()[:8], "little")
                report = gate.evaluate(ledger, judged, rng=np.random.default_rng((seed, run)))
            else:  # a user's gate object
                report = gate.evaluate(ledger, judged)
            for row in report.to_frame().iter_rows(named=True):
                f, d = row["fact_id"], row["decision"]
                j = index[f]
                if d == "promote" and status[f] == "candidate":
                    status[f] = "verified"
                    raw.promote_run[rep, j] = run
                elif d == "evict":
                    status[f] = "evicted"
                    raw.evict_run[rep, j] = run
                    raw.evict_reason[rep, j] = (
                        REASON_HARMFUL if row["reason"] == "eval-gate:harmful" else REASON_NO_LIFT
                    )
                elif d == "retire":
                    status[f] = "retired"
                    raw.retire_run[rep, j] = run
        trials = ledger.fact_stats()
        for f, t in zip(trials["fact_id"], trials["trials"], strict=True):
            raw.trials[rep, index[f]] = t
    _fill_oracle(s, lessons, prep, raw)
    return raw


def _fill_oracle(s: Scenario, lessons: LessonTable, prep: Prepared, raw: RawChunk) -> None:
    """Oracle score: the best ``max_facts`` helpful lessons that have arrived, same noise."""
    n, runs = prep.noise.shape
    sat = s.score.saturation or 0.0
    logistic = s.score.link == "logistic"
    base = s.score.base
    logit_base = math.log(base / (1 - base)) if logistic else 0.0
    for rep in range(n):
        e = prep.effects[rep]
        for r in range(runs):
            helpful = np.sort(e[(lessons.arrival <= r + 1) & (e > 0)])
            g = 0.0
            for x in helpful[::-1][: s.retrieval.max_facts]:
                g += float(x)
            if sat > 0:
                g = sat * math.tanh(g / sat)
            z = s.score.noise_sd * float(prep.noise[rep, r])
            d = float(prep.difficulty[rep, r])
            if logistic:
                raw.oracle[rep, r] = 1.0 / (1.0 + math.exp(-(logit_base + d + g + z)))
            else:
                raw.oracle[rep, r] = min(1.0, max(0.0, base + d + g + z))
