"""What the compiled kernel's pieces share.

Parameter blocks, the run loop's own block, a gate's compiled piece as the simulator
runs it (:class:`KernelGate`), the shared numerics compiled, and the decision helpers
every gate piece uses.

A kernel piece (a gate's rule, see ``_kernel_cycgraph`` ... ``_kernel_lifecycle``)
declares its parameters as a :class:`Block` of named int and float slots and its
adapter, ``PIECE`` (a :class:`KernelGate`: how a gate's options fill the block, what the
piece does not cover); the gate names the piece's module in its one registry line
(``register_gate(..., kernel="cogstats.sim._kernel_<gate>")``), and its dispatch code is
derived from the block's name (:func:`cogstats._codes.gate_code`).  No gate reads
another's slots.  Retrieval policies have their blocks and pieces too
(:class:`KernelPolicy`, in ``_kernel_policies``, named by ``register_policy(...,
kernel="cogstats.sim._kernel_policies:POOL_PIECE")``).  The
run loop's own parameters (score model, prompt size, gate cadence) are the block
:data:`COMMON`.

A gate's rule is written once, as plain functions of its own module (numbers or numpy
arrays, no numba import there); a piece compiles those functions with :func:`compile_rule`
and calls them lesson by lesson.  The shared numerics (:mod:`cogstats.numerics`) are
compiled here, once, and :func:`cogstats.numerics.where` becomes a scalar select.
"""

from __future__ import annotations

import inspect
import math
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
    gate_code,
)
from cogstats._validation import ParameterError
from cogstats.estimators.multiplicity import bh_step_up


