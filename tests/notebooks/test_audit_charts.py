"""Charts of a real ledger and of the gates' decisions: data rows, encodings, errors.

Reference for the ledger's fitness curve: the centred rolling mean, standard deviation
and linear-interpolated quantiles over the window computed directly with numpy on the
same scores (1e-12).
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from cogstats import Ledger
from cogstats._validation import ParameterError
from cogstats.charts import (
    attribution_forest,
    fitness_curve,
    gate_decisions,
    lesson_timeline,
    threshold_explorer,
)


@pytest.fixture(scope="module")
def ledger() -> Ledger:
    rng = np.random.default_rng(7)
    return Ledger.from_records(
        {
            "run_id": f"r{i}",
            "score": float(rng.uniform()),
            "fact_ids": [f for f in ("a", "b", "c") if rng.random() < 0.5],
        }
        for i in range(25)
    )


def _window(scores: np.ndarray, i: int, w: int) -> np.ndarray:
    # polars' centred window of even or odd width w: positions i - w//2 .. i + (w-1)//2
    lo, hi = i - w // 2, i + (w - 1) // 2
    return scores[max(lo, 0) : min(hi, len(scores) - 1) + 1]


@pytest.mark.parametrize("window", [4, 5])
def test_fitness_curve_of_a_ledger(ledger: Ledger, window: int) -> None:
    spread = fitness_curve(ledger, window=window)
    data = spread.data.to_pandas() if hasattr(spread.data, "to_pandas") else spread.data
    frame = pl.DataFrame(data) if not isinstance(data, pl.DataFrame) else data
    scores = ledger.scores
    assert frame["run"].to_list() == list(range(1, 26))
    for i in range(len(scores)):
        part = _window(scores, i, window)
        assert frame["mean"][i] == pytest.approx(part.mean(), abs=1e-12)
        assert frame["low"][i] == pytest.approx(np.quantile(part, 0.1), abs=1e-12)
        assert frame["high"][i] == pytest.approx(np.quantile(part, 0.9), abs=1e-12)
    mcse = fitness_curve(ledger, window=window, band="mcse").data
    mcse = mcse if isinstance(mcse, pl.DataFrame) else pl.DataFrame(mcse)
    i = 10
    part = _window(scores, i, window)
    half = 2 * part.std(ddof=1) / np.sqrt(len(part))
    assert mcse["high"][i] - mcse["mean"][i] == pytest.approx(half, abs=1e-12)
    with pytest.raises(ParameterError, match="oracle, group and poison_arrival"):
        fitness_curve(ledger, oracle=True)
    with pytest.raises(ParameterError, match="the ledger has no runs"):
        fitness_curve(Ledger())


def test_lesson_timeline(ledger: Ledger) -> None:
    chart = lesson_timeline(ledger)
    injections = sum(len(set(f)) for f in ledger.frame["fact_ids"].to_list())
    assert len(chart.data) == injections
    verdicts = pl.DataFrame(
        {"fact_id": ["a"], "decision": ["evict"], "reason": ["eval-gate:harmful"]}
    )
    coloured = lesson_timeline(ledger, lessons=["a", "b"], verdicts=verdicts)
    labels = dict(coloured.data.select("fact_id", "verdict").unique().iter_rows())
    assert labels == {"a": "evict: harmful", "b": "not judged"}
    with pytest.raises(ParameterError, match="must be a cogstats Ledger"):
        lesson_timeline(ledger.frame)  # type: ignore[arg-type]


def test_estimate_intervals_take_an_attribution(ledger: Ledger) -> None:
    from cogstats import attribute
    from cogstats.charts import estimate_intervals

    result = attribute(ledger, method="lift")
    chart = estimate_intervals(result, truth=None)
    assert len(chart.layer[2].data) == len(ledger.fact_ids)


def test_forest_and_decision_grid() -> None:
    rows = pl.DataFrame(
        {
            "fact_id": ["a", "b", "c"] * 2,
            "method": ["lift"] * 3 + ["ols"] * 3,
            "estimate": [0.1, -0.2, None, 0.08, -0.25, 0.0],
            "ci_low": [0.0, -0.3, None, -0.02, -5.0, -0.1],
            "ci_high": [0.2, -0.1, None, 0.18, 4.0, 0.1],
            "decision": ["hold", "evict", "hold"] * 2,
            "reason": [None, "eval-gate:harmful", None] * 2,
        }
    )
    chart = attribution_forest(rows)
    assert len(chart.data) == 5  # the row without an estimate is not drawn
    subtitle = chart.title.subtitle
    assert (
        "1 row(s) without an estimate" in subtitle and "3 interval(s) cut" in subtitle
    )  # b (ols) and a (both)
    assert sorted(chart.data["color"].unique().to_list()) == ["evict: harmful", "hold"]
    with pytest.raises(ParameterError, match="no row with an estimate"):
        attribution_forest(rows.with_columns(pl.lit(None, dtype=pl.Float64).alias("estimate")))
    grid = gate_decisions(rows.rename({"method": "gate"}))
    assert len(grid.data) == 6 and grid.mark.type == "rect"
    with pytest.raises(ParameterError, match=r"missing column\(s\) \['gate'\]"):
        gate_decisions(rows)


def test_explorer_widgets() -> None:
    table = pl.DataFrame(
        {
            "gate.min_trials": [2, 2, 4, 4] * 2,
            "gate.promote_margin": [0.05, 0.1] * 4,
            "gate.evict_margin": [0.05, 0.1] * 4,  # zipped with the promote margin
            "gate.decision_rule": ["margin"] * 4 + ["inference"] * 4,
            "false_eviction_rate": np.linspace(0, 0.2, 8),
            "missed_poison": np.linspace(0.3, 0, 8),
            "time_to_verdict": np.linspace(2, 9, 8),
        }
    )
    axes = ["gate.min_trials", "gate.promote_margin", "gate.evict_margin", "gate.decision_rule"]
    chart = threshold_explorer(table, axes=axes)
    spec = chart.to_dict()
    kinds = {p["name"]: p["bind"].get("input") for p in spec["params"]}
    # min_trials: a slider; promote margin: a dropdown; evict margin follows it; the rule
    assert kinds == {"axis_0": "range", "axis_1": "select", "axis_2": "select"}
    assert len(chart.data) == 8
    with pytest.raises(ParameterError, match="at least two metric"):
        threshold_explorer(table, axes=axes, metrics=["false_eviction_rate"])
    with pytest.raises(ParameterError, match="no grid axis varies"):
        threshold_explorer(table.head(1), axes=axes)
