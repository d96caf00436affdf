"""Tune a gate against a simulated scenario: every change re-simulates, beside a baseline.

On each change the scenario is simulated with the tuned gate and retrieval policy (the
compiled kernel where it covers them, :func:`cogstats.sim.engine.fast_support`) in a
background thread, and three views update beside a pinned baseline (by default
cycgraph's margin rule, with the scenario's other gate options where its gate is
cycgraph's): the fitness curve over runs (mean score by run with a Monte Carlo band), the
agent metrics (means over replicates with their Monte Carlo errors) and the first
decisions by lesson kind.  The tuned setting and the baseline use the same seed, so their
difference is not blurred by different draws (common random numbers).
"""

from __future__ import annotations

import dataclasses
import html
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from cogstats._validation import ParameterError, check_int
from cogstats.tuning._base import TunerBase, gate_entry, jupyter_chart, policy_entry
from cogstats.tuning.export import Chosen

__all__ = ["AGENT_METRICS", "SimulationTuner", "TuneResult", "scenario_of"]


def _text(value: str) -> str:
    """Escape text for HTML content (quotes kept: they are not in an attribute)."""
    return html.escape(value, quote=False)


_TABLE_STYLE = "font-size:85%;line-height:1.3;white-space:nowrap"


#: The agent metrics shown first (those the simulator has, in this order); every other
#: metric of :data:`cogstats.sim.METRIC_COLUMNS` follows.
AGENT_METRICS: tuple[str, ...] = (
    "regret",
    "poison_exposure",
    "false_conviction_rate",
    "false_conviction",
    "helpful_lost",
    "helpful_lost_rate",
    "suspended_runs",
    "time_to_verdict",
    "poison_recall",
    "false_eviction_rate",
    "fitness_mean",
)

_OUTCOMES = ("promote", "evict_harmful", "evict_no_lift", "retire", "hold")


@dataclass(frozen=True)
class TuneResult:
    """One setting's simulated answer, as the widget shows it.

    Attributes
    ----------
    fitness : polars.DataFrame
        run, mean, low, high: the mean score by run over replicates and mean -/+ 2
        Monte Carlo standard errors.
    metrics : polars.DataFrame
        metric, mean, mcse, n (:meth:`cogstats.sim.SimulationResult.summary_table`).
    decisions : polars.DataFrame
        kind, outcome, rate, n: the share of lessons of each kind by first outcome.
    engine : str
        The engine that ran ("fast" is the compiled kernel).
    seconds : float
        Simulation and summary time.
    per_replicate : polars.DataFrame
        The metrics of each replicate (for paired differences with the baseline).
    """

    fitness: pl.DataFrame
    metrics: pl.DataFrame
    decisions: pl.DataFrame
    engine: str
    seconds: float
    per_replicate: pl.DataFrame


def scenario_of(spec: Any) -> tuple[Any, int | None, int | None]:
    """Return the scenario, replicates and seed of a spec path, SimulationSpec or Scenario.

    A spec with a grid gives its base scenario (the grid is what tuning replaces).

    Examples
    --------
    >>> s, reps, seed = scenario_of("simulations/poison_crater.toml")
    >>> s.runs, reps, seed
    (30, 500, 20261130)
    """
    from cogstats.sim import Scenario, SimulationSpec, load_spec

    if isinstance(spec, str | Path):
        spec = load_spec(spec)
    if isinstance(spec, SimulationSpec):
        return spec.scenario, spec.replicates, spec.seed
    if isinstance(spec, Scenario):
        return spec, None, None
    if isinstance(spec, Mapping):
        return Scenario.from_dict(spec), None, None
    raise ParameterError(
        "spec must be a spec file path, a cogstats.sim.SimulationSpec, a Scenario or a "
        f"mapping; got {type(spec).__name__}"
    )


