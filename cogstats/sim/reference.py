"""The naive reference engine: the same loop in plain Python, as cycgraph runs it.

Every run builds the lesson table, asks the library's retrieval policy for the prompt,
records the outcome in a :class:`~cogstats.ledger.Ledger`, and calls the library's gate,
which rescans the whole ledger.  It consumes the same pre-drawn numbers as the compiled
engine (:mod:`cogstats.sim._kernel`) and must reach the same decisions; it exists for that
cross-check and for benchmark C1, not for production runs (it is about three orders of
magnitude slower).
"""

from __future__ import annotations

import inspect
import math
from typing import Any

import numpy as np

from cogstats import _codes as C
from cogstats.ledger import Ledger
from cogstats.lessons import lesson_table
from cogstats.sim._kernel import injected_total, link_score, oracle_total
from cogstats.sim.draws import LessonTable, Prepared
from cogstats.sim.raw import RawChunk, empty_raw
from cogstats.sim.spec import Scenario

__all__ = ["run_reference"]


def _takes_rng(gate: Any) -> bool:
    """Return whether ``gate.evaluate`` accepts ``rng``.

    ``rng`` is part of the gate protocol; a bare ``evaluate(ledger, candidates)`` of one's
    own is called without it.
    """
    try:
        params = inspect.signature(gate.evaluate).parameters
    except (TypeError, ValueError):  # pragma: no cover - builtins without a signature
        return True
    return "rng" in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


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
    gate_rng = gate is not None and _takes_rng(gate)
    # the audit judges every live lesson; other gates the candidates (and verified
    # lessons when re-checking)
    recheck = s.gate.recheck_verified or bool(getattr(gate, "judges_verified", False))
    uses_lessons = bool(getattr(gate, "uses_lessons", False))
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
            else:
                fam = fam_names[prep.family[rep, r]] if fam_names else None
                sel = policy.select_with_uniforms(table, ledger, u, context={"family": fam})
                fact_ids, props = sel.fact_ids, sel.propensities
            idx = sorted(index[f] for f in fact_ids)
            inj = np.asarray(idx, dtype=np.int64)
            tot = injected_total(e, lessons.kind, inj, len(idx), damp, sat)
            z = sd * float(prep.noise[rep, r])
            d = float(prep.difficulty[rep, r])
            y = link_score(base, logit_base, logistic, d, tot, z)
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
            judged = [
                lessons.ids[j]
                for j in order
                if status.get(lessons.ids[j]) == "candidate"
                or (recheck and status.get(lessons.ids[j]) == "verified")
            ]
            if not judged:
                continue
            extra: dict[str, Any] = {}
            if gate_rng:
                # a fixed stream per replicate and run, for gates that draw
                seed = int.from_bytes(prep.noise[rep].tobytes()[:8], "little")
                extra["rng"] = np.random.default_rng((seed, run))
            if uses_lessons:
                # every lesson that has arrived, with its status (evicted ones included)
                extra["lessons"] = lesson_table(
                    [
                        {
                            "id": lessons.ids[j],
                            "status": status[lessons.ids[j]],
                            "created_at": int(lessons.arrival[j]),
                        }
                        for j in order
                        if lessons.ids[j] in status
                    ]
                )
            report = gate.evaluate(ledger, judged, **extra)
            for row in report.to_frame().iter_rows(named=True):
                f, d = row["fact_id"], row["decision"]
                j = index[f]
                if d == C.PROMOTE and status[f] == "candidate":
                    status[f] = "verified"
                    raw.promote_run[rep, j] = run
                elif d == C.EVICT:
                    status[f] = "evicted"
                    raw.evict_run[rep, j] = run
                    raw.evict_reason[rep, j] = C.evict_reason_code(row.get("reason"))
                elif d == C.RETIRE:
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
    max_facts = int(s.retrieval.max_facts)
    scratch = np.empty(len(lessons.ids))
    for rep in range(n):
        e = np.ascontiguousarray(prep.effects[rep])
        for r in range(runs):
            g = oracle_total(e, lessons.arrival, r + 1, max_facts, sat, scratch)
            z = s.score.noise_sd * float(prep.noise[rep, r])
            d = float(prep.difficulty[rep, r])
            raw.oracle[rep, r] = link_score(base, logit_base, logistic, d, g, z)
