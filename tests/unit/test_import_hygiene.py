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
    assert "polars" in mods and "cogstats.estimators.regression" in mods


#: Heavy modules a first welch/lift/cycgraph decision must not load (benchmark P1): each
#: costs from 0.2 s (scipy.stats) to several seconds (statsmodels.api pulls in pandas).
HEAVY_ON_FIRST_DECISION = (
    *FORBIDDEN,
    "statsmodels",
    "pandas",
    "pyarrow",
    "IPython",
    "jupyter_core",
    "scipy.stats",
    "scipy.optimize",
)

FIRST_DECISION = (
    "import numpy as np\n"
    "import cogstats, cogstats.ledger, cogstats.estimators, cogstats.gates\n"
    "from cogstats import Ledger, attribute\n"
    "from cogstats.gates import CycgraphGate, EvidenceGate\n"
    "rng = np.random.default_rng(0)\n"
    "ledger = Ledger.from_records([{'run_id': f'r{i}', 'score': float(rng.random()),"
    " 'fact_ids': [f'L{j}' for j in rng.choice(20, 4, replace=False)]} for i in range(200)])\n"
    "EvidenceGate(method='welch').evaluate(ledger)\n"
    "EvidenceGate(method='lift', multiplicity='bonferroni').evaluate(ledger)\n"
    "CycgraphGate().evaluate(ledger); CycgraphGate(decision_rule='margin').evaluate(ledger)\n"
    "attribute(ledger, method='welch'); attribute(ledger, method='lift')\n"
)


def _loaded(mods: set[str], roots: tuple[str, ...]) -> list[str]:
    return sorted(m for m in mods if any(m == r or m.startswith(r + ".") for r in roots))


def test_first_decision_loads_no_heavy_module() -> None:
    """Import, a 200-run ledger, welch/lift evidence gates, cycgraph's gate: numpy,
    scipy.special/sparse and polars only (checked in a fresh process)."""
    mods = _modules(FIRST_DECISION)
    assert _loaded(mods, HEAVY_ON_FIRST_DECISION) == []
    assert "cogstats.estimators.regression" not in mods  # the registry loads one module


def test_heavy_methods_still_load_what_they_need() -> None:
    """The check above can fail: ols imports nothing heavy at the door, but fraclogit
    imports statsmodels when it runs."""
    mods = _modules(FIRST_DECISION + "attribute(ledger, method='fraclogit')\n")
    assert "statsmodels.api" in mods


def test_method_modules_cover_the_registry() -> None:
    """The registry's built-in modules (the lazy lookup) name the module of every method."""
    import warnings

    from cogstats.estimators import _base
    from cogstats.estimators._base import METHODS, load_methods

    methods = load_methods()
    assert set(METHODS.builtin) == set(methods)
    for name, spec in methods.items():
        assert spec.function.__module__ == METHODS.builtin[name], name
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert dict(METHODS.builtin) == _base.METHOD_MODULES  # deprecated, still there
        assert set(_base.ESTIMATOR_MODULES) == set(METHODS.builtin.values())
    assert [w.category for w in caught] == [DeprecationWarning] * 2
    assert "METHODS.builtin" in str(caught[0].message)


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


STREAMING = (
    "import pathlib, tempfile\n"
    "import numpy as np\n"
    "from cogstats.gates import CycgraphGate, EvidenceGate, StreamingGate\n"
    "rng = np.random.default_rng(0)\n"
    "gates = [StreamingGate(CycgraphGate()), StreamingGate(CycgraphGate(decision_rule='margin')),"
    " StreamingGate(EvidenceGate(method='welch')), StreamingGate(EvidenceGate(method='lift'))]\n"
    "for i in range(200):\n"
    "    ids = [f'L{j}' for j in rng.choice(20, 4, replace=False)]\n"
    "    for g in gates:\n"
    "        g.record(f'r{i}', float(rng.random()), ids)\n"
    "for g in gates:\n"
    "    g.report()\n"
    "path = gates[2].save(pathlib.Path(tempfile.mkdtemp()) / 'state.npz')\n"
    "StreamingGate.load(path).report()\n"
)


def test_streaming_gate_loads_no_heavy_module() -> None:
    """A service's streaming gate (cycgraph's rules, welch and lift evidence gates, a save
    and a load) imports none of the heavy modules either (fresh process)."""
    mods = _modules(STREAMING)
    assert _loaded(mods, HEAVY_ON_FIRST_DECISION) == []
    assert "cogstats.gates.streaming" in mods
