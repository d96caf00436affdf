"""cycgraph's eval gate, reproduced exactly: the margin rule and the inference rule.

The semantics are those of ``evaluateRetention`` in ``@cycgraph/memory`` 0.8.0, restated
in ``docs/reference.md``; every recorded case in
``cycgraph_gate_vectors.json`` passes (decisions, reasons, evidence to 1e-9).  Policy
fields are cycgraph's in snake_case, with the same defaults and the same validation, and
unknown keys are an error (cycgraph silently drops misspelled keys).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import polars as pl
from scipy import special

from cogstats import _codes as C
from cogstats._codes import HARMFUL, NO_LIFT
from cogstats._validation import ParameterError, suggest
from cogstats.estimators.multiplicity import bh_step_up
from cogstats.gates._options import check_options, choice, integer, option, real
from cogstats.gates._registry import register_gate
from cogstats.gates._report import (
    REPORT_COLUMNS,
    GateReport,
    Judgement,
    LessonState,
    _SchemaJudgement,
    candidate_ids,
    check_candidates,
    check_statuses,
    report_schema,
)
from cogstats.gates.cycgraph.rule import (
    inference_outcome,
    is_tested,
    margin_outcome,
    spending_factor,
    spent_pvalue,
)
from cogstats.ledger import Ledger
from cogstats.numerics import welch_evidence
from cogstats.stats import groups as lesson_groups

if TYPE_CHECKING:
    from cogstats.stats import StreamingStats

__all__ = ["CYCGRAPH_DECISION_COLUMNS", "CycgraphGate"]

_OWN_SCHEMA = {
    "lift": pl.Float64,
    "se": pl.Float64,
    "df": pl.Float64,
    "confidence_promote": pl.Float64,
    "confidence_evict": pl.Float64,
    "alpha_bracket": pl.Int64,
}
_SCHEMA = report_schema(_OWN_SCHEMA)

#: Columns of a cycgraph gate report, in order: :data:`~cogstats.gates.REPORT_COLUMNS`,
#: then cycgraph's evidence exactly as cycgraph reports it.
CYCGRAPH_DECISION_COLUMNS: tuple[str, ...] = (*REPORT_COLUMNS, *_OWN_SCHEMA)


@register_gate(
    "cycgraph",
    description="cycgraph's eval gate (margin or inference rule), reproduced exactly",
    kernel="cogstats.gates.cycgraph.kernel",
)
@dataclass(frozen=True)
class CycgraphGate:
    """cycgraph's retention gate (``evaluateRetention``), decision for decision.

    Parameters
    ----------
    decision_rule : {"inference", "margin"}
        ``"inference"``: Welch test with noise floor, sequential control and multiple
        comparison control.  ``"margin"``: the point-estimate rule of the write-up.
    min_trials : int
        Runs a candidate needs before any decision (>= 1).
    promote_margin, evict_margin : float
        Practical-significance floors (>= 0).
    max_trials : int or None
        Evict as ``no_lift`` once a candidate has this many trials without a verdict
        (must be >= ``min_trials``).
    max_baseline_runs : int or None
        Inference rule only: evict as ``no_lift`` once the baseline has this many runs
        (>= 2).
    promote_confidence, evict_confidence : float
        Required confidence, in [0.5, 0.999].
    noise_floor_sd : float
        Per-group standard deviation floor for the Welch test (>= 0).
    multiple_comparison : {"bh", "none"}
        Benjamini-Hochberg across the candidates tested in one pass, or none.
    sequential_control : {"doubling", "none"}
        Doubling alpha spending over baseline-size brackets, or none.

    Examples
    --------
    >>> from cogstats import Ledger
    >>> from cogstats.gates import CycgraphGate
    >>> ledger = Ledger.from_records(
    ...     [{"run_id": f"w{i}", "score": 0.9, "fact_ids": ["a"]} for i in range(5)]
    ...     + [{"run_id": f"b{i}", "score": 0.5, "fact_ids": []} for i in range(5)]
    ... )
    >>> report = CycgraphGate().evaluate(ledger, ["a"])
    >>> report.promoted
    ('a',)
    >>> CycgraphGate(decision_rule="margin", min_trials=6).evaluate(ledger, ["a"]).held
    ('a',)
    """

    decision_rule: Literal["inference", "margin"] = option("inference", choice())
    min_trials: int = option(3, integer(minimum=1))
    promote_margin: float = option(0.05, real(minimum=0))
    evict_margin: float = option(0.05, real(minimum=0))
    max_trials: int | None = option(None, integer(minimum=1, optional=True))
    max_baseline_runs: int | None = option(None, integer(minimum=2, optional=True))
    promote_confidence: float = option(0.9, real(minimum=0.5, maximum=0.999))
    evict_confidence: float = option(0.9, real(minimum=0.5, maximum=0.999))
    noise_floor_sd: float = option(0.1, real(minimum=0))
    multiple_comparison: Literal["bh", "none"] = option("bh", choice())
    sequential_control: Literal["doubling", "none"] = option("doubling", choice())

    def __post_init__(self) -> None:
        """Validate the options (each field's check, then how they go together)."""
        check_options(self)
        if self.max_trials is not None and self.max_trials < self.min_trials:
            raise ParameterError(
                f"max_trials must be >= min_trials ({self.min_trials}); got {self.max_trials}: "
                "a candidate below min_trials is held before the max_trials retirement check "
                "can fire, silently delaying it"
            )

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_policy(cls, policy: Mapping[str, Any]) -> CycgraphGate:
        """Build a gate from a policy mapping in snake_case or cycgraph's camelCase.

        Unknown keys raise (cycgraph's schema silently drops them, so a misspelled
        ``minTrial`` would quietly run with the default).  ``candidateTag`` and
        ``verifiedTag`` are store concerns and are rejected too.

        Examples
        --------
        >>> CycgraphGate.from_policy({"decisionRule": "margin", "minTrials": 2}).min_trials
        2
        >>> CycgraphGate.from_policy({"min_trial": 2})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        cogstats._validation.ParameterError: unknown policy key 'min_trial' (did you mean ...
        """
        if not isinstance(policy, Mapping):
            raise ParameterError(f"policy must be a mapping; got {type(policy).__name__}")
        allowed = [f.name for f in fields(cls)]
        converted: dict[str, Any] = {}
        for key, value in policy.items():
            name = _snake(key) if isinstance(key, str) else str(key)
            if name not in allowed:
                raise ParameterError(
                    f"unknown policy key {key!r}{suggest(name, allowed)}; "
                    f"allowed: {sorted(allowed)!r}"
                )
            if name in converted:
                raise ParameterError(f"policy gives {name!r} twice (snake_case and camelCase)")
            converted[name] = value
        return cls(**converted)

    def to_policy(self) -> dict[str, Any]:
        """Return the policy as a snake_case dict (round-trips through :meth:`from_policy`)."""
        # every field is a scalar: a plain dict, not asdict's deep copy (about 50 us, paid
        # by StreamingGate at every look)
        return {f.name: getattr(self, f.name) for f in fields(self)}

    # ------------------------------------------------------------------ evaluation
    def evaluate(
        self,
        ledger: Ledger,
        candidates: Sequence[str] | None = None,
        *,
        rng: Any = None,
        statuses: Mapping[str, LessonState] | None = None,
    ) -> GateReport:
        """Judge the live candidates against the ledger.

        Parameters
        ----------
        ledger : Ledger
            Run outcomes.
        candidates : sequence of str, optional
            Live candidate lesson ids in store order (verified, quarantined and evicted
            lessons are not candidates).  Default: every lesson in the ledger.
        rng : ignored
            The gate does not draw (the argument is the gate protocol's).

        Returns
        -------
        GateReport
            Columns :data:`CYCGRAPH_DECISION_COLUMNS`.  ``trials``, ``baseline_runs`` and
            ``why`` are always filled; cycgraph's evidence columns (``lift`` ...
            ``confidence_evict``, ``alpha_bracket``) only where cycgraph reports evidence
            (inference rule, tested candidates; ``alpha_bracket`` only under doubling
            control), with cycgraph's values: ``confidence_promote`` and
            ``confidence_evict`` (cycgraph's ``p_promote`` and ``p_evict``) are the
            confidences ``P(lift > promote_margin)`` and ``P(lift < -evict_margin)``, not
            p-values.  ``estimate`` is the lift the rule compared (the margin rule's too)
            and ``std_error`` the Welch standard error (inference rule).
        """
        return self.judge(self.statistics(ledger), statuses, candidates, rng=rng)

    # ------------------------------------------------------------------ the protocol
    def statistics(self, ledger: Ledger) -> Ledger:
        """Return the gate's statistics of ``ledger``: the ledger itself.

        Its per-lesson group statistics (:mod:`cogstats.stats.groups`) come with the exact
        run-order recompute for near ties that cycgraph's arithmetic needs; the running
        form, updated run by run, is :meth:`running_statistics`.  :meth:`judge` takes
        either.
        """
        if not isinstance(ledger, Ledger):
            raise ParameterError(f"ledger must be a cogstats Ledger; got {type(ledger).__name__}")
        return ledger

    def running_statistics(self) -> StreamingStats:
        """Return empty running statistics for this gate (per-lesson sums; no cross-products).

        Examples
        --------
        >>> gate = CycgraphGate(decision_rule="margin", min_trials=1)
        >>> stats = gate.running_statistics()
        >>> stats.add_run("r1", 0.4, []); stats.add_run("r2", 0.9, ["a"])
        >>> gate.judge(stats).promoted
        ('a',)
        """
        from cogstats.stats import StreamingStats

        return StreamingStats()

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
            :meth:`statistics` (a ledger) or :meth:`running_statistics` updated run by run;
            the report is the same (decisions identical, evidence to 1e-9).
        statuses : mapping of str to LessonState, optional
            The candidates' store statuses (cycgraph's rule does not depend on them).
        candidates : sequence of str, optional
            Default: every lesson in the runs, in order of first appearance.
        rng : ignored
            The gate does not draw.
        """
        check_statuses(statuses)
        if isinstance(stats, Ledger):
            ids = candidate_ids(stats, candidates)
            g = stats._group_arrays(ids)
            return GateReport("cycgraph", self._decide_arrays(ids, g, stats), self.to_policy())
        return self.judgement(stats, statuses, candidates).report()

    def judgement(
        self,
        stats: Ledger | StreamingStats,
        statuses: Mapping[str, LessonState] | None = None,
        candidates: Sequence[str] | None = None,
    ) -> Judgement:
        """:meth:`judge` before its report: decisions, and frames of chosen rows only.

        From running statistics: the rule on the running sums
        (:meth:`StreamingStats.group_arrays <cogstats.stats.StreamingStats.group_arrays>`),
        every candidate within the rounding bounds of a threshold recomputed in run order
        first, so the decisions are the batch's.
        """
        if isinstance(stats, Ledger):
            return Judgement.from_report(self.judge(stats, statuses, candidates))
        check_statuses(statuses)
        given = check_candidates(candidates)
        if given is None:
            idx = stats.order()
            ids = stats.fact_ids
        else:
            ids = tuple(given)
            idx = stats.lesson_index(ids)
        g, lift_tol, var_a_tol, var_b_tol = stats.group_arrays(idx)
        d = self._decide_core(g)
        fragile = self._near_thresholds(g, d, lift_tol, var_a_tol, var_b_tol)
        if fragile.size:
            fields_ = {
                k: getattr(g, k).copy()
                for k in ("n_a", "mean_a", "var_a", "n_b", "mean_b", "var_b")
            }
            trials = g.n_a
            exact_mask = g.exact.copy()
            margin = self.decision_rule == "margin"
            for k in fragile.tolist():
                if trials[k] == 0:
                    continue  # not in the ledger: nothing to test (the batch skips it too)
                if margin:  # the margin rule compares means only
                    _, mean_a, _, mean_b = stats.exact_means(int(idx[k]))
                    fields_["mean_a"][k], fields_["mean_b"][k] = mean_a, mean_b
                else:
                    exact = stats.exact_stats(int(idx[k]))
                    for name, value in zip(fields_, exact, strict=True):
                        fields_[name][k] = value
                exact_mask[k] = True
            g = lesson_groups.GroupArrays(**fields_, exact=exact_mask)
            d = self._decide_core(g)
        decision = _DECISION_NAMES[d["decision"]]
        reason = _REASON_NAMES[d["reason"]]

        def frame(rows: np.ndarray | None) -> pl.DataFrame:
            if rows is None:
                return _frame(ids, g, d)
            return _rows_frame(ids, g, d, rows)

        return _SchemaJudgement("cycgraph", tuple(ids), decision, reason, frame, self.to_policy())

    def _decide_arrays(
        self, ids: Sequence[str], g: lesson_groups.GroupArrays, ledger: Ledger
    ) -> pl.DataFrame:
        """Decide, vectorised over candidates, decision for decision as cycgraph does.

        Cost O(candidates).  The statistics come from additive sums (see
        :mod:`cogstats.stats.groups`); a candidate whose lift lies within the rounding bound
        of a margin (margin rule), or whose spent p-value lies within the bound propagated
        to it of a Benjamini-Hochberg threshold or of ``1 - confidence`` (inference rule),
        is recomputed in run order first, so every decision equals the one cycgraph's
        run-order arithmetic makes (tests/unit/test_gates_cycgraph_scale.py checks it
        against the previous row-by-row implementation on random ledgers).
        """
        d = self._decide_core(g)
        fragile = self._fragile(g, d, ledger)
        if fragile.size:
            fa = ledger._fact_arrays()
            cols = ledger._fact_columns([ids[k] for k in fragile.tolist()])
            fields = {
                k: getattr(g, k).copy()
                for k in ("n_a", "mean_a", "var_a", "n_b", "mean_b", "var_b")
            }
            # an absent lesson (-1): nothing to test, and its baseline is exact
            present = [
                (k, j) for k, j in zip(fragile.tolist(), cols.tolist(), strict=True) if j >= 0
            ]
            exact_all = lesson_groups.exact_stats_of(fa, [j for _, j in present])
            for (k, _), exact in zip(present, exact_all, strict=True):
                for name, value in zip(fields, exact, strict=True):
                    fields[name][k] = value
            exact_mask = g.exact.copy()
            exact_mask[fragile] = True
            d = self._decide_core(lesson_groups.GroupArrays(**fields, exact=exact_mask))
        return _frame(ids, g, d)

    def _decide_core(self, g: lesson_groups.GroupArrays) -> dict[str, np.ndarray]:
        """Decisions on candidate statistics (arrays): cycgraph's rules, vectorised.

        The rule's arithmetic is the module's plain functions (:func:`margin_outcome`,
        :func:`inference_outcome`, :func:`spent_pvalue`, with
        :func:`cogstats.numerics.welch_evidence` and ``bh_step_up``), which the simulator's
        kernel compiles; only the t tail (scipy's ``stdtr`` here) is this runner's own.
        """
        n, n_b = g.n_a, g.n_b
        k = n.size
        max_trials = self.max_trials or 0
        max_base = self.max_baseline_runs or 0
        ready = (n > 0) & (n >= self.min_trials)
        max_hit = (max_trials > 0) & (n >= max_trials)
        nan = np.full(k, np.nan)
        out: dict[str, np.ndarray] = {"tested": np.zeros(k, dtype=bool)}
        if self.decision_rule == "margin":
            no_base = ready & (n_b == 0)
            active = ready & (n_b > 0)
            lift = np.where(active, g.mean_a - g.mean_b, nan)
            with np.errstate(invalid="ignore"):
                code = margin_outcome(
                    n,
                    n_b,
                    lift,
                    self.min_trials,
                    max_trials,
                    self.promote_margin,
                    self.evict_margin,
                )
            promote = code == C.OUTCOME_PROMOTE
            harmful = code == C.OUTCOME_EVICT_HARMFUL
            no_lift = code == C.OUTCOME_EVICT_NO_LIFT
            why = np.full(k, C.WHY_MIN_TRIALS, dtype=object)
            why[no_base] = C.WHY_NO_BASELINE
            why[active] = C.WHY_INSUFFICIENT_EVIDENCE
            why[promote] = C.WHY_PROMOTE_EVIDENCE
            why[harmful] = C.WHY_HARM_EVIDENCE
            why[no_lift] = C.WHY_MAX_TRIALS
            # the margin rule compares the lift, reported as the estimate (cycgraph's own
            # evidence columns stay empty under this rule)
            out.update(
                decision=_DECISION_OF_CODE[code],
                reason=_REASON_OF_CODE[code],
                lift=lift,
                why=why,
                estimate=lift,
            )
            return out
        tested = is_tested(n, n_b, self.min_trials)
        small = ready & ~tested
        nf = np.where(tested, n, 2).astype(float)
        nbf = np.where(tested, n_b, 2).astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            lift, se, df, sa, sb = welch_evidence(
                nf,
                nbf,
                g.mean_a,
                g.mean_b,
                _nan_to_zero(g.var_a),
                _nan_to_zero(g.var_b),
                self.noise_floor_sd**2,
            )
        doubling = self.sequential_control == "doubling"
        factor = spending_factor(n_b, doubling)
        q_up = 1.0 - self.promote_confidence
        q_down = 1.0 - self.evict_confidence
        # The t tail (scipy's stdtr, most of a look's cost) only where a decision can
        # depend on it.  A lesson whose lift lies strictly between -evict_margin and
        # promote_margin has t >= 0 on both sides, so both one-sided p-values are at least
        # 0.5 before spending (and min(1, p * factor) >= 0.5 after): above q < 0.5, never
        # rejected, by Benjamini-Hochberg or alone, whatever their value; 1.0 stands in
        # for them (it sorts after every p-value that can be rejected).  Their exact
        # values are filled in (:func:`_fill_p`, the same floats) when a report row or
        # the near-threshold check asks for them.
        lazy = np.zeros(k, dtype=bool)
        if q_up < 0.5 and q_down < 0.5:
            lazy = (
                (lift < self.promote_margin)
                & (lift > -self.evict_margin)
                & np.isfinite(se)
                & np.isfinite(df)
            )
        margins = np.array([self.promote_margin, -self.evict_margin], dtype=np.float64)
        confidence_promote = np.full(k, np.nan)
        confidence_evict = np.full(k, np.nan)
        up_p = np.ones(k)
        down_p = np.ones(k)
        _fill_p_arrays(
            np.flatnonzero(~lazy),
            lift,
            se,
            df,
            factor,
            margins,
            confidence_promote,
            confidence_evict,
            up_p,
            down_p,
        )
        idx = np.flatnonzero(tested)
        up = np.zeros(k, dtype=bool)
        down = np.zeros(k, dtype=bool)
        if idx.size:
            if self.multiple_comparison == "bh":
                up[idx] = bh_step_up(up_p[idx], q_up)
                down[idx] = bh_step_up(down_p[idx], q_down)
            else:
                up[idx] = up_p[idx] <= q_up
                down[idx] = down_p[idx] <= q_down
        code = inference_outcome(n, n_b, up, down, self.min_trials, max_trials, max_base)
        promote = code == C.OUTCOME_PROMOTE
        harmful = code == C.OUTCOME_EVICT_HARMFUL
        no_lift = code == C.OUTCOME_EVICT_NO_LIFT
        why = np.full(k, C.WHY_MIN_TRIALS, dtype=object)
        why[small & (n >= 2)] = C.WHY_NO_BASELINE
        why[tested] = C.WHY_INSUFFICIENT_EVIDENCE
        why[tested & up & down] = C.WHY_BOTH_SIDES
        why[promote] = C.WHY_PROMOTE_EVIDENCE
        why[harmful] = C.WHY_HARM_EVIDENCE
        base_stop = (max_base > 0) & (n_b >= max_base)
        why[no_lift & base_stop & ~max_hit] = C.WHY_MAX_BASELINE_RUNS
        why[no_lift & max_hit] = C.WHY_MAX_TRIALS
        out.update(
            why=why,
            estimate=np.where(tested, lift, np.nan),
            std_error=np.where(tested, se, np.nan),
            decision=_DECISION_OF_CODE[code],
            reason=_REASON_OF_CODE[code],
            tested=tested,
            lift=lift,
            se=se,
            df=df,
            confidence_promote=confidence_promote,
            confidence_evict=confidence_evict,
            up_p=up_p,
            down_p=down_p,
            lazy=lazy,
            margins=margins,
            factor=factor,
            t_up=(self.promote_margin - lift) / np.where(se > 0, se, np.nan),
            t_down=(-self.evict_margin - lift) / np.where(se > 0, se, np.nan),
            sa=sa,
            sb=sb,
        )
        if doubling:  # factor = 2**bracket: log2 of a power of two is exact
            out["alpha_bracket"] = np.log2(factor).astype(np.int64)
        return out

    def _fragile(
        self, g: lesson_groups.GroupArrays, d: dict[str, np.ndarray], ledger: Ledger
    ) -> np.ndarray:
        """Candidates whose decision could differ under run-order arithmetic (indices).

        Margin rule: the lift within ``lift_tol`` of ``promote_margin`` or of
        ``-evict_margin``.  Inference rule: the spent p-value within its propagated bound of
        the nearest Benjamini-Hochberg threshold ``j q / m`` (or of ``q`` without BH); the
        bound is ``2^k (f(|t| - dt) dt + 4 (dsa + dsb) / (sa + sb))`` doubled, with ``dt``
        from the lift and standard-error bounds, ``f`` the t density (decreasing in
        ``|t|``, so its largest value on the interval; the second term covers the degrees
        of freedom), and a zero standard error possible when there is no noise floor.
        See ``cogstats.stats.groups.uncertainty`` for the bounds.
        """
        if g.exact.all() and self.decision_rule == "margin":
            return np.zeros(0, dtype=np.int64)
        tols = lesson_groups.uncertainty(ledger._fact_arrays(), g)
        return self._near_thresholds(g, d, *tols)

    def _near_thresholds(
        self,
        g: lesson_groups.GroupArrays,
        d: dict[str, np.ndarray],
        lift_tol: np.ndarray,
        var_a_tol: np.ndarray,
        var_b_tol: np.ndarray,
    ) -> np.ndarray:
        """Candidates within the given error bounds of a threshold (see :meth:`_fragile`).

        The bounds are on ``mean_a - mean_b`` and the two sample variances; the streaming
        statistics (:meth:`judgement`) pass their own.
        """
        if self.decision_rule == "margin":
            lift = d["lift"]
            with np.errstate(invalid="ignore"):
                near = (np.abs(lift - self.promote_margin) <= lift_tol) | (
                    np.abs(-lift - self.evict_margin) <= lift_tol
                )
            return np.flatnonzero(near)
        tested = d["tested"]
        if not tested.any():
            return np.zeros(0, dtype=np.int64)
        floor2 = self.noise_floor_sd**2
        n = np.maximum(g.n_a, 1).astype(float)
        n_b = np.maximum(g.n_b, 1).astype(float)
        var_a = _nan_to_zero(g.var_a)
        var_b = _nan_to_zero(g.var_b)
        dsa = np.where(var_a + var_a_tol > floor2, var_a_tol, 0.0) / n
        dsb = np.where(var_b + var_b_tol > floor2, var_b_tol, 0.0) / n_b
        se = np.sqrt(d["sa"] + d["sb"])
        zero_se_possible = (var_a <= var_a_tol) & (var_b <= var_b_tol) & (floor2 == 0.0)
        m = int(tested.sum())
        near = zero_se_possible & tested
        factor = d["factor"]
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            dse = 2.0 * (dsa + dsb) / (2.0 * se)
            rel = 4.0 * (dsa + dsb) / (d["sa"] + d["sb"])
            for t, p, q in (
                (d["t_up"], d["up_p"], 1.0 - self.promote_confidence),
                (d["t_down"], d["down_p"], 1.0 - self.evict_confidence),
            ):
                # |t| = inf (se == 0) and nan become the largest float, as np.nan_to_num's
                # nan=inf then posinf did
                t = np.abs(t)
                t = np.where(np.isfinite(t), t, _FLOAT_MAX)
                dt = (lift_tol + t * dse) / se
                bound = 2.0 * factor * (0.5 * dt + rel)  # see below
                if "lazy" in d:
                    # a deferred p-value is at least 0.5, so its gap at least 0.5 - q:
                    # filled in where the bound could reach that far (a nan bound too)
                    _fill_p(d, np.flatnonzero(d["lazy"] & tested & ~(0.5 - q > bound)))
                if self.multiple_comparison == "bh":
                    rank = np.clip(np.rint(p * m / q), 1, m)
                    gap = np.abs(p - rank / m * q)
                else:
                    gap = np.abs(p - q)
                # the p-value moves by at most the largest t density on [|t| - dt, |t| + dt]
                # times dt: the density at |t| - dt (it decreases away from 0).  A t density
                # is at most 1/sqrt(2 pi) < 0.5 for any df, so a row whose gap exceeds the
                # bound with 0.5 in its place is not near; the density (two gammaln a row)
                # is evaluated on the other rows only (a nan or infinite bound included).
                maybe = np.flatnonzero(tested & ~(gap > bound))
                if maybe.size:
                    dtm = dt[maybe]
                    dens = _t_density(np.maximum(t[maybe] - dtm, 0.0), d["df"][maybe])
                    tol = 2.0 * factor[maybe] * (dens * dtm + rel[maybe])
                    tol = np.where(np.isfinite(tol), tol, np.inf)
                    near[maybe] |= gap[maybe] <= tol
        near &= ~g.exact | (var_a_tol > 0)
        return np.flatnonzero(near)


_DECISION_NAMES = np.array(["hold", "promote", "evict"], dtype=object)
_REASON_NAMES = np.array([None, HARMFUL, NO_LIFT], dtype=object)
#: an outcome code (hold, promote, evict harmful, evict no_lift) -> the report's decision and
#: reason (indices into the two tables above)
_DECISION_OF_CODE = np.zeros(len(C.OUTCOME_CODES), dtype=np.int8)
_REASON_OF_CODE = np.zeros(len(C.OUTCOME_CODES), dtype=np.int8)
_DECISION_OF_CODE[[C.OUTCOME_PROMOTE, C.OUTCOME_EVICT_HARMFUL, C.OUTCOME_EVICT_NO_LIFT]] = [1, 2, 2]
_REASON_OF_CODE[[C.OUTCOME_EVICT_HARMFUL, C.OUTCOME_EVICT_NO_LIFT]] = [1, 2]


_FLOAT_MAX = np.finfo(np.float64).max


def _nan_to_zero(x: np.ndarray) -> np.ndarray:
    """``x`` with nan as 0 (variances: finite or nan; np.nan_to_num costs 4x more)."""
    return np.where(np.isnan(x), 0.0, x)


def _t_density(t: np.ndarray, df: np.ndarray) -> np.ndarray:
    """Student's t density at ``t`` (the normal's where ``df`` is infinite)."""
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        finite = np.isfinite(df) & (df < 1e12)
        nu = np.where(finite, df, 1.0)
        log_c = special.gammaln((nu + 1) / 2) - special.gammaln(nu / 2) - 0.5 * np.log(nu * np.pi)
        dens_t = np.exp(log_c - (nu + 1) / 2 * np.log1p(t * t / nu))
        dens_n = np.exp(-0.5 * t * t) / np.sqrt(2 * np.pi)
    return np.asarray(np.where(finite, dens_t, dens_n))


def _p_exceeds(lift: np.ndarray, se: np.ndarray, df: np.ndarray, margin: Any) -> np.ndarray:
    """``welch_lift``'s ``p_exceeds`` elementwise (same floats: scipy's ``stdtr``).

    ``margin`` is a number or an array aligned with ``lift``.
    """
    with np.errstate(invalid="ignore", divide="ignore"):
        p = 1.0 - special.stdtr(df, (margin - lift) / se)
    return np.asarray(np.where(se == 0, np.where(lift > margin, 1.0, 0.0), p))


def _fill_p_arrays(
    rows: np.ndarray,
    lift: np.ndarray,
    se: np.ndarray,
    df: np.ndarray,
    factor: np.ndarray,
    margins: np.ndarray,
    confidence_promote: np.ndarray,
    confidence_evict: np.ndarray,
    up_p: np.ndarray,
    down_p: np.ndarray,
) -> None:
    """Compute the inference rule's p-values of ``rows`` into the arrays (in place)."""
    if not rows.size:
        return
    # both margins in one stdtr call (elementwise: the floats of two calls)
    k = rows.size
    both = _p_exceeds(
        np.tile(lift[rows], 2),
        np.tile(se[rows], 2),
        np.tile(df[rows], 2),
        np.repeat(margins, k),
    )
    pp = both[:k]
    confidence_promote[rows] = pp
    confidence_evict[rows] = 1.0 - both[k:]
    up_p[rows] = spent_pvalue(1.0 - pp, factor[rows])
    down_p[rows] = spent_pvalue(1.0 - confidence_evict[rows], factor[rows])


