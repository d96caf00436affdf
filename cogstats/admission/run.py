"""The admission experiment and the recall monitor's experiment, with their result objects.

:func:`run_admission` draws ``replicates`` independent worlds (replicate ``i`` uses child
``i`` of the root ``numpy.random.SeedSequence``), places each world's memories with every
defence, builds every index type over them (faiss, one thread), serves the world's
benign queries, runs the consolidation job and writes its summaries back, and sweeps the
admission thresholds.  Rates are averaged over replicates with their Monte Carlo standard
errors (``sd / sqrt(replicates)``, replicates being the independent units).

:func:`run_monitor` replays a world's writes period by period into an index under one
defence (``read_filter`` by default), probes every region after each period, and runs
the :class:`~cogstats.admission.monitor.RecallMonitor` over the recall streams: when does
it alarm, and what had the read filter served by then?
"""

from __future__ import annotations

import dataclasses
import html
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from cogstats._results import format_settings, frame_text
from cogstats._validation import ParameterError, check_int
from cogstats.admission.consolidation import Consolidation, consolidate
from cogstats.admission.defences import (
    AdmissionRules,
    Placement,
    admission_decisions,
    conflict_pairs,
    make_defence,
)
from cogstats.admission.index import VectorIndex, make_index
from cogstats.admission.metrics import recall_at_k, serve
from cogstats.admission.monitor import RecallMonitor
from cogstats.admission.spec import AdmissionSpec
from cogstats.admission.world import (
    POISON,
    SEED,
    World,
    draw_queries,
    exact_neighbours,
    generate_world,
)

__all__ = [
    "DEFENCE_COLUMNS",
    "RATE_COLUMNS",
    "ROC_COLUMNS",
    "AdmissionResult",
    "MonitorResult",
    "run_admission",
    "run_monitor",
]

#: The per-(defence, index) measures; each has a ``<name>_mcse`` column in the table.
RATE_COLUMNS: tuple[str, ...] = (
    "recall_at_k",
    "recall_at_k_affected",
    "recall_at_k_unaffected",
    "recall_loss_affected",
    "poisoned_hit_rate",
    "benign_rejection_rate",
    "poison_admission_rate",
    "laundered_summaries",
    "laundered_hit_rate",
    "filtered_share_affected",
)
#: Columns of ``defences.parquet``: defence, index, k, replicates, then each measure and
#: its Monte Carlo standard error.
DEFENCE_COLUMNS: tuple[str, ...] = (
    "defence",
    "index",
    "k",
    "replicates",
    *[c for m in RATE_COLUMNS for c in (m, f"{m}_mcse")],
)
#: Columns of ``admission_roc.parquet``.
ROC_COLUMNS: tuple[str, ...] = (
    "rule",
    "threshold",
    "default",
    "replicates",
    "benign_rejection_rate",
    "benign_rejection_rate_mcse",
    "poison_admission_rate",
    "poison_admission_rate_mcse",
)


def _seed_sequence(rng: Any) -> np.random.SeedSequence:
    # A root SeedSequence from an int, a SeedSequence, a Generator or None.
    if isinstance(rng, np.random.SeedSequence):
        return rng
    if isinstance(rng, np.random.Generator):
        return np.random.SeedSequence(rng.integers(0, 2**63, size=4, dtype=np.uint64).tolist())
    if rng is None or (isinstance(rng, int | np.integer) and not isinstance(rng, bool)):
        return np.random.SeedSequence(None if rng is None else int(rng))
    raise ParameterError(
        f"rng must be an int, numpy SeedSequence, Generator or None; got {type(rng).__name__}"
    )


def _seed_record(seed: np.random.SeedSequence) -> dict[str, Any]:
    entropy: Any = seed.entropy
    return {
        "entropy": [int(x) for x in entropy] if isinstance(entropy, list | tuple) else int(entropy),
        "spawn_key": [int(k) for k in seed.spawn_key],
    }


def _int_seed(seed: np.random.SeedSequence) -> int:
    return int(seed.generate_state(1)[0] % (2**31 - 1))


def _progress(progress: bool | None, total: int, desc: str) -> Any:
    from cogstats._progress import progress_bar

    return progress_bar(progress, total=total, unit="replicate", desc=desc)


