"""The reports package without running a notebook: registry, parameter checks, chart and
HTML export, cycgraph's published table and the estimator scoring loops.

References: the published rates are the numbers of docs/reference.md (cycgraph's table)
as recorded in tests/reference/test_s1_reproduction.py (exact); exact binomial intervals
are checked against the closed form through scipy's beta quantiles (1e-12) and the
binomial p-values against scipy.stats.binomtest (exact); the accuracy summary is checked
against a direct numpy computation of the same pooled ratios and cluster-robust standard
errors from the attributions themselves (1e-12).
"""

from __future__ import annotations

import math
from pathlib import Path

import altair as alt
import nbformat
import numpy as np
import polars as pl
import pytest
from scipy import stats

from cogstats import attribute
from cogstats._validation import ParameterError
from cogstats.reports import (
    REPORTS,
    ReportError,
    export_html,
    get_report,
    render_demo_report,
    report_names,
    run_report,
    save_chart,
)
from cogstats.reports import runner as runner_module
from cogstats.reports.evaluation import attribution_accuracy, compare_attributions
from cogstats.reports.reference import (
    EFFECT,
    PUBLISHED_OC,
    published_comparison,
    published_oc,
    verdict_rates,
)

PUBLISHED_IN_TEST = {  # tests/reference/test_s1_reproduction.py, from cycgraph-gate.md
    -0.3: (0.94, 1.00, 1.00, 0.94),
    -0.1: (0.06, 0.08, 0.02, 0.16),
    0.0: (0.02, 0.00, 0.02, 0.00),
    0.1: (0.14, 0.04, 0.14, 0.06),
    0.3: (0.94, 1.00, 0.98, 1.00),
}


# ---------------------------------------------------------------- registry
def test_registry_lookup_errors() -> None:
    assert report_names() == sorted(REPORTS)
    with pytest.raises(ParameterError) as err:
        get_report("poison")
    assert str(err.value).startswith(f"report must be one of {report_names()}; got 'poison'")
    with pytest.raises(ParameterError, match="did you mean 'tradeoffs'"):
        run_report("tradeof", "unused")
    with pytest.raises(ParameterError, match="report must be one of"):
        render_demo_report("unused", reports=["nope"])
    # per-report parameters are checked before any notebook runs
    with pytest.raises(ParameterError, match="not among the reports run: \\['tradeoffs'\\]"):
        render_demo_report("unused", reports=["tradeoffs"], parameters={"poison_crater": {}})
    with pytest.raises(ParameterError, match="no parameter 'sweep'"):
        render_demo_report("unused", parameters={"tradeoffs": {"sweep": "x"}})


def test_parameter_validation() -> None:
    report = get_report("poison_crater")
    assert report.validate({"replicates": 5, "spec_path": "x.toml"}) == {
        "replicates": 5,
        "spec_path": "x.toml",
    }
    with pytest.raises(ParameterError) as err:
        report.validate({"replicat": 5})
    text = str(err.value)
    assert "no parameter 'replicat' (did you mean 'replicates'?)" in text
    assert "allowed: ['accuracy_replicates', 'figures_dir'" in text
    with pytest.raises(ParameterError, match="'replicates' must be int .default 500.; got '5'"):
        report.validate({"replicates": "5"})
    with pytest.raises(ParameterError, match="must be int"):
        report.validate({"replicates": True})
    with pytest.raises(ParameterError, match="must be a mapping"):
        report.validate([("replicates", 5)])  # type: ignore[arg-type]
    # checked before any kernel starts
    with pytest.raises(ParameterError, match="no parameter 'seeds'"):
        run_report("tradeoffs", "unused", {"seeds": 1})


def test_missing_notebook_folder(tmp_path: Path) -> None:
    with pytest.raises(ReportError, match="notebook .* not found"):
        get_report("tradeoffs").path(tmp_path)


def test_kernel_check(monkeypatch: pytest.MonkeyPatch) -> None:
    runner_module._check_kernel("python3")  # this environment's own kernel passes
    with pytest.raises(ReportError, match="no Jupyter kernel named 'no-such-kernel'"):
        runner_module._check_kernel("no-such-kernel")

    class Spec:
        argv = ("/opt/elsewhere/bin/python", "-m", "ipykernel_launcher")

    from jupyter_client import kernelspec

    monkeypatch.setattr(kernelspec.KernelSpecManager, "get_kernel_spec", lambda self, n: Spec())
    with pytest.raises(ReportError, match="runs '/opt/elsewhere/bin/python', not this"):
        runner_module._check_kernel("python3")


