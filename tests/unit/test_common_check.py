"""The common check (issue 17 item 7): every registered gate, one set of generated ledgers.

For every gate in :data:`cogstats.gates.GATES` (the loop is over the registry, so a gate
registered later is covered by its default options without an edit here):

* the gate protocol holds: ``evaluate(ledger) == judge(statistics(ledger))``, both called
  with the protocol's arguments (``statuses``, ``candidates``, ``rng``);
* batch = streaming at every step: after each run, ``StreamingGate(gate).report()`` equals
  ``gate.evaluate(ledger_so_far)`` -- the same lessons, decisions, reasons, ``why``, trials
  and baseline runs, every number within 1e-9 (relative, 1e-10 absolute near 0), and the
  rows ``record`` returns are exactly those whose decision changed;
* a gate that cannot stream says so with a ParameterError naming the gate or setting;
* batch = compiled: for every gate whose registry entry names a kernel piece (and every
  setting of it the piece covers), the compiled simulator and the reference engine (which
  runs ``gate.evaluate`` on the ledger so far) make the same decisions at the same runs,
  on a scenario with helpful, neutral and poisoned lessons.  (The kernel reports
  decisions, not evidence: the evidence is the batch's.)

For the evidence gate every estimator of ``cogstats.estimators.METHODS`` is checked: the
methods with running statistics (lift, welch, ols with the classical covariance, confseq)
at every step, the others (whose statistics are the ledger) on the protocol identity and
on the streaming refusal.  The ledgers are seeded (three shapes: a plain one with
covariates and a replaced run, scores on a 0.05 grid with exact ties, and logged
propensities).  The rules' own arithmetic is one copy: the batch gate runs it on arrays,
the kernel compiles the same functions (docs/gates.md, "Writing a gate").  A gate of one's
own, written in a folder of its own, is held to the same checks by
tests/unit/test_gate_folder.py.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

from cogstats import Ledger
from cogstats._validation import LedgerWarning, ParameterError
from cogstats.estimators import METHODS, MixedFallbackWarning
from cogstats.gates import GATES, EvidenceGate, GateReport, LessonState, StreamingGate, make_gate
from cogstats.stats import StreamingStats

Run = tuple[str, float, list[str], dict[str, Any]]
ROOT = Path(__file__).resolve().parents[2]

#: tolerance of every number (relative; absolute for values near 0)
REL, ABS = 1e-9, 1e-10
KEYS = ("fact_id", "decision", "reason", "why", "trials", "baseline_runs")
#: evidence methods that stream (running statistics); the others judge from the ledger
RUNNING = ("lift", "welch", "ols", "confseq")
#: options an estimator needs to run on the generated ledgers (none: the defaults)
METHOD_OPTIONS: dict[str, dict[str, Any]] = {
    "ols": {"cov": "nonrobust", "covariates": ("d",)},
    "permutation": {"permutations": 49},
    "freedman_lane": {"permutations": 49},
}
#: gate options other than the method's that a method needs
METHOD_GATE: dict[str, dict[str, Any]] = {"anytime_ols": {"sequential": "anytime"}}
#: more settings of the built-in gates (a new gate is checked with its defaults)
VARIANTS: dict[str, list[dict[str, Any]]] = {
    "cycgraph": [
        {"decision_rule": "margin", "min_trials": 2},
        {"min_trials": 2, "multiple_comparison": "none", "max_trials": 20},
    ],
}


def ledger_runs(kind: str, seed: int, n_runs: int = 40) -> list[Run]:
    """Seeded runs of one of three shapes (see the module docstring)."""
    rng = np.random.default_rng(seed)
    n_facts = 6
    effects = rng.normal(0.0, 0.15, n_facts)
    runs: list[Run] = []
    for i in range(n_runs):
        run_id = f"r{i}"
        if kind == "plain" and i == n_runs // 2:
            run_id = "r3"  # recorded again: replaces run r3 in place
        ids = [f"L{j}" for j in range(n_facts) if rng.random() < 0.4]
        x = 0.5 + sum(effects[int(f[1:])] for f in ids) + rng.normal(0.0, 0.1)
        score = float(np.clip(x, 0.0, 1.0))
        covs: dict[str, Any] = {"family": f"f{i % 3}"}
        if kind == "grid":
            score = float(min(round(score * 20) * 0.05, 1.0))  # ties on a 0.05 grid
        if kind in ("plain", "grid"):
            covs["d"] = float(rng.integers(0, 4)) if kind == "grid" else float(rng.normal())
        if kind == "logged":
            eligible = [f"L{j}" for j in range(n_facts)]
            covs["d"] = float(rng.normal())
            covs["eligible_ids"] = eligible
            covs["propensities"] = [0.4] * n_facts
        runs.append((run_id, score, ids, covs))
    return runs


SHAPES = [("plain", 11), ("grid", 12), ("logged", 13)]


def gate_configs() -> Iterator[tuple[str, Any]]:
    """Every registered gate (defaults, then the variants), evidence on every method."""
    for name in GATES:
        if name == "evidence":
            for method in METHODS:
                options = METHOD_OPTIONS.get(method, {})
                gate = EvidenceGate(method=method, options=options, **METHOD_GATE.get(method, {}))
                yield f"evidence[{method}]", gate
            continue
        yield name, make_gate(name)
        for k, options in enumerate(VARIANTS.get(name, [])):
            yield f"{name}[{k}]", make_gate(name, **options)


CONFIGS = list(gate_configs())


def assert_same(stream: GateReport, batch: GateReport, where: Any) -> None:
    """Decisions etc. identical, every number within the tolerance."""
    a, b = stream.to_frame(), batch.to_frame()
    assert stream.gate == batch.gate, where
    assert a.columns == b.columns, where
    assert a.schema == b.schema, where
    for name in a.columns:
        x, y = a[name].to_list(), b[name].to_list()
        if a[name].dtype == pl.Float64:
            for u, v in zip(x, y, strict=True):
                assert (u is None) == (v is None), (where, name, u, v)
                if u is None or v is None or (math.isnan(u) and math.isnan(v)):
                    continue
                assert math.isclose(u, v, rel_tol=REL, abs_tol=ABS), (where, name, u, v)
        else:
            assert x == y, (where, name, x, y)


def _ledger(runs: list[Run]) -> Ledger:
    ledger = Ledger()
    for run_id, score, ids, covs in runs:
        ledger.record(run_id, score, ids, **covs)
    return ledger


def _applies(gate: Any, runs: list[Run]) -> bool:
    """Whether the gate runs on these runs at all (a method may need other columns)."""
    try:
        gate.evaluate(_ledger(runs), rng=0)
    except ParameterError:
        return False
    return True


@pytest.fixture(autouse=True)
def _quiet() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LedgerWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("ignore", MixedFallbackWarning)  # the mixed model on 3 groups
        yield


def test_the_check_covers_every_registered_gate() -> None:
    names = {c.split("[")[0] for c, _ in CONFIGS}
    assert names == set(GATES)
    methods = {c[len("evidence[") : -1] for c, _ in CONFIGS if c.startswith("evidence[")}
    assert methods == set(METHODS)


@pytest.mark.parametrize(("config", "gate"), CONFIGS, ids=[c for c, _ in CONFIGS])
def test_evaluate_is_judge_of_statistics(config: str, gate: Any) -> None:
    """``evaluate`` = ``judge(statistics(ledger))`` where the gate has the protocol."""
    if not (callable(getattr(gate, "statistics", None)) and callable(getattr(gate, "judge", None))):
        pytest.skip(f"{config}: no statistics/judge (evaluate only)")
    runs = ledger_runs("logged", 5, n_runs=30)
    if not _applies(gate, runs):
        runs = ledger_runs("plain", 5, n_runs=30)
    ledger = _ledger(runs)
    candidates = [*ledger.fact_ids[:3], "never_seen"]
    statuses = {f: LessonState("candidate", 0) for f in candidates}
    batch = gate.evaluate(ledger, candidates, rng=7)
    judged = gate.judge(gate.statistics(ledger), statuses, candidates, rng=7)
    assert_same(judged, batch, config)
    assert_same(
        gate.judge(gate.statistics(ledger), None, None, rng=7), gate.evaluate(ledger, rng=7), config
    )


def _streams(gate: Any) -> bool:
    try:
        StreamingGate(gate)
    except ParameterError:
        return False
    return True


@pytest.mark.parametrize(("config", "gate"), CONFIGS, ids=[c for c, _ in CONFIGS])
def test_batch_equals_streaming_at_every_step(config: str, gate: Any) -> None:
    if not _streams(gate):
        # a gate (or setting) that cannot stream is named in the refusal
        with pytest.raises(ParameterError, match="stream"):
            StreamingGate(gate)
        assert not (config.startswith("evidence[") and config[9:-1] in RUNNING), config
        return
    checked = 0
    for shape, seed in SHAPES:
        runs = ledger_runs(shape, seed)
        if not _applies(gate, runs):
            continue
        check_streaming(gate, runs, (config, shape))
        checked += 1
    assert checked, f"{config}: no generated ledger applies"


def check_streaming(gate: Any, runs: list[Run], where: Any) -> StreamingGate:
    """Record the runs one by one; after each, the report and the changes are the batch's."""
    sg = StreamingGate(gate)
    ledger = Ledger()
    previous: dict[str, tuple[str, str | None]] = {}
    for k, (run_id, score, ids, covs) in enumerate(runs):
        changed = sg.record(run_id, score, ids, **covs)
        ledger.record(run_id, score, ids, **covs)
        batch = gate.evaluate(ledger)
        assert_same(sg.report(), batch, (where, k))
        now = batch.to_frame()
        expect = [
            f
            for f, d, r in zip(now["fact_id"], now["decision"], now["reason"], strict=True)
            if previous.get(f, ("hold", None)) != (d, r)
        ]
        assert changed.to_frame()["fact_id"].to_list() == expect, (where, k)
        previous.update(
            (f, (d, r))
            for f, d, r in zip(now["fact_id"], now["decision"], now["reason"], strict=True)
        )
    return sg


