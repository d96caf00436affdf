"""The score model of the simulator, written once and called by both engines.

:func:`injected_total`, :func:`oracle_total` and :func:`link_score` are inlined into the
compiled loop (:mod:`cogstats.sim._kernel`; numba's ``inline="always"``, so the loop is as
it was when the model was written out in it) and called from Python by the reference
engine (:mod:`cogstats.sim.reference`; numba functions are callable from Python).

A non-additive store (:mod:`cogstats.sim.world`) has its own pair, used by both engines
when the scenario is not additive: :func:`prompt_total` (paraphrase groups count once,
interactions add when all their lessons are in the prompt) and :func:`oracle_prompt_total`
(the best prompt under that value).  An additive scenario never calls them, so its
figures are those of the additive pair, bit for bit.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from cogstats._codes import KIND_GENUINE, KIND_POISON

__all__ = [
    "injected_total",
    "link_score",
    "oracle_prompt_total",
    "oracle_total",
    "prompt_total",
]


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


@njit(cache=True, inline="always")
def prompt_total(
    effects: np.ndarray,
    kind: np.ndarray,
    group: np.ndarray,
    inj: np.ndarray,
    count: int,
    damping: float,
    saturation: float,
    inter_ptr: np.ndarray,
    inter_les: np.ndarray,
    inter_eff: np.ndarray,
    inprompt: np.ndarray,
) -> float:
    """Total effect of the prompt ``inj[:count]`` (ascending) in a non-additive store.

    ``effects`` are the lessons' effects in this run (its family, changes applied) and
    ``group`` each lesson's paraphrase group.  A group counts once, at its first member
    in the prompt, with the largest effect among its members in the prompt (each poison's
    scaled by ``1 - damping`` in runs that also carry a genuine lesson); interaction
    ``k`` adds ``inter_eff[k]`` when the lessons ``inter_les[inter_ptr[k]:inter_ptr[k +
    1]]`` are all in the prompt.  With ``saturation > 0`` the positive parts (group values
    and interactions) are summed and bent as in :func:`injected_total`.  ``inprompt`` is
    a boolean scratch of one place per lesson, all False (left so).  With every lesson
    its own group and no interaction this is :func:`injected_total`.
    """
    has_genuine = False
    for i in range(count):
        if kind[inj[i]] == KIND_GENUINE:
            has_genuine = True
    pos = 0.0
    tot = 0.0
    for i in range(count):
        g = group[inj[i]]
        first = True
        for i2 in range(i):
            if group[inj[i2]] == g:
                first = False
                break
        if not first:
            continue
        x = -math.inf
        for i2 in range(i, count):
            j = inj[i2]
            if group[j] == g:
                v = effects[j]
                if kind[j] == KIND_POISON and damping > 0 and has_genuine:
                    v *= 1.0 - damping
                x = max(x, v)
        if saturation > 0 and x > 0:
            pos += x
        else:
            tot += x
    n_inter = inter_ptr.shape[0] - 1
    if n_inter > 0:
        for i in range(count):
            inprompt[inj[i]] = True
        for k in range(n_inter):
            full = True
            for m in range(inter_ptr[k], inter_ptr[k + 1]):
                if not inprompt[inter_les[m]]:
                    full = False
                    break
            if full:
                x = inter_eff[k]
                if saturation > 0 and x > 0:
                    pos += x
                else:
                    tot += x
        for i in range(count):
            inprompt[inj[i]] = False
    if saturation > 0:
        tot += saturation * math.tanh(pos / saturation)
    return tot


@njit(cache=True)
def oracle_prompt_total(
    effects: np.ndarray,
    kind: np.ndarray,
    group: np.ndarray,
    arrival: np.ndarray,
    run: int,
    max_facts: int,
    damping: float,
    saturation: float,
    inter_ptr: np.ndarray,
    inter_les: np.ndarray,
    inter_eff: np.ndarray,
    in_inter: np.ndarray,
    fbuf: np.ndarray,
    ibuf: np.ndarray,
    inj: np.ndarray,
    inprompt: np.ndarray,
) -> float:
    """Total effect of the oracle's prompt in a non-additive store (:func:`prompt_total`).

    Among the lessons arrived by ``run``: for every subset of the lessons named by an
    interaction (``in_inter``; at most 10 of them, checked at the door) of at most
    ``max_facts``, the prompt is that subset and, in the places left, the best member of
    each paraphrase group with a positive effect, best groups first; the oracle's value
    is the largest of these prompts' values.  That is the best prompt of at most
    ``max_facts`` lessons: a second member of a group adds nothing, lessons outside the
    interactions add their own effects, so given the interaction lessons the best fill is
    the best positive groups (with ``poison_damping`` the fill is by effect alone).
    Scratch: ``fbuf`` (2, L) floats, ``ibuf`` (3, L) integers, ``inj`` ``max_facts``
    integers, ``inprompt`` L booleans (all False).
    """
    n = effects.shape[0]
    best = fbuf[0]
    vals = fbuf[1]
    member = ibuf[0]
    cand = ibuf[1]
    alist = ibuf[2]
    for g in range(n):
        best[g] = -math.inf
        member[g] = -1
    na = 0
    for j in range(n):
        if arrival[j] > run:
            continue
        if in_inter[j]:
            alist[na] = j
            na += 1
            continue
        g = group[j]
        if effects[j] > best[g]:
            best[g] = effects[j]
            member[g] = j
    nc = 0
    for g in range(n):
        if member[g] >= 0 and best[g] > 0:
            cand[nc] = member[g]
            vals[nc] = -best[g]
            nc += 1
    order = np.argsort(vals[:nc], kind="mergesort")  # best first; ties by group
    top = -math.inf
    for mask in range(1 << na):
        size = 0
        for a in range(na):
            size += (mask >> a) & 1
        if size > max_facts:
            continue
        count = 0
        for a in range(na):
            if (mask >> a) & 1:
                inj[count] = alist[a]
                count += 1
        for i in range(min(max_facts - size, nc)):
            inj[count] = cand[order[i]]
            count += 1
        if count > 1:
            inj[:count] = np.sort(inj[:count])
        value = prompt_total(
            effects,
            kind,
            group,
            inj,
            count,
            damping,
            saturation,
            inter_ptr,
            inter_les,
            inter_eff,
            inprompt,
        )
        top = max(top, value)
    return top
