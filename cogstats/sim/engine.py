"""``simulate``: run a scenario's replicates and score the gate against the truth.

Two engines.  The compiled engine (the run loop of :mod:`cogstats.sim._loop`, one copy per
gate, :mod:`cogstats.sim._loops`) covers every part whose registration names a compiled
piece: the built-in retrieval policies and gates (the evidence gate in part: see
:func:`fast_support`) and a gate of one's own that brings its piece; the plain-Python
reference engine (:mod:`cogstats.sim.reference`) runs any registered or imported gate and
policy through the library's objects.  ``engine="auto"`` (the default) takes the compiled
one when it covers the scenario, else the reference one, and records the choice on the
result.  Which parts the kernel covers, and how a part's options reach its compiled code,
is each part's piece, named by its registry entry (``Entry.kernel``) and held beside the
part; :data:`KERNEL_GATES` and :data:`KERNEL_POLICIES` are the views of them by registry
name.
"""

from __future__ import annotations

import contextlib
import importlib
from collections import namedtuple
from typing import Any

import numpy as np
import polars as pl

from cogstats import _codes as C
from cogstats._codes import ENGINES
from cogstats._progress import progress_bar
from cogstats._registry import Registry
from cogstats._rng import as_seed_sequence
from cogstats._validation import ParameterError, check_choice, check_int
from cogstats.gates import GATES
from cogstats.kernel import COMMON, KernelGate, KernelPolicy
from cogstats.retrieval import RETRIEVAL_POLICIES
from cogstats.retrieval.randomized import bernoulli_capped_propensity
from cogstats.sim._loops import loop_for
from cogstats.sim._sizes import check_fits, replicate_bytes
from cogstats.sim.draws import (
    LessonTable,
    Prepared,
    draw_uniforms,
    layout,
    prepare,
    scenario_lessons,
)
from cogstats.sim.metrics import lesson_outcomes, replicate_metrics
from cogstats.sim.raw import RawChunk, empty_raw
from cogstats.sim.result import SimulationResult
from cogstats.sim.spec import Scenario

__all__ = [
    "ENGINES",
    "Inputs",
    "KernelGate",
    "KernelPolicy",
    "Outputs",
    "World",
    "as_seed_sequence",
    "fast_support",
    "simulate",
]

#: What the run loop reads of a chunk: the run loop's block (``ip``, ``fp``:
#: :data:`cogstats.kernel.COMMON`), the retrieval policy's (``pi``, ``pf``), the
#: randomized policy's propensities by pool size, the gate's table, the scenario's lessons
#: and the chunk's draws (replicate x run: noise, difficulty, family, retrieval uniforms,
#: covariates; replicate x lesson: effects) and its non-additive truth (``world``: a
#: :data:`World` record, empty arrays for an additive store).
Inputs = namedtuple(
    "Inputs",
    [
        "ip",
        "fp",
        "pi",
        "pf",
        "prop_table",
        "table",
        "arrival",
        "kind",
        "age_rank",
        "newest_rank",
        "applies",
        "noise",
        "diff",
        "fam",
        "eff",
        "ru",
        "cov",
        "world",
    ],
)
#: The truth of a non-additive lesson store as the run loop reads it
#: (:mod:`cogstats.sim.world`): each replicate's paraphrase groups ``group`` (replicate x
#: lesson), each run's effects ``run_eff`` (replicate x run x lesson: the run's family,
#: changes applied), the interactions (``inter_ptr``, ``inter_les``, ``inter_eff``) and
#: the lessons they name (``in_inter``).
World = namedtuple("World", ["group", "run_eff", "inter_ptr", "inter_les", "inter_eff", "in_inter"])
#: What the run loop writes of a chunk (the :class:`~cogstats.sim.raw.RawChunk` arrays)
#: and the status events of a gate that records them, with their count.
Outputs = namedtuple(
    "Outputs",
    [
        "score",
        "recorded",
        "inj",
        "ninj",
        "pid",
        "pval",
        "n_logged",
        "oracle",
        "first_trial",
        "trials",
        "promote_run",
        "evict_run",
        "evict_reason",
        "retire_run",
        "events",
        "n_events",
    ],
)