@pytest.mark.parametrize(("config", "gate"), CONFIGS, ids=[c for c, _ in CONFIGS])
def test_running_statistics_are_built_merged_and_saved_alike(config: str, gate: Any) -> None:
    """The running statistics of a gate judge alike however they were filled: run by run,
    from a ledger, two halves merged, and back from their arrays."""
    if not callable(getattr(gate, "running_statistics", None)):
        # no running statistics: a streaming gate refuses it, saying what streams
        with pytest.raises(ParameterError, match="cannot stream gate"):
            StreamingGate(gate)
        return
    try:
        empty = gate.running_statistics()
    except ParameterError:
        # a setting without running statistics (an estimator that needs every run):
        # refused by name, here and by StreamingGate
        with pytest.raises(ParameterError, match="StreamingGate streams"):
            gate.running_statistics()
        with pytest.raises(ParameterError, match="StreamingGate streams"):
            StreamingGate(gate)
        return
    if not isinstance(empty, StreamingStats):
        _check_own_statistics(config, gate)
        return
    runs = ledger_runs("plain", 11)
    ledger = _ledger(runs)
    batch = gate.evaluate(ledger)
    reg, confseq = empty.regression_covariates, empty.confseq is not None
    one_by_one = gate.running_statistics()
    one_by_one.extend(runs)
    built = StreamingStats.from_ledger(ledger, reg, confseq=confseq)
    half = len(runs) // 2
    first, second = gate.running_statistics(), gate.running_statistics()
    first.extend(runs[:half])
    second.extend(runs[half:])
    merged = first.merge(second)
    info, arrays = one_by_one.to_arrays()
    restored = StreamingStats.from_arrays(info, arrays)
    for name, stats in [
        ("run by run", one_by_one),
        ("from_ledger", built),
        ("merged", merged),
        ("from_arrays", restored),
    ]:
        assert_same(gate.judge(stats), batch, (config, name))


