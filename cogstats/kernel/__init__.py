"""The simulator's compiled toolkit: what a gate's or a retrieval policy's compiled piece uses.

A part the simulator compiles keeps its compiled piece beside it (a gate's in its folder,
``cogstats/gates/<name>/kernel.py``; the retrieval policies' in
``cogstats/retrieval/kernel.py``) and names it in its registration
(``register_gate(..., kernel="cogstats.gates.cycgraph.kernel")``).  The piece is a
module importing numba, imported only when the simulator runs; this package is what such
a module needs:

- :class:`KernelGate` (a gate's piece: its compiled ``step(st, o, run)``, how a gate
  object becomes the options record ``o``, what it does not cover, what it reads of the
  run loop) and :class:`KernelPolicy` (a policy's: its parameter :class:`Block`);
- :class:`~cogstats.kernel.state.State`, the run loop's record of a replicate's arrays,
  which every piece reads and writes;
- :func:`compile_rule`, which compiles a rule written once as plain functions of the
  gate's own module (numbers or numpy arrays, no numba there) and records its source, so
  that the run loop's disk cache follows it;
- the shared numerics compiled (:mod:`cogstats.numerics`' Welch statistics and
  Gauss-Jordan inverse; ``where`` as a scalar select), Student's t
  (:mod:`cogstats.kernel.tdist`), and :func:`apply_decision`.
"""

from __future__ import annotations

import inspect
import math
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numba import njit
from numba.extending import overload, register_jitable

from cogstats import numerics
from cogstats._codes import (
    DECISION_EVICT_HARMFUL,
    DECISION_EVICT_NO_LIFT,
    DECISION_PROMOTE,
    REASON_CODE_HARMFUL,
    REASON_CODE_NO_LIFT,
    STATUS_CANDIDATE,
    STATUS_EVICTED,
    STATUS_VERIFIED,
)
from cogstats._validation import ParameterError
from cogstats.kernel.state import Decided, Lessons, Prompt, Scratch, State
from cogstats.kernel.tdist import t_cdf, t_ppf

__all__ = [
    "COMMON",
    "PRUNE_MARGIN",
    "Block",
    "Decided",
    "KernelGate",
    "KernelPolicy",
    "Lessons",
    "Prompt",
    "Scratch",
    "State",
    "apply_decision",
    "compile_rule",
    "compiled_sources",
    "gauss_jordan_into",
    "no_gate",
    "t_cdf",
    "t_ppf",
    "tail_bound",
    "welch_evidence",
    "welch_moments",
]


class Block:
    """The named int and float slots of a parameter block (the run loop's, a policy's).

    ``pack(values)`` returns the (int64, float64) arrays the compiled code reads; every
    slot must be given, and no other name.

    Examples
    --------
    >>> b = Block("demo", ints=("min_trials",), floats=("alpha",))
    >>> b.i("min_trials"), b.f("alpha")
    (0, 0)
    >>> ints, floats = b.pack({"min_trials": 3, "alpha": 0.05})
    >>> ints.tolist(), floats.tolist()
    ([3], [0.05])
    """

    def __init__(self, name: str, *, ints: tuple[str, ...], floats: tuple[str, ...]) -> None:
        if len(set(ints) | set(floats)) != len(ints) + len(floats):
            raise ValueError(f"block {name!r}: slot names must be unique; got {ints} {floats}")
        self.name = name
        self.ints = tuple(ints)
        self.floats = tuple(floats)

    def i(self, slot: str) -> int:
        """Index of int slot ``slot``."""
        return self.ints.index(slot)

    def f(self, slot: str) -> int:
        """Index of float slot ``slot``."""
        return self.floats.index(slot)

    def pack(self, values: Mapping[str, float]) -> tuple[np.ndarray, np.ndarray]:
        """Return the block's int and float arrays filled from ``values`` (slot -> value)."""
        missing = [k for k in self.ints + self.floats if k not in values]
        unknown = sorted(set(values) - set(self.ints) - set(self.floats))
        if missing or unknown:
            raise ParameterError(
                f"kernel block {self.name!r} needs exactly the slots {self.ints + self.floats}; "
                f"missing {missing}, unknown {unknown}"
            )
        ints = np.array([int(values[k]) for k in self.ints], dtype=np.int64)
        floats = np.array([float(values[k]) for k in self.floats], dtype=np.float64)
        return ints, floats

    def __repr__(self) -> str:
        """Return the block's name and slots."""
        return f"Block({self.name!r}, ints={self.ints}, floats={self.floats})"


