"""Chart builders of the gate comparison: spec content, data passed through, errors.

No statistics are drawn: every number in a chart's data is an input, checked to pass
through unchanged (exact equality), and the error bars are the rate plus/minus the
stated multiple of its Monte Carlo error (1e-12).  Every chart is rendered to SVG by
vl-convert, which fails on an invalid Vega-Lite spec.
"""

from __future__ import annotations

import altair as alt
import numpy as np
import polars as pl
import pytest
import vl_convert as vlc

from cogstats._validation import ParameterError
from cogstats.charts import (
    FIGURE_TITLES,
    HEADLINE_TITLES,
    LIFECYCLE_TITLES,
    benchmark_figures,
    rule_operating_characteristics,
)


@pytest.fixture(scope="module")
def s1() -> pl.DataFrame:
    rng = np.random.default_rng(4)
    effects = [-0.1, 0.0, 0.1]
    rows = []
    for label in ("margin", "inference"):
        for runs in (10, 100):
            for e in effects:
                rate = None if e == 0 else float(rng.uniform())
                rows.append((label, e, runs, rate, None if rate is None else 0.02))
    return pl.DataFrame(
        rows,
        schema=[
            "label",
            "effect",
            "runs",
            "correct_verdict_rate",
            "correct_verdict_rate_mcse",
        ],
        orient="row",
    )


@pytest.fixture(scope="module")
def figures() -> pl.DataFrame:
    rows = []
    for scenario in ("s2", "variant"):
        for label in ("margin", "inference"):
            for k, metric in enumerate(("poison_recall", "median_removal_delay", "regret")):
                v = 0.1 * (k + 1) + (0.05 if label == "margin" else 0.0)
                rows.append((scenario, label, metric, v, v - 0.01, v + 0.01))
    return pl.DataFrame(
        rows, schema=["scenario", "label", "metric", "value", "low", "high"], orient="row"
    )


def _svg(chart: alt.TopLevelMixin) -> str:
    return vlc.vegalite_to_svg(chart.to_dict())


def test_rule_oc_passes_rates_through_with_error_bars(s1: pl.DataFrame) -> None:
    chart = rule_operating_characteristics(s1, mcse_multiplier=2.0)
    data = chart.data
    expected = s1.filter(pl.col("correct_verdict_rate").is_not_null())
    assert data.height == expected.height == 8  # effect-0 rows (null rate) left out
    assert data["rate"].to_list() == expected["correct_verdict_rate"].to_list()
    rate = data["rate"].to_numpy()  # rate plus/minus 2 x 0.02, kept in [0, 1]
    np.testing.assert_allclose(data["high"], np.minimum(rate + 0.04, 1.0), atol=1e-12)
    np.testing.assert_allclose(data["low"], np.maximum(rate - 0.04, 0.0), atol=1e-12)
    marks = [layer["mark"]["type"] for layer in chart.to_dict()["spec"]["layer"]]
    assert marks == ["line", "rule"]
    assert chart.facet.shorthand == "runs:O"
    assert "<svg" in _svg(chart)


def test_rule_oc_errors(s1: pl.DataFrame) -> None:
    with pytest.raises(ParameterError, match="missing column"):
        rule_operating_characteristics(s1.drop("runs"))
    with pytest.raises(ParameterError, match="mcse_multiplier"):
        rule_operating_characteristics(s1, mcse_multiplier=0)
    with pytest.raises(ParameterError, match="no non-null"):
        rule_operating_characteristics(s1.with_columns(pl.lit(None).alias("correct_verdict_rate")))


def test_benchmark_figures_panels_and_targets(figures: pl.DataFrame) -> None:
    goals = pl.DataFrame(
        {
            "where": ["s2", "s2", "variant"],
            "metric": ["poison_recall", None, "regret"],
            "target": [0.99, 5.0, 0.14],
        }
    )
    chart = benchmark_figures(figures, goals=goals)
    data = chart.data
    assert data.height == figures.height
    assert (
        data.sort("scenario", "rule", "metric")["value"].to_list()
        == figures.sort("scenario", "label", "metric")["value"].to_list()
    )
    targets = data.filter(pl.col("target").is_not_null())
    found = zip(targets["scenario"], targets["metric"], targets["target"], strict=True)
    assert sorted(set(found)) == [
        ("s2", "poison_recall", 0.99),
        ("variant", "regret", 0.14),
    ]
    assert set(data["panel"]) == {FIGURE_TITLES[m] for m in set(figures["metric"])}
    spec = chart.to_dict()
    assert [layer["mark"]["type"] for layer in spec["spec"]["layer"]] == ["bar", "rule", "rule"]
    assert spec["resolve"]["scale"]["y"] == "independent"
    assert "<svg" in _svg(chart)


def test_benchmark_figures_errors(figures: pl.DataFrame) -> None:
    with pytest.raises(ParameterError, match="missing column"):
        benchmark_figures(figures.drop("low"))
    with pytest.raises(ParameterError, match="none of the metrics"):
        benchmark_figures(figures, metrics={"nope": "x"})
    with pytest.raises(ParameterError, match="goals is missing column"):
        benchmark_figures(figures, goals=pl.DataFrame({"where": ["s2"]}))
    only = benchmark_figures(figures, metrics={"regret": "regret"})
    assert set(only.data["metric"]) == {"regret"}


def test_every_comparison_metric_has_a_panel_title() -> None:
    """Every S2 and S4 figure compare_gates produces is charted (issue 20: none left out)."""
    from cogstats.reports.comparison import S2_METRICS, S4_METRICS

    assert set(S2_METRICS) | set(S4_METRICS) <= set(FIGURE_TITLES)
    assert FIGURE_TITLES == {**HEADLINE_TITLES, **LIFECYCLE_TITLES}
    assert not set(HEADLINE_TITLES) & set(LIFECYCLE_TITLES)
    # short enough for a panel header of the default width (no cut titles)
    assert max(len(t) for t in FIGURE_TITLES.values()) <= 40


def test_lifecycle_panels_render(figures: pl.DataFrame) -> None:
    rows = figures.with_columns(
        pl.col("metric").replace(
            {"poison_recall": "poison_out_last5", "regret": "regret_vs_margin"}
        )
    )
    chart = benchmark_figures(rows, metrics=LIFECYCLE_TITLES)
    assert set(chart.data["panel"]) == {
        "poisons out of the last 5 runs (share)",
        "regret minus margin rule's (paired)",
    }
    assert "<svg" in _svg(chart)


def test_wrapped_panels_of_one_scenario(figures: pl.DataFrame) -> None:
    one = figures.filter(pl.col("scenario") == "s2")
    chart = benchmark_figures(one, columns=2)
    spec = chart.to_dict()
    assert spec["columns"] == 2 and spec["facet"]["field"] == "panel"
    assert chart.data["value"].to_list() == one["value"].to_list()  # passed through
    assert "<svg" in _svg(chart)
    with pytest.raises(ParameterError, match="one scenario"):
        benchmark_figures(figures, columns=2)
    with pytest.raises(ParameterError, match="columns"):
        benchmark_figures(one, columns=0)


def test_a_metric_without_values_gets_no_panel(figures: pl.DataFrame) -> None:
    unmeasured = figures.filter(pl.col("metric") == "regret").with_columns(
        metric=pl.lit("helpful_lost_rate"), value=float("nan"), low=None, high=None
    )
    chart = benchmark_figures(pl.concat([figures, unmeasured]))
    assert FIGURE_TITLES["helpful_lost_rate"] not in set(chart.data["panel"])
    assert set(chart.data["panel"]) == {FIGURE_TITLES[m] for m in set(figures["metric"])}