# ---------------------------------------------------------------------- kernel adapters
class _Pieces(Registry[Any]):
    """The compiled pieces of a registry's parts, derived from the parts' entries.

    A part compiles exactly when its entry names a kernel piece (``Entry.kernel``: the
    module holding its ``PIECE``, or ``"module:ATTR"``); nothing else is kept.
    """

    def __init__(self, kind: str, parts: Registry[Any], param: str):
        super().__init__(kind, param=param, sort=False)
        self._parts = parts

    def _piece(self, name: str) -> Any:
        parts = self._parts
        if not isinstance(name, str) or ":" in name or name not in parts:
            raise KeyError(name)
        entry = parts[name]
        if entry.kernel is None:
            self._entries.pop(name, None)
            raise KeyError(name)
        piece = self._entries.get(name)
        if piece is None:  # "module" (its PIECE) or "module:ATTR"
            module, _, attr = entry.kernel.partition(":")
            attr = attr or "PIECE"
            piece = getattr(importlib.import_module(module), attr, None)
            if piece is None:
                raise ParameterError(
                    f"{parts.kind} {name!r}: its kernel module {module!r} has no {attr}"
                )
            self._entries[name] = piece
        return piece

    def load(self) -> _Pieces:
        for name in self._parts:
            with contextlib.suppress(KeyError):
                self._piece(name)
        for name in [n for n in self._entries if n not in self._parts]:
            del self._entries[name]
        return self

    def __getitem__(self, name: str) -> Any:
        return self._piece(name)

    def __contains__(self, name: object) -> bool:
        try:
            self._piece(name)  # type: ignore[arg-type]
        except KeyError:
            return False
        return True

    def entry(self, name: str) -> Any:
        self.load()
        return super().entry(name)


#: Gate registry name -> its compiled piece (a :class:`KernelGate`), derived from the
#: gates' registry entries: a gate compiles by naming its piece's module there
#: (``register_gate(..., kernel="cogstats.gates.cycgraph.kernel")``); the run loop runs
#: its step, one loop per gate (:mod:`cogstats.sim._loops`).
KERNEL_GATES: Registry[KernelGate] = _Pieces(
    "compiled gate",
    GATES,
    param="gate",
)


#: Retrieval policy registry name -> its compiled piece (a :class:`KernelPolicy`), derived
#: from the policies' registry entries as :data:`KERNEL_GATES` is: a policy compiles by
#: naming its piece there (``register_policy(...,
#: kernel="cogstats.retrieval.kernel:POOL_PIECE"``; the built-in policies' pieces are
#: attributes of :mod:`cogstats.retrieval.kernel`, beside their blocks), and its
#: dispatch code is ``cogstats._codes.POLICY_CODES``.
KERNEL_POLICIES: Registry[KernelPolicy] = _Pieces(
    "compiled retrieval policy",
    RETRIEVAL_POLICIES,
    param="retrieval",
)


