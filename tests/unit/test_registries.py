"""The registries of swappable parts (gates, retrieval policies, spending functions) and
the shared codes: lookups, errors, import paths, lazy loading, and that the compiled
simulator, the spec reader and the registries agree on which parts exist."""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cogstats import _codes as C
from cogstats._registry import Registry, resolve_import_path
from cogstats._validation import ParameterError
from cogstats.estimators import SPENDING
from cogstats.gates import GATES, CycgraphGate, EvidenceGate, get_gate, make_gate
from cogstats.retrieval import (
    RETRIEVAL_POLICIES,
    InProgressFirst,
    Randomized,
    get_policy,
    make_policy,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("registry", [GATES, RETRIEVAL_POLICIES, SPENDING])
def test_every_entry_is_complete(registry: Registry) -> None:
    assert len(registry) >= 2
    for name, entry in registry.items():
        assert entry.name == name
        assert dataclasses.is_dataclass(entry.options)
        assert entry.description and "\n" not in entry.description
        assert entry.kind == registry.kind
        # the defaults build a part (validated by the class)
        registry.make(name)


def test_public_lookups() -> None:
    assert set(GATES.builtin) == {
        "audit",
        "cycgraph",
        "evidence",
        "recommended",
    }
    assert set(GATES.builtin) <= set(GATES)
    assert get_gate("evidence").cls is EvidenceGate
    gate = make_gate("cycgraph", decision_rule="margin", min_trials=2)
    assert gate == CycgraphGate(decision_rule="margin", min_trials=2)
    assert make_gate("cycgraph", decisionRule="margin").decision_rule == "margin"  # camelCase
    assert get_policy("randomized").cls is Randomized
    assert make_policy("in_progress_first", max_facts=3) == InProgressFirst(max_facts=3)
    assert set(SPENDING) == {"hsd", "obrien_fleming", "pocock"}
    assert set(RETRIEVAL_POLICIES.builtin) == set(C.POLICY_CODES)


def test_lookup_errors_name_the_part_and_suggest() -> None:
    with pytest.raises(ParameterError, match=r"unknown gate 'evidense' \(did you mean 'evidence'"):
        get_gate("evidense")
    with pytest.raises(ParameterError, match=r"unknown retrieval policy 'ucb'.*'ucb1'"):
        get_policy("ucb")
    with pytest.raises(ParameterError, match=r"unknown option 'max_fact' .*'max_facts'"):
        make_policy("ucb1", max_fact=3)
    with pytest.raises(ParameterError, match="unknown option 'alpah'"):
        make_gate("evidence", alpah=0.1)
    with pytest.raises(ParameterError, match="min_trials must be >= 1"):
        make_gate("evidence", min_trials=0)
    with pytest.raises(ParameterError, match="gamma must be <= 40"):
        SPENDING.make("hsd", gamma=41.0)
    with pytest.raises(ParameterError, match="name string"):
        get_gate(3)  # type: ignore[arg-type]


def test_import_paths() -> None:
    # a registered class named by path is its entry
    assert get_gate("cogstats.gates.cycgraph:CycgraphGate").name == "cycgraph"
    assert resolve_import_path("cogstats.retrieval:UCB1") is RETRIEVAL_POLICIES["ucb1"].cls
    with pytest.raises(ParameterError, match="cannot import gate 'no_such_pkg.x:Gate'"):
        get_gate("no_such_pkg.x:Gate")
    with pytest.raises(ParameterError, match="has no 'Nope'"):
        get_gate("cogstats.gates.cycgraph:Nope")
    with pytest.raises(ParameterError, match="evaluate"):
        get_gate("cogstats.retrieval:UCB1")  # not a gate
    with pytest.raises(ParameterError, match="import path must look like"):
        get_gate("a b:c")


def test_registration_is_validated_once() -> None:
    reg = Registry("thing", {}, check=lambda obj: None if hasattr(obj, "go") else "needs go")

    @dataclasses.dataclass(frozen=True)
    class Good:
        size: int = 1

        def go(self) -> None:
            return None

    reg.register("good", Good, description="a good thing")
    reg.register("good", Good, description="a good thing")  # the same class again: fine

    @dataclasses.dataclass(frozen=True)
    class Other:
        def go(self) -> None:
            return None

    with pytest.raises(RuntimeError, match="registered twice"):
        reg.register("good", Other, description="another")
    with pytest.raises(RuntimeError, match="lower-case"):
        reg.register("Bad Name", Good, description="x")
    with pytest.raises(RuntimeError, match="one-line description"):
        reg.register("two_lines", Good, description="a\nb")
    with pytest.raises(RuntimeError, match="needs go"):

        @reg.register("no_go", description="x")
        @dataclasses.dataclass(frozen=True)
        class NoGo:
            pass

    with pytest.raises(RuntimeError, match="must be a dataclass"):
        reg.register("plain", type("Plain", (), {"go": lambda self: None}), description="x")
    assert reg.entry("good").defaults() == {"size": 1}
    reg.unregister("good")
    with pytest.raises(ParameterError, match="unknown thing 'good'"):
        reg.entry("good")
    with pytest.raises(ParameterError, match="no thing 'good' is registered"):
        reg.unregister("good")


def _modules(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys, json; print(json.dumps(sorted(sys.modules)))"],
        check=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


def test_registries_load_lazily() -> None:
    """Importing a registry imports none of its parts; one lookup imports one module."""
    mods = _modules("import cogstats.gates as g\nx = g.GATES\ne = g.get_gate('cycgraph')\n")
    assert "cogstats.gates.cycgraph" in mods
    assert "cogstats.gates.evidence" not in mods and "cogstats.gates.audit" not in mods
    assert "statsmodels" not in {m.split(".")[0] for m in mods}
    listed = _modules("from cogstats.gates import GATES\nprint(sorted(GATES))\n")
    assert "cogstats.gates.evidence" in listed  # listing completes the registry


def test_compiled_is_derived_from_the_kernel_piece() -> None:
    """A part compiles iff its entry names a kernel piece (``Entry.kernel``; ``compiled`` is
    a read-only property of it, no second flag): the engine's pieces are derived from the
    entries, a gate's piece is its folder's kernel module's ``PIECE`` with a step of its
    own (distinct), and the kernel's policy codes name every compiled policy."""
    import dataclasses

    from cogstats._registry import Entry
    from cogstats.sim.engine import KERNEL_GATES, KERNEL_POLICIES

    assert {n for n, e in GATES.items() if e.kernel is not None} == set(KERNEL_GATES)
    assert {n for n, e in RETRIEVAL_POLICIES.items() if e.kernel is not None} == set(
        KERNEL_POLICIES
    )
    assert "compiled" not in {f.name for f in dataclasses.fields(Entry)}
    entry = GATES["cycgraph"]
    assert entry.compiled and entry.kernel == "cogstats.gates.cycgraph.kernel"
    with pytest.raises(AttributeError):
        entry.compiled = False  # type: ignore[misc]
    steps = [KERNEL_GATES[n].path for n in KERNEL_GATES]
    assert len(set(steps)) == len(steps)
    assert KERNEL_GATES["cycgraph"].path == ("cogstats.gates.cycgraph.kernel", "step")
    # a policy names its piece as a gate does: "module:ATTR" in retrieval.kernel, beside
    # its block
    from cogstats.kernel import KernelPolicy
    from cogstats.retrieval import kernel as KPOL

    for n in KERNEL_POLICIES:
        kernel = RETRIEVAL_POLICIES[n].kernel
        assert kernel.startswith("cogstats.retrieval.kernel:")
        piece = KERNEL_POLICIES[n]
        assert isinstance(piece, KernelPolicy) and piece is getattr(KPOL, kernel.split(":")[1])
    assert KERNEL_POLICIES["designed"] is KERNEL_POLICIES["randomized"] is KPOL.POOL_PIECE
    assert KERNEL_POLICIES["ucb1"].block is KPOL.UCB_BLOCK
    assert set(KERNEL_POLICIES) == set(C.POLICY_CODES)
    assert len(set(C.POLICY_CODES.values())) == len(C.POLICY_CODES)


def test_a_gate_naming_a_kernel_piece_compiles_and_a_bad_one_is_refused() -> None:
    """``register_gate(kernel=...)`` is the one place a gate says it compiles."""
    from dataclasses import dataclass

    from cogstats.gates import register_gate
    from cogstats.sim.engine import KERNEL_GATES

    @dataclass(frozen=True)
    class Borrowed:
        def evaluate(self, ledger: Any, candidates: Any = None, *, rng: Any = None) -> Any:
            raise NotImplementedError

    register_gate("borrowed_piece_test", description="x", kernel="cogstats.gates.audit.kernel")(
        Borrowed
    )
    try:
        assert GATES["borrowed_piece_test"].compiled
        assert "borrowed_piece_test" in KERNEL_GATES
    finally:
        GATES.unregister("borrowed_piece_test")
    assert "borrowed_piece_test" not in KERNEL_GATES
    with pytest.raises(RuntimeError, match="kernel must be the import path"):
        register_gate("bad_piece_test", description="x", kernel="not a module")(Borrowed)


def test_a_policy_naming_its_piece_compiles_and_a_missing_one_is_refused() -> None:
    """``register_policy(kernel="module:ATTR")`` names a piece as ``register_gate`` does."""
    from dataclasses import dataclass

    from cogstats.retrieval import kernel as KPOL
    from cogstats.retrieval import register_policy
    from cogstats.sim.engine import KERNEL_POLICIES

    @dataclass(frozen=True)
    class Borrowed:
        def select(self, lessons: Any, ledger: Any = None, *, rng: Any = None) -> Any:
            raise NotImplementedError

    kernel = "cogstats.retrieval.kernel:ORDER_PIECE"
    register_policy("borrowed_policy_test", description="x", kernel=kernel)(Borrowed)
    missing = "cogstats.retrieval.kernel:NO_SUCH_PIECE"
    register_policy("missing_policy_test", description="x", kernel=missing)(Borrowed)
    try:
        assert RETRIEVAL_POLICIES["borrowed_policy_test"].compiled
        assert KERNEL_POLICIES["borrowed_policy_test"] is KPOL.ORDER_PIECE
        with pytest.raises(ParameterError, match="has no NO_SUCH_PIECE"):
            KERNEL_POLICIES["missing_policy_test"]
    finally:
        RETRIEVAL_POLICIES.unregister("borrowed_policy_test")
        RETRIEVAL_POLICIES.unregister("missing_policy_test")
    assert "borrowed_policy_test" not in KERNEL_POLICIES
    with pytest.raises(RuntimeError, match="kernel must be the import path"):
        register_policy("bad_policy_test", description="x", kernel="a.b:c:d")(Borrowed)


def test_codes_are_consistent() -> None:
    assert C.REASON_BY_CODE[C.REASON_CODE_HARMFUL] == C.HARMFUL
    assert C.REASON_BY_CODE[C.REASON_CODE_NO_LIFT] == C.NO_LIFT
    assert C.REASON_BY_CODE[C.REASON_CODE_RETIRE] == C.LOW_WIN_RATE
    assert C.REASON_BY_CODE[C.REASON_CODE_NONE] is None
    assert [C.KIND_CODES[k] for k in C.KINDS] == [C.KIND_GENUINE, C.KIND_NEUTRAL, C.KIND_POISON]
    assert C.STATUS_NAMES[C.STATUS_RETIRED] == "retired"
    assert (C.evict_reason_code(C.HARMFUL), C.evict_reason_code(None)) == (1, 2)
    decisions = {
        C.DECISION_HOLD,
        C.DECISION_PROMOTE,
        C.DECISION_EVICT_HARMFUL,
        C.DECISION_EVICT_NO_LIFT,
    }
    assert len(decisions) == 4


def test_no_reason_string_or_policy_code_outside_the_codes_module() -> None:
    """One place for reason strings and codes: the package writes them only in _codes."""
    package = ROOT / "cogstats"
    offenders = []
    for path in package.rglob("*.py"):
        if path.name == "_codes.py":
            continue
        text = path.read_text(encoding="utf-8")
        code_lines = [
            line
            for line in text.splitlines()
            if not line.strip().startswith(("#", "``", "-", ">>>", "...", "(", "evict ("))
        ]
        for line in code_lines:
            if (
                '"eval-gate:' in line
                or '"audit:' in line
                or re.search(r"(policy|gate) [<=>!]=? \d", line)
            ):
                offenders.append(f"{path.relative_to(ROOT)}: {line.strip()}")
    assert offenders == []


def test_spending_functions_are_registered_with_their_options() -> None:
    t = np.array([0.25, 0.5, 1.0])
    obf = SPENDING["obrien_fleming"].function(t, 0.025)
    assert obf[-1] == pytest.approx(0.025, abs=1e-15)
    hsd = SPENDING.make("hsd", gamma=1.0)
    assert hsd(t, 0.025)[-1] == pytest.approx(0.025, abs=1e-15)
    assert [f.name for f in SPENDING["hsd"].fields()] == ["gamma"]
    assert SPENDING["pocock"].fields() == ()


# ---------------------------------------------------------------- one registry shape
def _all_registries() -> dict[str, Registry]:
    from cogstats.admission import DEFENCES, INDEXES
    from cogstats.estimators import METHODS
    from cogstats.presets import PRESETS
    from cogstats.reports import REPORTS

    return {
        "GATES": GATES,
        "RETRIEVAL_POLICIES": RETRIEVAL_POLICIES,
        "SPENDING": SPENDING,
        "METHODS": METHODS,
        "PRESETS": PRESETS,
        "REPORTS": REPORTS,
        "DEFENCES": DEFENCES,
        "INDEXES": INDEXES,
    }


#: a lookup of a near miss per registry: (the call, the message it must carry)
NEAR_MISSES = {
    "GATES": (lambda r: r.entry("cycgrap"), r"unknown gate 'cycgrap' \(did you mean 'cycgraph'"),
    "RETRIEVAL_POLICIES": (lambda r: r.entry("ucb2"), r"\(did you mean 'ucb1'"),
    "SPENDING": (lambda r: r.entry("pocok"), r"\(did you mean 'pocock'"),
    "METHODS": (lambda r: r.lookup("welsh"), r"method must be one of .*\(did you mean 'welch'"),
    "PRESETS": (lambda r: r.lookup("recomended"), r"preset must be one of .*'recommended'"),
    "REPORTS": (lambda r: r.lookup("tradeof"), r"report must be one of .*'tradeoffs'"),
    "DEFENCES": (lambda r: r.lookup("admision"), r"defence must be one of .*'admission'"),
    "INDEXES": (lambda r: r.lookup("hsnw"), r"index must be one of .*'hnsw'"),
}


@pytest.mark.parametrize("name", sorted(NEAR_MISSES))
def test_every_registry_is_a_registry_with_unique_names_and_near_miss_lookups(name: str) -> None:
    registry = _all_registries()[name]
    assert isinstance(registry, Registry)
    names = list(registry)
    assert names and len(set(names)) == len(names) == len(registry)
    assert all(re.fullmatch(r"[a-z][a-z0-9_]*", n) for n in names)
    for n in names:
        assert n in registry and registry[n] is registry[n]
    call, message = NEAR_MISSES[name]
    with pytest.raises(ParameterError, match=message):
        call(registry)
    # a second, different object under a registered name is refused
    with pytest.raises(RuntimeError, match="registered twice"):
        registry.add(names[0], object())


def test_no_public_registry_outside_the_registry_class() -> None:
    """A module-level public ``NAME: dict[str, ...] = {}`` filled by registration is a
    registry of its own shape: there is none left (streaming's deprecated adapter table
    and the kernel's tables are :class:`~cogstats._registry.Registry` instances too)."""
    allowed: dict[str, set[str]] = {}
    pattern = re.compile(r"^([A-Z][A-Z0-9_]*)\s*:\s*dict\[str,[^=]*=\s*\{\}\s*$", re.M)
    found = {}
    for path in (ROOT / "cogstats").rglob("*.py"):
        rel = path.relative_to(ROOT).as_posix()
        names = set(pattern.findall(path.read_text(encoding="utf-8")))
        names -= allowed.get(rel, set())  # (none allowed today)
        if names:
            found[rel] = sorted(names)
    assert found == {}


def test_mapping_protocol_registers_and_unregisters() -> None:
    reg: Registry[str] = Registry("colour", param="colour", sort=False)
    reg["red"] = "#f00"
    reg.add("blue", "#00f")
    reg.add("blue", "#00f")  # the same object again: fine
    assert list(reg) == ["red", "blue"] and reg.lookup("blue") == "#00f"
    del reg["red"]
    assert list(reg) == ["blue"]
    with pytest.raises(KeyError):
        del reg["red"]
    with pytest.raises(RuntimeError, match="lower-case"):
        reg["Not-A-Name"] = "x"
    with pytest.raises(ParameterError, match=r"colour must be one of \['blue'\]; got 3"):
        reg.lookup(3)  # type: ignore[arg-type]


def test_estimator_methods_load_one_module_per_lookup() -> None:
    mods = _modules("from cogstats.estimators._base import get_spec\nget_spec('welch')\n")
    assert "cogstats.estimators.lift" in mods
    assert "cogstats.estimators.regression" not in mods


def test_every_swappable_part_has_a_registry_of_one_shape() -> None:
    from cogstats._registry import Registry
    from cogstats.admission.registry import DEFENCES, INDEXES
    from cogstats.estimators import METHODS, SPENDING
    from cogstats.gates import GATES
    from cogstats.presets import PRESETS
    from cogstats.reports.registry import REPORTS
    from cogstats.retrieval import RETRIEVAL_POLICIES
    from cogstats.sim.engine import KERNEL_GATES, KERNEL_POLICIES

    parts = [GATES, METHODS, SPENDING, RETRIEVAL_POLICIES, PRESETS, REPORTS, DEFENCES, INDEXES]
    parts += [KERNEL_GATES, KERNEL_POLICIES]
    assert all(isinstance(r, Registry) for r in parts), [type(r) for r in parts]
    # the compiled pieces cover registered parts only
    assert set(KERNEL_GATES) <= set(GATES) and set(KERNEL_POLICIES) <= set(RETRIEVAL_POLICIES)
