"""The one covariate rule (cogstats.covariates): defaults, fallback, hints, true difficulty."""

from __future__ import annotations

import pytest

from cogstats._validation import ParameterError
from cogstats.covariates import (
    DIFFICULTY_COLUMNS,
    TRUE_DIFFICULTY,
    CovariateChoice,
    check_named,
    choose_covariates,
    like_columns,
    unused_hint,
)

DEFAULT = ("difficulty_proxy",)
_REPORT_SETTING = 'the report parameter covariates=["{0}"] (cogstats report --param ' + (
    "covariates='[\"{0}\"]')"
)


def test_named_columns_are_used_in_the_gates_order() -> None:
    got = choose_covariates(("b", "a"), ["a", "b", "c"], default=DEFAULT)
    assert got == CovariateChoice(("b", "a"))


@pytest.mark.parametrize("default", [DEFAULT, None])
def test_a_named_column_the_ledger_lacks_is_an_error_with_did_you_mean(
    default: tuple[str, ...] | None,
) -> None:
    with pytest.raises(ParameterError) as err:
        choose_covariates(
            ("b", "difficulty_estimat"), ["b", "difficulty_estimate"], default=default
        )
    text = str(err.value)
    assert "['difficulty_estimat']" in text and "did you mean 'difficulty_estimate'?" in text
    assert "['b', 'difficulty_estimate']" in text  # the ledger's covariates listed
    # no near miss: no suggestion, still an error
    with pytest.raises(ParameterError, match=r"\['zz'\] that the ledger lacks; its covariates"):
        choose_covariates(("zz",), ["a", "b"], default=default)


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
    # a named column the ledger lacks is an error, never a silent fallback
    with pytest.raises(ParameterError, match="'mine'"):
        choose_covariates(("mine",), ["difficulty"], default=DEFAULT)


def test_an_empty_choice_is_on_purpose_no_fallback_no_note() -> None:
    assert choose_covariates((), ["difficulty", "hardness"]) == CovariateChoice(())


def test_true_difficulty_is_never_a_default_a_fallback_or_a_hint() -> None:
    got = choose_covariates(DEFAULT, [TRUE_DIFFICULTY, "run_index"], default=DEFAULT)
    assert got == CovariateChoice(())  # nothing used, and no hint at it
    with_family = choose_covariates(DEFAULT, [TRUE_DIFFICULTY, "family"], default=DEFAULT)
    assert with_family.columns == () and with_family.note is not None
    assert "'family'" in with_family.note and TRUE_DIFFICULTY not in with_family.note
    # named explicitly it is used: a study of what the proxy costs may want it
    explicit = choose_covariates((TRUE_DIFFICULTY,), [TRUE_DIFFICULTY], default=DEFAULT)
    assert explicit.columns == (TRUE_DIFFICULTY,)


@pytest.mark.parametrize("name", ["task_hardness", "Difficulty_score", "my_proxy"])
@pytest.mark.parametrize(
    ("style", "setting"),
    [
        ("parameter", 'covariates=["{}"]'),
        ("flag", "--covariates {}"),
        ("report", _REPORT_SETTING),
    ],
)
def test_difficulty_like_columns_get_a_hint_naming_the_setting(
    name: str, style: str, setting: str
) -> None:
    got = choose_covariates(DEFAULT, ["run_index", name], default=DEFAULT, style=style)
    assert got.columns == () and not got.fallback
    assert got.note is not None and f"{setting.format(name)} would use them" in got.note


def test_task_family_like_columns_get_a_hint_too() -> None:
    got = choose_covariates(DEFAULT, ["run_index", "task_family"], default=DEFAULT, style="flag")
    assert got.note is not None and "task-family-like column(s) ['task_family']" in got.note
    assert "--covariates task_family would use them" in got.note


def test_no_default_means_never_fall_back() -> None:
    with pytest.raises(ParameterError, match="difficulty_proxy"):
        choose_covariates(DEFAULT, ["difficulty"], default=None)
    assert choose_covariates(DEFAULT, [DEFAULT[0]], default=None).columns == DEFAULT


def test_unused_hint_names_every_style_and_a_replacement() -> None:
    have = ["difficulty_estimate", "task_family", TRUE_DIFFICULTY]
    assert like_columns(have) == (("difficulty_estimate",), ("task_family",))
    hint = unused_hint(have, how="--gate recommended {flag}")
    assert hint is not None
    assert hint.endswith(
        "--gate recommended --covariates difficulty_estimate task_family would use them"
    )
    assert unused_hint(have, used=["task_family"]) is None
    assert unused_hint(["run_index", TRUE_DIFFICULTY]) is None
    with pytest.raises(ParameterError, match=r"style must be one of .*got 'shell'"):
        unused_hint(have, style="shell")


def test_check_named_lists_each_near_miss_when_several_are_absent() -> None:
    with pytest.raises(ParameterError) as err:
        check_named(["difficulty_estimat", "task_famly"], ["difficulty_estimate", "task_family"])
    assert "'difficulty_estimat' -> 'difficulty_estimate'" in str(err.value)
    assert "'task_famly' -> 'task_family'" in str(err.value)
    check_named(["task_family"], ["difficulty_estimate", "task_family"])  # present: no error