# ---------------------------------------------------------------- export
@pytest.fixture(scope="module")
def chart() -> alt.Chart:
    data = pl.DataFrame({"x": [1, 2, 3], "y": [0.2, 0.5, 0.4]})
    return alt.Chart(data).mark_line().encode(x="x:Q", y="y:Q")


def test_save_chart(chart: alt.Chart, tmp_path: Path) -> None:
    files = save_chart(chart, tmp_path / "figs", "line", formats=("svg", "png", "html"))
    assert [f.name for f in files] == ["line.svg", "line.png", "line.html"]
    assert files[0].read_text().lstrip().startswith("<svg")
    assert files[1].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page = files[2].read_text()
    assert "vegaEmbed" in page and "cdn.jsdelivr" not in page
    assert "<script src=" not in page  # the Vega bundle is inline
    assert save_chart(chart, "", "line") == []
    with pytest.raises(ParameterError, match="formats must be one of"):
        save_chart(chart, tmp_path, "line", formats=("pdf",))
    with pytest.raises(ParameterError, match="file stem"):
        save_chart(chart, tmp_path, "../line")


def test_export_html_inline_svg(chart: alt.Chart, tmp_path: Path) -> None:
    with alt.renderers.enable("svg"):  # what the report notebooks do
        bundle = chart._repr_mimebundle_()
    data = bundle[0] if isinstance(bundle, tuple) else bundle
    output = nbformat.v4.new_output("display_data", data={"image/svg+xml": data["image/svg+xml"]})
    code = nbformat.v4.new_code_cell("chart", outputs=[output])
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# Title $x$"), code])
    nbformat.write(nb, tmp_path / "a.ipynb")
    page = export_html(tmp_path / "a.ipynb", tmp_path / "a.html").read_text()
    assert "<svg" in page and "mark-line" in page  # the chart's markup, not an <img>
    for cdn in ("cdn.jsdelivr", "cdnjs.cloudflare", "unpkg.com", "<script src="):
        assert cdn not in page


def test_export_html_refuses_remote(tmp_path: Path) -> None:
    html = '<img src="https://example.org/tracker.png">'
    output = nbformat.v4.new_output("display_data", data={"text/html": html})
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x", outputs=[output])])
    nbformat.write(nb, tmp_path / "b.ipynb")
    with pytest.raises(ReportError, match="would load a remote resource"):
        export_html(tmp_path / "b.ipynb", tmp_path / "b.html")
    assert not (tmp_path / "b.html").exists()


# ---------------------------------------------------------------- cycgraph's table
def test_published_table() -> None:
    assert PUBLISHED_OC == PUBLISHED_IN_TEST
    table = published_oc()
    assert table.height == 20
    for row in table.iter_rows(named=True):
        budgets = (10, 25, 50, 100)
        assert row["rate"] == PUBLISHED_IN_TEST[row["effect"]][budgets.index(row["budget"])]
        k, n = round(row["rate"] * 50), 50
        low = 0.0 if k == 0 else stats.beta.ppf(0.025, k, n - k + 1)
        high = 1.0 if k == n else stats.beta.ppf(0.975, k + 1, n - k)
        assert row["low"] == pytest.approx(low, abs=1e-12)
        assert row["high"] == pytest.approx(high, abs=1e-12)
        want = "wrong_verdict_rate" if row["effect"] == 0 else "correct_verdict_rate"
        assert row["outcome"] == want


def test_verdict_rates_and_comparison() -> None:
    cells = pl.DataFrame(
        {
            EFFECT: [-0.3, 0.0, 0.3, 0.3, 0.05],
            "runs": [10, 25, 100, 50, 10],
            "replicates": [400, 400, 400, 400, 400],
            "promote_rate": [0.0, 0.01, 0.93, 0.0, 0.2],
            "evict_harmful_rate": [0.95, 0.02, 0.0, 0.01, 0.0],
        }
    )
    v = verdict_rates(cells)
    assert v["correct_verdict_rate"].to_list() == [0.95, None, 0.93, 0.0, 0.2]
    assert v["wrong_verdict_rate"].to_list() == [0.0, 0.03, 0.0, 0.01, 0.0]
    assert v["correct_verdict_rate_mcse"][0] == pytest.approx(math.sqrt(0.95 * 0.05 / 400))
    table = published_comparison(cells)
    assert table.height == 4  # effect 0.05 is not in the published table
    for row in table.iter_rows(named=True):
        p = min(max(row["rate"], 1 / 800), 1 - 1 / 800)
        want = stats.binomtest(row["published_k"], 50, p).pvalue
        assert row["pvalue"] == want
        assert row["consistent"] == (want >= 0.001)
    bad = table.filter((pl.col("effect") == 0.3) & (pl.col("budget") == 50)).row(0, named=True)
    assert (bad["published_rate"], bad["rate"], bad["consistent"]) == (0.98, 0.0, False)
    with pytest.raises(ParameterError, match=r"missing column\(s\) \['replicates'\]"):
        published_comparison(cells.drop("replicates"))


