"""The published look: the explorer's chosen cell and the trade-off legend (issue 20)."""

from __future__ import annotations

import json

import polars as pl

from cogstats.charts.explorer import threshold_explorer
from cogstats.charts.tradeoff import tradeoff


def test_explorer_chosen_cell_reads_no_verdict_not_null() -> None:
    table = pl.DataFrame(
        {
            "gate.min_trials": [2, 4],
            "false_eviction_rate": [0.2, None],
            "missed_poison": [0.0, None],
            "time_to_verdict": [3.0, None],
        }
    )
    spec = json.dumps(threshold_explorer(table, axes=["gate.min_trials"]).to_dict())
    assert "'no verdict'" in spec
    assert "isValid(datum.value)" in spec
    assert '"shown"' in spec


def test_tradeoff_legend_title_is_not_cut() -> None:
    cells = pl.DataFrame(
        {
            "time_to_verdict": [3.0, 6.0],
            "false_eviction_rate": [0.2, 0.1],
            "gate.promote_margin": [0.1, 0.2],
        }
    )
    spec = tradeoff(
        cells, x="time_to_verdict", y="false_eviction_rate", color="gate.promote_margin"
    ).to_dict()
    legends = [
        layer["encoding"]["color"]["legend"]
        for layer in spec["layer"]
        if "color" in layer.get("encoding", {}) and "legend" in layer["encoding"]["color"]
    ]
    assert legends
    assert all(leg["titleLimit"] >= 400 and leg["labelLimit"] >= 400 for leg in legends)


def test_operating_characteristics_panels_are_titled_in_words() -> None:
    from cogstats.charts.oc import operating_characteristics

    cells = pl.DataFrame(
        {"lesson_effect": [0.0, 0.1], "runs": [10, 10], "evict_harmful_rate": [0.1, 0.0]}
    )
    chart = operating_characteristics(
        cells, effect="lesson_effect", budget="runs", outcomes=["evict_harmful_rate"]
    )
    header = chart.to_dict()["facet"]["header"]
    # the Vega expression turns evict_harmful_rate into "evict harmful rate"
    assert header["labelExpr"] == "replace(datum.label, regexp('_', 'g'), ' ')"
