"""Which named benchmark a report's input is, and the goals that go with it.

A report on a sweep speaks about the scenario it was given: benchmark S2 only when the
sweep's world *is* S2's (the bundled ``simulations/poison_crater.toml``, whatever the
sweep calls itself, with grid axes on the gate and retrieval only), otherwise the
scenario by its own name and description.  Goals (S2's: poison recall at least 0.99,
false evictions at most 2%, then the fastest eviction of the poisons) appear only for a
named benchmark, or when the reader gives goals of their own.

- :data:`BENCHMARKS`: the named benchmarks of docs/benchmarks.md that have a bundled spec;
- :func:`benchmark_of`: the benchmark a scenario is, or None;
- :func:`describe_sweep` and :func:`describe_scenario`: a :class:`ReportInput` (what a
  summary says the input is);
- :func:`check_goals`: a :class:`GoalCheck` (the setting a sweep recommends under the
  benchmark's or the reader's goals, or a sentence saying there are none).
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from cogstats._validation import ParameterError

__all__ = [
    "BENCHMARKS",
    "Benchmark",
    "GoalCheck",
    "ReportInput",
    "benchmark_of",
    "check_goals",
    "describe_scenario",
    "describe_sweep",
]


@dataclass(frozen=True)
class Benchmark:
    """A named benchmark with a bundled spec.

    Attributes
    ----------
    label : str
        ``"S2"``.
    spec : str
        The bundled spec, relative to the resources root.
    about : str
        What the world is, in a phrase.
    constraints : tuple of str
        Its goals as :func:`cogstats.sweep.recommend` constraints (empty: no sweep goals).
    objective : str
        The metric minimized among the settings that meet the goals.
    goals_text : str
        The goals in words.
    """

    label: str
    spec: str
    about: str
    constraints: tuple[str, ...] = ()
    objective: str = "time_to_verdict"
    goals_text: str = ""


#: The named benchmarks a report recognises (docs/benchmarks.md).
BENCHMARKS: tuple[Benchmark, ...] = (
    Benchmark(
        "S1",
        "simulations/cycgraph_oc.toml",
        "cycgraph's operating characteristics: one lesson of true effect e, 100 runs",
    ),
    Benchmark(
        "S2",
        "simulations/poison_crater.toml",
        "the poison crater: 30 runs, co-injected lessons, run difficulty, three poisons "
        "after run 3",
        constraints=("poison_recall >= 0.99", "false_eviction_rate <= 0.02"),
        objective="poison_time_to_eviction",
        goals_text="poison recall of at least 0.99 and false evictions of at most 2%, then "
        "the fastest eviction of the poisons",
    ),
    Benchmark(
        "S3",
        "simulations/adaptive_confounding.toml",
        "adaptive confounding: UCB1 retrieval over lessons tied to task families",
    ),
    Benchmark(
        "S4",
        "simulations/peeking_null.toml",
        "peeking: 20 null lessons injected at random, a verdict after every run",
    ),
)

#: Scenario keys that describe the world (a grid axis on one of them leaves the benchmark).
_NOT_WORLD = ("name", "description", "gate", "retrieval", "policy", "preset")


def _world(scenario: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in scenario.items() if k not in _NOT_WORLD}


def _bundled_world(bench: Benchmark) -> dict[str, Any] | None:
    from cogstats.reports.resources import resource_path
    from cogstats.sim import load_spec

    path = resource_path(bench.spec)
    if not path.is_file():
        return None
    return _world(load_spec(path).scenario.to_dict(full=True))


def benchmark_of(scenario: Mapping[str, Any] | Any, axes: Sequence[str] = ()) -> Benchmark | None:
    """Return the named benchmark whose world ``scenario`` is, or None.

    The world is everything but the name, the description, the gate and the retrieval:
    the lessons, runs, difficulty and score.  A sweep whose grid varies a world setting
    (an axis outside ``gate.``, ``retrieval.`` and ``policy.``) is no benchmark.

    Parameters
    ----------
    scenario : mapping or Scenario
        ``Scenario.to_dict(full=True)`` (as a sweep store's manifest keeps it under
        ``spec.scenario``), or the scenario itself.
    axes : sequence of str
        The sweep's grid axes (dotted paths).

    Examples
    --------
    >>> from cogstats.reports.resources import resource_path
    >>> from cogstats.sim import load_spec
    >>> s2 = load_spec(resource_path("simulations/poison_crater.toml")).scenario
    >>> benchmark_of(s2).label
    'S2'
    >>> benchmark_of(s2, axes=["gate.min_trials"]).label
    'S2'
    >>> benchmark_of(s2, axes=["runs"]) is None  # the grid changes the world
    True
    >>> import dataclasses
    >>> benchmark_of(dataclasses.replace(s2, runs=40)) is None
    True
    """
    if not isinstance(scenario, Mapping):
        to_dict = getattr(scenario, "to_dict", None)
        if to_dict is None:
            raise ParameterError(
                "scenario must be a Scenario or its to_dict(full=True); "
                f"got {type(scenario).__name__}"
            )
        scenario = to_dict(full=True)
    if any(not str(a).startswith(("gate.", "retrieval.", "policy.")) for a in axes):
        return None
    world = _world(scenario)
    for bench in BENCHMARKS:
        if _bundled_world(bench) == world:
            return bench
    return None


@dataclass(frozen=True)
class ReportInput:
    """What a report was given, as its summary names it.

    Attributes
    ----------
    name : str
        The scenario's (or sweep's) name.
    description : str
        Its description (may be empty).
    benchmark : Benchmark or None
        The named benchmark it is, if any.
    """

    name: str
    description: str = ""
    benchmark: Benchmark | None = None

    @property
    def about(self) -> str:
        """Return a phrase for a summary: ``benchmark S2 (...)`` or ``the scenario 'x' (...)``.

        Examples
        --------
        >>> ReportInput("my-world", "two poisons").about
        "the scenario 'my-world' (two poisons)"
        """
        if self.benchmark is not None:
            return f"benchmark {self.benchmark.label} ({self.benchmark.about})"
        desc = f" ({self.description})" if self.description else ""
        return f"the scenario {self.name!r}{desc}"


def describe_scenario(scenario: Any, axes: Sequence[str] = ()) -> ReportInput:
    """Return what a report simulating ``scenario`` (a Scenario) says it is.

    Examples
    --------
    >>> from cogstats.reports.resources import resource_path
    >>> from cogstats.sim import load_spec
    >>> spec = load_spec(resource_path("simulations/cycgraph_demo.toml"))
    >>> describe_scenario(spec.scenario).benchmark is None
    True
    """
    d = scenario.to_dict(full=True)
    return ReportInput(
        str(d.get("name") or ""), str(d.get("description") or ""), benchmark_of(d, axes)
    )


def describe_sweep(sweep_path: Any = "", spec_path: Any = "") -> ReportInput:
    """Return what a report on a sweep says it is: from its store, else from its spec.

    Parameters
    ----------
    sweep_path : str or Path
        A sweep store (``cogstats sweep --out DIR``); its manifest pins the scenario.
    spec_path : str or Path
        Used when ``sweep_path`` is empty: the sweep spec (TOML) run in the report.

    Examples
    --------
    >>> from cogstats.reports.resources import resource_path
    >>> got = describe_sweep(spec_path=resource_path("simulations/threshold_sweep_ci.toml"))
    >>> got.name, got.benchmark.label
    ('threshold-sweep-ci', 'S2')
    """
    if sweep_path:
        from cogstats.sweep.store import read_manifest

        manifest = read_manifest(sweep_path)
        scenario = dict(manifest["spec"]["scenario"])
        axes = list(manifest.get("axes") or [])
    elif spec_path:
        from cogstats.sweep import load_sweep

        resolved = load_sweep(spec_path).resolved()
        scenario = dict(resolved["scenario"])
        axes = [path for path, _ in resolved["grid"]]
    else:
        raise ParameterError("describe_sweep needs a sweep_path or a spec_path; got neither")
    return ReportInput(
        str(scenario.get("name") or ""),
        str(scenario.get("description") or ""),
        benchmark_of(scenario, axes),
    )


@dataclass(frozen=True, repr=False, eq=False)
class GoalCheck:
    """The setting a sweep recommends under goals, or why there are none.

    Attributes
    ----------
    goals : tuple of str
        The constraints checked (empty: none).
    whose : str
        ``"S2's goals"``, ``"the goals given"`` or ``""``.
    recommendation : Recommendation or None
        :func:`cogstats.sweep.recommend`'s answer (None without goals).
    text : str
        What the section says, in a paragraph.
    axes : tuple of str
        The grid columns its table shows.
    """

    goals: tuple[str, ...]
    whose: str
    recommendation: Any
    text: str
    axes: tuple[str, ...] = ()

    @property
    def n_feasible(self) -> int | None:
        """Settings meeting every goal (None without goals)."""
        return None if self.recommendation is None else int(self.recommendation.n_feasible)

    @property
    def message(self) -> str:
        """One sentence for a summary."""
        return self.text if self.recommendation is None else str(self.recommendation.message)

    def row(self, columns: Sequence[str]) -> pl.DataFrame:
        """Return the chosen (or closest) setting's ``columns``; empty without goals."""
        rec = self.recommendation
        if rec is None:
            return pl.DataFrame()
        row = rec.row if rec.row is not None else rec.closest
        if row is None:
            return pl.DataFrame()
        return pl.DataFrame([row]).select([c for c in columns if c in row])

    def _repr_html_(self) -> str:
        from cogstats.reports.display import show_table

        body = f"<p>{html.escape(self.text)}</p>"
        rec = self.recommendation
        if rec is None:
            return f"<div>{body}</div>"
        columns = [
            *self.axes,
            rec.objective,
            f"{rec.objective}_mcse",
            *[m for c in rec.constraints for m in (c.metric, f"{c.metric}_mcse")],
        ]
        caption = (
            "The recommended setting" if rec.feasible else "No setting meets the goals; the closest"
        )
        table = show_table(self.row(list(dict.fromkeys(columns))), caption=caption)
        return f"<div>{body}{table._repr_html_()}</div>"


