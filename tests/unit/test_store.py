"""cogstats.LessonStore: the API, its settings, idempotent records, the recorded demo."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest

import cogstats
from cogstats import _codes as C
from cogstats._validation import LedgerError
from cogstats.retrieval import InProgressFirst
from cogstats.store import (
    Cadence,
    Durability,
    LessonStore,
    ReadOnlyStoreError,
    RunConflictError,
    StoreCore,
    StoreSettingsError,
    UnknownLessonError,
)

ROOT = Path(__file__).resolve().parents[2]


def _open(path: Path, **kw: Any) -> LessonStore:
    return LessonStore.open(path, preset="recommended", max_facts=4, candidate_slots=2, **kw)


def _runs(n: int, seed: int = 3) -> list[tuple[str, float, list[str], dict[str, Any]]]:
    """Runs of lessons a..f (a harmful), with the difficulty proxy."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        facts = [f for f in "abcdef" if rng.random() < 0.4]
        d = float(rng.normal(0, 0.1))
        y = float(np.clip(0.6 + d - 0.25 * ("a" in facts) + rng.normal(0, 0.03), 0, 1))
        out.append((f"r{i}", y, facts, {"difficulty_proxy": d}))
    return out


def test_the_face_exports_the_store() -> None:
    assert cogstats.LessonStore is LessonStore


def test_a_store_in_three_calls(tmp_path: Path) -> None:
    with _open(tmp_path / "s") as store:
        row = store.add("cite-sources", family="web")
        assert row["fact_id"] == "cite-sources" and row["status"] == "candidate"
        assert store.add("cite-sources") == row  # idempotent on the id
        sel = store.select(context={"family": "web"}, rng=7)
        assert sel.fact_ids == ("cite-sources",)
        assert store.record("run-1", 0.7, sel.fact_ids, {"difficulty_proxy": 0.3}) == []
        assert store.runs == len(store) == 1
        assert store.lessons()["trials"].to_list() == [1]
        assert store.lessons().columns[:9] == [
            "fact_id",
            "status",
            "since",
            "trials",
            "estimate",
            "std_error",
            "t",
            "why",
            "reason",
        ]
        assert store.events().columns == [
            "run",
            "run_id",
            "fact_id",
            "from",
            "to",
            "decision",
            "reason",
            "why",
        ]
        ledger = store.ledger()
        assert list(ledger.run_ids) == ["run-1"] and ledger.covariates == ["difficulty_proxy"]
    with pytest.raises(ReadOnlyStoreError, match="closed"):
        store.add("x")
    assert not (tmp_path / "s" / "store.lock").exists()
    settings = json.loads((tmp_path / "s" / "store.json").read_text())
    assert settings["preset"] == "recommended"
    assert settings["policy"]["options"]["max_facts"] == 4


def test_a_bad_lesson_id_and_a_bad_run_are_refused_naming_the_field(tmp_path: Path) -> None:
    with _open(tmp_path) as store:
        with pytest.raises(LedgerError, match="fact_ids"):
            store.add("")
        with pytest.raises(LedgerError, match="score"):
            store.record("r1", 1.5, [])
        with pytest.raises(LedgerError, match="fact_ids"):
            store.record("r1", 0.5, "abc")
        assert store.runs == 0
        assert (tmp_path / "journal.jsonl").read_bytes() == b""  # nothing written


def test_settings_are_stored_and_a_reopen_with_others_is_refused(tmp_path: Path) -> None:
    _open(tmp_path).close()
    with pytest.raises(StoreSettingsError, match=r"max_facts: 4 \(stored\) != 5 \(given\)"):
        LessonStore.open(tmp_path, preset="recommended", max_facts=5, candidate_slots=2)
    with pytest.raises(StoreSettingsError, match="every: 1 .stored. != 2 .given."):
        _open(tmp_path, cadence=Cadence(every=2))
    with pytest.raises(StoreSettingsError, match="unknown_lessons"):
        _open(tmp_path, unknown_lessons="refuse")
    with pytest.raises(StoreSettingsError, match="gate: 'recommended' .stored. != 'cycgraph'"):
        LessonStore.open(tmp_path, gate="cycgraph", policy="in_progress_first", max_facts=4)
    with LessonStore.open(tmp_path) as again:  # no settings: the stored ones
        assert again.policy.max_facts == 4
    with _open(tmp_path) as same:  # the same settings
        assert same.policy.candidate_slots == 2
    with pytest.raises(StoreSettingsError, match="needs preset="):
        LessonStore.open(tmp_path / "new")