def tuned_scenario(
    scenario: Any,
    gate: str,
    gate_options: Mapping[str, Any],
    policy: str,
    policy_options: Mapping[str, Any],
) -> Any:
    """Return the scenario with this gate and policy (the gate's cadence and the rest kept)."""
    from cogstats.gates import get_gate
    from cogstats.retrieval import get_policy
    from cogstats.sim.spec import GateSpec, RetrievalSpec, part_options

    g_entry, p_entry = get_gate(gate), get_policy(policy)
    built_gate = g_entry.make(**dict(gate_options))
    built_policy = p_entry.make(**dict(policy_options))
    g = scenario.gate
    full = {k: v for k, v in part_options(built_gate, g_entry).items() if v is not None}
    return dataclasses.replace(
        scenario,
        gate=GateSpec(gate, full, g.every, g.from_run, g.recheck_verified),
        retrieval=RetrievalSpec(policy, part_options(built_policy, p_entry)),
        preset=None,
    )


def run_setting(scenario: Any, replicates: int, seed: int, engine: str = "auto") -> TuneResult:
    """Simulate one setting and summarise it for the widget.

    Examples
    --------
    >>> s, _, _ = scenario_of("simulations/poison_crater.toml")
    >>> out = run_setting(s, 20, 1)
    >>> out.engine, out.fitness.height, sorted(set(out.decisions["kind"]))
    ('fast', 30, ['genuine', 'poison'])
    """
    from cogstats.sim import simulate

    start = time.perf_counter()
    result = simulate(scenario, replicates=replicates, rng=seed, engine=engine, progress=False)
    runs = result.runs
    assert runs is not None  # keep_runs=True
    score = pl.col("score")
    half = 2 * score.std() / pl.len().cast(pl.Float64).sqrt()
    fitness = (
        runs.group_by("run")
        .agg(score.mean().alias("mean"), (score.mean() - half).alias("low"))
        .join(runs.group_by("run").agg((score.mean() + half).alias("high")), on="run")
        .sort("run")
    )
    rates = result.outcome_rates(by=("kind",))
    decisions = rates.unpivot(
        index=["kind", "n"], on=[f"{o}_rate" for o in _OUTCOMES], variable_name="outcome"
    ).select(
        "kind",
        pl.col("outcome").str.replace("_rate$", ""),
        pl.col("value").alias("rate"),
        "n",
    )
    return TuneResult(
        fitness=fitness,
        metrics=result.summary_table(),
        decisions=decisions,
        engine=result.engine,
        seconds=time.perf_counter() - start,
        per_replicate=result.metrics,
    )


def metric_order(names: list[str]) -> list[str]:
    """Order metric names: the agent metrics (:data:`AGENT_METRICS`) first, then the rest."""
    first = [m for m in AGENT_METRICS if m in names]
    return first + [m for m in names if m not in first]


def _pm(mean: float, mcse: float) -> str:
    if mean is None or math.isnan(mean):
        return "-"
    if mcse is None or math.isnan(mcse):
        return f"{mean:.4g}"
    return f"{mean:.4g} ± {mcse:.2g}"


