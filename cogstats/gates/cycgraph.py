"""cycgraph's eval gate, reproduced exactly: the margin rule and the inference rule.

The semantics are those of ``evaluateRetention`` in ``@cycgraph/memory`` 0.8.0, restated
in ``../shared/reference/cycgraph-gate.md``; every recorded case in
``cycgraph_gate_vectors.json`` passes (decisions, reasons, evidence to 1e-9).  Policy
fields are cycgraph's in snake_case, with the same defaults and the same validation, and
unknown keys are an error (cycgraph silently drops misspelled keys).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any, Literal

import numpy as np
import polars as pl

from cogstats import _codes as C
from cogstats._codes import HARMFUL, NO_LIFT
from cogstats._validation import (
    ParameterError,
    check_choice,
    check_int,
    check_real,
    suggest,
)
from cogstats.estimators.lift import welch_lift
from cogstats.estimators.multiplicity import benjamini_hochberg
from cogstats.gates._registry import register_gate
from cogstats.gates._report import (
    REPORT_COLUMNS,
    GateReport,
    candidate_ids,
    report_frame,
    report_schema,
)
from cogstats.ledger import Ledger

__all__ = ["CYCGRAPH_DECISION_COLUMNS", "CycgraphGate"]

_OWN_SCHEMA = {
    "lift": pl.Float64,
    "se": pl.Float64,
    "df": pl.Float64,
    "p_promote": pl.Float64,
    "p_evict": pl.Float64,
    "alpha_bracket": pl.Int64,
}
_SCHEMA = report_schema(_OWN_SCHEMA)

#: Columns of a cycgraph gate report, in order: :data:`~cogstats.gates.REPORT_COLUMNS`,
#: then cycgraph's evidence exactly as cycgraph reports it.
CYCGRAPH_DECISION_COLUMNS: tuple[str, ...] = (*REPORT_COLUMNS, *_OWN_SCHEMA)


@register_gate(
    "cycgraph",
    description="cycgraph's eval gate (margin or inference rule), reproduced exactly",
    compiled=True,
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

    decision_rule: Literal["inference", "margin"] = "inference"
    min_trials: int = 3
    promote_margin: float = 0.05
    evict_margin: float = 0.05
    max_trials: int | None = None
    max_baseline_runs: int | None = None
    promote_confidence: float = 0.9
    evict_confidence: float = 0.9
    noise_floor_sd: float = 0.1
    multiple_comparison: Literal["bh", "none"] = "bh"
    sequential_control: Literal["doubling", "none"] = "doubling"

    def __post_init__(self) -> None:
        check_choice("decision_rule", self.decision_rule, ("inference", "margin"))
        set_ = object.__setattr__
        set_(self, "min_trials", check_int("min_trials", self.min_trials, minimum=1))
        set_(self, "promote_margin", check_real("promote_margin", self.promote_margin, minimum=0))
        set_(self, "evict_margin", check_real("evict_margin", self.evict_margin, minimum=0))
        set_(
            self,
            "max_trials",
            check_int("max_trials", self.max_trials, minimum=1, optional=True),
        )
        set_(
            self,
            "max_baseline_runs",
            check_int("max_baseline_runs", self.max_baseline_runs, minimum=2, optional=True),
        )
        for name in ("promote_confidence", "evict_confidence"):
            set_(self, name, check_real(name, getattr(self, name), minimum=0.5, maximum=0.999))
        set_(self, "noise_floor_sd", check_real("noise_floor_sd", self.noise_floor_sd, minimum=0))
        check_choice("multiple_comparison", self.multiple_comparison, ("bh", "none"))
        check_choice("sequential_control", self.sequential_control, ("doubling", "none"))
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
        """The policy as a snake_case dict (round-trips through :meth:`from_policy`)."""
        return asdict(self)

    # ------------------------------------------------------------------ evaluation
    def evaluate(
        self, ledger: Ledger, candidates: Sequence[str] | None = None, *, rng: Any = None
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
            ``p_evict``, ``alpha_bracket``) only where cycgraph reports evidence
            (inference rule, tested candidates; ``alpha_bracket`` only under doubling
            control), with cycgraph's values: ``p_promote`` and ``p_evict`` are its
            confidences ``P(lift > promote_margin)`` and ``P(lift < -evict_margin)``, not
            p-values.  ``estimate`` is the lift the rule compared (the margin rule's too)
            and ``std_error`` the Welch standard error (inference rule).
        """
        ids = candidate_ids(ledger, candidates)
        stats = ledger.fact_stats()
        by_id = {r["fact_id"]: r for r in stats.iter_rows(named=True)}
        baselines = ledger.baselines(ids) if ids else None
        base_rows = (
            {r["fact_id"]: r for r in baselines.iter_rows(named=True)}
            if baselines is not None
            else {}
        )
        rows = []
        for f in ids:
            s = by_id.get(f)
            b = base_rows[f]
            rows.append(
                (
                    f,
                    0 if s is None else s["trials"],
                    math.nan if s is None else s["mean_score"],
                    None if s is None else s["variance"],
                    b["baseline_runs"],
                    b["baseline_mean"],
                    b["baseline_variance"],
                )
            )
        return self._decide(rows)

    def _decide(
        self, rows: Sequence[tuple[str, int, float, float | None, int, float, float | None]]
    ) -> GateReport:
        """The decision logic on per-candidate sufficient statistics (exact port)."""
        out: list[dict[str, Any]] = []
        tested: list[int] = []
        for f, n, mean_a, var_a, n_b, mean_b, var_b in rows:
            row: dict[str, Any] = {
                "fact_id": f,
                "decision": "hold",
                "reason": None,
                "why": C.WHY_MIN_TRIALS,
                "trials": n,
                "baseline_runs": n_b,
            }
            out.append(row)
            max_hit = self.max_trials is not None and n >= self.max_trials
            if n == 0 or n < self.min_trials:
                continue
            if self.decision_rule == "margin":
                if n_b == 0:
                    row["why"] = C.WHY_NO_BASELINE
                    if max_hit:
                        row.update(decision="evict", reason=NO_LIFT, why=C.WHY_MAX_TRIALS)
                    continue
                lift = mean_a - mean_b
                row.update(estimate=lift, why=C.WHY_INSUFFICIENT_EVIDENCE)
                if lift >= self.promote_margin:
                    row.update(decision="promote", why=C.WHY_PROMOTE_EVIDENCE)
                elif -lift >= self.evict_margin:
                    row.update(decision="evict", reason=HARMFUL, why=C.WHY_HARM_EVIDENCE)
                elif max_hit:
                    row.update(decision="evict", reason=NO_LIFT, why=C.WHY_MAX_TRIALS)
                continue
            if n < 2 or n_b < 2:
                row["why"] = C.WHY_MIN_TRIALS if n < 2 else C.WHY_NO_BASELINE
                if max_hit:
                    row.update(decision="evict", reason=NO_LIFT, why=C.WHY_MAX_TRIALS)
                continue
            floor = self.noise_floor_sd
            va = max(0.0 if var_a is None else var_a, floor**2)
            vb = max(0.0 if var_b is None else var_b, floor**2)
            promo = welch_lift(mean_a, va, n, mean_b, vb, n_b, self.promote_margin)
            evict = welch_lift(mean_a, va, n, mean_b, vb, n_b, -self.evict_margin)
            row.update(
                estimate=promo.lift,
                std_error=promo.se,
                lift=promo.lift,
                se=promo.se,
                df=promo.df,
                p_promote=promo.p_exceeds,
                p_evict=1.0 - evict.p_exceeds,
            )
            if self.sequential_control == "doubling":
                row["alpha_bracket"] = n_b.bit_length() - 1  # floor(log2(n_b)), exact
            tested.append(len(out) - 1)
        if tested:
            self._apply_tests([out[i] for i in tested])
        return GateReport("cycgraph", report_frame(out, _SCHEMA), self.to_policy())

    def _apply_tests(self, tested: list[dict[str, Any]]) -> None:
        def spend(row: dict[str, Any], p: float) -> float:
            k = row.get("alpha_bracket")
            return p if k is None else min(1.0, p * 2.0**k)

        promote_p = np.array([spend(r, 1.0 - r["p_promote"]) for r in tested])
        evict_p = np.array([spend(r, 1.0 - r["p_evict"]) for r in tested])
        q_promote = 1.0 - self.promote_confidence
        q_evict = 1.0 - self.evict_confidence
        if self.multiple_comparison == "bh":
            promote_reject = benjamini_hochberg(promote_p, q_promote)
            evict_reject = benjamini_hochberg(evict_p, q_evict)
        else:
            promote_reject = promote_p <= q_promote
            evict_reject = evict_p <= q_evict
        for row, up, down in zip(tested, promote_reject, evict_reject, strict=True):
            if up and down:
                # both sides confirmed: hold defensively, as cycgraph does
                row["why"] = C.WHY_BOTH_SIDES
            elif up:
                row.update(decision="promote", why=C.WHY_PROMOTE_EVIDENCE)
            elif down:
                row.update(decision="evict", reason=HARMFUL, why=C.WHY_HARM_EVIDENCE)
            elif self.max_trials is not None and row["trials"] >= self.max_trials:
                row.update(decision="evict", reason=NO_LIFT, why=C.WHY_MAX_TRIALS)
            elif (
                self.max_baseline_runs is not None
                and row["baseline_runs"] >= self.max_baseline_runs
            ):
                row.update(decision="evict", reason=NO_LIFT, why=C.WHY_MAX_BASELINE_RUNS)
            else:
                row["why"] = C.WHY_INSUFFICIENT_EVIDENCE


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()
