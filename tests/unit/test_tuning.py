"""cogstats.tune: controls from the registries, refusals as the CLI words them, what is kept.

The controls must cover every option of every registered gate and retrieval policy (the
source of the command line's flags); a refused setting must be refused in the widget with
the message the command line prints; the kept settings must parse with the real command
line parser into the same gate; the background runner must leave no run behind.
"""

from __future__ import annotations

import threading
import time
import tomllib
from pathlib import Path
from typing import Any

import polars as pl
import pytest

pytest.importorskip("ipywidgets")

from cogstats import Ledger
from cogstats._cli_options import collect_options
from cogstats.cli import build_parser, main
from cogstats.gates import GATES, get_gate
from cogstats.retrieval import RETRIEVAL_POLICIES
from cogstats.sim import Scenario, load_spec
from cogstats.tuning import tune
from cogstats.tuning.controls import make_control, option_specs
from cogstats.tuning.export import Chosen, toml_text
from cogstats.tuning.ledger import replay
from cogstats.tuning.runner import LatestRunner

ROOT = Path(__file__).resolve().parents[2]
S2 = ROOT / "simulations" / "poison_crater.toml"

TINY = {
    "runs": 8,
    "lessons": {
        "listed": [
            {"id": "good", "effect": 0.2},
            {"id": "bad", "effect": -0.2, "kind": "poison"},
            {"id": "null", "effect": 0.0},
        ]
    },
    "retrieval": {"max_facts": 2, "candidate_slots": 2},
}


def _normal(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _normal(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_normal(x) for x in v]
    return v


@pytest.mark.parametrize(("registry", "part"), [(GATES, "gate"), (RETRIEVAL_POLICIES, "retrieval")])
def test_controls_cover_every_option_of_every_registered_part(registry: Any, part: str) -> None:
    names = list(registry)
    assert names, "the registry is empty"
    for name in names:
        entry = registry[name]
        specs = option_specs(entry, part)
        assert [s.name for s in specs] == [f.name for f in entry.fields()], name
        defaults = entry.defaults()
        for spec in specs:
            control = make_control(spec)
            # the control starts at the class's default, and the flag is the CLI's
            assert _normal(control.value) == _normal(defaults.get(spec.name)), (name, spec.name)
            assert spec.flag == "--" + spec.name.replace("_", "-")
            if spec.kind in ("int", "float") and spec.default is not None:
                low, high = spec.slider_range()
                assert low <= spec.default <= high, (name, spec.name, low, high)
        # building the part from the controls' values gives the default part
        built = entry.make(**{s.name: make_control(s).value for s in specs})
        assert built == entry.make(), name


def test_bounds_and_help_come_from_the_class_docstring() -> None:
    specs = {s.name: s for s in option_specs(get_gate("cycgraph"), "gate")}
    assert (specs["promote_confidence"].minimum, specs["promote_confidence"].maximum) == (
        0.5,
        0.999,
    )
    assert specs["min_trials"].minimum == 1
    assert specs["decision_rule"].choices == ("inference", "margin")
    assert specs["max_trials"].optional and specs["max_trials"].kind == "int"
    assert "Welch" in specs["decision_rule"].help
    rec = {s.name: s for s in option_specs(get_gate("recommended"), "gate")}
    assert rec["alpha"].maximum == 0.5 and rec["covariates"].kind == "json"


@pytest.fixture(scope="module")
def tiny() -> Scenario:
    return Scenario.from_dict(TINY)


@pytest.mark.parametrize("gate", sorted(GATES.builtin))
def test_every_gate_gets_a_widget_with_one_control_per_option(tiny: Scenario, gate: str) -> None:
    t = tune(tiny, gate=gate, replicates=2, seed=0, debounce=0.0)
    try:
        assert t.wait(120)
        assert set(t.controls["gate"]) == {f.name for f in get_gate(gate).fields()}
        assert t.last_error is None, t.last_error
        assert t.latest is not None and t.latest.fitness.height == tiny.runs
    finally:
        t.close()


@pytest.mark.parametrize("policy", sorted(RETRIEVAL_POLICIES.builtin))
def test_every_policy_gets_one_control_per_option(tiny: Scenario, policy: str) -> None:
    t = tune(tiny, policy=policy, replicates=2, seed=0, debounce=0.0)
    try:
        assert t.wait(120)
        entry = RETRIEVAL_POLICIES[policy]
        assert set(t.controls["retrieval"]) == {f.name for f in entry.fields()}
        assert t.last_error is None, t.last_error
    finally:
        t.close()


def _cli_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    prefix = f"cogstats {argv[0]}: error: "
    assert err.startswith(prefix), err
    return err[len(prefix) :]


@pytest.mark.parametrize(
    ("gate", "values", "flags"),
    [
        (
            "cycgraph",
            {"min_trials": 4, "max_trials": 3},
            ["--min-trials", "4", "--max-trials", "3"],
        ),
        ("recommended", {"penalty": 0.0}, ["--penalty", "0"]),
        ("evidence", {"method": "nonsense"}, ["--method", "nonsense"]),
    ],
)
def test_invalid_settings_are_refused_with_the_cli_message(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    tiny: Scenario,
    gate: str,
    values: dict[str, Any],
    flags: list[str],
) -> None:
    ledger = tmp_path / "runs.csv"
    Ledger.from_records([{"run_id": "r1", "score": 0.5, "fact_ids": ["a"]}]).write(ledger)
    expected = _cli_error(["gate", str(ledger), "--gate", gate, *flags], capsys)
    t = tune(tiny, gate=gate, replicates=2, seed=0, debounce=0.0)
    try:
        assert t.wait(120)
        t.set(**values)
        assert t.last_error == expected
        assert "refused" in t.error.value
        before = t.runner_stats.submitted
        t.changed()  # a refused setting is not run
        assert t.runner_stats.submitted == before
    finally:
        t.close()


def test_invalid_policy_setting_is_refused_as_the_spec_reader_words_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], tiny: Scenario
) -> None:
    t = tune(tiny, policy="randomized", replicates=2, seed=0, debounce=0.0)
    try:
        t.set(inclusion_prob=1.5)
        assert t.last_error is not None
        data = tomllib.loads(Chosen("cycgraph", {}, scenario=tiny).spec_toml())
        data["retrieval"] = {"policy": "randomized", "inclusion_prob": 1.5}
        path = tmp_path / "bad.toml"
        path.write_text(toml_text(data))
        assert t.last_error in _cli_error(["simulate", str(path)], capsys)
    finally:
        t.close()