def fast_support(s: Scenario) -> str | None:
    """Why the compiled engine cannot run this scenario, or None when it can.

    The kernel covers the registered parts that have a compiled piece
    (:data:`KERNEL_GATES`, :data:`KERNEL_POLICIES`): every built-in retrieval policy, and
    the cycgraph, audit, evidence and recommended (the lifecycle gate) gates and any
    gate of one's own whose registration names its piece, in any lesson store (additive or
    not: paraphrase groups, interactions, effects by family, changes of effect), with the
    lifecycle's statuses in
    retrieval (admitted lessons in the verified block,
    suspended ones through the re-test slot, ``retest_window``, ``fill_empty``).  Its
    evidence gate covers methods
    lift and welch, sequential fixed or group, multiplicity none (or Bonferroni with
    fixed), and hold_unidentifiable False (the identifiability check needs the full
    design); its audit counts wins at one threshold, so under UCB1 the audit's
    ``win_threshold`` must equal the policy's; its recommended gate adjusts for the
    difficulty proxy only.  Everything else runs in the reference
    engine.

    Examples
    --------
    >>> from cogstats.sim import Scenario
    >>> s = Scenario.from_dict({"runs": 5, "lessons": {"listed": [{"id": "a", "effect": 0}]},
    ...     "gate": {"type": "evidence", "method": "ols"}})
    >>> fast_support(s)  # doctest: +ELLIPSIS
    "the compiled engine's evidence gate does not cover method 'ols' ..."
    """
    policy = s.retrieval.entry()
    if policy.name not in KERNEL_POLICIES:
        return f"the compiled engine has no retrieval policy {s.retrieval.policy!r}"
    if float(getattr(s.retrieval.build(), "holdout_prob", 0.0) or 0.0) > 0:
        return (
            "the compiled engine's retrieval does not hold out verified lessons "
            "(holdout_prob > 0); the reference engine runs it"
        )
    entry = s.gate.entry()
    if entry is None:
        return None
    if entry.name not in KERNEL_GATES:
        return f"the compiled engine has no gate {s.gate.type!r}"
    check = KERNEL_GATES[entry.name].support
    return None if check is None else check(s.gate.build(), s)


def seed_record(seed: np.random.SeedSequence) -> dict[str, Any]:
    """JSON-ready description of a SeedSequence (re-creates it exactly)."""
    entropy: Any = seed.entropy
    return {
        "entropy": [int(x) for x in entropy]
        if isinstance(entropy, list | tuple)
        else int(entropy or 0),
        "spawn_key": [int(k) for k in seed.spawn_key],
    }


def params(s: Scenario) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, Any]:
    """Return what the compiled engine takes of a scenario's parts.

    The run loop's (int, float) block :data:`cogstats.kernel.COMMON`, the retrieval
    policy's own (int, float) block, and the gate's options record (None without a gate).
    """
    reason = fast_support(s)
    if reason is not None:
        raise ParameterError(reason)
    g = s.gate
    policy = s.retrieval.build()
    common: dict[str, float] = dict.fromkeys(COMMON.ints + COMMON.floats, 0)
    common.update(
        runs=s.runs,
        lessons=s.n_lessons,
        policy=C.POLICY_CODES[s.retrieval.entry().name],
        max_facts=policy.max_facts,
        pool=layout(s).pool,
        every=g.every,
        from_run=g.from_run,
        record_empty=int(s.record_empty_runs),
        recheck=int(g.recheck_verified),
        logistic=int(s.score.link == "logistic"),
        world=int(not s.additive),
        base=s.score.base,
        noise_sd=s.score.noise_sd,
        saturation=s.score.saturation or 0.0,
        damping=s.score.poison_damping,
    )
    retrieval = KERNEL_POLICIES[s.retrieval.entry().name]
    if retrieval.win_threshold is not None:
        common["win_threshold"] = retrieval.win_threshold(policy)
    pi, pf = retrieval.pack(policy)
    piece = _gate_piece(s)
    options = None
    if piece is not None:
        gate = g.build()
        common["gram"] = int(piece.gram)
        if piece.win_threshold is not None:
            common["win_threshold"] = piece.win_threshold(gate)
        options = piece.options(gate)
    ip, fp = COMMON.pack(common)
    return ip, fp, pi, pf, options


def _gate_piece(s: Scenario) -> KernelGate | None:
    entry = s.gate.entry()
    return None if entry is None else KERNEL_GATES[entry.name]


