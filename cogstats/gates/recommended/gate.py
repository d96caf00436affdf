"""The recommended gate: a lesson lifecycle with evidence behind every status.

:class:`LifecycleGate` (registered as ``recommended``) judges every lesson on the
debiased ridge regression of :mod:`cogstats.estimators.debiased_ridge` (each lesson's
coefficient free, the others shrunk), with the noise pooled over the whole ledger: the
residual variance of the regression on every lesson and the covariates, on ``runs -
trace`` degrees of freedom.  A lesson that arrives in a ledger with history is judged with
the history's degrees of freedom; in a new ledger the t reference carries the few it has,
so no rule assumes a noise scale.  What it writes (``cogstats._codes.OUTCOMES``; the store
status each leads to is ``OUTCOME_STATUS``), by the lesson's status (``statuses``):

- **convict** (any live or suspended lesson; ``evict``, reason ``eval-gate:harmful``):
  *tier 1* (``why`` = ``harm_margin``), a test of the harm against a margin of
  ``margin`` noise standard deviations, ``(estimate + margin * sigma) / se <
  -t(1 - margin_level, df)``, with at least ``margin_min_df`` residual degrees of freedom
  and an information between ``margin_min_information`` and ``margin_max_information``
  runs (the early tier): a lenient level for large harm, its margin in units of the
  estimated noise, so its error at effect 0 does not depend on the noise level; *tier 2*
  (``harm_evidence``), effect 0 tested with the one-sided error ``alpha`` spent over the
  lesson's information (Hwang-Shih-DeCani; past
  ``max_information`` at the last look's level).
- **promote** (candidate, admitted; -> verified): the mirror images, ``promote_margin``
  and ``promote_evidence``.
- **suspend** (candidate, admitted; -> suspended, out of the prompt except re-tests): a
  fast lenient test that is not a conviction: the lesson's t below ``-suspect_t``
  (``suspect``), or, for a lesson with at most ``crater_max_trials`` trials, the pooled
  two-sample t of the raw scores of the runs with it against those without at one-sided
  p <= ``crater_level`` (``crater``: a lesson that arrived with a run that dropped).
- **release** (suspended; -> candidate): re-tested and cleared, ``t >= -release_t`` with
  ``min_trials`` trials (``cleared``); a suspended lesson is convicted by either tier.
- **evict for no lift** (reason ``eval-gate:no_lift``, ``why`` = ``futility``): only on
  evidence, the upper one-sided ``1 - futility_level`` bound below ``futility_margin``
  (score units) once the information reaches ``futility_min_information``, with harm
  beyond ``admit_margin`` excluded (a lesson that may be harmful stays under test until
  convicted or cleared); never because looks ran out.  A lesson without a verdict stays in rotation.
- **admit** (candidate; -> admitted, fills the verified block without a claim that it
  helps): a non-inferiority bound, the lower one-sided ``1 - admit_level`` bound above
  ``-admit_margin`` (score units).

Convictions and promotions do not depend on the status, so the error of each tier holds
whatever the retrieval did with suspects.  The arithmetic is :func:`lifecycle_rule`,
vectorised over lessons, and the crater test's :func:`crater_test`: plain functions of
:mod:`cogstats.gates.recommended.rule` that the gate's compiled piece compiles as they are
(:mod:`cogstats.gates.recommended.kernel`); docs/recommended.md says how each number was
chosen and what the rule achieves.

Cost per evaluation: the ridge fit (O(p^3) per pass, ``p`` = 1 + covariates + lessons)
and O(lessons) for the rule.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np
import polars as pl
from scipy import special

from cogstats import _codes as C
from cogstats._validation import ParameterError
from cogstats.estimators.debiased_ridge import (
    RidgeFit,
    RidgeStatistics,
    ridge_fit,
    ridge_statistics,
)
from cogstats.estimators.debiased_ridge import check_options as ridge_options
from cogstats.estimators.spending import SPENDING, planned_look_levels
from cogstats.gates._options import (
    check_options,
    integer,
    level,
    names,
    option,
    positive,
    real,
    rule_options,
)
from cogstats.gates._registry import register_gate
from cogstats.gates._report import (
    REPORT_COLUMNS,
    GateReport,
    candidate_ids,
    check_candidates,
    report_frame,
    report_schema,
)
from cogstats.gates.recommended.rule import (
    LIFECYCLE_WHY,
    crater_t,
    lifecycle_look,
    lifecycle_rule,
)
from cogstats.ledger import Ledger

__all__ = ["LIFECYCLE_DECISION_COLUMNS", "LifecycleGate", "LifecycleStatistics", "crater_test"]

#: the status code the rule reads of each store status (the simulator's)
_STATUS_CODE = {name: C.STATUS_NAMES.index(name) for name in C.LESSON_STATUSES}
_INACTIVE = (C.EVICTED, C.RETIRED)

_OWN_SCHEMA = {
    "status": pl.String,
    "status_before": pl.String,
    "t_stat": pl.Float64,
    "df": pl.Float64,
    "sigma": pl.Float64,
    "info": pl.Float64,
    "margin_stat_harm": pl.Float64,
    "margin_stat_promote": pl.Float64,
    "margin_bound": pl.Float64,
    "nominal_level": pl.Float64,
    "pvalue_promote": pl.Float64,
    "pvalue_evict": pl.Float64,
    "crater_t": pl.Float64,
    "crater_pvalue": pl.Float64,
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
    "identifiable": pl.Boolean,
}
_SCHEMA = report_schema(_OWN_SCHEMA)

#: Columns of a lifecycle gate report: :data:`~cogstats.gates.REPORT_COLUMNS`, then
#: ``status`` (the lesson's status after the row's decision: ``evicted`` for an eviction,
#: unchanged for a hold), ``status_before`` (the status the rule read), ``t_stat``, ``df``
#: (the pooled residual degrees
#: of freedom), ``sigma`` (the pooled noise sd), ``info`` (the lesson's information, runs),
#: ``margin_stat_harm`` / ``margin_stat_promote`` (tier 1's statistics, ``(estimate +/-
#: margin * sigma) / se``), ``margin_bound`` (the t value tier 1 needs, null below
#: ``margin_min_df``), ``nominal_level`` (tier 2's level at the lesson's look),
#: ``pvalue_promote`` / ``pvalue_evict`` (tier 2's one-sided t p-values), ``crater_t`` /
#: ``crater_pvalue`` (the marginal two-sample test of a fresh lesson), ``ci_low`` (the
#: non-inferiority bound, level ``1 - admit_level``), ``ci_high`` (the futility bound,
#: level ``1 - futility_level``) and ``identifiable``.
LIFECYCLE_DECISION_COLUMNS: tuple[str, ...] = (*REPORT_COLUMNS, *_OWN_SCHEMA)


@dataclass(frozen=True)
class LifecycleStatistics:
    """The lifecycle gate's sufficient statistics: the ridge's, and the squares per lesson.

    Attributes
    ----------
    ridge : RidgeStatistics
        ``Z'Z``, ``Z'y``, ``y'y`` and the run count of ``score ~ 1 + covariates + lessons``.
    with_ss : numpy.ndarray
        Per lesson column, the sum of squared scores over the runs with it (for the
        marginal two-sample test of the crater rule).

    Both are sums over runs, so :meth:`add_run` updates them exactly (a run of numeric
    covariates only; the covariate columns are fixed by the first statistics).

    Examples
    --------
    >>> from cogstats import Ledger
    >>> ledger = Ledger.from_records([
    ...     {"run_id": "r1", "score": 0.9, "fact_ids": ["a"]},
    ...     {"run_id": "r2", "score": 0.5, "fact_ids": []},
    ... ])
    >>> st = LifecycleStatistics.from_ledger(ledger).add_run("r3", 0.7, ["a", "b"])
    >>> st.ridge.runs, st.ridge.fact_ids, [round(float(v), 12) for v in st.with_ss]
    (3, ('a', 'b'), [1.3, 0.49])
    """

    ridge: RidgeStatistics
    with_ss: np.ndarray

    @classmethod
    def empty(cls, covariates: Sequence[str] = ()) -> LifecycleStatistics:
        """Return the statistics of no runs, with these numeric covariate columns.

        A running agent starts here (``from_ledger`` drops a covariate that is constant
        in the ledger, as every regression estimator does, so a ledger of one run would
        fix no covariate column).

        Examples
        --------
        >>> st = LifecycleStatistics.empty(["difficulty_proxy"]).add_run(
        ...     "r1", 0.5, ["a"], {"difficulty_proxy": 0.2})
        >>> st.ridge.n_fixed, st.ridge.gram.shape
        (2, (3, 3))
        """
        cov = tuple(covariates)
        if isinstance(covariates, str) or not all(isinstance(c, str) and c for c in cov):
            raise ParameterError(
                f"covariates must be a list of covariate names; got {covariates!r}"
            )
        f = 1 + len(cov)
        ridge = RidgeStatistics(
            gram=np.zeros((f, f)),
            zty=np.zeros(f),
            yty=0.0,
            runs=0,
            n_fixed=f,
            fact_ids=(),
            covariates=cov,
        )
        return cls(ridge, np.zeros(0))

    @classmethod
    def from_ledger(cls, ledger: Ledger, covariates: Sequence[str] = ()) -> LifecycleStatistics:
        """Build the statistics of a ledger (covariates coded as the ridge codes them)."""
        ridge = ridge_statistics(ledger, tuple(covariates))
        ids, rows, cols = ledger._facts_index()
        y = np.asarray(ledger.scores, dtype=np.float64)
        ss = (
            np.bincount(cols, weights=y[rows] ** 2, minlength=len(ids)) if len(ids) else np.zeros(0)
        )
        return cls(ridge, np.asarray(ss, dtype=np.float64))

    def add_run(
        self,
        run_id: str,
        score: float,
        fact_ids: Sequence[str],
        covariates: Mapping[str, Any] | None = None,
    ) -> LifecycleStatistics:
        """Return the statistics with one more run (``run_id`` is not kept).

        Raises
        ------
        ParameterError
            When a covariate the statistics adjust for is missing or not a number.
        """
        st = self.ridge
        y = float(score)
        if not math.isfinite(y):
            raise ParameterError(f"score must be a finite number; got {score!r}")
        cov = dict(covariates or {})
        fixed = [1.0]
        for name in st.covariates:
            v = cov.get(name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise ParameterError(
                    f"covariates[{name!r}] must be a finite number (the statistics adjust "
                    f"for it); got {v!r}"
                )
            fixed.append(float(v))
        ids = list(st.fact_ids)
        col = {f: i for i, f in enumerate(ids)}
        present = []
        for f in dict.fromkeys(fact_ids):
            if not isinstance(f, str):
                raise ParameterError(f"fact_ids must be lesson id strings; got {f!r}")
            if f not in col:
                col[f] = len(ids)
                ids.append(f)
            present.append(col[f])
        nf = st.n_fixed
        p = nf + len(ids)
        gram = np.zeros((p, p))
        gram[: st.gram.shape[0], : st.gram.shape[0]] = st.gram
        zty = np.zeros(p)
        zty[: st.zty.shape[0]] = st.zty
        z = np.zeros(p)
        z[:nf] = fixed
        z[[nf + j for j in present]] = 1.0
        gram += np.outer(z, z)
        zty += z * y
        ss = np.zeros(len(ids))
        ss[: self.with_ss.shape[0]] = self.with_ss
        ss[present] += y * y
        ridge = RidgeStatistics(
            gram=gram,
            zty=zty,
            yty=st.yty + y * y,
            runs=st.runs + 1,
            n_fixed=nf,
            fact_ids=tuple(ids),
            covariates=st.covariates,
        )
        return LifecycleStatistics(ridge, ss)

    def merge(self, other: LifecycleStatistics) -> LifecycleStatistics:
        """Return the statistics of both sets of runs (``self``'s first): sums added.

        The lesson columns are ``self``'s, then ``other``'s new ones, in order (as one
        ledger of the runs in that order lists them); the covariate columns must agree.

        Examples
        --------
        >>> a = LifecycleStatistics.empty().add_run("r1", 0.9, ["x"])
        >>> b = LifecycleStatistics.empty().add_run("r2", 0.5, ["y", "x"])
        >>> both = a.merge(b)
        >>> both.ridge.fact_ids, both.ridge.runs, both.ridge.trials.tolist()
        (('x', 'y'), 2, [2, 1])
        """
        a, b = self.ridge, other.ridge
        if a.covariates != b.covariates or a.n_fixed != b.n_fixed:
            raise ParameterError(
                "statistics merge only with the same covariate columns; got "
                f"{list(a.covariates)} and {list(b.covariates)}"
            )
        ids = list(a.fact_ids)
        pos = {f: i for i, f in enumerate(ids)}
        for f in b.fact_ids:
            if f not in pos:
                pos[f] = len(ids)
                ids.append(f)
        nf = a.n_fixed
        p = nf + len(ids)
        gram = np.zeros((p, p))
        zty = np.zeros(p)
        ss = np.zeros(len(ids))
        for st, with_ss in ((a, self.with_ss), (b, other.with_ss)):
            at = np.array([pos[f] for f in st.fact_ids], dtype=np.int64)
            idx = np.concatenate([np.arange(nf), nf + at])
            gram[np.ix_(idx, idx)] += st.gram
            zty[idx] += st.zty
            ss[at] += with_ss
        ridge = RidgeStatistics(
            gram=gram,
            zty=zty,
            yty=a.yty + b.yty,
            runs=a.runs + b.runs,
            n_fixed=nf,
            fact_ids=tuple(ids),
            covariates=a.covariates,
        )
        return LifecycleStatistics(ridge, ss)

    def to_arrays(self) -> dict[str, Any]:
        """Return the statistics as plain arrays and values (:meth:`from_arrays` inverts)."""
        r = self.ridge
        return {
            "gram": r.gram.copy(),
            "zty": r.zty.copy(),
            "yty": r.yty,
            "runs": r.runs,
            "n_fixed": r.n_fixed,
            "fact_ids": list(r.fact_ids),
            "covariates": list(r.covariates),
            "with_ss": self.with_ss.copy(),
        }

    @classmethod
    def from_arrays(cls, data: Mapping[str, Any]) -> LifecycleStatistics:
        """Rebuild statistics saved by :meth:`to_arrays`."""
        ridge = RidgeStatistics(
            gram=np.asarray(data["gram"], dtype=np.float64),
            zty=np.asarray(data["zty"], dtype=np.float64),
            yty=float(data["yty"]),
            runs=int(data["runs"]),
            n_fixed=int(data["n_fixed"]),
            fact_ids=tuple(data["fact_ids"]),
            covariates=tuple(data["covariates"]),
        )
        return cls(ridge, np.asarray(data["with_ss"], dtype=np.float64))


def crater_test(stats: LifecycleStatistics) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per lesson, the pooled two-sample t of the raw scores with it against without it.

    Returns ``(t, df, one-sided p of a drop)`` (NaN where undefined: no runs with or
    without it, or fewer than 3 runs).  Marginal: the covariates and the other lessons are
    not adjusted for (it is the fast test of the group present when scores dropped).

    Examples
    --------
    >>> from cogstats import Ledger
    >>> ledger = Ledger.from_records(
    ...     [{"run_id": f"r{i}", "score": s, "fact_ids": f}
    ...      for i, (s, f) in enumerate([(0.6, []), (0.62, []), (0.58, []), (0.1, ["P"])])])
    >>> t, df, p = crater_test(LifecycleStatistics.from_ledger(ledger))
    >>> round(float(t[0]), 2), float(df[0]), bool(p[0] < 0.01)
    (-21.65, 2.0, True)
    """
    r = stats.ridge
    f = r.n_fixed
    t = crater_t(
        np.diag(r.gram)[f:].astype(float), r.runs, r.zty[f:], r.zty[0], stats.with_ss, r.yty
    )
    df = float(r.runs) - 2.0
    dfa = np.full(t.shape, df if df >= 1 else np.nan)
    p = np.where(np.isfinite(t), special.stdtr(np.where(np.isfinite(dfa), dfa, 1.0), t), np.nan)
    return t, dfa, p


def _status_of(value: Any, fact_id: str) -> str:
    """Return the status string of a ``statuses`` value (a LessonState, or a status string)."""
    status = value if isinstance(value, str) else getattr(value, "status", None)
    if status not in _STATUS_CODE:
        raise ParameterError(
            f"statuses[{fact_id!r}] must be a lesson status, one of "
            f"{list(C.LESSON_STATUSES)} (or a LessonState with one); got {value!r}"
        )
    return str(status)


def _ridge_option(name: str, value: Any) -> Any:
    """One of the debiased ridge's options, checked by the estimator."""
    given = {"penalty": 40.0, "passes": 1, "suspect_z": 0.0, "min_share": 0.0, name: value}
    return ridge_options(
        given["penalty"], given["passes"], given["suspect_z"], given["min_share"], None, 0.0
    )[name]


@register_gate(
    "recommended",
    description="lesson lifecycle on the pooled debiased ridge: suspend fast, convict on "
    "two tiers, admit on non-inferiority, retire for no lift on futility only",
    kernel="cogstats.gates.recommended.kernel",
)
@dataclass(frozen=True)
class LifecycleGate:
    """The recommended gate: every status with the evidence behind it.

    Parameters
    ----------
    covariates : tuple of str
        Ledger covariates to adjust for, each used when the ledger has it (default the
        difficulty proxy, ``difficulty_proxy``; a ledger without it but with a
        ``difficulty`` column is adjusted for that, and the report's settings carry a
        ``covariate_note`` saying so, or naming a difficulty-like column left unused).
    penalty, passes, suspect_z, min_share : float, int, float, float
        The debiased ridge's options (:func:`~cogstats.estimators.debiased_ridge.ridge_fit`).
    alpha : float
        Tier 2: one-sided error per side over a lesson's life (< 0.5).
    spending, spending_options, max_information, looks
        Tier 2's spending: the spending function (``cogstats.estimators.SPENDING``) and
        its options, the information (runs) over which the error is spent, and the
        planned looks, evenly spaced in information up to ``max_information``.
    min_trials : int
        Trials before a lesson can be convicted, promoted, released, admitted or retired.
    margin : float
        Tier 1's margin in noise standard deviations (> 0).
    margin_level : float
        Tier 1's one-sided level per look (lenient; < 0.5).
    margin_min_df : float
        Residual degrees of freedom tier 1 needs (>= 1).
    margin_min_information : float
        Information (runs) tier 1 needs (>= 0): with little information the margin is a
        small shift of the t boundary (``margin * sqrt(info)``) and tier 1 a lenient test
        of effect 0.
    margin_max_information : float
        Information (runs) up to which tier 1 runs (it is the early tier; tier 2 decides
        later).
    suspect_t : float
        Suspend a candidate or admitted lesson with t below ``-suspect_t`` (>= 0).
    release_t : float
        Release a suspended lesson whose t is at least ``-release_t`` (0 <= release_t <=
        suspect_t, so a released lesson is not suspended again at once).
    release_min_trials : int
        Trials a suspended lesson needs before it can be released (>= 1; default 2: its
        trial in the crater and one re-test apart from the other suspects).
    crater_level : float
        One-sided level of the marginal drop test of a fresh lesson (0 disables it).
    crater_max_trials : int
        A lesson with at most this many trials is fresh (the crater test applies).
    admit_margin, admit_level : float
        Non-inferiority: admit when the lower ``1 - admit_level`` bound exceeds
        ``-admit_margin`` (score units).
    futility_margin, futility_level, futility_min_information : float
        Futility: evict as no_lift when the upper ``1 - futility_level`` bound is below
        ``futility_margin`` (score units), from ``futility_min_information`` runs of
        information on.

    Examples
    --------
    >>> import numpy as np
    >>> from cogstats import Ledger
    >>> rng = np.random.default_rng(5)
    >>> x = rng.random((80, 4)) < 0.5
    >>> d = rng.normal(0, 0.1, 80)
    >>> y = np.clip(0.55 + d - 0.2 * x[:, 0] + rng.normal(0, 0.05, 80), 0, 1)
    >>> ledger = Ledger.from_records(
    ...     {"run_id": f"r{i}", "score": float(y[i]), "difficulty_proxy": float(d[i]),
    ...      "fact_ids": [f for f, on in zip(["P", "a", "b", "c"], x[i]) if on]}
    ...     for i in range(80))
    >>> report = LifecycleGate().evaluate(ledger)
    >>> row = report.decision("P")
    >>> row["decision"], row["reason"], row["why"]   # 80 runs: past tier 1's window
    ('evict', 'eval-gate:harmful', 'harm_evidence')
    >>> report.decision("a")["decision"] in ("admit", "hold", "evict")
    True
    """

    #: the gate suspends lessons (the simulator sizes its propensity log for re-tests)
    suspends = True

    covariates: tuple[str, ...] = option(("difficulty_proxy",), names)
    penalty: float = option(40.0, _ridge_option)
    passes: int = option(4, _ridge_option)
    suspect_z: float = option(2.5, _ridge_option)
    min_share: float = option(0.3, _ridge_option)
    alpha: float = option(0.0025, level)
    spending: str = "hsd"
    spending_options: Mapping[str, Any] = field(default_factory=lambda: {"gamma": -3.0})
    max_information: float = option(25.0, positive)
    looks: int = option(100, integer(minimum=1))
    min_trials: int = option(3, integer(minimum=2))
    margin: float = option(1.5, positive)
    margin_level: float = option(0.05, level)
    margin_min_df: float = option(8.0, real(minimum=1.0))
    margin_min_information: float = option(2.0, real(minimum=0.0))
    margin_max_information: float = option(3.0, real(minimum=0.0))
    suspect_t: float = option(1.5, real(minimum=0.0))
    release_t: float = option(0.75, real(minimum=0.0))
    crater_level: float = option(0.2, real(minimum=0.0, maximum=0.5))
    crater_max_trials: int = option(4, integer(minimum=1))
    admit_margin: float = option(0.05, real(minimum=0.0))
    admit_level: float = option(0.2, level)
    futility_margin: float = option(0.02, real())
    futility_level: float = option(0.01, level)
    futility_min_information: float = option(5.0, real(minimum=0.0))
    release_min_trials: int = option(2, integer(minimum=1))

    def __post_init__(self) -> None:
        """Validate every option (each field's check, then how they go together)."""
        check_options(self)
        if not isinstance(self.spending, str):
            raise ParameterError(
                f"spending must be a spending function name, one of {sorted(SPENDING)}; "
                f"got {self.spending!r}"
            )
        SPENDING.make(self.spending, **dict(self.spending_options or {}))  # validates both
        object.__setattr__(
            self, "spending_options", MappingProxyType(dict(self.spending_options or {}))
        )
        if self.release_t > self.suspect_t:
            raise ParameterError(
                f"release_t must be <= suspect_t ({self.suspect_t:g}), so that a released "
                f"lesson is not suspended again on the same evidence; got {self.release_t:g}"
            )

    def to_policy(self) -> dict[str, Any]:
        """Return the gate's options as a plain dict (round-trips through the constructor).

        Examples
        --------
        >>> g = LifecycleGate(margin=1.5)
        >>> LifecycleGate(**g.to_policy()) == g
        True
        """
        out: dict[str, Any] = {}
        for name in self.__dataclass_fields__:
            v = getattr(self, name)
            if name == "covariates":
                v = list(v)
            elif name == "spending_options":
                v = dict(v)
            out[name] = v
        return out

    # -------------------------------------------------------------- the protocol
    def covariate_choice(self, ledger: Ledger) -> Any:
        """Return the covariates adjusted for on ``ledger`` and the note for the user.

        The one covariate rule (:func:`cogstats.covariates.choose_covariates`): the
        gate's covariates the ledger has; with the default and none of them, the ledger's
        ``difficulty`` column (noted); nothing, with a note naming a difficulty-like
        column, otherwise.
        """
        from cogstats.covariates import choose_covariates

        return choose_covariates(self.covariates, ledger.covariates, default=_DEFAULT_COVARIATES)

    def covariates_in(self, ledger: Ledger) -> tuple[str, ...]:
        """Return the covariates the gate adjusts for on ``ledger``."""
        return tuple(self.covariate_choice(ledger).columns)

    def statistics(self, ledger: Ledger) -> LifecycleStatistics:
        """Return the gate's sufficient statistics of a ledger."""
        if not isinstance(ledger, Ledger):
            raise ParameterError(f"ledger must be a cogstats Ledger; got {type(ledger).__name__}")
        return LifecycleStatistics.from_ledger(ledger, self.covariates_in(ledger))

    def running_statistics(self) -> _Running:
        """Return running statistics of no runs, for a streaming gate to update run by run.

        The covariate columns are fixed by the first run, with the covariate rule
        (:meth:`covariate_choice` on that run's columns): ``add_run`` returns
        ``LifecycleStatistics.empty(<those columns>)`` with the run added, so a stream
        whose runs carry ``difficulty_proxy`` (or, with the default, only ``difficulty``)
        is judged adjusting for it, as :meth:`evaluate` is on the ledger so far (a column
        constant so far is left out, as the batch statistics leave it out).
        :meth:`check_run` refuses a later run that would change the choice.

        Examples
        --------
        >>> from cogstats.gates import StreamingGate
        >>> sg = StreamingGate(LifecycleGate())
        >>> _ = sg.record("r1", 0.5, ["a"], difficulty_proxy=0.2)
        >>> _ = sg.record("r2", 0.7, [], difficulty_proxy=0.4)
        >>> sg.report().decision("a")["why"], LifecycleGate().running_statistics().covariates
        ('min_trials', None)
        """
        return _Running(self)

    def check_run(self, stats: Any, covariates: Mapping[str, Any]) -> None:
        """Refuse a run (``LedgerError``) that the streaming statistics cannot take.

        A covariate the rule chooses once the run is added (:meth:`covariate_choice`)
        must be in every run or in none and be a finite number (the statistics code it
        as one column); the batch gate refuses a ledger whose chosen column has nulls.
        """
        from cogstats._validation import LedgerError
        from cogstats.covariates import choose_covariates

        seen = set(stats.covariates)
        have = [*stats.covariates, *(k for k, v in covariates.items() if v is not None)]
        chosen = choose_covariates(self.covariates, have, default=_DEFAULT_COVARIATES).columns
        for name in chosen:
            value = covariates.get(name)
            present = value is not None
            if stats.n_runs and present != (name in seen):
                raise LedgerError(
                    f"covariate {name!r} must be in every run or in none (the gate "
                    f"adjusts for it where the ledger has it); got {value!r}",
                    field=name,
                )
            if present and (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not math.isfinite(value)
            ):
                raise LedgerError(
                    "a covariate the streaming lifecycle gate adjusts for must be a finite "
                    f"number; got {value!r}",
                    field=name,
                )

    def nominal_levels(self) -> np.ndarray:
        """Tier 2's one-sided level at each planned look 0 .. ``looks`` (0 at look 0).

        Examples
        --------
        >>> lv = LifecycleGate(looks=20).nominal_levels()
        >>> lv.shape, float(lv[0]), bool(0 < lv[1] < lv[20] < 0.003)
        ((21,), 0.0, True)
        """
        return planned_look_levels(self.alpha, self.looks, self.spending, self.spending_options)

    def levels_at(self, info: np.ndarray) -> np.ndarray:
        """Tier 2's one-sided level at the last planned look each information has reached.

        Past ``max_information`` a lesson is judged at the last look's level (a ledger
        judged once with much information is one look; a gate that keeps looking past it
        re-tests at that level, which docs/recommended.md measures); a lesson without a
        verdict stays in rotation (retired only on futility).

        Examples
        --------
        >>> g = LifecycleGate()
        >>> lv = g.levels_at(np.array([0.1, 12.5, 25.0, 40.0]))
        >>> float(lv[0]), bool(0 < lv[1] < lv[2] == lv[3])
        (0.0, True)
        """
        info = np.asarray(info, dtype=float)
        look = np.asarray(lifecycle_look(info, self.max_information, self.looks), dtype=np.int64)
        return self.nominal_levels()[look]  # look 0 (no information yet) is level 0

    def fit(self, stats: LifecycleStatistics | RidgeStatistics) -> RidgeFit:
        """Fit the debiased ridge on the statistics (the noise pooled over the ledger)."""
        ridge = stats.ridge if isinstance(stats, LifecycleStatistics) else stats
        return ridge_fit(
            ridge,
            penalty=self.penalty,
            passes=self.passes,
            suspect_z=self.suspect_z,
            min_share=self.min_share,
            group_duplicates=True,
            # a clearly helpful lesson past its last look is freed like a clear suspect:
            # shrunk, its effect is charged to the lessons that displaced it from prompts
            helpful_min_info=self.max_information,
        )

    def decide(
        self, stats: LifecycleStatistics, status: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
        """Outcome and why codes for every lesson column of ``stats`` (arrays, no report).

        ``status`` holds the status codes aligned on ``stats.ridge.fact_ids``
        (``cogstats._codes.STATUS_*``, see :func:`lifecycle_rule`); the third value
        carries the fit and the rule's statistics (``t``, ``df``, ``info``, ``estimate``,
        ``se``, ``sigma``, ``trials``, ``identifiable``, ``crater_t``, ``crater_p``,
        ``level`` and those of the rule).
        """
        if isinstance(stats, _Running):  # kept by a streaming gate (running_statistics)
            stats = stats.batch_form()
        if not isinstance(stats, LifecycleStatistics):
            raise ParameterError(
                "stats must be the gate's statistics (LifecycleGate.statistics(ledger)); "
                f"got {type(stats).__name__}"
            )
        fit = self.fit(stats)
        trials = stats.ridge.trials
        info = np.asarray(fit.info, dtype=float)
        level = self.levels_at(info)
        ct, _, cp = crater_test(stats)
        x = {
            "t": np.asarray(fit.t, dtype=float),
            "df": np.asarray(fit.df, dtype=float),
            "info": info,
            "estimate": np.asarray(fit.estimate, dtype=float),
            "se": np.asarray(fit.std_error, dtype=float),
            "sigma": np.asarray(fit.sigma, dtype=float),
            "trials": trials,
            "identifiable": np.asarray(fit.identifiable, dtype=bool),
            "crater_p": cp,
            "status": np.asarray(status, dtype=np.int64),
            "level": level,
        }
        out, why, extra = lifecycle_rule(x, rule_options(self))
        extra.update(
            t=fit.t,
            df=fit.df,
            info=info,
            estimate=fit.estimate,
            se=fit.std_error,
            sigma=fit.sigma,
            trials=trials,
            identifiable=fit.identifiable,
            crater_t=ct,
            crater_p=cp,
            level=level,
        )
        return out, why, extra

    def judge(
        self,
        stats: LifecycleStatistics,
        statuses: Mapping[str, Any] | None = None,
        candidates: Sequence[str] | None = None,
        *,
        rng: Any = None,
    ) -> GateReport:
        """Judge the candidates on the statistics (default: every lesson they hold).

        Parameters
        ----------
        stats : LifecycleStatistics
            From :meth:`statistics` (or kept by a streaming gate).
        statuses : mapping or None
            fact_id -> LessonState (its ``status``) or a status string; a lesson not in
            it is a candidate.
        candidates : sequence of str or None
            The lessons to judge, in report order.
        rng : ignored (the rule does not draw)

        Returns
        -------
        GateReport
            Columns :data:`LIFECYCLE_DECISION_COLUMNS`; ``decision`` one of
            ``cogstats._codes.OUTCOMES``.
        """
        note = None
        if isinstance(stats, _Running):  # kept by a streaming gate (running_statistics)
            note = stats.note()
            stats = stats.batch_form()
        if not isinstance(stats, LifecycleStatistics):
            raise ParameterError(
                "stats must be the gate's statistics (LifecycleGate.statistics(ledger)); "
                f"got {type(stats).__name__}"
            )
        ridge = stats.ridge
        given = check_candidates(candidates)
        ids = list(ridge.fact_ids) if given is None else given
        if statuses is not None and not isinstance(statuses, Mapping):
            raise ParameterError(
                f"statuses must be a mapping fact_id -> LessonState or None; got "
                f"{type(statuses).__name__}"
            )
        st = dict(statuses or {})
        names = [_status_of(st[f], f) if f in st else C.CANDIDATE for f in ridge.fact_ids]
        codes = np.array([_STATUS_CODE[s] for s in names], dtype=np.int64)
        out, why, x = self.decide(stats, codes)
        col = {f: i for i, f in enumerate(ridge.fact_ids)}
        rows: list[dict[str, Any]] = []
        for f in ids:
            i = col.get(f)
            status = _status_of(st[f], f) if f in st else C.CANDIDATE
            if i is None:
                inactive = status in _INACTIVE
                rows.append(
                    {
                        "fact_id": f,
                        "decision": C.HOLD,
                        "why": C.WHY_INACTIVE if inactive else C.WHY_MIN_TRIALS,
                        "trials": 0,
                        "baseline_runs": ridge.runs,
                        "status": status,
                        "status_before": status,
                    }
                )
                continue
            name, reason = C.outcome_of_code(int(out[i]))
            rows.append(
                {
                    "fact_id": f,
                    "decision": name,
                    "reason": reason,
                    "why": LIFECYCLE_WHY[int(why[i])],
                    "trials": int(x["trials"][i]),
                    "estimate": _num(x["estimate"][i]),
                    "std_error": _num(x["se"][i]),
                    "baseline_runs": int(ridge.runs - x["trials"][i]),
                    "status": C.OUTCOME_STATUS[name] or status,
                    "status_before": status,
                    "t_stat": _num(x["t"][i]),
                    "df": _num(x["df"][i]),
                    "sigma": _num(x["sigma"][i]),
                    "info": _num(x["info"][i]),
                    "margin_stat_harm": _num(x["margin_harm"][i]),
                    "margin_stat_promote": _num(x["margin_promote"][i]),
                    "margin_bound": _num(x["margin_bound"][i]),
                    "nominal_level": _num(x["level"][i]),
                    "pvalue_promote": _num(x["p_promote"][i]),
                    "pvalue_evict": _num(x["p_evict"][i]),
                    "crater_t": _num(x["crater_t"][i]),
                    "crater_pvalue": _num(x["crater_p"][i]),
                    "ci_low": _num(x["ci_low"][i]),
                    "ci_high": _num(x["ci_high"][i]),
                    "identifiable": bool(x["identifiable"][i]),
                }
            )
        settings = self.to_policy()
        if note:  # the covariate rule's fallback, as evaluate notes it
            settings["covariate_note"] = note
        return GateReport("recommended", report_frame(rows, _SCHEMA), settings)

    def evaluate(
        self,
        ledger: Ledger,
        candidates: Sequence[str] | None = None,
        *,
        rng: Any = None,
        statuses: Mapping[str, Any] | None = None,
    ) -> GateReport:
        """Judge the candidates on a ledger: ``judge(statistics(ledger), statuses, candidates)``."""
        ids = candidate_ids(ledger, candidates)
        report = self.judge(self.statistics(ledger), statuses, ids, rng=rng)
        note = self.covariate_choice(ledger).note
        if note:
            settings = {**report.settings, "covariate_note": note}
            object.__setattr__(report, "settings", MappingProxyType(settings))
        return report


_DEFAULT_COVARIATES = ("difficulty_proxy",)


@dataclass(frozen=True)
class _Running:
    """The lifecycle gate's running statistics: the first run fixes the covariate columns.

    ``add_run`` returns the statistics with one more run: :class:`LifecycleStatistics`
    (from ``empty`` on the columns the covariate rule chooses among the first run's
    covariates) and each column's range.  :meth:`batch_form` leaves out a column constant
    so far, as the batch statistics (``covariate_design``) do.
    """

    gate: LifecycleGate
    stats: LifecycleStatistics | None = None
    low: tuple[float, ...] = ()
    high: tuple[float, ...] = ()

    @property
    def covariates(self) -> tuple[str, ...] | None:
        """The covariate columns kept (None before the first run)."""
        return None if self.stats is None else tuple(self.stats.ridge.covariates)

    def add_run(
        self,
        run_id: str,
        score: float,
        fact_ids: Sequence[str],
        covariates: Mapping[str, Any] | None = None,
    ) -> _Running:
        """Return the statistics with this run added."""
        cov = dict(covariates or {})
        st = self.stats
        if st is None:
            from cogstats.covariates import choose_covariates

            have = [k for k, v in cov.items() if v is not None]
            use = choose_covariates(self.gate.covariates, have, default=_DEFAULT_COVARIATES)
            st = LifecycleStatistics.empty(use.columns)
            low = tuple(math.inf for _ in use.columns)
            high = tuple(-math.inf for _ in use.columns)
        else:
            low, high = self.low, self.high
        new = st.add_run(run_id, score, fact_ids, cov)  # refuses a missing covariate
        vals = [float(cov[c]) for c in new.ridge.covariates]
        return _Running(
            self.gate,
            new,
            tuple(min(a, v) for a, v in zip(low, vals, strict=True)),
            tuple(max(b, v) for b, v in zip(high, vals, strict=True)),
        )

    def note(self) -> str | None:
        """Return the covariate rule's note when the first run chose a fallback column."""
        cov = self.covariates
        if not cov:
            return None
        from cogstats.covariates import choose_covariates

        choice = choose_covariates(self.gate.covariates, cov, default=_DEFAULT_COVARIATES)
        return choice.note if choice.fallback else None

    def batch_form(self) -> LifecycleStatistics:
        """Return the statistics without the covariate columns constant so far."""
        st = self.stats
        if st is None:
            return LifecycleStatistics.empty()
        keep = [k for k, (a, b) in enumerate(zip(self.low, self.high, strict=True)) if b > a]
        if len(keep) == len(self.low):
            return st
        r = st.ridge
        sel = np.asarray(
            [0, *(1 + k for k in keep), *range(r.n_fixed, r.gram.shape[0])], dtype=np.int64
        )
        ridge = RidgeStatistics(
            gram=r.gram[np.ix_(sel, sel)],
            zty=r.zty[sel],
            yty=r.yty,
            runs=r.runs,
            n_fixed=1 + len(keep),
            fact_ids=r.fact_ids,
            covariates=tuple(r.covariates[k] for k in keep),
        )
        return LifecycleStatistics(ridge, st.with_ss)


def _num(v: Any) -> float | None:
    v = float(v)
    return v if math.isfinite(v) else None
