"""The recommended gate: debiased ridge on every co-injected lesson, spent over trials.

:class:`RecommendedGate` is the gate half of the ``recommended`` preset
(:func:`cogstats.recommended`; docs/gates.md, "The recommended preset"): after every run
it regresses the score on every lesson the ledger holds and on a difficulty covariate when
the ledger has one, with each lesson's own coefficient free and the others shrunk
(:mod:`cogstats.estimators.debiased_ridge`), and decides on the t statistic with a
group-sequential boundary spent over the lesson's trials.

What it assumes, and what it does without:

- nothing about the score noise: the residual variance is estimated from the ledger and
  the t reference carries its degrees of freedom (a noise level known from earlier
  ledgers can be given, ``noise_prior_sd`` with ``noise_prior_runs``; it decides sooner in
  a young ledger);
- a difficulty proxy (``covariates``, default ``("difficulty_proxy",)``) is used when the
  ledger has the column; with the default and no proxy, a ``difficulty`` column is used
  instead (the one covariate rule, :func:`cogstats.covariates.choose_covariates`, as
  ``cogstats gate`` uses it; the report's settings say so under ``covariate_note``);
  ``true_difficulty`` (the simulator's truth) is never chosen;
- inclusion that varies from run to run (the preset's retrieval randomizes it); a lesson
  in every run, or sharing its inclusion pattern with another lesson, is held as not
  identifiable;
- error control per lesson and side: a lesson with no effect is promoted or evicted as
  harmful with probability at most about ``alpha`` over its life when the gate looks
  after every run.  The error is spent (Hwang-Shih-DeCani by default) over the lesson's
  *information*, the precision the data give its effect after the other lessons
  (``info``, in runs: ``n m / (n + m)`` for a lone lesson with ``n`` runs with it and
  ``m`` without), up to ``max_information`` (default 25: 50 trials against 50 runs
  without, 100 runs at inclusion 1/2).  The boundary is that of ``looks`` planned looks
  evenly spaced in information (default 100); at each evaluation a lesson is judged at
  the last planned look its information has reached, the z boundary converted to the t
  reference at its degrees of freedom.  Looks follow information rather than runs, so a
  lesson tried in every other run and one whose trials come fast (a suspect, with many
  runs without it) are each judged on the evidence they have; a run that adds little
  information adds little of a look.  Undecided once its information reaches
  ``max_information`` (or at ``max_trials`` trials when that cap is set), a lesson is
  evicted as no_lift.

Cost per evaluation: the statistics O(runs x (lessons-per-run + covariates)^2) and, per
pass, an O(p^3) inverse with ``p`` = 1 + covariate columns + lessons.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl
from scipy import special

from cogstats import _codes as C
from cogstats._codes import HARMFUL, NO_LIFT
from cogstats._validation import ParameterError, check_int, check_probability, check_real
from cogstats.covariates import DIFFICULTY_COLUMNS, CovariateChoice, choose_covariates
from cogstats.estimators.debiased_ridge import (
    RidgeFit,
    RidgeStatistics,
    check_options,
    ridge_fit,
    ridge_statistics,
)
from cogstats.estimators.spending import SPENDING, planned_look_levels
from cogstats.gates._registry import register_gate
from cogstats.gates._report import (
    REPORT_COLUMNS,
    GateReport,
    candidate_ids,
    report_schema,
)
from cogstats.ledger import Ledger
from cogstats.numerics import where

if TYPE_CHECKING:
    from cogstats.stats import RegressionStats, StreamingStats

__all__ = [
    "RECOMMENDED_DECISION_COLUMNS",
    "RecommendedGate",
    "information_look",
    "ridge_outcome",
]

_OWN_SCHEMA = {
    "t_stat": pl.Float64,
    "df": pl.Float64,
    "nominal_level": pl.Float64,
    "boundary": pl.Float64,
    "pvalue_promote": pl.Float64,
    "pvalue_evict": pl.Float64,
    "identifiable": pl.Boolean,
}
_SCHEMA = report_schema(_OWN_SCHEMA)

#: Columns of a recommended gate report: :data:`~cogstats.gates.REPORT_COLUMNS`, then
#: ``t_stat`` (estimate / std_error), ``df`` (of the t reference), ``nominal_level`` (the
#: one-sided level spent at the lesson's trial count), ``boundary`` (the t value it
#: needs), ``pvalue_promote``/``pvalue_evict`` (one-sided t p-values of effect <= 0 and
#: effect >= 0) and ``identifiable``.
RECOMMENDED_DECISION_COLUMNS: tuple[str, ...] = (*REPORT_COLUMNS, *_OWN_SCHEMA)


@register_gate(
    "recommended_v1",
    description="the first recommended gate: debiased ridge on every co-injected lesson, "
    "error spent over trials (the recommended gate is the lifecycle gate now)",
    kernel="cogstats.sim._kernel_recommended",
)
@dataclass(frozen=True)
class RecommendedGate:
    """Promote or evict on a debiased ridge regression, with error spent over trials.

    Parameters
    ----------
    covariates : tuple of str
        Ledger covariates to adjust for, each used when the ledger has it (default: the
        difficulty proxy, ``difficulty_proxy``; with the default, a ledger without it but
        with a ``difficulty`` column is adjusted for that, noted in the report's settings
        as ``covariate_note``; ``()``: none).
    penalty : float
        Ridge penalty on the other lessons' coefficients, in pseudo-runs (> 0).
    passes : int
        Passes of the estimator (default 4: after each, lessons shown clearly harmful are
        left unpenalized in the next, so their effect is not shared out among the lessons
        beside them).
    suspect_z : float
        The first pass's t below which a lesson is left unpenalized.
    min_share : float
        Share of a lesson's own information that must remain after the others for it to
        be left unpenalized.
    alpha : float
        One-sided error per side over a lesson's life (< 0.5).
    spending : str
        Spending function (``cogstats.estimators.SPENDING``), default "hsd".
    spending_options : mapping
        Its options (default ``{"gamma": -2.0}``: between O'Brien-Fleming and linear
        spending; see docs/gates.md for how it was chosen).
    min_trials : int
        Trials a lesson needs before it can be decided (>= 2).
    max_trials : int or None
        Optional cap: an undecided lesson with this many trials is evicted as no_lift.
    max_information : float
        The information (runs) over which the error is spent (default 25); a lesson
        undecided once it has this much is evicted as no_lift.
    looks : int
        Planned looks, evenly spaced in information up to ``max_information`` (default
        100).
    noise_prior_sd, noise_prior_runs : float
        Optional: a score noise level known from earlier ledgers and its weight in runs.

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
    >>> report = RecommendedGate().evaluate(ledger)
    >>> report.evicted, report.decision("a")["why"]
    (('P',), 'insufficient_evidence')
    """

    covariates: tuple[str, ...] = ("difficulty_proxy",)
    penalty: float = 40.0
    passes: int = 4
    suspect_z: float = 2.5
    min_share: float = 0.3
    alpha: float = 0.004
    spending: str = "hsd"
    spending_options: Mapping[str, Any] = field(default_factory=lambda: {"gamma": -2.0})
    min_trials: int = 3
    max_trials: int | None = None
    max_information: float = 25.0
    looks: int = 100
    noise_prior_sd: float | None = None
    noise_prior_runs: float = 0.0

    def __post_init__(self) -> None:
        """Validate every option once."""
        set_ = object.__setattr__
        cov = self.covariates
        if isinstance(cov, str) or not all(isinstance(c, str) and c for c in cov):
            raise ParameterError(
                f"covariates must be a list of ledger column names; got {self.covariates!r}"
            )
        set_(self, "covariates", tuple(cov))
        opts = check_options(
            self.penalty,
            self.passes,
            self.suspect_z,
            self.min_share,
            self.noise_prior_sd,
            self.noise_prior_runs,
        )
        for k, v in opts.items():
            set_(self, k, v)
        set_(self, "alpha", check_probability("alpha", self.alpha))
        if not 0 < self.alpha < 0.5:
            raise ParameterError(f"alpha must be in (0, 0.5) (a per-side error); got {self.alpha}")
        set_(self, "min_trials", check_int("min_trials", self.min_trials, minimum=2))
        set_(self, "max_trials", check_int("max_trials", self.max_trials, minimum=2, optional=True))
        if self.max_trials is not None and self.max_trials < self.min_trials:
            raise ParameterError(
                f"max_trials must be >= min_trials ({self.min_trials}); got {self.max_trials}"
            )
        info = check_real("max_information", self.max_information, minimum=0.0)
        if info is None or not info > 0:
            raise ParameterError(
                f"max_information must be > 0 (runs of information); got {self.max_information!r}"
            )
        set_(self, "max_information", float(info))
        set_(self, "looks", check_int("looks", self.looks, minimum=1))
        if not isinstance(self.spending, str):
            raise ParameterError(
                f"spending must be a spending function name; got {self.spending!r}"
            )
        SPENDING.make(self.spending, **dict(self.spending_options or {}))  # validates both
        set_(self, "spending_options", MappingProxyType(dict(self.spending_options or {})))

    def to_policy(self) -> dict[str, Any]:
        """Return the gate's options as a plain dict (round-trips through the constructor)."""
        return {
            "covariates": list(self.covariates),
            "penalty": self.penalty,
            "passes": self.passes,
            "suspect_z": self.suspect_z,
            "min_share": self.min_share,
            "alpha": self.alpha,
            "spending": self.spending,
            "spending_options": dict(self.spending_options),
            "min_trials": self.min_trials,
            "max_trials": self.max_trials,
            "max_information": self.max_information,
            "looks": self.looks,
            "noise_prior_sd": self.noise_prior_sd,
            "noise_prior_runs": self.noise_prior_runs,
        }

    def nominal_levels(self) -> np.ndarray:
        """Return the one-sided level spent at each planned look 1 .. ``looks``.

        Look ``k`` is reached at information ``k / looks * max_information``; index 0
        (before the first look) is 0.

        Examples
        --------
        >>> lv = RecommendedGate(looks=20).nominal_levels()
        >>> lv.shape, float(lv[0]), bool(0 < lv[1] < lv[20] < 0.004)
        ((21,), 0.0, True)
        """
        return planned_look_levels(self.alpha, self.looks, self.spending, self.spending_options)

    def look(self, info: float) -> int:
        """Return the last planned look that ``info`` runs of information have reached.

        Examples
        --------
        >>> g = RecommendedGate()
        >>> g.look(0.2), g.look(2.5), g.look(100.0)
        (0, 10, 100)
        """
        return int(information_look(info, self.max_information, self.looks))

    def covariate_choice(self, ledger: Ledger | Any) -> CovariateChoice:
        """Return the covariates adjusted for on ``ledger`` and the note for the user.

        The one covariate rule (:func:`cogstats.covariates.choose_covariates`): the
        gate's covariates the ledger has; with the default (``("difficulty_proxy",)``)
        and none of them, the ledger's ``difficulty`` column (the report's settings say
        so under ``covariate_note``); nothing otherwise (with a note naming a
        difficulty-like column left unused).  ``true_difficulty`` is never chosen.
        ``ledger`` may be running statistics (anything with ``covariates``).

        Examples
        --------
        >>> from cogstats import Ledger
        >>> ledger = Ledger.from_records([{"run_id": "r1", "score": 0.5, "difficulty": 0.1}])
        >>> RecommendedGate().covariate_choice(ledger).columns
        ('difficulty',)
        >>> RecommendedGate(covariates=()).covariate_choice(ledger).columns
        ()
        >>> RecommendedGate(covariates=("d",)).covariate_choice(Ledger()).columns  # no run yet
        ()
        """
        runs = len(ledger) if isinstance(ledger, Ledger) else getattr(ledger, "n_runs", None)
        if runs == 0:  # no run yet: nothing to adjust for, and no column is missing yet
            return CovariateChoice(())
        return choose_covariates(self.covariates, ledger.covariates, default=_DEFAULT_COVARIATES)

    def covariates_in(self, ledger: Ledger) -> tuple[str, ...]:
        """Return the covariates the gate adjusts for on ``ledger`` (:meth:`covariate_choice`)."""
        return tuple(self.covariate_choice(ledger).columns)

    def _tracked(self) -> tuple[str, ...]:
        """Return the covariates running statistics keep (those the rule may choose)."""
        cov = tuple(self.covariates)
        if cov == _DEFAULT_COVARIATES:
            return tuple(dict.fromkeys((*cov, *DIFFICULTY_COLUMNS)))
        return cov

    def fit(self, stats: RidgeStatistics) -> RidgeFit:
        """Fit the debiased ridge on sufficient statistics (a streaming gate keeps them)."""
        return ridge_fit(
            stats,
            penalty=self.penalty,
            passes=self.passes,
            suspect_z=self.suspect_z,
            min_share=self.min_share,
            noise_prior_sd=self.noise_prior_sd,
            noise_prior_runs=self.noise_prior_runs,
        )

    # -------------------------------------------------------------- the protocol
    def statistics(self, ledger: Ledger) -> Ledger:
        """Return the gate's statistics of ``ledger``: the ledger itself.

        The ridge's sufficient statistics depend on which covariates the ledger has
        (:meth:`covariate_choice`), so :meth:`judge` builds them from the ledger; the
        running form, updated run by run, is :meth:`running_statistics`.
        """
        if not isinstance(ledger, Ledger):
            raise ParameterError(f"ledger must be a cogstats Ledger; got {type(ledger).__name__}")
        return ledger

    def running_statistics(self) -> StreamingStats:
        """Return empty running statistics (``X'X``, ``X'y``, ``y'y`` over covariates and lessons).

        They carry every covariate the rule may choose (with the default: the
        ``difficulty_proxy`` and ``difficulty`` columns); :meth:`judge` keeps the chosen
        ones, so a :class:`~cogstats.gates.StreamingGate` judges as :meth:`evaluate` does
        on the ledger so far (to rounding of the running sums: within 1e-12).

        Examples
        --------
        >>> from cogstats.gates import StreamingGate
        >>> sg = StreamingGate(RecommendedGate())
        >>> _ = sg.record("r1", 0.5, ["a"])
        >>> sg.report().decision("a")["why"]
        'min_trials'
        """
        from cogstats.stats import StreamingStats

        return StreamingStats(self._tracked())

    def check_run(self, stats: StreamingStats, covariates: Mapping[str, Any]) -> None:
        """Refuse a run (``LedgerError``) that the batch gate would refuse in the ledger.

        A covariate the gate adjusts for must be in every run or in none (one the ledger
        has nowhere is skipped, as :meth:`evaluate` skips it), and a number, string or
        boolean.  The covariates checked are those the rule chooses once the run is
        added.
        """
        from cogstats._validation import LedgerError

        seen = set(stats.covariates)
        have = [*stats.covariates, *(k for k, v in covariates.items() if v is not None)]
        for name in choose_covariates(self.covariates, have, default=_DEFAULT_COVARIATES).columns:
            value = covariates.get(name)
            present = value is not None
            if stats.n_runs and present != (name in seen):
                raise LedgerError(
                    f"covariate {name!r} must be in every run or in none (the gate "
                    f"adjusts for it where the ledger has it); got {value!r}",
                    field=name,
                )
            if isinstance(value, list):
                raise LedgerError("a covariate must be a number, string or boolean", field=name)

    def judge(
        self,
        stats: Ledger | StreamingStats,
        statuses: Mapping[str, Any] | None = None,
        candidates: Sequence[str] | None = None,
        *,
        rng: Any = None,
    ) -> GateReport:
        """Judge the candidates on the statistics (default: every lesson they hold).

        Parameters
        ----------
        stats : Ledger or StreamingStats
            From :meth:`statistics` (the ledger) or :meth:`running_statistics` (kept by
            a streaming gate).
        statuses : mapping or None
            Ignored: the rule judges every candidate alike (promote / evict / hold).
        candidates : sequence of str or None
            The lessons to judge, in report order.
        rng : ignored (the rule does not draw)

        Returns
        -------
        GateReport
            Columns :data:`RECOMMENDED_DECISION_COLUMNS`.
        """
        if not isinstance(stats, Ledger) and not callable(getattr(stats, "regression", None)):
            raise ParameterError(
                "stats must be the gate's statistics (a Ledger, RecommendedGate.statistics"
                f"(ledger), or RecommendedGate.running_statistics()); got {type(stats).__name__}"
            )
        choice = self.covariate_choice(stats)
        if isinstance(stats, Ledger):
            ids = candidate_ids(stats, candidates)
            report = self.report(ridge_statistics(stats, tuple(choice.columns)), ids)
        else:
            ids = list(stats.fact_ids if candidates is None else candidates)
            report = self.report(_ridge_of(stats.regression(), choice.columns), ids)
        if choice.note:
            settings = {**report.settings, "covariate_note": choice.note}
            object.__setattr__(report, "settings", MappingProxyType(settings))
        return report

    def evaluate(
        self,
        ledger: Ledger,
        candidates: Sequence[str] | None = None,
        *,
        rng: Any = None,
        statuses: Mapping[str, Any] | None = None,
    ) -> GateReport:
        """Judge the candidates (default: every lesson in the ledger).

        ``judge(statistics(ledger), statuses, candidates)``.

        Returns
        -------
        GateReport
            Columns :data:`RECOMMENDED_DECISION_COLUMNS`; ``settings`` has a
            ``covariate_note`` when the covariate rule fell back to another column or
            left a difficulty-like one unused (:meth:`covariate_choice`).
        """
        return self.judge(self.statistics(ledger), statuses, candidates, rng=rng)

    def report(self, stats: RidgeStatistics, ids: Sequence[str]) -> GateReport:
        """Judge ``ids`` on sufficient statistics (see :meth:`evaluate`), vectorised.

        The rule is the module's plain functions (:func:`information_look`,
        :func:`ridge_outcome`) on the debiased ridge's fit, which the simulator's kernel
        compiles; this runner's own are the t tail and quantile (scipy).
        """
        fit = self.fit(stats)
        levels = self.nominal_levels()
        k = len(ids)
        pos = _positions(ids, stats.fact_ids)
        known = pos >= 0
        at = np.where(known, pos, 0)

        def pick(values: np.ndarray, fill: Any) -> np.ndarray:
            values = np.asarray(values)
            if values.size == 0:
                return np.full(k, fill, dtype=np.result_type(values.dtype, type(fill)))
            return np.where(known, values[at], fill)

        n = pick(stats.trials, 0).astype(np.int64)
        ident = pick(fit.identifiable, False).astype(bool)
        t = pick(fit.t, np.nan).astype(float)
        info = pick(fit.info, np.nan).astype(float)
        df = pick(fit.df, np.nan).astype(float)
        est = pick(fit.estimate, np.nan).astype(float)
        se = pick(fit.std_error, np.nan).astype(float)
        look = information_look(info, self.max_information, self.looks).astype(np.int64)
        level = levels[look]
        with np.errstate(invalid="ignore"):
            up = special.stdtr(df, -t)
            down = special.stdtr(df, t)
            boundary = special.stdtrit(df, 1.0 - level)
        max_trials = self.max_trials or 0
        enough = known & (n >= self.min_trials)
        code = ridge_outcome(
            n, enough & ident, t, up, down, level, look, self.looks, self.min_trials, max_trials
        )
        tested = enough & ident & np.isfinite(t)
        why = np.full(k, C.WHY_MIN_TRIALS, dtype=object)
        why[enough] = C.WHY_NOT_IDENTIFIABLE
        why[enough & ident] = C.WHY_NO_ESTIMATE
        why[tested] = C.WHY_INSUFFICIENT_EVIDENCE
        why[code == C.OUTCOME_PROMOTE] = C.WHY_PROMOTE_EVIDENCE
        why[code == C.OUTCOME_EVICT_HARMFUL] = C.WHY_HARM_EVIDENCE
        no_lift = code == C.OUTCOME_EVICT_NO_LIFT
        why[no_lift] = np.where(look >= self.looks, C.WHY_MAX_LOOKS, C.WHY_MAX_TRIALS)[no_lift]

        def floats(name: str, values: np.ndarray, keep: np.ndarray) -> pl.Series:
            series = pl.Series(name, values, dtype=pl.Float64)
            drop = np.flatnonzero(~keep)
            return series.scatter(drop, None) if drop.size else series

        ident_col = pl.Series("identifiable", ident, dtype=pl.Boolean)
        if (~enough).any():
            ident_col = ident_col.scatter(np.flatnonzero(~enough), None)
        data = {
            "fact_id": pl.Series("fact_id", list(ids), dtype=pl.String),
            "decision": pl.Series("decision", _DECISION_NAMES[code].tolist(), dtype=pl.String),
            "reason": pl.Series("reason", _REASON_NAMES[code].tolist(), dtype=pl.String),
            "why": pl.Series("why", why.tolist(), dtype=pl.String),
            "trials": pl.Series("trials", n, dtype=pl.Int64),
            "estimate": floats("estimate", est, tested),
            "std_error": floats("std_error", se, tested),
            "baseline_runs": pl.Series("baseline_runs", stats.runs - n, dtype=pl.Int64),
            "t_stat": floats("t_stat", t, tested),
            "df": floats("df", df, tested),
            "nominal_level": floats("nominal_level", level, tested),
            "boundary": floats("boundary", boundary, tested & (level > 0)),
            "pvalue_promote": floats("pvalue_promote", up, tested),
            "pvalue_evict": floats("pvalue_evict", down, tested),
            "identifiable": ident_col,
        }
        frame = pl.DataFrame([data[c] for c in _SCHEMA])
        return GateReport("recommended_v1", frame, self.to_policy())