def test_a_migration_replays_the_runs_under_the_new_settings(tmp_path: Path) -> None:
    runs = _runs(30)
    with _open(tmp_path) as store:
        for f in "abcdef":
            store.add(f)
        for r in runs:
            store.record(*r)
    with LessonStore.open(
        tmp_path, gate="cycgraph", policy="in_progress_first", max_facts=4, migrate=True
    ) as moved:
        assert moved.settings.gate["name"] == "cycgraph"
        assert list(moved.ledger().run_ids) == [r[0] for r in runs]
        fresh = StoreCore(cogstats.CycgraphGate(), InProgressFirst(max_facts=4), Cadence())
        for f in "abcdef":
            fresh.add(f)
        for r in runs:
            fresh.apply_run(*r)
        assert moved.events().drop("run_id").equals(fresh.events().drop("run_id"))
    with LessonStore.open(tmp_path, read_only=True) as reader:
        assert reader.settings.gate["name"] == "cycgraph"


def test_a_run_recorded_again_is_a_no_op_or_an_error_naming_both(tmp_path: Path) -> None:
    with _open(tmp_path, durability=Durability(snapshot_every=5)) as store:
        for f in "abcdef":
            store.add(f)
        answers = [store.record(*r) for r in _runs(30)]
        k = next(i for i, a in enumerate(answers) if a)  # a run whose look changed a status
        run_id, score, facts, covs = _runs(30)[k]
        size = (tmp_path / "journal.jsonl").stat().st_size
        assert store.record(run_id, score, facts, covs) == answers[k]  # the first answer
        assert (tmp_path / "journal.jsonl").stat().st_size == size  # nothing written
        with pytest.raises(RunConflictError, match=rf"{run_id!r} is recorded already") as err:
            store.record(run_id, min(score + 0.1, 1.0), facts, covs)
        assert str(round(score, 3))[:4] in str(err.value)  # both contents named
        with pytest.raises(RunConflictError):
            store.record(run_id, score, facts, {"difficulty_proxy": 0.0})
        assert store.runs == 30


def test_unknown_lessons_are_added_or_refused(tmp_path: Path) -> None:
    with _open(tmp_path / "add") as store:
        store.record("r1", 0.5, ["new-one"], {"difficulty_proxy": 0.0})
        row = store.lesson("new-one")
        assert row["status"] == "candidate" and row["since"] == 1 and row["trials"] == 1
    with _open(tmp_path / "refuse", unknown_lessons="refuse") as store:
        with pytest.raises(UnknownLessonError, match=r"\['new-one'\]"):
            store.record("r1", 0.5, ["new-one"], {"difficulty_proxy": 0.0})
        assert store.runs == 0
        store.add("new-one")
        store.record("r1", 0.5, ["new-one"], {"difficulty_proxy": 0.0})
        assert store.runs == 1


def test_select_takes_a_seed_or_a_generator_and_the_simulators_uniforms(tmp_path: Path) -> None:
    with LessonStore.open(
        tmp_path, gate="recommended", policy="randomized", max_facts=3, candidate_slots=3
    ) as store:
        for f in "abcdefgh":
            store.add(f)
        a = store.select(rng=5)
        assert a == store.select(rng=np.random.default_rng(5))
        assert {store.select(rng=k).fact_ids for k in range(10)} != {a.fact_ids}
        assert a.propensities is not None
        u = np.random.default_rng(1).random(store.policy.uniforms_per_run(8))
        assert store.select_with_uniforms(u) == store.select_with_uniforms(u)
        store.record("r1", 0.5, a, {"difficulty_proxy": 0.1})  # a Selection: logged
        rec = store.ledger().to_records()[0]
        assert rec["eligible_ids"] == list(a.propensities)
        assert rec["propensities"] == list(a.propensities.values())


def test_a_reader_needs_no_settings_and_changes_nothing(tmp_path: Path) -> None:
    with _open(tmp_path) as store:
        store.add("a")
        store.record("r1", 0.5, ["a"], {"difficulty_proxy": 0.0})
        with LessonStore.open(tmp_path, read_only=True) as reader:  # beside the writer
            assert reader.runs == 1 and reader.read_only
            for change in (
                lambda: reader.add("b"),
                lambda: reader.record("r2", 0.5, []),
                lambda: reader.snapshot(),
            ):
                with pytest.raises(ReadOnlyStoreError, match="read_only=True"):
                    change()
    with pytest.raises(ValueError, match="not a lesson store"):
        LessonStore.open(tmp_path / "nothing", read_only=True)


