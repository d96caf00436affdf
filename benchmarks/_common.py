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


def cli(run: Callable[..., dict[str, Any]], description: str | None) -> None:
    """The command line every benchmark module shares: ``--quick`` and ``--json PATH``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help="smaller samples, same code")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    out = run(quick=args.quick)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1, default=str))