def _aggregate(frame: pl.DataFrame, by: Sequence[str], measures: Sequence[str]) -> pl.DataFrame:
    """Mean of each measure over replicates and its Monte Carlo standard error (NaN skipped)."""
    clean = frame.with_columns([pl.col(m).cast(pl.Float64).fill_nan(None) for m in measures])
    aggs: list[pl.Expr] = [pl.col("replicate").n_unique().alias("replicates")]
    for m in measures:
        aggs.append(pl.col(m).mean().alias(m))
        aggs.append((pl.col(m).std() / pl.col(m).count().sqrt()).alias(f"{m}_mcse"))
    return clean.group_by(list(by), maintain_order=True).agg(aggs)


def _build(
    spec: AdmissionSpec,
    name: str,
    world: World,
    placement: Placement,
    seed: int,
    threads: int,
    built: dict[bytes, VectorIndex],
) -> VectorIndex:
    """Build the placement's index from ``placement.build``, then apply the removals.

    Indexes built from the same set are built once (``built`` caches them by set); a
    removal works on a copy, as an operator would purge a live index.
    """
    key = np.packbits(placement.build).tobytes()
    if key not in built:
        index = make_index(
            name, world.vectors.shape[1], spec.index_options.get(name), seed=seed, threads=threads
        )
        ids = np.flatnonzero(placement.build)
        index.build(world.vectors[ids], ids)
        built[key] = index
    index = built[key]
    if placement.removed.any():
        index = index.copy()
        index.remove(np.flatnonzero(placement.removed))
    return index


def _consolidate(
    spec: AdmissionSpec, world: World, members: np.ndarray, seed: int, threads: int
) -> Consolidation:
    c = spec.consolidation
    ids = np.flatnonzero(members)
    return consolidate(
        world.vectors[ids],
        world.is_poison[ids],
        ids=ids,
        cluster_size=c.cluster_size,
        min_members=c.min_members,
        provenance=c.provenance,
        laundering_share=c.laundering_share,
        iterations=c.iterations,
        rng=seed,
        threads=threads,
    )


def _replicate(
    spec: AdmissionSpec, child: np.random.SeedSequence, threads: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[pl.DataFrame]]:
    world_seed, index_seed, consolidation_seed = child.spawn(3)
    world = generate_world(spec, rng=world_seed)
    k = spec.k
    affected = world.affected_queries
    placements = {
        name: make_defence(name, spec.defence_options.get(name)).place(world)
        for name in spec.defences
    }
    # the consolidation job reads a set of memories, whatever the index: run it once per set
    consolidations: dict[bytes, Consolidation] = {}
    for p in placements.values():
        key = np.packbits(p.consolidation_input).tobytes()
        if key not in consolidations:
            consolidations[key] = _consolidate(
                spec, world, p.consolidation_input, _int_seed(consolidation_seed), threads
            )
    rows: list[dict[str, Any]] = []
    summaries: list[pl.DataFrame] = []
    record = json.dumps(_seed_record(child))
    n_benign_writes = int((world.origin == 1).sum())
    n_poison = int(world.is_poison.sum())
    for index_name in spec.indexes:
        built: dict[bytes, VectorIndex] = {}
        for name, p in placements.items():
            index = _build(spec, index_name, world, p, _int_seed(index_seed), threads, built)
            served, dropped = serve(
                index, world.queries, k, flagged=p.read_flagged, overfetch=p.overfetch
            )
            recall = recall_at_k(served, world.truth)
            poisoned = (served >= 0) & world.is_poison[np.maximum(served, 0)]
            indexed = p.indexed
            # the consolidator's summaries join the index with its high provenance
            cons = consolidations[np.packbits(p.consolidation_input).tobytes()]
            with_summaries = index.copy()
            summary_ids = world.n + np.arange(cons.members.size)
            if summary_ids.size:
                with_summaries.add(cons.vectors, summary_ids)
            served_after, _ = serve(
                with_summaries, world.queries, k, flagged=p.read_flagged, overfetch=p.overfetch
            )
            laundered = np.zeros(world.n + summary_ids.size, dtype=bool)
            laundered[world.n :] = cons.laundered
            laundered_hit = ((served_after >= 0) & laundered[np.maximum(served_after, 0)]).any(1)
            rows.append(
                {
                    "replicate": -1,  # filled in by the caller
                    "defence": name,
                    "index": index_name,
                    "recall_at_k": float(recall.mean()),
                    "recall_at_k_affected": float(recall[affected].mean())
                    if affected.any()
                    else float("nan"),
                    "recall_at_k_unaffected": float(recall[~affected].mean())
                    if (~affected).any()
                    else float("nan"),
                    "poisoned_hit_rate": float(poisoned.any(axis=1).mean()),
                    "benign_rejection_rate": float(
                        (~indexed[world.origin == 1]).sum() / max(n_benign_writes, 1)
                    ),
                    "poison_admission_rate": float(indexed[world.is_poison].mean())
                    if n_poison and p.written[world.is_poison].all()
                    else float("nan"),
                    "laundered_summaries": float(cons.laundered_summaries),
                    "laundered_hit_rate": float(laundered_hit.mean()),
                    "filtered_share_affected": float(dropped[affected].mean() / k)
                    if affected.any()
                    else float("nan"),
                    "affected_queries": int(affected.sum()),
                    "poisoned_writes": n_poison,
                    "seed": record,
                }
            )
    for name, p in placements.items():
        cons = consolidations[np.packbits(p.consolidation_input).tobytes()]
        summaries.append(cons.to_frame().with_columns(pl.lit(name).alias("defence")))
    roc = _roc_rows(spec, world)
    return rows, roc, summaries


