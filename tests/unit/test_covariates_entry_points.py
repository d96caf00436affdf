"""Covariates are never silent on the command line (issue 20, item 2).

A new user's own ledger (tests.helpers.write_user_ledger: other column names, a
``difficulty_estimate`` and a ``task_family`` column, planted lessons) through ``cogstats
gate`` and ``cogstats attribute`` with only ``--column`` mappings: a covariate named with
``--covariates`` that the ledger lacks exits 2 with "did you mean" for every gate and for
attribute; when nothing is adjusted for, a warning names the difficulty- and
task-family-like columns and the flag that would use them; once they are used, no warning.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cogstats.cli import main
from cogstats.gates import GATES
from tests.helpers import USER_COLUMNS, USER_HARMFUL, write_user_ledger

MAP = [a for k, v in USER_COLUMNS.items() for a in ("--column", f"{k}={v}")]
HINT = (
    "difficulty-like column(s) ['difficulty_estimate'] and "
    "task-family-like column(s) ['task_family']"
)


@pytest.fixture(scope="module")
def user_ledger(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("user") / "my_runs.csv"
    write_user_ledger(str(path), n_runs=240)
    return path


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


# gates whose recommended-style covariates option or method options take --covariates
_COVARIATE_GATES = [g for g in ("recommended", "evidence") if g in GATES]


@pytest.mark.parametrize("gate", _COVARIATE_GATES)
def test_gate_refuses_a_misspelt_covariate_with_did_you_mean(
    user_ledger: Path, gate: str, capsys: pytest.CaptureFixture[str]
) -> None:
    extra = ["--method", "ols"] if gate == "evidence" else []
    code, out, err = _run(
        capsys,
        "gate",
        str(user_ledger),
        *MAP,
        "--gate",
        gate,
        *extra,
        "--covariates",
        "difficulty_estimat",
    )
    assert code == 2 and out == ""
    assert "['difficulty_estimat'] that the ledger lacks" in err
    assert "did you mean 'difficulty_estimate'?" in err


@pytest.mark.parametrize("gate", _COVARIATE_GATES)
def test_gate_with_the_named_covariates_runs_without_a_warning(
    user_ledger: Path, gate: str, capsys: pytest.CaptureFixture[str]
) -> None:
    extra = ["--method", "ols"] if gate == "evidence" else []
    argv = ["gate", str(user_ledger), *MAP, "--gate", gate, *extra, "--format", "json"]
    code, out, err = _run(capsys, *argv, "--covariates", "difficulty_estimate", "task_family")
    assert code == 0 and "warning" not in err
    harmful = {r["fact_id"] for r in json.loads(out) if r["reason"] == "eval-gate:harmful"}
    assert harmful == set(USER_HARMFUL)  # the planted harmful lessons, and no other
    code, _, err = _run(capsys, *argv)  # nothing named: the hint, with the flag
    assert code == 0 and HINT in err
    assert "--covariates difficulty_estimate task_family would use them" in err
    code, _, err = _run(capsys, *argv, "--covariates")  # none, on purpose: no hint
    assert code == 0 and err == ""


def test_a_gate_without_covariates_points_at_one_that_takes_them(
    user_ledger: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _run(capsys, "gate", str(user_ledger), *MAP, "--format", "json")
    assert code == 0 and HINT in err
    assert "gate 'cycgraph' adjusts for nothing" in err
    assert "--gate recommended --covariates difficulty_estimate task_family would use them" in err
    # the evidence gate's default method (welch) takes no covariates: --method ols does
    code, _, err = _run(
        capsys, "gate", str(user_ledger), *MAP, "--gate", "evidence", "--format", "json"
    )
    assert code == 0
    assert "--method ols --covariates difficulty_estimate task_family would use them" in err


def test_a_ledger_without_such_columns_gets_no_hint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "plain.csv"
    path.write_text("run_id,score,fact_ids,batch\nr1,0.5,a,1\nr2,0.7,a b,2\nr3,0.4,,1\n")
    code, _, err = _run(capsys, "gate", str(path), "--format", "json")
    assert code == 0 and err == ""
    code, _, err = _run(capsys, "attribute", str(path), "--format", "json")
    assert code == 0 and err == ""


def test_attribute_refuses_a_misspelt_covariate_and_hints_when_nothing_is_used(
    user_ledger: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["attribute", str(user_ledger), *MAP, "--format", "json"]
    code, out, err = _run(capsys, *base, "--method", "ols", "--covariates", "task_famly")
    assert code == 2 and out == "" and "did you mean 'task_family'?" in err
    code, _, err = _run(capsys, *base, "--method", "ols")
    assert code == 0 and "method 'ols' adjusts for nothing" in err and HINT in err
    assert "--covariates difficulty_estimate task_family would use them" in err
    code, _, err = _run(capsys, *base)  # lift takes no covariates: ols does
    assert code == 0 and "--method ols --covariates difficulty_estimate" in err
    code, out, err = _run(
        capsys, *base, "--method", "ols", "--covariates", "difficulty_estimate", "task_family"
    )
    assert code == 0 and err == ""
    worst = min(json.loads(out), key=lambda r: r["estimate"] if r["estimate"] is not None else 9)
    assert worst["fact_id"] in USER_HARMFUL


# ---------------------------------------------------------------------- Python
@pytest.mark.parametrize("gate", [g for g in _COVARIATE_GATES if g != "evidence"])
def test_gate_evaluate_refuses_a_named_absent_covariate_and_notes_unused_ones(
    user_ledger: Path, gate: str
) -> None:
    from cogstats import Ledger
    from cogstats._validation import ParameterError
    from cogstats.gates import get_gate

    ledger = Ledger.read(user_ledger, columns=USER_COLUMNS)
    with pytest.raises(ParameterError, match="did you mean 'difficulty_estimate'"):
        get_gate(gate).make(covariates=["difficulty_estimat"]).evaluate(ledger)
    report = get_gate(gate).make().evaluate(ledger)  # the default: absent, skipped, noted
    assert report.note is not None and HINT in report.note
    assert 'covariates=["difficulty_estimate", "task_family"] would use them' in report.note
    assert "note: " in report.summary() and "would use them" in report._repr_html_()
    used = get_gate(gate).make(covariates=["difficulty_estimate"]).evaluate(ledger)
    assert used.note is None and "note: " not in used.summary()


def test_attribute_in_python_names_the_near_miss() -> None:
    """``attribute(..., covariates=...)`` with a typo says "did you mean", as the CLI does."""
    from cogstats import Ledger, attribute
    from cogstats._validation import ParameterError

    ledger = Ledger.from_records(
        {"run_id": f"r{i}", "score": 0.1 * (i % 5), "fact_ids": ["a"] if i % 2 else [],
         "difficulty_estimate": float(i % 3)}
        for i in range(12)
    )  # fmt: skip
    with pytest.raises(ParameterError, match=r"did you mean 'difficulty_estimate'\?"):
        attribute(ledger, method="ols", covariates=("difficulty_estimat",))