class SimulationTuner(TunerBase):
    """The widget :func:`cogstats.tune` returns for a simulation (see there)."""

    def __init__(
        self,
        spec: Any,
        *,
        gate: Any = None,
        policy: Any = None,
        replicates: int | None = None,
        seed: int | None = None,
        baseline: Any = "margin",
        debounce: float = 0.15,
        engine: str = "auto",
        max_replicates: int = 5000,
    ) -> None:
        import ipywidgets as widgets

        scenario, spec_reps, spec_seed = scenario_of(spec)
        self.scenario = scenario
        self.engine = engine
        g_entry, g_opts = gate_entry(scenario.gate.type if gate is None else gate)
        if gate is None or (isinstance(gate, str) and gate == scenario.gate.type):
            g_opts = {**dict(scenario.gate.policy), **g_opts}
        p_entry, p_opts = policy_entry(scenario.retrieval.policy if policy is None else policy)
        if policy is None or (isinstance(policy, str) and policy == scenario.retrieval.policy):
            p_opts = {**dict(scenario.retrieval.options), **p_opts}
        elif isinstance(policy, str):  # another policy: the prompt caps it shares carry over
            shared = {f.name for f in p_entry.fields()}
            p_opts = {k: v for k, v in scenario.retrieval.options.items() if k in shared}
        reps = int(
            check_int("replicates", replicates or min(spec_reps or 200, 200), minimum=1) or 1
        )
        self.replicates_control = widgets.BoundedIntText(
            value=reps,
            min=1,
            max=max(max_replicates, reps),
            step=50,
            description="replicates",
            style={"description_width": "150px"},
        )
        self.seed_control = widgets.IntText(
            value=int(seed if seed is not None else (spec_seed or 0)),
            description="seed",
            style={"description_width": "150px"},
        )
        super().__init__(g_entry, g_opts, p_entry, p_opts, debounce=debounce)
        self.replicates_control.observe(lambda change: self.changed(), "value")
        self.seed_control.observe(lambda change: self.changed(), "value")
        self._baseline = self._baseline_setting(baseline)
        self._baseline_cache: dict[Any, TuneResult] = {}
        self.latest: TuneResult | None = None
        self.baseline_result: TuneResult | None = None
        self.fitness_chart = jupyter_chart(self._fitness_chart(None, None))
        self.decisions_chart = jupyter_chart(self._decisions_chart(None, None))
        self.metrics_html = widgets.HTML("<i>waiting for the first run...</i>")
        self.baseline_html = widgets.HTML(self._baseline_text())
        sim_box = [
            widgets.HTML("<b>simulation</b>"),
            self.replicates_control,
            self.seed_control,
        ]
        left = widgets.VBox(
            [*self._option_boxes(), *sim_box, widgets.HBox([self.keep_button, self.pin_button])],
            layout=widgets.Layout(width="540px"),
        )
        right = widgets.VBox(
            [
                self.status,
                self.error,
                self.baseline_html,
                self.fitness_chart,
                self.metrics_html,
                self.decisions_chart,
            ],
            layout=widgets.Layout(width="480px"),
        )
        self.widget = widgets.VBox(
            [
                widgets.HTML(
                    f"<b>cogstats.tune</b>: {_text(scenario.name)} ({scenario.runs} runs)"
                ),
                widgets.HBox([left, right], layout=widgets.Layout(flex_flow="row wrap")),
                self.kept,
            ]
        )
        self.changed()

    # ------------------------------------------------------------------ settings
    def _extra_controls(self) -> dict[str, Any]:
        return {"replicates": self.replicates_control, "seed": self.seed_control}

    def _baseline_setting(self, baseline: Any) -> tuple[str, dict[str, Any], str, dict[str, Any]]:
        policy = (self.scenario.retrieval.policy, dict(self.scenario.retrieval.options))
        if baseline == "margin":
            options: dict[str, Any] = {"decision_rule": "margin"}
            if self.scenario.gate.type == "cycgraph":
                options = {**dict(self.scenario.gate.policy), **options}
            return ("cycgraph", options, *policy)
        if isinstance(baseline, Chosen):
            return (
                baseline.gate_name,
                dict(baseline.gate_options),
                baseline.policy_name or policy[0],
                dict(baseline.policy_options) if baseline.policy_name else policy[1],
            )
        entry, opts = gate_entry(baseline)
        return (entry.name, opts, *policy)

    def _baseline_text(self) -> str:
        name, opts, pol, _ = self._baseline
        shown = ", ".join(f"{k}={v!r}" for k, v in opts.items() if v is not None)
        return (
            f"<span style='color:#666'>baseline (grey): gate {_text(name)} "
            f"({_text(shown)}), retrieval {_text(pol)}</span>"
        )

    def pin(self) -> None:
        """Pin the current settings as the baseline the next runs are compared with."""
        chosen = self.chosen()
        self._baseline = self._baseline_setting(chosen)
        self.baseline_html.value = self._baseline_text()
        self.changed()

    def chosen(self) -> Chosen:
        """Return the current settings (gate, policy, replicates, seed, tuned scenario)."""
        gate, policy = self.options("gate"), self.options("retrieval")
        assert self.policy_entry is not None
        scenario = tuned_scenario(
            self.scenario, self.gate_entry.name, gate, self.policy_entry.name, policy
        )
        return Chosen(
            self.gate_entry.name,
            gate,
            self.policy_entry.name,
            policy,
            int(self.replicates_control.value),
            int(self.seed_control.value),
            scenario,
        )

    # ------------------------------------------------------------------ work
    def _request(self) -> Any:
        assert self.policy_entry is not None
        return (
            self.gate_entry.name,
            self.options("gate"),
            self.policy_entry.name,
            self.options("retrieval"),
            int(self.replicates_control.value),
            int(self.seed_control.value),
            self._baseline,
        )

    def _work(self, request: Any) -> tuple[TuneResult, TuneResult]:
        gate, g_opts, policy, p_opts, reps, seed, baseline = request
        tuned = run_setting(
            tuned_scenario(self.scenario, gate, g_opts, policy, p_opts), reps, seed, self.engine
        )
        key = (repr(baseline), reps, seed)
        base = self._baseline_cache.get(key)
        if base is None:
            base = run_setting(tuned_scenario(self.scenario, *baseline), reps, seed, self.engine)
            self._baseline_cache = {key: base}  # one baseline at a time
        return tuned, base

    def _describe(self, request: Any, result: Any) -> str:
        tuned = result[0]
        return f"{request[4]} replicates, engine {tuned.engine}, simulation {tuned.seconds:.2f} s"

    def _show(self, request: Any, result: Any) -> None:
        tuned, base = result
        self.latest, self.baseline_result = tuned, base
        self.fitness_chart.chart = self._fitness_chart(tuned, base)
        self.metrics_html.value = self._metrics_table(tuned, base)
        self.decisions_chart.chart = self._decisions_chart(tuned, base)

    # ------------------------------------------------------------------ views
    def metrics_frame(self) -> pl.DataFrame:
        """Return the last answer's metrics beside the baseline's, with their errors."""
        if self.latest is None or self.baseline_result is None:
            raise ParameterError("no run has finished yet (call wait() first)")
        return _metrics_frame(self.latest, self.baseline_result)

    def _metrics_table(self, tuned: TuneResult, base: TuneResult) -> str:
        frame = _metrics_frame(tuned, base)
        rows = "".join(
            "<tr>"
            f"<td>{_text(r['metric'])}</td>"
            f"<td class='tuned'>{_pm(r['tuned'], r['tuned_mcse'])}</td>"
            f"<td style='color:#888'>{_pm(r['baseline'], r['baseline_mcse'])}</td>"
            f"<td>{_pm(r['difference'], r['difference_mcse'])}</td>"
            "</tr>"
            for r in frame.iter_rows(named=True)
        )
        return (
            "<table class='cogstats-tune-metrics' style='"
            f"{_TABLE_STYLE}'>"
            "<thead><tr><th>metric (mean ± Monte Carlo error)</th><th>tuned</th>"
            "<th>baseline</th><th>tuned − baseline</th></tr></thead>"
            f"<tbody>{rows}</tbody></table>"
        )

    def _fitness_chart(self, tuned: TuneResult | None, base: TuneResult | None) -> Any:
        import altair as alt

        parts = []
        for name, res in (("baseline", base), ("tuned", tuned)):
            if res is not None:
                parts.append(res.fitness.with_columns(pl.lit(name).alias("setting")))
        data = (
            pl.concat(parts)
            if parts
            else pl.DataFrame(
                schema={
                    "run": pl.Int64,
                    "mean": pl.Float64,
                    "low": pl.Float64,
                    "high": pl.Float64,
                    "setting": pl.String,
                }
            )
        )
        color = alt.Color(
            "setting:N",
            scale=alt.Scale(domain=["tuned", "baseline"], range=["#4c78a8", "#9e9e9e"]),
            title=None,
        )
        x = alt.X("run:Q", title="run", axis=alt.Axis(tickMinStep=1))
        band = (
            alt.Chart(data)
            .mark_area(opacity=0.2)
            .encode(x=x, y=alt.Y("low:Q", title="mean score"), y2="high:Q", color=color)
        )
        line = (
            alt.Chart(data)
            .mark_line(point=True)
            .encode(
                x=x,
                y=alt.Y("mean:Q", scale=alt.Scale(zero=False)),
                color=color,
                tooltip=["setting", "run", alt.Tooltip("mean:Q", format=".4f")],
            )
        )
        return (band + line).properties(
            width=340, height=220, title="fitness over runs (band: ± 2 Monte Carlo errors)"
        )

    def _decisions_chart(self, tuned: TuneResult | None, base: TuneResult | None) -> Any:
        import altair as alt

        parts = []
        for name, res in (("baseline", base), ("tuned", tuned)):
            if res is not None:
                parts.append(res.decisions.with_columns(pl.lit(name).alias("setting")))
        data = (
            pl.concat(parts)
            if parts
            else pl.DataFrame(
                schema={
                    "kind": pl.String,
                    "outcome": pl.String,
                    "rate": pl.Float64,
                    "n": pl.UInt32,
                    "setting": pl.String,
                }
            )
        )
        return (
            alt.Chart(data)
            .mark_bar()
            .encode(
                x=alt.X(
                    "rate:Q", stack="zero", title="share of lessons", scale=alt.Scale(domain=[0, 1])
                ),
                y=alt.Y("setting:N", title=None, sort=["tuned", "baseline"]),
                color=alt.Color(
                    "outcome:N",
                    scale=alt.Scale(
                        domain=list(_OUTCOMES),
                        range=["#54a24b", "#e45756", "#f58518", "#b279a2", "#bab0ac"],
                    ),
                ),
                row=alt.Row("kind:N", title="first decision by lesson kind"),
                tooltip=["kind", "setting", "outcome", alt.Tooltip("rate:Q", format=".3f")],
            )
            .properties(width=300, height=50)
        )