@pytest.mark.parametrize(
    ("gate", "options"),
    [
        ("cycgraph", {"decision_rule": "margin", "min_trials": 4, "promote_margin": 0.08}),
        ("cycgraph", {"max_trials": 7, "multiple_comparison": "none"}),
        (
            "recommended",
            {
                "covariates": ("difficulty", "family"),
                "crater_level": 0.2,
                "release_min_trials": 3,
                "spending_options": {"gamma": -1.0},
            },
        ),
        ("evidence", {"method": "ols", "hold_unidentifiable": False, "alpha": 0.01}),
        ("audit", {"min_hits": 3, "win_threshold": 0.6}),
    ],
)
def test_kept_command_line_parses_into_the_same_gate(gate: str, options: dict[str, Any]) -> None:
    chosen = Chosen(gate, {**get_gate(gate).defaults(), **options})
    argv = chosen.gate_argv("runs.csv")
    assert argv[:2] == ["cogstats", "gate"]
    args = build_parser(gate).parse_args(argv[1:])
    entry = get_gate(args.gate)
    rebuilt = entry.make(**collect_options(args, entry))
    assert rebuilt == chosen.gate()
    # the TOML snippet reads back into the same gate too
    table = tomllib.loads(chosen.toml())["gate"]
    name = table.pop("type")
    assert GATES.make(name, **table) == chosen.gate()


def test_kept_simulation_writes_a_spec_the_cli_simulates_with_the_same_parts(
    tmp_path: Path,
) -> None:
    t = tune(S2, replicates=20, seed=3, debounce=0.0)
    try:
        t.set(min_trials=3, max_trials=5, candidate_slots=4)
        assert t.wait(120)
        chosen = t.keep()
        path = chosen.write_spec(tmp_path / "tuned.toml")
        command = chosen.simulate_command(str(path))
        args = build_parser(None).parse_args(command.split()[1:])
        assert (args.command, args.replicates, args.seed) == ("simulate", 20, 3)
        spec = load_spec(args.spec)
        assert spec.scenario.gate.build() == chosen.gate() == t.gate_entry.make(**t.options("gate"))
        assert spec.scenario.retrieval.build() == chosen.policy()
        assert spec.scenario.gate.build().max_trials == 5
        assert spec.replicates == 20 and spec.seed == 3
        assert "cogstats gate LEDGER --gate cycgraph" in chosen.text()
        t._on_keep()  # the button
        assert "cogstats simulate" in t.kept.value and "[gate]" in t.kept.value
    finally:
        t.close()


def test_a_change_updates_chart_data_and_metrics_beside_the_baseline() -> None:
    t = tune(S2, replicates=60, seed=1, debounce=0.0)
    try:
        assert t.wait(120)
        first = t.metrics_frame()
        # every metric the simulator computes is shown (new ones too), the agent's first
        from cogstats.sim import METRIC_COLUMNS

        assert set(first["metric"]) == set(METRIC_COLUMNS)
        # S2's own gate is the margin rule: the default baseline equals it at first
        assert first.filter(pl.col("metric") == "regret")["difference"].item() == 0.0
        spec_before = t.fitness_chart.spec
        html_before = t.metrics_html.value
        t.set(decision_rule="inference")
        assert t.wait(120)
        after = t.metrics_frame()
        regret = after.row(by_predicate=pl.col("metric") == "regret", named=True)
        assert regret["difference"] != 0.0 and regret["difference_mcse"] > 0
        assert after["metric"][0] == "regret"  # the agent metrics first
        assert t.fitness_chart.spec != spec_before
        assert t.metrics_html.value != html_before
        kinds = set(t.latest.decisions["kind"]) if t.latest else set()
        assert kinds == {"genuine", "poison"}
        t.pin()  # the inference rule is now the baseline: no difference left
        assert t.wait(120)
        assert t.metrics_frame().filter(pl.col("metric") == "regret")["difference"].item() == 0
    finally:
        t.close()


