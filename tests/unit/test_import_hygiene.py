"""The production path imports only numpy, scipy, polars and statsmodels (architecture.md).

A production service imports ``cogstats.ledger``, ``cogstats.estimators`` and
``cogstats.gates``: none of Jupyter, altair, papermill, numba, tqdm, Dask or faiss may be
imported on that path.  And the simulator's workers must not pay for statsmodels' import
(lazy package namespaces): importing ``cogstats.sim`` and running the compiled engine
with cycgraph's gate stays free of statsmodels.
"""

from __future__ import annotations

import json
import subprocess
import sys

FORBIDDEN = (
    "altair",
    "papermill",
    "nbconvert",
    "nbformat",
    "ipykernel",
    "jupyter_client",
    "numba",
    "tqdm",
    "dask",
    "distributed",
    "vl_convert",
    "faiss",
)


def _modules(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys, json; print(json.dumps(sorted(sys.modules)))"],
        check=True,
        capture_output=True,
        text=True,
    )
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def test_production_path_imports_no_notebook_or_simulation_stack() -> None:
    mods = _modules(
        "import cogstats, cogstats.ledger, cogstats.estimators, cogstats.gates\n"
        "from cogstats import Ledger, attribute, CycgraphGate, EvidenceGate\n"
        "from cogstats.estimators import METHODS\n"
        "ledger = Ledger.from_records([{'run_id': 'a', 'score': 0.5, 'fact_ids': ['x']},"
        " {'run_id': 'b', 'score': 0.7, 'fact_ids': []}, {'run_id': 'c', 'score': 0.6,"
        " 'fact_ids': ['x']}, {'run_id': 'd', 'score': 0.4, 'fact_ids': []}])\n"
        "attribute(ledger, method='ols'); CycgraphGate().evaluate(ledger)\n"
        "EvidenceGate().evaluate(ledger)\n"
        "assert len(METHODS) >= 12\n"
    )
    bad = sorted(m for m in mods if m.split(".")[0] in FORBIDDEN)
    assert bad == []
    assert "statsmodels" in mods and "polars" in mods


def test_simulation_path_skips_statsmodels() -> None:
    mods = _modules(
        "from cogstats.sim import Scenario, simulate\n"
        "s = Scenario.from_dict({'runs': 5, 'lessons': {'listed': [{'id': 'a', 'effect': 0}]},"
        " 'retrieval': {'rest_after_trials': 2}})\n"
        "simulate(s, replicates=2, rng=1)\n"
    )
    assert "numba" in mods
    # (pyarrow may pull in pandas to build list columns; statsmodels must stay out)
    assert not any(m.split(".")[0] in ("statsmodels", "altair", "papermill") for m in mods)
