"""Today's implementation (before the production-path rewrite), kept as an oracle.

The batch statistics, the cycgraph gate and ``ols`` as they were before they moved to
additive statistics and sparse normal equations (git history: the commit before
"Production path"), copied with their arithmetic unchanged so that tests and benchmarks
can compare the new code with them: decisions identical, numbers to stated tolerances,
and the speed ratios of benchmarks P2 and P4.  Not part of the package.

What changed around them is only plumbing: they take a ``Ledger`` and read its raw
scores and fact lists, build the inclusion design the old way (``scipy.sparse`` COO to
CSR with ``sum_duplicates``), and use statsmodels' ``multipletests`` for
Benjamini-Hochberg as the old ``benjamini_hochberg`` did.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, cast

import numpy as np
import polars as pl
from scipy import sparse

from cogstats import Ledger
from cogstats._validation import ParameterError, check_real
from cogstats.estimators.identifiability import (
    DEFAULT_TOL,
    DEFAULT_VIF_THRESHOLD,
    _frame,
    covariate_design,
    group_codes,
)
from cogstats.estimators.lift import welch_lift
from cogstats.gates.cycgraph import CycgraphGate

HARMFUL = "eval-gate:harmful"
NO_LIFT = "eval-gate:no_lift"


# ---------------------------------------------------------------------- ledger statistics
def old_design(ledger: Ledger) -> tuple[tuple[str, ...], sparse.csr_array]:
    """The old ``Ledger.design()``: (fact ids, CSR inclusion matrix)."""
    pos: dict[str, int] = {}
    rows: list[int] = []
    cols: list[int] = []
    for i, ids in enumerate(ledger.frame["fact_ids"].to_list()):
        seen: set[str] = set()
        for f in ids:
            if f in seen:
                continue
            seen.add(f)
            j = pos.setdefault(f, len(pos))
            rows.append(i)
            cols.append(j)
    data = np.ones(len(rows), dtype=np.float64)
    mat = sparse.csr_array(
        (data, (np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64))),
        shape=(len(ledger), len(pos)),
        dtype=np.float64,
    )
    mat.sum_duplicates()
    return tuple(pos), mat


def _aggregate(y: np.ndarray) -> tuple[int, float, float | None]:
    n = len(y)
    if n == 0:
        return 0, 0.0, None
    mean = float(np.cumsum(y)[-1] / n)
    if n < 2:
        return n, mean, None
    dev = y - mean
    return n, mean, float(np.dot(dev, dev) / (n - 1))


def old_stats(
    ledger: Ledger,
    fact_ids: Sequence[str],
    design: tuple[tuple[str, ...], sparse.csr_array] | None = None,
) -> list[tuple[str, int, float, float | None, int, float, float | None]]:
    """Per lesson: (id, trials, mean, variance, baseline runs, mean, variance), the old way.

    ``design``: :func:`old_design` of the ledger, when the caller has it (the old ledger
    cached it); built here otherwise.
    """
    all_ids, matrix = old_design(ledger) if design is None else design
    by_fact = sparse.csr_array(matrix.T)
    by_fact.sort_indices()
    y = ledger.scores
    trials = np.diff(by_fact.indptr).astype(np.int64)
    sums = by_fact @ y
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(trials > 0, sums / np.maximum(trials, 1), 0.0)
    dev = y[by_fact.indices] - np.repeat(means, trials)
    ss = np.zeros(len(trials))
    nonempty = trials > 0
    if nonempty.any():
        starts = by_fact.indptr[:-1][nonempty]
        ss[nonempty] = np.add.reduceat(dev * dev, starts)
    with np.errstate(invalid="ignore", divide="ignore"):
        variances = np.where(trials > 1, ss / np.maximum(trials - 1, 1), np.nan)
    pos = {f: j for j, f in enumerate(all_ids)}
    coo = matrix.tocoo()
    out = []
    for f in fact_ids:
        j = pos.get(f)
        member = np.zeros(len(ledger), dtype=bool)
        if j is not None:
            member[coo.row[coo.col == j]] = True
        n_b, mean_b, var_b = _aggregate(y[~member])
        if j is None:
            out.append((f, 0, math.nan, None, n_b, mean_b, var_b))
        else:
            t = int(trials[j])
            out.append(
                (f, t, float(means[j]), None if t < 2 else float(variances[j]), n_b, mean_b, var_b)
            )
    return out


# ---------------------------------------------------------------------- cycgraph gate
def _bh(p: np.ndarray, q: float) -> np.ndarray:
    if p.size == 0:
        return np.zeros(0, dtype=bool)
    from statsmodels.stats.multitest import multipletests

    reject, *_ = multipletests(p, alpha=q, method="fdr_bh", is_sorted=False, returnsorted=False)
    return np.asarray(reject, dtype=bool)


def old_cycgraph_evaluate(
    gate: CycgraphGate,
    ledger: Ledger,
    candidates: Sequence[str] | None = None,
    design: tuple[tuple[str, ...], sparse.csr_array] | None = None,
) -> pl.DataFrame:
    """The old ``CycgraphGate.evaluate``: the decisions frame (fact_id ... alpha_bracket)."""
    ids = list(ledger.fact_ids if candidates is None else candidates)
    rows = old_stats(ledger, ids, design)
    out: list[dict[str, Any]] = []
    tested: list[int] = []
    for f, n, mean_a, var_a, n_b, mean_b, var_b in rows:
        row: dict[str, Any] = {
            "fact_id": f,
            "decision": "hold",
            "reason": None,
            "trials": n,
            "baseline_runs": n_b,
        }
        out.append(row)
        max_hit = gate.max_trials is not None and n >= gate.max_trials
        if n == 0 or n < gate.min_trials:
            continue
        if gate.decision_rule == "margin":
            if n_b == 0:
                if max_hit:
                    row.update(decision="evict", reason=NO_LIFT)
                continue
            lift = mean_a - mean_b
            if lift >= gate.promote_margin:
                row["decision"] = "promote"
            elif -lift >= gate.evict_margin:
                row.update(decision="evict", reason=HARMFUL)
            elif max_hit:
                row.update(decision="evict", reason=NO_LIFT)
            continue
        if n < 2 or n_b < 2:
            if max_hit:
                row.update(decision="evict", reason=NO_LIFT)
            continue
        floor = gate.noise_floor_sd
        va = max(0.0 if var_a is None else var_a, floor**2)
        vb = max(0.0 if var_b is None else var_b, floor**2)
        promo = welch_lift(mean_a, va, n, mean_b, vb, n_b, gate.promote_margin)
        evict = welch_lift(mean_a, va, n, mean_b, vb, n_b, -gate.evict_margin)
        row.update(
            lift=promo.lift,
            se=promo.se,
            df=promo.df,
            confidence_promote=promo.p_exceeds,
            confidence_evict=1.0 - evict.p_exceeds,
        )
        if gate.sequential_control == "doubling":
            row["alpha_bracket"] = n_b.bit_length() - 1
        tested.append(len(out) - 1)
    if tested:
        _apply_tests(gate, [out[i] for i in tested])
    schema = {
        "fact_id": pl.String,
        "decision": pl.String,
        "reason": pl.String,
        "trials": pl.Int64,
        "lift": pl.Float64,
        "se": pl.Float64,
        "df": pl.Float64,
        "confidence_promote": pl.Float64,
        "confidence_evict": pl.Float64,
        "baseline_runs": pl.Int64,
        "alpha_bracket": pl.Int64,
    }
    return pl.DataFrame({c: [r.get(c) for r in out] for c in schema}, schema=schema)


def _apply_tests(gate: CycgraphGate, tested: list[dict[str, Any]]) -> None:
    def spend(row: dict[str, Any], p: float) -> float:
        k = row.get("alpha_bracket")
        return p if k is None else min(1.0, p * 2.0**k)

    promote_p = np.array([spend(r, 1.0 - r["confidence_promote"]) for r in tested])
    evict_p = np.array([spend(r, 1.0 - r["confidence_evict"]) for r in tested])
    q_promote = 1.0 - gate.promote_confidence
    q_evict = 1.0 - gate.evict_confidence
    if gate.multiple_comparison == "bh":
        promote_reject = _bh(promote_p, q_promote)
        evict_reject = _bh(evict_p, q_evict)
    else:
        promote_reject = promote_p <= q_promote
        evict_reject = evict_p <= q_evict
    for row, up, down in zip(tested, promote_reject, evict_reject, strict=True):
        if up and down:
            continue
        if up:
            row["decision"] = "promote"
        elif down:
            row.update(decision="evict", reason=HARMFUL)
        elif (gate.max_trials is not None and row["trials"] >= gate.max_trials) or (
            gate.max_baseline_runs is not None and row["baseline_runs"] >= gate.max_baseline_runs
        ):
            row.update(decision="evict", reason=NO_LIFT)


# ---------------------------------------------------------------------- ols
def old_ols(
    ledger: Ledger,
    *,
    covariates: Sequence[str] = (),
    cov: str = "HC3",
    cluster: str | None = None,
    confidence_level: float = 0.95,
    vif_threshold: float = 1e3,
) -> pl.DataFrame:
    """The old ``ols``: statsmodels OLS on the dense design after the dense SVD check.

    Returns fact_id, estimate, std_error, ci_low, ci_high, pvalue, identifiable (null
    inference for lessons that are not identifiable).
    """
    import statsmodels.api as sm

    controls = covariate_design(ledger, covariates)
    all_ids, matrix = old_design(ledger)
    x = np.asarray(matrix.toarray(), dtype=np.float64)
    ident = old_lesson_identifiability(
        x,
        all_ids,
        controls=controls.matrix,
        control_sources=controls.sources,
        vif_threshold=vif_threshold,
    )
    keep = ident["identifiable"].to_numpy().astype(bool)
    exog = np.hstack([np.ones((len(ledger), 1)), controls.matrix, x[:, keep]])
    codes = group_codes(ledger, cluster, parameter="cluster")[0] if cluster else None
    use_t = cov != "cluster"
    cov_kwds = {"groups": codes} if cov == "cluster" else None
    fit = sm.OLS(ledger.scores, exog).fit(cov_type=cov, cov_kwds=cov_kwds, use_t=use_t)
    lesson = slice(exog.shape[1] - int(keep.sum()), exog.shape[1])
    ci = np.asarray(fit.conf_int(alpha=1.0 - confidence_level))[lesson]

    def spread(values: Any) -> np.ndarray:
        out = np.full(keep.size, np.nan)
        out[keep] = np.asarray(values, dtype=np.float64)
        return out

    return pl.DataFrame(
        {
            "fact_id": list(all_ids),
            "estimate": spread(np.asarray(fit.params)[lesson]),
            "std_error": spread(np.asarray(fit.bse)[lesson]),
            "ci_low": spread(ci[:, 0]),
            "ci_high": spread(ci[:, 1]),
            "pvalue": spread(np.asarray(fit.pvalues)[lesson]),
            "identifiable": keep,
        }
    )


# ---------------------------------------------------------------------- identifiability
# The old dense check (verbatim but for the docstring): the SVD of the centred design.


def old_lesson_identifiability(
    lessons: np.ndarray | sparse.sparray,
    fact_ids: Sequence[str],
    *,
    controls: np.ndarray | None = None,
    control_sources: Sequence[str] = (),
    tol: float = DEFAULT_TOL,
    vif_threshold: float = DEFAULT_VIF_THRESHOLD,
) -> pl.DataFrame:
    """The old array-level identifiability check (dense SVD)."""
    tol = cast(float, check_real("tol", tol, minimum=0.0, exclusive_minimum=True))
    vif_threshold = cast(
        float, check_real("vif_threshold", vif_threshold, minimum=1.0, exclusive_minimum=True)
    )
    raw: Any = lessons
    x = np.asarray(raw.toarray() if sparse.issparse(raw) else raw, dtype=np.float64)
    n, p = x.shape
    ids = list(fact_ids)
    if len(ids) != p:
        raise ParameterError(f"fact_ids has {len(ids)} labels for {p} lesson columns")
    z = np.zeros((n, 0)) if controls is None else np.asarray(controls, dtype=np.float64)
    sources = list(control_sources) if control_sources else [f"x{k}" for k in range(z.shape[1])]

    present = x != 0
    counts = present.sum(axis=0)
    every, none = counts == n, counts == 0
    constant = every | none
    # exact duplicates: hash each column's packed inclusion bits (a loop over lessons)
    groups: dict[bytes, list[int]] = {}
    for j in range(p):
        groups.setdefault(np.packbits(present[:, j]).tobytes(), []).append(j)
    rep = np.empty(p, dtype=np.int64)
    members: dict[int, list[int]] = {}
    for group in groups.values():
        rep[group] = group[0]
        members[group[0]] = group
    reps = [j for j in members if not constant[j]]

    # weak directions of the centred design with unit-length columns
    d = np.hstack([x[:, reps], z]) if n else np.zeros((0, len(reps) + z.shape[1]))
    d = d - d.mean(axis=0) if n else d
    norms = np.sqrt((d * d).sum(axis=0))
    usable = norms > 0  # lesson reps are non-constant; constant controls carry nothing
    usable[: len(reps)] = True
    d = d[:, usable] / norms[usable]
    col_sources = ["" for _ in reps] + [
        s for s, u in zip(sources, usable[len(reps) :], strict=True) if u
    ]
    m = d.shape[1]
    vif_cols = np.ones(m)
    member = np.zeros((m, 0), dtype=bool)
    if m:
        _, s, vt = np.linalg.svd(d, full_matrices=m > n)
        s = np.concatenate([s, np.zeros(m - s.size)])
        s_max = s[0] if s.size else 0.0
        floor = max(s_max * np.finfo(float).eps * max(n, m), np.finfo(float).tiny)
        contrib = vt.T**2 / np.maximum(s, floor)[None, :] ** 2
        singular = s <= tol * s_max
        weak = singular | (s**2 < 1.0 / vif_threshold)
        vif_cols = contrib.sum(axis=1)
        exact = (contrib[:, singular] > vif_threshold).any(axis=1)
        vif_cols = np.where(exact, np.inf, vif_cols)
        member = (contrib[:, weak] > 1.0) & (vif_cols > vif_threshold)[:, None]

    vif = np.full(p, np.nan)
    flagged = constant.copy()
    reason: list[str | None] = [None] * p
    for j in np.flatnonzero(every).tolist():
        reason[j] = "no contrast: in every run"
    for j in np.flatnonzero(none).tolist():
        reason[j] = "no contrast: in no run"
    rep_pos = {j: k for k, j in enumerate(reps)}
    for j in range(p):
        if constant[j]:
            continue
        k = rep_pos[int(rep[j])]
        vif[j] = vif_cols[k]
        if len(members[int(rep[j])]) > 1:
            vif[j] = np.inf
            flagged[j] = True
            reason[j] = "duplicate inclusion pattern"
        elif vif_cols[k] > vif_threshold:
            flagged[j] = True
            reason[j] = "exactly collinear" if np.isinf(vif_cols[k]) else "near collinear"

    aliased: list[list[str]] = [[] for _ in range(p)]
    aliased_cov: list[list[str]] = [[] for _ in range(p)]
    n_rep = len(reps)
    for j in range(p):
        if not flagged[j]:
            continue
        partners: set[int] = {i for i in members[int(rep[j])] if i != j}
        if constant[j]:
            aliased[j] = [ids[i] for i in sorted(partners)]
            continue
        k = rep_pos[int(rep[j])]
        if member.shape[1]:
            linked = np.asarray(member[:, member[k]].any(axis=1))
            linked[k] = False
            for c in np.flatnonzero(linked):
                if c < n_rep:
                    partners.update(members[reps[c]])
                else:
                    aliased_cov[j].append(col_sources[c])
        partners.discard(j)
        aliased[j] = [ids[i] for i in sorted(partners)]
        aliased_cov[j] = sorted(set(aliased_cov[j]))
    return _frame(ids, ~flagged, aliased, vif, reason, aliased_cov)
