"""StreamingGate: after every run, the report equals the batch gate on the ledger so far.

The property tests draw run sequences (scores on a 0.05 grid, so that exact margin ties
occur, and continuous; lessons listed twice in a run; run ids recorded again, which
replace their run in place; covariates; logged propensities) and compare, after every
run, ``StreamingGate(gate).report()`` with ``gate.evaluate(ledger)`` on a Ledger fed the
same runs: lessons, decisions, reasons, why, trials and baseline runs identical, every
number to 1e-9 relative or 1e-10 absolute (an interval end near 0 is a difference of
nearly equal numbers).  They also check that ``record`` returns exactly the rows whose
decision or reason changed since the previous run, with the batch report's values.
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cogstats import Ledger
from cogstats._validation import LedgerError, LedgerWarning, ParameterError
from cogstats.gates import (
    STREAMING_ADAPTERS,
    AuditGate,
    CycgraphGate,
    EvidenceGate,
    GateReport,
    StreamingAdapter,
    StreamingGate,
    register_streaming,
)
from cogstats.gates import streaming as streaming_module

KEYS = ("fact_id", "decision", "reason", "why", "trials", "baseline_runs")


def assert_same(stream: GateReport, batch: GateReport, where: Any = None) -> None:
    a, b = stream.to_frame(), batch.to_frame()
    assert stream.gate == batch.gate
    assert dict(stream.settings) == dict(batch.settings)
    assert a.columns == b.columns, where
    assert a.schema == b.schema, where
    for name in a.columns:
        x, y = a[name].to_list(), b[name].to_list()
        if a[name].dtype == pl.Float64:
            for u, v in zip(x, y, strict=True):
                assert (u is None) == (v is None), (where, name, u, v)
                if u is not None and v is not None and not (math.isnan(u) and math.isnan(v)):
                    assert math.isclose(u, v, rel_tol=1e-9, abs_tol=1e-10), (where, name, u, v)
        else:
            assert x == y, (where, name, x, y)


@st.composite
def run_sequences(draw: st.DrawFn, *, covariates: bool = False, logged: bool = False) -> list:
    """Runs as (run_id, score, fact_ids, covariates): ties, repeats, replacements."""
    n_runs = draw(st.integers(1, 36))
    n_facts = draw(st.integers(1, 7))
    grid = draw(st.booleans())
    replace = draw(st.sampled_from([0.0, 0.15]))
    p_in = draw(st.sampled_from([0.2, 0.4, 0.7]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    runs = []
    for i in range(n_runs):
        if i and rng.random() < replace:
            run_id = f"r{rng.integers(0, i)}"  # recorded again: replaces that run
        else:
            run_id = f"r{i}"
        score = float(min(rng.integers(0, 21) * 0.05, 1.0)) if grid else float(rng.random())
        ids = [f"L{j}" for j in range(n_facts) if rng.random() < p_in]
        if ids and rng.random() < 0.1:
            ids.append(ids[0])  # a duplicate counts once
        covs: dict[str, Any] = {}
        if covariates:
            covs["d"] = float(rng.integers(0, 5)) if grid else float(rng.normal())
            covs["fam"] = str(rng.choice(["a", "b", "c"]))
        if logged and rng.random() < 0.9:
            eligible = sorted(set(ids) | {f"L{j}" for j in range(n_facts) if rng.random() < 0.5})
            covs["eligible_ids"] = eligible
            covs["propensities"] = [
                float(rng.choice([0.3, 0.5, 0.8])) if f in ids or rng.random() < 0.8 else 0.0
                for f in eligible
            ]
        runs.append((run_id, score, ids, covs))
    return runs


def check_stream(gate: Any, runs: list, candidates: list[str] | None = None) -> StreamingGate:
    """Record ``runs`` one by one; after each, the report and the changes match the batch."""
    sg = StreamingGate(gate, candidates=candidates)
    ledger = Ledger()
    previous: dict[str, tuple[str, str | None]] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LedgerWarning)
        for k, (run_id, score, ids, covs) in enumerate(runs):
            changed = sg.record(run_id, score, ids, **covs)
            ledger.record(run_id, score, ids, **covs)
            batch = gate.evaluate(ledger, candidates)
            assert_same(sg.report(), batch, k)
            now = batch.to_frame()
            expect = [
                f
                for f, d, r in zip(now["fact_id"], now["decision"], now["reason"], strict=True)
                if previous.get(f, ("hold", None)) != (d, r)
            ]
            assert changed.to_frame()["fact_id"].to_list() == expect, k
            rows = GateReport(
                batch.gate, now.filter(pl.col("fact_id").is_in(expect)), batch.settings
            )
            assert_same(changed, rows, ("changed", k))
            previous.update(
                (f, (d, r))
                for f, d, r in zip(now["fact_id"], now["decision"], now["reason"], strict=True)
            )
    return sg


# ---------------------------------------------------------------------- cycgraph
cycgraph_policies = st.fixed_dictionaries(
    {
        "decision_rule": st.sampled_from(["margin", "inference"]),
        "min_trials": st.integers(1, 4),
        "promote_margin": st.sampled_from([0.0, 0.05, 0.1]),
        "evict_margin": st.sampled_from([0.0, 0.05, 0.1]),
        "noise_floor_sd": st.sampled_from([0.0, 0.1]),
        "multiple_comparison": st.sampled_from(["bh", "none"]),
        "sequential_control": st.sampled_from(["doubling", "none"]),
        "max_baseline_runs": st.sampled_from([None, 5, 20]),
        "promote_confidence": st.sampled_from([0.6, 0.9]),
        "evict_confidence": st.sampled_from([0.6, 0.9]),
    }
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    runs=run_sequences(),
    policy=cycgraph_policies,
    max_extra=st.sampled_from([None, 0, 3]),
    explicit=st.booleans(),
)
def test_cycgraph_stream_equals_batch_at_every_run(
    runs: list, policy: dict, max_extra: int | None, explicit: bool
) -> None:
    if max_extra is not None:
        policy = {**policy, "max_trials": policy["min_trials"] + max_extra}
    candidates = ["L3", "L0", "never-seen", "L1"] if explicit else None
    check_stream(CycgraphGate(**policy), runs, candidates)


def _tie_runs() -> tuple[list, float]:
    """Runs whose running-sum baseline mean differs from the run-order one in the last
    bits while the run-order lift sits exactly on the margin (found by search)."""
    rng = np.random.default_rng(11)
    for _ in range(20000):
        n = int(rng.integers(6, 30))
        scores = rng.integers(4, 14, n) * 0.05
        member = rng.random(n) < 0.3
        if member.sum() < 1 or 2 * (n - member.sum()) <= n:
            continue
        runs = [(f"r{i}", float(scores[i]), ["a"] if member[i] else [], {}) for i in range(n)]
        ledger = Ledger.from_records(
            {"run_id": r, "score": s, "fact_ids": f} for r, s, f, _ in runs
        )
        g = ledger._group_arrays(["a"])
        ya, yb = scores[member], scores[~member]
        lift = float(np.cumsum(ya)[-1] / ya.size) - float(np.cumsum(yb)[-1] / yb.size)
        if lift > 0 and (g.mean_a[0] - g.mean_b[0] >= lift) != (lift >= lift):
            return runs, lift
    raise AssertionError("no tie found")  # pragma: no cover


def test_exact_ties_are_recomputed_from_the_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    runs, margin = _tie_runs()
    calls = []
    original = streaming_module.StreamingStats.exact_means  # the margin rule's recompute

    def counting(self: Any, j: int) -> Any:
        calls.append(j)
        return original(self, j)

    monkeypatch.setattr(streaming_module.StreamingStats, "exact_means", counting)
    gate = CycgraphGate(decision_rule="margin", min_trials=1, promote_margin=margin)
    sg = check_stream(gate, runs)
    assert calls, "the tie was not recomputed"
    # the running sums alone would decide differently; the run-order lift promotes
    assert sg.report().decision("a")["decision"] == "promote"


def _bounds_hold(sg: StreamingGate) -> None:
    """Every running statistic lies within its stated bound of the run-order value."""
    from cogstats.stats import groups as lesson_groups

    stats = sg.stats
    idx = stats.order()
    g, lift_tol, var_a_tol, var_b_tol = stats.group_arrays(idx)
    fa = sg.to_ledger()._fact_arrays()
    for k in range(idx.size):
        n_a, m_a, v_a, n_b, m_b, v_b = lesson_groups.exact_stats(fa, k)
        assert (g.n_a[k], g.n_b[k]) == (n_a, n_b)
        assert g.mean_a[k] == m_a
        assert abs(g.mean_b[k] - m_b) <= lift_tol[k] / 2 or n_b == 0
        for mine, exact, tol in ((g.var_a[k], v_a, var_a_tol[k]), (g.var_b[k], v_b, var_b_tol[k])):
            assert math.isnan(mine) == math.isnan(exact)
            if not math.isnan(exact):
                assert abs(mine - exact) <= tol / 2, (k, mine, exact, tol)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs=run_sequences())
def test_running_statistics_within_their_bounds(runs: list) -> None:
    sg = StreamingGate(CycgraphGate())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LedgerWarning)
        for r in runs:
            sg.record(r[0], r[1], r[2])
    _bounds_hold(sg)


@pytest.mark.parametrize("kind", ["grid", "near_constant", "continuous"])
def test_running_statistics_within_their_bounds_on_long_ledgers(kind: str) -> None:
    """Half the stated bound still holds (the bounds are doubled) over 3000 runs, where
    the sums of squares cancel most: scores nearly constant."""
    rng = np.random.default_rng(9)
    sg = StreamingGate(CycgraphGate())
    for i in range(3000):
        if kind == "grid":
            score = float(rng.integers(0, 21) * 0.05)
        elif kind == "near_constant":
            score = 0.65 if rng.random() < 0.98 else 0.7
        else:
            score = float(rng.random())
        ids = [f"L{j}" for j in rng.choice(40, 4, replace=False)] + (["all"] if i % 3 else [])
        sg.record(f"r{i}", score, ids)
    _bounds_hold(sg)


# ---------------------------------------------------------------------- evidence
evidence_settings = st.fixed_dictionaries(
    {
        "method": st.sampled_from(["lift", "welch"]),
        "alpha": st.sampled_from([0.05, 0.2]),
        "promote_margin": st.sampled_from([0.0, 0.05]),
        "evict_margin": st.sampled_from([0.0, 0.05]),
        "min_trials": st.integers(1, 3),
        "multiplicity": st.sampled_from(["none", "bonferroni", "holm", "bh", "by"]),
        "hold_unidentifiable": st.booleans(),
        "max_baseline_runs": st.sampled_from([None, 15]),
    }
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs=run_sequences(), options=evidence_settings, max_extra=st.sampled_from([None, 4]))
def test_evidence_lift_welch_stream_equals_batch(
    runs: list, options: dict, max_extra: int | None
) -> None:
    if max_extra is not None:
        options = {**options, "max_trials": options["min_trials"] + max_extra}
    if options["method"] == "welch":
        options = {**options, "options": {"noise_floor_sd": 0.05}}
    check_stream(EvidenceGate(**options), runs)


def test_lift_with_constant_groups_is_recomputed_as_the_batch_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Scores constant within each group: the batch's standard error is exactly 0 (its
    own branch), the running sums' a rounding residue; the lesson is recomputed."""
    calls = []
    original = streaming_module.StreamingStats.batch_group_arrays
    monkeypatch.setattr(
        streaming_module.StreamingStats,
        "batch_group_arrays",
        lambda self, js: calls.append(list(js)) or original(self, js),
    )
    runs = [
        ("r1", 0.7, ["a"], {}),
        ("r2", 0.7, ["a"], {}),
        ("r3", 0.35, [], {}),
        ("r4", 0.35, [], {}),
        ("r5", 0.35, ["b"], {}),
        ("r6", 0.35, ["b"], {}),
    ]
    for pm in (0.0, 0.35):
        check_stream(EvidenceGate(method="lift", min_trials=2, promote_margin=pm), runs)
    assert calls


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs=run_sequences(), method=st.sampled_from(["lift", "welch"]))
def test_evidence_group_sequential_stream_equals_batch(runs: list, method: str) -> None:
    gate = EvidenceGate(method=method, sequential="group", min_trials=2, max_trials=8, alpha=0.2)
    check_stream(gate, runs)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    runs=run_sequences(logged=True),
    propensity=st.sampled_from(["auto", "none", "logged"]),
    outcome_model=st.sampled_from(["running_means", "none"]),
    sequential=st.sampled_from(["anytime", "fixed"]),
)
def test_evidence_confseq_stream_equals_batch(
    runs: list, propensity: str, outcome_model: str, sequential: str
) -> None:
    gate = EvidenceGate(
        method="confseq",
        sequential=sequential,
        alpha=0.2,
        min_trials=2,
        options={"propensity": propensity, "outcome_model": outcome_model, "target_runs": 10},
    )
    check_stream(gate, runs)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    runs=run_sequences(covariates=True),
    covariates=st.sampled_from([(), ("d",), ("d", "fam")]),
    multiplicity=st.sampled_from(["none", "bh"]),
    hold=st.booleans(),
)
def test_evidence_ols_stream_equals_batch(
    runs: list, covariates: tuple, multiplicity: str, hold: bool
) -> None:
    gate = EvidenceGate(
        method="ols",
        options={"cov": "nonrobust", "covariates": covariates},
        alpha=0.2,
        min_trials=2,
        multiplicity=multiplicity,
        hold_unidentifiable=hold,
    )
    check_stream(gate, runs)


