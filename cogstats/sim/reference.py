"""The naive reference engine: the same loop in plain Python, as cycgraph runs it.

Every run builds the lesson table, asks the library's retrieval policy for the prompt,
records the outcome in a :class:`~cogstats.ledger.Ledger`, and calls the library's gate,
which rescans the whole ledger.

The lesson lifecycle.  Every outcome of the gate's report is applied through
:data:`cogstats._codes.OUTCOME_STATUS` (promote -> verified, admit -> admitted, suspend
-> suspended, release -> candidate, evict -> evicted, retire -> retired; hold and an
outcome that leads to the status a lesson has change nothing), and each change is
written as a status event (chunk replicate, run, lesson, from, to, reason, why) in
``RawChunk.events``.  Candidates, admitted and suspended lessons are judged at every
look (verified ones too when re-checking); a gate whose ``evaluate`` accepts
``statuses`` gets each judged lesson's ``LessonState(status, since)``, ``since`` the
first run in that status (the arrival run, or the run after the decision).  Retrieval
sees candidates, admitted and verified lessons, and the suspended ones when the policy
has a re-test slot (``retests_suspended``); each row of the lesson table it is shown
carries ``status_since`` (the lesson's ``since``) and ``gate_t`` (the lesson's t at the
gate's last look, from the report's ``t_stat``, or its ``crater_t`` where it has none;
NaN before one) with ``gate_t_own`` (the report's ``identifiable``: the t is its own),
and the context the coming run (``{"family": ..., "run": ...}``), so that a re-test
window and the likely-innocent re-test order can be applied.  The
simulated ledger names the true difficulty ``true_difficulty`` (a covariate no gate
selects by default).

It consumes the same pre-drawn numbers as the compiled engine (:mod:`cogstats.sim._loop`)
and must reach the same decisions; it exists for that cross-check and for benchmark C1,
not for production runs (it is about three orders of magnitude slower).
"""

from __future__ import annotations

import inspect
import math
from typing import Any

import numpy as np

from cogstats import _codes as C
from cogstats.ledger import Ledger
from cogstats.lessons import lesson_table
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


def _takes_statuses(gate: Any) -> bool:
    """Return whether ``gate.evaluate`` accepts ``statuses`` (the lifecycle protocol)."""
    try:
        params = inspect.signature(gate.evaluate).parameters
    except (TypeError, ValueError):  # pragma: no cover - builtins without a signature
        return False
    return "statuses" in params


def _lesson_state() -> Any:
    """Return :class:`cogstats.gates.LessonState` (imported when a gate takes statuses)."""
    from cogstats.gates import LessonState

    return LessonState


#: simulator status codes by name (the events' from/to)
_CODE = {name: i for i, name in enumerate(C.STATUS_NAMES)}
#: the statuses a gate judges at each look (verified too when re-checking)
_JUDGED = (C.CANDIDATE, C.ADMITTED, C.SUSPENDED)
#: the statuses retrieval is shown (suspended ones only by a policy with a re-test slot)
_SHOWN = (C.CANDIDATE, C.VERIFIED, C.ADMITTED)


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
    gate_statuses = gate is not None and _takes_statuses(gate)
    state_of = _lesson_state()
    shown = (*_SHOWN, C.SUSPENDED) if getattr(policy, "retests_suspended", False) else _SHOWN
    judged_statuses = (*_JUDGED, C.VERIFIED) if recheck else _JUDGED
    events: list[tuple[int, int, int, int, int, str | None, str | None]] = []
    for rep in range(n):
        ledger = Ledger()
        status: dict[str, str] = {}
        since: dict[str, int] = {}
        gate_t: dict[str, float] = {}  # each lesson's t at the gate's last look
        gate_own: dict[str, bool] = {}  # ... and whether it is the lesson's own
        e = prep.effects[rep]
        for r in range(runs):
            run = r + 1
            for new in np.flatnonzero(lessons.arrival == run):
                status[lessons.ids[new]] = C.CANDIDATE
                since[lessons.ids[new]] = run
            table = [
                {
                    "id": lessons.ids[j],
                    "status": status[lessons.ids[j]],
                    "created_at": int(lessons.arrival[j]),
                    "applies_to": None if lessons.applies[j] < 0 else fam_names[lessons.applies[j]],
                    "status_since": since[lessons.ids[j]],
                    "gate_t": gate_t.get(lessons.ids[j], math.nan),
                    "gate_t_own": gate_own.get(lessons.ids[j], False),
                }
                for j in order
                if status.get(lessons.ids[j]) in shown
            ]
            u = prep.retrieval[rep, r]
            if not table:
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
            if gate is None or run < s.gate.from_run or (run - s.gate.from_run) % s.gate.every:
                continue
            judged = [
                lessons.ids[j] for j in order if status.get(lessons.ids[j]) in judged_statuses
            ]
            if not judged:
                continue
            extra: dict[str, Any] = {}
            if gate_rng:
                # a fixed stream per replicate and run, for gates that draw
                seed = int.from_bytes(prep.noise[rep].tobytes()[:8], "little")
                extra["rng"] = np.random.default_rng((seed, run))
            if gate_statuses:
                extra["statuses"] = {f: state_of(status[f], since[f]) for f in judged}
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
                if "t_stat" in row:  # the re-test order's evidence (t, else crater t)
                    t = row["t_stat"] if row["t_stat"] is not None else row.get("crater_t")
                    gate_t[row["fact_id"]] = math.nan if t is None else float(t)
                    gate_own[row["fact_id"]] = bool(row.get("identifiable"))
                _apply(row, run, rep, index, status, since, raw, events)
        trials = ledger.fact_stats()
        for f, t in zip(trials["fact_id"], trials["trials"], strict=True):
            raw.trials[rep, index[f]] = t
    raw.events = events
    _fill_oracle(s, lessons, prep, raw)
    return raw


def _apply(
    row: dict[str, Any],
    run: int,
    rep: int,
    index: dict[str, int],
    status: dict[str, str],
    since: dict[str, int],
    raw: RawChunk,
    events: list[tuple[int, int, int, int, int, str | None, str | None]],
) -> None:
    """Apply one report row through ``OUTCOME_STATUS`` and record the change, if any."""
    f, d = row["fact_id"], row["decision"]
    if d not in C.OUTCOME_STATUS:
        raise ValueError(
            f"a gate report's decision must be one of {list(C.OUTCOMES)}; got {d!r} for {f!r}"
        )
    new = C.OUTCOME_STATUS[d]
    old = status[f]
    if new is None or new == old:
        return
    j = index[f]
    reason = row.get("reason")
    if d == C.EVICT:
        raw.evict_run[rep, j] = run
        raw.evict_reason[rep, j] = C.evict_reason_code(reason)
    elif d == C.RETIRE:
        raw.retire_run[rep, j] = run
    elif new == C.VERIFIED and raw.promote_run[rep, j] == 0:
        raw.promote_run[rep, j] = run
    status[f] = new
    since[f] = run + 1
    events.append((rep, run, j, _CODE[old], _CODE[new], reason, row.get("why")))


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
