"""The command line on a user's fixed-size-prompt ledger, and the attribute messages.

A file written as a user would write it (columns ``episode, reward, memories_used,
task_hardness, task_type``; every run carries 6 of 24 lessons): the regression methods
estimate every lesson relative to the mean lesson and say so; a method that estimates
nothing exits 2 with the reason; the default method's hint names a command that works;
an unknown method fails before any note; a stratified permutation is not told it adjusts
for nothing; ``mixed``'s fallback is one clean line.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from cogstats.cli import main
from tests.helpers import write_episode_ledger

COLUMNS = ["--column", "run_id=episode", "--column", "score=reward"]
COLUMNS += ["--column", "fact_ids=memories_used"]
HARMFUL = ("m03", "m11")
HELPFUL = ("m05", "m17")


@pytest.fixture(scope="module")
def user_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """420 runs, 6 of 24 lessons each, additive: two harmful (-0.15), two helpful (+0.1)."""
    path = tmp_path_factory.mktemp("user") / "episodes.csv"
    write_episode_ledger(str(path), lessons=24, harmful=HARMFUL, helpful=HELPFUL)
    return path


@pytest.mark.parametrize("method", ["ols", "fraclogit", "freedman_lane", "mixed"])
def test_regression_methods_estimate_every_contrast(
    method: str, user_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["attribute", str(user_file), *COLUMNS, "--method", method, "--format", "csv"]
    if method == "mixed":
        argv += ["--option", 'groups="task_type"', "--covariates", "task_hardness"]
    else:
        argv += ["--covariates", "task_hardness", "task_type"]
    if method == "freedman_lane":
        argv += ["--seed", "1", "--option", "permutations=199"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    frame = pl.read_csv(io.StringIO(captured.out))
    assert frame["estimate"].null_count() == 0
    assert set(frame["relative_to"].to_list()) == {"mean of 24 lessons"}
    assert "every run carries 6 of the 24 lessons" in captured.err
    assert "relative to the pool's mean lesson" in captured.err
    est = dict(zip(frame["fact_id"].to_list(), frame["estimate"].to_list(), strict=True))
    p = dict(zip(frame["fact_id"].to_list(), frame["pvalue"].to_list(), strict=True))
    for f in HARMFUL:
        assert est[f] < 0 and p[f] < 0.01, (f, est[f], p[f])
    for f in HELPFUL:
        assert est[f] > 0 and p[f] < 0.01, (f, est[f], p[f])
    assert abs(sum(est.values())) < 1e-9
    assert "Warning" not in captured.err and ".py:" not in captured.err


def test_the_default_hint_names_a_command_that_estimates(
    user_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["attribute", str(user_file), *COLUMNS]) == 0
    err = capsys.readouterr().err
    hinted = err.split(": ")[-1].split(" would use them")[0]
    assert hinted == "--method ols --covariates task_hardness task_type"
    argv = ["attribute", str(user_file), *COLUMNS, *hinted.split(), "--format", "csv"]
    assert main(argv) == 0
    frame = pl.read_csv(io.StringIO(capsys.readouterr().out))
    assert frame["estimate"].null_count() == 0


def test_a_method_that_estimates_nothing_exits_2_with_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Lessons only ever in pairs that always go in together: nothing is identifiable."""
    rows = ["run_id,score,fact_ids"]
    for i in range(40):
        pair = "a;b" if i % 2 else "c;d"
        rows.append(f"r{i},{0.5 + 0.01 * (i % 7)},{pair}")
    path = tmp_path / "pairs.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    assert main(["attribute", str(path), "--method", "ols"]) == 2
    err = capsys.readouterr().err
    assert "method 'ols' estimated none of the 4 lessons" in err
    assert "duplicate inclusion pattern" in err


def test_unknown_method_fails_without_a_note_first(
    user_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["attribute", str(user_file), *COLUMNS, "--method", "foo"]) == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [
        "cogstats attribute: error: method must be one of ['aipw', 'anytime_ols', 'confseq', "
        "'debiased_ridge', 'fraclogit', 'freedman_lane', 'ipw', 'lift', 'mixed', 'ols', "
        "'permutation', 'ridge', 'welch']; got 'foo'"
    ]


def test_stratified_permutation_is_not_told_it_adjusts_for_nothing(
    user_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["attribute", str(user_file), *COLUMNS, "--method", "permutation", "--seed", "1"]
    argv += ["--option", "permutations=99", "--option", 'strata="task_type"']
    assert main(argv) == 0
    assert "adjusts for nothing" not in capsys.readouterr().err
    argv = ["attribute", str(user_file), *COLUMNS, "--method", "permutation", "--seed", "1"]
    assert main([*argv, "--option", "permutations=99"]) == 0
    assert "adjusts for nothing" in capsys.readouterr().err  # without strata it is told


def test_mixed_fallback_is_one_clean_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Families that do not shift the score: a singular MixedLM fit, the OLS fallback."""
    gen = np.random.default_rng(3)  # a seed whose MixedLM fit is singular
    rows = ["run_id,score,fact_ids,family"]
    for i in range(90):
        facts = ";".join(f for f in ("a", "b", "c") if gen.random() < 0.5)
        rows.append(f"r{i},{0.5 + 0.1 * ('a' in facts) + gen.normal(0, 0.05):.4f},{facts},f{i % 3}")
    path = tmp_path / "flat.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    assert main(["attribute", str(path), "--method", "mixed", "--format", "csv"]) == 0
    captured = capsys.readouterr()
    frame = pl.read_csv(io.StringIO(captured.out))
    assert frame["fallback"].all()
    lines = [line for line in captured.err.splitlines() if "fell back" in line]
    assert len(lines) == 1 and lines[0].startswith("cogstats attribute: warning: mixed: ")
    assert ".py:" not in captured.err and "MixedFallbackWarning" not in captured.err


def test_a_gate_on_a_stratified_permutation_is_not_told_it_adjusts_for_nothing(
    user_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["gate", str(user_file), *COLUMNS, "--gate", "evidence", "--method", "permutation"]
    argv += ["--options", "permutations=99", "--seed", "1"]
    assert main([*argv, "--options", 'strata="task_type"']) == 0
    assert "adjusts for nothing" not in capsys.readouterr().err
    assert main(argv) == 0
    assert "adjusts for nothing" in capsys.readouterr().err
