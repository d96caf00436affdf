"""Attribution of a partitioned Parquet ledger equals the in-memory result.

Reference: ``attribute(Ledger.from_frame(all partitions concatenated), ...)`` on the same
runs.  Tolerance 1e-9 relative on every float column (the partitioned path adds sums in
another order: observed differences are about 1e-11 for lift/welch and 1e-10 for ols);
ids, order, counts and identifiability flags identical.  The Dask test runs one worker
whose memory limit is a third of the dataset's size in memory: it must finish, with the
same numbers as the in-process stream.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from cogstats import Ledger, attribute
from cogstats._validation import LedgerError, ParameterError
from cogstats.estimators.partitioned import dataset_files

RTOL = 1e-9


def _write_partitions(root: Path, n_parts: int = 4, runs: int = 250, seed: int = 0) -> Ledger:
    """Partitions with 30 lessons (one in most runs), covariates of every kind."""
    rng = np.random.default_rng(seed)
    frames = []
    effects = rng.normal(0, 0.05, 30)
    for part in range(n_parts):
        x = rng.random((runs, 30)) < 0.12
        x[:, 0] = rng.random(runs) < 0.8  # a lesson in most runs: its baseline is small
        difficulty = rng.normal(size=runs)
        score = np.clip(0.5 + x @ effects + 0.05 * difficulty + rng.normal(0, 0.1, runs), 0, 1)
        ids = [[f"L{j}" for j in np.flatnonzero(row)] for row in x]
        if part == 1:
            ids[3] = [*ids[3], ids[3][0]] if ids[3] else ids[3]  # a repeated id counts once
        frames.append(
            pl.DataFrame(
                {
                    "run_id": [f"p{part}-r{i}" for i in range(runs)],
                    "score": score,
                    "fact_ids": ids,
                    "difficulty": difficulty,
                    "family": rng.choice(["a", "b", "c"], runs).tolist(),
                    "hard": (difficulty > 0.5).tolist(),
                    "batch": (np.arange(runs) // 25 + 100 * part).tolist(),
                }
            )
        )
        frames[-1].write_parquet(root / f"part-{part:03d}.parquet")
    return Ledger.from_frame(pl.concat(frames))


def _assert_equal(got: pl.DataFrame, want: pl.DataFrame) -> None:
    assert got.columns == want.columns
    for name in got.columns:
        a, b = got[name], want[name]
        if a.dtype == pl.Float64:
            x, y = a.to_numpy(), b.to_numpy()
            assert np.array_equal(np.isnan(x), np.isnan(y)), name
            ok = np.isfinite(x)
            assert np.array_equal(x[~ok], y[~ok], equal_nan=True), name
            np.testing.assert_allclose(x[ok], y[ok], rtol=RTOL, atol=1e-13, err_msg=name)
        else:
            assert a.to_list() == b.to_list(), name


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Ledger]:
    root = tmp_path_factory.mktemp("partitioned")
    return root, _write_partitions(root)


@pytest.mark.parametrize(
    ("method", "options"),
    [
        ("lift", {}),
        ("welch", {"noise_floor_sd": 0.05, "promote_margin": 0.02}),
        ("ols", {}),
        ("ols", {"covariates": ("difficulty", "family", "hard"), "cov": "HC3"}),
        ("ols", {"covariates": ("family",), "cov": "nonrobust"}),
        ("ols", {"cov": "cluster", "cluster": "batch"}),
    ],
)
def test_local_stream_equals_in_memory(
    dataset: tuple[Path, Ledger], method: str, options: dict
) -> None:
    root, ledger = dataset
    got = attribute(root, method, **options)
    want = attribute(ledger, method, **options)
    _assert_equal(got.to_frame(), want.to_frame())
    assert dict(got.settings) == dict(want.settings)
    assert got.extras["partitions"] == 4


def test_common_lesson_gets_a_direct_baseline(dataset: tuple[Path, Ledger]) -> None:
    root, ledger = dataset
    row = attribute(root, "lift").row("L0")
    assert 2 * row["baseline_runs"] < len(ledger)  # the complement pass was needed
    assert row["mean_without"] == pytest.approx(ledger.baseline(exclude="L0").mean_score, rel=1e-12)


def test_repeated_run_id_across_partitions_is_an_error(tmp_path: Path) -> None:
    _write_partitions(tmp_path, n_parts=2, runs=40)
    clash = pl.read_parquet(tmp_path / "part-000.parquet").slice(5, 1)
    clash.write_parquet(tmp_path / "part-009.parquet")
    with pytest.raises(LedgerError, match=r"run_id 'p0-r5' appears in .*part-000.*part-009"):
        attribute(tmp_path, "lift")
    # unchecked, the run counts twice (stated in the docs)
    unchecked = attribute(tmp_path, "lift", check_run_ids=False)
    total = sum(pl.read_parquet(f).height for f in dataset_files(tmp_path))
    row = unchecked.to_frame().row(0, named=True)
    assert row["trials"] + row["baseline_runs"] == total == 81


def test_bad_partition_rows_are_reported_with_file_row_and_field(tmp_path: Path) -> None:
    pl.DataFrame(
        {"run_id": ["a", "b"], "score": [0.5, 1.5], "fact_ids": [["x"], []]}
    ).write_parquet(tmp_path / "p.parquet")
    with pytest.raises(LedgerError, match=r"row 2.*score|score.*row 2") as err:
        attribute(tmp_path, "lift")
    assert "p.parquet" in str(err.value)


def test_options_are_checked(dataset: tuple[Path, Ledger]) -> None:
    root, ledger = dataset
    with pytest.raises(ParameterError, match="method"):
        attribute(root, "permutation")
    with pytest.raises(ParameterError, match="executor"):
        attribute(root, "lift", executor="spark")
    with pytest.raises(ParameterError, match="scheduler is for executor 'dask'"):
        attribute(root, "lift", scheduler="tcp://127.0.0.1:1")
    with pytest.raises(ParameterError, match="unknown option 'covariate'"):
        attribute(root, "ols", covariate=("difficulty",))
    with pytest.raises(ParameterError, match="partitioned dataset path"):
        attribute(ledger, "lift", executor="dask")


def _big_dataset(root: Path, parts: int, runs: int) -> int:
    """Partitions of runs with 10 long lesson ids each; returns the in-memory size (bytes)."""
    rng = np.random.default_rng(5)
    names = pl.Series([f"lesson-{k:04d}-" + "x" * 40 for k in range(400)])
    effects = rng.normal(0, 0.05, 400)
    size = 0
    for part in range(parts):
        codes = rng.integers(0, 400, (runs, 10))
        score = np.clip(0.5 + effects[codes].sum(axis=1) + rng.normal(0, 0.1, runs), 0, 1)
        frame = pl.DataFrame(
            {
                "run_id": pl.Series([f"{part}-{i}" for i in range(runs)]),
                "score": score,
                "fact_ids": names.gather(codes.ravel())
                .reshape((runs, 10))
                .cast(pl.List(pl.String)),
            }
        )
        frame.write_parquet(root / f"part-{part:04d}.parquet")
        size += frame.estimated_size()
    return size


@pytest.mark.slow
def test_dask_worker_with_a_third_of_the_memory(tmp_path: Path) -> None:
    """One worker limited to 300 MB reduces a dataset of about 1 GB in memory."""
    distributed = pytest.importorskip("distributed")
    limit = 300 * 2**20
    size = _big_dataset(tmp_path, parts=100, runs=20_000)
    assert size > 3 * limit  # the whole dataset could not sit in the worker
    local = attribute(tmp_path, "welch")
    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, memory_limit=limit, dashboard_address=":0"
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        before = set(client.scheduler_info()["workers"])
        remote = attribute(tmp_path, "welch", executor="dask", scheduler=cluster.scheduler_address)
        assert set(client.scheduler_info()["workers"]) == before  # never restarted
    _assert_equal(remote.to_frame(), local.to_frame())
    assert remote.extras["executor"] == "dask"
    pairs = remote.to_frame()["trials"].sum()  # 10 ids a run, a repeat in a run counting once
    assert pairs < 100 * 20_000 * 10 and math.isclose(pairs, 100 * 20_000 * 10, rel_tol=0.02)


def test_partitions_fill_and_merge_the_shared_statistics(tmp_path: Path) -> None:
    """The first pass is the shared statistics (cogstats.stats.GroupMoments) filled per
    partition as a ledger fills them and merged: equal to the whole ledger's (1e-12), in
    any grouping of the merges; the second pass's cross-products merge by adding."""
    from cogstats.estimators import partitioned as P
    from cogstats.stats import CrossProductSums, GroupMoments
    from cogstats.stats.groups import fact_arrays

    ledger = _write_partitions(tmp_path, n_parts=3, runs=60)
    files = dataset_files(tmp_path)
    parts = [P._scan(f, (), True) for f in files]
    left = P._merge(P._merge(parts[0], parts[1]), parts[2])
    right = P._merge(parts[0], P._merge(parts[1], parts[2]))
    fa = ledger._fact_arrays()
    whole = GroupMoments.from_fact_arrays(fa)
    order = [ledger.fact_ids.index(f) for f in left.ids]
    assert left.ids == right.ids == list(ledger.fact_ids)
    for got in (left.moments, right.moments):
        assert isinstance(got, GroupMoments)
        np.testing.assert_array_equal(got.n, whole.n[order])
        np.testing.assert_allclose(got.mean, whole.mean[order], rtol=1e-12)
        np.testing.assert_allclose(got.m2, whole.m2[order], rtol=1e-12)
        assert got.runs == whole.runs
        assert math.isclose(got.total_m2, whole.total_m2, rel_tol=1e-12)
    one = fact_arrays(fa.y[:5], fa.rows[fa.rows < 5], fa.cols[fa.rows < 5], len(fa.trials))
    assert GroupMoments.from_fact_arrays(one).runs == 5
    cols = P._Columns((), (), {f: j for j, f in enumerate(left.ids)}, None)
    sums = [P._cross_products(f, cols) for f in files]
    assert all(isinstance(x, CrossProductSums) for x in sums)
    total = sums[0].merge(sums[1]).merge(sums[2])
    assert total.xtx[0, 0] == len(ledger)