class Block:
    """The named int and float slots of one kernel piece's parameter block.

    ``pack(values)`` returns the (int64, float64) arrays the compiled piece reads; every
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
        return f"Block({self.name!r}, ints={self.ints}, floats={self.floats})"


#: the run loop's own parameters: scenario shape, score model, prompt size and pool, the
#: gate's dispatch code and cadence, the one win threshold
COMMON = Block(
    "common",
    ints=(
        "runs",
        "lessons",
        "policy",
        "max_facts",
        "pool",
        "gate",
        "every",
        "from_run",
        "record_empty",
        "recheck",
        "logistic",
        "gram",
    ),
    floats=(
        "base",
        "noise_sd",
        "saturation",
        "damping",
        "win_threshold",
    ),
)
IP_RUNS = COMMON.i("runs")
IP_L = COMMON.i("lessons")
IP_POLICY = COMMON.i("policy")
IP_MAXF = COMMON.i("max_facts")
IP_POOL = COMMON.i("pool")
IP_GATE = COMMON.i("gate")
IP_EVERY = COMMON.i("every")
IP_FROM = COMMON.i("from_run")
IP_RECEMPTY = COMMON.i("record_empty")
IP_RECHECK = COMMON.i("recheck")
IP_LINK = COMMON.i("logistic")
IP_GRAM = COMMON.i("gram")
N_IP = len(COMMON.ints)
FP_BASE = COMMON.f("base")
FP_NOISE = COMMON.f("noise_sd")
FP_SAT = COMMON.f("saturation")
FP_DAMP = COMMON.f("damping")
FP_WIN = COMMON.f("win_threshold")
N_FP = len(COMMON.floats)

# ---------------------------------------------------------------------- a gate's piece
_Values = Callable[[Any], Mapping[str, float]]
_Support = Callable[[Any, Any], "str | None"]


@dataclass(frozen=True)
class KernelGate:
    """A gate's compiled piece, as the simulator runs it (its module's ``PIECE``).

    ``block`` is the piece's own parameter block (``BLOCK``), ``values(gate)`` fills
    every slot of it by name from the gate's options, ``support(gate, scenario)`` says
    why the piece cannot run a gate's settings (None when it can), ``loop(gate)`` names
    the run loop's common slots the gate sets (the audit's win threshold; ``gram`` 1 for
    a gate that reads the running Gram matrix), and ``events`` says whether the piece
    writes the event buffer (the lifecycle gate's status changes).  Its dispatch code in
    the run loop is :attr:`code`, derived from the block's name.  A gate compiles exactly
    when its registry entry names a module holding its ``PIECE``.
    """

    block: Block
    values: _Values
    support: _Support | None = None
    loop: _Values | None = None
    events: bool = False

    @property
    def code(self) -> int:
        """The run loop's dispatch code: :func:`cogstats._codes.gate_code` of the block's name."""
        return gate_code(self.block.name)

    def pack(self, gate: Any) -> tuple[np.ndarray, np.ndarray]:
        """Return the block's int and float arrays for ``gate``."""
        return self.block.pack(self.values(gate))


@dataclass(frozen=True)
class KernelPolicy:
    """A retrieval policy's compiled piece, as the simulator runs it.

    ``block`` is its own block in :mod:`cogstats.sim._kernel_policies`, ``values(policy)``
    fills it by name, and ``loop(policy)`` names the run loop's common slots the policy
    sets (UCB1's win threshold).  A policy compiles exactly when its registry entry names
    its piece (``register_policy(..., kernel="module:ATTR")``; the built-in pieces are
    ``ORDER_PIECE``, ``POOL_PIECE``, ``SUSPECT_PIECE`` and ``UCB_PIECE`` of
    :mod:`cogstats.sim._kernel_policies`); its dispatch code is
    ``cogstats._codes.POLICY_CODES``.
    """

    block: Block
    values: _Values
    loop: _Values | None = None

    def pack(self, policy: Any) -> tuple[np.ndarray, np.ndarray]:
        """Return the block's int and float arrays for ``policy``."""
        return self.block.pack(self.values(policy))


# ---------------------------------------------------------------------- compiling a rule
#: the package's folder: the sources of the compiled rules are kept relative to it
PACKAGE = Path(numerics.__file__).resolve().parent
#: source files (relative to the package) of the plain functions the kernel compiles
#: outside ``sim/``: the run loop's disk cache follows them (``_kernel._drop_stale_cache``)
COMPILED_SOURCES: list[str] = ["numerics.py"]


def compile_rule(fn: Callable[..., Any], *, inline: bool = True) -> Any:
    """Compile a plain rule function of a gate's module for the kernel.

    ``numba.njit(inline="always")`` (or a cached, separately compiled function with
    ``inline=False``), and the function's source file is recorded in
    :data:`COMPILED_SOURCES`, so that the run loop's disk cache is dropped when the rule
    changes.  The function must be numba-compatible: numbers or arrays, no Python
    objects (see :mod:`cogstats.numerics`).
    """
    source = inspect.getsourcefile(fn)
    if source is not None:
        rel = Path(source).resolve().relative_to(PACKAGE).as_posix()
        if rel not in COMPILED_SOURCES:
            COMPILED_SOURCES.append(rel)
    register_jitable(inline="always")(fn)  # another rule may call it, compiled
    return njit(inline="always")(fn) if inline else njit(cache=True)(fn)


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
#: :func:`cogstats.numerics.welch_moments`, compiled (inlined where called)
welch_moments = njit(cache=True, inline="always")(numerics.welch_moments)
#: :func:`cogstats.numerics.welch_evidence`, compiled (inlined where called)
welch_evidence = njit(cache=True, inline="always")(numerics.welch_evidence)
#: :func:`cogstats.numerics.gauss_jordan_into`, compiled
gauss_jordan_into = njit(cache=True)(numerics.gauss_jordan_into)
#: Benjamini-Hochberg's step-up rule, :func:`cogstats.estimators.multiplicity.bh_step_up`
#: compiled (the one copy: inclusive ``p_(k) <= (k / m) * q``, stable order)
bh_reject = compile_rule(bh_step_up, inline=False)


# ---------------------------------------------------------------------- decision helpers


#: slack on the pruning comparisons, far above the rounding of either tail (about 1e-16)
PRUNE_MARGIN = 1e-9


@njit(cache=True)
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


@njit(cache=True, inline="always")
def apply_decision(
    d: int,
    j: int,
    run: int,
    status: np.ndarray,
    promote_run: np.ndarray,
    evict_run: np.ndarray,
    evict_reason: np.ndarray,
) -> None:
    """Apply decision code ``d`` (``cogstats._codes.DECISION_*``)."""
    if d == DECISION_PROMOTE:
        if status[j] == STATUS_CANDIDATE:
            status[j] = STATUS_VERIFIED
            promote_run[j] = run
    elif d in (DECISION_EVICT_HARMFUL, DECISION_EVICT_NO_LIFT):
        status[j] = STATUS_EVICTED
        evict_run[j] = run
        harmful = d == DECISION_EVICT_HARMFUL
        evict_reason[j] = REASON_CODE_HARMFUL if harmful else REASON_CODE_NO_LIFT
