"""Reports speak about the data they were given (issue 20, items 2 and 3).

A new user's own ledger (tests.helpers.write_user_ledger: columns ``run``, ``fitness``,
``lessons_used``, ``task_family``, ``difficulty_estimate``; 2 harmful, 4 helpful, 24 null
lessons) through ``ledger_audit``, ``quickstart`` and ``tuning`` with only the ``columns``
mapping, and a user's own sweep (a scenario of their own) through ``threshold_explorer``
and ``tradeoffs``.  Each page's summary (the block ``run_report`` moves to the top) must
name the planted harmful lessons, say which difficulty- and task-family-like columns
nothing adjusts for with the parameter that would use them, name the user's data (never
benchmark S2, no goal line), and call only the gates' decisions by the gates' words.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from cogstats import Ledger
from cogstats._validation import LedgerError
from cogstats.reports import ReportError, run_report
from tests.helpers import USER_COLUMNS, USER_HARMFUL, write_user_ledger

HINT = "task-family-like column(s) ['task_family'] that nothing adjusts for"


def _summary(page: Path) -> str:
    """Return the text of a page's summary block (tags stripped, entities decoded)."""
    text = page.read_text(encoding="utf-8")
    start = text.index('<div class="cogstats-summary"')
    depth, end = 0, start
    for tag in re.finditer(r"<(/?)div\b", text[start:]):
        depth += -1 if tag.group(1) else 1
        if depth == 0:
            end = start + tag.end()
            break
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", text[start:end])))


@pytest.fixture(scope="module")
def user_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("user-data")
    write_user_ledger(str(folder / "my_runs.csv"), n_runs=300)
    (folder / "my_world.toml").write_text(
        'name = "my-agent"\n'
        'description = "my own world: two bad lessons among eight"\n'
        "runs = 16\nreplicates = 8\nseed = 5\n"
        + "".join(
            f'[[lessons.listed]]\nid = "{i}"\neffect = {e}\n'
            for i, e in [("bad-1", -0.2), ("bad-2", -0.2)] + [(f"ok-{k}", 0.0) for k in range(6)]
        )
        + '[retrieval]\npolicy = "in_progress_first"\nmax_facts = 4\ncandidate_slots = 4\n'
        + '[gate]\ntype = "cycgraph"\ndecision_rule = "margin"\nmin_trials = 2\n'
    )
    (folder / "my_sweep.toml").write_text(
        'name = "my-sweep"\nscenario = "my_world.toml"\nreplicates = 6\nseed = 3\n'
        '[grid]\n"gate.min_trials" = [2, 3]\n"gate.evict_margin" = [0.05, 0.1]\n'
    )
    return folder


def _report(
    folder: Path, name: str, monkeypatch: pytest.MonkeyPatch, **params: object
) -> tuple[Path, str]:
    monkeypatch.chdir(folder)
    result = run_report(name, folder / "out" / name, dict(params) or None, ci=True)
    return result.html, _summary(result.html)