def _roc_rows(spec: AdmissionSpec, world: World) -> list[dict[str, Any]]:
    rules: AdmissionRules = spec.rules()
    pairs = conflict_pairs(world, rules.duplicate_distance)
    rows = []
    for rule, values in (
        ("min_provenance", spec.roc.min_provenance),
        ("max_centroid_distance", spec.roc.max_centroid_distance),
    ):
        for value in values:
            changed: AdmissionRules = replace(rules, **{rule: value})  # type: ignore[arg-type]
            d = admission_decisions(world, changed, pairs=pairs)
            rows.append(
                {
                    "rule": rule,
                    "threshold": float(value),
                    "default": bool(value == getattr(rules, rule)),
                    "benign_rejection_rate": d.benign_rejection_rate,
                    "poison_admission_rate": d.poison_admission_rate,
                }
            )
    return rows


@dataclass(frozen=True, repr=False, eq=False)
class AdmissionResult:
    """Everything :func:`run_admission` measured.

    Attributes
    ----------
    spec : AdmissionSpec
        What was run (with the replicates actually used).
    replicates : int
        Independent worlds.
    seed : mapping
        The root SeedSequence (``numpy.random.SeedSequence(**seed)`` re-creates the run).
    defences : polars.DataFrame
        One row per (defence, index): :data:`DEFENCE_COLUMNS` (means over replicates and
        Monte Carlo standard errors).
    per_replicate : polars.DataFrame
        The same measures per replicate (and the replicate's seed).
    roc : polars.DataFrame
        :data:`ROC_COLUMNS`: each admission threshold swept with the other rules at
        their defaults (``default`` marks the spec's own threshold).
    roc_per_replicate : polars.DataFrame
        The sweep per replicate.
    summaries : polars.DataFrame
        Every consolidation summary: replicate, defence, summary, members,
        poisoned_members, poisoned_share, laundered.
    """

    spec: AdmissionSpec
    replicates: int
    seed: Mapping[str, Any]
    defences: pl.DataFrame
    per_replicate: pl.DataFrame
    roc: pl.DataFrame
    roc_per_replicate: pl.DataFrame
    summaries: pl.DataFrame

    def to_frame(self) -> pl.DataFrame:
        """Return the defences table (one row per defence and index)."""
        return self.defences

    def laundered_by_share(self, shares: Sequence[float] = (0.05, 0.1, 0.25, 0.5)) -> pl.DataFrame:
        """Laundered summaries per replicate at other laundering shares (mean and mcse).

        Examples
        --------
        >>> from cogstats.admission import AdmissionSpec, run_admission
        >>> spec = AdmissionSpec.from_dict({"world": {"dim": 64, "tenants": 3,
        ...     "topics_per_tenant": 2, "subjects_per_topic": 3, "queries": 20},
        ...     "indexes": ["flat"], "defences": ["clean", "none"]})
        >>> table = run_admission(spec, replicates=2, rng=0).laundered_by_share([0.5])
        >>> table.columns
        ['defence', 'share', 'replicates', 'laundered_summaries', 'laundered_summaries_mcse']
        """
        if not shares or any(not 0 < float(s) <= 1 for s in shares):
            raise ParameterError(f"shares must be numbers in (0, 1]; got {list(shares)!r}")
        per_rep = []
        reps = pl.DataFrame({"replicate": np.arange(self.replicates)})
        for share in shares:
            counts = self.summaries.group_by("replicate", "defence").agg(
                (pl.col("poisoned_share") >= float(share)).sum().alias("laundered_summaries")
            )
            for defence in self.spec.defences:
                part = reps.join(
                    counts.filter(pl.col("defence") == defence), on="replicate", how="left"
                ).with_columns(
                    pl.lit(defence).alias("defence"),
                    pl.lit(float(share)).alias("share"),
                    pl.col("laundered_summaries").fill_null(0),
                )
                per_rep.append(part.select("replicate", "defence", "share", "laundered_summaries"))
        frame = pl.concat(per_rep)
        return _aggregate(frame, ("defence", "share"), ("laundered_summaries",))

    def summary(self) -> str:
        """Describe the main columns of the defences table, as text."""
        shown = [
            "defence",
            "index",
            "recall_at_k_affected",
            "recall_loss_affected",
            "recall_loss_affected_mcse",
            "poisoned_hit_rate",
            "benign_rejection_rate",
            "poison_admission_rate",
            "laundered_summaries",
        ]
        return (
            f"AdmissionResult({self.spec.name}: {self.replicates} replicates, k={self.spec.k}, "
            f"dim={self.spec.world.dim})\n" + frame_text(self.defences.select(shown))
        )

    def __repr__(self) -> str:
        """Show the summary."""
        return self.summary()

    def _repr_html_(self) -> str:
        from cogstats._results import html_block

        settings = {"replicates": self.replicates, "k": self.spec.k, "dim": self.spec.world.dim}
        return html_block(f"AdmissionResult: {self.spec.name}", settings, self.defences)

    def write(self, out: str | Path) -> dict[str, Path]:
        """Write the tables as Parquet under ``out``; returns name -> path.

        ``defences.parquet``, ``admission_roc.parquet``, ``replicates.parquet``,
        ``roc_replicates.parquet`` and ``summaries.parquet``.
        """
        folder = Path(out)
        folder.mkdir(parents=True, exist_ok=True)
        files = {
            "defences": self.defences,
            "admission_roc": self.roc,
            "replicates": self.per_replicate,
            "roc_replicates": self.roc_per_replicate,
            "summaries": self.summaries,
        }
        paths = {}
        for name, frame in files.items():
            paths[name] = folder / f"{name}.parquet"
            frame.write_parquet(paths[name])
        return paths