def check_goals(
    table: pl.DataFrame,
    given: ReportInput,
    goals: Sequence[str] = (),
    objective: str = "",
    axes: Sequence[str] = (),
) -> GoalCheck:
    """Check a sweep's settings against goals: the reader's, else the named benchmark's.

    Parameters
    ----------
    table : polars.DataFrame
        The sweep's cell table (:func:`cogstats.sweep.with_derived` applied).
    given : ReportInput
        What the sweep is (:func:`describe_sweep`).
    goals : sequence of str
        Constraints such as ``"false_eviction_rate <= 0.02"``; empty: the benchmark's
        (none when the sweep is no named benchmark, or the benchmark has no sweep goals).
    objective : str
        The metric to minimize among the settings meeting the goals; empty: the
        benchmark's, else ``time_to_verdict``.
    axes : sequence of str
        The grid columns the section's table shows.

    Examples
    --------
    >>> import polars as pl
    >>> t = pl.DataFrame({"cell": [0, 1], "gate.min_trials": [2, 4],
    ...                   "false_eviction_rate": [0.05, 0.01],
    ...                   "false_eviction_rate_mcse": [0.01, 0.005],
    ...                   "time_to_verdict": [3.0, 5.0], "time_to_verdict_mcse": [0.1, 0.1]})
    >>> check_goals(t, ReportInput("mine")).n_feasible is None  # no benchmark, no goals
    True
    >>> check_goals(t, ReportInput("mine"), ["false_eviction_rate <= 0.02"]).row(
    ...     ["gate.min_trials"]).item()
    4
    """
    from cogstats.sweep import recommend

    bench = given.benchmark
    if goals:
        constraints = tuple(str(g) for g in goals)
        whose = "the goals given"
        obj = objective or (bench.objective if bench is not None else "time_to_verdict")
        words = ", ".join(constraints)
    elif bench is not None and bench.constraints:
        constraints = bench.constraints
        whose = f"{bench.label}'s goals"
        obj = objective or bench.objective
        words = bench.goals_text
    else:
        text = (
            f"The sweep ran {given.about}, which is not a named benchmark: no goals are "
            "checked. To pick a setting, give constraints in the report parameter goals "
            '(e.g. ["false_eviction_rate < 0.02"]) or to cogstats.sweep.recommend(table, '
            "constraint=[...])."
        )
        return GoalCheck((), "", None, text, tuple(axes))
    rec = recommend(table, constraint=list(constraints), objective=obj)
    text = f"{whose[:1].upper()}{whose[1:]}: {words} (minimizing {obj}). {rec.message}"
    return GoalCheck(constraints, whose, rec, text, tuple(axes))