# ---------------------------------------------------------------------- the rule, written once
# Plain functions of numbers or numpy arrays (elementwise): the gate calls them on every
# candidate at once, and the simulator's kernel (cogstats.sim._kernel_recommended) compiles
# the very same functions and calls them lesson by lesson.  Outcome codes are
# cogstats._codes.OUTCOME_CODES.


def information_look(info: Any, max_information: float, looks: int) -> Any:
    """Return the last planned look that ``info`` runs of information have reached.

    Looks are evenly spaced in information up to ``max_information``: look
    ``floor(info / max_information * looks)``, at most ``looks``; 0 where ``info`` is not
    positive (or NaN).  Floats (numbers or arrays), whole numbers.

    Examples
    --------
    >>> information_look(np.array([0.2, 2.5, 100.0, np.nan]), 25.0, 100).tolist()
    [0.0, 10.0, 100.0, 0.0]
    """
    pos = info > 0.0
    return where(
        pos, np.minimum(np.floor(where(pos, info, 0.0) / max_information * looks), looks), 0.0
    )


def ridge_outcome(
    n: Any,
    judged: Any,
    t: Any,
    p_promote: Any,
    p_evict: Any,
    level: Any,
    look: Any,
    looks: int,
    min_trials: int,
    max_trials: int,
) -> Any:
    """Return the recommended gate's outcome code per lesson.

    A lesson is decided when ``judged`` (known to the fit and identifiable) with ``n >=
    min_trials`` trials and a finite t: promoted when its one-sided p-value of effect <= 0
    is at most the level spent at its look (``level > 0``), evicted as harmful on the
    other side; undecided at its last look (``look >= looks``) or at ``max_trials``
    trials (0: no cap), evicted as no_lift.  Codes: :data:`cogstats._codes.OUTCOME_CODES`.

    Examples
    --------
    >>> ridge_outcome(np.array([5, 5, 5, 5]), np.ones(4, bool), np.array([4.0, -4.0, 0.1, 0.1]),
    ...               np.array([1e-4, 0.99, 0.4, 0.4]), np.array([0.99, 1e-4, 0.6, 0.6]),
    ...               0.001, np.array([10, 10, 10, 100]), 100, 3, 0).tolist()
    [1, 2, 0, 3]
    """
    ready = judged & (n >= min_trials) & np.isfinite(t)
    spent = level > 0.0
    promote = ready & spent & (p_promote <= level)
    harmful = ready & np.logical_not(promote) & spent & (p_evict <= level)
    stop = (look >= looks) | ((max_trials > 0) & (n >= max_trials))
    no_lift = ready & np.logical_not(promote | harmful) & stop
    return (
        promote * C.OUTCOME_PROMOTE
        + harmful * C.OUTCOME_EVICT_HARMFUL
        + no_lift * C.OUTCOME_EVICT_NO_LIFT
    )