def run_fast(s: Scenario, lessons: LessonTable, prep: Prepared) -> RawChunk:
    """Simulate a chunk with the compiled engine (the loop of the scenario's gate).

    A gate that records its status changes (the lifecycle gate) fills an event buffer,
    turned into the reference engine's status events (:attr:`RawChunk.events`: reason
    and why named); when the buffer overflows the chunk runs again with room for every
    event (the draws are fixed, so the run is the same).
    """
    n = prep.noise.shape[0]
    ip, fp, pi, pf, options = params(s)
    piece = _gate_piece(s)
    records = piece is not None and piece.events
    loop = loop_for(None if piece is None else piece.path)
    inputs = _inputs(s, lessons, prep, (ip, fp, pi, pf), piece)
    cap = _event_capacity(s, n) if records else 1
    while True:
        raw = empty_raw(s, lessons, n)
        events = np.zeros((cap, 7), dtype=np.int64)
        n_events = np.zeros(1, dtype=np.int64)
        loop(inputs, _outputs(raw, events, n_events), options)
        if int(n_events[0]) <= cap:
            break
        cap = int(n_events[0])
    if records:
        raw.events = _events(events[: int(n_events[0])])
    return raw


def _event_capacity(s: Scenario, n: int) -> int:
    """Rows of the event buffer a chunk of ``n`` replicates starts with (grown on overflow)."""
    return n * (2 * s.n_lessons + s.runs)


def _events(rows: np.ndarray) -> list[Any]:
    """Return the kernel's event rows as :data:`cogstats.sim.raw.Event` tuples (names)."""
    from cogstats.gates.recommended import LIFECYCLE_WHY

    out = []
    for rep, run, j, frm, to, code, why in rows.tolist():
        reason = C.outcome_of_code(code)[1]
        out.append((rep, run, j, frm, to, reason, LIFECYCLE_WHY[why]))
    return out


def _inputs(
    s: Scenario,
    lessons: LessonTable,
    prep: Prepared,
    blocks: tuple[np.ndarray, ...],
    piece: KernelGate | None,
) -> Any:
    """Return the chunk's :data:`Inputs`."""
    gate = None if piece is None else s.gate.build()
    table = np.zeros(1) if piece is None or piece.table is None else piece.table(gate)
    covariates = 0
    if piece is not None and piece.gram and s.difficulty.proxy_corr is not None:
        covariates = int("difficulty_proxy" in getattr(gate, "covariates", ()))
    return Inputs(  # type: ignore[call-arg]
        *blocks,
        _propensity_table(s),
        np.ascontiguousarray(table, dtype=np.float64),
        lessons.arrival,
        lessons.kind,
        lessons.age_rank,
        lessons.newest_rank,
        lessons.applies,
        np.ascontiguousarray(prep.noise),
        np.ascontiguousarray(prep.difficulty),
        np.ascontiguousarray(prep.family),
        np.ascontiguousarray(prep.effects),
        prep.retrieval,
        _covariate_array(prep, covariates),
        _world(lessons, prep),
    )


def _world(lessons: LessonTable, prep: Prepared) -> Any:
    """Return the chunk's :data:`World` record (empty arrays for an additive store)."""
    wt, draws = lessons.world, prep.world
    if wt is None or draws is None:
        ints, floats = np.zeros(0, dtype=np.int64), np.zeros(0)
        return World(
            np.zeros((1, 0), dtype=np.int64),
            np.zeros((1, 0, 0)),
            ints,
            ints,
            floats,
            np.zeros(0, dtype=np.bool_),
        )
    return World(
        np.ascontiguousarray(draws.group, dtype=np.int64),
        np.ascontiguousarray(draws.run_effects, dtype=np.float64),
        np.ascontiguousarray(wt.inter_ptr, dtype=np.int64),
        np.ascontiguousarray(wt.inter_les, dtype=np.int64),
        np.ascontiguousarray(wt.inter_eff, dtype=np.float64),
        np.ascontiguousarray(wt.in_inter, dtype=np.bool_),
    )


