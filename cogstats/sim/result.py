"""The result of a simulation: frames, summaries, and ledgers for the estimators."""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from cogstats import _codes as C
from cogstats._codes import HARMFUL
from cogstats._results import frame_text
from cogstats._validation import ParameterError
from cogstats.ledger import Ledger
from cogstats.sim.metrics import EVENTS_COLUMN, METRIC_COLUMNS, status_event_frame
from cogstats.sim.spec import Scenario

__all__ = ["SimulationResult", "decision_events", "summarize_metrics"]


def summarize_metrics(
    metrics: pl.DataFrame, columns: tuple[str, ...] = METRIC_COLUMNS
) -> pl.DataFrame:
    """Mean of each metric over replicates with its Monte Carlo standard error.

    NaN/null values (a metric undefined in a replicate) are skipped; ``n`` counts the
    replicates where the metric is defined and ``mcse = sd / sqrt(n)``.

    Examples
    --------
    >>> import polars as pl
    >>> m = pl.DataFrame({"regret": [0.1, 0.3]})
    >>> metric, mean, mcse, n = summarize_metrics(m, ("regret",)).row(0)
    >>> metric, round(mean, 12), round(mcse, 12), n
    ('regret', 0.2, 0.1, 2)
    """
    rows = []
    for col in columns:
        if col not in metrics.columns:
            continue
        # numpy on the column (a polars query per statistic costs ~0.5 ms; a sweep or the
        # S1 grid summarises hundreds of these)
        values = metrics[col].cast(pl.Float64).to_numpy()
        values = values[~np.isnan(values)]
        n = int(values.size)
        mean = float(values.mean()) if n else math.nan
        sd = float(values.std(ddof=1)) if n > 1 else math.nan
        rows.append((col, mean, sd / math.sqrt(n) if n > 1 else math.nan, n))
    return pl.DataFrame(
        rows,
        schema={"metric": pl.String, "mean": pl.Float64, "mcse": pl.Float64, "n": pl.Int64},
        orient="row",
    )


def decision_events(outcomes: pl.DataFrame) -> pl.DataFrame:
    """Return the promote / evict / retire events of per-lesson outcomes, in time order.

    Rows replicate, after_run, fact_id, decision, reason, kind, true_effect, sorted by
    (replicate, after_run, fact_id): :attr:`SimulationResult.decisions`.
    """
    parts = [
        outcomes.filter(pl.col(col).is_not_null()).select(
            "replicate",
            pl.col(col).alias("after_run"),
            "fact_id",
            pl.lit(name).alias("decision"),
            (pl.col("evict_reason") if name == "evict" else pl.lit(reason, dtype=pl.String)).alias(
                "reason"
            ),
            "kind",
            "true_effect",
        )
        for col, name, reason in (
            ("promoted_at_run", "promote", None),
            ("evicted_at_run", "evict", None),
            ("retired_at_run", "retire", C.LOW_WIN_RATE),
        )
    ]
    return pl.concat(parts).sort(["replicate", "after_run", "fact_id"])


#: a frame, or a function that builds it when it is first asked for
Frame = pl.DataFrame | Callable[[], pl.DataFrame]


