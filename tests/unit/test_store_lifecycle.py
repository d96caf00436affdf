"""The one lifecycle wiring (cogstats.store.lifecycle): outcomes -> statuses, events, scope."""

from __future__ import annotations

import math

import polars as pl
import pytest

from cogstats import _codes as C
from cogstats.gates import OUTCOME_STATUS, OUTCOMES, LessonState
from cogstats.store.lifecycle import Cadence, Change, Lifecycle


def _report(rows: list[dict[str, object]]) -> pl.DataFrame:
    return pl.DataFrame(rows)


def test_outcome_status_is_public_and_the_codes_table() -> None:
    assert OUTCOME_STATUS is C.OUTCOME_STATUS
    assert OUTCOMES == C.OUTCOMES
    assert set(OUTCOME_STATUS) == set(OUTCOMES)


def test_every_outcome_moves_a_lesson_through_the_table() -> None:
    for outcome in OUTCOMES:
        book = Lifecycle()
        book.add("a", 1)
        if outcome == C.RELEASE:  # release moves a suspended lesson back
            book.status["a"] = C.SUSPENDED
        before = book.status["a"]
        changes = book.apply(_report([{"fact_id": "a", "decision": outcome}]), 7)
        want = OUTCOME_STATUS[outcome]
        if want is None or want == before:
            assert changes == [] and book.status["a"] == before and book.since["a"] == 1
        else:
            assert changes == [Change(7, "a", before, want, outcome, None, None)]
            assert book.status["a"] == want and book.since["a"] == 8
    assert len(book.events) == 1


def test_a_bad_decision_and_an_unknown_lesson_are_named() -> None:
    book = Lifecycle()
    book.add("a", 1)
    with pytest.raises(ValueError, match="'promoted' for 'a'"):
        book.apply(_report([{"fact_id": "a", "decision": "promoted"}]), 2)
    with pytest.raises(ValueError, match="lesson 'zz'"):
        book.apply(_report([{"fact_id": "zz", "decision": "evict"}]), 2)


def test_gate_t_from_t_stat_else_crater_t() -> None:
    book = Lifecycle()
    for f in "abc":
        book.add(f, 1)
    keys = ("fact_id", "decision", "t_stat", "crater_t", "identifiable")
    values: list[tuple[object, ...]] = [("a", "hold", -1.5, -3.0, True)]
    values.append(("b", "hold", None, -2.0, False))
    values.append(("c", "hold", None, None, None))
    rows: list[dict[str, object]] = [dict(zip(keys, v, strict=True)) for v in values]
    book.apply(_report(rows), 3)
    assert book.gate_t["a"] == -1.5 and book.gate_own["a"] is True
    assert book.gate_t["b"] == -2.0 and book.gate_own["b"] is False
    assert math.isnan(book.gate_t["c"])
    t = book.table()
    assert t["gate_t"].to_list()[:2] == [-1.5, -2.0]
    assert t["gate_t_own"].to_list() == [True, False, False]


def test_scope_and_table_follow_the_simulator() -> None:
    book = Lifecycle(shows_suspended=False)
    for f, st in zip("abcdef", C.LESSON_STATUSES, strict=True):
        book.add(f, 1, status=st)
    # judged: candidate, admitted, suspended; shown: candidate, verified, admitted
    assert book.judged() == ["a", "b", "f"]
    assert book.shown() == ["a", "b", "c"]
    recheck = Lifecycle(recheck=True, shows_suspended=True)
    for f, st in zip("abcdef", C.LESSON_STATUSES, strict=True):
        recheck.add(f, 1, status=st)
    assert recheck.judged() == ["a", "b", "c", "f"]
    assert recheck.shown() == ["a", "b", "c", "f"]
    assert book.states(["a"]) == {"a": LessonState("candidate", 1)}


def test_table_is_oldest_first_and_typed() -> None:
    book = Lifecycle()
    book.add("z", 3)
    book.add("b", 1)
    book.add("a", 3, created_at=1, family="web")
    t = book.table({"trials": [0, 1, 2]})
    assert t["id"].to_list() == ["a", "b", "z"]
    assert t["created_at"].to_list() == [1, 1, 3]
    assert t["status_since"].to_list() == [3, 1, 3]
    assert t["applies_to"].to_list() == ["web", None, None]
    assert t["trials"].to_list() == [0, 1, 2]
    assert t.schema["gate_t"] == pl.Float64 and t.schema["created_at"] == pl.Int64


def test_look_passes_statuses_and_lessons_only_when_the_gate_takes_them() -> None:
    seen: list[dict[str, object]] = []

    def judge(ids: list[str], extra: dict[str, object]) -> pl.DataFrame:
        seen.append({"ids": ids, **extra})
        return _report([{"fact_id": f, "decision": "suspend", "why": "suspect"} for f in ids])

    book = Lifecycle(gives_statuses=True, gives_lessons=True)
    assert book.look(1, judge) == []  # no lesson: the judge is not called
    assert seen == []
    book.add("a", 1)
    changes = book.look(1, judge)
    assert [(c.new, c.why) for c in changes] == [("suspended", "suspect")]
    assert seen[0]["statuses"] == {"a": LessonState("candidate", 1)}
    assert isinstance(seen[0]["lessons"], pl.DataFrame)
    plain = Lifecycle()
    plain.add("a", 1)
    plain.look(1, judge)
    assert set(seen[1]) == {"ids"}


def test_cadence_validates_and_schedules() -> None:
    assert [r for r in range(1, 6) if Cadence().due(r)] == [1, 2, 3, 4, 5]
    with pytest.raises(ValueError, match="every"):
        Cadence(every=0)
    with pytest.raises(ValueError, match="recheck_verified"):
        Cadence(recheck_verified="yes")  # type: ignore[arg-type]


def test_round_trip_keeps_everything() -> None:
    book = Lifecycle()
    book.add("a", 1, family="x")
    book.add("b", 2)
    book.apply(
        _report(
            [
                {"fact_id": "a", "decision": "evict", "reason": C.HARMFUL, "t_stat": -4.0},
                {"fact_id": "b", "decision": "hold", "t_stat": None},
            ]
        ),
        5,
    )
    back = Lifecycle()
    back.restore(book.to_dict())
    assert back.to_dict() == book.to_dict()
    assert back.events == book.events and math.isnan(back.gate_t["b"])
    assert back.ids == ["a", "b"]
