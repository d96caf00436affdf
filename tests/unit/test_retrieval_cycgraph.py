"""cycgraph retrieval variants and lesson-table validation."""

from __future__ import annotations

import pytest

from cogstats import Ledger
from cogstats._validation import LedgerError, ParameterError
from cogstats.retrieval import (
    FewestTrialsFirst,
    InProgressFirst,
    NewestFirst,
    RetrievalPolicy,
    Selection,
    live_lesson_table,
)

STORE = [
    {"id": "c1", "status": "candidate", "created_at": 1},
    {"id": "c2", "status": "candidate", "created_at": 2},
    {"id": "c3", "status": "candidate", "created_at": 3},
    {"id": "v1", "status": "verified", "created_at": 1},
    {"id": "v2", "status": None, "created_at": 5},
]
LEDGER = Ledger.from_records(
    [
        {"run_id": "r1", "score": 0.5, "fact_ids": ["c2"]},
        {"run_id": "r2", "score": 0.5, "fact_ids": ["c2", "c3"]},
    ]
)


def test_orderings() -> None:
    assert InProgressFirst(max_facts=4, candidate_slots=2).select(STORE, LEDGER).fact_ids == (
        "v2",
        "v1",
        "c2",
        "c3",
    )
    assert NewestFirst(max_facts=4, candidate_slots=2).select(STORE, LEDGER).fact_ids == (
        "v2",
        "v1",
        "c3",
        "c2",
    )
    assert FewestTrialsFirst(max_facts=4, candidate_slots=2).select(STORE, LEDGER).fact_ids == (
        "v2",
        "v1",
        "c1",
        "c3",
    )
    rested = InProgressFirst(max_facts=4, candidate_slots=2, rest_after_trials=2)
    assert rested.select(STORE, LEDGER).fact_ids == ("v2", "v1", "c3", "c1")
    # unused candidate slots go to verified lessons
    few = InProgressFirst(max_facts=3, candidate_slots=3, rest_after_trials=1)
    assert few.select(STORE, LEDGER).fact_ids == ("v2", "v1", "c1")


def test_protocol_and_selection() -> None:
    assert isinstance(InProgressFirst(), RetrievalPolicy)
    sel = Selection(("a",), {"a": 0.5, "b": 0.25})
    assert sel.ledger_fields() == {
        "fact_ids": ["a"],
        "eligible_ids": ["a", "b"],
        "propensities": [0.5, 0.25],
    }


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"max_facts": -1}, "max_facts must be >= 0"),
        ({"candidate_slots": "2"}, "candidate_slots must be an integer"),
        ({"rest_after_trials": 0}, "rest_after_trials must be >= 1"),
    ],
)
def test_parameter_errors(kwargs: dict, words: str) -> None:
    with pytest.raises(ParameterError, match=words):
        InProgressFirst(**kwargs)


def test_candidate_slots_clamped() -> None:
    assert InProgressFirst(max_facts=2, candidate_slots=5).candidate_slots == 2


@pytest.mark.parametrize(
    ("rows", "field"),
    [
        ([{"id": "a", "status": "draft", "created_at": 1}], "status"),
        ([{"id": "", "status": "candidate", "created_at": 1}], "id"),
        ([{"id": "a", "status": "candidate"}], "created_at"),
        ([{"id": "a", "status": "candidate", "created_at": "yesterday"}], "created_at"),
        ([{"id": "a", "created_at": 1}, {"id": "a", "created_at": 2}], "id"),
    ],
)
def test_lesson_table_errors(rows: list, field: str) -> None:
    with pytest.raises(LedgerError) as err:
        live_lesson_table(rows)
    assert err.value.field == field
