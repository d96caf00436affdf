"""Shared helpers for the benchmark scripts: machine and version records."""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any


def machine() -> dict[str, Any]:
    """Cores, CPU, Python and the versions of the libraries that matter."""
    versions = {}
    for name in ("cogstats", "numpy", "scipy", "numba", "polars", "statsmodels"):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = None
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = None
    return {
        "cores": os.cpu_count(),
        "cpu": cpu,
        "python": sys.version.split()[0],
        "load_average_1min": load,
        "versions": versions,
    }


CYCGRAPH_DIST = "packages/memory/dist"


def cycgraph_checkout(
    path: str | None = None, needs: str = "validation/gate-simulator.js"
) -> Path | None:
    """A built cycgraph checkout from ``path`` or ``$COGSTATS_CYCGRAPH`` (None when neither).

    cycgraph's code is not part of this repository: the benchmarks that run it beside
    ours (C1, P2) need a checkout of ``wmcmahan/cycgraph`` whose ``packages/memory`` is
    built (``npm install && npm run build``), and import ``packages/memory/dist/<needs>``
    from a driver they write to a temporary directory at run time.
    """
    raw = path or os.environ.get("COGSTATS_CYCGRAPH")
    if not raw:
        return None
    root = Path(raw).expanduser().resolve()
    if not (root / CYCGRAPH_DIST / needs).exists():
        raise SystemExit(
            f"{root / CYCGRAPH_DIST / needs} not found: build cycgraph's packages/memory "
            "first (npm install && npm run build)"
        )
    return root


def cli(run: Callable[..., dict[str, Any]], description: str | None) -> None:
    """The command line every benchmark module shares: ``--quick`` and ``--json PATH``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help="smaller samples, same code")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    out = run(quick=args.quick)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1, default=str))