def _metrics_frame(tuned: TuneResult, base: TuneResult) -> pl.DataFrame:
    """Return each metric tuned and baseline with Monte Carlo errors, and their paired difference.

    The two settings ran on the same seed, replicate for replicate (common random
    numbers), so the difference's error is that of the per-replicate differences.
    """
    t = tuned.metrics.select("metric", pl.col("mean").alias("tuned"), pl.col("mcse").alias("m"))
    b = base.metrics.select(
        "metric", pl.col("mean").alias("baseline"), pl.col("mcse").alias("baseline_mcse")
    )
    out = t.join(b, on="metric", how="left").rename({"m": "tuned_mcse"})
    pairs = tuned.per_replicate.join(base.per_replicate, on="replicate", suffix="__b")
    diffs: list[tuple[str, float | None, float | None]] = []
    for metric in out["metric"].to_list():
        if metric not in pairs.columns or f"{metric}__b" not in pairs.columns:
            diffs.append((metric, None, None))
            continue
        d = (pairs[metric].cast(pl.Float64) - pairs[f"{metric}__b"].cast(pl.Float64)).to_numpy()
        d = d[~np.isnan(d)]
        mean = float(d.mean()) if d.size else None
        mcse = float(d.std(ddof=1) / math.sqrt(d.size)) if d.size > 1 else None
        diffs.append((metric, mean, mcse))
    diff = pl.DataFrame(
        diffs,
        schema={"metric": pl.String, "difference": pl.Float64, "difference_mcse": pl.Float64},
        orient="row",
    )
    out = out.join(diff, on="metric", how="left")
    order = metric_order(out["metric"].to_list())
    return (
        out.with_columns(
            pl.col("metric").replace_strict(order, list(range(len(order)))).alias("_o")
        )
        .sort("_o")
        .drop("_o")
    )
