"""The gate registry and the one gate protocol.

Every gate is a class whose instances have
``evaluate(ledger, candidates=None, *, rng=None) -> GateReport``; its options are the
fields of a (frozen) dataclass, validated by the class.  :data:`GATES` maps registry names
to entries; :func:`get_gate` looks one up (a registered name, or an import path
``"package.module:Class"`` for a gate of one's own, so that spawned sweep workers find it);
:func:`make_gate` builds one.  The built-in gates register themselves in their folders,
which load only when asked for (``get_gate("cycgraph")`` does not import the estimators
that the evidence gate needs).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from cogstats._imports import allow_imports
from cogstats._registry import Entry, Registry

if TYPE_CHECKING:
    from cogstats.gates._report import GateReport
    from cogstats.ledger import Ledger

__all__ = [
    "GATES",
    "Gate",
    "allow_imports",
    "get_gate",
    "make_gate",
    "register_gate",
    "registry_name",
]


@runtime_checkable
class Gate(Protocol):
    """What the library and the simulator need of a gate.

    ``evaluate(ledger, candidates=None, *, rng=None) -> GateReport`` judges the
    candidates (default: every lesson in the ledger) on the ledger's evidence; ``rng`` is
    for gates that draw.  A gate may set the class attribute ``judges_verified = True``
    when it judges every live lesson, verified ones included (the audit does); the
    simulator then passes them as candidates on every pass.  A gate that needs the
    store's lesson statuses or lineage sets ``uses_lessons = True`` and accepts a keyword
    ``lessons``: the lesson table (:func:`cogstats.lessons.lesson_table`) of every lesson
    that has arrived, evicted and retired ones included; the simulator, the command line
    (``--lessons FILE``) and :class:`StreamingGate` pass it to such gates only.
    """

    def evaluate(
        self, ledger: Ledger, candidates: Sequence[str] | None = None, *, rng: Any = None
    ) -> GateReport:  # pragma: no cover - protocol
        """Judge the candidates."""
        ...


def _check_gate(obj: Any) -> str | None:
    if not isinstance(obj, type):
        return f"a gate must be a class; got {obj!r}"
    if not callable(getattr(obj, "evaluate", None)):
        return "a gate class needs an evaluate(ledger, candidates=None, *, rng=None) method"
    return None


def _builtin_gates() -> dict[str, str]:
    """Name -> package of every built-in gate: each folder of this package with a gate.py.

    A built-in gate is one folder, ``cogstats/gates/<name>/``, whose package registers the
    gate ``<name>`` with :func:`register_gate` (its one registration); the registry imports
    the folder's package when the name is first asked for.
    """
    here = Path(__file__).resolve().parent
    folders = sorted(p.name for p in here.iterdir() if (p / "gate.py").is_file())
    return {name: f"{__package__}.{name}" for name in folders}


#: The gates: name -> :class:`~cogstats._registry.Entry` (``.name``, ``.cls``,
#: ``.options``, ``.description``, ``.kernel``, ``.compiled``).  Iterating or listing it
#: loads every built-in gate.
GATES: Registry = Registry("gate", _builtin_gates(), check=_check_gate)


def register_gate(
    name: str,
    *,
    description: str,
    options: type | None = None,
    kernel: str | None = None,
) -> Any:
    """Class decorator adding a gate to :data:`GATES`.

    Parameters
    ----------
    name : str
        Registry name (lower-case letters, digits, underscores).
    description : str
        One line for listings.
    options : dataclass type, optional
        The options dataclass (default: the class itself, which must be a dataclass).
    kernel : str, optional
        For a gate the simulator's compiled kernel runs: the import path of the module
        holding its compiled piece (its ``PIECE``, e.g. ``"cogstats.gates.cycgraph.kernel"``;
        docs/gates.md, "Writing a gate").  The entry's ``compiled`` is derived from it.
        Without it the gate runs in the reference engine.

    Examples
    --------
    >>> from dataclasses import dataclass
    >>> import polars as pl
    >>> from cogstats.gates import GateReport, get_gate
    >>> @register_gate("hold_all_doc", description="holds every lesson (an example)")
    ... @dataclass(frozen=True)
    ... class HoldAll:
    ...     def evaluate(self, ledger, candidates=None, *, rng=None):
    ...         ids = list(ledger.fact_ids if candidates is None else candidates)
    ...         return GateReport("hold_all_doc", pl.DataFrame(
    ...             {"fact_id": ids, "decision": ["hold"] * len(ids)}, schema=[
    ...                 ("fact_id", pl.String), ("decision", pl.String)]))
    >>> get_gate("hold_all_doc").cls is HoldAll
    True
    >>> GATES.unregister("hold_all_doc")  # (an example should not stay registered)
    """
    return GATES.register(name, description=description, options=options, kernel=kernel)


def get_gate(name: str) -> Entry:
    """Return the registry entry of a gate: a registered name, or ``"package.module:Class"``.

    Examples
    --------
    >>> entry = get_gate("cycgraph")
    >>> entry.name, entry.compiled
    ('cycgraph', True)
    """
    return GATES.entry(name)


def make_gate(name: str, **options: Any) -> Any:
    """Build a gate from its registry name (or import path) and options.

    The options are validated by the gate's class; unknown names raise, naming the
    allowed ones.  An import path here is the caller's own decision: its module is
    imported (the current directory appended to ``sys.path`` for that import only).
    Names that come from data (a spec file, a state file, a report parameter) import
    only the modules allowed by ``allow_import=``, ``--allow-import`` or
    :func:`allow_imports` (see :mod:`cogstats._imports`).

    Examples
    --------
    >>> make_gate("cycgraph", decision_rule="margin", min_trials=2).min_trials
    2
    """
    return GATES.make(name, **options)


def registry_name(gate: Any) -> str:
    """Return the name a gate object is registered under (else ``"module:Class"``).

    A built-in gate is found without importing the other built-in modules.

    Examples
    --------
    >>> from cogstats.gates import CycgraphGate
    >>> registry_name(CycgraphGate())
    'cycgraph'
    """
    cls = type(gate)
    for name, package in GATES.builtin.items():
        home = cls.__module__
        if (home == package or home.startswith(package + ".")) and GATES[name].cls is cls:
            return name
    for name in GATES:
        if GATES[name].cls is cls:
            return name
    return f"{cls.__module__}:{cls.__qualname__}"
