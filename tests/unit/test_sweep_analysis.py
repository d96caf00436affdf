"""Analysis of a cell table: operating characteristics, Pareto frontiers, recommendations.

The numbers asserted here are hand-worked from the small tables in each test (closed
forms: means, root-sum-of-squares, normal quantiles from scipy), and the frontier is
checked against the definition of dominance evaluated pairwise.
"""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from cogstats._validation import ParameterError
from cogstats.sweep import (
    Constraint,
    grid_columns,
    operating_characteristics,
    pareto_frontier,
    recommend,
    with_derived,
)


def _table() -> pl.DataFrame:
    """Six cells: rule x min_trials, with hand-picked metrics and MCSEs."""
    return pl.DataFrame(
        {
            "cell": [0, 1, 2, 3, 4, 5],
            "cell_key": [f"{i:016x}" for i in range(6)],
            "gate.decision_rule": ["margin"] * 3 + ["inference"] * 3,
            "gate.min_trials": [2, 3, 4, 2, 3, 4],
            "seed": ["{}"] * 6,
            "replicates": [100] * 6,
            "time_to_verdict": [2.0, 3.0, 4.0, 5.0, 6.0, float("nan")],
            "time_to_verdict_mcse": [0.1, 0.1, 0.2, 0.2, 0.3, float("nan")],
            "false_eviction_rate": [0.15, 0.03, 0.018, 0.02, 0.005, 0.0],
            "false_eviction_rate_mcse": [0.01, 0.004, 0.003, 0.004, 0.002, 0.0],
            "poison_recall": [1.0, 0.99, 0.97, 0.9, 0.6, 0.0],
            "poison_recall_mcse": [0.0, 0.005, 0.01, 0.02, 0.03, 0.0],
            "hold_rate": [0.1, 0.2, 0.3, 0.4, 0.5, 1.0],
        }
    )


def test_grid_columns_and_derived() -> None:
    t = _table()
    assert grid_columns(t) == ["gate.decision_rule", "gate.min_trials"]
    d = with_derived(t)
    assert d["missed_poison"].to_list() == pytest.approx([0.0, 0.01, 0.03, 0.1, 0.4, 1.0])
    assert d["missed_poison_mcse"].to_list() == t["poison_recall_mcse"].to_list()
    assert grid_columns(d) == ["gate.decision_rule", "gate.min_trials"]


def test_operating_characteristics_per_cell_and_marginal() -> None:
    t = _table()
    per_cell = operating_characteristics(t)
    assert per_cell.height == 6
    assert per_cell["cells"].to_list() == [1] * 6
    assert per_cell.columns[:3] == ["gate.decision_rule", "gate.min_trials", "cells"]
    assert "missed_poison_mcse" in per_cell.columns
    by_rule = operating_characteristics(t, by="gate.decision_rule", metrics=["poison_recall"])
    assert by_rule["gate.decision_rule"].to_list() == ["inference", "margin"]
    # equal-weight mean over the 3 cells; MCSE sqrt(sum mcse^2) / 3 (independent cells)
    assert by_rule["poison_recall"].to_list() == pytest.approx([0.5, (1 + 0.99 + 0.97) / 3])
    assert by_rule["poison_recall_mcse"].to_list() == pytest.approx(
        [math.sqrt(0.02**2 + 0.03**2) / 3, math.sqrt(0.005**2 + 0.01**2) / 3], rel=1e-12
    )
    overall = operating_characteristics(t, by=[], metrics=["false_eviction_rate"])
    assert overall.columns == ["cells", "false_eviction_rate", "false_eviction_rate_mcse"]
    assert overall["false_eviction_rate"][0] == pytest.approx(0.223 / 6)
    with pytest.raises(ParameterError, match="by names 'gate.max_trials'"):
        operating_characteristics(t, by="gate.max_trials")


def test_pareto_frontier_hand_worked() -> None:
    t = _table()
    front = pareto_frontier(t)
    # (2, .15) (3, .03) (4, .018) (5, .02) (6, .005); cell 5 has no time_to_verdict;
    # (5, .02) is dominated by (4, .018)
    assert front["cell"].to_list() == [0, 1, 2, 4]
    missed = pareto_frontier(t, x="time_to_verdict", y="missed_poison")
    # missed poison grows with time to verdict here: only the fastest cell survives
    assert missed["cell"].to_list() == [0]
    with pytest.raises(ParameterError, match="'no_such_metric'"):
        pareto_frontier(t, y="no_such_metric")


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 6), st.integers(0, 6)),
        min_size=1,
        max_size=40,
    )
)
def test_pareto_frontier_matches_pairwise_dominance(points: list[tuple[int, int]]) -> None:
    """Small integer grids force ties; the frontier must be exactly the cells no other
    cell dominates (<= in both, < in one), duplicates of a frontier point included."""
    t = pl.DataFrame(
        {
            "cell": list(range(len(points))),
            "a": [float(p[0]) for p in points],
            "b": [float(p[1]) for p in points],
        }
    )
    xs = np.array([p[0] for p in points])
    ys = np.array([p[1] for p in points])
    dominated = (
        (xs[None, :] <= xs[:, None])
        & (ys[None, :] <= ys[:, None])
        & ((xs[None, :] < xs[:, None]) | (ys[None, :] < ys[:, None]))
    ).any(axis=1)
    expected = sorted(np.flatnonzero(~dominated).tolist(), key=lambda i: (xs[i], ys[i], i))
    assert pareto_frontier(t, x="a", y="b")["cell"].to_list() == expected


