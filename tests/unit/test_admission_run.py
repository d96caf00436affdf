"""The admission experiment end to end: the must-shows at a small fixed seed (and again
on a second seed and a second dimension), determinism, the result object, and the CLI
through ``cogstats.cli.main``.

The world is the shipped spec's (tests/unit/_admission.py: 3 tenants instead of 8,
dimension 64); the second run has 2 tenants at dimension 128 and another seed.
Tolerances come from the Monte Carlo error across replicates: "recall loss at most
max(0.01, 2 MCSE)" is the must-show's own wording.  What the must-shows
ask and what is asserted (docs/admission.md has the full-size figures):

* read_filter: no poisoned result; benign recall in the affected regions lower than
  ``clean`` by a margin comparable to the field report's 4-11% (asserted: between 2%
  and 15%, and more than 2 MCSE above zero); laundered summaries above 0.
* admission: recall loss at most max(0.01, 2 MCSE); benign rejection at most 1%;
  poison admission low (asserted: at most 15%) and no admitted poison served (at most
  0.5% of queries); laundered summaries: the must-show asks for none, and this world
  does not give exactly none (a poisoned write that admission lets through is an
  outlier that k-means can put in a small cluster, where it is a tenth of the members):
  asserted is at most a tenth of the read filter's; at the centroid threshold the ROC
  gives for this geometry (0.30), none, with every other admission must-show holding.
  On both index types.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from cogstats.admission import (
    AdmissionResult,
    MonitorResult,
    load_admission_spec,
    run_admission,
    run_monitor,
)
from cogstats.admission.run import DEFENCE_COLUMNS, ROC_COLUMNS
from cogstats.cli import main
from tests.unit._admission import SHIPPED, small_spec


def row(result: AdmissionResult, defence: str, index: str) -> dict[str, float]:
    table = result.defences.filter((pl.col("defence") == defence) & (pl.col("index") == index))
    assert table.height == 1
    return table.row(0, named=True)


def check_must_shows(result: AdmissionResult) -> None:
    for index in ("hnsw", "ivf"):
        clean = row(result, "clean", index)
        rf = row(result, "read_filter", index)
        adm = row(result, "admission", index)
        assert clean["poisoned_hit_rate"] == 0 and clean["recall_loss_affected"] == 0
        # read filter: poisoned results 0, recall lower in the affected regions, laundering
        assert rf["poisoned_hit_rate"] == 0.0
        assert 0.02 <= rf["recall_loss_affected"] <= 0.15
        assert rf["recall_loss_affected"] > 2 * rf["recall_loss_affected_mcse"]
        assert rf["laundered_summaries"] > 0
        assert rf["laundered_hit_rate"] > 0  # the laundered summaries are served
        # ... and the poisoned vectors are in the index: unfiltered, they are served
        assert row(result, "none", index)["poisoned_hit_rate"] > 0
        # admission
        assert adm["recall_loss_affected"] <= max(0.01, 2 * adm["recall_loss_affected_mcse"])
        assert adm["benign_rejection_rate"] <= 0.01
        assert adm["poison_admission_rate"] <= 0.15
        assert adm["poisoned_hit_rate"] <= 0.005
        assert adm["laundered_summaries"] <= 0.1 * rf["laundered_summaries"]


#: the must-shows concern these four (quarantine has its own tests; leaving it out saves
#: an index rebuild per world)
MUST_SHOW = ["clean", "none", "read_filter", "admission"]


@pytest.fixture(scope="module")
def result() -> AdmissionResult:
    spec = small_spec(world__queries=1000, defences=MUST_SHOW)
    return run_admission(spec, replicates=3, rng=20261201)


def test_must_shows(result: AdmissionResult) -> None:
    check_must_shows(result)


def test_must_shows_on_another_seed_and_dimension() -> None:
    spec = small_spec(world__dim=128, world__tenants=2, world__queries=1000, defences=MUST_SHOW)
    check_must_shows(run_admission(spec, replicates=3, rng=2))


def test_admission_at_the_threshold_read_off_the_roc_launders_nothing() -> None:
    """The must-show's "no laundered summaries" with every other admission must-show, at
    the centroid threshold docs/admission.md reads off the ROC for this geometry (0.30
    instead of the field report's 0.35, which lets a few off-centroid writes through):
    the shipped world at full size, 3 worlds, both index types."""
    spec = load_admission_spec(SHIPPED).with_values(
        {
            "defences": ["clean", "admission"],
            "defence.admission.max_centroid_distance": 0.30,
            "world.queries": 1000,
        }
    )
    result = run_admission(spec, replicates=3, rng=20261201)
    for index in ("hnsw", "ivf"):
        adm = row(result, "admission", index)
        assert adm["laundered_summaries"] == 0.0
        assert adm["recall_loss_affected"] <= max(0.01, 2 * adm["recall_loss_affected_mcse"])
        assert adm["benign_rejection_rate"] <= 0.01
        assert adm["poison_admission_rate"] <= 0.05
        assert adm["poisoned_hit_rate"] == 0.0


def test_tables(result: AdmissionResult) -> None:
    assert result.defences.columns == list(DEFENCE_COLUMNS)
    assert result.defences.height == 8  # 4 defences x 2 indexes
    assert (result.defences["replicates"] == 3).all() and (result.defences["k"] == 10).all()
    per = result.per_replicate
    # the table is the mean of the replicates, its mcse their sd / sqrt(n)
    rf = per.filter((pl.col("defence") == "read_filter") & (pl.col("index") == "hnsw"))
    values = rf["recall_loss_affected"].to_numpy()
    got = row(result, "read_filter", "hnsw")
    assert got["recall_loss_affected"] == pytest.approx(values.mean(), rel=1e-12)
    assert got["recall_loss_affected_mcse"] == pytest.approx(
        values.std(ddof=1) / np.sqrt(values.size), rel=1e-12
    )
    # clean writes no poison: its poison admission rate is undefined, not zero
    assert row(result, "clean", "ivf")["poison_admission_rate"] is None
    seeds = [json.loads(s) for s in per["seed"].unique(maintain_order=True)]
    assert [s["spawn_key"] for s in seeds] == [[i] for i in range(3)]
    assert result.roc.columns == list(ROC_COLUMNS)
    defaults = result.roc.filter(pl.col("default"))
    adm = row(result, "admission", "hnsw")
    assert defaults.height == 2
    assert np.allclose(defaults["benign_rejection_rate"], adm["benign_rejection_rate"])
    assert np.allclose(defaults["poison_admission_rate"], adm["poison_admission_rate"])
    # a stricter provenance bar rejects more benign writes and admits fewer poisoned ones
    prov = result.roc.filter(pl.col("rule") == "min_provenance").sort("threshold")
    assert (np.diff(prov["benign_rejection_rate"].to_numpy()) >= 0).all()
    assert (np.diff(prov["poison_admission_rate"].to_numpy()) <= 1e-12).all()
    shares = result.laundered_by_share([0.1, 0.5])
    at = shares.filter((pl.col("defence") == "read_filter") & (pl.col("share") == 0.1))
    assert at["laundered_summaries"][0] == pytest.approx(
        row(result, "read_filter", "hnsw")["laundered_summaries"]
    )
    assert "AdmissionResult" in result.summary() and "<table" in result._repr_html_()


def tiny(**values: object) -> dict[str, object]:
    """Two tenants and a lighter graph: for the checks that do not need the full geometry."""
    return {
        "world__tenants": 2,
        "world__queries": 200,
        "monitor__replicates": 1,
        "index__hnsw__m": 16,
        "index__hnsw__ef_construction": 40,
        **values,
    }


def test_same_seed_same_tables() -> None:
    spec = small_spec(**tiny())
    a = run_admission(spec, replicates=1, rng=9)
    b = run_admission(spec, replicates=1, rng=9)
    assert a.per_replicate.equals(b.per_replicate) and a.roc.equals(b.roc)
    assert a.summaries.equals(b.summaries)
    # (another seed, another world: tests/unit/test_admission_world_index.py)


def test_monitor_experiment() -> None:
    spec = small_spec(**tiny())
    result = run_monitor(spec, rng=4)
    again = run_monitor(spec, rng=4)
    assert isinstance(result, MonitorResult) and result.paths.equals(again.paths)
    m = spec.monitor
    first = result.per_replicate.row(0, named=True)
    # the read filter serves no poisoned result, before the alarm or after
    assert first["poisoned_results_before_alarm"] == 0
    assert result.paths["poisoned_results"].sum() == 0
    assert result.paths.height == m.periods * spec.world.topics
    affected = result.paths.filter(pl.col("affected") & (pl.col("period") >= m.onset + 1))
    before = result.paths.filter(pl.col("period") < m.onset)
    assert affected["recall"].mean() < before["recall"].mean()  # the symptom it watches
    table = result.summary_table()
    assert table["measure"].to_list()[:3] == ["detected", "false_alarm", "delay"]


def test_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = small_spec(**tiny(defences=["clean", "read_filter"]))
    path = tmp_path / "spec.toml"
    path.write_text(_toml(spec.to_dict()))
    out = tmp_path / "out"
    code = main(
        [
            "admission",
            str(path),
            "--replicates",
            "1",
            "--seed",
            "5",
            "--out",
            str(out),
            "--monitor",
            "--no-progress",
        ]
    )
    assert code == 0
    printed = capsys.readouterr().out
    assert "read_filter" in printed and "admission thresholds" in printed
    defences = pl.read_parquet(out / "defences.parquet")
    assert defences.columns == list(DEFENCE_COLUMNS) and defences.height == 4
    assert pl.read_parquet(out / "admission_roc.parquet").columns == list(ROC_COLUMNS)
    for name in ("replicates", "roc_replicates", "summaries", "monitor", "monitor_paths"):
        assert (out / f"{name}.parquet").is_file()
    # the same seed through the library gives the same table
    again = run_admission(spec, replicates=1, rng=5).defences
    assert defences.equals(again)


def test_cli_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[world]\ndim = 12\n")
    assert main(["admission", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "cogstats admission: error:" in err and "key 'world.dim'" in err and "bad.toml" in err
    assert main(["admission", str(tmp_path / "absent.toml")]) == 2
    assert main(["admission", str(SHIPPED), "--replicates", "0"]) == 2
    assert "--replicates must be >= 1" in capsys.readouterr().err


def _toml(data: dict[str, object], prefix: str = "") -> str:
    """A minimal TOML writer for the spec mapping (tables, numbers, strings, lists)."""
    scalars, tables = [], []
    for key, value in data.items():
        if isinstance(value, dict):
            tables.append((key, value))
        else:
            scalars.append(f"{key} = {json.dumps(value)}")
    text = (f"[{prefix}]\n" if prefix and scalars else "") + "".join(s + "\n" for s in scalars)
    for key, value in tables:
        text += _toml(value, f"{prefix}.{key}" if prefix else key)
    return text
