"""The production path imports only numpy, scipy, polars and statsmodels (architecture.md).

A production service imports ``cogstats.ledger``, ``cogstats.estimators`` and
``cogstats.gates``: none of Jupyter, altair, papermill, numba, tqdm, Dask or faiss may be
imported on that path.  And the simulator's workers must not pay for statsmodels' import
(lazy package namespaces): importing ``cogstats.sim`` and running the compiled engine
with cycgraph's gate stays free of statsmodels.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

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
    # the service's stack (cogstats serve): only cogstats.serve imports it
    "fastapi",
    "starlette",
    "uvicorn",
    "pydantic",
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
    from cogstats.estimators._base import METHODS, load_methods

    methods = load_methods()
    assert set(METHODS.builtin) == set(methods)
    for name, spec in methods.items():
        assert spec.function.__module__ == METHODS.builtin[name], name


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


STORE = (
    "import tempfile\n"
    "import numpy as np\n"
    "from cogstats import LessonStore\n"
    "rng = np.random.default_rng(0)\n"
    "with LessonStore.open(tempfile.mkdtemp(), preset='recommended', max_facts=6,"
    " candidate_slots=3) as store:\n"
    "    for i in range(60):\n"
    "        sel = store.select(context={'family': 'web'})\n"
    "        ids = list(sel.fact_ids) or [f'L{i % 9}']\n"
    "        store.record(f'r{i}', float(rng.random()), ids,"
    " {'difficulty_proxy': float(rng.normal())})\n"
    "    store.snapshot(); store.lessons(); store.events(); store.ledger()\n"
    "with LessonStore.open(store.path, read_only=True) as reader:\n"
    "    reader.lessons()\n"
)


def test_the_lesson_store_loads_no_simulator_or_notebook_stack() -> None:
    """A live agent's store (the recommended preset: select, record, snapshot, a reader)
    imports neither numba nor the simulator nor Jupyter (fresh process)."""
    mods = _modules(STORE)
    bad = sorted(m for m in mods if m.split(".")[0] in FORBIDDEN)
    assert bad == []
    assert _loaded(mods, ("cogstats.sim", "cogstats.reports", "cogstats.sweep")) == []
    assert "cogstats.store.store" in mods and "cogstats.gates.recommended.gate" in mods


def test_the_command_line_loads_the_service_stack_only_to_serve() -> None:
    """``cogstats.cli`` registers ``serve`` without importing FastAPI or uvicorn; the
    service's modules do import them (so the check above can fail)."""
    stack = ("fastapi", "starlette", "uvicorn", "pydantic")
    mods = _modules("import cogstats.cli, cogstats.serve\ncogstats.cli.build_parser(None)\n")
    assert _loaded(mods, stack) == []
    mods = _modules("from cogstats.serve import create_app, serve\n")
    assert set(stack) <= {m.split(".")[0] for m in mods}


# ---------------------------------------------------------------- the import rules
# (house style: no private name imported across packages; imports run one way)
ROOT_DIR = Path(__file__).resolve().parents[2]

#: private top-level modules shared by every package on purpose, with the reason
SHARED_PRIVATE = {
    "cogstats._codes": "the one set of decision, reason and status codes",
    "cogstats._validation": "the errors and the parameter checks every module raises",
    "cogstats._registry": "the one registry class of every swappable part",
    "cogstats._toml": "the one typed TOML reader of the simulation, sweep and admission specs",
    "cogstats._progress": "the one progress bar",
    "cogstats._lazy": "the lazy (PEP 562) namespace of every package's face",
    "cogstats._results": "the shared text rendering of result frames and settings",
    "cogstats._rng": "the one seeding rule",
    "cogstats._imports": "the one rule for importing a 'module:Class' named in data",
    "cogstats._cli_options": "the command-line flags shared by the sub-commands",
    "cogstats._version": "the package version, a leaf",
    "cogstats._statelock": "the one writer-per-state-path lock (streaming gate, sweep store)",
}