# ---------------------------------------------------------------- estimator scoring
@pytest.fixture(scope="module")
def simulation():
    from cogstats.sim import Scenario, simulate

    scenario = Scenario.from_dict(
        {
            "runs": 30,
            "gate": {"type": "none"},
            "retrieval": {"policy": "randomized", "max_facts": 3, "candidate_slots": 3},
            "lessons": {
                "listed": [
                    {"id": "a", "effect": 0.1},
                    {"id": "b", "effect": 0.0},
                    {"id": "c", "effect": -0.1, "kind": "genuine"},  # named: else a poison
                    {"id": "d", "effect": 0.05, "kind": "neutral"},
                ]
            },
        }
    )
    return simulate(scenario, replicates=12, rng=8)


def test_compare_attributions(simulation) -> None:
    methods = {"lift": {}, "ridge 1": {"method": "ridge", "penalty": 1.0}}
    truth = simulation.lessons.filter(pl.col("replicate") == 0)
    rows = compare_attributions(simulation.ledger(0), methods, truth=truth, rng=1)
    lift = attribute(simulation.ledger(0), method="lift").to_frame()
    got = rows.filter(pl.col("method") == "lift").sort("fact_id")
    assert got["estimate"].to_list() == lift.sort("fact_id")["estimate"].to_list()
    assert sorted(rows["method"].unique()) == ["lift", "ridge 1"]
    assert dict(got.select("fact_id", "true_effect").iter_rows())["c"] == -0.1
    with pytest.raises(ParameterError, match="method must be one of"):
        compare_attributions(simulation.ledger(0), {"x": {"method": "lasso"}})
    with pytest.raises(ParameterError, match="unknown option 'alpha' for method 'ridge'"):
        compare_attributions(simulation.ledger(0), {"r": {"method": "ridge", "alpha": 1}})
    with pytest.raises(ParameterError, match="non-empty mapping"):
        compare_attributions(simulation.ledger(0), {})


def test_attribution_accuracy_matches_direct_computation(simulation) -> None:
    acc = attribution_accuracy(simulation, {"lift": {}}, replicates=10, by=("kind",), rng=2)
    assert acc["method"].to_list() == ["lift", "lift"]
    for kind in ("genuine", "neutral"):
        row = acc.filter(pl.col("kind") == kind).row(0, named=True)
        s_err, s_sq, s_cov, n = [], [], [], []
        for r in range(10):
            frame = attribute(simulation.ledger(r), method="lift").to_frame()
            truth = simulation.lessons.filter(
                (pl.col("replicate") == r) & (pl.col("kind") == kind)
            ).select("fact_id", "true_effect")
            j = frame.join(truth, on="fact_id")
            e = (j["estimate"] - j["true_effect"]).to_numpy()
            cov = (
                (j["ci_low"] <= j["true_effect"]) & (j["true_effect"] <= j["ci_high"])
            ).to_numpy()
            s_err.append(e.sum())
            s_sq.append((e**2).sum())
            s_cov.append(cov.sum())
            n.append(len(e))
        s_err_a, s_sq_a, s_cov_a, n_a = map(np.asarray, (s_err, s_sq, s_cov, n))
        m = s_err_a.sum() / n_a.sum()
        se = math.sqrt(10 / 9 * np.sum((s_err_a - m * n_a) ** 2)) / n_a.sum()
        mse = s_sq_a.sum() / n_a.sum()
        se_mse = math.sqrt(10 / 9 * np.sum((s_sq_a - mse * n_a) ** 2)) / n_a.sum()
        assert row["lessons"] == n_a.sum()
        assert row["bias"] == pytest.approx(m, abs=1e-12)
        assert row["bias_mcse"] == pytest.approx(se, abs=1e-12)
        assert row["rmse"] == pytest.approx(math.sqrt(mse), abs=1e-12)
        assert row["rmse_mcse"] == pytest.approx(se_mse / (2 * math.sqrt(mse)), abs=1e-12)
        assert row["coverage"] == pytest.approx(s_cov_a.sum() / n_a.sum(), abs=1e-12)
        assert row["estimated_share"] == 1.0 and row["replicates"] == 10
    with pytest.raises(ParameterError, match="replicates must be <= the 12"):
        attribution_accuracy(simulation, {"lift": {}}, replicates=13)
    with pytest.raises(ParameterError, match=r"by names column\(s\) \['family'\]"):
        attribution_accuracy(simulation, {"lift": {}}, by=("family",))
