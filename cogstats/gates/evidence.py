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

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

import numpy as np
import polars as pl
from scipy import special

from cogstats import _codes as C
from cogstats._codes import HARMFUL, NO_LIFT
from cogstats._validation import (
    ParameterError,
    check_choice,
    check_int,
    check_probability,
    check_real,
    suggest,
)

# only the registry core here: the estimator modules (statsmodels for regression, ...) load
# when a gate uses them, so a welch/lift gate starts fast (benchmark P1)
from cogstats.estimators import attribute, get_spec
from cogstats.estimators.spending import SPENDING, spending_boundaries
from cogstats.gates._registry import register_gate
from cogstats.gates._report import (
    REPORT_COLUMNS,
    GateReport,
    candidate_ids,
    report_frame,
    report_schema,
)
from cogstats.ledger import Ledger

__all__ = ["EVIDENCE_DECISION_COLUMNS", "EvidenceGate"]

SEQUENTIAL = ("fixed", "anytime", "group")
MULTIPLICITY = ("none", "bonferroni", "holm", "bh", "by")

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


@register_gate(
    "evidence",
    description="promote/evict on any estimator's inference, with error control",
    compiled=True,
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
    alpha: float = 0.05
    promote_margin: float = 0.0
    evict_margin: float = 0.0
    min_trials: int = 3
    max_trials: int | None = None
    max_baseline_runs: int | None = None
    multiplicity: Literal["none", "bonferroni", "holm", "bh", "by"] = "none"
    sequential: Literal["fixed", "anytime", "group"] = "fixed"
    spending: str = "obrien_fleming"
    spending_options: Mapping[str, Any] = field(default_factory=dict)
    hold_unidentifiable: bool = True

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
        set_(self, "alpha", check_probability("alpha", self.alpha))
        if self.alpha >= 0.5:
            raise ParameterError(f"alpha must be < 0.5 (a per-side error rate); got {self.alpha}")
        set_(self, "promote_margin", check_real("promote_margin", self.promote_margin, minimum=0))
        set_(self, "evict_margin", check_real("evict_margin", self.evict_margin, minimum=0))
        set_(self, "min_trials", check_int("min_trials", self.min_trials, minimum=1))
        set_(self, "max_trials", check_int("max_trials", self.max_trials, minimum=1, optional=True))
        set_(
            self,
            "max_baseline_runs",
            check_int("max_baseline_runs", self.max_baseline_runs, minimum=2, optional=True),
        )
        check_choice("multiplicity", self.multiplicity, MULTIPLICITY)
        check_choice("sequential", self.sequential, SEQUENTIAL)
        if not isinstance(self.spending, str):
            raise ParameterError(
                f"spending must be a spending function name; got {self.spending!r}"
            )
        SPENDING.make(self.spending, **dict(self.spending_options or {}))  # validates both
        set_(self, "spending_options", MappingProxyType(dict(self.spending_options or {})))
        if not isinstance(self.hold_unidentifiable, bool):
            raise ParameterError(
                f"hold_unidentifiable must be True or False; got {self.hold_unidentifiable!r}"
            )
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
        self, ledger: Ledger, candidates: Sequence[str] | None = None, *, rng: Any = None
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
        ids = candidate_ids(ledger, candidates)
        stats_frame = ledger.fact_stats()
        trials = dict(zip(stats_frame["fact_id"], stats_frame["trials"], strict=True))
        n_runs = len(ledger)
        judged = [
            f for f in ids if trials.get(f, 0) >= self.min_trials and trials.get(f, 0) < n_runs
        ]
        m = max(1, len(judged))
        rows: dict[str, dict[str, Any]] = {}
        for f in ids:
            n = int(trials.get(f, 0))
            rows[f] = {
                "fact_id": f,
                "decision": "hold",
                "reason": None,
                "why": C.WHY_MIN_TRIALS if n < self.min_trials else C.WHY_NO_BASELINE,
                "trials": n,
                "baseline_runs": n_runs - n,
            }
        if judged:
            self._judge(ledger, judged, m, rows, rng)
        for f in ids:
            self._stopping_rules(rows[f])
        frame = report_frame([rows[f] for f in ids], _SCHEMA)
        return GateReport("evidence", frame, self.to_policy())

    def _stopping_rules(self, row: dict[str, Any]) -> None:
        if row["decision"] != "hold" or row["trials"] == 0:
            return
        if row["trials"] < self.min_trials:
            return
        if self.max_trials is not None and row["trials"] >= self.max_trials:
            row.update(decision="evict", reason=NO_LIFT, why=C.WHY_MAX_TRIALS)
        elif self.max_baseline_runs is not None and row["baseline_runs"] >= self.max_baseline_runs:
            row.update(decision="evict", reason=NO_LIFT, why=C.WHY_MAX_BASELINE_RUNS)

    def _level(self, m: int) -> float:
        """Two-sided confidence level whose one-sided error per side is alpha (/ m)."""
        a = self.alpha / (m if self.multiplicity == "bonferroni" else 1)
        return 1.0 - 2.0 * a

    def _judge(
        self,
        ledger: Ledger,
        judged: list[str],
        m: int,
        rows: dict[str, dict[str, Any]],
        rng: Any,
    ) -> None:
        level = self._level(m)
        result = attribute(
            ledger, self.method, rng=rng, confidence_level=level, **dict(self.options)
        )
        self._apply(result, self._identifiable(ledger, result), judged, m, rows)

    def _apply(
        self,
        result: Any,
        identifiable: Mapping[str, bool],
        judged: list[str],
        m: int,
        rows: dict[str, dict[str, Any]],
    ) -> None:
        """Decide the judged lessons from an attribution (the streaming gate calls it too)."""
        table = {r["fact_id"]: r for r in result.to_frame().iter_rows(named=True)}
        wald = result.settings.get("interval") == "wald" or self.method in _WALD_METHODS
        p_up: list[float] = []
        p_down: list[float] = []
        tested: list[str] = []
        for f in judged:
            row = rows[f]
            r = table.get(f)
            ident = identifiable.get(f, True)
            row["identifiable"] = ident
            held = self.hold_unidentifiable and not ident
            row["why"] = C.WHY_NOT_IDENTIFIABLE if held else C.WHY_NO_ESTIMATE
            if r is None or r["estimate"] is None or r["std_error"] is None:
                continue
            est, se = float(r["estimate"]), float(r["std_error"])
            row.update(estimate=est, std_error=se, ci_low=r["ci_low"], ci_high=r["ci_high"])
            if r.get("baseline_runs") is not None:
                row["baseline_runs"] = int(r["baseline_runs"])
            up, down = self._one_sided(r, est, se, wald)
            row.update(pvalue_promote=up, pvalue_evict=down)
            if held:
                continue
            row["why"] = C.WHY_INSUFFICIENT_EVIDENCE
            tested.append(f)
            p_up.append(up)
            p_down.append(down)
        if not tested:
            return
        promote, evict = self._reject(tested, rows, np.asarray(p_up), np.asarray(p_down), m, wald)
        for f, up_ok, down_ok in zip(tested, promote, evict, strict=True):
            if up_ok and down_ok:
                rows[f]["why"] = C.WHY_BOTH_SIDES
            elif up_ok:
                rows[f].update(decision="promote", why=C.WHY_PROMOTE_EVIDENCE)
            elif down_ok:
                rows[f].update(decision="evict", reason=HARMFUL, why=C.WHY_HARM_EVIDENCE)

    def _identifiable(self, ledger: Ledger, result: Any) -> dict[str, bool]:
        frame = result.to_frame()
        if "identifiable" in frame.columns:
            return {
                f: bool(v) if v is not None else True
                for f, v in zip(frame["fact_id"], frame["identifiable"], strict=True)
            }
        if not self.hold_unidentifiable:
            return {}
        from cogstats.estimators.identifiability import check_identifiability

        check = check_identifiability(ledger)
        return dict(zip(check["fact_id"], check["identifiable"], strict=True))

    def _one_sided(
        self, r: Mapping[str, Any], est: float, se: float, wald: bool
    ) -> tuple[float, float]:
        """One-sided p-values of H0: effect <= promote_margin and H0: effect >= -evict_margin."""
        pm, em = float(self.promote_margin), float(self.evict_margin)
        if wald:
            if se == 0:
                return (0.0 if est > pm else 1.0), (0.0 if est < -em else 1.0)
            df = r.get("df")
            if df is not None and math.isfinite(float(df)):
                up = float(special.stdtr(float(df), -(est - pm) / se))
                down = float(special.stdtr(float(df), -(-em - est) / se))
            else:
                up = float(special.ndtr(-(est - pm) / se))
                down = float(special.ndtr(-(-em - est) / se))
            return up, down
        p = r.get("pvalue")
        if p is None or pm != 0 or em != 0:
            return math.nan, math.nan
        half = float(p) / 2
        return (half, 1 - half) if est > 0 else (1 - half, half)

    def _reject(
        self,
        tested: list[str],
        rows: dict[str, dict[str, Any]],
        p_up: np.ndarray,
        p_down: np.ndarray,
        m: int,
        wald: bool,
    ) -> tuple[np.ndarray, np.ndarray]:
        pm, em = float(self.promote_margin), float(self.evict_margin)
        if self.sequential == "group":
            if not wald:
                raise ParameterError(
                    f"sequential='group' needs a Wald-type method (estimate, std_error); "
                    f"{self.method!r} is not"
                )
            alpha = self.alpha / (m if self.multiplicity == "bonferroni" else 1)
            bounds = self._boundaries(alpha)
            promote = np.zeros(len(tested), dtype=bool)
            evict = np.zeros(len(tested), dtype=bool)
            for i, f in enumerate(tested):
                row = rows[f]
                n = min(row["trials"], int(self.max_trials or row["trials"]))
                b = bounds[n]
                row["boundary"] = b
                se = row["std_error"]
                if se > 0:
                    promote[i] = (row["estimate"] - pm) / se >= b
                    evict[i] = (-em - row["estimate"]) / se >= b
            return promote, evict
        if self.multiplicity in ("none", "bonferroni"):
            # the interval at the gate's level: one-sided alpha (/ m) per side
            lo = np.array([rows[f]["ci_low"] for f in tested], dtype=float)
            hi = np.array([rows[f]["ci_high"] for f in tested], dtype=float)
            return lo > pm, hi < -em
        if np.isnan(p_up).any():
            raise ParameterError(
                f"multiplicity={self.multiplicity!r} needs one-sided p-values; method "
                f"{self.method!r} gives them only at zero margins"
            )
        from cogstats.estimators.multiplicity import adjust

        up = adjust(p_up, self.multiplicity, alpha=self.alpha).rejected
        down = adjust(p_down, self.multiplicity, alpha=self.alpha).rejected
        return np.asarray(up, dtype=bool), np.asarray(down, dtype=bool)

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
#: methods whose std_error/df describe a t or normal sampling distribution of the estimate
_WALD_METHODS = ("lift", "welch", "ols", "ridge", "fraclogit", "mixed", "ipw", "aipw")