def test_a_restart_reads_the_snapshot_and_the_journal_tail(tmp_path: Path) -> None:
    """Closed and reopened every 7 runs (snapshots every 5): the same statuses, events
    and ledger as a store that ran without a stop, and as the in-memory core."""
    runs = _runs(60, seed=11)
    whole = tmp_path / "whole"
    with _open(whole) as store:
        for f in "abcdef":
            store.add(f)
        for r in runs:
            store.record(*r)
        want_events, want_lessons = store.events(), store.lessons()
    parts = tmp_path / "parts"
    for start in range(0, 60, 7):
        with _open(parts, durability=Durability(snapshot_every=5)) as store:
            if start == 0:
                for f in "abcdef":
                    store.add(f)
            for r in runs[start : start + 7]:
                store.record(*r)
    assert sorted(p.name for p in parts.iterdir() if p.suffix == ".npz") == [
        "snapshot-000000000060.npz"
    ]
    with LessonStore.open(parts, read_only=True) as back:
        assert back.events().equals(want_events)
        assert back.lessons().equals(want_lessons)
        assert list(back.ledger().run_ids) == [r[0] for r in runs]
    assert any(want_events["to"] == C.EVICTED) or any(want_events["to"] == C.SUSPENDED)


def test_the_recorded_demo_replayed_through_the_store(tmp_path: Path) -> None:
    """cycgraph's recorded demo, its prompts as recorded: after run 5 P1-P3 are out of the
    prompt (suspended or evicted) and no genuine lesson is convicted as harmful, then and
    at the last run."""
    runs = pl.read_csv(ROOT / "data" / "cycgraph_poison_demo_runs.csv")
    lessons = pl.read_csv(ROOT / "data" / "cycgraph_poison_demo_lessons.csv")
    genuine = set(lessons.filter(pl.col("kind") == "genuine")["lesson"])
    checked = []
    with LessonStore.open(tmp_path, preset="recommended", max_facts=12, candidate_slots=6) as store:
        for r in runs.iter_rows(named=True):
            for row in lessons.filter(pl.col("first_run_available") == r["run"]).iter_rows(
                named=True
            ):
                store.add(row["lesson"])
            if r["recorded"] != "yes":
                continue
            store.record(str(r["run"]), r["score"], (r["lessons_in_prompt"] or "").split())
            if r["run"] >= 5:
                status = dict(store.lessons().select("fact_id", "status").iter_rows())
                assert {status[p] for p in ("P1", "P2", "P3")} <= {C.SUSPENDED, C.EVICTED}
                shown = set(store.table()["id"]) - {
                    f for f, s in status.items() if s == C.SUSPENDED
                }
                assert not {"P1", "P2", "P3"} & shown  # out of the prompt (re-tests aside)
                convicted = store.events().filter(pl.col("reason") == C.HARMFUL)["fact_id"]
                assert not set(convicted) & genuine
                checked.append(r["run"])
        assert list(store.ledger().run_ids) == [str(k) for k in range(2, 12)]
    assert checked == list(range(5, 12))


def test_history_is_imported_without_looks_and_survives_a_restart(tmp_path: Path) -> None:
    runs = _runs(40, seed=5)
    ledger = cogstats.Ledger.from_records(
        {"run_id": r, "score": y, "fact_ids": f, **c} for r, y, f, c in runs
    )
    with _open(tmp_path, durability=Durability(snapshot_every=1000)) as store:
        assert store.import_history(ledger) == 40
        assert store.import_history(ledger) == 0  # held already: skipped
        assert store.events().height == 0  # no look after history
        assert set(store.lessons()["status"]) == {"candidate"}
        assert (tmp_path / "snapshot.json").exists()  # a restart replays none of it
        changes = store.record("live-0", 0.2, ["a"], {"difficulty_proxy": 0.0})
        events = store.events()
    assert [c.run for c in changes] == [41] * len(changes)
    with LessonStore.open(tmp_path, read_only=True) as back:
        assert back.runs == 41 and back.events().equals(events)
    fresh = StoreCore(*reversed(cogstats.recommended(max_facts=4, candidate_slots=2)), Cadence())
    for r in runs:
        fresh.apply_run(*r, look=False)
    fresh.apply_run("live-0", 0.2, ["a"], {"difficulty_proxy": 0.0})
    assert fresh.events().equals(events)
