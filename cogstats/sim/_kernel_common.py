"""What the compiled kernel's pieces share.

Parameter blocks, the run loop's own block, the shared numerics compiled, and the
decision helpers every gate piece uses.

A kernel piece (a gate's rule, see ``_kernel_cycgraph`` ... ``_kernel_recommended``)
declares its parameters as a :class:`Block` of named int and float slots; the simulator's
adapter for the gate (:data:`cogstats.sim.engine.KERNEL_GATES`) fills the block by name,
and the piece reads its slots through the index constants it derives from its block.  No
gate reads another's slots.  Retrieval policies have their blocks too
(``_kernel_policies``).  The run loop's own parameters (score model, prompt size, gate
cadence) are the block :data:`COMMON`.

The shared numerics (:mod:`cogstats.numerics`, plain Python) are compiled here, once.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
from numba import njit

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
N_IP = len(COMMON.ints)
FP_BASE = COMMON.f("base")
FP_NOISE = COMMON.f("noise_sd")
FP_SAT = COMMON.f("saturation")
FP_DAMP = COMMON.f("damping")
FP_WIN = COMMON.f("win_threshold")
N_FP = len(COMMON.floats)

# ---------------------------------------------------------------------- shared numerics
#: :func:`cogstats.numerics.welch_z`, compiled (inlined where called)
welch_z = njit(cache=True, inline="always")(numerics.welch_z)
#: :func:`cogstats.numerics.welch_moments`, compiled (inlined where called)
welch_moments = njit(cache=True, inline="always")(numerics.welch_moments)
#: :func:`cogstats.numerics.gauss_jordan_into`, compiled
gauss_jordan_into = njit(cache=True)(numerics.gauss_jordan_into)


# ---------------------------------------------------------------------- decision helpers


@njit(cache=True)
def bh_reject(p: np.ndarray, q: float) -> np.ndarray:
    """Benjamini-Hochberg rejections (inclusive ``p_(k) <= (k / m) * q``)."""
    m = p.shape[0]
    order = np.argsort(p, kind="mergesort")
    max_rank = 0
    for rank in range(1, m + 1):
        if p[order[rank - 1]] <= (rank / m) * q:
            max_rank = rank
    out = np.zeros(m, dtype=np.bool_)
    for rank in range(max_rank):
        out[order[rank]] = True
    return out


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
