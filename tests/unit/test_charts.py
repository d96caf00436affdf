"""Chart builders: spec content (marks, encodings, data rows), display aggregation, errors.

Reference values: the display aggregates of :func:`fitness_curve` are checked against
numpy (``np.mean``, ``np.quantile`` with its default linear interpolation, ``np.std`` with
ddof=1) on the same synthetic frame, to 1e-12; every other number drawn is an input and
is checked to pass through unchanged (exact equality).  Every chart is also rendered to
SVG by vl-convert, which fails on an invalid Vega-Lite spec.
"""

from __future__ import annotations

import altair as alt
import numpy as np
import polars as pl
import pytest
import vl_convert as vlc

from cogstats._validation import ParameterError
from cogstats.charts import (
    decision_timeline,
    decisions_by_run,
    estimate_intervals,
    estimator_accuracy,
    false_eviction_tradeoff,
    fitness_curve,
    missed_poison_tradeoff,
    operating_characteristics,
    tradeoff,
)

EFFECT = "lessons.listed[0].effect"


# ---------------------------------------------------------------- synthetic frames
@pytest.fixture(scope="module")
def runs() -> pl.DataFrame:
    rng = np.random.default_rng(11)
    reps, n_runs = 7, 9
    rep = np.repeat(np.arange(reps), n_runs)
    run = np.tile(np.arange(1, n_runs + 1), reps)
    score = rng.uniform(size=reps * n_runs)
    return pl.DataFrame(
        {
            "replicate": rep,
            "run": run,
            "score": score,
            "oracle_score": np.minimum(score + rng.uniform(0, 0.2, reps * n_runs), 1.0),
            "policy": np.where(rep % 2 == 0, "a", "b"),
        }
    )


@pytest.fixture(scope="module")
def cells() -> pl.DataFrame:
    rng = np.random.default_rng(12)
    effects = [-0.2, -0.1, 0.0, 0.1, 0.2]
    budgets = [10, 50]
    e = np.tile(effects, len(budgets))
    b = np.repeat(budgets, len(effects))
    n = len(e)
    return pl.DataFrame(
        {
            "cell": np.arange(n),
            EFFECT: e,
            "runs": b,
            "replicates": np.full(n, 100),
            "promote_rate": rng.uniform(size=n),
            "evict_harmful_rate": rng.uniform(size=n),
            "evict_no_lift_rate": rng.uniform(size=n),
            "hold_rate": rng.uniform(size=n),
            "time_to_verdict": rng.uniform(2, 10, n),
            "time_to_verdict_mcse": rng.uniform(0.1, 0.3, n),
            "false_eviction_rate": rng.uniform(0, 0.2, n),
            "false_eviction_rate_mcse": rng.uniform(0.001, 0.01, n),
            "poison_recall": rng.uniform(0.8, 1.0, n),
            "poison_recall_mcse": rng.uniform(0.001, 0.01, n),
            "on_frontier": rng.uniform(size=n) < 0.4,
        }
    )


@pytest.fixture(scope="module")
def attributions() -> pl.DataFrame:
    rng = np.random.default_rng(13)
    lessons = ["a", "b", "c", "d"]
    truth = {"a": 0.03, "b": -0.2, "c": 0.0, "d": 0.01}
    rows = []
    for method in ("lift", "ols", "ridge"):
        for f in lessons:
            est = truth[f] + rng.normal(0, 0.05)
            if method == "ols" and f in ("c", "d"):
                est = None  # not identifiable: reported as null
            rows.append(
                {
                    "fact_id": f,
                    "method": method,
                    "estimate": est,
                    "ci_low": None if est is None else est - 0.1,
                    "ci_high": None if est is None else est + 0.1,
                    "true_effect": truth[f],
                    "kind": "poison" if f == "b" else "genuine",
                }
            )
    return pl.DataFrame(rows)


@pytest.fixture(scope="module")
def decisions() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "replicate": [0, 0, 0, 1, 1],
            "after_run": [4, 4, 6, 5, 5],
            "fact_id": ["G1", "P1", "G2", "G1", "P1"],
            "decision": ["promote", "evict", "evict", "evict", "evict"],
            "reason": [None, "eval-gate:harmful", "eval-gate:no_lift", "eval-gate:harmful", None],
            "kind": ["genuine", "poison", "genuine", "genuine", "poison"],
            "true_effect": [0.02, -0.2, 0.01, 0.02, -0.2],
        }
    )


