"""Attribution of a partitioned Parquet ledger larger than memory, one partition at a time.

``attribute(path, method=..., executor=..., scheduler=...)`` with ``path`` a directory of
Parquet files (or one file) reduces per-partition sufficient statistics instead of
loading the ledger: no process ever holds more than one partition plus the statistics.

**Data layout.**  A directory of Parquet files (``*.parquet``, searched recursively,
taken in sorted path order: that is the run order), each with the ledger columns
``run_id`` (string), ``score`` (float in [0, 1]), ``fact_ids`` (list of strings; null or
empty for a run without lessons) and any covariates (numbers, strings, booleans).  Every
partition must fit in one worker's memory (a file of a million runs with 8 lessons each
takes a few hundred MB once read).  Run ids must be unique across partitions: by default
the first pass hashes every run id (8 bytes a run, held by the worker that reduces them:
160 MB for 20 million runs) and a repeated run id raises :class:`LedgerError` naming the
run and the two partitions (``check_run_ids=False`` skips the check; a repeated run then
counts twice, where the in-memory ``Ledger`` would have refused the file).  A lesson id
listed twice in one run counts once, as in the ledger.

**Methods.**

``lift``, ``welch``
    One pass: per partition and lesson, the runs with the lesson, their mean and sum of
    squared deviations (and the same over all runs): the shared statistics
    :class:`cogstats.stats.GroupMoments`, filled per partition
    (:func:`cogstats.stats.groups.fact_arrays`, as a ledger fills them) and merged by
    Chan et al.'s pairwise update; each baseline is the total minus the lesson's runs
    (:func:`cogstats.stats.groups.leave_one_out`, the ledger's own).  A lesson in
    at least half the runs gets its baseline from a second, small pass (the runs without
    it, accumulated directly, so no cancellation).
``ols``
    Three passes: (1) the statistics above plus the covariate levels and ranges;
    (2) ``X'X``, ``X'y``, ``y'y`` over ``[1, covariates, lessons]`` (``k x k``, from each
    run's nonzeros; :class:`cogstats.stats.CrossProductSums`, merged by adding);
    identifiability from the cross-products
    (:func:`~cogstats.estimators.identifiability.lesson_identifiability`'s cross-product
    path, with duplicate inclusion patterns found by sums of run-id hashes), then the
    coefficients; (3) for ``cov="HC3"`` each partition's residuals and leverages give its
    share of the sandwich's meat (``cov="cluster"``: per-cluster score sums; "nonrobust"
    needs no third pass).

**Agreement with the in-memory result** (``attribute(Ledger.read(...))`` on the same runs,
tests/unit/test_partitioned.py): the same lessons, in the same order (first appearance in
path order), the same counts and identifiability flags; estimates, standard errors,
intervals and p-values equal to 1e-9 relative (sums are added in another order).  One
exception: fixed-size prompts, where the in-memory ``ols`` estimates lessons relative to
their pool's mean lesson (:mod:`cogstats.estimators.contrasts`); the partitioned ``ols``
reports absolute effects only (such lessons not identifiable), whatever
``mean_contrasts`` says.

**Executors** (the sweeps' words): ``"local"`` streams the partitions through this process
one by one; ``"dask"`` maps them over a dask.distributed cluster (the one at ``scheduler``,
an address such as ``"tcp://host:8786"``, else a ``LocalCluster`` of ``workers`` processes
started and closed for the call) and reduces the statistics in a tree, so each worker
holds one partition and a few partial results at a time.

Cost: time O(runs x lessons-per-run) per pass for ``lift``/``welch``; for ``ols``
O(runs x (lessons-per-run + covariate columns)^2) per pass plus O(k^3) once (``k``
columns); memory per worker one partition plus O(lessons) (``lift``/``welch``) or
O(k^2) (``ols``) for the partial statistics.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np
import polars as pl
from scipy import sparse

from cogstats._validation import LedgerError, ParameterError, check_choice, check_int
from cogstats.estimators._base import Attribution
from cogstats.stats.crossproducts import CrossProductSums
from cogstats.stats.groups import GroupMoments, fact_arrays, leave_one_out

__all__ = ["DATASET_METHODS", "EXECUTORS", "attribute_dataset", "dataset_files"]

#: methods that run on a partitioned dataset
DATASET_METHODS = ("lift", "welch", "ols")
#: the executors (as for sweeps)
EXECUTORS = ("local", "dask")
_HASH_SEEDS = (0x5EED, 0xC0FFEE)


def dataset_files(path: str | os.PathLike[str]) -> list[Path]:
    """List the Parquet partitions of a dataset, in run order (sorted paths).

    Examples
    --------
    >>> import tempfile, pathlib, polars as pl
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> for k in (1, 0):
    ...     pl.DataFrame({"run_id": [f"r{k}"], "score": [0.5], "fact_ids": [["a"]]}).write_parquet(
    ...         root / f"part-{k}.parquet")
    >>> [p.name for p in dataset_files(root)]
    ['part-0.parquet', 'part-1.parquet']
    """
    root = Path(path)
    if root.is_file():
        return [root]
    if not root.is_dir():
        raise FileNotFoundError(f"dataset not found: {root} (a Parquet file or a directory)")
    files = sorted(p for p in root.rglob("*.parquet") if p.is_file())
    if not files:
        raise LedgerError(f"no *.parquet files under {root}", source=str(root))
    return files


# ---------------------------------------------------------------------- pass 1
@dataclass
class _Summary:
    """Mergeable statistics of one or more partitions.

    The shared per-lesson moments (:class:`cogstats.stats.GroupMoments`, lessons in
    ``ids`` order) and what only this path keeps (run-id hashes, covariate levels and
    ranges).
    """

    ids: list[str]
    moments: GroupMoments
    hsum: np.ndarray  # (lessons, 2) uint64: sums of the run-id hashes (inclusion patterns)
    run_hashes: np.ndarray | None  # sorted uint64 hashes of the run ids
    repeated: np.ndarray  # hashes seen in two runs
    covariates: dict[str, dict[str, Any]] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)


def _read(file: Path, columns: Sequence[str]) -> pl.DataFrame:
    src = str(file)
    try:
        schema = pl.read_parquet_schema(file)
    except Exception as exc:  # pragma: no cover - depends on the file
        raise LedgerError(f"cannot read Parquet: {exc}", source=src) from exc
    missing = [c for c in columns if c not in schema]
    if missing:
        raise LedgerError(
            f"missing column(s) {missing}; every partition needs run_id, score, fact_ids "
            f"and the covariates asked for; it has {list(schema)}",
            field=missing[0],
            source=src,
        )
    frame = pl.read_parquet(file, columns=list(columns))
    _check_frame(frame, src)
    return frame


def _check_frame(frame: pl.DataFrame, src: str) -> None:
    """Validate as the ledger does, vectorised: ids, scores and lesson ids (rows 1-based)."""

    def fail(mask: pl.Series, field_name: str, message: str) -> None:
        bad = mask.fill_null(True).arg_true()
        if bad.len():
            row = int(bad[0])
            raise LedgerError(message, row=row + 1, field=field_name, source=src)

    if frame["run_id"].dtype != pl.String:
        raise LedgerError("run_id must be a string column", field="run_id", source=src)
    fail(
        frame["run_id"].str.strip_chars().str.len_chars() == 0,
        "run_id",
        "run_id must be a non-empty string",
    )
    score = frame["score"]
    if not score.dtype.is_numeric():
        raise LedgerError("score must be a numeric column", field="score", source=src)
    score = score.cast(pl.Float64)
    fail(
        ~(score.is_finite() & (score >= 0.0) & (score <= 1.0)),
        "score",
        "score must be a finite number in [0, 1]",
    )
    if frame["fact_ids"].dtype not in (pl.List(pl.String), pl.List(pl.Null)):
        raise LedgerError(
            f"fact_ids must be a list of strings; got {frame['fact_ids'].dtype}",
            field="fact_ids",
            source=src,
        )
    hashes = np.sort(frame["run_id"].hash(seed=_HASH_SEEDS[0]).to_numpy())
    if hashes.size and (hashes[1:] == hashes[:-1]).any():  # equal hashes: look closer
        dup = frame["run_id"].is_duplicated()
        fail(dup, "run_id", "duplicate run_id within the partition; a ledger holds each run once")


def _lesson_codes(frame: pl.DataFrame, src: str) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Lesson ids (first appearance) and the deduplicated (row, lesson) pairs in row order.

    The ids are coded by a cast to an ``Enum`` of the distinct ids in first-appearance
    order (a polars ``unique`` over (row, id) pairs costs ten times more), and an id
    listed twice in one run is dropped after coding, on the integer pairs.
    """
    from cogstats.stats.groups import first_in_run

    pairs = (
        frame.select(pl.int_range(pl.len(), dtype=pl.Int64).alias("row"), pl.col("fact_ids"))
        .explode("fact_ids")
        .drop_nulls("fact_ids")
    )
    names = pairs["fact_ids"]
    if names.len() and names.str.len_chars().min() == 0:
        row = int(pairs.filter(pl.col("fact_ids").str.len_chars() == 0)["row"][0])
        raise LedgerError(
            "fact_ids must hold non-empty lesson ids", row=row + 1, field="fact_ids", source=src
        )
    ids = names.unique(maintain_order=True)
    codes = names.cast(pl.Enum(ids.to_list())).to_physical().cast(pl.Int64).to_numpy()
    rows = pairs["row"].to_numpy()
    if rows.size:
        keep = first_in_run(rows, codes, np.bincount(rows, minlength=frame.height))
        if keep is not None:
            rows, codes = rows[keep], codes[keep]
    return ids.to_list(), rows, codes