def test_recommend_at_the_estimate_and_at_a_confidence_bound() -> None:
    t = _table()
    rec = recommend(t, "false_eviction_rate <= 0.02")
    # feasible: cells 2 (ttv 4), 3 (5), 4 (6); cell 5 has no time_to_verdict
    assert rec.feasible
    assert rec.row is not None
    assert rec.row["cell"] == 2
    assert rec.n_feasible == 3
    assert rec.n_cells == 5
    assert rec.row["time_to_verdict_mcse"] == 0.2
    # cell 3 is 1.0 behind with se sqrt(.2^2 + .2^2) = 0.283: 3.5 se, not a tie
    assert rec.ties["cell"].to_list() == [2]
    assert "cell 2" in rec.message and "+/- 0.2" in rec.message
    assert "false_eviction_rate = 0.018 +/- 0.003 (MCSE)" in rec.summary()
    # at the one-sided 95% bound: 0.018 + 1.645 * 0.003 = 0.0229 > 0.02 (out),
    # 0.02 + 1.645 * 0.004 > 0.02 (out), 0.005 + 1.645 * 0.002 = 0.0083 (in)
    z = stats.norm.ppf(0.95)
    assert 0.018 + z * 0.003 > 0.02
    strict = recommend(t, "false_eviction_rate <= 0.02", confidence=0.95)
    assert strict.row is not None
    assert strict.row["cell"] == 4
    # keyword form, a lower bound, several constraints
    both = recommend(t, at_most={"false_eviction_rate": 0.05}, at_least={"poison_recall": 0.98})
    assert both.row is not None
    assert both.row["cell"] == 1
    same = recommend(t, "false_eviction_rate <= 5% and poison_recall >= 0.98")
    assert same.row == both.row
    assert recommend(t, ["false_eviction_rate <= 0.05", "poison_recall >= 0.98"]).row == both.row
    # maximize
    most = recommend(t, "false_eviction_rate <= 0.05", objective="hold_rate", minimize=False)
    assert most.row is not None
    assert most.row["cell"] == 5  # hold_rate 1.0; its undefined time_to_verdict is not used
    assert most.n_cells == 6


def test_recommend_ties_within_monte_carlo_error() -> None:
    t = _table().with_columns(pl.Series("time_to_verdict", [2.0, 3.0, 4.0, 4.3, 6.0, float("nan")]))
    rec = recommend(t, "false_eviction_rate <= 0.02")
    # cell 3: 0.3 behind, se sqrt(.2^2 + .2^2) = 0.283, 1.06 se < 2: a tie
    assert rec.ties["cell"].to_list() == [2, 3]
    assert "within Monte Carlo error" in rec.summary()


def test_recommend_says_when_nothing_is_feasible() -> None:
    t = _table()
    rec = recommend(t, "false_eviction_rate <= 0.001 and poison_recall >= 0.95")
    assert not rec.feasible
    assert rec.row is None
    assert rec.n_feasible == 0
    assert "no cell meets false_eviction_rate <= 0.001 and poison_recall >= 0.95" in rec.message
    assert "no cell meets false_eviction_rate <= 0.001 even on its own" in rec.message
    # closest in MCSE units: cell 2 violates by (0.018-0.001)/0.003 = 5.7 and 0;
    # cell 4 by (0.005-0.001)/0.002 = 2 and (0.95-0.6)/0.03 = 11.7; cell 1: 7.25 + 0
    assert rec.closest is not None
    assert rec.closest["cell"] == 2
    assert rec.ties.height == 0
    assert "closest: cell 2" in rec.summary()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"constraint": "false_eviction_rate ~ 0.02"}, "constraint must look like"),
        ({"constraint": "fer <= 0.02"}, "a constraint names 'fer'"),
        ({"objective": "speed"}, "objective names 'speed'"),
        ({"at_most": {"false_eviction_rate": "low"}}, "at_most"),
        ({"confidence": 1.5}, "confidence must be in"),
        ({"z_tie": -1}, "z_tie must be"),
    ],
)
def test_recommend_rejects_bad_arguments(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ParameterError, match=message):
        recommend(_table(), **kwargs)  # type: ignore[arg-type]


def test_constraint_parsing() -> None:
    assert Constraint.parse("poison_recall>=0.99") == Constraint("poison_recall", ">=", 0.99)
    assert Constraint.parse(" x < 1e-3 ") == Constraint("x", "<", 0.001)
    assert Constraint.parse("x <= 2%").bound == pytest.approx(0.02)
    assert not Constraint.parse("x > 0").upper
    assert str(Constraint.parse("x <= 0.5")) == "x <= 0.5"