def marks(chart: alt.TopLevelMixin) -> list[str]:
    spec = chart.to_dict()
    inner = spec.get("spec", spec)
    layers = inner.get("layer", [inner])
    return [m["type"] if isinstance(m, dict) else m for m in (layer["mark"] for layer in layers)]


def render(chart: alt.TopLevelMixin) -> str:
    return vlc.vegalite_to_svg(chart.to_dict())


# ---------------------------------------------------------------- fitness curves
def test_fitness_curve_matches_numpy(runs: pl.DataFrame) -> None:
    chart = fitness_curve(runs, oracle=True, poison_arrival=4, quantiles=(0.2, 0.8))
    assert marks(chart) == ["area", "line", "rule"]
    line = chart.layer[1].data
    assert line.height == 9 * 2  # runs x (score, oracle score)
    score = line.filter(pl.col("series") == "score").sort("run")
    by_run = runs.sort("run", "replicate").group_by("run", maintain_order=True)
    values = {r[0]: g["score"].to_numpy() for r, g in by_run}
    for row in score.iter_rows(named=True):
        v = values[row["run"]]
        assert row["mean"] == pytest.approx(np.mean(v), abs=1e-12)
        assert row["low"] == pytest.approx(np.quantile(v, 0.2), abs=1e-12)
        assert row["high"] == pytest.approx(np.quantile(v, 0.8), abs=1e-12)
    oracle = line.filter(pl.col("series") == "oracle score")
    assert oracle["low"].null_count() == oracle.height  # the oracle has no band
    enc = chart.layer[1].to_dict()["encoding"]
    assert enc["x"]["field"] == "run" and enc["y"]["field"] == "mean"
    assert enc["strokeDash"]["field"] == "series"
    assert chart.layer[2].data["run"].to_list() == [4]
    assert "<svg" in render(chart)


def test_fitness_curve_mcse_band(runs: pl.DataFrame) -> None:
    chart = fitness_curve(runs, band="mcse", mcse_multiplier=1.5)
    band = chart.layer[0].data.sort("run")
    first = runs.filter(pl.col("run") == 1)["score"].to_numpy()
    half = 1.5 * np.std(first, ddof=1) / np.sqrt(len(first))
    assert band["low"][0] == pytest.approx(np.mean(first) - half, abs=1e-12)
    assert band["high"][0] == pytest.approx(np.mean(first) + half, abs=1e-12)
    assert "Monte Carlo" in chart.to_dict()["title"]["subtitle"]


def test_fitness_curve_groups_and_no_band(runs: pl.DataFrame) -> None:
    chart = fitness_curve(runs, band="none", group="policy")
    assert marks(chart) == ["line"]
    data = chart.data  # altair lifts a lone layer's data to the top
    assert data.height == 2 * 9 and sorted(data["group"].unique()) == ["a", "b"]
    assert chart.layer[0].to_dict()["encoding"]["color"]["field"] == "group"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"band": "ci"}, "band must be one of"),
        ({"quantiles": (0.9, 0.1)}, "low < high"),
        ({"quantiles": (0.1,)}, "two numbers"),
        ({"quantiles": (0.1, 1.5)}, "quantiles[1] must be <= 1.0"),
        ({"mcse_multiplier": 0}, "mcse_multiplier must be > 0.0"),
        ({"poison_arrival": 0}, "poison_arrival must be >= 1"),
        ({"group": "missing"}, "missing column(s) ['missing']"),
    ],
)
def test_fitness_curve_invalid(runs: pl.DataFrame, kwargs: dict, message: str) -> None:
    with pytest.raises(ParameterError) as err:
        fitness_curve(runs, **kwargs)
    assert message in str(err.value)


def test_fitness_curve_names_missing_columns(runs: pl.DataFrame) -> None:
    with pytest.raises(ParameterError) as err:
        fitness_curve(runs.drop("oracle_score"), oracle=True)
    text = str(err.value)
    assert "fitness_curve: runs is missing column(s) ['oracle_score']" in text
    assert "got columns ['replicate', 'run', 'score', 'policy']" in text
    with pytest.raises(ParameterError, match="must be a polars DataFrame; got dict"):
        fitness_curve({"run": [1]})  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="has no rows"):
        fitness_curve(runs.head(0))


