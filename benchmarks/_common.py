"""Shared helpers for the benchmark scripts: machine and version records."""

from __future__ import annotations

import os
import platform
import sys
from importlib import metadata
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