def _outputs(raw: RawChunk, events: np.ndarray, n_events: np.ndarray) -> Any:
    """Return the chunk's :data:`Outputs`: the raw arrays, written in place."""
    return Outputs(
        raw.score,
        raw.recorded,
        raw.inj,
        raw.ninj,
        raw.pid,
        raw.pval,
        raw.n_logged,
        raw.oracle,
        raw.first_trial,
        raw.trials,
        raw.promote_run,
        raw.evict_run,
        raw.evict_reason,
        raw.retire_run,
        events,
        n_events,
    )


def _propensity_table(s: Scenario) -> np.ndarray:
    """Capped-Bernoulli inclusion probability for every pool size 0..L (randomized policy).

    Row 0 with every candidate slot, row 1 with one slot less (a re-test takes it).
    """
    policy = s.retrieval.build()
    table = np.zeros((2, s.n_lessons + 1))
    if getattr(policy, "inclusion", None) == "bernoulli":
        slots = min(policy.candidate_slots, policy.max_facts)
        for row in range(2):
            for n in range(1, s.n_lessons + 1):
                table[row, n] = bernoulli_capped_propensity(
                    n, max(slots - row, 0), policy.inclusion_prob
                )
    return table


def _covariate_array(prep: Prepared, ncov: int) -> np.ndarray:
    """Each run's covariates for a gate that reads the Gram matrix (replicate x run x ncov)."""
    n, runs = prep.noise.shape
    if ncov == 0 or prep.proxy is None:
        return np.zeros((n, runs, 0))
    return np.ascontiguousarray(prep.proxy[:, :, None], dtype=np.float64)


def _bytes_per_replicate(s: Scenario) -> int:
    # a non-additive store's draws and truth: groups, effects by family and by run
    world = 0 if s.additive else s.n_lessons * (s.runs + 3 * len(s.difficulty.families) + 5)
    return replicate_bytes(s.runs, s.n_lessons, s.retrieval.max_facts, layout(s).pool) + 8 * world