#: the run loop's own parameters: scenario shape, score model, prompt size and pool, the
#: retrieval policy's code, the gate's cadence, the one win threshold, whether the lesson
#: store is non-additive (``world``: the loop scores from the chunk's world record)
COMMON = Block(
    "common",
    ints=(
        "runs",
        "lessons",
        "policy",
        "max_facts",
        "pool",
        "every",
        "from_run",
        "record_empty",
        "recheck",
        "logistic",
        "gram",
        "world",
    ),
    floats=("base", "noise_sd", "saturation", "damping", "win_threshold"),
)
IP_RUNS = COMMON.i("runs")
IP_L = COMMON.i("lessons")
IP_POLICY = COMMON.i("policy")
IP_MAXF = COMMON.i("max_facts")
IP_POOL = COMMON.i("pool")
IP_EVERY = COMMON.i("every")
IP_FROM = COMMON.i("from_run")
IP_RECEMPTY = COMMON.i("record_empty")
IP_RECHECK = COMMON.i("recheck")
IP_LINK = COMMON.i("logistic")
IP_GRAM = COMMON.i("gram")
IP_WORLD = COMMON.i("world")
FP_BASE = COMMON.f("base")
FP_NOISE = COMMON.f("noise_sd")
FP_SAT = COMMON.f("saturation")
FP_DAMP = COMMON.f("damping")
FP_WIN = COMMON.f("win_threshold")


_Of = Callable[[Any], Any]
_Support = Callable[[Any, Any], "str | None"]


@dataclass(frozen=True)
class KernelGate:
    """A gate's compiled piece, as the simulator runs it (its kernel module's ``PIECE``).

    Attributes
    ----------
    step : numba function
        ``step(st, o, run)``: one look of the gate at ``run`` on the run loop's
        :class:`State` ``st``, with ``o`` the options record; it applies its decisions to
        ``st`` (:func:`apply_decision`).  A module-level function of the piece's module:
        the run loop calls it by that module's name.
    options : callable
        ``options(gate)`` returns the options record ``o`` (a namedtuple of numbers: the
        gate's numeric fields, derived from the class, see
        :func:`cogstats.gates.rule_options`).
    support : callable, optional
        ``support(gate, scenario)``: why the piece cannot run these settings (a string),
        or None when it can.
    gram : bool
        The gate reads the run loop's Gram matrix of ``[1, covariates, lessons]``.
    win_threshold : callable, optional
        ``win_threshold(gate)``: the score at which the run loop counts a win (the audit).
    table : callable, optional
        ``table(gate)``: the gate's float array ``st.table`` (levels by look, boundaries
        by trials).
    events : bool
        The piece writes its status changes to ``st.events``.
    """

    step: Any
    options: _Of
    support: _Support | None = None
    gram: bool = False
    win_threshold: _Of | None = None
    table: _Of | None = None
    events: bool = False

    @property
    def path(self) -> tuple[str, str]:
        """``(module, function)`` of :attr:`step`: where the run loop imports it."""
        fn = getattr(self.step, "py_func", self.step)
        return fn.__module__, fn.__name__


@dataclass(frozen=True)
class KernelPolicy:
    """A retrieval policy's compiled piece, as the simulator runs it.

    ``block`` is its own parameter block, ``values(policy)`` fills it by name, and
    ``win_threshold(policy)`` (optional) the score at which the run loop counts a win
    (UCB1's).  A policy compiles exactly when its registry entry names its piece
    (``register_policy(..., kernel="cogstats.retrieval.kernel:POOL_PIECE")``); its
    dispatch code is ``cogstats._codes.POLICY_CODES``.
    """

    block: Block
    values: _Of
    win_threshold: _Of | None = None

    def pack(self, policy: Any) -> tuple[np.ndarray, np.ndarray]:
        """Return the block's int and float arrays for ``policy``."""
        return self.block.pack(self.values(policy))


# ---------------------------------------------------------------------- compiling a rule
#: module file -> the source files of the plain functions it compiles (absolute paths)
_SOURCES: dict[str, set[str]] = {}


def _record_source(fn: Callable[..., Any], caller: str | None) -> None:
    source = inspect.getsourcefile(fn)
    if source is not None and caller is not None:
        _SOURCES.setdefault(str(Path(caller).resolve()), set()).add(str(Path(source).resolve()))