# ---------------------------------------------------------------- operating characteristics
def test_operating_characteristics_spec(cells: pl.DataFrame) -> None:
    chart = operating_characteristics(cells)
    assert isinstance(chart, alt.FacetChart)
    assert chart.data.height == cells.height * 4  # cells x default outcomes
    assert marks(chart) == ["line"]  # no _mcse columns, no reference
    spec = chart.to_dict()
    assert spec["facet"]["field"] == "outcome"
    enc = spec["spec"]["layer"][0]["encoding"]
    assert (enc["x"]["field"], enc["y"]["field"], enc["color"]["field"]) == (
        "effect",
        "rate",
        "budget",
    )
    assert enc["x"]["title"] == "true effect of the lesson on the score"  # words, not a field
    assert enc["color"]["scale"]["domain"] == [10, 50]
    got = chart.data.filter(pl.col("outcome") == "hold_rate").sort("effect", "budget")
    want = cells.sort(EFFECT, "runs")["hold_rate"]
    assert got["rate"].to_list() == want.to_list()
    assert "<svg" in render(chart)


def test_operating_characteristics_mcse_and_reference(cells: pl.DataFrame) -> None:
    with_mcse = cells.with_columns(pl.lit(0.01).alias("promote_rate_mcse"))
    reference = pl.DataFrame(
        {
            "effect": [-0.2, 0.2],
            "budget": [10, 50],
            "outcome": ["promote_rate", "promote_rate"],
            "rate": [0.1, 0.9],
            "low": [0.0, 0.8],
            "high": [0.2, 1.0],
        }
    )
    chart = operating_characteristics(
        with_mcse, outcomes=["promote_rate", "hold_rate"], reference=reference
    )
    assert marks(chart) == ["line", "rule", "point", "rule"]
    assert chart.data.height == cells.height * 2 + 2
    sim = chart.data.filter(
        (pl.col("source") == "simulated") & (pl.col("outcome") == "promote_rate")
    )
    np.testing.assert_allclose(sim["high"] - sim["rate"], 2 * 0.01, rtol=0, atol=1e-15)
    hold = chart.data.filter(pl.col("outcome") == "hold_rate")
    assert hold["low"].null_count() == hold.height  # no hold_rate_mcse: no bars
    ref = chart.data.filter(pl.col("source") == "published")
    assert ref["rate"].to_list() == [0.1, 0.9]
    assert "<svg" in render(chart)


def test_operating_characteristics_invalid(cells: pl.DataFrame) -> None:
    with pytest.raises(ParameterError) as err:
        operating_characteristics(cells, outcomes=["promote_rate", "retire_rate"])
    assert "missing column(s) ['retire_rate']" in str(err.value)
    assert "got columns ['cell', 'lessons.listed[0].effect'" in str(err.value)
    with pytest.raises(ParameterError, match="non-empty list"):
        operating_characteristics(cells, outcomes=[])
    bad_ref = pl.DataFrame({"effect": [0.1], "budget": [10], "rate": [0.5]})
    with pytest.raises(ParameterError, match=r"reference is missing column\(s\) \['outcome'\]"):
        operating_characteristics(cells, reference=bad_ref)
    other = bad_ref.with_columns(pl.lit("retire_rate").alias("outcome"))
    with pytest.raises(ParameterError, match="reference outcome"):
        operating_characteristics(cells, reference=other)


# ---------------------------------------------------------------- trade-offs
def test_tradeoff_spec(cells: pl.DataFrame) -> None:
    chart = tradeoff(
        cells,
        x="time_to_verdict",
        y="false_eviction_rate",
        color="runs",
        frontier="on_frontier",
        label=[EFFECT],
    )
    assert marks(chart) == ["rule", "rule", "line", "point"]
    data = chart.data
    assert data.height == cells.height
    np.testing.assert_allclose(
        (data["x_high"] - data["x"]).to_numpy(),
        2 * cells["time_to_verdict_mcse"].to_numpy(),
        rtol=1e-12,
    )
    assert data["frontier"].to_list() == cells["on_frontier"].to_list()
    point = chart.layer[3].to_dict()["encoding"]
    assert point["color"]["type"] == "ordinal"  # numeric colour column: ordered
    assert point["fill"]["condition"]["test"] == "datum.frontier"
    assert [t["title"] for t in point["tooltip"]][-1] == EFFECT
    line = chart.layer[2].to_dict()
    assert line["transform"] == [{"filter": "datum.frontier"}]
    subtitle = chart.to_dict()["title"]["subtitle"]
    assert "+/-2 Monte Carlo standard errors" in subtitle and "(on_frontier)" in subtitle
    assert "<svg" in render(chart)