def simulate(
    scenario: Scenario,
    *,
    replicates: int,
    rng: Any = None,
    engine: str = "auto",
    keep_runs: bool = True,
    chunk_size: int | None = None,
    progress: bool | None = None,
    gate: Any = None,
) -> SimulationResult:
    """Simulate ``replicates`` independent replicates of a scenario with known true effects.

    Parameters
    ----------
    scenario : Scenario
        What to simulate (see :mod:`cogstats.sim.spec`).
    replicates : int
        Number of replicates (>= 1).
    rng : int, numpy.random.SeedSequence, Generator or None
        Root seed.  Replicate ``r`` uses its own block of the seed's PCG64 stream, so the
        numbers do not depend on ``chunk_size`` or on how the work is split.
    engine : {"auto", "fast", "reference"}
        "fast": the compiled engine (an error when it does not cover the scenario's gate
        or policy, see :func:`fast_support`); "reference": the plain-Python engine that
        calls the library's retrieval and gate objects and rescans the ledger every gate
        (any registered or imported gate; about three orders of magnitude slower);
        "auto" (default): the compiled engine when it covers the scenario, else the
        reference engine.  The result records the engine used (``result.engine``) and,
        when "auto" fell back, why (``result.extras["engine_reason"]``).
    keep_runs : bool
        Keep the run-level frame (one row per replicate and run).  Pass False for large
        replicate counts: memory then stays flat as replicates grow.
    chunk_size : int, optional
        Replicates per compiled call (default: about 64 MB of working memory).
    progress : bool, optional
        Show a progress bar (default: when stderr is a terminal and the work is large).
    gate : object, optional
        Any gate object to use instead of the scenario's (the gate protocol,
        ``evaluate(ledger, candidates=None, *, rng=None) -> GateReport``), e.g. a gate of
        your own.  It runs in the reference engine, on the scenario's cadence
        (``gate.every``, ``gate.from_run``).

    Returns
    -------
    SimulationResult
        Frames ``runs`` (unless ``keep_runs=False``), ``decisions``, ``lessons`` and
        ``metrics``; ``summary()`` averages the metrics with Monte Carlo standard errors.

    Examples
    --------
    >>> from cogstats.sim import Scenario, simulate
    >>> s = Scenario.from_dict({
    ...     "runs": 30,
    ...     "lessons": {"listed": [{"id": "bad", "effect": -0.3, "kind": "poison"}]},
    ...     "retrieval": {"max_facts": 4, "candidate_slots": 2, "rest_after_trials": 5},
    ...     "gate": {"type": "cycgraph", "decision_rule": "inference", "min_trials": 3},
    ... })
    >>> result = simulate(s, replicates=200, rng=1)
    >>> result.metrics.height, round(float(result.metrics["poison_recall"].mean()), 2)
    (200, 0.97)
    """
    if not isinstance(scenario, Scenario):
        raise ParameterError(
            f"scenario must be a cogstats.sim.Scenario; got {type(scenario).__name__}"
        )
    replicates = int(check_int("replicates", replicates, minimum=1) or 1)
    requested = check_choice("engine", engine, ENGINES)
    if gate is not None and not callable(getattr(gate, "evaluate", None)):
        raise ParameterError(
            f"gate must have an evaluate(ledger, candidates=None, *, rng=None) method; got "
            f"{type(gate).__name__}"
        )
    engine, reason = _choose_engine(scenario, requested, gate)
    seed = as_seed_sequence(rng)
    lessons = scenario_lessons(scenario)
    lay = layout(scenario)
    per_replicate = _bytes_per_replicate(scenario)
    check_fits(
        per_replicate,
        key="runs",
        what=f"one replicate of {scenario.runs:,} runs",
        source=None,
        hint="lower runs",
    )
    if chunk_size is None:  # about 64 MB at a time (from 1 to 4096 replicates)
        chunk_size = max(1, min(4096, (64 << 20) // max(1, per_replicate)))
    chunk_size = int(check_int("chunk_size", chunk_size, minimum=1) or 1)
    if engine == "reference":
        from cogstats.sim.reference import run_reference

        def runner(s: Scenario, les: LessonTable, prep: Prepared) -> RawChunk:
            return run_reference(s, les, prep, gate)

    else:
        runner = run_fast  # type: ignore[assignment]
    bar = progress_bar(
        progress,
        total=replicates,
        unit="replicate",
        desc="simulate",
        large=replicates * scenario.runs >= 200_000,
    )
    metrics, runs_frames = [], []
    outcomes = _Outcomes(lessons, replicates * _bytes_per_replicate(scenario) <= _LAZY_BYTES)
    start = 0
    while start < replicates:
        n = min(chunk_size, replicates - start)
        u = draw_uniforms(seed, start, n, lay)
        prep = prepare(scenario, lessons, u, lay)
        raw = runner(scenario, lessons, prep)
        metrics.append(replicate_metrics(raw, lessons, prep.effects, start, prep.world))
        outcomes.add(raw, prep.effects, start)
        if keep_runs:
            runs_frames.append(run_frame(scenario, lessons, prep, raw, start))
        start += n
        if bar is not None:
            bar.update(n)
    if bar is not None:
        bar.close()
    return SimulationResult(
        scenario=scenario,
        replicates=replicates,
        seed=seed_record(seed),
        engine=engine,
        runs=pl.concat(runs_frames) if keep_runs else None,
        decisions=None,  # built from the lessons frame when asked for
        lessons=outcomes.frame,  # built when asked for
        metrics=pl.concat(metrics),
        extras={"engine_requested": requested, "engine_reason": reason},
    )


class _Outcomes:
    """The per-lesson outcome frames of a simulation's chunks, built when asked for.

    The lessons frame, with its status events and list columns, is most of a simulation's
    cost after the kernel, and many callers read only the metrics (a benchmark, a tuning
    loop): when the whole simulation's raw arrays fit in :data:`_LAZY_BYTES` (the memory
    of one default chunk), the chunks' raw arrays are kept and the frame is built when
    first asked for; a larger simulation builds each chunk's frame at once, so memory
    stays flat as replicates grow (``keep_runs=False``).
    """

    def __init__(self, lessons: LessonTable, lazy: bool) -> None:
        self.lessons = lessons
        self.lazy = lazy
        self.pending: list[tuple[RawChunk, np.ndarray, int]] = []
        self.done: list[pl.DataFrame] = []

    def add(self, raw: RawChunk, effects: np.ndarray, start: int) -> None:
        if self.lazy:
            self.pending.append((raw, effects, start))
        else:
            self.done.append(lesson_outcomes(raw, self.lessons, effects, start))

    def frame(self) -> pl.DataFrame:
        self.done.extend(lesson_outcomes(r, self.lessons, e, s) for r, e, s in self.pending)
        self.pending = []
        return pl.concat(self.done)


#: a simulation whose raw arrays take at most this keeps them for a lessons frame built
#: when asked for (the working memory of one default chunk)
_LAZY_BYTES = 64 << 20


def _choose_engine(scenario: Scenario, requested: str, gate: Any) -> tuple[str, str | None]:
    """Choose the engine to run and, when it is the reference engine, say why."""
    if requested == "reference":
        return "reference", "requested"
    if gate is not None:
        if requested == "fast":
            raise ParameterError(
                "a gate object runs in the plain-Python engine: pass engine='reference' (or 'auto')"
            )
        return "reference", "a gate object was passed"
    reason = fast_support(scenario)
    if reason is None:
        return "fast", None
    if requested == "fast":
        raise ParameterError(
            f"{reason}; use engine='reference' (or 'auto'), which runs any gate object"
        )
    return "reference", reason


def run_frame(
    s: Scenario, lessons: LessonTable, prep: Prepared, raw: RawChunk, start: int
) -> pl.DataFrame:
    """One row per (replicate, run): score, difficulty, covariates, injected lessons."""
    import pyarrow as pa  # only the run-level frame needs it (not the summaries)

    n, runs = raw.score.shape
    ids = np.asarray(lessons.ids, dtype=object)
    counts = raw.ninj.ravel()
    flat = raw.inj.reshape(n * runs, -1)
    values = flat[np.arange(flat.shape[1])[None, :] < counts[:, None]]
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    fact_ids = pa.ListArray.from_arrays(pa.array(offsets), pa.array(ids[values].astype(str)))
    data: dict[str, Any] = {
        "replicate": np.repeat(np.arange(start, start + n, dtype=np.int64), runs),
        "run": np.tile(np.arange(1, runs + 1, dtype=np.int64), n),
        "score": raw.score.ravel(),
        "recorded": raw.recorded.ravel(),
        "difficulty": prep.difficulty.ravel(),
        "oracle_score": raw.oracle.ravel(),
    }
    frame = pl.DataFrame(data).with_columns(pl.Series("fact_ids", pl.from_arrow(fact_ids)))
    if prep.proxy is not None:
        frame = frame.with_columns(pl.Series("difficulty_proxy", prep.proxy.ravel()))
    if s.difficulty.families:
        names = np.asarray([f.name for f in s.difficulty.families], dtype=object)
        frame = frame.with_columns(pl.Series("family", names[prep.family.ravel()].astype(str)))
    if raw.n_logged.any():
        lc = raw.n_logged.ravel()
        pflat = raw.pid.reshape(n * runs, -1)
        vflat = raw.pval.reshape(n * runs, -1)
        keep = np.arange(pflat.shape[1])[None, :] < lc[:, None]
        poff = pa.array(np.concatenate([[0], np.cumsum(lc)]).astype(np.int32))
        elig = pa.ListArray.from_arrays(poff, pa.array(ids[pflat[keep]].astype(str)))
        props = pa.ListArray.from_arrays(poff, pa.array(vflat[keep]))
        frame = frame.with_columns(
            pl.Series("eligible_ids", pl.from_arrow(elig)),
            pl.Series("propensities", pl.from_arrow(props)),
        )
    return frame
