"""Benchmark C2: permutation attribution for 500 lessons over 5,000 runs, 9,999 permutations.

cogstats' ``permutation`` method (one batched call for every lesson) against
``scipy.stats.permutation_test`` called once per lesson with the same statistic (difference
in mean score with and without the lesson), ``permutation_type="independent"``, the same
number of resamples and the two-sided alternative.  The scipy loop is too slow to run in
full (about 1.3 s a lesson), so a sample of lessons is timed (5; 2 in quick mode) and the
mean time is scaled to all 500.  The two are timed in the same process, interleaved, so
that load on the shared machine hits both alike; the ratio is the figure to read.  scipy's
loop runs on one core and cogstats' batched products on every core (BLAS threads, and
threads for the intervals' overlap counts), so the wall-time ratio depends on whether the
second core is free; the ratio of CPU seconds (``cpu_ratio_*``) is recorded beside it.

Two cogstats timings: ``interval="none"`` (p-values and max-T adjusted p-values: what the
scipy loop computes, plus the family-wise adjustment) and the default
``interval="inversion"`` (adds the exact test-inversion intervals, whose overlap counts
cost ``O(B n k / 64)`` word operations).  The goal (300x) is for the method at its
defaults, intervals included (``meets_target``); ``meets_target_pvalues`` says the same
of ``interval="none"``.  Agreement: for the sampled lessons, cogstats'
``pvalue_equal_tail`` (scipy's two-sided definition, ``2 * min(one-sided)``) and scipy's
p-value are two independent Monte Carlo estimates of the same exact p-value; they must
differ by at most ``4 sqrt(2) * SE + 2 / (B + 1)`` with ``SE = 2 sqrt((p/2)(1 - p/2) / B)``
(``p`` the mean of the two, floored at ``1 / B``).

Data: inclusion independent with probability 0.1 per lesson and run (about 500 runs per
lesson, 50 lessons per run); score ``clip(0.5 + sum of effects + N(0, 0.1), 0, 1)`` with
lessons 0-9 at +0.01 (z about 2) and the rest at 0.  Seed 20261130.

Run: ``.venv/bin/python -m benchmarks.c2_permutation [--quick]``.
"""

from __future__ import annotations

import math
import os
import platform
import statistics
import sys
import time
import tracemalloc
from typing import Any

import numpy as np
import polars as pl
import scipy
from scipy import stats

import cogstats
from benchmarks._common import cli
from cogstats import Ledger, attribute

SEED = 20261130
N_RUNS = 5000
N_LESSONS = 500
DENSITY = 0.1
PERMUTATIONS = 9999
TARGET_RATIO = 300.0


def make_data(seed: int = SEED) -> tuple[Ledger, np.ndarray, np.ndarray]:
    """The benchmark ledger, its scores and its dense boolean inclusion matrix."""
    gen = np.random.default_rng(seed)
    x = gen.random((N_RUNS, N_LESSONS)) < DENSITY
    effects = np.zeros(N_LESSONS)
    effects[:10] = 0.01
    y = np.clip(0.5 + x @ effects + gen.normal(0.0, 0.1, N_RUNS), 0.0, 1.0)
    ids = np.asarray([f"L{j:03d}" for j in range(N_LESSONS)])
    frame = pl.DataFrame(
        {
            "run_id": [f"r{i}" for i in range(N_RUNS)],
            "score": y,
            "fact_ids": [ids[row].tolist() for row in x],
        }
    )
    ledger = Ledger.from_frame(frame)
    # the ledger orders lessons by first appearance; keep x in that order
    order = [int(f[1:]) for f in ledger.fact_ids]
    return ledger, ledger.scores, x[:, order]