def test_tradeoff_without_errors_or_frontier(cells: pl.DataFrame) -> None:
    chart = tradeoff(cells, x="hold_rate", y="promote_rate")
    assert marks(chart) == ["point"]
    chart = false_eviction_tradeoff(cells)
    assert marks(chart) == ["rule", "rule", "point"]
    assert chart.data["y"].to_list() == cells["false_eviction_rate"].to_list()


def test_missed_poison_tradeoff(cells: pl.DataFrame) -> None:
    chart = missed_poison_tradeoff(cells, frontier="on_frontier")
    want = (1.0 - cells["poison_recall"]).to_list()
    assert chart.data["y"].to_list() == want
    half = (chart.data["y_high"] - chart.data["y"]).to_numpy()
    np.testing.assert_allclose(half, 2 * cells["poison_recall_mcse"].to_numpy(), rtol=1e-12)
    title = chart.to_dict()["layer"][-1]["encoding"]["y"]["title"]
    assert title == "missed poison (share of poisons live at the end)"


def test_tradeoff_invalid(cells: pl.DataFrame) -> None:
    with pytest.raises(ParameterError) as err:
        tradeoff(cells, x="time_to_verdict", y="regret")
    assert "tradeoff: cells is missing column(s) ['regret']" in str(err.value)
    with pytest.raises(ParameterError, match="must be boolean"):
        tradeoff(cells, x="time_to_verdict", y="hold_rate", frontier="runs")
    with pytest.raises(ParameterError, match="poison_recall"):
        missed_poison_tradeoff(cells.drop("poison_recall"))
    with pytest.raises(ParameterError, match="mcse_multiplier"):
        tradeoff(cells, x="time_to_verdict", y="hold_rate", mcse_multiplier=-1)


# ---------------------------------------------------------------- estimator comparison
def test_estimate_intervals_spec(attributions: pl.DataFrame) -> None:
    chart = estimate_intervals(attributions, title="t")
    assert marks(chart) == ["rule", "rule", "point", "tick"]
    drawn = chart.layer[2].data
    assert drawn.height == attributions["estimate"].is_not_null().sum() == 10
    assert chart.layer[3].data.height == 4  # one true effect per lesson
    spec = chart.to_dict()
    assert spec["title"]["subtitle"].startswith("2 row(s) without an estimate not drawn")
    y = spec["layer"][2]["encoding"]["y"]
    assert y["scale"]["domain"] == ["b", "c", "d", "a"]  # by true effect
    assert spec["layer"][2]["encoding"]["yOffset"]["field"] == "group"
    assert spec["height"] == 18 * 4  # 6 px per method (3), 4 lessons
    domain = spec["layer"][0]["encoding"]["x"]["scale"]["domain"]
    shown = pl.concat([drawn["estimate"], attributions["true_effect"]])
    assert domain[0] < shown.min() and domain[1] > shown.max()
    assert "<svg" in render(chart)


def test_estimate_intervals_without_truth_or_clip(attributions: pl.DataFrame) -> None:
    chart = estimate_intervals(attributions.drop("true_effect"), truth=None, clip=False)
    assert marks(chart) == ["rule", "rule", "point"]
    assert "scale" not in chart.to_dict()["layer"][0]["encoding"]["x"]
    wide = attributions.with_columns((pl.col("ci_high") + 5).alias("ci_high"))
    spec = estimate_intervals(wide).to_dict()
    assert "10 interval(s) cut at the plot edge" in spec["title"]["subtitle"]


def test_estimate_intervals_invalid(attributions: pl.DataFrame) -> None:
    with pytest.raises(ParameterError) as err:
        estimate_intervals(attributions.drop("ci_low", "true_effect"))
    assert "missing column(s) ['ci_low', 'true_effect']" in str(err.value)
    empty = attributions.with_columns(pl.lit(None, dtype=pl.Float64).alias("estimate"))
    with pytest.raises(ParameterError, match="no row with an estimate"):
        estimate_intervals(empty)


