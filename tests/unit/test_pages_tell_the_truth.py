"""Pages and outputs that tell the truth: outcome colours, the audit's lessons and prose,
the simulate summary of a gate that suspends, the tuner's export, help texts, the gate
table's status.

The browser-level checks of the same pages are in tests/notebooks/test_truthful_pages.py.
"""

from __future__ import annotations

import argparse
import io
import itertools
import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from cogstats import Ledger
from cogstats.charts import VERDICT_COLORS, VERDICTS, gate_decisions
from cogstats.cli import build_parser, main
from cogstats.gates import GATES, get_gate
from cogstats.reports.audit import audit_ledger
from tests.helpers import fixed_size_ledger

ROOT = Path(__file__).resolve().parents[2]
#: a raw reStructuredText role or literal, as a help text must never show
RAW_MARKUP = re.compile(r":[a-z]+:`|``")

# ---------------------------------------------------------------------- colours
#: Machado, Oliveira and Fernandes (2009), severity 1: linear-RGB simulation matrices
CVD = {
    "normal": np.eye(3),
    "protanopia": np.array(
        [
            [0.152286, 1.052583, -0.204868],
            [0.114503, 0.786281, 0.099216],
            [-0.003882, -0.048116, 1.051998],
        ]
    ),
    "deuteranopia": np.array(
        [
            [0.367322, 0.860646, -0.227968],
            [0.280085, 0.672501, 0.047413],
            [-0.011820, 0.042940, 0.968881],
        ]
    ),
    "tritanopia": np.array(
        [
            [1.255528, -0.076749, -0.178779],
            [-0.078411, 0.930809, 0.147602],
            [0.004733, 0.691367, 0.303900],
        ]
    ),
}


def _lab(hex_colour: str, matrix: np.ndarray) -> np.ndarray:
    """CIELAB (D65) of a colour as seen under ``matrix`` (sRGB -> linear -> CVD -> XYZ)."""
    c = np.array([int(hex_colour[i : i + 2], 16) for i in (1, 3, 5)]) / 255.0
    rgb = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    rgb = np.clip(matrix @ rgb, 0.0, 1.0)
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]])
    t = (xyz @ rgb) / np.array([0.95047, 1.0, 1.08883])
    f = np.where(t > 0.008856, np.cbrt(t), 7.787 * t + 16 / 116)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


@pytest.mark.parametrize("vision", sorted(CVD))
def test_every_outcome_has_its_own_colour_for_every_vision(vision: str) -> None:
    """Every pair of outcome colours differs by at least 12 (CIE76 delta E) under normal
    vision and simulated protanopia, deuteranopia and tritanopia (a just-noticeable
    difference is about 2; measured minimum 14.6, suspend/hold under deuteranopia)."""
    assert set(VERDICT_COLORS) == set(VERDICTS)
    labs = {v: _lab(c, CVD[vision]) for v, c in VERDICT_COLORS.items()}
    for a, b in itertools.combinations(labs, 2):
        assert np.linalg.norm(labs[a] - labs[b]) >= 12.0, (vision, a, b)


def test_decision_chart_gives_admit_hold_suspend_distinct_colours() -> None:
    decisions = pl.DataFrame(
        {
            "fact_id": ["a", "b", "c", "d", "e"],
            "gate": ["recommended"] * 5,
            "decision": ["admit", "hold", "suspend", "evict", "retire"],
            "reason": [None, None, None, "eval-gate:harmful", "eval-gate:no_lift"],
        }
    )
    scale = gate_decisions(decisions).to_dict()["encoding"]["color"]["scale"]
    colours = dict(zip(scale["domain"], scale["range"], strict=True))
    assert len(set(colours.values())) == len(colours) == 5
    assert colours["admit"] == VERDICT_COLORS["admit"]
    assert colours["suspend"] == VERDICT_COLORS["suspend"]


# ---------------------------------------------------------------------- the audit
@pytest.fixture(scope="module")
def fixed_audit():  # type: ignore[no-untyped-def]
    ledger = fixed_size_ledger(np.random.default_rng(2), n_runs=160)
    return audit_ledger(ledger, covariates=["difficulty_proxy", "family"], rng=1)


def test_audit_of_fixed_size_prompts_says_what_the_estimates_are(fixed_audit) -> None:  # type: ignore[no-untyped-def]
    numbers = fixed_audit.key_numbers()
    assert numbers["cannot be told apart"] == 0
    assert numbers["relative to the mean lesson"] == 12
    text = " ".join(fixed_audit.findings())
    assert "12 of 12 lessons are estimated relative to the mean lesson" in text
    assert "cannot be told apart from others" not in text
    methods = set(fixed_audit.attribution["method"].to_list())
    assert methods == {
        "lift",
        "ols + difficulty_proxy + family (vs mean lesson)",
        "ridge + difficulty_proxy + family (vs mean lesson)",
    }
    ols = fixed_audit.attribution.filter(pl.col("method").str.starts_with("ols"))
    assert ols["estimate"].null_count() == 0 and abs(float(ols["estimate"].sum())) < 1e-9
    reading = str(fixed_audit.reading())
    assert "relative to the mean lesson" in reading and "not necessarily harmful" in reading
    assert str(fixed_audit.unidentified()).startswith("None: the regressions estimate every")


def test_audit_reading_does_not_recommend_a_regression_that_produced_nothing() -> None:
    """Lessons only ever in pairs that always go in together: OLS estimates nothing."""
    records = [
        {
            "run_id": f"r{i}",
            "score": 0.4 + 0.02 * (i % 5),
            "fact_ids": ["a", "b"] if i % 2 else ["c", "d"],
        }
        for i in range(40)
    ]
    audit = audit_ledger(Ledger.from_records(records), gates=["cycgraph"], rng=1)
    reading = str(audit.reading())
    assert "better guide" not in reading and "no guide here" in reading
    findings = " ".join(audit.findings())
    assert "4 of 4 lessons cannot be told apart" in findings
    table = audit.unidentified().to_frame()
    assert sorted(table["fact_id"].to_list()) == ["a", "b", "c", "d"]


