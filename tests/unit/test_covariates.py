"""The one covariate rule (cogstats.covariates): defaults, fallback, hints, true difficulty."""

from __future__ import annotations

import pytest

from cogstats.covariates import (
    DIFFICULTY_COLUMNS,
    TRUE_DIFFICULTY,
    CovariateChoice,
    choose_covariates,
)

DEFAULT = ("difficulty_proxy",)


def test_wanted_columns_the_ledger_has_are_used_in_the_gates_order() -> None:
    got = choose_covariates(("b", "a", "zz"), ["a", "b", "c"], default=DEFAULT)
    assert got == CovariateChoice(("b", "a"))


@pytest.mark.parametrize("column", DIFFICULTY_COLUMNS)
def test_the_default_falls_back_to_a_difficulty_column(column: str) -> None:
    got = choose_covariates(DEFAULT, ["run_index", column], default=DEFAULT)
    if column == "difficulty_proxy":  # the wanted column itself: no fallback, no note
        assert got == CovariateChoice((column,))
    else:
        assert got.columns == (column,) and got.fallback
        assert got.note is not None and repr(column) in got.note


def test_the_proxy_is_preferred_to_difficulty_when_both_exist() -> None:
    got = choose_covariates(("other",), ["difficulty", "difficulty_proxy"], default=("other",))
    assert got.columns == ("difficulty_proxy",) and got.fallback


def test_columns_named_by_the_user_get_no_fallback() -> None:
    got = choose_covariates(("mine",), ["difficulty"], default=DEFAULT)
    assert got.columns == () and not got.fallback
    assert got.note is not None and "difficulty" in got.note  # but a hint


def test_an_empty_choice_is_on_purpose_no_fallback_no_note() -> None:
    assert choose_covariates((), ["difficulty", "hardness"]) == CovariateChoice(())


def test_true_difficulty_is_never_a_default_a_fallback_or_a_hint() -> None:
    got = choose_covariates(DEFAULT, [TRUE_DIFFICULTY, "run_index", "family"], default=DEFAULT)
    assert got == CovariateChoice(())  # nothing used, and no hint at it
    # named explicitly it is used: a study of what the proxy costs may want it
    explicit = choose_covariates((TRUE_DIFFICULTY,), [TRUE_DIFFICULTY], default=DEFAULT)
    assert explicit.columns == (TRUE_DIFFICULTY,)


@pytest.mark.parametrize("name", ["task_hardness", "Difficulty_score", "my_proxy"])
def test_difficulty_like_columns_get_a_hint_naming_the_flag(name: str) -> None:
    got = choose_covariates(DEFAULT, ["run_index", name], default=DEFAULT)
    assert got.columns == () and not got.fallback
    assert got.note is not None and f"--covariates {name}" in got.note


def test_no_default_means_never_fall_back() -> None:
    got = choose_covariates(DEFAULT, ["difficulty"], default=None)
    assert got.columns == () and not got.fallback and got.note is not None