_DECISION_NAMES = np.array([C.HOLD, C.PROMOTE, C.EVICT, C.EVICT], dtype=object)
_REASON_NAMES = np.array([None, None, HARMFUL, NO_LIFT], dtype=object)


def _positions(ids: Sequence[str], fact_ids: Sequence[str]) -> np.ndarray:
    """Return each id's column among ``fact_ids`` (-1: not there), without a Python loop."""
    left = pl.DataFrame({"fact_id": list(ids)}, schema={"fact_id": pl.String})
    right = pl.DataFrame(
        {"fact_id": list(fact_ids), "col": np.arange(len(fact_ids), dtype=np.int64)},
        schema={"fact_id": pl.String, "col": pl.Int64},
    ).unique("fact_id", keep="first", maintain_order=True)
    joined = left.join(right, on="fact_id", how="left", maintain_order="left")
    return joined["col"].fill_null(-1).to_numpy().astype(np.int64)


_DEFAULT_COVARIATES = ("difficulty_proxy",)


def _ridge_of(reg: RegressionStats, use: Sequence[str]) -> RidgeStatistics:
    """Return the ridge statistics of running cross-products, on the chosen covariates only.

    ``reg`` may carry more covariate columns than the rule chose on this ledger (the
    running statistics keep every candidate column); each entry of ``X'X`` is its own
    sum, so the block of the chosen columns is what statistics of those alone hold.
    """
    keep = set(use)
    nc = int(reg.n_controls)
    controls = [1 + k for k in range(nc) if reg.sources[k] in keep]
    sel = np.asarray([0, *controls, *range(1 + nc, len(reg.columns))], dtype=np.int64)
    xtx = np.asarray(reg.xtx, dtype=np.float64)
    xty = np.asarray(reg.xty, dtype=np.float64)
    if sel.shape[0] != len(reg.columns):
        xtx, xty = xtx[np.ix_(sel, sel)], xty[sel]
    return RidgeStatistics(
        gram=xtx,
        zty=xty,
        yty=float(reg.yty),
        runs=int(reg.n),
        n_fixed=1 + len(controls),
        fact_ids=tuple(reg.fact_ids),
        covariates=tuple(reg.columns[c] for c in controls),
    )