def test_audit_charts_draw_every_lesson_or_name_those_left_out(fixed_audit) -> None:  # type: ignore[no-untyped-def]
    every = sorted(fixed_audit.ledger.fact_ids)
    assert sorted(fixed_audit.shown_lessons()) == every
    assert fixed_audit.charts_note() == "The charts draw every one of the 12 lessons."
    shown = fixed_audit.shown_lessons(5)
    note = fixed_audit.charts_note(5)
    left = [f for f in every if f not in shown]
    assert len(shown) == 5 and len(left) == 7
    assert note.endswith("left out: " + ", ".join(left) + ".")
    decided = fixed_audit.decisions.filter(pl.col("decision") != "hold")["fact_id"].to_list()
    if set(decided) & set(left):  # more lessons decided than drawn: the note says so
        assert f"{len(set(decided) & set(left))} of those left out were decided on" in note
    else:
        assert "no gate decided on the lessons left out" in note


# ---------------------------------------------------------------------- simulate
def test_simulate_with_a_preset_that_suspends_leads_with_the_agent_metrics(
    capsys: pytest.CaptureFixture[str],
) -> None:
    spec = ROOT / "simulations" / "poison_crater.toml"
    argv = ["simulate", str(spec), "--policy", "recommended", "--replicates", "5"]
    assert main([*argv, "--no-progress"]) == 0
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if line.startswith("│ cell"))
    cells = [c.strip() for c in header.strip("│ ").split("┆")]
    assert cells[3:8] == [
        "regret",
        "poison_exposure",
        "poison_out_last5",
        "helpful_lost_rate",
        "false_conviction_rate",
    ]
    assert "hold_rate" not in cells and "time_to_verdict" not in cells
    assert "the gate suspends lessons" in out
    assert main(["simulate", str(spec), "--replicates", "5", "--no-progress"]) == 0
    plain = capsys.readouterr().out
    assert "poison_recall" in plain.splitlines()[2] and "the gate suspends" not in plain


# ---------------------------------------------------------------------- tuner
def test_the_tuner_never_exports_a_refused_setting() -> None:
    pytest.importorskip("ipywidgets")
    from cogstats.tuning import tune

    ledger = fixed_size_ledger(np.random.default_rng(1), n_runs=40)
    t = tune(ledger=ledger, gate="recommended", debounce=0.0)
    try:
        assert t.wait(120)
        assert "min_trials = 3" in t.keep().text()  # the default, accepted
        t.set(min_trials=0)
        assert t.last_error == "min_trials must be >= 2; got 0"
        with pytest.raises(ValueError, match="cannot keep these settings: refused"):
            t.keep()
        t._on_keep()  # the button says so instead of writing a command
        assert "cannot keep these settings" in t.kept.value
        assert "--min-trials 0" not in t.kept.value and "min_trials = 0" not in t.kept.value
        t.set(min_trials=4)
        assert "--min-trials 4" in t.keep().text()
    finally:
        t.close()


# ---------------------------------------------------------------------- help texts
def _help(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit):
        main([*argv, "--help"])
    return capsys.readouterr().out


@pytest.mark.parametrize("gate", sorted(GATES))
def test_gate_help_is_plain_and_lists_covariates(
    gate: str, capsys: pytest.CaptureFixture[str]
) -> None:
    text = _help(["gate", "--gate", gate], capsys)
    assert "--covariates" in text
    assert not RAW_MARKUP.search(text), RAW_MARKUP.search(text)


def test_every_subcommand_help_is_plain(capsys: pytest.CaptureFixture[str]) -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name in sub.choices:
        text = _help([name], capsys)
        assert not RAW_MARKUP.search(text), (name, RAW_MARKUP.search(text))


def test_widget_help_is_plain() -> None:
    from cogstats.retrieval import RETRIEVAL_POLICIES
    from cogstats.tuning.controls import option_specs

    for registry, part in ((GATES, "gate"), (RETRIEVAL_POLICIES, "retrieval")):
        for name in registry:
            for spec in option_specs(registry.lookup(name), part):
                assert not RAW_MARKUP.search(spec.help), (name, spec.name, spec.help)


def test_covariates_for_a_gate_that_takes_none_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = fixed_size_ledger(np.random.default_rng(0), n_runs=30).write(tmp_path / "runs.csv")
    assert main(["gate", str(path), "--covariates", "difficulty_proxy"]) == 2
    err = capsys.readouterr().err
    assert "the 'cycgraph' gate adjusts for no covariate" in err
    assert "--gate recommended --covariates difficulty_proxy" in err


# ---------------------------------------------------------------------- the gate table
def test_gate_table_status_is_the_status_after_the_rows_decision(tmp_path: Path) -> None:
    ledger = fixed_size_ledger(np.random.default_rng(5), n_runs=120)
    frame = get_gate("recommended").make().evaluate(ledger).to_frame()
    assert {"status", "status_before"} <= set(frame.columns)
    want = {"evict": "evicted", "retire": "retired", "admit": "admitted", "promote": "verified"}
    want |= {"suspend": "suspended", "release": "candidate"}
    for row in frame.iter_rows(named=True):
        after = want.get(row["decision"], row["status_before"])
        assert row["status"] == after, row
    assert frame.filter(pl.col("decision") != "hold").height > 0
    out = io.StringIO()
    frame.select("decision", "status").write_csv(out)
    assert "evict,candidate" not in out.getvalue()
