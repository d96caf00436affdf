"""Benchmark P4: ``attribute(method="ols")`` on 100,000 runs x 2,000 lessons (about 8 a run).

Side by side: the sparse normal-equation ``ols`` (HC3, one covariate) and the previous
implementation kept as an oracle in tests/oracle/v0.py (the dense design, a dense SVD for
identifiability, statsmodels ``OLS``).  Each runs in its own fresh process, so that its
peak resident memory (``ru_maxrss``) is its own; the ledger is rebuilt in each from the
same seed (the build is not timed, and its memory is reported apart: ``ledger_rss_mb``).
The old implementation at full size needs about 8 GB and many minutes (dense SVDs and
statsmodels on a 100,000 x 2,002 matrix), too much for the shared machine, so it is timed
on a ledger of 20,000 runs from the same generator (10,000 with ``--quick``; the
``reference_runs`` argument sets it), beside the new one on that same ledger: that ratio
is the side-by-side figure.  Where both ran on the same ledger, estimates and standard
errors must agree to 1e-8 relative (the identifiable lessons; both flag the same ones).
Each child also reports its CPU seconds: on a loaded 2-core machine multithreaded BLAS
(Cholesky, ``potri``, the sandwich's products) loses much of its wall time to waiting, and
the CPU figure shows how much.

Run: ``.venv/bin/python -m benchmarks.p4_ols_scale [--quick]``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import numpy as np

from benchmarks._common import cli, machine

TARGET_S = 10.0
TARGET_MB = 2048.0
SEED = 20261130

_CHILD = """
import json, resource, sys, time
import numpy as np
from benchmarks._ledgers import scale_ledger
n_runs, which = int(sys.argv[1]), sys.argv[2]
ledger, effects = scale_ledger(n_runs, 2000, 8.0, seed={seed})
ledger.design(); ledger.scores
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
t = time.perf_counter()
cpu = time.process_time()
if which == "new":
    from cogstats import attribute
    frame = attribute(ledger, method="ols", covariates=("difficulty",)).to_frame()
else:
    from tests.oracle.v0 import old_ols
    frame = old_ols(ledger, covariates=("difficulty",))
seconds = time.perf_counter() - t
cpu = time.process_time() - cpu
order = [int(f[1:]) for f in frame["fact_id"].to_list()]
est = frame["estimate"].to_numpy()
ok = np.isfinite(est)
print(json.dumps({{
    "seconds": seconds,
    "cpu_seconds": cpu,
    "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    "ledger_rss_mb": before,
    "fact_id": frame["fact_id"].to_list(),
    "estimate": [None if not np.isfinite(v) else float(v) for v in est],
    "std_error": [None if v is None else float(v) for v in frame["std_error"].to_list()],
    "corr_with_truth": float(np.corrcoef(est[ok], effects[order][ok])[0, 1]),
}}))
"""


def _child(n_runs: int, which: str) -> dict[str, Any]:
    code = _CHILD.format(seed=SEED)
    out = subprocess.run(
        [sys.executable, "-c", code, str(n_runs), which], check=True, capture_output=True, text=True
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def _agree(a: dict[str, Any], b: dict[str, Any]) -> float:
    """Largest relative difference in estimates and standard errors (identifiable lessons)."""
    assert a["fact_id"] == b["fact_id"]
    worst = 0.0
    for name in ("estimate", "std_error"):
        for x, y in zip(a[name], b[name], strict=True):
            if (x is None) != (y is None):
                return float("inf")
            if x is not None and y is not None:
                worst = max(worst, abs(x - y) / max(abs(y), 1e-300))
    return worst


def run(quick: bool = False, reference_runs: int | None = None) -> dict[str, Any]:
    """Time both implementations (each in a fresh process); return the figures."""
    n_runs = 20_000 if quick else 100_000
    ref_runs = reference_runs or (10_000 if quick else 20_000)
    new = _child(n_runs, "new")
    new_small = _child(ref_runs, "new") if ref_runs != n_runs else new
    old = _child(ref_runs, "old")
    agreement = _agree(new_small, old)
    out = {
        "benchmark": "P4",
        "quick": quick,
        "seed": SEED,
        "n_runs": n_runs,
        "n_lessons": 2000,
        "new_seconds": new["seconds"],
        "new_cpu_seconds": new["cpu_seconds"],
        "new_peak_rss_mb": new["peak_rss_mb"],
        "new_ledger_rss_mb": new["ledger_rss_mb"],
        "new_corr_with_truth": new["corr_with_truth"],
        "reference_runs": ref_runs,
        "new_seconds_at_reference_size": new_small["seconds"],
        "old_seconds_at_reference_size": old["seconds"],
        "new_cpu_seconds_at_reference_size": new_small["cpu_seconds"],
        "old_cpu_seconds_at_reference_size": old["cpu_seconds"],
        "old_peak_rss_mb_at_reference_size": old["peak_rss_mb"],
        "ratio_at_reference_size": old["seconds"] / new_small["seconds"],
        "max_relative_difference": agreement,
        "agree_1e-8": bool(agreement <= 1e-8),
        "identifiable": int(np.sum([e is not None for e in new["estimate"]])),
        "target_s": TARGET_S,
        "target_mb": TARGET_MB,
        "meets_target": new["seconds"] <= TARGET_S and new["peak_rss_mb"] <= TARGET_MB,
        "machine": machine(),
    }
    print(f"P4  ols, {n_runs} runs x 2000 lessons, HC3, one covariate")
    print(
        f"  new    {new['seconds']:7.2f} s (CPU {new['cpu_seconds']:.1f} s)  "
        f"peak {new['peak_rss_mb']:7.0f} MB "
        f"(ledger alone {new['ledger_rss_mb']:.0f} MB)  "
        f"corr with truth {new['corr_with_truth']:.3f}"
    )
    print(
        f"  old    {old['seconds']:7.2f} s  peak {old['peak_rss_mb']:7.0f} MB at {ref_runs} runs "
        f"(new there: {new_small['seconds']:.2f} s; {out['ratio_at_reference_size']:.0f}x)"
    )
    print(f"  largest relative difference (estimates, SEs): {agreement:.1e}")
    return out


if __name__ == "__main__":
    cli(run, __doc__)