@dataclass(frozen=True, repr=False, eq=False, init=False)
class SimulationResult:
    """Everything one call of :func:`~cogstats.sim.simulate` produced.

    Attributes
    ----------
    scenario : Scenario
        What was simulated.
    replicates : int
        How many replicates.
    seed : mapping
        The root SeedSequence (entropy, spawn_key): ``numpy.random.SeedSequence(**seed)``
        re-creates the run exactly.
    engine : str
        The engine that ran: "fast" (compiled) or "reference".
    extras : mapping
        ``engine_requested`` ("auto", "fast" or "reference") and ``engine_reason`` (why
        the reference engine ran, None for the compiled one).
    runs : polars.DataFrame or None
        replicate, run, score, recorded, difficulty, oracle_score, fact_ids, and where
        present difficulty_proxy, family, eligible_ids, propensities.
    decisions : polars.DataFrame
        replicate, after_run, fact_id, decision (promote, evict, retire), reason, kind,
        true_effect.
    lessons : polars.DataFrame
        One row per replicate and lesson: truth, trials, first decision, final status and
        the lifecycle (admitted_at_run, suspended_at_runs, released_at_runs,
        suspended_runs, retest_injections, last_injected_run).
    metrics : polars.DataFrame
        One row per replicate (see :mod:`cogstats.sim.metrics` for definitions).

    The status events (every status change, :meth:`status_events`) come with the
    lessons frame (its ``_status_events`` column, which the result moves out of it).
    ``decisions`` and ``lessons`` (with the status events) are built when first asked
    for: :func:`~cogstats.sim.simulate` passes functions that build them, so a caller that
    reads only the metrics (a benchmark, a tuning loop) does not pay for the per-lesson
    frames and their list columns.  Either argument may be a frame or such a function.
    """

    scenario: Scenario
    replicates: int
    seed: Mapping[str, Any]
    engine: str
    runs: pl.DataFrame | None
    metrics: pl.DataFrame
    extras: Mapping[str, Any] = field(default_factory=dict)

    def __init__(
        self,
        scenario: Scenario,
        replicates: int,
        seed: Mapping[str, Any],
        engine: str,
        runs: pl.DataFrame | None,
        decisions: Frame | None,
        lessons: Frame,
        metrics: pl.DataFrame,
        extras: Mapping[str, Any] | None = None,
    ) -> None:
        set_ = object.__setattr__
        set_(self, "scenario", scenario)
        set_(self, "replicates", replicates)
        set_(self, "seed", seed)
        set_(self, "engine", engine)
        set_(self, "runs", runs)
        set_(self, "metrics", metrics)
        set_(self, "extras", {} if extras is None else extras)
        set_(self, "_sources", {"lessons": lessons, "decisions": decisions})
        set_(self, "_built", {})

    def _frame(self, name: str) -> pl.DataFrame:
        built: dict[str, pl.DataFrame] = self._built  # type: ignore[attr-defined]
        if name not in built:
            if name == "decisions" and self._sources["decisions"] is None:  # type: ignore[attr-defined]
                built[name] = decision_events(self.lessons)
            else:
                source = self._sources[name]  # type: ignore[attr-defined]
                frame = source() if callable(source) else source
                if name == "lessons" and EVENTS_COLUMN in frame.columns:
                    built["_events"] = status_event_frame(frame)
                    frame = frame.drop(EVENTS_COLUMN)
                built[name] = frame
            self._sources[name] = None  # type: ignore[attr-defined]  # a builder runs once
        return built[name]

    @property
    def lessons(self) -> pl.DataFrame:
        """One row per replicate and lesson (built when first asked for; see the class)."""
        return self._frame("lessons")

    @property
    def decisions(self) -> pl.DataFrame:
        """Promote / evict / retire events, in time order (built when first asked for)."""
        return self._frame("decisions")

    def status_events(self) -> pl.DataFrame:
        """Return every lesson status change, in time order.

        Columns replicate, run (the gate's look after which the status changed: the new
        status holds from run ``run + 1``), fact_id, from, to (lesson statuses,
        :data:`cogstats._codes.LESSON_STATUSES`), reason, why (null where the compiled
        engine ran: it records no why), kind, true_effect.  Both engines write the same
        events (``why`` aside).

        Examples
        --------
        >>> from cogstats.sim import Scenario, simulate
        >>> s = Scenario.from_dict({"runs": 30,
        ...     "retrieval": {"max_facts": 2, "rest_after_trials": 4},
        ...     "lessons": {"listed": [{"id": "bad", "effect": -0.4, "kind": "poison"},
        ...                            {"id": "good", "effect": 0.1}]},
        ...     "gate": {"type": "cycgraph", "decision_rule": "margin", "min_trials": 3}})
        >>> ev = simulate(s, replicates=2, rng=1, engine="reference").status_events()
        >>> ev.select("fact_id", "from", "to", "why").row(0)
        ('bad', 'candidate', 'evicted', 'harm_evidence')
        """
        lessons = self.lessons
        events = self._built.get("_events")  # type: ignore[attr-defined]
        return events if events is not None else status_event_frame(lessons)

    def injected_statuses(self) -> pl.DataFrame:
        """Return the status of every injected lesson in every run.

        One row per (replicate, run, injected lesson): replicate, run, fact_id, status
        (the lesson's status during the run: candidate from its arrival, then the ``to``
        of its last status event before the run).  A suspended lesson appears only in a
        re-test run.  Needs the runs frame (``keep_runs=True``).

        Examples
        --------
        >>> from cogstats.sim import Scenario, simulate
        >>> s = Scenario.from_dict({"runs": 8, "gate": {"type": "none"},
        ...     "lessons": {"listed": [{"id": "a", "effect": 0.1}]}})
        >>> simulate(s, replicates=1, rng=1).injected_statuses()["status"].unique().to_list()
        ['candidate']
        """
        if self.runs is None:
            raise ParameterError("this result has no runs frame; simulate with keep_runs=True")
        inj = (
            self.runs.select("replicate", "run", "fact_ids")
            .explode("fact_ids")
            .drop_nulls("fact_ids")
            .rename({"fact_ids": "fact_id"})
            .sort("run")
        )
        ev = (
            self.status_events()
            .select(
                "replicate",
                "fact_id",
                (pl.col("run") + 1).alias("run"),
                pl.col("to").alias("status"),
            )
            .sort("run")
        )
        out = inj.join_asof(
            ev,
            on="run",
            by=["replicate", "fact_id"],
            strategy="backward",
            check_sortedness=False,  # both sorted by run above
        )
        return out.with_columns(pl.col("status").fill_null("candidate")).sort(
            "replicate", "run", "fact_id"
        )

    def to_frame(self) -> pl.DataFrame:
        """Return the per-replicate metrics."""
        return self.metrics

    def summary_table(self) -> pl.DataFrame:
        """Each metric's mean over replicates with its Monte Carlo standard error."""
        return summarize_metrics(self.metrics)

    def outcome_rates(self, by: tuple[str, ...] = ("kind", "true_effect")) -> pl.DataFrame:
        """Share of lessons by first outcome (promote, evict harmful, no_lift, retire, hold).

        The operating-characteristics view of benchmark S1: one row per group with the
        rates, ``n`` and the mean run of the first decision among decided lessons.
        """
        df = self.lessons.with_columns(pl.lit(0).alias("_all")) if not by else self.lessons
        by = by or ("_all",)
        df = df.with_columns(
            pl.when(pl.col("outcome") == "evict")
            .then(
                pl.when(pl.col("reason") == HARMFUL)
                .then(pl.lit("evict_harmful"))
                .otherwise(pl.lit("evict_no_lift"))
            )
            .otherwise(pl.col("outcome"))
            .alias("_o")
        )
        out = df.group_by(list(by), maintain_order=True).agg(
            pl.len().alias("n"),
            *[
                (pl.col("_o") == o).mean().alias(f"{o}_rate")
                for o in ("promote", "evict_harmful", "evict_no_lift", "retire", "hold")
            ],
            pl.col("decided_at_run").mean().alias("mean_decision_run"),
        )
        out = out.sort(list(by))
        return out.drop("_all") if by == ("_all",) else out

    def summary_row(self) -> dict[str, Any]:
        """Return one flat row summarising the result.

        The row holds replicates, the engine that ran ("fast" or "reference"), every
        metric's mean and ``<metric>_mcse``, and the first-outcome rates (promote,
        evict_harmful, evict_no_lift, retire, hold) with the mean run of the first
        decision.  Sweeps store one such row per cell.
        """
        row: dict[str, Any] = {"replicates": self.replicates, "engine": self.engine}
        for r in self.summary_table().iter_rows(named=True):
            row[r["metric"]] = r["mean"]
            row[f"{r['metric']}_mcse"] = r["mcse"]
        # the rates of outcome_rates(by=()), on numpy columns (a polars group-by per cell
        # is most of the summary's cost in a grid of small cells)
        outcome = self.lessons["outcome"].to_numpy()
        reason = self.lessons["reason"].to_numpy()
        harmful = reason == HARMFUL
        evict = outcome == "evict"
        n = max(outcome.size, 1)
        row["promote_rate"] = float(np.count_nonzero(outcome == "promote") / n)
        row["evict_harmful_rate"] = float(np.count_nonzero(evict & harmful) / n)
        row["evict_no_lift_rate"] = float(np.count_nonzero(evict & ~harmful) / n)
        row["retire_rate"] = float(np.count_nonzero(outcome == "retire") / n)
        row["hold_rate"] = float(np.count_nonzero(outcome == "hold") / n)
        decided = self.lessons["decided_at_run"].drop_nulls().to_numpy()
        row["mean_decision_run"] = float(decided.mean()) if decided.size else None
        return row

    def arrays(
        self, replicate: int = 0
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, tuple[str, ...]]:
        """One replicate as arrays for over-time analyses (e.g. ``confseq_paths``).

        Returns
        -------
        scores : numpy.ndarray
            ``(n_runs,)`` scores of the recorded runs, in run order.
        injected : numpy.ndarray of bool
            ``(n_runs, n_lessons)``.
        propensities : numpy.ndarray or None
            ``(n_runs, n_lessons)`` logged injection probabilities (NaN where a lesson
            was not eligible), or None when the policy logs none.
        fact_ids : tuple of str
            The lessons (columns), sorted.

        Examples
        --------
        >>> from cogstats.sim import Scenario, simulate
        >>> s = Scenario.from_dict({"runs": 6, "gate": {"type": "none"},
        ...     "lessons": {"listed": [{"id": "a", "effect": 0.1}, {"id": "b", "effect": 0}]},
        ...     "retrieval": {"policy": "randomized", "max_facts": 2, "candidate_slots": 1}})
        >>> y, x, p, ids = simulate(s, replicates=1, rng=2).arrays(0)
        >>> y.shape, x.shape, ids, float(p[0, 0])
        ((6,), (6, 2), ('a', 'b'), 0.5)
        """
        led = self.ledger(replicate)
        ids = tuple(sorted(self.lessons.filter(pl.col("replicate") == replicate)["fact_id"]))
        col = {f: j for j, f in enumerate(ids)}
        frame = led.frame
        x = np.zeros((len(led), len(ids)), dtype=bool)
        for i, fs in enumerate(frame["fact_ids"].to_list()):
            x[i, [col[f] for f in fs]] = True
        p = None
        if "propensities" in frame.columns:
            p = np.full((len(led), len(ids)), np.nan)
            for i, (el, pr) in enumerate(
                zip(frame["eligible_ids"].to_list(), frame["propensities"].to_list(), strict=True)
            ):
                if el:
                    p[i, [col[f] for f in el]] = pr
        return led.scores, x, p, ids

    def ledger(self, replicate: int = 0) -> Ledger:
        """Return the recorded runs of one replicate as a :class:`~cogstats.ledger.Ledger`.

        Covariates: ``run_index``, ``true_difficulty`` (the truth, for checks; named so
        that no gate's covariate default selects it), ``difficulty_proxy`` and ``family``
        where the scenario has them, and the logged ``eligible_ids``/``propensities`` for
        randomized policies (and re-test slots).

        Examples
        --------
        >>> from cogstats.sim import Scenario, simulate
        >>> s = Scenario.from_dict({"runs": 12, "lessons": {"listed": [{"id": "a", "effect": 0.1}]},
        ...                         "gate": {"type": "none"}})
        >>> simulate(s, replicates=2, rng=3).ledger(1)
        Ledger(runs=12, facts=1, covariates=['run_index', 'true_difficulty'])
        """
        if self.runs is None:
            raise ParameterError("this result has no runs frame; simulate with keep_runs=True")
        if not 0 <= replicate < self.replicates:
            raise ParameterError(
                f"replicate must be in [0, {self.replicates - 1}]; got {replicate!r}"
            )
        rows = self.runs.filter((pl.col("replicate") == replicate) & pl.col("recorded"))
        cols = ["run_id", "score", "fact_ids", "run_index", "true_difficulty"]
        cols += [
            c
            for c in ("difficulty_proxy", "family", "eligible_ids", "propensities")
            if c in rows.columns
        ]
        frame = rows.with_columns(
            pl.col("run").cast(pl.String).alias("run_id"),
            pl.col("run").alias("run_index"),
            pl.col("difficulty").alias("true_difficulty"),
        ).select(cols)
        if "eligible_ids" in frame.columns:
            # a policy whose re-test slot logs propensities only while lessons are
            # suspended: the other runs' prompts were deterministic (propensity 1)
            bare = pl.col("eligible_ids").is_null() | (pl.col("eligible_ids").list.len() == 0)
            frame = frame.with_columns(
                pl.when(bare)
                .then(pl.col("fact_ids"))
                .otherwise(pl.col("eligible_ids"))
                .alias("eligible_ids"),
                pl.when(bare)
                .then(pl.col("fact_ids").list.eval(pl.lit(1.0)))
                .otherwise(pl.col("propensities"))
                .alias("propensities"),
            )
        return Ledger.from_frame(frame)

    def write(self, directory: str | Path) -> Path:
        """Write the frames as Parquet (runs, decisions, lessons, metrics, status_events)."""
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        for name in ("runs", "decisions", "lessons", "metrics"):
            frame = getattr(self, name)
            if frame is not None:
                frame.write_parquet(out / f"{name}.parquet")
        self.status_events().write_parquet(out / "status_events.parquet")
        from cogstats.ledger import write_csv  # formula cells neutralised

        write_csv(self.summary_table(), out / "summary.csv")
        return out

    def summary(self) -> str:
        """Return a text report: scenario, replicates, seed and the metric means."""
        head = (
            f"Simulation of {self.scenario.name!r}: {self.replicates} replicates x "
            f"{self.scenario.runs} runs, engine={self.engine}, seed={dict(self.seed)}"
        )
        why = self.extras.get("engine_reason")
        if self.engine == "reference" and why and why != "requested":
            head += f"\n(reference engine: {why})"
        return f"{head}\n{frame_text(self.summary_table(), max_rows=40)}"

    def __repr__(self) -> str:
        """Return a short representation: scenario name, replicates and runs."""
        return (
            f"SimulationResult(scenario={self.scenario.name!r}, replicates={self.replicates}, "
            f"runs={self.scenario.runs})"
        )

    def _repr_html_(self) -> str:
        with pl.Config(float_precision=4, tbl_rows=40):
            table = self.summary_table()._repr_html_()
        return f"<div><strong>{html.escape(repr(self))}</strong>{table}</div>"