def _check_own_statistics(config: str, gate: Any) -> None:
    """A gate with statistics of its own (the lifecycle gate): run by run, from a ledger,
    two halves merged and back from their arrays all judge as the batch gate does."""
    # the runs as the ledger holds them (a run recorded again replaces the first: these
    # statistics are sums over runs, replaced runs are the streaming runner's business)
    ledger = _ledger(ledger_runs("plain", 11))
    runs = [(r.pop("run_id"), r.pop("score"), r.pop("fact_ids"), r) for r in ledger.to_records()]
    batch = gate.evaluate(ledger)
    running = gate.running_statistics()
    for run_id, score, ids, covs in runs:
        running = running.add_run(run_id, score, ids, covs)
    stats = gate.statistics(ledger)
    covariates = stats.ridge.covariates
    half = len(runs) // 2
    parts = []
    for chunk in (runs[:half], runs[half:]):
        part = type(stats).empty(covariates)
        for run_id, score, ids, covs in chunk:
            part = part.add_run(run_id, score, ids, covs)
        parts.append(part)
    merged = parts[0].merge(parts[1])
    restored = type(stats).from_arrays(stats.to_arrays())
    for name, st in [
        ("run by run", running),
        ("statistics(ledger)", stats),
        ("merged", merged),
        ("from_arrays", restored),
    ]:
        assert_same(gate.judge(st, None, list(ledger.fact_ids)), batch, (config, name))