def test_estimator_accuracy_spec() -> None:
    summary = pl.DataFrame(
        {
            "method": ["lift", "lift", "ols", "ols"],
            "kind": ["genuine", "poison"] * 2,
            "bias": [-0.01, -0.3, 0.0, 0.01],
            "bias_mcse": [0.001, 0.01, 0.002, 0.003],
            "rmse": [0.2, 0.35, 0.05, 0.06],
            "coverage": [0.7, 0.8, 0.94, 0.95],
        }
    )
    chart = estimator_accuracy(summary, group="kind", nominal_coverage=0.9)
    assert marks(chart) == ["bar", "rule", "rule"]
    data = chart.data
    assert data.height == 4 * 3
    refs = dict(data.select("metric", "reference").unique().iter_rows())
    assert refs == {"bias": 0.0, "rmse": None, "coverage": 0.9}
    bias = data.filter(pl.col("metric") == "bias")
    np.testing.assert_allclose(
        (bias["high"] - bias["value"]).to_numpy(), 2 * summary["bias_mcse"].to_numpy()
    )
    spec = chart.to_dict()
    assert spec["facet"]["column"]["field"] == "metric"
    assert spec["resolve"] == {"scale": {"y": "independent"}}
    assert spec["spec"]["layer"][0]["encoding"]["xOffset"]["field"] == "group"
    assert "<svg" in render(chart)


def test_estimator_accuracy_invalid() -> None:
    summary = pl.DataFrame({"method": ["lift"], "bias": [0.1]})
    with pytest.raises(ParameterError) as err:
        estimator_accuracy(summary)
    assert "missing column(s) ['rmse', 'coverage']" in str(err.value)
    with pytest.raises(ParameterError, match="nominal_coverage"):
        estimator_accuracy(summary, metrics=["bias"], nominal_coverage=1.0)


# ---------------------------------------------------------------- decisions
def test_decision_timeline(decisions: pl.DataFrame) -> None:
    one = decisions.filter(pl.col("replicate") == 0)
    chart = decision_timeline(one)
    assert chart.mark.type == "point"
    assert chart.data.height == 3
    assert sorted(chart.data["verdict"].to_list()) == [
        "evict: harmful",
        "evict: no_lift",
        "promote",
    ]
    enc = chart.to_dict()["encoding"]
    assert enc["shape"]["field"] == "kind" and enc["y"]["sort"] == ["G1", "P1", "G2"]
    assert "<svg" in render(chart)
    with pytest.raises(ParameterError, match="filter it to one replicate"):
        decision_timeline(decisions)


def test_decisions_by_run(decisions: pl.DataFrame) -> None:
    chart = decisions_by_run(decisions, replicates=4)
    data = chart.data
    assert data["per_replicate"].sum() == pytest.approx(decisions.height / 4, abs=1e-12)
    row = data.filter((pl.col("after_run") == 5) & (pl.col("kind") == "genuine")).row(0, named=True)
    assert (row["verdict"], row["per_replicate"]) == ("evict: harmful", 0.25)
    # an eviction without a reason keeps the bare decision as its verdict
    assert "evict" in data["verdict"].to_list()
    assert chart.to_dict()["facet"]["row"]["field"] == "kind"
    assert "<svg" in render(chart)
    flat = decisions_by_run(decisions, replicates=2, by_kind=False)
    assert "facet" not in flat.to_dict()
    with pytest.raises(ParameterError, match="replicates must be >= the 2 replicates"):
        decisions_by_run(decisions, replicates=1)
    with pytest.raises(ParameterError, match=r"missing column\(s\) \['kind'\]"):
        decisions_by_run(decisions.drop("kind"), replicates=2)


# ---------------------------------------------------------------- real simulation frames
def test_builders_accept_simulation_frames() -> None:
    """The column names the builders need are the ones the simulator writes."""
    from cogstats.sim import Scenario, simulate

    scenario = Scenario.from_dict(
        {
            "runs": 12,
            "lessons": {
                "listed": [{"id": f"L{i}", "effect": 0.02} for i in range(4)],
                "poison": [{"after_run": 3, "count": 2, "effect": -0.2}],
            },
            "retrieval": {"max_facts": 4, "candidate_slots": 3, "rest_after_trials": 3},
            "gate": {"type": "cycgraph", "decision_rule": "margin", "min_trials": 2},
        }
    )
    result = simulate(scenario, replicates=5, rng=3)
    assert fitness_curve(result.runs, oracle=True).layer[1].data.height == 24
    by_run = decisions_by_run(result.decisions, replicates=5)
    assert by_run.data["per_replicate"].sum() * 5 == pytest.approx(result.decisions.height)
    one = result.decisions.filter(pl.col("replicate") == 0)
    assert decision_timeline(one).data.height == one.height