def _mean_difference(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(a, axis=axis) - np.mean(b, axis=axis)


def _time_cogstats(ledger: Ledger, interval: str) -> tuple[float, float, Any]:
    """Wall and process CPU seconds of one call, and its result."""
    start, cpu = time.perf_counter(), time.process_time()
    result = attribute(
        ledger, method="permutation", rng=SEED, permutations=PERMUTATIONS, interval=interval
    )
    return time.perf_counter() - start, time.process_time() - cpu, result


def _time_scipy(y: np.ndarray, column: np.ndarray, lesson: int) -> tuple[float, float, float]:
    """Wall and process CPU seconds of one scipy call, and its p-value."""
    start, cpu = time.perf_counter(), time.process_time()
    ref = stats.permutation_test(
        (y[column], y[~column]),
        _mean_difference,
        permutation_type="independent",
        vectorized=True,
        n_resamples=PERMUTATIONS,
        alternative="two-sided",
        rng=np.random.default_rng([SEED, lesson]),
    )
    return time.perf_counter() - start, time.process_time() - cpu, float(ref.pvalue)


def _tolerance(p1: float, p2: float) -> float:
    p = max((p1 + p2) / 2, 1.0 / PERMUTATIONS)
    half = min(p / 2, 0.5)
    se = 2 * math.sqrt(half * (1 - half) / PERMUTATIONS)
    return 4 * math.sqrt(2) * se + 2 / (PERMUTATIONS + 1)


def _machine() -> dict[str, Any]:
    """Cores, CPU, load and versions (the same keys as the other benchmark records)."""
    try:
        usable: int | None = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        usable = os.cpu_count()
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:  # pragma: no cover - not on Linux
        pass
    try:
        load: float | None = os.getloadavg()[0]
    except OSError:  # pragma: no cover
        load = None
    return {
        "cores": os.cpu_count(),
        "cpus_usable": usable,
        "cpu": cpu,
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "load_average_1min": load,
        "versions": {
            "cogstats": cogstats.__version__,
            "numpy": np.__version__,
            "scipy": scipy.__version__,
            "polars": pl.__version__,
        },
    }


def run(quick: bool = False) -> dict[str, Any]:
    """Run C2 and return its figures (also prints a short table).

    Parameters
    ----------
    quick : bool
        Time 2 scipy lessons and one cogstats run of each kind instead of 5 and 3.

    Returns
    -------
    dict
        Timings (seconds), the ratio, the agreement check, sizes, seed, machine, versions.
    """
    ledger, y, x = make_data(SEED)
    gen = np.random.default_rng(SEED + 1)
    n_sample = 2 if quick else 5
    ids = list(ledger.fact_ids)
    others = np.sort(gen.choice(N_LESSONS - 1, n_sample - 1, replace=False)) + 1
    names = ["L000", *(f"L{j:03d}" for j in others.tolist())]
    lessons = [ids.index(name) for name in names]  # columns of x, rows of the result
    reps = 1 if quick else 3

    _time_cogstats(ledger, "none")  # warm-up (imports, first allocation), not counted
    pvalue_times: list[float] = []
    pvalue_cpu: list[float] = []
    scipy_times: list[float] = []
    scipy_cpu: list[float] = []
    scipy_p: dict[int, float] = {}
    chunks = np.array_split(np.asarray(lessons), reps)
    result: Any = None
    for chunk in chunks:  # interleave so that machine load hits both alike
        seconds, cpu, result = _time_cogstats(ledger, "none")
        pvalue_times.append(seconds)
        pvalue_cpu.append(cpu)
        for j in chunk.tolist():
            seconds, cpu, p = _time_scipy(y, x[:, j], j)
            scipy_times.append(seconds)
            scipy_cpu.append(cpu)
            scipy_p[j] = p
    inversion_times = []
    inversion_cpu = []
    full: Any = None
    for _ in range(1 if quick else 2):
        seconds, cpu, full = _time_cogstats(ledger, "inversion")
        inversion_times.append(seconds)
        inversion_cpu.append(cpu)

    frame = result.to_frame()
    checks = []
    for j in lessons:
        row = frame.row(j, named=True)
        ours = float(row["pvalue_equal_tail"])
        tol = _tolerance(ours, scipy_p[j])
        checks.append(
            {
                "lesson": row["fact_id"],
                "pvalue_cogstats": ours,
                "pvalue_scipy": scipy_p[j],
                "tolerance": tol,
                "agree": abs(ours - scipy_p[j]) <= tol,
            }
        )
    same_pvalues = full.to_frame()["pvalue"].to_list() == frame["pvalue"].to_list()

    peak = None
    if not quick:
        tracemalloc.start()
        _time_cogstats(ledger, "inversion")
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()

    scipy_per_lesson = statistics.fmean(scipy_times)
    scipy_all = scipy_per_lesson * N_LESSONS
    cog_pvalues = statistics.median(pvalue_times)
    cog_full = statistics.median(inversion_times)
    scipy_cpu_all = statistics.fmean(scipy_cpu) * N_LESSONS
    out: dict[str, Any] = {
        "benchmark": "C2",
        "quick": quick,
        "seed": SEED,
        "n_runs": N_RUNS,
        "n_lessons": N_LESSONS,
        "inclusion_density": DENSITY,
        "permutations": PERMUTATIONS,
        "scipy_lessons_timed": len(scipy_times),
        "scipy_seconds_per_lesson": scipy_per_lesson,
        "scipy_seconds_per_lesson_all": scipy_times,
        "scipy_seconds_all_lessons_scaled": scipy_all,
        "cogstats_seconds_pvalues": cog_pvalues,
        "cogstats_seconds_pvalues_all": pvalue_times,
        "cogstats_seconds_with_intervals": cog_full,
        "cogstats_seconds_with_intervals_all": inversion_times,
        "scipy_cpu_seconds_per_lesson": statistics.fmean(scipy_cpu),
        "cogstats_cpu_seconds_pvalues": statistics.median(pvalue_cpu),
        "cogstats_cpu_seconds_with_intervals": statistics.median(inversion_cpu),
        "ratio_pvalues": scipy_all / cog_pvalues,
        "ratio_with_intervals": scipy_all / cog_full,
        "cpu_ratio_pvalues": scipy_cpu_all / statistics.median(pvalue_cpu),
        "cpu_ratio_with_intervals": scipy_cpu_all / statistics.median(inversion_cpu),
        "target_ratio": TARGET_RATIO,
        "meets_target": scipy_all / cog_full >= TARGET_RATIO,
        "meets_target_pvalues": scipy_all / cog_pvalues >= TARGET_RATIO,
        "agreement": checks,
        "all_agree": all(c["agree"] for c in checks),
        "intervals_leave_pvalues_unchanged": same_pvalues,
        "peak_traced_bytes_with_intervals": peak,
        "batch_size": result.extras["batch_size"],
        "machine": _machine(),
    }
    _print(out)
    return out


def _print(out: dict[str, Any]) -> None:
    n = out["scipy_lessons_timed"]
    print(
        f"C2 permutation attribution: {out['n_lessons']} lessons x {out['n_runs']} runs, "
        f"{out['permutations']} permutations, seed {out['seed']}"
    )
    print(
        f"  machine: {out['machine']['cpu']}, {out['machine']['cpus_usable']} usable cores, "
        f"1-min load {out['machine']['load_average_1min']}"
    )
    rows = [
        (
            f"scipy permutation_test, per lesson ({n} timed)",
            f"{out['scipy_seconds_per_lesson']:.3f} s",
        ),
        ("scipy, scaled to all lessons", f"{out['scipy_seconds_all_lessons_scaled']:.1f} s"),
        ("cogstats, p-values + max-T", f"{out['cogstats_seconds_pvalues']:.3f} s"),
        ("cogstats, + exact intervals", f"{out['cogstats_seconds_with_intervals']:.3f} s"),
        ("ratio (p-values)", f"{out['ratio_pvalues']:.0f}x"),
        (
            "CPU-time ratio (p-values, with intervals)",
            f"{out['cpu_ratio_pvalues']:.0f}x, {out['cpu_ratio_with_intervals']:.0f}x",
        ),
        (
            "ratio (defaults: with intervals)",
            f"{out['ratio_with_intervals']:.0f}x (target >= {out['target_ratio']:.0f}x)",
        ),
        (
            "CPU s: scipy/lesson, cogstats p, +int",
            f"{out['scipy_cpu_seconds_per_lesson']:.3f}, "
            f"{out['cogstats_cpu_seconds_pvalues']:.3f}, "
            f"{out['cogstats_cpu_seconds_with_intervals']:.3f}",
        ),
        ("p-values agree (sampled lessons)", str(out["all_agree"])),
    ]
    if out["peak_traced_bytes_with_intervals"] is not None:
        peak_mb = out["peak_traced_bytes_with_intervals"] / 2**20
        rows.append(("peak traced memory, with intervals", f"{peak_mb:.0f} MB"))
    width = max(len(r[0]) for r in rows)
    for label, value in rows:
        print(f"  {label:<{width}}  {value}")
    for c in out["agreement"]:
        print(
            f"    {c['lesson']}: cogstats {c['pvalue_cogstats']:.4f}  scipy "
            f"{c['pvalue_scipy']:.4f}  (tolerance {c['tolerance']:.4f})"
        )


if __name__ == "__main__":
    cli(run, __doc__)
