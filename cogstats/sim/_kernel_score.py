"""The score model of the simulator, written once and called by both engines.

:func:`injected_total`, :func:`oracle_total` and :func:`link_score` are inlined into the
compiled loop (:mod:`cogstats.sim._loop`; numba's ``inline="always"``, so the loop is as
it was when the model was written out in it) and called from Python by the reference
engine (:mod:`cogstats.sim.reference`; numba functions are callable from Python).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from cogstats._codes import KIND_GENUINE, KIND_POISON

__all__ = ["injected_total", "link_score", "oracle_total"]


@njit(cache=True, inline="always")
def injected_total(
    effects: np.ndarray,
    kind: np.ndarray,
    inj: np.ndarray,
    count: int,
    damping: float,
    saturation: float,
) -> float:
    """Total effect of the injected lessons ``inj[:count]`` (in ascending lesson order).

    A poison's effect is scaled by ``1 - damping`` in runs that also carry a genuine
    lesson; with ``saturation > 0`` the positive effects G are summed and bent to
    ``saturation * tanh(G / saturation)`` (see :class:`cogstats.sim.spec.ScoreSpec`).
    """
    has_genuine = False
    for i in range(count):
        if kind[inj[i]] == KIND_GENUINE:
            has_genuine = True
    pos = 0.0
    tot = 0.0
    for i in range(count):
        j = inj[i]
        x = effects[j]
        if kind[j] == KIND_POISON and damping > 0 and has_genuine:
            x *= 1.0 - damping
        if saturation > 0 and x > 0:
            pos += x
        else:
            tot += x
    if saturation > 0:
        tot += saturation * math.tanh(pos / saturation)
    return tot


@njit(cache=True, inline="always")
def oracle_total(
    effects: np.ndarray,
    arrival: np.ndarray,
    run: int,
    max_facts: int,
    saturation: float,
    scratch: np.ndarray,
) -> float:
    """Total effect of the oracle's prompt.

    The oracle's prompt holds the best ``max_facts`` helpful lessons that have arrived by
    ``run`` (saturated like :func:`injected_total`); ``scratch`` holds at least one float
    per lesson.
    """
    nh = 0
    for j in range(effects.shape[0]):
        if arrival[j] <= run and effects[j] > 0:
            scratch[nh] = effects[j]
            nh += 1
    gsum = 0.0
    if nh == 1:
        gsum = scratch[0]
    elif nh > 1:
        hs = np.sort(scratch[:nh])
        for i in range(min(max_facts, nh)):
            gsum += hs[nh - 1 - i]
    if saturation > 0:
        gsum = saturation * math.tanh(gsum / saturation)
    return gsum


@njit(cache=True, inline="always")
def link_score(
    base: float, logit_base: float, logistic: bool, difficulty: float, total: float, z: float
) -> float:
    """Return a run's score.

    The score is ``expit(logit_base + d + total + z)`` with the logistic link, else
    ``base + d + total + z`` clamped to [0, 1].
    """
    if logistic:
        return 1.0 / (1.0 + math.exp(-(logit_base + difficulty + total + z)))
    return min(1.0, max(0.0, base + difficulty + total + z))