def _refuses_a_misspelt_covariate(folder: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Report ``name`` on the user's ledger with a misspelt covariate fails: did you mean."""
    with pytest.raises(ReportError, match="did you mean 'difficulty_estimate'"):
        _report(
            folder,
            name,
            monkeypatch,
            ledger_path="my_runs.csv",
            columns=USER_COLUMNS,
            covariates=["difficulty_estimat"],
        )


def test_ledger_audit_on_a_users_ledger(user_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _, text = _report(
        user_dir, "ledger_audit", monkeypatch, ledger_path="my_runs.csv", columns=USER_COLUMNS
    )
    assert "The ledger my_runs.csv" in text
    assert all(f in text for f in USER_HARMFUL)
    assert "evict (harmful)" in text and "holds as harmful" not in text
    assert HINT in text and "cogstats report ledger_audit --param covariates=" in text
    assert "S2" not in text and "benchmark" not in text
    # the hint's parameter, used: adjusted for, no hint
    _, used = _report(
        user_dir,
        "ledger_audit",
        monkeypatch,
        ledger_path="my_runs.csv",
        columns=USER_COLUMNS,
        covariates=["difficulty_estimate", "task_family"],
    )
    assert "adjusted for difficulty_estimate, task_family" in used and HINT not in used
    assert all(f in used for f in USER_HARMFUL)
    # a misspelt covariate: the report fails with "did you mean"
    _refuses_a_misspelt_covariate(user_dir, "ledger_audit", monkeypatch)


def test_quickstart_takes_columns_and_says_which_parameter(
    user_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ReportError) as err:
        _report(user_dir, "quickstart", monkeypatch, ledger_path="my_runs.csv")
    message = str(err.value)
    want = json.dumps(USER_COLUMNS)
    assert f"in a report --param columns='{want}'" in message
    # the ledger's own error, as it is (no report rewrites it)
    with pytest.raises(LedgerError) as own:
        Ledger.read(user_dir / "my_runs.csv")
    assert own.value.message in message
    _, text = _report(
        user_dir, "quickstart", monkeypatch, ledger_path="my_runs.csv", columns=USER_COLUMNS
    )
    assert "A ledger of 300 runs (my_runs.csv)" in text
    assert all(f in text for f in USER_HARMFUL)
    assert HINT in text and "cogstats report quickstart --param covariates=" in text
    _, used = _report(
        user_dir,
        "quickstart",
        monkeypatch,
        ledger_path="my_runs.csv",
        columns=USER_COLUMNS,
        covariates=["difficulty_estimate"],
    )
    assert "adjusted for difficulty_estimate" in used and HINT not in used


def test_tuning_replays_a_users_ledger_through_columns(
    user_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, text = _report(
        user_dir, "tuning", monkeypatch, ledger_path="my_runs.csv", columns=USER_COLUMNS
    )
    assert "cycgraph's gate replayed over the ledger my_runs.csv (300 runs)" in text
    assert HINT in text and "cogstats report tuning --param covariates=" in text


def test_tuning_adjusts_for_the_covariates_named_and_refuses_a_typo(
    user_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a misspelt covariate fails before any simulation, with "did you mean"
    _refuses_a_misspelt_covariate(user_dir, "tuning", monkeypatch)
    _, text = _report(
        user_dir,
        "tuning",
        monkeypatch,
        ledger_path="my_runs.csv",
        columns=USER_COLUMNS,
        covariates=["difficulty_estimate"],
    )
    assert "the recommended gate replayed over the ledger my_runs.csv" in text
    assert "adjusted for difficulty_estimate" in text and "difficulty-like" not in text


def test_poison_replay_takes_columns_for_renamed_demo_files(
    user_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import polars as pl

    from cogstats.reports import resource_path

    runs = pl.read_csv(resource_path("data/cycgraph_poison_demo_runs.csv"))
    lessons = pl.read_csv(resource_path("data/cycgraph_poison_demo_lessons.csv"))
    runs.rename({"score": "fitness", "lessons_in_prompt": "lessons_used"}).write_csv(
        user_dir / "demo_runs.csv"
    )
    lessons.rename({"lesson": "lesson_id"}).write_csv(user_dir / "demo_lessons.csv")
    files = {"runs_path": "demo_runs.csv", "lessons_path": "demo_lessons.csv"}
    with pytest.raises(ReportError, match=r"missing column\(s\) \['score', 'lessons_in_prompt'\]"):
        _report(user_dir, "poison_replay", monkeypatch, **files)
    mapping = {"score": "fitness", "lessons_in_prompt": "lessons_used", "lesson": "lesson_id"}
    _, renamed = _report(user_dir, "poison_replay", monkeypatch, columns=mapping, **files)
    _, bundled = _report(user_dir, "poison_replay", monkeypatch)
    assert renamed == bundled  # the same decisions, in the same words
    assert "cycgraph evicts:" in renamed


def test_sweep_reports_name_the_users_scenario_and_no_goals(
    user_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cogstats.sweep import sweep_spec

    store = user_dir / "store"
    sweep_spec(user_dir / "my_sweep.toml", out=store, workers=1, progress=False)
    for name in ("threshold_explorer", "tradeoffs"):
        _, text = _report(user_dir, name, monkeypatch, sweep_path=str(store))
        assert "the scenario 'my-sweep' (my own world: two bad lessons among eight)" in text
        assert "S2" not in text and "benchmark S" not in text, name
        if name == "threshold_explorer":  # no goal line: it says there are none
            assert "settings meeting" not in text and "no goals are checked" in text
    # the explorer run on the spec itself, with goals of the user's own
    _, text = _report(
        user_dir,
        "threshold_explorer",
        monkeypatch,
        spec_path="my_sweep.toml",
        goals=["false_eviction_rate <= 0.5"],
    )
    assert "the scenario 'my-sweep'" in text and "S2" not in text
    assert "settings meeting the goals given" in text


def test_the_bundled_sweep_is_benchmark_s2_with_its_goals(
    user_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, text = _report(user_dir, "threshold_explorer", monkeypatch)  # CI: threshold_sweep_ci
    assert "benchmark S2 (the poison crater" in text and "settings meeting S2's goals" in text
