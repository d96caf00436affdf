"""The recommended gate's rule, written once: plain functions on numbers or numpy arrays.

:class:`~cogstats.gates.LifecycleGate` (``recommended``) decides with these functions on
every lesson at once (numpy arrays, :func:`lifecycle_rule`); its compiled piece
(:mod:`cogstats.gates.recommended.kernel`) compiles the very same function objects with
numba and calls them lesson by lesson.  No numba here, and no per-lesson Python loop: each
function is elementwise, with :func:`cogstats.numerics.where` as its select (a scalar
select when compiled).  The options are the gate's record ``o``
(:func:`cogstats.gates.rule_options`: ``o.min_trials``, ``o.margin``...).  The special
functions are the runner's: scipy's ``stdtr`` / ``stdtrit`` here,
:mod:`cogstats.kernel.tdist` in the kernel, which evaluates them only where the rule reads
them (:func:`rule_evidence` says where).

The steps, in order:

1. :func:`rule_evidence`: the degrees of freedom the rule uses, whether a lesson's t is
   usable (``finite``) and whether tier 1 applies to it (``tier1``);
2. the t tails and quantiles at those degrees of freedom (the runner's special
   functions);
3. :func:`lifecycle_bounds`: tier 1's statistics and bound, tier 2's p-values, the two
   one-sided bounds of admission and futility;
4. :func:`lifecycle_outcome`: the outcome and why codes from a lesson's
   :class:`Evidence`, the first matching rule winning (the order of
   :mod:`cogstats.gates.recommended.gate`'s docstring).

Beside them: :func:`crater_t` (the crater test's pooled two-sample t from sums) and
:func:`lifecycle_look` (tier 2's planned look at an information).  :data:`LIFECYCLE_WHY`
names the why codes; the statuses the rule reads are the simulator's codes
(``cogstats._codes.STATUS_*``: candidate, admitted, verified, suspended; any other is
inactive).
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Mapping
from typing import Any

import numpy as np
from scipy import special

from cogstats import _codes as C
from cogstats.numerics import where

__all__ = [
    "LIFECYCLE_WHY",
    "Evidence",
    "crater_t",
    "lifecycle_bounds",
    "lifecycle_look",
    "lifecycle_outcome",
    "lifecycle_rule",
    "rule_evidence",
]

#: The ``why`` words of the lifecycle gate, in code order (:func:`lifecycle_outcome`'s why
#: codes index this tuple).
LIFECYCLE_WHY: tuple[str, ...] = (
    C.WHY_MIN_TRIALS,  # 0
    C.WHY_NOT_IDENTIFIABLE,  # 1
    C.WHY_NO_ESTIMATE,  # 2
    C.WHY_INSUFFICIENT_EVIDENCE,  # 3
    C.WHY_HARM_MARGIN,  # 4  tier 1 conviction
    C.WHY_HARM_EVIDENCE,  # 5  tier 2 conviction
    C.WHY_PROMOTE_MARGIN,  # 6
    C.WHY_PROMOTE_EVIDENCE,  # 7
    C.WHY_SUSPECT,  # 8
    C.WHY_CRATER,  # 9
    C.WHY_CLEARED,  # 10
    C.WHY_FUTILITY,  # 11
    C.WHY_NON_INFERIOR,  # 12
    C.WHY_INACTIVE,  # 13
    C.WHY_SUSPENDED,  # 14 held while suspended
)

#: What the rule reads of one lesson (numbers, or numpy arrays aligned on lessons):
#: ``status`` (``cogstats._codes.STATUS_*``), ``trials``, ``identifiable``, ``finite``
#: and the t and information (:func:`rule_evidence`), the crater test's one-sided p
#: (NaN: none), tier 2's ``level`` at the lesson's look, and :func:`lifecycle_bounds`'
#: statistics.
Evidence = namedtuple(
    "Evidence",
    [
        "status",
        "trials",
        "identifiable",
        "finite",
        "t",
        "info",
        "crater_p",
        "level",
        "m_harm",
        "m_prom",
        "m_bound",
        "p_prom",
        "p_evict",
        "ci_low",
        "ci_high",
    ],
)


def rule_evidence(t: Any, df: Any, se: Any, info: Any, o: Any) -> tuple[Any, Any, Any, Any]:
    """Return ``(dfs, dfq, finite, tier1)``: where the rule's t statistics are usable.

    ``dfs`` is ``df`` where it is at least 1 (NaN elsewhere), ``dfq`` the degrees of
    freedom the t tails and quantiles take (``dfs``, 1 where NaN), ``finite`` whether the
    lesson's t is usable (t, ``dfs`` and se finite, se > 0: the rule's statistics are
    defined, the tails needed), ``tier1`` whether tier 1's bound applies (``finite`` with
    at least ``o.margin_min_df`` degrees of freedom and an information in
    [``o.margin_min_information``, ``o.margin_max_information``]).  Numbers or numpy
    arrays; ``o`` the gate's options record.

    Examples
    --------
    >>> from cogstats.gates import LifecycleGate, rule_options
    >>> o = rule_options(LifecycleGate(margin_max_information=6.0))
    >>> dfs, dfq, finite, tier1 = rule_evidence(
    ...     np.array([-3.0, np.nan, 1.0]), np.array([12.0, 12.0, 0.5]),
    ...     np.array([0.05, 0.05, 0.05]), np.array([4.0, 4.0, 4.0]), o)
    >>> dfq.tolist(), finite.tolist(), tier1.tolist()
    ([12.0, 12.0, 1.0], [True, False, False], [True, False, False])
    """
    dfs = where(np.isfinite(df) & (df >= 1.0), df, np.nan)
    dfq = where(np.isfinite(dfs), dfs, 1.0)
    finite = np.isfinite(t) & np.isfinite(dfs) & np.isfinite(se) & (se > 0.0)
    tier1 = (
        finite
        & (dfs >= o.margin_min_df)
        & (info >= o.margin_min_information)
        & (info <= o.margin_max_information)
    )
    return dfs, dfq, finite, tier1


def lifecycle_bounds(
    finite: Any,
    tier1: Any,
    estimate: Any,
    se: Any,
    sigma: Any,
    margin: float,
    q_margin: Any,
    q_admit: Any,
    q_futility: Any,
    p_up: Any,
    p_down: Any,
) -> tuple[Any, Any, Any, Any, Any, Any, Any]:
    """Return the rule's statistics (tier 1's, tier 2's p-values, the one-sided bounds).

    From :func:`rule_evidence`'s ``finite`` and ``tier1``, the lesson's estimate, se and
    pooled noise sd ``sigma``, and the t tails at ``dfq``: ``q_margin``, ``q_admit``,
    ``q_futility`` the ``1 - margin_level``, ``1 - admit_level`` and ``1 - futility_level``
    quantiles, ``p_up`` = P(T <= -t) and ``p_down`` = P(T <= t) (the runner's special
    functions; read only where ``finite``, ``q_margin`` only where ``tier1``).  Tier 1's
    statistics ``(estimate +/- margin * sigma) / se`` and its bound (NaN outside tier 1),
    tier 2's one-sided p-values, the lower (admission) and upper (futility) one-sided
    bounds; NaN where not ``finite``.  Returns ``(m_harm, m_prom, m_bound, p_prom,
    p_evict, ci_low, ci_high)``.  Numbers or numpy arrays.

    Examples
    --------
    >>> out = lifecycle_bounds(True, False, -0.3, 0.05, 0.1, 1.0, np.nan, 1.3, 2.6,
    ...                        0.999, 0.001)
    >>> [round(float(v), 6) for v in out]
    [-4.0, -8.0, nan, 0.999, 0.001, -0.365, -0.17]
    """
    s = where(finite, se, 1.0)
    m_harm = where(finite, (estimate + margin * sigma) / s, np.nan)
    m_prom = where(finite, (estimate - margin * sigma) / s, np.nan)
    m_bound = where(tier1, q_margin, np.nan)
    p_prom = where(finite, p_up, np.nan)
    p_evict = where(finite, p_down, np.nan)
    ci_low = where(finite, estimate - q_admit * se, np.nan)
    ci_high = where(finite, estimate + q_futility * se, np.nan)
    return m_harm, m_prom, m_bound, p_prom, p_evict, ci_low, ci_high


def lifecycle_outcome(ev: Any, o: Any) -> tuple[Any, Any]:
    """Return ``(outcome code, why code)``: the first matching rule of the lifecycle wins.

    ``ev`` is the lesson's :class:`Evidence` (numbers, or arrays aligned on lessons), ``o``
    the gate's options record.  In order: inactive (held); tier 1 then tier 2 conviction
    (any status); tier 1 then tier 2 promotion (candidates, admitted); suspension on the
    t, then on the crater test of a fresh lesson or one the regression cannot tell apart;
    eviction for no lift (candidates, admitted, suspended); release of a suspect; admission
    of a candidate; else held, saying why.  Outcome codes are
    :data:`cogstats._codes.OUTCOME_CODES`, why codes index :data:`LIFECYCLE_WHY`.  Written
    as selects from the last rule to the first, so that it runs on numpy arrays and,
    compiled, on scalars.

    Examples
    --------
    >>> from cogstats.gates import LifecycleGate, rule_options
    >>> o = rule_options(LifecycleGate(suspect_t=2.0, release_t=1.0, crater_level=0.05,
    ...                                crater_max_trials=2, futility_margin=0.02))
    >>> ev = Evidence(
    ...     np.array([C.STATUS_CANDIDATE, C.STATUS_SUSPENDED]), np.array([10, 10]),
    ...     np.array([True, True]), np.array([True, True]), np.array([-6.0, -0.5]),
    ...     np.array([5.0, 5.0]), np.array([np.nan, np.nan]), np.array([0.0, 0.0]),
    ...     np.array([-4.0, 1.0]), np.array([-8.0, -1.0]), np.array([1.7, 1.7]),
    ...     np.array([1.0, 0.7]), np.array([0.0, 0.3]), np.array([-0.4, -0.03]),
    ...     np.array([-0.2, 0.06]))
    >>> out, why = lifecycle_outcome(ev, o)
    >>> [C.outcome_of_code(int(c)) for c in out], [LIFECYCLE_WHY[int(w)] for w in why]
    ([('evict', 'eval-gate:harmful'), ('release', None)], ['harm_margin', 'cleared'])
    """
    status, trials, identifiable, finite = ev.status, ev.trials, ev.identifiable, ev.finite
    t, info, crater_p, level = ev.t, ev.info, ev.crater_p, ev.level
    min_trials = o.min_trials
    open_ = (status == C.STATUS_CANDIDATE) | (status == C.STATUS_ADMITTED)
    suspended = status == C.STATUS_SUSPENDED
    inactive = np.logical_not(open_ | suspended | (status == C.STATUS_VERIFIED))
    enough = trials >= min_trials
    judged = enough & identifiable & finite & np.logical_not(inactive)
    cmp = where(np.isfinite(ev.m_bound), ev.m_bound, np.inf)
    has_t = np.isfinite(t)
    # the crater test judges a fresh lesson, and one whose effect the regression cannot
    # separate from the lessons it ran with (not identifiable, or no t): its marginal
    # test is the test of the group it always ran with
    apart = identifiable & has_t
    fresh = open_ & (trials >= 1) & ((trials <= o.crater_max_trials) | np.logical_not(apart))
    usable = identifiable & finite & np.logical_not(inactive)
    # futility (no lift on evidence), with harm beyond the admission margin excluded: a
    # lesson that may be harmful stays under test until it is convicted or cleared
    no_lift = (
        judged
        & (open_ | suspended)
        & (info >= o.futility_min_information)
        & (ev.ci_high < o.futility_margin)
        & (ev.ci_low > -o.admit_margin)
    )
    # the rules as selects from the last to the first, so that the first that holds wins;
    # last, the holds with the reason nothing was decided (14 suspended, else 3)
    out = where(suspended, C.OUTCOME_HOLD, C.OUTCOME_HOLD)
    why = where(suspended, 14, 3)
    c = np.logical_not(finite)
    out, why = where(c, C.OUTCOME_HOLD, out), where(c, 2, why)
    c = np.logical_not(identifiable)
    out, why = where(c, C.OUTCOME_HOLD, out), where(c, 1, why)
    c = np.logical_not(enough)
    out, why = where(c, C.OUTCOME_HOLD, out), where(c, 0, why)
    # admission: a non-inferiority bound
    c = judged & (status == C.STATUS_CANDIDATE) & (ev.ci_low > -o.admit_margin)
    out, why = where(c, C.OUTCOME_ADMIT, out), where(c, 12, why)
    # release of a re-tested suspect
    c = usable & (trials >= o.release_min_trials) & suspended & (t >= -o.release_t)
    out, why = where(c, C.OUTCOME_RELEASE, out), where(c, 10, why)
    out, why = where(no_lift, C.OUTCOME_EVICT_NO_LIFT, out), where(no_lift, 11, why)
    # suspension: a fast lenient test (the ridge t, or the crater of a fresh lesson; a
    # lesson that shares its pattern with others carries its group's t)
    c = fresh & np.isfinite(crater_p) & (crater_p <= o.crater_level)
    out, why = where(c, C.OUTCOME_SUSPEND, out), where(c, 9, why)
    c = open_ & (trials >= 2) & has_t & (t < -o.suspect_t)
    out, why = where(c, C.OUTCOME_SUSPEND, out), where(c, 8, why)
    # promotions (candidates and admitted lessons): tier 2, then tier 1
    c = judged & open_ & (level > 0.0) & (ev.p_prom <= level)
    out, why = where(c, C.OUTCOME_PROMOTE, out), where(c, 7, why)
    c = judged & open_ & (ev.m_prom > cmp)
    out, why = where(c, C.OUTCOME_PROMOTE, out), where(c, 6, why)
    # convictions (any status but inactive): tier 2, then tier 1
    c = judged & (level > 0.0) & (ev.p_evict <= level)
    out, why = where(c, C.OUTCOME_EVICT_HARMFUL, out), where(c, 5, why)
    c = judged & (ev.m_harm < -cmp)
    out, why = where(c, C.OUTCOME_EVICT_HARMFUL, out), where(c, 4, why)
    # an inactive lesson (evicted, retired) is held
    out, why = where(inactive, C.OUTCOME_HOLD, out), where(inactive, 13, why)
    return out, why


def crater_t(n_with: Any, runs: Any, sum_with: Any, sum_all: Any, ss_with: Any, ss_all: Any) -> Any:
    """Return the crater test's t: the pooled two-sample t of the scores with a lesson vs without.

    From sums: ``n_with`` runs with the lesson of ``runs``, their score sum ``sum_with``
    and sum of squares ``ss_with``; ``sum_all`` and ``ss_all`` over every run.  On
    ``runs - 2`` degrees of freedom; NaN where undefined (no run with or without the
    lesson, fewer than 3 runs, no spread).  Marginal: the covariates and the other lessons
    are not adjusted for.  Numbers or numpy arrays.

    Examples
    --------
    >>> y = np.array([0.6, 0.62, 0.58, 0.1])
    >>> round(float(crater_t(1.0, 4, 0.1, y.sum(), 0.01, (y * y).sum())), 2)
    -21.65
    >>> bool(np.isnan(crater_t(4.0, 4, y.sum(), y.sum(), 0.0, 0.0)))
    True
    """
    big = runs * 1.0
    df = big - 2.0
    ok = (n_with > 0.0) & (big - n_with > 0.0) & (df >= 1.0)
    n = where(ok, n_with, 1.0)
    m = where(ok, big - n_with, 1.0)
    d = where(ok, df, 1.0)
    so = sum_all - sum_with
    ss = np.maximum(ss_with - sum_with * sum_with / n, 0.0) + np.maximum(
        (ss_all - ss_with) - so * so / m, 0.0
    )
    s2 = ss / d
    se = np.sqrt(s2 * (1.0 / n + 1.0 / m))
    pos = ok & (se > 0.0)
    t = where(pos, (sum_with / n - so / m) / where(pos, se, 1.0), np.nan)
    return where(np.isfinite(t), t, np.nan)


def lifecycle_look(info: Any, max_information: float, looks: int) -> Any:
    """Return tier 2's planned look at each information (0 where not finite and positive).

    Looks are evenly spaced up to ``max_information``: ``floor(info / max_information *
    looks)``, at most ``looks`` (past ``max_information`` a lesson is judged at the last
    look's level).  Floats (numbers or arrays), whole numbers: an index into the gate's
    ``nominal_levels()``, whose entry 0 is level 0.

    Examples
    --------
    >>> lifecycle_look(np.array([0.1, 12.5, 40.0, np.nan, np.inf]), 25.0, 20).tolist()
    [0.0, 10.0, 20.0, 0.0, 0.0]
    """
    ok = np.isfinite(info) & (info > 0.0)
    return where(
        ok, np.minimum(np.floor(where(ok, info, 0.0) / max_information * looks), looks), 0.0
    )


def lifecycle_rule(x: Mapping[str, np.ndarray], o: Any) -> tuple[Any, Any, dict[str, Any]]:
    """Apply the lifecycle rule, vectorised over lessons: outcome codes, why codes, statistics.

    ``x`` holds arrays aligned on lessons: the fit's ``t``, ``df``, ``info``,
    ``estimate``, ``se`` and ``sigma``, the lessons' ``trials`` and ``identifiable``,
    the crater test's ``crater_p``, ``status`` (``cogstats._codes.STATUS_*``) and tier
    2's ``level`` at each lesson's look; ``o`` the gate's options record
    (:func:`cogstats.gates.rule_options`).  Returns the outcome codes
    (``cogstats._codes.OUTCOME_CODES``), indices into :data:`LIFECYCLE_WHY`, and the
    derived statistics (``margin_harm``, ``margin_promote``, ``margin_bound``,
    ``p_promote``, ``p_evict``, ``ci_low``, ``ci_high``): :func:`rule_evidence`, scipy's t
    tails, :func:`lifecycle_bounds` and :func:`lifecycle_outcome`, the functions the
    simulator's kernel compiles.

    Examples
    --------
    >>> from cogstats.gates import LifecycleGate, rule_options
    >>> o = rule_options(LifecycleGate(margin=1.0, margin_max_information=6.0))
    >>> one = lambda v: np.array([v], dtype=float)
    >>> x = {"t": one(-6.0), "df": one(20.0), "info": one(5.0), "estimate": one(-0.3),
    ...      "se": one(0.05), "sigma": one(0.1), "trials": one(10),
    ...      "identifiable": np.array([True]), "crater_p": one(np.nan),
    ...      "status": np.array([C.STATUS_CANDIDATE]), "level": one(1e-4)}
    >>> out, why, _ = lifecycle_rule(x, o)
    >>> C.outcome_of_code(int(out[0])), LIFECYCLE_WHY[int(why[0])]
    (('evict', 'eval-gate:harmful'), 'harm_margin')
    """
    t, se = x["t"], x["se"]
    _, dfq, finite, tier1 = rule_evidence(t, x["df"], se, x["info"], o)
    with np.errstate(invalid="ignore", divide="ignore"):
        bounds = lifecycle_bounds(
            finite,
            tier1,
            x["estimate"],
            se,
            x["sigma"],
            o.margin,
            special.stdtrit(dfq, 1.0 - o.margin_level),
            special.stdtrit(dfq, 1.0 - o.admit_level),
            special.stdtrit(dfq, 1.0 - o.futility_level),
            special.stdtr(dfq, -t),
            special.stdtr(dfq, t),
        )
    ev = Evidence(
        x["status"],
        x["trials"],
        x["identifiable"],
        finite,
        t,
        x["info"],
        x["crater_p"],
        x["level"],
        *bounds,
    )
    out, why = lifecycle_outcome(ev, o)
    names = ("margin_harm", "margin_promote", "margin_bound", "p_promote", "p_evict")
    stats = dict(zip((*names, "ci_low", "ci_high"), bounds, strict=True))
    return np.asarray(out, dtype=np.int64), np.asarray(why, dtype=np.int64), stats