def run_admission(
    spec: AdmissionSpec,
    *,
    replicates: int | None = None,
    rng: Any = None,
    progress: bool | None = None,
    threads: int = 1,
) -> AdmissionResult:
    """Run the admission experiment (every defence on every index type).

    Parameters
    ----------
    spec : AdmissionSpec
        The world, the defences and indexes to compare, and their options.
    replicates : int, optional
        Independent worlds (default ``spec.replicates``).
    rng : int, SeedSequence, Generator or None
        Root seed (default ``spec.seed``); replicate ``i`` uses child ``i`` of
        ``SeedSequence(rng).spawn``.
    progress : bool, optional
        A progress bar (tqdm); default: when stderr is a terminal.
    threads : int
        faiss threads (1 makes every table reproducible bit for bit).

    Returns
    -------
    AdmissionResult

    Examples
    --------
    >>> from cogstats.admission import AdmissionSpec, run_admission
    >>> spec = AdmissionSpec.from_dict({"world": {"dim": 64, "tenants": 3,
    ...     "topics_per_tenant": 3, "subjects_per_topic": 4, "queries": 200},
    ...     "indexes": ["hnsw"]})
    >>> result = run_admission(spec, replicates=2, rng=1)
    >>> result.to_frame().select("defence", "poisoned_hit_rate").row(2)
    ('read_filter', 0.0)
    """
    if not isinstance(spec, AdmissionSpec):
        raise ParameterError(f"spec must be an AdmissionSpec; got {type(spec).__name__}")
    reps = spec.replicates if replicates is None else replicates
    reps = int(check_int("replicates", reps, minimum=1) or 1)
    threads = int(check_int("threads", threads, minimum=1) or 1)
    root = _seed_sequence(spec.seed if rng is None else rng)
    rows: list[dict[str, Any]] = []
    roc: list[dict[str, Any]] = []
    summaries: list[pl.DataFrame] = []
    bar = _progress(progress, reps, "admission")
    for i, child in enumerate(root.spawn(reps)):
        r_rows, r_roc, r_sum = _replicate(spec, child, threads)
        for row in r_rows:
            row["replicate"] = i
        rows += r_rows
        roc += [{"replicate": i, **row} for row in r_roc]
        summaries += [s.with_columns(pl.lit(i).alias("replicate")) for s in r_sum]
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    per_rep = pl.DataFrame(rows)
    clean = per_rep.filter(pl.col("defence") == "clean").select(
        "replicate", "index", pl.col("recall_at_k_affected").alias("_clean")
    )
    per_rep = (
        per_rep.join(clean, on=["replicate", "index"], how="left")
        .with_columns(
            (1.0 - pl.col("recall_at_k_affected") / pl.col("_clean")).alias("recall_loss_affected")
        )
        .drop("_clean")
    )
    table = _aggregate(per_rep, ("defence", "index"), RATE_COLUMNS).with_columns(
        pl.lit(spec.k).alias("k")
    )
    roc_rep = pl.DataFrame(roc)
    roc_table = _aggregate(
        roc_rep,
        ("rule", "threshold", "default"),
        ("benign_rejection_rate", "poison_admission_rate"),
    )
    summaries_frame = pl.concat(summaries).select(
        "replicate",
        "defence",
        "summary",
        "members",
        "poisoned_members",
        "poisoned_share",
        "laundered",
    )
    return AdmissionResult(
        spec=replace(spec, replicates=reps),
        replicates=reps,
        seed=_seed_record(root),
        defences=table.select(DEFENCE_COLUMNS),
        per_replicate=per_rep,
        roc=roc_table.select(ROC_COLUMNS),
        roc_per_replicate=roc_rep,
        summaries=summaries_frame,
    )