def _fill_p(d: dict[str, np.ndarray], rows: np.ndarray | None = None) -> None:
    """Fill the deferred p-values of ``rows`` (None: all) of an inference-rule look."""
    lazy = d.get("lazy")
    if lazy is None:
        return
    sel = np.flatnonzero(lazy) if rows is None else rows[lazy[rows]]
    if not sel.size:
        return
    _fill_p_arrays(
        sel,
        d["lift"],
        d["se"],
        d["df"],
        d["factor"],
        d["margins"],
        d["confidence_promote"],
        d["confidence_evict"],
        d["up_p"],
        d["down_p"],
    )
    lazy[sel] = False


def _frame(
    ids: Sequence[str], g: lesson_groups.GroupArrays, d: dict[str, np.ndarray]
) -> pl.DataFrame:
    tested = d["tested"]
    k = tested.size
    _fill_p(d)

    def floats(name: str, values: np.ndarray) -> pl.Series:
        return pl.Series(name, values, dtype=pl.Float64, nan_to_null=True)

    evidence: dict[str, pl.Series] = {}
    for name in ("lift", "se", "df", "confidence_promote", "confidence_evict"):
        # cycgraph reports evidence for tested candidates only (never under the margin rule)
        values = np.where(tested, d[name], np.nan) if name in d else np.full(k, np.nan)
        evidence[name] = floats(name, values)
    if "alpha_bracket" in d and tested.any():
        bracket = pl.Series("alpha_bracket", d["alpha_bracket"], dtype=pl.Int64)
        bracket = bracket.scatter(np.flatnonzero(~tested), None) if (~tested).any() else bracket
    else:
        bracket = pl.Series("alpha_bracket", [None] * k, dtype=pl.Int64)
    nan = np.full(k, np.nan)
    frame = pl.DataFrame(
        [
            pl.Series("fact_id", list(ids), dtype=pl.String),
            pl.Series("decision", _DECISION_NAMES[d["decision"]].tolist(), dtype=pl.String),
            pl.Series("reason", _REASON_NAMES[d["reason"]].tolist(), dtype=pl.String),
            pl.Series("why", d["why"].tolist(), dtype=pl.String),
            pl.Series("trials", g.n_a, dtype=pl.Int64),
            floats("estimate", d.get("estimate", nan)),
            floats("std_error", d.get("std_error", nan)),
            pl.Series("baseline_runs", g.n_b, dtype=pl.Int64),
            evidence["lift"],
            evidence["se"],
            evidence["df"],
            evidence["confidence_promote"],
            evidence["confidence_evict"],
            bracket,
        ]
    )
    return frame.select(list(_SCHEMA)).cast(_SCHEMA)  # type: ignore[arg-type]


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _rows_frame(
    ids: Sequence[str],
    g: lesson_groups.GroupArrays,
    d: dict[str, np.ndarray],
    rows: np.ndarray,
) -> pl.DataFrame:
    """:func:`_frame` for a few rows (the changed ones), built column by column."""
    _fill_p(d, rows)
    tested = d["tested"][rows]
    k = rows.size
    nan = np.full(k, np.nan)

    def floats(name: str, values: np.ndarray) -> pl.Series:
        return pl.Series(name, values, dtype=pl.Float64, nan_to_null=True)

    cols = [
        pl.Series("fact_id", [ids[r] for r in rows.tolist()], dtype=pl.String),
        pl.Series("decision", _DECISION_NAMES[d["decision"][rows]].tolist(), dtype=pl.String),
        pl.Series("reason", _REASON_NAMES[d["reason"][rows]].tolist(), dtype=pl.String),
        pl.Series("why", d["why"][rows].tolist(), dtype=pl.String),
        pl.Series("trials", g.n_a[rows], dtype=pl.Int64),
        floats("estimate", d["estimate"][rows] if "estimate" in d else nan),
        floats("std_error", d["std_error"][rows] if "std_error" in d else nan),
        pl.Series("baseline_runs", g.n_b[rows], dtype=pl.Int64),
    ]
    for name in ("lift", "se", "df", "confidence_promote", "confidence_evict"):
        cols.append(floats(name, np.where(tested, d[name][rows], np.nan) if name in d else nan))
    if "alpha_bracket" in d:
        pairs = zip(d["alpha_bracket"][rows].tolist(), tested.tolist(), strict=True)
        bracket = [b if t else None for b, t in pairs]
    else:
        bracket = [None] * k
    cols.append(pl.Series("alpha_bracket", bracket, dtype=pl.Int64))
    frame = pl.DataFrame(cols)
    assert frame.columns == list(_SCHEMA)
    return frame
