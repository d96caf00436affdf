"""The lifecycle set of a gate rule's outputs and the codes generated from it."""

from __future__ import annotations

import pytest

import cogstats._codes as C


def test_outcome_codes_keep_the_kernel_decision_codes() -> None:
    assert C.OUTCOME_HOLD == C.DECISION_HOLD
    assert C.OUTCOME_PROMOTE == C.DECISION_PROMOTE
    assert C.OUTCOME_EVICT_HARMFUL == C.DECISION_EVICT_HARMFUL
    assert C.OUTCOME_EVICT_NO_LIFT == C.DECISION_EVICT_NO_LIFT


def test_every_outcome_has_a_code_a_status_and_a_round_trip() -> None:
    codes = sorted(C.OUTCOME_CODES.values())
    assert codes == list(range(len(codes)))
    assert set(C.OUTCOME_STATUS) == set(C.OUTCOMES)
    assert {name for name, _ in C.OUTCOME_CODES} == set(C.OUTCOMES)
    for (name, reason), code in C.OUTCOME_CODES.items():
        assert C.outcome_code(name, reason) == code
        assert C.outcome_of_code(code) == (name, reason)
        status = C.OUTCOME_STATUS[name]
        sim = C.OUTCOME_SIM_STATUS[code]
        assert (sim == -1) if status is None else (C.STATUS_NAMES[sim] == status)
        assert status is None or status in C.LESSON_STATUSES
    assert C.SUSPENDED in C.LESSON_STATUSES and C.SUSPENDED not in C.LIVE_STATUSES


def test_outcome_code_errors_name_the_allowed_values() -> None:
    with pytest.raises(ValueError, match="outcome must be one of"):
        C.outcome_code("banish")
    with pytest.raises(ValueError, match="reason must be one of"):
        C.outcome_code("evict")
    with pytest.raises(ValueError, match="reason must be None"):
        C.outcome_code("promote", C.HARMFUL)
    with pytest.raises(ValueError, match="code must be in"):
        C.outcome_of_code(99)
