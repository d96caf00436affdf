"""Evidence gates: promote or evict lessons on the inference of any attribution method.

:class:`EvidenceGate` runs one estimator from the registry (``cogstats.estimators.METHODS``)
and turns its result into decisions with explicit error control:

- ``sequential="fixed"``: one-sided tests at level ``alpha`` per side, valid for a single
  look (a gate that looks after every run should not use it; see benchmark S4);
- ``sequential="anytime"``: the method's confidence sequence (``confseq`` or
  ``anytime_ols``), valid however often the gate looks;
- ``sequential="group"``: Lan-DeMets error spending over the looks at trial counts
  ``min_trials .. max_trials`` of a Wald-type estimate (O'Brien-Fleming by default),
  which keeps nearly the power of a single final test at ``max_trials``.

A lesson is promoted when its effect is shown to exceed ``promote_margin`` and evicted as
harmful when it is shown to be below ``-evict_margin``; lessons whose inclusion pattern
cannot be separated from another lesson's (see
:func:`cogstats.estimators.check_identifiability`) are held instead of judged.  The
stopping rules ``max_trials`` / ``max_baseline_runs`` evict undecided lessons as no_lift,
as cycgraph's gate does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import polars as pl
from scipy import special

from cogstats import _codes as C
from cogstats._codes import HARMFUL, NO_LIFT
from cogstats._validation import ParameterError, check_probability, suggest

# only the registry core here: the estimator modules (statsmodels for regression, ...) load
# when a gate uses them, so a welch/lift gate starts fast (benchmark P1)
from cogstats.estimators import attribute, get_spec
from cogstats.estimators.spending import SPENDING, spending_boundaries
from cogstats.gates._options import check_options, choice, integer, option, real
from cogstats.gates._registry import register_gate
from cogstats.gates._report import (
    REPORT_COLUMNS,
    GateReport,
    LessonState,
    candidate_ids,
    check_candidates,
    check_statuses,
    report_schema,
)
from cogstats.gates.evidence.rule import evidence_outcome, group_sides, side_alpha
from cogstats.ledger import Ledger
from cogstats.stats.running_evidence import (
    RUNNING_METHODS,
    SLACK,
    EstimateBounds,
    running_confseq,
    running_identifiability,
    running_lift_welch,
    running_ols,
)

if TYPE_CHECKING:
    from cogstats.estimators import Attribution
    from cogstats.stats import StreamingStats

__all__ = ["EVIDENCE_DECISION_COLUMNS", "EvidenceGate"]

_OWN_SCHEMA = {
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
    "pvalue_promote": pl.Float64,
    "pvalue_evict": pl.Float64,
    "boundary": pl.Float64,
    "identifiable": pl.Boolean,
}
_SCHEMA = report_schema(_OWN_SCHEMA)

#: Columns of an evidence gate report, in order: :data:`~cogstats.gates.REPORT_COLUMNS`,
#: then ``ci_low``, ``ci_high`` (the interval at the gate's level), ``pvalue_promote``,
#: ``pvalue_evict`` (one-sided p-values of the margin hypotheses), ``boundary`` (the
#: group-sequential z boundary at the lesson's trials) and ``identifiable``.
EVIDENCE_DECISION_COLUMNS: tuple[str, ...] = (*REPORT_COLUMNS, *_OWN_SCHEMA)


def _side_error(name: str, value: Any) -> float:
    """Check a per-side error rate in (0, 0.5)."""
    v = check_probability(name, value)
    if v >= 0.5:
        raise ParameterError(f"{name} must be < 0.5 (a per-side error rate); got {v}")
    return v


def _boolean(name: str, value: Any) -> bool:
    """Check True or False."""
    if not isinstance(value, bool):
        raise ParameterError(f"{name} must be True or False; got {value!r}")
    return value


@register_gate(
    "evidence",
    description="promote/evict on any estimator's inference, with error control",
    kernel="cogstats.gates.evidence.kernel",
)
@dataclass(frozen=True)
class EvidenceGate:
    """Decide on lessons from any registered attribution method, with error control.

    Parameters
    ----------
    method : str
        An estimator in ``cogstats.estimators.METHODS`` (default ``"welch"``).
    options : mapping
        Options for the estimator (``confidence_level`` is set by the gate).
    alpha : float
        Error rate per side: the chance of promoting a lesson whose effect is at most
        ``promote_margin`` (or evicting one whose effect is at least ``-evict_margin``).
    promote_margin, evict_margin : float
        Practical-significance floors (>= 0).
    min_trials : int
        Runs with the lesson before it is judged (>= 1).
    max_trials, max_baseline_runs : int or None
        Stopping rules: an undecided lesson with this many trials (or baseline runs) is
        evicted as no_lift.  ``sequential="group"`` plans its looks up to ``max_trials``.
    multiplicity : {"none", "bonferroni", "holm", "bh", "by"}
        Control across the lessons judged in one pass.  With ``"anytime"`` and
        ``"group"`` only none and bonferroni apply.
    sequential : {"fixed", "anytime", "group"}
        See the module docstring.
    spending : str
        Spending function for ``sequential="group"``, a name in
        ``cogstats.estimators.SPENDING`` ("obrien_fleming", "pocock", "hsd").
    spending_options : mapping
        Options of the spending function (e.g. ``{"gamma": -2}`` for "hsd").
    hold_unidentifiable : bool
        Hold lessons that are not separately identifiable (default True).

    Examples
    --------
    >>> import numpy as np
    >>> from cogstats import Ledger
    >>> from cogstats.gates import EvidenceGate
    >>> rng = np.random.default_rng(4)
    >>> x = rng.random((80, 2)) < 0.5
    >>> y = np.clip(0.5 + 0.2 * x[:, 0] - 0.2 * x[:, 1] + rng.normal(0, 0.05, 80), 0, 1)
    >>> ledger = Ledger.from_records(
    ...     {"run_id": f"r{i}", "score": float(y[i]),
    ...      "fact_ids": [f for f, on in zip(["good", "bad"], x[i]) if on]}
    ...     for i in range(80))
    >>> report = EvidenceGate(method="ols", alpha=0.01).evaluate(ledger)
    >>> report.promoted, report.evicted
    (('good',), ('bad',))
    """

    method: str = "welch"
    options: Mapping[str, Any] = field(default_factory=dict)
    alpha: float = option(0.05, _side_error)
    promote_margin: float = option(0.0, real(minimum=0))
    evict_margin: float = option(0.0, real(minimum=0))
    min_trials: int = option(3, integer(minimum=1))
    max_trials: int | None = option(None, integer(minimum=1, optional=True))
    max_baseline_runs: int | None = option(None, integer(minimum=2, optional=True))
    multiplicity: Literal["none", "bonferroni", "holm", "bh", "by"] = option("none", choice())
    sequential: Literal["fixed", "anytime", "group"] = option("fixed", choice())
    spending: str = "obrien_fleming"
    spending_options: Mapping[str, Any] = field(default_factory=dict)
    hold_unidentifiable: bool = option(True, _boolean)

    def __post_init__(self) -> None:
        """Validate the settings and fill in the method's options."""
        set_ = object.__setattr__
        spec = get_spec(self.method)
        opts = dict(self.options or {})
        for key in opts:
            if key == "confidence_level":
                raise ParameterError(
                    "options must not set confidence_level: the gate derives it from alpha"
                )
            if key not in spec.defaults:
                raise ParameterError(
                    f"unknown option {key!r} for method {self.method!r}"
                    f"{suggest(key, spec.defaults)}; allowed: {sorted(spec.defaults)}"
                )
        set_(self, "options", MappingProxyType(opts))
        check_options(self)
        if not isinstance(self.spending, str):
            raise ParameterError(
                f"spending must be a spending function name; got {self.spending!r}"
            )
        SPENDING.make(self.spending, **dict(self.spending_options or {}))  # validates both
        set_(self, "spending_options", MappingProxyType(dict(self.spending_options or {})))
        if self.max_trials is not None and self.max_trials < self.min_trials:
            raise ParameterError(
                f"max_trials must be >= min_trials ({self.min_trials}); got {self.max_trials}"
            )
        if self.sequential == "anytime" and not spec.conservative:
            from cogstats.estimators import METHODS  # the complete registry

            anytime = sorted(m for m, s in METHODS.items() if s.conservative)
            raise ParameterError(
                f"sequential='anytime' needs an anytime-valid method, one of {anytime}; "
                f"got method {self.method!r}"
            )
        if self.sequential == "group" and self.max_trials is None:
            raise ParameterError("sequential='group' plans its looks up to max_trials; set it")
        if self.sequential != "fixed" and self.multiplicity not in ("none", "bonferroni"):
            raise ParameterError(
                f"multiplicity must be 'none' or 'bonferroni' with sequential="
                f"{self.sequential!r}; got {self.multiplicity!r}"
            )

    def to_policy(self) -> dict[str, Any]:
        """Return the gate's settings as a plain dict (round-trips through the constructor)."""
        return {
            "method": self.method,
            "options": dict(self.options),
            "alpha": self.alpha,
            "promote_margin": self.promote_margin,
            "evict_margin": self.evict_margin,
            "min_trials": self.min_trials,
            "max_trials": self.max_trials,
            "max_baseline_runs": self.max_baseline_runs,
            "multiplicity": self.multiplicity,
            "sequential": self.sequential,
            "spending": self.spending,
            "spending_options": dict(self.spending_options),
            "hold_unidentifiable": self.hold_unidentifiable,
        }

    # ------------------------------------------------------------------ evaluation
    def evaluate(
        self,
        ledger: Ledger,
        candidates: Sequence[str] | None = None,
        *,
        rng: Any = None,
        statuses: Mapping[str, LessonState] | None = None,
    ) -> GateReport:
        """Judge the candidates against the ledger.

        Parameters
        ----------
        ledger : Ledger
            Run outcomes (with whatever covariates/propensities the method needs).
        candidates : sequence of str, optional
            Lessons to judge (default: every lesson in the ledger).
        rng : seed or Generator, optional
            For methods that draw (permutation, cross-fitting).

        Returns
        -------
        GateReport
            Columns :data:`EVIDENCE_DECISION_COLUMNS`; ``estimate``/``std_error`` are the
            method's, ``pvalue_promote``/``pvalue_evict`` the one-sided p-values of the
            margin hypotheses where the method gives them.
        """
        return self.judge(self.statistics(ledger), statuses, candidates, rng=rng)

    # ------------------------------------------------------------------ the protocol
    def statistics(self, ledger: Ledger) -> Ledger:
        """Return the gate's statistics of ``ledger``: the ledger itself.

        Every estimator in the registry reads a ledger; :meth:`running_statistics` is the
        running form that ``lift``, ``welch``, ``ols`` (classical covariance) and
        ``confseq`` can judge from.  :meth:`judge` takes either.
        """
        if not isinstance(ledger, Ledger):
            raise ParameterError(f"ledger must be a cogstats Ledger; got {type(ledger).__name__}")
        return ledger

    def running_statistics(self) -> StreamingStats:
        """Return empty running statistics that this gate judges from, updated run by run.

        ``ols`` keeps ``X'X``, ``X'y``, ``y'y`` over its covariates and the lessons; a gate
        that holds unidentifiable lessons keeps them over the lessons; ``confseq`` keeps
        its running sums.

        Raises
        ------
        ParameterError
            For a method (or ``ols`` setting) that running sums cannot give.

        Examples
        --------
        >>> gate = EvidenceGate(method="welch", min_trials=2)
        >>> stats = gate.running_statistics()
        >>> for i in range(8):
        ...     stats.add_run(f"r{i}", 0.9 if i % 2 else 0.3, ["a"] if i % 2 else [])
        >>> gate.judge(stats).promoted
        ('a',)
        """
        from cogstats.stats import StreamingStats

        method = self.method
        if method not in RUNNING_METHODS:
            raise ParameterError(
                f"StreamingGate streams EvidenceGate with method in {list(RUNNING_METHODS)} "
                f"(ols with options={{'cov': 'nonrobust'}}); got method {method!r}"
            )
        opts = dict(self.options)
        covariates: tuple[str, ...] | None = None
        if method == "ols":
            cov = opts.get("cov", "HC3")
            if cov != "nonrobust":
                raise ParameterError(
                    "StreamingGate streams method 'ols' with the classical covariance only, "
                    "which running sums give (X'X, X'y, y'y): set options={'cov': "
                    f"'nonrobust', ...}}; got cov={cov!r}"
                    + (" (the default)" if "cov" not in opts else "")
                )
            if opts.get("cluster") is not None:
                raise ParameterError(
                    "StreamingGate streams method 'ols' without clusters; got "
                    f"cluster={opts['cluster']!r}"
                )
            covs = opts.get("covariates", ())
            if isinstance(covs, str) or not isinstance(covs, Sequence):
                raise ParameterError(
                    "options covariates must be a tuple of covariate names, e.g. "
                    f"('difficulty_proxy',); got {covs!r}"
                )
            for name in covs:
                if name in ("eligible_ids", "propensities"):
                    raise ParameterError(
                        f"covariates: {name!r} holds logged propensities (lists), not a "
                        "covariate a regression can adjust for"
                    )
            covariates = tuple(covs)
        elif self.hold_unidentifiable:
            covariates = ()
        return StreamingStats(covariates, confseq=method == "confseq")

    def judge(
        self,
        stats: Ledger | StreamingStats,
        statuses: Mapping[str, LessonState] | None = None,
        candidates: Sequence[str] | None = None,
        *,
        rng: Any = None,
    ) -> GateReport:
        """Decide on ``candidates`` from the statistics: a :class:`~cogstats.gates.GateReport`.

        Parameters
        ----------
        stats : Ledger or StreamingStats
            :meth:`statistics` (a ledger: any method) or :meth:`running_statistics`
            updated run by run (the report is the batch's: decisions identical, evidence
            to 1e-9; a near tie is recomputed from the runs).
        statuses : mapping of str to LessonState, optional
            The candidates' store statuses (today's rule does not depend on them).
        candidates : sequence of str, optional
            Default: every lesson in the runs, in order of first appearance.
        rng : seed or Generator, optional
            For methods that draw (permutation, cross-fitting).
        """
        check_statuses(statuses)
        if not isinstance(stats, Ledger):
            return _judge_running(self, stats, candidates)
        ledger = stats
        ids = candidate_ids(ledger, candidates)
        trials = _aligned(ids, ledger.fact_stats(), ("trials",))["trials"]
        n = trials.fill_null(0).to_numpy().astype(np.int64)
        n_runs = len(ledger)
        judged = self._judged(n, n_runs)
        m = max(1, int(judged.sum()))
        result = identifiable = None
        if judged.any():
            result = attribute(
                ledger,
                self.method,
                rng=rng,
                confidence_level=self._level(m),
                **self._options(),
            )
            identifiable = self._identifiable(ledger, result)
        return self._report(ids, n, n_runs, m, result, identifiable)

    def _options(self) -> dict[str, Any]:
        """Return the method's options, for absolute effects only (no mean contrasts)."""
        own = "mean_contrasts" in get_spec(self.method).defaults
        return {**({"mean_contrasts": False} if own else {}), **dict(self.options)}

    def _judged(self, n: np.ndarray, n_runs: int) -> np.ndarray:
        """Return the lessons the estimator is asked about: ``min_trials`` trials and a baseline."""
        return (n >= self.min_trials) & (n < n_runs)

    def _level(self, m: int) -> float:
        """Two-sided confidence level whose one-sided error per side is alpha (/ m)."""
        return 1.0 - 2.0 * side_alpha(self.alpha, m, self.multiplicity == "bonferroni")

    def _report(
        self,
        ids: Sequence[str],
        n: np.ndarray,
        n_runs: int,
        m: int,
        result: Attribution | None,
        identifiable: pl.DataFrame | None,
    ) -> GateReport:
        """Decide every candidate from an attribution, vectorised (batch and running statistics).

        The rule is the module's plain functions (:func:`evidence_outcome`,
        :func:`group_sides`, :func:`side_alpha`), which the simulator's kernel compiles;
        this runner's own are the estimator's interval and p-values (scipy).
        """
        k = len(ids)
        judged = self._judged(n, n_runs)
        n_b = n_runs - n
        why = np.where(n < self.min_trials, C.WHY_MIN_TRIALS, C.WHY_NO_BASELINE).astype(object)
        nan = np.full(k, np.nan)
        cols: dict[str, Any] = {
            "estimate": nan,
            "std_error": nan,
            "ci_low": nan,
            "ci_high": nan,
            "pvalue_promote": nan,
            "pvalue_evict": nan,
            "boundary": nan,
        }
        has = np.zeros(k, dtype=bool)
        masks = {"ci_low": has, "ci_high": has, "boundary": has}
        ident = np.ones(k, dtype=bool)
        up = np.zeros(k, dtype=bool)
        down = np.zeros(k, dtype=bool)
        tested = has
        if result is not None:
            wald = result.settings.get("interval") == "wald" or self.method in _WALD_METHODS
            frame = result.to_frame()
            want = [
                c
                for c in (
                    "estimate",
                    "std_error",
                    "ci_low",
                    "ci_high",
                    "df",
                    "pvalue",
                    "baseline_runs",
                )
                if c in frame.columns
            ]
            row = _aligned(ids, frame, want)
            if identifiable is not None:
                got = _aligned(ids, identifiable, ("identifiable",))["identifiable"]
                ident = got.fill_null(True).to_numpy().astype(bool)
            held = self.hold_unidentifiable & ~ident
            why[judged] = np.where(held, C.WHY_NOT_IDENTIFIABLE, C.WHY_NO_ESTIMATE)[judged]
            has = judged & row["estimate"].is_not_null().to_numpy()
            has &= row["std_error"].is_not_null().to_numpy()
            est = _floats(row, "estimate")
            se = _floats(row, "std_error")
            cols.update(estimate=est, std_error=se)
            for name in ("ci_low", "ci_high"):
                cols[name] = _floats(row, name)
                masks[name] = has & row[name].is_not_null().to_numpy()
            if "baseline_runs" in row.columns:
                base = row["baseline_runs"]
                given = has & base.is_not_null().to_numpy()
                n_b = np.where(given, base.fill_null(0).to_numpy(), n_b).astype(np.int64)
            p_up, p_down = self._one_sided(row, est, se, wald)
            cols.update(pvalue_promote=p_up, pvalue_evict=p_down)
            tested = has & ~held
            why[tested] = C.WHY_INSUFFICIENT_EVIDENCE
            if tested.any():
                up, down, boundary = self._reject(tested, n, est, se, cols, p_up, p_down, m, wald)
                if boundary is not None:
                    cols["boundary"] = boundary
                    masks["boundary"] = tested
        max_trials = self.max_trials or 0
        max_base = self.max_baseline_runs or 0
        code = evidence_outcome(n, n_b, up, down, self.min_trials, max_trials, max_base)
        why[tested & up & down] = C.WHY_BOTH_SIDES
        why[code == C.OUTCOME_PROMOTE] = C.WHY_PROMOTE_EVIDENCE
        why[code == C.OUTCOME_EVICT_HARMFUL] = C.WHY_HARM_EVIDENCE
        no_lift = code == C.OUTCOME_EVICT_NO_LIFT
        at_max = (max_trials > 0) & (n >= max_trials)
        why[no_lift] = np.where(at_max, C.WHY_MAX_TRIALS, C.WHY_MAX_BASELINE_RUNS)[no_lift]
        data = {
            "fact_id": pl.Series("fact_id", list(ids), dtype=pl.String),
            "decision": pl.Series("decision", _DECISION_NAMES[code].tolist(), dtype=pl.String),
            "reason": pl.Series("reason", _REASON_NAMES[code].tolist(), dtype=pl.String),
            "why": pl.Series("why", why.tolist(), dtype=pl.String),
            "trials": pl.Series("trials", n, dtype=pl.Int64),
            "baseline_runs": pl.Series("baseline_runs", n_b, dtype=pl.Int64),
            "identifiable": _masked(pl.Series("identifiable", ident, dtype=pl.Boolean), judged),
        }
        for name, values in cols.items():
            data[name] = _masked(pl.Series(name, values, dtype=pl.Float64), masks.get(name, has))
        frame = pl.DataFrame([data[c] for c in _SCHEMA])
        return GateReport("evidence", frame, self.to_policy())

    def _identifiable(self, ledger: Ledger, result: Any) -> pl.DataFrame | None:
        """Return each lesson's identifiability (``fact_id``, ``identifiable``); None: all are."""
        frame = result.to_frame()
        if "identifiable" in frame.columns:
            return frame.select("fact_id", pl.col("identifiable").fill_null(True))
        if not self.hold_unidentifiable:
            return None
        from cogstats.estimators.identifiability import check_identifiability

        return check_identifiability(ledger).select("fact_id", "identifiable")

    def _one_sided(
        self, row: pl.DataFrame, est: np.ndarray, se: np.ndarray, wald: bool
    ) -> tuple[np.ndarray, np.ndarray]:
        """One-sided p-values of H0: effect <= promote_margin and H0: effect >= -evict_margin."""
        pm, em = float(self.promote_margin), float(self.evict_margin)
        if wald:
            df = _floats(row, "df") if "df" in row.columns else np.full(est.size, np.nan)
            finite = np.isfinite(df)
            with np.errstate(invalid="ignore", divide="ignore"):
                z_up, z_down = -(est - pm) / se, -(-em - est) / se
                up = np.where(finite, special.stdtr(np.where(finite, df, 1.0), z_up), 0.0)
                down = np.where(finite, special.stdtr(np.where(finite, df, 1.0), z_down), 0.0)
                up = np.where(finite, up, special.ndtr(z_up))
                down = np.where(finite, down, special.ndtr(z_down))
            zero = se == 0
            up = np.where(zero, np.where(est > pm, 0.0, 1.0), up)
            down = np.where(zero, np.where(est < -em, 0.0, 1.0), down)
            return up, down
        nan = np.full(est.size, np.nan)
        if "pvalue" not in row.columns or pm != 0 or em != 0:
            return nan, nan
        half = _floats(row, "pvalue") / 2
        pos = est > 0
        return np.where(pos, half, 1 - half), np.where(pos, 1 - half, half)

    def _reject(
        self,
        tested: np.ndarray,
        n: np.ndarray,
        est: np.ndarray,
        se: np.ndarray,
        cols: Mapping[str, np.ndarray],
        p_up: np.ndarray,
        p_down: np.ndarray,
        m: int,
        wald: bool,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """Return promotion and harm shown per lesson (False where not tested), the boundaries."""
        pm, em = float(self.promote_margin), float(self.evict_margin)
        up = np.zeros(n.size, dtype=bool)
        down = np.zeros(n.size, dtype=bool)
        if self.sequential == "group":
            if not wald:
                raise ParameterError(
                    f"sequential='group' needs a Wald-type method (estimate, std_error); "
                    f"{self.method!r} is not"
                )
            alpha = side_alpha(self.alpha, m, self.multiplicity == "bonferroni")
            boundary = self._boundary_array(alpha, n)
            with np.errstate(invalid="ignore", divide="ignore"):
                up, down = group_sides(est, se, boundary, pm, em)
            return tested & up, tested & down, boundary
        if self.multiplicity in ("none", "bonferroni"):
            # the interval at the gate's level: one-sided alpha (/ m) per side
            with np.errstate(invalid="ignore"):
                return tested & (cols["ci_low"] > pm), tested & (cols["ci_high"] < -em), None
        t = np.flatnonzero(tested)
        if np.isnan(p_up[t]).any():
            raise ParameterError(
                f"multiplicity={self.multiplicity!r} needs one-sided p-values; method "
                f"{self.method!r} gives them only at zero margins"
            )
        from cogstats.estimators.multiplicity import adjust

        up[t] = np.asarray(adjust(p_up[t], self.multiplicity, alpha=self.alpha).rejected)
        down[t] = np.asarray(adjust(p_down[t], self.multiplicity, alpha=self.alpha).rejected)
        return up, down, None

    def _boundary_array(self, alpha: float, n: np.ndarray) -> np.ndarray:
        """Return the group-sequential z boundary at each lesson's trials (capped at max_trials)."""
        bounds = self._boundaries(alpha)
        top = int(self.max_trials or 0)
        table = np.full(top + 1, np.nan)
        table[np.fromiter(bounds, dtype=np.int64)] = np.fromiter(bounds.values(), dtype=float)
        return table[np.clip(n, 0, top)]

    def boundaries(self) -> dict[int, float]:
        """Return the one-sided z boundary at each trial count ``min_trials .. max_trials``.

        For ``sequential="group"``, with no multiplicity adjustment.

        Examples
        --------
        >>> b = EvidenceGate(sequential="group", alpha=0.025, min_trials=5, max_trials=20)
        >>> round(b.boundaries()[20], 3) < round(b.boundaries()[5], 3)
        True
        """
        if self.sequential != "group":
            raise ParameterError("boundaries() applies to sequential='group'")
        return self._boundaries(self.alpha)

    def _boundaries(self, alpha: float) -> dict[int, float]:
        """One-sided z boundaries at trial counts min_trials..max_trials (planned looks)."""
        key = (
            alpha,
            self.min_trials,
            self.max_trials,
            self.spending,
            tuple(sorted(self.spending_options.items())),
        )
        cached = _BOUNDARY_CACHE.get(key)
        if cached is None:
            top = int(self.max_trials or self.min_trials)
            looks = list(range(self.min_trials, top + 1))
            if len(looks) == 1:
                cached = {looks[0]: float(-special.ndtri(alpha))}  # the normal isf
            else:
                fr = [n / top for n in looks]
                b = spending_boundaries(
                    fr, alpha, self.spending, sides=1, spending_options=self.spending_options
                )
                cached = dict(zip(looks, (float(z) for z in b.z_boundaries), strict=True))
            _BOUNDARY_CACHE[key] = cached
        return cached


_BOUNDARY_CACHE: dict[tuple[Any, ...], dict[int, float]] = {}
_DECISION_NAMES = np.array([C.HOLD, C.PROMOTE, C.EVICT, C.EVICT], dtype=object)
_REASON_NAMES = np.array([None, None, HARMFUL, NO_LIFT], dtype=object)
assert (C.OUTCOME_HOLD, C.OUTCOME_PROMOTE, C.OUTCOME_EVICT_HARMFUL, C.OUTCOME_EVICT_NO_LIFT) == (
    0,
    1,
    2,
    3,
)


def _aligned(ids: Sequence[str], frame: pl.DataFrame, columns: Sequence[str]) -> pl.DataFrame:
    """Return ``frame``'s ``columns`` for ``ids``, in their order (null for an absent lesson)."""
    left = pl.DataFrame({"fact_id": list(ids)}, schema={"fact_id": pl.String})
    right = frame.select("fact_id", *columns).unique("fact_id", keep="first", maintain_order=True)
    return left.join(right, on="fact_id", how="left", maintain_order="left")


def _floats(frame: pl.DataFrame, name: str) -> np.ndarray:
    """Return a column as float64 (null: NaN)."""
    return frame[name].cast(pl.Float64).fill_null(np.nan).to_numpy()


def _masked(series: pl.Series, keep: np.ndarray) -> pl.Series:
    """Return ``series`` with null where ``keep`` is False."""
    drop = np.flatnonzero(~keep)
    return series.scatter(drop, None) if drop.size else series


#: methods whose std_error/df describe a t or normal sampling distribution of the estimate
_WALD_METHODS = ("lift", "welch", "ols", "ridge", "fraclogit", "mixed", "ipw", "aipw")


# ====================================================================== running statistics
def _judge_running(
    gate: EvidenceGate, stats: StreamingStats, candidates: Sequence[str] | None
) -> GateReport:
    """Run the shell of :meth:`EvidenceGate.judge` on running statistics."""
    if gate.method not in RUNNING_METHODS:
        gate.running_statistics()  # raises, naming the methods it judges from running sums
    given = check_candidates(candidates)
    ids = list(stats.fact_ids) if given is None else given
    n = stats.trials(ids)
    n_runs = stats.n_runs
    judged_mask = gate._judged(n, n_runs)
    m = max(1, int(judged_mask.sum()))
    result = identifiable = None
    if judged_mask.any():
        judged = [ids[k] for k in np.flatnonzero(judged_mask).tolist()]
        result, identifiable = _running_attribution(gate, stats, judged, gate._level(m), m)
    return gate._report(ids, n, n_runs, m, result, identifiable)


def _running_attribution(
    gate: EvidenceGate, stats: StreamingStats, judged: list[str], level: float, m: int
) -> tuple[Attribution, pl.DataFrame | None]:
    """Return the method's attribution from running statistics (cogstats.stats.running_evidence).

    The gate's part is which decisions lie within the statistics' rounding (``near``):
    those are recomputed from the runs.
    """

    def near(bounds: EstimateBounds, trials: np.ndarray) -> np.ndarray:
        return _near_decision(gate, bounds, trials, level, m)

    method = gate.method
    options = gate._options()
    if method == "ols":
        result = running_ols(stats, options, judged, level, near)
        ident = result.to_frame().select("fact_id", pl.col("identifiable").fill_null(True))
        return result, ident
    identifiable = running_identifiability(stats) if gate.hold_unidentifiable else None
    if method == "confseq":
        return running_confseq(stats, options, level), identifiable
    held = np.zeros(len(judged), dtype=bool)
    if identifiable is not None:
        got = _aligned(judged, identifiable, ("identifiable",))["identifiable"]
        held = ~got.fill_null(True).to_numpy().astype(bool)
    return running_lift_welch(stats, method, options, judged, level, held, near), identifiable


def _widen(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return lo - SLACK * np.abs(lo) - 1e-15, hi + SLACK * np.abs(hi) + 1e-15


def _ratio_range(
    num_lo: np.ndarray, num_hi: np.ndarray, den_lo: np.ndarray, den_hi: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Range of ``num / den`` over the box (``den > 0``)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        c = np.stack([num_lo / den_lo, num_lo / den_hi, num_hi / den_lo, num_hi / den_hi])
    return c.min(axis=0), c.max(axis=0)


def _near_decision(
    gate: EvidenceGate,
    iv: EstimateBounds,
    trials: np.ndarray,
    level: float,
    m_judged: int,
) -> np.ndarray:
    """Mark the tested lessons whose decision could differ within the bounds."""
    pm, em = float(gate.promote_margin), float(gate.evict_margin)
    est_lo, est_hi = iv.est
    se_lo, se_hi = iv.se
    df_lo, df_hi = iv.df
    near = iv.se_zero.copy()
    safe_lo = np.where(se_lo > 0, se_lo, np.nan)
    t_up = _ratio_range(est_lo - pm, est_hi - pm, safe_lo, se_hi)
    t_down = _ratio_range(-em - est_hi, -em - est_lo, safe_lo, se_hi)
    if gate.sequential == "group":
        alpha = side_alpha(gate.alpha, m_judged, gate.multiplicity == "bonferroni")
        b = gate._boundary_array(alpha, np.asarray(trials, dtype=np.int64))
        for lo, hi in (t_up, t_down):
            lo, hi = _widen(lo, hi)
            near |= (lo <= b) & (b <= hi)
        return near
    if gate.multiplicity in ("none", "bonferroni"):
        q = 0.5 + level / 2

        def quantile(df: np.ndarray) -> np.ndarray:
            with np.errstate(invalid="ignore"):
                out = special.stdtrit(df, q)
            return np.asarray(np.where(np.isinf(df), special.ndtri(q), out))

        q_small, q_big = quantile(df_hi), quantile(df_lo)  # the quantile falls as df grows
        # ci_low > pm  <=>  (est - pm) / se > q ;  ci_high < -em  <=>  (-em - est) / se > q
        for lo, hi in (t_up, t_down):
            lo, hi = _widen(lo, hi)
            near |= (lo <= q_big * (1 + SLACK)) & (q_small * (1 - SLACK) <= hi)
        return near
    m = int(trials.size)
    for lo_t, hi_t in (t_up, t_down):
        corners = []
        for t in (lo_t, hi_t):
            for df in (df_lo, df_hi):
                with np.errstate(invalid="ignore"):
                    finite = np.isfinite(df)
                    p = np.where(
                        finite,
                        special.stdtr(np.where(finite, df, 1.0), -t),
                        special.ndtr(-t),
                    )
                corners.append(p)
        c = np.stack(corners)
        p_lo, p_hi = _widen(c.min(axis=0), c.max(axis=0))
        near |= _threshold_between(p_lo, p_hi, gate.multiplicity, gate.alpha, m)
    return near


def _threshold_between(
    p_lo: np.ndarray, p_hi: np.ndarray, method: str, alpha: float, m: int
) -> np.ndarray:
    """Whether a rejection threshold of ``method`` over ``m`` tests lies in ``[p_lo, p_hi]``."""
    if m == 0:
        return np.zeros(p_lo.size, dtype=bool)
    with np.errstate(invalid="ignore", divide="ignore"):
        if method == "holm":  # thresholds alpha / k, k = 1..m
            k_lo = np.ceil(alpha / p_hi)
            k_hi = np.floor(np.where(p_lo > 0, alpha / p_lo, np.inf))
        else:  # bh, by: j * c, j = 1..m
            c = alpha / m
            if method == "by":
                c = c / float(np.sum(1.0 / np.arange(1, m + 1)))
            k_lo = np.ceil(p_lo / c)
            k_hi = np.floor(p_hi / c)
    k_lo = np.maximum(k_lo, 1)
    k_hi = np.minimum(k_hi, m)
    return np.asarray((k_lo <= k_hi) | np.isnan(p_lo) | np.isnan(p_hi))