def test_no_run_is_left_behind_when_changes_outpace_runs() -> None:
    shown: list[int] = []
    running = threading.Event()

    def work(x: int) -> int:
        running.set()
        time.sleep(0.05)
        return x

    runner = LatestRunner(work, lambda req, res, err, s: shown.append(res), debounce=0.01)
    try:
        for x in range(40):
            runner.submit(x)
            time.sleep(0.004)  # changes arrive ~12x faster than a run takes
        assert runner.wait(10)
        stats = runner.stats
        assert shown[-1] == 39  # the last change is the one answered last
        assert shown == sorted(shown)  # nothing older shown after something newer
        assert stats.started < 40 / 4  # superseded requests never started
        assert stats.published + stats.dropped == stats.started
        assert runner.idle
    finally:
        runner.close()
    assert not runner._thread.is_alive()


def test_ledger_tuner_replays_the_gate_and_lists_changed_verdicts(shared_dir: Path) -> None:
    from cogstats.gates import CycgraphGate

    runs = pl.read_csv(shared_dir / "data" / "cycgraph_poison_demo_runs.csv")
    ledger = Ledger.from_records(
        {
            "run_id": str(r["run"]),
            "score": r["score"],
            "fact_ids": (r["lessons_in_prompt"] or "").split(),
        }
        for r in runs.iter_rows(named=True)
        if r["recorded"] in ("yes", True)
    )
    gate = CycgraphGate(decision_rule="inference", min_trials=3)
    out = replay(ledger, gate)
    # the replay's last look judges, on the whole ledger, what earlier looks left undecided
    held = out.verdicts.filter(pl.col("decision") == "hold")["fact_id"].to_list()
    if held:
        final = gate.evaluate(ledger, held).to_frame()
        assert set(final["decision"]) == {"hold"}
    t = tune(ledger=ledger, gate=gate, debounce=0.0)
    try:
        assert t.wait(120)
        assert t.last_error is None
        assert set(t.controls["gate"]) == {f.name for f in get_gate("cycgraph").fields()}
        t.set(decision_rule="margin")  # the baseline's setting: no change
        assert t.wait(120)
        assert t.changes().height == 0
        assert t.changes("previous").height > 0  # the inference rule decided otherwise
        assert "change verdict" in t.changes_html.value
        assert t.keep().gate_command("runs.csv").endswith("--gate cycgraph --decision-rule margin")
    finally:
        t.close()


def test_the_ledger_replay_is_the_stores_run_by_run_lifecycle(shared_dir: Path) -> None:
    """tune(ledger=...)'s replay is the lesson store's: the recorded demo replayed with the
    lifecycle gate gives the store's events (P1-P3 suspended after run 4), where a batch
    look after run 5 holds them for want of trials."""
    from cogstats import _codes as C
    from cogstats.gates import LifecycleGate
    from cogstats.reports.audit import recorded_ledger
    from cogstats.store import Cadence, StoreCore

    runs = pl.read_csv(shared_dir / "data" / "cycgraph_poison_demo_runs.csv")
    ledger = recorded_ledger(runs)
    out = replay(ledger, LifecycleGate())
    core = StoreCore(LifecycleGate(), None, Cadence())
    for rec in ledger.to_records():
        core.apply_run(rec["run_id"], rec["score"], rec["fact_ids"], {})
    assert out.events is not None
    assert out.events.equals(core.events())
    status = dict(out.verdicts.select("fact_id", "status").iter_rows())
    assert {status[p] for p in ("P1", "P2", "P3")} == {C.SUSPENDED}
    first = out.events.filter(pl.col("fact_id").is_in(["P1", "P2", "P3"]))
    assert set(first["run_id"]) == {"4"} and set(first["to"]) == {C.SUSPENDED}
    upto5 = Ledger.from_records([r for r in ledger.to_records() if int(r["run_id"]) <= 5])
    batch = LifecycleGate().evaluate(upto5).to_frame()
    held = batch.filter(pl.col("fact_id").is_in(["P1", "P2", "P3"]))
    assert set(held["decision"]) == {C.HOLD} and set(held["why"]) == {C.WHY_MIN_TRIALS}
    assert out.over_time["after_run"].to_list() == list(range(1, len(ledger) + 1))