# ---------------------------------------------------------------------- the monitor
@dataclass(frozen=True, repr=False, eq=False)
class MonitorResult:
    """What :func:`run_monitor` measured.

    Attributes
    ----------
    spec : AdmissionSpec
        What was run (``spec.monitor`` holds the monitor's experiment).
    replicates : int
        Independent worlds.
    seed : mapping
        The root SeedSequence.
    monitor : RecallMonitor
        The detector (its thresholds set for ``spec.monitor.arl0`` over all regions).
    per_replicate : polars.DataFrame
        replicate, alarm_period (-1: none), alarm_region, alarm_region_affected,
        false_alarm (before the onset), detected (at or after it), delay (periods from
        the onset), poisoned_results_before_alarm (poisoned results served up to the
        alarm, or in all periods without one), affected_regions.
    paths : polars.DataFrame
        replicate, period, region, affected, recall (the probes' mean recall at k),
        degraded (probes with recall below 1), statistic, threshold, poisoned_results
        (served in that period, summed over the region's probes).

    Examples
    --------
    >>> from cogstats.admission import AdmissionSpec, run_monitor
    >>> spec = AdmissionSpec.from_dict({"world": {"dim": 64, "tenants": 2,
    ...     "topics_per_tenant": 2, "subjects_per_topic": 3},
    ...     "monitor": {"periods": 8, "warmup": 3, "onset": 4, "attack_periods": 1}})
    >>> result = run_monitor(spec, replicates=1, rng=5)
    >>> result.summary_table()["measure"].to_list()[:3]
    ['detected', 'false_alarm', 'delay']
    """

    spec: AdmissionSpec
    replicates: int
    seed: Mapping[str, Any]
    monitor: RecallMonitor
    per_replicate: pl.DataFrame
    paths: pl.DataFrame

    def to_frame(self) -> pl.DataFrame:
        """Return the per-replicate outcomes."""
        return self.per_replicate

    def summary_table(self) -> pl.DataFrame:
        """Summarise the monitor: means with Monte Carlo standard errors.

        Detected share, false-alarm share, mean delay (over detections), poisoned results
        served before the alarm.
        """
        frame = self.per_replicate.with_columns(
            pl.col("detected").cast(pl.Float64),
            pl.col("false_alarm").cast(pl.Float64),
            pl.col("alarm_region_affected").cast(pl.Float64),
            pl.col("delay").cast(pl.Float64),
            pl.col("poisoned_results_before_alarm").cast(pl.Float64),
        )
        rows = []
        for measure in (
            "detected",
            "false_alarm",
            "delay",
            "alarm_region_affected",
            "poisoned_results_before_alarm",
        ):
            values = frame[measure].drop_nulls().to_numpy()
            n = values.size
            mean = float(values.mean()) if n else float("nan")
            mcse = float(values.std(ddof=1) / np.sqrt(n)) if n > 1 else float("nan")
            rows.append((measure, mean, mcse, n))
        schema = {"measure": pl.String, "mean": pl.Float64, "mcse": pl.Float64, "n": pl.Int64}
        return pl.DataFrame(rows, schema=schema, orient="row")

    def summary(self) -> str:
        """Describe the settings, theory and the summary table as text."""
        m = self.spec.monitor
        return (
            f"MonitorResult({m.defence} on {m.index}, {self.replicates} replicates, onset "
            f"period {m.onset}; {format_settings(dataclasses.asdict(self.monitor))})\n"
            + frame_text(self.summary_table())
        )

    def __repr__(self) -> str:
        """Show the summary."""
        return self.summary()

    def _repr_html_(self) -> str:
        return "<pre>" + html.escape(self.summary()) + "</pre>"

    def write(self, out: str | Path) -> dict[str, Path]:
        """``monitor.parquet`` (per replicate) and ``monitor_paths.parquet`` under ``out``."""
        folder = Path(out)
        folder.mkdir(parents=True, exist_ok=True)
        paths = {name: folder / f"{name}.parquet" for name in ("monitor", "monitor_paths")}
        self.per_replicate.write_parquet(paths["monitor"])
        self.paths.write_parquet(paths["monitor_paths"])
        return paths


