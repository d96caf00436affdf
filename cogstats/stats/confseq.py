"""The running sums of ``confseq_paths``, per lesson, kept run by run.

:class:`ConfseqSums` accumulates what :func:`cogstats.estimators.confseq_paths` sums
over the runs (both of its cases: two-sample arm sums from each lesson's first injection,
and the augmented / plain inverse-propensity pseudo-outcomes of logged propensities),
exactly as ``np.cumsum`` accumulates the batch's columns, so the last row is bit for bit
the batch's.  The evidence gate's ``confseq`` method judges from them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import numpy as np

from cogstats.stats._arrays import grow


class _Running(Protocol):
    """What the running sums read of :class:`~cogstats.stats.StreamingStats`.

    (A protocol, so that this module does not import the statistics that import it.)
    """

    _lesson_ids: list[str]
    _covariates: dict[str, list[Any]]

    def _lesson(self, f: str) -> int: ...

    def score(self, i: int) -> float: ...

    def run_lessons(self, i: int) -> np.ndarray: ...


__all__ = ["ConfseqSums"]


class ConfseqSums:
    """Running sums of ``confseq_paths``, both cases, per lesson (internal index).

    Every sum is accumulated as ``np.cumsum`` accumulates the batch's columns (runs that
    do not count for a lesson add an exact zero there), so the final row is bit for bit
    the batch's.  Case (b) (no propensities) updates every started lesson on every run:
    O(lessons) a run, vectorised.

    Attributes
    ----------
    a : dict of numpy.ndarray
        The sums by name (:attr:`NAMES`), per lesson (internal index; capacity rows).
    size : int
        Lessons with a row.

    Examples
    --------
    >>> from cogstats.gates import EvidenceGate, StreamingGate
    >>> sg = StreamingGate(EvidenceGate(method="confseq"))
    >>> _ = sg.record("r1", 0.5, ["a"]); _ = sg.record("r2", 0.7, [])
    >>> sums = sg.stats.confseq
    >>> sums.a["b_n1"][:1].tolist(), sums.a["b_s0"][:1].tolist()
    ([1.0], [0.7])
    """

    NAMES = (
        "started",
        "b_n1",
        "b_n0",
        "b_s1",
        "b_s0",
        "b_q1",
        "b_q0",
        "a_c1",
        "a_c0",
        "a_s1",
        "a_s0",
        "a_n",
        "a_s",
        "a_q",
        "i_c1",
        "i_c0",
        "i_s1",
        "i_s0",
        "i_n",
        "i_s",
        "i_q",
    )

    def __init__(self) -> None:
        self.size = 0
        self.a: dict[str, np.ndarray] = {
            name: np.zeros(16, dtype=bool if name == "started" else float) for name in self.NAMES
        }

    def fit(self, size: int) -> None:
        """Room for ``size`` lessons."""
        if size > self.size:
            for name in self.NAMES:
                self.a[name] = grow(self.a[name], size)
            self.size = size

    def arrays(self) -> dict[str, np.ndarray]:
        """Return the sums of the lessons so far (copies), by name."""
        return {name: self.a[name][: self.size].copy() for name in self.NAMES}

    def load(self, state: Mapping[str, np.ndarray]) -> None:
        """Take back what :meth:`arrays` returned."""
        size = int(state["started"].size) if "started" in state else 0
        self.fit(max(size, 1))
        for name in self.NAMES:
            if name in state:
                self.a[name][:size] = state[name]
        self.size = max(size, self.size)

    def observe(self, stats: _Running, i: int) -> None:
        """Add run ``i`` of ``stats`` (appended last; a replaced run: replay every run)."""
        L = len(stats._lesson_ids)
        self.fit(L)
        a = self.a
        y = float(stats.score(i))
        cols = stats.run_lessons(i)
        # case (b): each lesson's clock starts at its first injection
        a["started"][cols] = True
        inrun = np.zeros(L, dtype=bool)
        inrun[cols] = True
        base = a["started"][:L] & ~inrun
        a["b_n1"][cols] += 1.0
        a["b_s1"][cols] += y
        a["b_q1"][cols] += y * y
        a["b_n0"][:L][base] += 1.0
        a["b_s0"][:L][base] += y
        a["b_q0"][:L][base] += y * y
        # case (a): logged propensities (both the augmented and the plain IPW sums)
        ids = stats._covariates.get("eligible_ids")
        ps = stats._covariates.get("propensities")
        if ids is None or ps is None or ids[i] is None or ps[i] is None:
            return
        pos: dict[int, float] = {}
        for f, pr in zip(ids[i], ps[i], strict=True):
            pos[stats._lesson(f)] = float(pr)  # a repeated id: the last one counts
        self.fit(len(stats._lesson_ids))
        a = self.a
        js = np.fromiter(pos, dtype=np.int64, count=len(pos))
        p = np.fromiter(pos.values(), dtype=float, count=len(pos))
        elig = np.isfinite(p) & (p > 0.0) & (p < 1.0)
        js, p = js[elig], p[elig]
        if not js.size:
            return
        member = set(cols.tolist())
        xf = np.asarray([1.0 if j in member else 0.0 for j in js.tolist()])
        e = np.ones(js.size)
        for prefix, augment in (("a_", True), ("i_", False)):
            c1, c0 = a[prefix + "c1"], a[prefix + "c0"]
            s1, s0 = a[prefix + "s1"], a[prefix + "s0"]
            if augment:
                with np.errstate(invalid="ignore", divide="ignore"):
                    m_all = np.where(
                        c1[js] + c0[js] > 0, (s1[js] + s0[js]) / (c1[js] + c0[js]), 0.5
                    )
                    m1 = np.where(c1[js] > 0, s1[js] / c1[js], m_all)
                    m0 = np.where(c0[js] > 0, s0[js] / c0[js], m_all)
            else:
                m1 = m0 = np.zeros(js.size)
            phi = m1 - m0 + xf * (y - m1) / p - (e - xf) * (y - m0) / (1.0 - p)
            phi = phi * e
            s1[js] += y * xf
            c1[js] += xf
            s0[js] += y * (e - xf)
            c0[js] += e - xf
            a[prefix + "n"][js] += 1.0
            a[prefix + "s"][js] += phi
            a[prefix + "q"][js] += phi * phi
