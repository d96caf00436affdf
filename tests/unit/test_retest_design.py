"""The recommended preset's design pieces (issue 18), each against a hand-computable case.

- duplicate groups in the debiased ridge: a lesson that shares its inclusion pattern with
  others carries its group's t, which equals the t of one lesson standing for the group
  (the same ledger with the group's ids merged into one id);
- the likely-innocent re-test order (none-yet first and drawn by the uniform; highest t
  above the floor) and the likely-guilty suspect below it (its own t only; only into a
  place the prompt leaves empty);
- the baseline kept by the fill and by the admitted lessons of the verified block;
- the runs before the coming one (the context's run, else the ledger);
- the rename: a state saved as ``recommended_v2`` loads as ``recommended`` with a
  warning, and reports as the saved gate did; one saved by the first recommended gate
  (``recommended_v1``, or ``recommended`` with that gate's options) is refused, naming
  the cogstats version that wrote it.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from cogstats import Ledger
from cogstats._version import __version__
from cogstats.estimators.debiased_ridge import duplicate_groups, ridge_fit, ridge_statistics
from cogstats.gates import LifecycleGate, StreamingGate, make_gate
from cogstats.gates.streaming import _state
from cogstats.lessons import lesson_table
from cogstats.retrieval import InProgressFirst
from cogstats.retrieval._base import (
    fill_candidates,
    likely_guilty,
    likely_innocent,
    runs_before,
    verified_block,
)


def _ledger(merge: bool) -> Ledger:
    """60 runs: P and Q always together (merged into PQ when ``merge``), a and b at random."""
    rng = np.random.default_rng(3)
    recs = []
    for i in range(60):
        pq = bool(rng.random() < 0.4)
        a, b = bool(rng.random() < 0.5), bool(rng.random() < 0.5)
        y = 0.6 - 0.25 * pq + 0.05 * a + rng.normal(0, 0.05)
        facts = (["PQ"] if merge else ["P", "Q"]) if pq else []
        facts += ["a"] * a + ["b"] * b
        recs.append({"run_id": f"r{i}", "score": float(np.clip(y, 0, 1)), "fact_ids": facts})
    return Ledger.from_records(recs)


def test_duplicate_group_members_carry_the_group_t() -> None:
    """P and Q share every run: each carries the t of the merged lesson PQ (to 1e-12)."""
    split, merged = _ledger(False), _ledger(True)
    st = ridge_statistics(split)
    rep = duplicate_groups(st.gram, st.n_fixed, st.runs)
    ids = list(st.fact_ids)
    assert rep[ids.index("Q")] == ids.index("P") and rep[ids.index("a")] == ids.index("a")
    grouped = ridge_fit(st, group_duplicates=True)
    plain = ridge_fit(st)
    one = ridge_fit(ridge_statistics(merged))
    at = {f: i for i, f in enumerate(ridge_statistics(merged).fact_ids)}
    for f in ("P", "Q"):
        i = ids.index(f)
        assert not grouped.identifiable[i] and np.isnan(grouped.estimate[i])
        assert grouped.t[i] == pytest.approx(float(one.t[at["PQ"]]), abs=1e-12)
        assert np.isnan(plain.t[i])  # without groups: held, no t at all
    for f in ("a", "b"):  # the others: as in the merged ledger
        i = ids.index(f)
        assert grouped.t[i] == pytest.approx(float(one.t[at[f]]), abs=1e-12)
        assert grouped.estimate[i] == pytest.approx(float(one.estimate[at[f]]), abs=1e-12)
    assert float(one.t[at["PQ"]]) < -5  # the group is clearly harmful


def test_the_lifecycle_gate_suspends_a_harmful_group_on_its_t() -> None:
    report = LifecycleGate().evaluate(_ledger(False)).to_frame()
    rows = {r["fact_id"]: r for r in report.iter_rows(named=True)}
    for f in ("P", "Q"):
        assert rows[f]["decision"] == "suspend" and rows[f]["why"] == "suspect"
        assert rows[f]["identifiable"] is False and rows[f]["t_stat"] < -5
        assert rows[f]["estimate"] is None  # not estimable apart: not convicted


def _suspects(rows: list[tuple[str, float | None, bool]]) -> pl.DataFrame:
    return lesson_table(
        [
            {"id": f, "status": "suspended", "created_at": i, "gate_t": t, "gate_t_own": own}
            for i, (f, t, own) in enumerate(rows)
        ]
    )


def test_likely_innocent_order() -> None:
    t = _suspects([("a", -1.0, True), ("b", 0.4, True), ("g", -3.0, False), ("h", -3.5, True)])
    ids = ["a", "b", "g", "h"]
    assert likely_innocent(t, ids, 2.0) == ["b"]  # highest t
    assert likely_innocent(t, ["g", "h"], 2.0) == []  # both below the floor
    assert likely_innocent(t, ["g"], 4.0) == ["g"]  # above a lower floor
    # below the floor: the suspect with its own t is the likely-guilty one, re-tested
    # only into an empty place; a group's t below the floor is never re-tested
    assert likely_guilty(t, ["g", "h"], 2.0) == ["h"] and likely_guilty(t, ["g"], 2.0) == []
    none = _suspects([("x", None, False), ("y", None, False), ("z", 5.0, True)])
    # no t yet goes first, one of them drawn by the uniform (the int(u * m)-th oldest)
    assert likely_innocent(none, ["x", "y", "z"], 2.0, u=0.2) == ["x"]
    assert likely_innocent(none, ["x", "y", "z"], 2.0, u=0.7) == ["y"]


def test_the_re_test_slot_takes_the_likely_innocent_suspect() -> None:
    store = [
        {"id": "c1", "status": "candidate", "created_at": 1},
        {"id": "s1", "status": "suspended", "created_at": 2, "status_since": 3, "gate_t": -1.2},
        {"id": "s2", "status": "suspended", "created_at": 3, "status_since": 3, "gate_t": 0.1},
    ]
    for row in store[1:]:
        row["gate_t_own"] = True
    pol = InProgressFirst(
        max_facts=4, candidate_slots=2, retest_order="likely_innocent", retest_prob=1.0
    )
    sel = pol.select_with_uniforms(store, Ledger(), np.array([0.3, 0.9]), context={"run": 4})
    assert sel.fact_ids == ("c1", "s2")
    assert sel.propensities == {"c1": 1.0, "s2": 1.0}  # the one eligible suspect, at 1


def test_a_likely_guilty_suspect_is_re_tested_only_into_an_empty_place() -> None:
    guilty = {"id": "s1", "status": "suspended", "created_at": 9, "status_since": 3}
    guilty.update(gate_t=-3.0, gate_t_own=True)
    cands = [{"id": f"c{i}", "status": "candidate", "created_at": i} for i in range(3)]
    pol = InProgressFirst(
        max_facts=4, candidate_slots=3, retest_order="likely_innocent", retest_prob=1.0
    )
    u = np.array([0.3, 0.9])
    room = pol.select_with_uniforms([*cands, guilty], Ledger(), u, context={"run": 4})
    assert room.fact_ids == ("c0", "c1", "c2", "s1")  # a place left: it takes it
    assert room.propensities == {"c0": 1.0, "c1": 1.0, "c2": 1.0, "s1": 1.0}
    full = [*cands, {"id": "c3", "status": "candidate", "created_at": 3}, guilty]
    sel = InProgressFirst(
        max_facts=3, candidate_slots=3, retest_order="likely_innocent", retest_prob=1.0
    ).select_with_uniforms(full, Ledger(), u, context={"run": 4})
    assert sel.fact_ids == ("c0", "c1", "c2") and sel.propensities is None  # none: not in


def test_the_fill_and_the_admitted_keep_a_baseline() -> None:
    ledger = Ledger.from_records(
        [
            {"run_id": "r1", "score": 0.5, "fact_ids": ["a", "b"]},
            {"run_id": "r2", "score": 0.5, "fact_ids": ["a"]},
            {"run_id": "r3", "score": 0.5, "fact_ids": []},
        ]
    )
    cands = pl.DataFrame({"id": ["a", "b", "c"], "created_at": [1, 2, 3]})
    # a: 2 runs with, 1 without -> out; b: 1 with, 2 without -> in; c: new -> in
    assert fill_candidates(cands, [], ledger, 3) == ["c", "b"]
    adm = lesson_table(
        [
            {"id": "a", "status": "admitted", "created_at": 1},
            {"id": "b", "status": "admitted", "created_at": 2},
            {"id": "v", "status": "verified", "created_at": 3},
        ]
    )
    assert verified_block(adm, ledger)["id"].to_list() == ["v", "b"]  # verified always in
    # counted from the coming run when the context gives it (unrecorded empty runs count)
    assert verified_block(adm, ledger, before=4)["id"].to_list() == ["v", "b", "a"]
    assert runs_before(ledger, None) == 3 and runs_before(ledger, {"run": 6}) == 5


def _renamed_state(
    tmp_path: Path, gate: object, old_name: str, options: dict | None = None
) -> tuple[Path, StreamingGate]:
    """A state saved today, its manifest naming the gate (and options) as an older one did."""
    sg = StreamingGate(gate)
    rng = np.random.default_rng(1)
    for i in range(40):
        facts = [f"L{j}" for j in rng.choice(6, 2, replace=False)]
        sg.record(f"r{i}", float(rng.random()), facts, difficulty_proxy=float(rng.random()))
    path = sg.save(tmp_path / "state.npz")
    manifest, runs, arrays = _state.read_state(path)
    saved = {**manifest["gate"]["options"], **(options or {})}
    manifest = {**manifest, "gate": {**manifest["gate"], "name": old_name, "options": saved}}
    _state.write_state(path, manifest, runs, arrays)
    return path, sg


def test_a_state_saved_by_the_first_recommended_gate_is_refused_naming_its_version(
    tmp_path: Path,
) -> None:
    from cogstats._validation import ParameterError

    for name, options in (("recommended_v1", None), ("recommended", {"max_trials": None})):
        path, _ = _renamed_state(tmp_path, LifecycleGate(), name, options)
        with pytest.raises(ParameterError) as err:
            StreamingGate.load(path)
        message = str(err.value)
        assert f"saved by cogstats {__version__} with the first recommended gate" in message
        assert str(path) in message and "LifecycleGate()" in message


def test_a_state_saved_as_recommended_v2_loads_as_recommended(tmp_path: Path) -> None:
    path, sg = _renamed_state(tmp_path, LifecycleGate(), "recommended_v2")
    with pytest.warns(UserWarning, match="loaded as 'recommended'"):
        back = StreamingGate.load(path, gate=make_gate("recommended"))
    assert isinstance(back.gate, LifecycleGate)
    assert back.report().to_frame().equals(sg.report().to_frame())
    # a state saved under today's names loads without a warning
    today = sg.save(tmp_path / "today.npz")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert isinstance(StreamingGate.load(today).gate, LifecycleGate)


def test_a_streaming_gate_with_named_covariates_reports_before_its_first_run() -> None:
    """No run yet: nothing to adjust for and nothing missing; a named covariate the first
    run lacks is refused, with 'did you mean'."""
    from cogstats._validation import ParameterError

    sg = StreamingGate(LifecycleGate(covariates=("d",)))
    assert sg.report().to_frame().height == 0
    sg.record("r1", 0.5, ["a"], d=0.3)
    assert sg.report().to_frame()["fact_id"].to_list() == ["a"]
    typo = StreamingGate(LifecycleGate(covariates=("dd",)))
    with pytest.raises(ParameterError, match="did you mean 'd'"):
        typo.record("r1", 0.5, ["a"], d=0.3)  # refused at the door
