"""The run loop's state: one record of a replicate's arrays, passed to every gate's step.

The simulator's compiled run loop keeps, per replicate, the lessons' statuses, its running
sums and its outputs in numpy arrays; :class:`State` holds what a gate reads and writes
under one name, so that a gate's compiled step is ``step(st, o, run)`` (the state, the
gate's options record, the run just recorded).  A namedtuple of arrays is a plain struct
in numba.  Retrieval reads its own, smaller records (:class:`Lessons`, :class:`Scratch`)
and fills :class:`Prompt`: the fewer arrays a compiled call passes, the fewer reference
counts it pays, which every run of the loop would pay.

:class:`State` fields (``L`` lessons; read by the gates, written by the run loop and by
the gates as named):

- ``by_age`` (lesson indices, oldest first);
- statuses (``cogstats._codes.STATUS_*``): ``status``, ``since`` (the first run of each
  lesson's status) and ``gate_t`` (2 x L: each lesson's t at the gate's last look, and
  1.0 where that t is its own), written by the gates, read by retrieval; ``recheck``
  (the gate judges verified lessons too);
- the running sums, written by the run loop after every recorded run: per lesson
  ``n_with`` (trials), ``s_with`` and ``ss_with`` (score sum and sum of squares),
  ``wins`` and ``first_trial``; ``tot`` (runs recorded, their score sum and sum of
  squares); for a gate that reads it, the Gram matrix ``gram`` and ``zty`` of ``[1,
  covariates, lessons]`` (``nfix`` = 1 + covariate columns first) with each covariate's
  range so far (``cov_range``: 2 x covariates, low and high);
- the gate's table ``table`` (filled by its piece: the lifecycle gate's levels by look,
  the evidence gate's boundaries by trials);
- outputs of this replicate (``rep``): ``decided`` (the :class:`Decided` arrays a decision
  writes: statuses, the runs of promotion and eviction, the eviction reasons; for
  :func:`~cogstats.kernel.apply_decision`), ``retire_run``, and the status events
  ``events`` (rows of replicate, run, lesson, from, to, outcome code, why code) counted in
  ``n_events[0]``;
- the gate's scratch space, allocated once a chunk: ``gibuf`` (3 x L int), ``gfbuf``
  (2 x L float).
"""

from __future__ import annotations

from collections import namedtuple

__all__ = ["Decided", "Lessons", "Prompt", "Scratch", "State"]

#: One replicate's arrays, as a gate's step reads them (see the module docstring).
State = namedtuple(
    "State",
    [
        "by_age",
        "status",
        "since",
        "gate_t",
        "recheck",
        "n_with",
        "s_with",
        "ss_with",
        "wins",
        "first_trial",
        "tot",
        "gram",
        "zty",
        "nfix",
        "cov_range",
        "table",
        "rep",
        "retire_run",
        "decided",
        "events",
        "n_events",
        "gibuf",
        "gfbuf",
    ],
)

#: What a decision writes: the statuses and the runs of promotion and eviction with its
#: reason (:func:`cogstats.kernel.apply_decision`).
Decided = namedtuple("Decided", ["status", "promote_run", "evict_run", "evict_reason"])

#: What retrieval reads of the lessons: ``status``, ``since``, ``gate_t`` and ``by_age``
#: as in :class:`State`, trials ``n_with``, ``wins``, ``last_in`` (in the last recorded
#: run), and the scenario's ``age_rank``, ``newest_rank`` and ``applies`` (the lesson's
#: task family, -1 for every family).
Lessons = namedtuple(
    "Lessons",
    [
        "status",
        "since",
        "gate_t",
        "by_age",
        "n_with",
        "wins",
        "last_in",
        "age_rank",
        "newest_rank",
        "applies",
    ],
)

#: Retrieval's scratch space, allocated once a chunk: ``ibuf`` (3 x L int), ``kbuf`` (L
#: int), ``fbuf`` (L float), ``bbuf`` (2 x L bool).
Scratch = namedtuple("Scratch", ["ibuf", "kbuf", "fbuf", "bbuf"])

#: The coming run's prompt as retrieval fills it: the injected lessons ``inj`` and the
#: logged propensities (``pid`` lesson indices, ``pval`` values).
Prompt = namedtuple("Prompt", ["inj", "pid", "pval"])
