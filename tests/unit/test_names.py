"""One name, one meaning: two things never share a name.

``StreamingStats.fact_ids`` are the lessons in the runs (a ledger's ``fact_ids``); every
row the statistics hold is ``table_ids`` (its former name ``lesson_ids`` is gone).  The
live lessons of a lesson table are ``cogstats.retrieval.live_lesson_table`` (the former
``cogstats.retrieval.lesson_table`` is gone); the validated store table is
``cogstats.lessons.lesson_table``.
"""

from __future__ import annotations

import warnings

import pytest

from cogstats.stats import StreamingStats

STORE = [
    {"id": "a", "status": "candidate", "created_at": 1},
    {"id": "b", "status": "evicted", "created_at": 2},
]


def test_table_ids_and_fact_ids_are_two_meanings_with_two_names() -> None:
    stats = StreamingStats()
    stats.add_run("r1", 0.5, ["a"])
    stats.lesson_index(["never_run"])  # a row for a lesson asked about, never in a run
    assert stats.fact_ids == ("a",)
    assert stats.table_ids == ("a", "never_run")
    assert not hasattr(stats, "lesson_ids")


def test_retrievals_live_lesson_table_and_the_stores_table() -> None:
    import cogstats.retrieval as R
    from cogstats.lessons import lesson_table

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        live = R.live_lesson_table(STORE)
    assert live["id"].to_list() == ["a"]
    assert lesson_table(STORE)["id"].to_list() == ["a", "b"]  # the store's: every lesson
    assert not hasattr(R, "lesson_table")
    assert "lesson_table" not in R.__all__ and "live_lesson_table" in R.__all__
    with pytest.raises(AttributeError):
        R.no_such_name  # noqa: B018
