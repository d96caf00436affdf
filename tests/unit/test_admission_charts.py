"""Charts of the admission experiment: data passed through unchanged, marks and encodings,
errors naming the builder and the missing columns; every chart rendered to SVG by
vl-convert (which fails on an invalid Vega-Lite spec)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
import vl_convert as vlc

from cogstats._validation import ParameterError
from cogstats.charts import admission_roc, monitor_statistic, recall_by_defence


@pytest.fixture(scope="module")
def defences() -> pl.DataFrame:
    rng = np.random.default_rng(4)
    names = ["clean", "none", "read_filter", "admission", "quarantine"]
    return pl.DataFrame(
        {
            "defence": names * 2,
            "index": ["hnsw"] * 5 + ["ivf"] * 5,
            "recall_at_k_affected": rng.uniform(0.9, 1.0, 10),
            "recall_at_k_affected_mcse": rng.uniform(0.0, 0.01, 10),
            "poisoned_hit_rate": [0.0, 0.05, 0.0, 0.0, 0.0] * 2,
        }
    )


def _svg(chart: object) -> str:
    return vlc.vegalite_to_svg(chart.to_dict())  # type: ignore[attr-defined]


def test_recall_by_defence(defences: pl.DataFrame) -> None:
    chart = recall_by_defence(defences, mcse_multiplier=3.0)
    data = chart.data
    assert data.height == 10
    assert np.array_equal(data["value"], defences["recall_at_k_affected"])  # unchanged
    assert np.allclose(
        data["value_high"] - data["value"], 3.0 * defences["recall_at_k_affected_mcse"]
    )
    spec = chart.to_dict()
    assert spec["layer"][1]["encoding"]["x"]["sort"] == list(
        defences["defence"].unique(maintain_order=True)
    )
    assert "<svg" in _svg(chart)
    # no mcse column: no error bars
    plain = recall_by_defence(defences, metric="poisoned_hit_rate")
    assert [layer.mark.type for layer in plain.layer] == ["point"]
    with pytest.raises(ParameterError, match=r"recall_by_defence: defences is missing column"):
        recall_by_defence(defences, metric="recall_at_k")
    with pytest.raises(ParameterError, match="mcse_multiplier"):
        recall_by_defence(defences, mcse_multiplier=0)


def test_admission_roc() -> None:
    roc = pl.DataFrame(
        {
            "rule": ["min_provenance"] * 3 + ["max_centroid_distance"] * 2,
            "threshold": [0.0, 0.6, 0.9, 0.35, 1.0],
            "default": [False, True, False, True, False],
            "benign_rejection_rate": [0.001, 0.003, 0.3, 0.003, 0.002],
            "benign_rejection_rate_mcse": [0.0001] * 5,
            "poison_admission_rate": [0.05, 0.03, 0.0, 0.03, 0.2],
            "poison_admission_rate_mcse": [0.01] * 5,
        }
    )
    chart = admission_roc(roc)
    assert [layer.mark.type for layer in chart.layer] == ["rule", "rule", "line", "point"]
    assert np.array_equal(chart.data["y"], roc["poison_admission_rate"])
    assert "<svg" in _svg(chart)
    with pytest.raises(ParameterError, match="admission_roc: roc is missing column"):
        admission_roc(roc.drop("default"))


def test_monitor_statistic() -> None:
    periods, regions = 12, 4
    paths = pl.DataFrame(
        {
            "replicate": [0] * periods * regions + [1] * periods * regions,
            "period": np.tile(np.repeat(np.arange(periods), regions), 2),
            "region": np.tile(np.arange(regions), periods * 2),
            "affected": np.tile(np.arange(regions) == 2, periods * 2),
            "statistic": np.random.default_rng(0).uniform(0, 10, 2 * periods * regions),
            "threshold": [8.0] * 2 * periods * regions,
        }
    )
    chart = monitor_statistic(paths, replicate=1, onset=6)
    assert chart.data.height == periods * regions
    assert np.array_equal(
        chart.data["statistic"], paths.filter(pl.col("replicate") == 1)["statistic"]
    )
    assert "<svg" in _svg(chart)
    assert [layer.mark.type for layer in monitor_statistic(paths).layer] == ["line", "line"]
    with pytest.raises(ParameterError, match="no rows for replicate 5"):
        monitor_statistic(paths, replicate=5)
