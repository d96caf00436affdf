"""One name, one meaning (issue 17 item 8): the renamed names work and the old ones warn.

``StreamingStats.fact_ids`` are the lessons in the runs (a ledger's ``fact_ids``); every
row the statistics hold is ``table_ids`` (``lesson_ids``, its former name beside
``fact_ids``, warns naming it).  The live lessons of a lesson table are
``cogstats.retrieval.live_lesson_table`` (``cogstats.retrieval.lesson_table`` warns
naming it); the validated store table is ``cogstats.lessons.lesson_table``.
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
    with pytest.warns(DeprecationWarning, match="StreamingStats.table_ids"):
        assert stats.lesson_ids == stats.table_ids


def test_retrievals_live_lesson_table_and_its_former_name() -> None:
    import cogstats.retrieval as R
    from cogstats.lessons import lesson_table

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        live = R.live_lesson_table(STORE)
    assert live["id"].to_list() == ["a"]
    assert lesson_table(STORE)["id"].to_list() == ["a", "b"]  # the store's: every lesson
    with pytest.warns(DeprecationWarning, match="cogstats.retrieval.live_lesson_table"):
        old = R.lesson_table
    assert old is R.live_lesson_table
    assert "lesson_table" not in R.__all__ and "live_lesson_table" in R.__all__
    with pytest.raises(AttributeError):
        R.no_such_name  # noqa: B018