def _run_hashes(frame: pl.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    ids = frame["run_id"]
    return (
        ids.hash(seed=_HASH_SEEDS[0]).to_numpy().astype(np.uint64),
        ids.hash(seed=_HASH_SEEDS[1]).to_numpy().astype(np.uint64),
    )


def _covariate_info(
    frame: pl.DataFrame, names: Sequence[str], src: str, levels_for: Sequence[str] = ()
) -> dict[str, dict]:
    out: dict[str, dict[str, Any]] = {}
    for name in names:
        col = frame[name]
        nulls = col.is_null()
        info: dict[str, Any] = {"first_null": None}
        if nulls.any():
            info["first_null"] = (src, int(nulls.arg_true()[0]) + 1)
        present = col.drop_nulls()
        if col.dtype.is_numeric():
            info["kind"] = "numeric"
            info["min"] = float(present.min()) if present.len() else math.inf  # type: ignore[arg-type]
            info["max"] = float(present.max()) if present.len() else -math.inf  # type: ignore[arg-type]
        elif col.dtype in (pl.String, pl.Boolean, pl.Null):
            info["kind"] = "bool" if col.dtype == pl.Boolean else "string"
            info["levels"] = set(present.unique().to_list())
        else:
            raise LedgerError(
                f"covariate {name!r} has type {col.dtype}; covariates are numbers, strings "
                "or booleans",
                field=name,
                source=src,
            )
        if name in levels_for and "levels" not in info:  # a numeric cluster covariate
            info["levels"] = set(present.unique().to_list())
        out[name] = info
    return out


def _scan(
    file: Path, covariates: tuple[str, ...], check_run_ids: bool, levels_for: tuple[str, ...] = ()
) -> _Summary:
    """Pass 1 over one partition."""
    frame = _read(file, ["run_id", "score", "fact_ids", *covariates])
    y = frame["score"].cast(pl.Float64).to_numpy()
    ids, rows, codes = _lesson_codes(frame, str(file))
    p = len(ids)
    moments = GroupMoments.from_fact_arrays(fact_arrays(y, rows, codes, p))
    h1, h2 = _run_hashes(frame)
    hsum = np.zeros((p, 2), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for c, h in enumerate((h1, h2)):
            # wrap-around sums of the hashes of each lesson's runs: equal sets, equal sums
            np.add.at(hsum[:, c], codes, h[rows])
    run_hashes = np.sort(h1) if check_run_ids else None
    return _Summary(
        ids=ids,
        moments=moments,
        hsum=hsum,
        run_hashes=run_hashes,
        repeated=np.zeros(0, dtype=np.uint64),
        covariates=_covariate_info(frame, covariates, str(file), levels_for),
        files=[str(file)],
    )


def _merge(a: _Summary, b: _Summary) -> _Summary:
    """Combine the summaries of consecutive partition groups (``a`` before ``b``)."""
    position = {f: j for j, f in enumerate(a.ids)}
    new = [f for f in b.ids if f not in position]
    ids = a.ids + new
    for f in new:
        position[f] = len(position)
    where = np.fromiter((position[f] for f in b.ids), dtype=np.int64, count=len(b.ids))
    moments = a.moments.merge(b.moments, where)
    hsum = np.zeros((len(ids), 2), dtype=np.uint64)
    hsum[: a.hsum.shape[0]] = a.hsum
    with np.errstate(over="ignore"):
        hsum[where] += b.hsum
    run_hashes, repeated = None, np.concatenate([a.repeated, b.repeated])
    if a.run_hashes is not None and b.run_hashes is not None:
        both = np.sort(np.concatenate([a.run_hashes, b.run_hashes]), kind="stable")
        same = both[1:] == both[:-1]
        if same.any():
            repeated = np.unique(np.concatenate([repeated, both[1:][same]]))
            both = np.unique(both)
        run_hashes = both
    covariates = {}
    for name, info in a.covariates.items():
        other = b.covariates[name]
        if info["kind"] != other["kind"] and not (
            info.get("min") == math.inf or other.get("min") == math.inf
        ):
            raise LedgerError(
                f"covariate {name!r} is {info['kind']} in {a.files[-1]} but {other['kind']} in "
                f"{b.files[0]}; one column holds one type",
                field=name,
            )
        merged = dict(info)
        merged["first_null"] = info["first_null"] or other["first_null"]
        if "min" in info:
            merged["min"] = min(info["min"], other.get("min", math.inf))
            merged["max"] = max(info["max"], other.get("max", -math.inf))
        if "levels" in info or "levels" in other:
            merged["levels"] = info.get("levels", set()) | other.get("levels", set())
        covariates[name] = merged
    return _Summary(
        ids=ids,
        moments=moments,
        hsum=hsum,
        run_hashes=run_hashes,
        repeated=repeated,
        covariates=covariates,
        files=a.files + b.files,
    )


def _find_repeated(file: Path, hashes: np.ndarray) -> list[tuple[str, str, int]]:
    """(run_id, file, row) of the runs whose id hash is in ``hashes``."""
    frame = pl.read_parquet(file, columns=["run_id"])
    h1, _ = _run_hashes(frame)
    rows = np.flatnonzero(np.isin(h1, hashes))
    ids = frame["run_id"].to_list()
    return [(ids[r], str(file), int(r) + 1) for r in rows.tolist()]


# ---------------------------------------------------------------------- complements
def _complement(file: Path, big: tuple[str, ...]) -> GroupMoments:
    """Return the moments of the runs WITHOUT each lesson in ``big`` (one group a lesson)."""
    frame = _read(file, ["run_id", "score", "fact_ids"])
    y = frame["score"].cast(pl.Float64).to_numpy()
    ids, rows, codes = _lesson_codes(frame, str(file))
    position = {f: j for j, f in enumerate(ids)}
    out_n, out_m, out_s = np.zeros(len(big), np.int64), np.zeros(len(big)), np.zeros(len(big))
    for k, f in enumerate(big):
        member = np.zeros(y.size, dtype=bool)
        j = position.get(f)
        if j is not None:
            member[rows[codes == j]] = True
        rest = y[~member]
        out_n[k] = rest.size
        if rest.size:
            out_m[k] = rest.mean()
            out_s[k] = float(np.dot(rest - out_m[k], rest - out_m[k]))
    return GroupMoments(out_n, out_m, out_s, int(y.size), 0.0, 0.0)


def _merge_complements(a: GroupMoments, b: GroupMoments) -> GroupMoments:
    return a.merge(b, np.arange(b.n.shape[0]))


# ---------------------------------------------------------------------- ols passes
@dataclass(frozen=True)
class _Columns:
    """How a partition's runs become design rows: controls and lesson positions."""

    covariates: tuple[str, ...]
    #: in covariate order: (name, None) enters linearly, (name, levels) as dummies of those
    #: levels; a constant numeric covariate is left out (the intercept carries it)
    controls: tuple[tuple[str, tuple[Any, ...] | None], ...]
    lesson_position: dict[str, int]  # lesson id -> column among the lessons
    lessons_kept: np.ndarray | None  # lesson columns in the fit (None: every lesson)

    @property
    def names(self) -> list[str]:
        out: list[str] = []
        for name, levels in self.controls:
            out.extend([name] if levels is None else [f"{name}[{lev}]" for lev in levels])
        return out

    @property
    def sources(self) -> list[str]:
        out: list[str] = []
        for name, levels in self.controls:
            out.extend([name] if levels is None else [name] * len(levels))
        return out


def _design_rows(frame: pl.DataFrame, cols: _Columns) -> sparse.csr_array:
    """``[1, controls, lessons]`` rows of one partition as CSR."""
    n = frame.height
    blocks = [np.ones((n, 1))]
    for name, levels in cols.controls:
        if levels is None:
            blocks.append(frame[name].cast(pl.Float64).to_numpy().reshape(n, 1))
        elif levels:
            col = frame[name]
            blocks.append(
                np.column_stack([(col == lev).to_numpy().astype(float) for lev in levels])
            )
    dense = np.hstack(blocks)
    ids, rows, codes = _lesson_codes(frame, "")
    global_cols = np.fromiter(
        (cols.lesson_position[f] for f in ids), dtype=np.int64, count=len(ids)
    )[codes]
    p = len(cols.lesson_position)
    lessons = sparse.csr_array(
        (np.ones(rows.size), (rows, global_cols)), shape=(n, p), dtype=np.float64
    )
    if cols.lessons_kept is not None:
        lessons = lessons[:, cols.lessons_kept]
    return sparse.csr_array(sparse.hstack([sparse.csr_array(dense), lessons], format="csr"))


def _cross_products(file: Path, cols: _Columns) -> CrossProductSums:
    """Pass 2: ``X'X``, ``X'y`` and ``y'y`` of one partition (merged by adding)."""
    from cogstats.estimators._sparse import gram

    frame = _read(file, ["run_id", "score", "fact_ids", *cols.covariates])
    y = frame["score"].cast(pl.Float64).to_numpy()
    x = _design_rows(frame, cols)
    return CrossProductSums(gram(x), x.T @ y, float(y @ y))


def _meat(
    file: Path,
    cols: _Columns,
    params: np.ndarray,
    bread: np.ndarray,
    cov: str,
    cluster: str | None,
    cluster_levels: tuple[Any, ...],
) -> np.ndarray:
    """Pass 3: one partition's share of the sandwich's meat (HC3) or cluster score sums."""
    from cogstats.estimators import _sparse
    from cogstats.estimators.regression import cluster_scores

    extra = (cluster,) if cluster is not None and cluster not in cols.covariates else ()
    frame = _read(file, ["run_id", "score", "fact_ids", *cols.covariates, *extra])
    y = frame["score"].cast(pl.Float64).to_numpy()
    x = _design_rows(frame, cols)
    resid = y - x @ params
    if cov == "HC3":
        h = _sparse.leverages(x, bread)
        return _sparse.gram(x, (resid / (1.0 - h)) ** 2)
    position = {lev: k for k, lev in enumerate(cluster_levels)}
    codes = np.fromiter((position[v] for v in frame[cast(str, cluster)].to_list()), np.int64)
    return cluster_scores(x, resid, codes, len(cluster_levels))


# ---------------------------------------------------------------------- execution
class _Runner:
    """Map a function over the partitions and reduce the results, locally or on Dask."""

    def __init__(self, executor: str, scheduler: str | None, workers: int | None) -> None:
        self.executor = executor
        self.scheduler = scheduler
        self.workers = workers
        self._client: Any = None
        self._cluster: Any = None

    def __enter__(self) -> _Runner:
        if self.executor == "dask":
            try:
                from distributed import Client, LocalCluster
            except ImportError as exc:  # pragma: no cover - depends on the environment
                raise ParameterError(
                    "executor='dask' needs dask.distributed: pip install 'cogstats[scale]'"
                ) from exc
            if self.scheduler is None:
                n = self.workers or max(1, os.cpu_count() or 1)
                self._cluster = LocalCluster(
                    n_workers=n, threads_per_worker=1, processes=True, dashboard_address=":0"
                )
                self._client = Client(self._cluster)
            else:
                self._client = Client(self.scheduler, timeout="30s")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._client is not None:
            self._client.close()
        if self._cluster is not None:
            self._cluster.close()

    def map_reduce(
        self, fn: Callable[[Path], Any], files: Sequence[Path], combine: Callable[[Any, Any], Any]
    ) -> Any:
        if self._client is None:
            acc = None
            for f in files:  # one partition in memory at a time
                r = fn(f)
                acc = r if acc is None else combine(acc, r)
            return acc
        # the function (with its arrays: the coefficients and bread of the third ols pass)
        # goes to the workers once; partitions map to futures, reduced pairwise in order
        fn_future = self._client.scatter(fn, broadcast=True, hash=False)
        futures = self._client.map(_call, list(files), fn=fn_future, pure=False)
        while len(futures) > 1:
            merged = [
                self._client.submit(combine, a, b, pure=False)
                for a, b in zip(futures[0::2], futures[1::2], strict=False)
            ]
            if len(futures) % 2:
                merged.append(futures[-1])
            futures = merged
        return futures[0].result()

    def map(self, fn: Callable[[Path], Any], files: Sequence[Path]) -> list[Any]:
        if self._client is None:
            return [fn(f) for f in files]
        fn_future = self._client.scatter(fn, broadcast=True, hash=False)
        futures = self._client.map(_call, list(files), fn=fn_future, pure=False)
        return cast(list[Any], self._client.gather(futures))


def _call(file: Path, fn: Callable[[Path], Any]) -> Any:
    return fn(file)


# ---------------------------------------------------------------------- entry point
def attribute_dataset(
    path: str | os.PathLike[str],
    method: str = "lift",
    *,
    executor: str = "local",
    scheduler: str | None = None,
    workers: int | None = None,
    check_run_ids: bool = True,
    **options: Any,
) -> Attribution:
    """Attribute a partitioned Parquet ledger (see the module docstring for the layout).

    Parameters
    ----------
    path : str or path
        A directory of Parquet partitions, or one Parquet file.
    method : {"lift", "welch", "ols"}
        As in :func:`~cogstats.estimators.attribute`, with the same options and defaults.
    executor : {"local", "dask"}
        Stream the partitions through this process, or map them over Dask workers.
    scheduler : str, optional
        ``executor="dask"``: a scheduler address; default a LocalCluster for this call.
    workers : int, optional
        Worker processes of that LocalCluster (default: the CPU count).
    check_run_ids : bool
        Check that run ids are unique across partitions (8 bytes a run; default True).

    Returns
    -------
    Attribution
        As the in-memory method; ``extras`` add ``partitions`` and ``executor``.

    Examples
    --------
    >>> import tempfile, pathlib, numpy as np, polars as pl
    >>> from cogstats import attribute
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> rng = np.random.default_rng(0)
    >>> for part in range(3):
    ...     x = rng.random(50) < 0.5
    ...     pl.DataFrame({"run_id": [f"p{part}-{i}" for i in range(50)],
    ...                   "score": np.clip(0.5 + 0.2 * x + rng.normal(0, 0.05, 50), 0, 1),
    ...                   "fact_ids": [["a"] if on else [] for on in x]}
    ...                  ).write_parquet(root / f"part-{part}.parquet")
    >>> result = attribute(root, method="welch")
    >>> round(result.row("a")["estimate"], 2), result.row("a")["trials"]
    (0.2, 68)
    """
    check_choice("method", method, DATASET_METHODS)
    check_choice("executor", executor, EXECUTORS)
    if scheduler is not None and executor != "dask":
        raise ParameterError(
            f"scheduler is for executor 'dask'; got scheduler={scheduler!r} with "
            f"executor={executor!r}"
        )
    if scheduler is not None and (not isinstance(scheduler, str) or not scheduler):
        raise ParameterError(f"scheduler must be an address string; got {scheduler!r}")
    workers = check_int("workers", workers, minimum=1, optional=True)
    if not isinstance(check_run_ids, bool):
        raise ParameterError(f"check_run_ids must be True or False; got {check_run_ids!r}")
    from cogstats.estimators._base import get_spec

    spec = get_spec(method)
    unknown = [k for k in options if k not in spec.defaults]
    if unknown:
        raise ParameterError(
            f"unknown option {unknown[0]!r} for method {method!r}; allowed: {sorted(spec.defaults)}"
        )
    merged = {**spec.defaults, **options}
    files = dataset_files(path)
    covariates: tuple[str, ...] = ()
    levels_for: tuple[str, ...] = ()
    if method == "ols":
        covariates = _check_names(merged["covariates"], "covariates")
        if merged.get("cluster") is not None:
            levels_for = _check_names((merged["cluster"],), "cluster")
            if merged["cluster"] not in covariates:
                covariates = (*covariates, *levels_for)
    with _Runner(executor, scheduler, workers) as runner:
        summary = runner.map_reduce(
            functools.partial(
                _scan, covariates=covariates, check_run_ids=check_run_ids, levels_for=levels_for
            ),
            files,
            _merge,
        )
        if summary.repeated.size:
            _raise_repeated(runner, files, summary.repeated, str(path))
        if method in ("lift", "welch"):
            result = _lift_welch(runner, files, summary, method, merged)
        else:
            result = _ols(runner, files, summary, merged)
    extras = {**result.extras, "partitions": len(files), "executor": executor}
    return Attribution(result.method, result.table, result.settings, result.seed, extras)


def _check_names(names: Any, parameter: str) -> tuple[str, ...]:
    if isinstance(names, str) or not isinstance(names, Sequence):
        raise ParameterError(f"{parameter} must be a tuple of covariate names; got {names!r}")
    for name in names:
        if not isinstance(name, str) or name in ("run_id", "score", "fact_ids"):
            raise ParameterError(f"{parameter}: {name!r} is not a covariate name")
    return tuple(names)


def _raise_repeated(runner: _Runner, files: list[Path], hashes: np.ndarray, src: str) -> None:
    found = [
        hit
        for hits in runner.map(functools.partial(_find_repeated, hashes=hashes), files)
        for hit in hits
    ]
    seen: dict[str, tuple[str, int]] = {}
    for run_id, file, row in found:
        if run_id in seen:
            first_file, first_row = seen[run_id]
            raise LedgerError(
                f"run_id {run_id!r} appears in {first_file} (row {first_row}) and again in "
                f"{file}; run ids must be unique across partitions (a ledger holds each run "
                "once)",
                row=row,
                field="run_id",
                source=src,
            )
        seen[run_id] = (file, row)
    # equal 64-bit hashes of different run ids: a collision, not a repeated run


def _group_stats(runner: _Runner, files: list[Path], s: _Summary) -> dict[str, np.ndarray]:
    g = s.moments
    n_all = g.runs
    n_a = g.n
    n_b, mean_b, ss_b = leave_one_out(
        n_a, g.n * g.mean, g.mean, g.m2, n_all, g.total_sum, g.total_m2
    )
    big = np.flatnonzero((2 * n_b <= n_all) & (n_b > 0))
    if big.size:  # the runs without a very common lesson, accumulated directly
        rest = runner.map_reduce(
            functools.partial(_complement, big=tuple(s.ids[j] for j in big)),
            files,
            _merge_complements,
        )
        mean_b[big], ss_b[big] = rest.mean, rest.m2
    with np.errstate(invalid="ignore", divide="ignore"):
        var_a = np.where(n_a >= 2, g.m2 / np.maximum(n_a - 1, 1), np.nan)
        var_b = np.where(n_b >= 2, ss_b / np.maximum(n_b - 1, 1), np.nan)
    return {
        "fact_id": np.asarray(s.ids, dtype=object),
        "n_a": n_a,
        "mean_a": g.mean,
        "var_a": var_a,
        "n_b": n_b.astype(np.int64),
        "mean_b": mean_b,
        "var_b": var_b,
    }


def _lift_welch(
    runner: _Runner, files: list[Path], s: _Summary, method: str, options: dict[str, Any]
) -> Attribution:
    from cogstats._validation import check_probability, check_real
    from cogstats.estimators.lift import lift_from_stats, welch_from_stats

    level = check_probability("confidence_level", options["confidence_level"])
    if method == "welch":
        floor = cast(float, check_real("noise_floor_sd", options["noise_floor_sd"], minimum=0.0))
        pm = cast(float, check_real("promote_margin", options["promote_margin"], minimum=0.0))
        em = cast(float, check_real("evict_margin", options["evict_margin"], minimum=0.0))
        return welch_from_stats(_group_stats(runner, files, s), level, floor, pm, em)
    return lift_from_stats(_group_stats(runner, files, s), level)


def _control_plan(
    s: _Summary, covariates: tuple[str, ...]
) -> tuple[tuple[str, tuple[Any, ...] | None], ...]:
    """How each covariate enters (the in-memory ``covariate_design`` coding)."""
    plan: list[tuple[str, tuple[Any, ...] | None]] = []
    for name in covariates:
        info = s.covariates[name]
        if info["first_null"] is not None:
            src, row = info["first_null"]
            raise ParameterError(
                f"covariates: covariate {name!r} is null in row {row} of {src}; a regression "
                "needs every value (fill them in or leave those runs out of the dataset)"
            )
        if info["kind"] == "numeric":
            if info["max"] > info["min"]:
                plan.append((name, None))
            continue
        levels = sorted(info["levels"])
        plan.append((name, tuple(levels[1:])))
    return tuple(plan)


def _ols(runner: _Runner, files: list[Path], s: _Summary, options: dict[str, Any]) -> Attribution:
    from cogstats._validation import check_probability
    from cogstats.estimators.identifiability import cross_product_identifiability
    from cogstats.estimators.regression import (
        OLS_COV,
        TableRows,
        _check_vif,
        normal_solution,
        regression_settings,
        regression_table,
        sandwich,
        wald,
    )

    level = check_probability("confidence_level", options["confidence_level"])
    cov = check_choice("cov", options["cov"], OLS_COV)
    threshold = _check_vif(options["vif_threshold"])
    cluster = options["cluster"]
    if cluster is not None and cov != "cluster":
        raise ParameterError(
            f"cluster is used only with cov='cluster'; got cluster={cluster!r} with cov={cov!r}"
        )
    if cov == "cluster" and cluster is None:
        raise ParameterError("cov='cluster' needs cluster=<covariate name>; got cluster=None")
    covariates = tuple(options["covariates"])
    plan = _control_plan(s, covariates)
    position = {f: j for j, f in enumerate(s.ids)}
    cols = _Columns(covariates, plan, position, None)
    q = len(cols.names)
    if cluster is not None and s.covariates[cluster]["first_null"] is not None:
        src, row = s.covariates[cluster]["first_null"]
        raise ParameterError(f"cluster: covariate {cluster!r} is null in row {row} of {src}")
    sums = runner.map_reduce(
        functools.partial(_cross_products, cols=cols), files, CrossProductSums.merge
    )
    xtx, xty, yty = sums.xtx, sums.xty, sums.yty
    n = s.moments.runs
    p = len(s.ids)
    # identifiability from the centred cross-products (duplicates: equal run-hash sums)
    keys = [tuple(row) for row in s.hsum.tolist()]
    ident, _ = cross_product_identifiability(
        list(s.ids), n, s.moments.n, keys, xtx, q, cols.sources, 1e-10, threshold
    )
    keep = ident["identifiable"].to_numpy().astype(bool)
    sel = np.concatenate([np.arange(1 + q), 1 + q + np.flatnonzero(keep)])
    inv, params, rank = normal_solution(xtx[np.ix_(sel, sel)], xty[sel])
    df_resid = float(n - rank)
    kept_cols = _Columns(covariates, plan, position, np.flatnonzero(keep))
    if cov == "nonrobust":
        rss = max(yty - float(params @ xty[sel]), 0.0)  # e'e = y'y - b'X'y at the solution
        fit = sandwich(params, inv, None, rss / df_resid, df_resid)
    else:
        levels: tuple[Any, ...] = ()
        if cov == "cluster":
            levels = tuple(sorted(s.covariates[cluster]["levels"]))
        meat_fn = functools.partial(
            _meat,
            cols=kept_cols,
            params=params,
            bread=inv,
            cov=cov,
            cluster=cluster,
            cluster_levels=levels,
        )
        part = runner.map_reduce(meat_fn, files, lambda a, b: a + b)
        if cov == "HC3":
            fit = sandwich(params, inv, part, 1.0, df_resid)
        else:
            g = len(levels)
            scale = g / (g - 1.0) * ((n - 1.0) / (n - sel.size))  # statsmodels: columns
            fit = sandwich(params, inv, part.T @ part, scale, df_resid)
    use_t = cov != "cluster"
    lesson = slice(1 + q, sel.size)
    est, se = fit.params[lesson], fit.bse[lesson]
    df = float(fit.df_resid) if use_t else math.inf
    lo, hi, pvalue, statistic = wald(est, se, df, level)

    table = regression_table(
        "ols",
        TableRows(tuple(s.ids), s.moments.n, n, ident),
        keep,
        est,
        se,
        lo,
        hi,
        pvalue,
        {"df": np.full(p, df), "statistic": statistic},
    )
    settings = regression_settings(
        covariates=covariates,
        cov=cov,
        cluster=cluster,
        confidence_level=level,
        vif_threshold=threshold,
        interval="wald",
        reference="t" if use_t else "normal",
        mean_contrasts=options["mean_contrasts"],
    )
    names = ["const", *cols.names]
    extras = {
        "params": fit.params,
        "cov_params": fit.cov_params,
        "df_resid": fit.df_resid,
        "identifiability": ident,
        "exog_names": [*names, *(f for f, k in zip(s.ids, keep, strict=True) if k)],
    }
    return Attribution("ols", table, settings, extras=extras)