def test_ols_streams_on_a_larger_ledger_without_falling_back() -> None:
    """Noisy scores, a numeric and a categorical covariate: the streaming fit is used."""
    rng = np.random.default_rng(5)
    effects = rng.normal(0, 0.1, 12)
    runs = []
    for i in range(400):
        ids = [j for j in range(12) if rng.random() < 0.3]
        d = float(rng.normal())
        fam = str(rng.choice(["x", "y", "z"]))
        y = 0.5 + effects[ids].sum() + 0.05 * d + 0.05 * (fam == "y") + rng.normal(0, 0.1)
        runs.append(
            (f"r{i}", float(np.clip(y, 0, 1)), [f"L{j}" for j in ids], {"d": d, "fam": fam})
        )
    gate = EvidenceGate(
        method="ols", options={"cov": "nonrobust", "covariates": ("d", "fam")}, alpha=0.05
    )
    sg = StreamingGate(gate)
    for r in runs[:300]:
        sg.record(r[0], r[1], r[2], **r[3])
    before = sg.stats.fallbacks  # looks that ran the batch fit (or check) on the ledger
    for r in runs[300:]:
        sg.record(r[0], r[1], r[2], **r[3])
    ledger = sg.to_ledger()
    assert_same(sg.report(), gate.evaluate(ledger))
    assert sg.stats.fallbacks - before <= 5  # only near ties fall back to the batch fit
    assert set(sg.report().to_frame()["decision"]) >= {"promote", "evict"}