# ---------------------------------------------------------------- batch = compiled
#: more settings of the compiled gates, for the compiled check (beyond CONFIGS' defaults)
COMPILED_VARIANTS: dict[str, list[dict[str, Any]]] = {
    "cycgraph": [
        {"min_trials": 2},
        {"decision_rule": "margin", "min_trials": 2, "max_trials": 5},
        {
            "min_trials": 2,
            "multiple_comparison": "none",
            "sequential_control": "none",
            "max_baseline_runs": 12,
        },
    ],
    "evidence": [
        {"method": "welch", "hold_unidentifiable": False, "min_trials": 2},
        {
            "method": "lift",
            "hold_unidentifiable": False,
            "multiplicity": "bonferroni",
            "max_trials": 8,
        },
        {
            "method": "welch",
            "hold_unidentifiable": False,
            "sequential": "group",
            "min_trials": 2,
            "max_trials": 10,
        },
    ],
    "audit": [{"min_hits": 3, "min_win_rate": 0.5}],
    "recommended": [{"min_trials": 2, "max_information": 6.0}],
}
SCENARIO: dict[str, Any] = {
    "runs": 30,
    "lessons": {
        "listed": [
            {"id": "good", "effect": 0.15, "arrives_at_run": 1},
            {"id": "meh", "effect": 0.0, "kind": "neutral", "arrives_at_run": 2},
        ],
        "streams": [
            {
                "kind": "genuine",
                "per_run": 2,
                "from_run": 1,
                "to_run": 8,
                "effect": {"dist": "uniform", "low": -0.05, "high": 0.1},
            },
        ],
        "poison": [{"after_run": 3, "count": 3, "effect": -0.2}],
    },
    "difficulty": {"model": "iid", "sd": 0.1, "proxy_corr": 0.8},
    "score": {"base": 0.55, "noise_sd": 0.05},
    "retrieval": {"policy": "randomized", "max_facts": 6, "candidate_slots": 3},
}


def compiled_configs() -> Iterator[tuple[str, dict[str, Any]]]:
    """Every gate with a kernel piece: its defaults, then the variants (scenario gate specs)."""
    for name in GATES:
        if not GATES[name].compiled:
            continue
        options = [{}, *VARIANTS.get(name, []), *COMPILED_VARIANTS.get(name, [])]
        for k, opts in enumerate(options):
            yield (name if k == 0 else f"{name}[{k}]"), {"type": name, **opts}


COMPILED = list(compiled_configs())


def test_the_compiled_check_covers_every_compiled_gate() -> None:
    from cogstats.sim.engine import KERNEL_GATES

    assert {c.split("[")[0] for c, _ in COMPILED} == set(KERNEL_GATES)
    assert {n for n in GATES if GATES[n].compiled} == set(KERNEL_GATES)


@pytest.mark.parametrize(("config", "spec"), COMPILED, ids=[c for c, _ in COMPILED])
def test_compiled_kernel_equals_the_batch_rule(config: str, spec: dict[str, Any]) -> None:
    """The kernel (the rule compiled) and the reference engine (``gate.evaluate``) decide
    alike, lesson for lesson and run for run; a setting the piece does not cover says why."""
    from cogstats.sim import Scenario
    from cogstats.sim.draws import draw_uniforms, layout, prepare, scenario_lessons
    from cogstats.sim.engine import fast_support, run_fast
    from cogstats.sim.reference import run_reference

    s = Scenario.from_dict({**SCENARIO, "gate": spec})
    reason = fast_support(s)
    if reason is not None:
        assert spec["type"] in reason or "compiled engine" in reason, reason
        pytest.skip(reason)
    lessons = scenario_lessons(s)
    lay = layout(s)
    prep = prepare(s, lessons, draw_uniforms(np.random.SeedSequence(17), 0, 4, lay), lay)
    fast = run_fast(s, lessons, prep)
    ref = run_reference(s, lessons, prep)
    assert fast.differences(ref) == [], config
    if "[" not in config:  # the defaults of every compiled gate really decide here
        decided = (fast.promote_run > 0) | (fast.evict_run > 0) | (fast.retire_run > 0)
        assert decided.any(), config


def test_the_check_can_fail() -> None:
    """A report off by more than the tolerance, or with another decision, fails."""
    runs = ledger_runs("plain", 11)
    gate = make_gate("cycgraph", decision_rule="margin", min_trials=2)
    report = gate.evaluate(_ledger(runs))
    frame = report.to_frame()
    nudged = frame.with_columns(pl.col("estimate") * (1 + 1e-7))
    with pytest.raises(AssertionError):
        assert_same(GateReport(report.gate, nudged, report.settings), report, "nudged")
    flipped = frame.with_columns(
        pl.when(pl.col("decision") == "hold")
        .then(pl.lit("promote"))
        .otherwise(pl.lit("hold"))
        .alias("decision")
    )
    with pytest.raises(AssertionError):
        assert_same(GateReport(report.gate, flipped, report.settings), report, "flipped")