def compiled_sources(module_file: str | Path) -> frozenset[str]:
    """Return the source files of the plain functions a module compiled (absolute paths).

    Recorded by :func:`compile_rule` under the module that called it; the run loop's disk
    cache follows them (:mod:`cogstats.sim._loops`).

    Examples
    --------
    >>> import cogstats.kernel as K
    >>> any(p.endswith("numerics.py") for p in compiled_sources(K.__file__))
    True
    """
    return frozenset(_SOURCES.get(str(Path(module_file).resolve()), ()))


def compile_rule(fn: Callable[..., Any], *, inline: bool = True) -> Any:
    """Compile a plain rule function of a gate's module for the kernel.

    ``numba.njit(inline="always")`` (or a separately compiled function with
    ``inline=False``); the function's source file is recorded under the calling module
    (:func:`compiled_sources`), so that the run loop's disk cache follows the rule.
    The function must be numba-compatible: numbers, arrays or namedtuples of them, no
    Python objects (see :mod:`cogstats.numerics`).
    """
    _record_source(fn, sys._getframe(1).f_globals.get("__file__"))
    register_jitable(inline="always")(fn)  # another rule may call it, compiled
    return njit(inline="always")(fn) if inline else njit(fn)


@overload(numerics.where)
def _scalar_where(cond: Any, a: Any, b: Any) -> Any:
    """:func:`cogstats.numerics.where` in compiled code: a scalar select."""

    def impl(cond: Any, a: Any, b: Any) -> Any:  # pragma: no cover - compiled
        return a if cond else b

    return impl


# ---------------------------------------------------------------------- shared numerics
# the numerics a rule calls are callable from compiled code as they are
register_jitable(inline="always")(numerics.floor_log2)
register_jitable(inline="always")(numerics.welch_evidence)
_record_source(numerics.welch_evidence, __file__)
#: :func:`cogstats.numerics.welch_moments`, compiled (inlined where called)
welch_moments = njit(inline="always")(numerics.welch_moments)
#: :func:`cogstats.numerics.welch_evidence`, compiled (inlined where called)
welch_evidence = njit(inline="always")(numerics.welch_evidence)
#: :func:`cogstats.numerics.gauss_jordan_into`, compiled
gauss_jordan_into = njit(numerics.gauss_jordan_into)

#: slack on the pruning comparisons, far above the rounding of either tail (about 1e-16)
PRUNE_MARGIN = 1e-9


@njit
def tail_bound(t: float) -> float:
    """Return a lower bound on ``P(T <= t)`` for Student's t with any degrees of freedom.

    The bound is the normal CDF for ``t < 0`` (t is a scale mixture of normals with
    E[1/scale^2] = 1, and the normal tail is convex in the squared scale, so Jensen's
    inequality applies), 1/2 for ``t >= 0``.  Costs an ``erfc`` (about 30 ns) instead of
    the t CDF's continued fraction (about 370 ns).
    """
    if t >= 0.0:
        return 0.5
    return 0.5 * math.erfc(-t / math.sqrt(2.0))


@njit(inline="always")
def judged(status: np.ndarray, recheck: bool, j: int) -> bool:
    """Return whether a gate judges lesson ``j`` at this look.

    ``status`` and ``recheck`` are the state's (``st.status``, ``st.recheck``): a
    candidate is judged, and a verified lesson when the scenario re-checks verified
    lessons.  (A step reads the state's fields once, at its top, and passes arrays on: a
    record handed to a compiled function costs a reference count per array in it.)
    """
    s = status[j]
    return s == STATUS_CANDIDATE or (recheck and s == STATUS_VERIFIED)


@njit(inline="always")
def apply_decision(dec: Any, d: int, j: int, run: int) -> None:
    """Apply decision code ``d`` (``cogstats._codes.DECISION_*``) to lesson ``j``.

    ``dec`` is the state's :class:`Decided` arrays (``st.decided``).  A promotion verifies
    a candidate (a verified lesson re-checked stays); an eviction evicts, with its reason
    code.
    """
    if d == DECISION_PROMOTE:
        if dec.status[j] == STATUS_CANDIDATE:
            dec.status[j] = STATUS_VERIFIED
            dec.promote_run[j] = run
    elif d in (DECISION_EVICT_HARMFUL, DECISION_EVICT_NO_LIFT):
        dec.status[j] = STATUS_EVICTED
        dec.evict_run[j] = run
        harmful = d == DECISION_EVICT_HARMFUL
        dec.evict_reason[j] = REASON_CODE_HARMFUL if harmful else REASON_CODE_NO_LIFT


@njit(inline="always")
def no_gate(st: Any, o: Any, run: int) -> None:
    """Decide nothing: the step of a scenario without a gate."""