def test_regression_statistics_are_the_batch_design_cross_products() -> None:
    from cogstats.estimators.identifiability import covariate_design

    gate = EvidenceGate(method="ols", options={"cov": "nonrobust", "covariates": ("d", "fam")})
    sg = StreamingGate(gate)
    rng = np.random.default_rng(2)
    for i in range(50):
        ids = [f"L{j}" for j in range(5) if rng.random() < 0.4]
        sg.record(
            f"r{i % 40}",
            float(rng.random()),
            ids,
            d=float(rng.normal()),
            fam=str(rng.choice(["b", "c", "a"] if i > 20 else ["b", "c"])),
        )
    reg = sg.stats.regression()
    ledger = sg.to_ledger()
    controls = covariate_design(ledger, ("d", "fam"))
    x = np.hstack([np.ones((len(ledger), 1)), controls.matrix, ledger.design().dense()])
    assert reg.columns == ("const", *controls.columns, *ledger.fact_ids)
    np.testing.assert_allclose(reg.xtx, x.T @ x, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(reg.xty, x.T @ ledger.scores, rtol=1e-12, atol=1e-12)
    assert math.isclose(reg.yty, float(ledger.scores @ ledger.scores), rel_tol=1e-12)


# ---------------------------------------------------------------------- state
def _some_runs(n: int, seed: int = 0) -> list:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        ids = [f"L{j}" for j in range(6) if rng.random() < 0.35]
        out.append((f"r{i}", float(rng.integers(0, 21) * 0.05), ids, {"d": float(rng.normal())}))
    return out


@pytest.mark.parametrize(
    "gate",
    [
        CycgraphGate(),
        CycgraphGate(decision_rule="margin", min_trials=2, max_trials=6),
        EvidenceGate(method="welch", multiplicity="bh"),
        EvidenceGate(method="lift", hold_unidentifiable=False),
        EvidenceGate(method="confseq", sequential="anytime", options={"target_runs": 20}),
        EvidenceGate(method="ols", options={"cov": "nonrobust", "covariates": ("d",)}),
    ],
    ids=["cycgraph", "margin", "welch", "lift", "confseq", "ols"],
)
def test_save_load_round_trip(gate: Any, tmp_path: Path) -> None:
    runs = _some_runs(60)
    sg = StreamingGate(gate)
    for r in runs[:35]:
        sg.record(r[0], r[1], r[2], **r[3])
    sg.record("r3", 0.95, ["L0"], d=0.5)  # a replacement before saving
    path = sg.save(tmp_path / "state.npz")
    back = StreamingGate.load(path)
    assert back.gate == gate
    assert back.report().to_frame().equals(sg.report().to_frame())
    for r in runs[35:]:
        assert (
            back.record(r[0], r[1], r[2], **r[3])
            .to_frame()
            .equals(sg.record(r[0], r[1], r[2], **r[3]).to_frame())
        )
    assert back.report().to_frame().equals(sg.report().to_frame())
    assert_same(back.report(), gate.evaluate(sg.to_ledger()))
    # the manifest is documented JSON
    import zipfile

    with zipfile.ZipFile(path) as zf:
        manifest = json.loads(zf.read("manifest.json"))
    assert manifest["format"] == "cogstats.streaming-gate" and manifest["version"] == 2
    assert manifest["runs"] == 35


def test_load_refuses_other_files(tmp_path: Path) -> None:
    bad = tmp_path / "x.npz"
    bad.write_text("not a zip")
    with pytest.raises(ParameterError, match="not a streaming-gate state"):
        StreamingGate.load(bad)
    sg = StreamingGate(CycgraphGate())
    path = sg.save(tmp_path / "s.npz")
    import zipfile

    with zipfile.ZipFile(path) as zf:
        items = {n: zf.read(n) for n in zf.namelist()}
    manifest = json.loads(items["manifest.json"])
    manifest["version"] = 99
    items["manifest.json"] = json.dumps(manifest).encode()
    with zipfile.ZipFile(tmp_path / "v99.npz", "w") as zf:
        for n, data in items.items():
            zf.writestr(n, data)
    with pytest.raises(ParameterError, match="version 99"):
        StreamingGate.load(tmp_path / "v99.npz")


def test_candidates_can_change_and_absent_lessons_are_held() -> None:
    gate = CycgraphGate(decision_rule="margin", min_trials=1)
    sg = StreamingGate(gate, candidates=["a", "zzz"])
    sg.record("r1", 0.4, [])
    assert sg.record("r2", 0.9, ["a", "b"]).promoted == ("a",)
    ledger = sg.to_ledger()
    assert_same(sg.report(), gate.evaluate(ledger, ["a", "zzz"]))
    sg.candidates = ["b"]  # a service retired "a"
    assert_same(sg.report(), gate.evaluate(ledger, ["b"]))
    assert_same(sg.report(candidates=["zzz", "a"]), gate.evaluate(ledger, ["zzz", "a"]))
    sg.candidates = None
    assert_same(sg.report(), gate.evaluate(ledger))


def test_replacement_keeps_the_position_and_can_remove_a_lesson() -> None:
    gate = CycgraphGate(decision_rule="margin", min_trials=1)
    sg = StreamingGate(gate)
    sg.record("r1", 0.9, ["a"])
    sg.record("r2", 0.5, ["b"])
    sg.record("r3", 0.7, ["a", "b"])
    sg.record("r1", 0.2, ["c"])  # "a" leaves its first run: the lesson order changes
    ledger = sg.to_ledger()
    assert ledger.run_ids == ("r1", "r2", "r3")
    assert sg.stats.fact_ids == ledger.fact_ids == ("c", "b", "a")
    assert_same(sg.report(), gate.evaluate(ledger))


# ---------------------------------------------------------------------- ingest
def _write(path: Path, runs: list) -> None:
    with path.open("a") as fh:
        for r in runs:
            fh.write(json.dumps({"run_id": r[0], "score": r[1], "fact_ids": r[2], **r[3]}) + "\n")


def test_ingest_follows_a_growing_file_and_never_counts_a_run_twice(tmp_path: Path) -> None:
    runs = _some_runs(40, seed=3)
    path = tmp_path / "runs.jsonl"
    _write(path, runs[:10])
    gate = CycgraphGate(min_trials=2)
    sg = StreamingGate(gate)
    first = sg.ingest(path)
    assert (first.recorded, first.lines, first.line) == (10, 10, 10)
    assert first.offset == path.stat().st_size
    assert sg.ingest(path).recorded == 0  # nothing new
    _write(path, runs[10:25])
    with path.open("a") as fh:
        fh.write('{"run_id": "partial", "sco')  # a writer in the middle of a line
    result = sg.ingest(path)
    assert result.recorded == 15 and len(sg) == 25
    # restart from the saved state, the writer finishes its line and writes more
    back = StreamingGate.load(sg.save(tmp_path / "state.npz"))
    with path.open("a") as fh:
        fh.write('re": 0.5, "fact_ids": ["L1"]}\n')
    _write(path, runs[25:])
    assert back.ingest(path).recorded == 16
    expected = Ledger.from_records(
        [{"run_id": r[0], "score": r[1], "fact_ids": r[2], **r[3]} for r in runs[:25]]
        + [{"run_id": "partial", "score": 0.5, "fact_ids": ["L1"]}]
        + [{"run_id": r[0], "score": r[1], "fact_ids": r[2], **r[3]} for r in runs[25:]]
    )
    assert back.to_ledger().frame.equals(expected.frame)
    assert_same(back.report(), gate.evaluate(expected))


def test_ingest_reports_a_bad_line_and_keeps_what_came_before(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    _write(path, _some_runs(3))
    with path.open("a") as fh:
        fh.write('{"run_id": "bad", "score": 1.5, "fact_ids": ["L1"]}\n')
    _write(path, _some_runs(5, seed=1)[3:])
    sg = StreamingGate(CycgraphGate())
    with pytest.raises(LedgerError, match=r"row 4, field 'score'.*line 4") as info:
        sg.ingest(path)
    assert info.value.row == 4 and info.value.field == "score"
    assert len(sg) == 3  # the good lines before it are recorded
    offset, line = sg.marker(path)
    assert line == 3 and offset == len(b"".join(path.read_bytes().splitlines(True)[:3]))
    with pytest.raises(LedgerError, match="line 4"):  # raise: the line is read again
        sg.ingest(path)
    result = sg.ingest(path, on_error="skip")
    assert [(s.line, "score" in s.error) for s in result.skipped] == [(4, True)]
    assert result.recorded == 2 and len(sg) == 5
    assert sg.skipped == result.skipped
    assert sg.ingest(path, on_error="skip").skipped == ()  # never retried
    back = StreamingGate.load(sg.save(tmp_path / "s.npz"))
    assert back.skipped == sg.skipped and back.marker(path) == sg.marker(path)


def test_ingest_refuses_a_replaced_file(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    _write(path, _some_runs(4))
    sg = StreamingGate(CycgraphGate())
    sg.ingest(path)
    path.write_text('{"run_id": "x", "score": 0.5}\n')
    with pytest.raises(ParameterError, match="truncated or replaced"):
        sg.ingest(path)
    _write(path, _some_runs(8))  # longer again, but other first bytes
    with pytest.raises(ParameterError, match="first bytes changed"):
        sg.ingest(path)


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ("{not json", None),
        ('{"run_id": 3, "score": 0.5}', "run_id"),
        ('{"run_id": "a", "score": 0.5, "fact_ids": "L1"}', "fact_ids"),
        ('{"run_id": "a", "score": 0.5, "score": 0.6}', "score"),
        ("[1, 2]", None),
    ],
)
def test_ingest_names_the_line_and_field(tmp_path: Path, line: str, field: str | None) -> None:
    path = tmp_path / "runs.jsonl"
    path.write_text('{"run_id": "ok", "score": 0.5}\n' + line + "\n")
    sg = StreamingGate(CycgraphGate())
    with pytest.raises(LedgerError, match="line 2") as info:
        sg.ingest(path)
    assert info.value.row == 2 and info.value.field == field and len(sg) == 1


# ---------------------------------------------------------------------- errors
def test_record_validates_like_the_ledger() -> None:
    sg = StreamingGate(CycgraphGate())
    with pytest.raises(LedgerError, match="field 'score'.*finite number in"):
        sg.record("r1", 1.5, ["a"])
    with pytest.raises(LedgerError, match="field 'run_id'"):
        sg.record(7, 0.5, ["a"])  # type: ignore[arg-type]
    with pytest.raises(LedgerError, match=r"field 'fact_ids'.*fact_ids\[0\]"):
        sg.record("r1", 0.5, [""])
    sg.record("r1", 0.5, ["a"], family="x")
    with pytest.raises(LedgerError, match="field 'family'.*one column holds one type"):
        sg.record("r2", 0.5, ["a"], family=3)
    with pytest.warns(LedgerWarning, match="counts once"):
        sg.record("r2", 0.5, ["a", "a"])
    assert len(sg) == 2 and sg.stats.trials(["a"]).tolist() == [2]


def test_ols_refuses_a_run_without_its_covariate() -> None:
    gate = EvidenceGate(method="ols", options={"cov": "nonrobust", "covariates": ("d",)})
    sg = StreamingGate(gate)
    with pytest.raises(LedgerError, match="field 'd'.*needs this covariate in every run"):
        sg.record("r1", 0.5, ["a"])
    assert len(sg) == 0


@pytest.mark.parametrize(
    ("gate", "match"),
    [
        (EvidenceGate(method="ols"), r"'cov': 'nonrobust'.*got cov='HC3' \(the default\)"),
        (EvidenceGate(method="ols", options={"cov": "HC3"}), "set options=.*nonrobust"),
        (
            EvidenceGate(method="ols", options={"cov": "cluster", "cluster": "fam"}),
            "classical covariance",
        ),
        (EvidenceGate(method="permutation"), r"method in \['lift', 'welch', 'ols', 'confseq'\]"),
        (EvidenceGate(method="anytime_ols", sequential="anytime"), "got method 'anytime_ols'"),
        (AuditGate(), "cannot stream gate 'audit'"),
    ],
)
def test_unsupported_gates_and_settings_are_named(gate: Any, match: str) -> None:
    with pytest.raises(ParameterError, match=match):
        StreamingGate(gate)


def test_bad_arguments() -> None:
    with pytest.raises(ParameterError, match="gate object"):
        StreamingGate(CycgraphGate)
    with pytest.raises(ParameterError, match="candidates must be a sequence"):
        StreamingGate(CycgraphGate(), candidates="a")
    with pytest.raises(ParameterError, match="must not repeat"):
        StreamingGate(CycgraphGate(), candidates=["a", "a"])
    with pytest.raises(ParameterError, match="on_error"):
        StreamingGate(CycgraphGate()).ingest("x.jsonl", on_error="ignore")  # type: ignore[arg-type]


# ---------------------------------------------------------------------- protocol
def test_a_gate_of_ones_own_streams_through_a_registered_adapter() -> None:
    """The protocol the ``recommended`` gate will use: an adapter keyed by registry name
    that reads the regression statistics."""
    from dataclasses import dataclass

    from cogstats.gates import GATES, register_gate

    @register_gate("count_gate_test", description="promotes lessons in 3+ runs (a test)")
    @dataclass(frozen=True)
    class CountGate:
        at: int = 3

        def evaluate(self, ledger: Ledger, candidates: Any = None, *, rng: Any = None) -> Any:
            ids = list(ledger.fact_ids if candidates is None else candidates)
            trials = dict(ledger.fact_stats().select("fact_id", "trials").iter_rows())
            return _count_report(ids, [trials.get(f, 0) for f in ids], self.at)

    class CountAdapter(StreamingAdapter):
        regression_covariates = ()

        def __init__(self, gate: CountGate) -> None:
            self.gate = gate

        def judge(self, stats: Any, candidates: Any) -> GateReport:
            ids = list(stats.fact_ids if candidates is None else candidates)
            reg = stats.regression()  # X'X over [1, lessons]: its diagonal is the trials
            diag = dict(zip(reg.columns[1:], np.diag(reg.xtx)[1:].tolist(), strict=True))
            return _count_report(ids, [int(diag.get(f, 0)) for f in ids], self.gate.at)

    register_streaming("count_gate_test")(CountAdapter)
    try:
        gate = CountGate()
        check_stream(gate, [(f"r{i}", 0.5, ["a"] if i % 2 else ["a", "b"], {}) for i in range(8)])
        sg = StreamingGate(gate)
        sg.record("r1", 0.5, ["a"])
        assert StreamingGate.load(sg.save(Path(_tmp()) / "s.npz")).gate == gate
    finally:
        del STREAMING_ADAPTERS["count_gate_test"]
        GATES.unregister("count_gate_test")


def _count_report(ids: list[str], trials: list[int], at: int) -> GateReport:
    frame = pl.DataFrame(
        {
            "fact_id": ids,
            "decision": ["promote" if t >= at else "hold" for t in trials],
            "trials": trials,
        },
        schema={"fact_id": pl.String, "decision": pl.String, "trials": pl.Int64},
    )
    return GateReport("count_gate_test", frame)


def _tmp() -> str:
    import tempfile

    return tempfile.mkdtemp()


def test_fixed_prompt_size_collinearity_needs_no_batch_check() -> None:
    """Every run carries exactly 3 lessons: the lesson columns sum to the intercept, every
    lesson is exactly collinear, in the batch's decomposition and in the cross-products,
    so the streaming check is trusted (no fallback) and agrees."""
    rng = np.random.default_rng(4)
    runs = [
        (f"r{i}", float(rng.random()), [f"L{j}" for j in rng.choice(10, 3, replace=False)], {})
        for i in range(60)
    ]
    gate = EvidenceGate(method="welch", min_trials=2)
    sg = check_stream(gate, runs)
    assert sg.stats.fallbacks == 0
    assert set(sg.report().to_frame()["identifiable"].to_list()) == {False}


# ---------------------------------------------------------------------- state version 1
V1 = Path(__file__).resolve().parents[1] / "data" / "streaming"


def _v1_runs() -> list[tuple[str, float, list[str], dict[str, Any]]]:
    """The runs of tests/data/streaming/make_v1_states.py (same seed, same draws)."""
    rng = np.random.default_rng(20261202)
    runs = []
    for i in range(30):
        ids = [f"L{j}" for j in range(5) if rng.random() < 0.4]
        runs.append((f"r{i}", float(rng.integers(0, 21) * 0.05), ids, {"d": float(rng.normal())}))
    return runs


@pytest.mark.parametrize(
    ("name", "gate"),
    [
        ("cycgraph", CycgraphGate(min_trials=2)),
        ("confseq", EvidenceGate(method="confseq", min_trials=2)),
        ("ols", EvidenceGate(method="ols", options={"cov": "nonrobust", "covariates": ("d",)})),
    ],
)
def test_a_version_1_state_loads_and_goes_on(name: str, gate: Any, tmp_path: Path) -> None:
    """A state written by the code before the statistics package (format version 1:
    confseq's sums under adapter/) loads, reports as the batch gate, and goes on recording
    exactly as a gate that saw every run; saved again it is version 2."""
    import zipfile

    path = V1 / f"streaming_state_v1_{name}.npz"
    with zipfile.ZipFile(path) as zf:
        assert json.loads(zf.read("manifest.json"))["version"] == 1
    back = StreamingGate.load(path)
    assert back.gate == gate and len(back) == 20
    assert_same(back.report(), gate.evaluate(back.to_ledger()))
    runs = _v1_runs()
    fresh = StreamingGate(gate)
    for run_id, score, ids, covs in runs[:20]:
        fresh.record(run_id, score, ids, **covs)
    fresh.record("r3", 0.95, ["L0"], d=0.5)
    assert back.report().to_frame().equals(fresh.report().to_frame())
    for run_id, score, ids, covs in runs[20:]:
        a = back.record(run_id, score, ids, **covs).to_frame()
        assert a.equals(fresh.record(run_id, score, ids, **covs).to_frame()), run_id
    again = back.save(tmp_path / "v2.npz")
    with zipfile.ZipFile(again) as zf:
        assert json.loads(zf.read("manifest.json"))["version"] == 2
        assert any(n.startswith("confseq/") for n in zf.namelist()) == (name == "confseq")
    assert StreamingGate.load(again).report().to_frame().equals(back.report().to_frame())