def _monitor_replicate(
    spec: AdmissionSpec, child: np.random.SeedSequence, monitor: RecallMonitor, threads: int
) -> tuple[dict[str, Any], pl.DataFrame]:
    m = spec.monitor
    world_seed, time_seed, index_seed = child.spawn(3)
    world = generate_world(spec, rng=world_seed)
    g = np.random.default_rng(time_seed)
    placement = make_defence(m.defence, spec.defence_options.get(m.defence)).place(world)
    # the write stream cut into periods: benign writes evenly in arrival order, poisoned
    # writes in the attack window
    period = np.full(world.n, -1, dtype=np.int64)
    benign = np.flatnonzero(world.origin == 1)
    period[benign] = np.arange(benign.size) * m.periods // max(benign.size, 1)
    poison = np.flatnonzero(world.origin == POISON)
    arrival = m.onset + g.integers(0, m.attack_periods, poison.size)
    period[poison] = np.minimum(arrival, m.periods - 1)
    indexed = placement.indexed
    corpus = np.flatnonzero(world.origin == SEED)
    options = spec.index_options.get(m.index)
    dim = world.vectors.shape[1]
    index = make_index(m.index, dim, options, seed=_int_seed(index_seed), threads=threads)
    index.build(world.vectors[corpus], corpus)
    n_regions = world.topic_centres.shape[0]
    per_topic = world.spec.subjects_per_topic
    degraded = np.zeros((m.periods, n_regions), dtype=np.int64)
    recall = np.zeros((m.periods, n_regions))
    poisoned_results = np.zeros((m.periods, n_regions), dtype=np.int64)
    present = corpus.copy()
    probe_region = np.repeat(np.arange(n_regions), m.probes_per_region)
    for t in range(m.periods):
        arriving = np.flatnonzero((period == t) & indexed)
        if arriving.size:
            index.add(world.vectors[arriving], arriving)
        present = np.concatenate([present, np.flatnonzero((period == t) & (world.origin == 1))])
        subjects = probe_region * per_topic + g.integers(0, per_topic, probe_region.size)
        probes = draw_queries(world.spec, world.subject_points, subjects, g)
        truth = exact_neighbours(world.vectors[present], present, probes, spec.k)
        served, _ = serve(
            index, probes, spec.k, flagged=placement.read_flagged, overfetch=placement.overfetch
        )
        r = recall_at_k(served, truth)
        hits = ((served >= 0) & world.is_poison[np.maximum(served, 0)]).sum(axis=1)
        degraded[t] = np.bincount(probe_region[r < 1.0], minlength=n_regions)
        recall[t] = np.bincount(probe_region, weights=r, minlength=n_regions) / m.probes_per_region
        poisoned_results[t] = np.bincount(probe_region, weights=hits, minlength=n_regions)
    path = monitor.run(degraded, probes=m.probes_per_region)
    affected = world.affected_regions
    alarm = path.alarm_period
    row = {
        "replicate": -1,
        "alarm_period": alarm,
        "alarm_region": path.alarm_stream,
        "alarm_region_affected": bool(affected[path.alarm_stream]) if alarm >= 0 else None,
        "false_alarm": 0 <= alarm < m.onset,
        "detected": alarm >= m.onset,
        "delay": alarm - m.onset if alarm >= m.onset else None,
        "poisoned_results_before_alarm": int(
            poisoned_results[: (alarm + 1 if alarm >= 0 else m.periods)].sum()
        ),
        "affected_regions": int(affected.sum()),
        "seed": json.dumps(_seed_record(child)),
    }
    frame = path.to_frame().rename({"stream": "region"}).drop("alarm")
    frame = frame.with_columns(
        pl.Series("affected", np.tile(affected, m.periods)),
        pl.Series("recall", recall.ravel()),
        pl.Series("poisoned_results", poisoned_results.ravel()),
    )
    return row, frame