def _modname(path: Path) -> str:
    parts = list(path.relative_to(ROOT_DIR).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _sources() -> dict[str, Path]:
    return {_modname(p): p for p in sorted((ROOT_DIR / "cogstats").rglob("*.py"))}


def _home(module: str, sources: dict[str, Path]) -> str:
    """The package a module belongs to (a package's face belongs to the package)."""
    return module if sources[module].name == "__init__.py" else module.rpartition(".")[0]


def _private_owner(target: str, sources: dict[str, Path]) -> str | None:
    """The package that owns the first private component of a dotted name, if any: the
    package holding a private module, or the package of the module holding a name."""
    parts = target.split(".")
    for i, part in enumerate(parts[1:], start=1):
        if part.startswith("_") and not part.startswith("__"):
            holder = ".".join(parts[:i])
            is_package = holder == "cogstats" or (
                holder in sources and sources[holder].name == "__init__.py"
            )
            return holder if is_package else holder.rpartition(".")[0]
    return None


def _may_use(importer: str, owner: str, sources: dict[str, Path]) -> bool:
    home = _home(importer, sources)
    return home == owner or (owner != "cogstats" and home.startswith(owner + "."))


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _imports(tree: ast.AST, with_type_checking: bool) -> list[tuple[int, str, list[str]]]:
    """(line, module, names) of every absolute cogstats import (names [] for ``import``)."""
    skip: set[int] = set()
    if not with_type_checking:
        for node in ast.walk(tree):
            if _is_type_checking(node):
                skip.update(id(n) for n in ast.walk(node))
    out = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] == "cogstats":
                out.append((node.lineno, node.module, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            out.extend(
                (node.lineno, a.name, []) for a in node.names if a.name.split(".")[0] == "cogstats"
            )
    return out


def private_imports(sources: dict[str, Path]) -> list[str]:
    """Every import of another package's underscore module or name, and every use of an
    underscore attribute of another package's module bound by an import."""
    found = []
    for me, path in sources.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        modules: dict[str, str] = {}  # local name -> cogstats module it is bound to

        def check(target: str, line: int, text: str, me: str = me) -> None:
            if target in SHARED_PRIVATE:
                return
            owner = _private_owner(target, sources)
            if owner is not None and not _may_use(me, owner, sources):
                found.append(f"{me}:{line}: {text}")

        for line, module, names in _imports(tree, with_type_checking=True):
            check(module, line, f"import of {module}")
            for name in names:
                full = f"{module}.{name}"
                if full in sources:  # a module
                    check(full, line, f"import of module {full}")
                    modules[name] = full
                elif name.startswith("_") and not name.startswith("__"):
                    check(full, line, f"from {module} import {name}")
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname and a.name in sources:
                        modules[a.asname] = a.name
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in modules
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
            ):
                target = f"{modules[node.value.id]}.{node.attr}"
                check(target, node.lineno, f"use of {node.value.id}.{node.attr}")
    return found


def test_no_private_name_is_imported_across_packages() -> None:
    assert private_imports(_sources()) == []


def test_the_private_import_check_can_fail(tmp_path: Path) -> None:
    """The check finds each kind of violation (and spares a package's own privates)."""
    (tmp_path / "fake.py").write_text(
        "from cogstats.ledger import _validate_record\n"
        "from cogstats.estimators._base import get_spec\n"
        "from cogstats.gates import cycgraph\n"
        "import cogstats.estimators.regression as reg\n"
        "x = cycgraph._decide_core, reg._wald, cycgraph.CycgraphGate\n"
        "from cogstats.sim import _kernel\n"
        "from cogstats._codes import KINDS\n"
    )
    (tmp_path / "empty.py").write_text("")
    (tmp_path / "sim").mkdir()
    (tmp_path / "sim" / "__init__.py").write_text("")
    sources = {
        "cogstats.sim": tmp_path / "sim" / "__init__.py",
        "cogstats.sim.fake": tmp_path / "fake.py",
        "cogstats.gates.cycgraph": tmp_path / "empty.py",
        "cogstats.estimators.regression": tmp_path / "empty.py",
        "cogstats.sim._kernel": tmp_path / "empty.py",
    }
    found = [f.split(": ", 1)[1] for f in private_imports(sources)]
    assert sorted(found) == [
        "from cogstats.ledger import _validate_record",
        "import of cogstats.estimators._base",
        "use of cycgraph._decide_core",
        "use of reg._wald",
    ]


def import_graph(sources: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the cogstats modules it imports when it runs (not under TYPE_CHECKING).

    ``from package import module`` is an arrow to the module only.
    """
    graph: dict[str, set[str]] = {m: set() for m in sources}
    for me, path in sources.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for _, module, names in _imports(tree, with_type_checking=False):
            subs = {f"{module}.{n}" for n in names if f"{module}.{n}" in sources}
            if module in sources and (not names or len(subs) < len(names)):
                graph[me].add(module)
            graph[me] |= subs
        graph[me].discard(me)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_circles() -> None:
    assert circles(import_graph(_sources())) == []
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_imports_run_down_the_layers() -> None:
    """The two arrows that ran back up: the estimators layer imports nothing of the gates,
    and nothing imports the package's face for its version."""
    graph = import_graph(_sources())
    up = sorted(
        (m, t)
        for m, ts in graph.items()
        if m.startswith("cogstats.estimators")
        for t in ts
        if t.startswith(("cogstats.gates", "cogstats.sim", "cogstats.reports"))
    )
    assert up == []
    assert sorted(m for m, ts in graph.items() if "cogstats" in ts) == []


#: the most lines a module of cogstats/ may hold (architecture.md)
MAX_LINES = 1200
#: modules allowed above the limit while being split (none today)
BEING_SPLIT: dict[str, str] = {}


def test_no_module_above_the_line_limit() -> None:
    long = {}
    for path in sorted((ROOT_DIR / "cogstats").rglob("*.py")):
        rel = path.relative_to(ROOT_DIR).as_posix()
        n = len(path.read_text(encoding="utf-8").splitlines())
        if n > MAX_LINES and rel not in BEING_SPLIT:
            long[rel] = n
    assert long == {}