def run_monitor(
    spec: AdmissionSpec,
    *,
    replicates: int | None = None,
    rng: Any = None,
    progress: bool | None = None,
    threads: int = 1,
) -> MonitorResult:
    """Run the recall monitor's experiment (``spec.monitor``) in the simulated memory.

    Parameters
    ----------
    spec : AdmissionSpec
        The world and ``spec.monitor`` (index, defence, periods, onset, probes, shift,
        arl0).
    replicates : int, optional
        Independent worlds (default ``spec.monitor.replicates``).
    rng : int, SeedSequence, Generator or None
        Root seed (default ``spec.seed``).
    progress : bool, optional
        A progress bar; default when stderr is a terminal.
    threads : int
        faiss threads.

    Returns
    -------
    MonitorResult

    Examples
    --------
    >>> from cogstats.admission import AdmissionSpec, run_monitor
    >>> spec = AdmissionSpec.from_dict({"world": {"dim": 64, "tenants": 3,
    ...     "topics_per_tenant": 2, "subjects_per_topic": 4},
    ...     "monitor": {"periods": 12, "warmup": 4, "onset": 6, "attack_periods": 2}})
    >>> result = run_monitor(spec, replicates=1, rng=2)
    >>> result.paths.height  # 12 periods x 6 regions
    72
    >>> int(result.per_replicate["poisoned_results_before_alarm"][0])  # read_filter serves none
    0
    """
    if not isinstance(spec, AdmissionSpec):
        raise ParameterError(f"spec must be an AdmissionSpec; got {type(spec).__name__}")
    m = spec.monitor
    reps = m.replicates if replicates is None else replicates
    reps = int(check_int("replicates", reps, minimum=1) or 1)
    threads = int(check_int("threads", threads, minimum=1) or 1)
    root = _seed_sequence(spec.seed if rng is None else rng)
    monitor = RecallMonitor(arl0=m.arl0, shift=m.shift, warmup=m.warmup)
    rows, frames = [], []
    bar = _progress(progress, reps, "monitor")
    for i, child in enumerate(root.spawn(reps)):
        row, frame = _monitor_replicate(spec, child, monitor, threads)
        row["replicate"] = i
        rows.append(row)
        frames.append(frame.with_columns(pl.lit(i).alias("replicate")))
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    paths = pl.concat(frames).select(
        "replicate",
        "period",
        "region",
        "affected",
        "recall",
        "degraded",
        "statistic",
        "threshold",
        "poisoned_results",
    )
    return MonitorResult(
        spec=replace(spec, monitor=replace(m, replicates=reps)),
        replicates=reps,
        seed=_seed_record(root),
        monitor=monitor,
        per_replicate=pl.DataFrame(rows),
        paths=paths,
    )
