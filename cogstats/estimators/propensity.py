"""Known-propensity estimators: inverse probability weighting (IPW) and augmented IPW.

When retrieval injects lessons at random and logs the probabilities, the effect of a lesson
is identified without any model of the score: weighting each run by the inverse of the
probability of what happened to the lesson in it undoes whatever made the runs that carried
the lesson different from those that did not (their difficulty, their task family, the
retrieval policy's preferences), provided the policy's randomization is what the ledger says.

Logged propensities (``cogstats.ledger.PROPENSITY_COLUMNS``): each run may carry
``eligible_ids`` (the lessons retrieval could have injected into it) and ``propensities``
(aligned: the probability that each was injected).  A lesson missing from a run's
``eligible_ids`` had no chance in that run, so the run says nothing about it; a run without
the columns says nothing about any lesson.

Estimand.  For lesson ``j``, among the runs where ``j`` was eligible with a logged
propensity strictly between 0 and 1::

    tau_j = E[Y | do(inject j)] - E[Y | do(not inject j)]

with everything else (the other lessons, the task) distributed as under the logging
policy.  Runs where ``j``'s propensity is exactly 0 or 1 carry no contrast for ``j`` (one
of the two potential outcomes can never be observed there) and are left out of ``j``'s
estimate; they are counted in the ``excluded_runs`` column.

Assumptions shared by both estimators: (i) the logged propensity is the probability with
which the lesson was actually injected, given everything that could also affect the score
(no unlogged randomization and no post-hoc edits of the injection set); (ii) runs are
independent given their propensities (standard errors are the i.i.d. sandwich); (iii) one
run's injections do not change another run's score (no interference).  Adaptive policies
whose propensities depend on earlier runs keep the point estimates unbiased (each weight
has conditional mean one given the past), but the sandwich standard errors then rely on a
martingale central limit theorem and are approximate.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import polars as pl
from scipy import stats

from cogstats._rng import seed_of
from cogstats._validation import (
    LedgerError,
    ParameterError,
    check_int,
    check_probability,
    check_real,
)
from cogstats.estimators._base import Attribution, make_table, register
from cogstats.ledger import PROPENSITY_COLUMNS, Ledger

__all__ = ["aipw", "ipw"]

#: Columns that cannot be used as outcome-model covariates.
_RESERVED = ("run_id", "score", "fact_ids", *PROPENSITY_COLUMNS)


# ---------------------------------------------------------------------- logged propensities
@dataclass(frozen=True)
class _Pairs:
    """(run, lesson) pairs where the lesson was eligible with 0 < p < 1, sorted by lesson.

    ``row`` indexes ledger runs, ``pos`` the lesson in ``fact_ids``, ``p`` the (clipped)
    propensity, ``a`` whether the lesson was injected; ``excluded`` counts per lesson the
    eligible runs whose logged propensity was exactly 0 or 1; ``starts`` are the offsets of
    each lesson's block (length ``len(fact_ids) + 1``).
    """

    fact_ids: tuple[str, ...]
    row: np.ndarray
    pos: np.ndarray
    p: np.ndarray
    a: np.ndarray
    excluded: np.ndarray
    starts: np.ndarray


def _missing_propensities(method: str, detail: str) -> LedgerError:
    return LedgerError(
        f"method {method!r} needs logged injection propensities, but {detail}. Retrieval "
        "must log, on every run, 'eligible_ids' (the lessons it could have injected into "
        "that run) and 'propensities' (aligned with eligible_ids: the probability that each "
        "was injected), e.g. {'run_id': 'r1', 'score': 0.8, 'fact_ids': ['a'], "
        "'eligible_ids': ['a', 'b'], 'propensities': [0.5, 0.25]}",
        field="propensities",
    )


def _pairs(ledger: Ledger, method: str, clip: float) -> _Pairs:
    """Explode the logged propensities into (run, lesson) pairs, vectorized with polars."""
    absent = [c for c in PROPENSITY_COLUMNS if c not in ledger.covariates]
    if absent:
        raise _missing_propensities(method, f"the ledger has no {absent} column(s)")
    if ledger.covariate("eligible_ids").null_count() == len(ledger):
        raise _missing_propensities(method, "no run has them logged (all null)")
    fact_ids = ledger.fact_ids
    k = len(fact_ids)
    index = pl.LazyFrame(
        {"eligible_ids": list(fact_ids), "pos": np.arange(k, dtype=np.int64)},
        schema={"eligible_ids": pl.String, "pos": pl.Int64},
    )
    dedup = (
        ledger.frame.lazy()
        .select(
            pl.int_range(pl.len(), dtype=pl.Int64).alias("row"),
            pl.col("eligible_ids"),
            pl.col("propensities"),
        )
        .drop_nulls()
        .explode(["eligible_ids", "propensities"])
        .drop_nulls()
        # lessons eligible somewhere but never injected are not in fact_ids: no row for them
        .join(index, on="eligible_ids", how="inner")
        .group_by(["pos", "row"])
        .agg(
            pl.col("propensities").min().alias("p"),
            pl.col("propensities").max().alias("p_max"),
        )
        .sort(["pos", "row"])
        .collect()
    )
    clash = dedup.filter(pl.col("p") != pl.col("p_max")).sort("row")
    if clash.height:
        bad = clash.row(0, named=True)
        raise LedgerError(
            f"lesson {fact_ids[bad['pos']]!r} is listed twice in eligible_ids with different "
            f"propensities ({bad['p']!r} and {bad['p_max']!r})",
            row=bad["row"] + 1,
            field="propensities",
        )
    row = dedup["row"].to_numpy().astype(np.int64)
    pos = dedup["pos"].to_numpy().astype(np.int64)
    p = dedup["p"].to_numpy().astype(np.float64)
    inside = (p > 0.0) & (p < 1.0)
    excluded = np.bincount(pos[~inside], minlength=k).astype(np.int64)
    row, pos, p = row[inside], pos[inside], p[inside]
    if clip > 0.0:
        p = np.clip(p, clip, 1.0 - clip)
    # injected (run, lesson) pairs, matched by a single integer code per pair
    design = ledger.design().matrix.tocoo()
    injected_codes = np.asarray(design.row, dtype=np.int64) * k + np.asarray(design.col)
    a = np.isin(row * k + pos, injected_codes)
    starts = np.concatenate([[0], np.cumsum(np.bincount(pos, minlength=k))]).astype(np.int64)
    return _Pairs(fact_ids, row, pos, p, a, excluded, starts)


# ---------------------------------------------------------------------- validation helpers
def _check_bool(name: str, value: Any) -> bool:
    if not isinstance(value, bool | np.bool_):
        raise ParameterError(f"{name} must be True or False; got {value!r}")
    return bool(value)


def _check_clip(clip: Any) -> float:
    return cast(float, check_real("clip", clip, minimum=0.0, maximum=0.5, exclusive_maximum=True))


def _normal_inference(
    est: np.ndarray, se: np.ndarray, level: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Two-sided normal p-values and intervals; ``se == 0`` means the value is exact."""
    with np.errstate(invalid="ignore", divide="ignore"):
        p = 2.0 * stats.norm.sf(np.abs(est / se))
    p = np.where(se == 0, np.where(est == 0, 1.0, 0.0), p)
    q = stats.norm.ppf(0.5 + level / 2)
    return np.asarray(p, dtype=float), est - q * se, est + q * se


# ---------------------------------------------------------------------- IPW
@register(
    "ipw",
    defaults={"confidence_level": 0.95, "normalize": True, "clip": 0.0},
    description="inverse propensity weighting with logged propensities (Hajek or "
    "Horvitz-Thompson) and sandwich standard errors",
    invalid={"confidence_level": 1.0, "normalize": "yes", "clip": 0.5},
    requires=("propensities",),
)
def ipw(ledger: Ledger, *, confidence_level: float, normalize: bool, clip: float) -> Attribution:
    """Inverse probability weighted effect of every lesson, from logged propensities.

    For lesson ``j``, over the ``n`` runs where it was eligible with logged propensity
    ``0 < p_i < 1`` (``A_i`` = injected, ``Y_i`` = score), with ``normalize=True`` the Hajek
    (normalized Horvitz-Thompson) difference::

        mu1 = sum(A Y / p) / sum(A / p),   mu0 = sum((1-A) Y / (1-p)) / sum((1-A) / (1-p))
        estimate = mu1 - mu0

    and with ``normalize=False`` the Horvitz-Thompson difference
    ``mean(A Y / p - (1-A) Y / (1-p))``, which is exactly unbiased but not shift-invariant
    (its variance grows with the score's level, not just its spread).

    Standard errors are the M-estimation sandwich (influence function) with ``n`` in the
    denominator, treating the propensities as known.  Hajek: the influence of run ``i`` is
    ``A w1 (Y - mu1) / mean(A w1) - (1-A) w0 (Y - mu0) / mean((1-A) w0)`` with
    ``w1 = 1/p``, ``w0 = 1/(1-p)``, and ``std_error = sqrt(sum(IF^2)) / n``; this equals the
    HC0 robust standard error of the weighted least squares fit of ``Y`` on ``[1, A]`` with
    weights ``A/p + (1-A)/(1-p)``.  Horvitz-Thompson: ``std_error = sd(z) / sqrt(n)`` (``n``
    denominator) of the per-run contrasts ``z``.  Intervals and two-sided p-values use the
    normal reference; there is no small-sample correction.

    Parameters
    ----------
    ledger : Ledger
        Must carry ``eligible_ids`` and ``propensities`` (else :class:`LedgerError`).
    confidence_level : float
        Level of the normal intervals, in (0, 1).
    normalize : bool
        True: Hajek (the default; far lower variance when the score does not hover around
        0).  False: Horvitz-Thompson.
    clip : float
        Propensities are clipped to ``[clip, 1 - clip]`` before weighting, in [0, 0.5).
        The default 0 clips nothing, keeping the estimator unbiased (Hajek: consistent);
        a positive value caps the weights at ``1/clip`` and trades variance for bias
        (the estimate then no longer targets ``tau_j`` exactly).  Propensities exactly 0
        or 1 are excluded before clipping, never clipped in.

    Returns
    -------
    Attribution
        ``trials``: injected eligible runs; ``baseline_runs``: eligible runs without the
        lesson.  Method columns ``mean_with`` (``mu1``), ``mean_without`` (``mu0``),
        ``excluded_runs`` (eligible runs with propensity exactly 0 or 1).  The estimate is
        null when either arm is empty; inference is null below 2 runs in an arm.

    Raises
    ------
    LedgerError
        When the ledger has no logged propensities (the message says what to log), or a
        lesson is listed twice in one run with different propensities.

    Notes
    -----
    Validated against the closed-form Hajek difference on a hand-worked ledger, against
    statsmodels' WLS with ``cov_type="HC0"`` (estimate and standard error, to 1e-10;
    Horvitz-Thompson: OLS of the contrasts on a constant, HC0), and by simulation:
    unbiased with nominal coverage under randomized and under confounded,
    covariate-dependent propensities (``tests/unit/test_propensity.py``).

    Cost: O(logged (run, eligible lesson) pairs) time and memory (the pairs are sorted once
    by lesson; sums per lesson by ``np.bincount``).

    Examples
    --------
    >>> import numpy as np
    >>> from cogstats import Ledger, attribute
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(0.2, 0.8, 400)          # logged propensity of lesson "a"
    >>> a = rng.random(400) < p
    >>> score = np.clip(0.4 + 0.1 * a + rng.normal(0, 0.05, 400), 0, 1)
    >>> ledger = Ledger.from_records(
    ...     {"run_id": f"r{i}", "score": float(score[i]), "fact_ids": ["a"] if a[i] else [],
    ...      "eligible_ids": ["a"], "propensities": [float(p[i])]} for i in range(400))
    >>> row = attribute(ledger, method="ipw").row("a")
    >>> round(row["estimate"], 3), round(row["std_error"], 4), row["trials"] + row["baseline_runs"]
    (0.105, 0.0051, 400)
    """
    level = check_probability("confidence_level", confidence_level)
    normalize = _check_bool("normalize", normalize)
    clip = _check_clip(clip)
    pr = _pairs(ledger, "ipw", clip)
    k = len(pr.fact_ids)
    y = ledger.scores[pr.row]
    a = pr.a.astype(np.float64)
    w1 = a / pr.p
    w0 = (1.0 - a) / (1.0 - pr.p)
    n = np.bincount(pr.pos, minlength=k).astype(np.float64)
    n1 = np.bincount(pr.pos, weights=a, minlength=k)
    n0 = n - n1
    with np.errstate(invalid="ignore", divide="ignore"):
        if normalize:
            s1 = np.bincount(pr.pos, weights=w1, minlength=k)
            s0 = np.bincount(pr.pos, weights=w0, minlength=k)
            mu1 = np.bincount(pr.pos, weights=w1 * y, minlength=k) / s1
            mu0 = np.bincount(pr.pos, weights=w0 * y, minlength=k) / s0
            # influence function of the two ratio estimators, per (run, lesson) pair
            infl = (
                w1 * (y - mu1[pr.pos]) / (s1 / n)[pr.pos]
                - w0 * (y - mu0[pr.pos]) / (s0 / n)[pr.pos]
            )
            infl = np.nan_to_num(infl, nan=0.0)
        else:
            mu1 = np.bincount(pr.pos, weights=w1 * y, minlength=k) / n
            mu0 = np.bincount(pr.pos, weights=w0 * y, minlength=k) / n
            z = w1 * y - w0 * y
            infl = z - (mu1 - mu0)[pr.pos]
        est = mu1 - mu0
        se = np.sqrt(np.bincount(pr.pos, weights=infl * infl, minlength=k)) / n
    both = (n1 >= 1) & (n0 >= 1)
    est = np.where(both, est, np.nan)
    se = np.where((n1 >= 2) & (n0 >= 2), se, np.nan)
    pvalue, lo, hi = _normal_inference(est, se, level)
    table = make_table(
        "ipw",
        {
            "fact_id": list(pr.fact_ids),
            "estimate": est,
            "std_error": se,
            "ci_low": lo,
            "ci_high": hi,
            "pvalue": pvalue,
            "trials": n1.astype(np.int64),
            "baseline_runs": n0.astype(np.int64),
            "mean_with": np.where(both, mu1, np.nan),
            "mean_without": np.where(both, mu0, np.nan),
            "excluded_runs": pr.excluded,
        },
    )
    settings = {
        "confidence_level": level,
        "normalize": normalize,
        "clip": clip,
        "interval": "wald",
    }
    return Attribution("ipw", table, settings)


# ---------------------------------------------------------------------- AIPW
def _covariate_matrix(ledger: Ledger, names: Any, used: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Covariates as numeric columns (numbers/booleans linear, strings as dummies).

    ``used`` marks the runs that enter some estimate (they must have no missing values);
    dummy levels are the sorted distinct strings among them, the first one dropped.
    """
    if isinstance(names, str) or not isinstance(names, Sequence):
        raise ParameterError(
            "covariates must be a list of ledger covariate names (wrap a single name in a "
            f"list); got {names!r}"
        )
    cols: list[np.ndarray] = []
    labels: list[str] = []
    for name in names:
        if not isinstance(name, str) or name in _RESERVED or name not in ledger.covariates:
            usable = [c for c in ledger.covariates if c not in _RESERVED]
            raise ParameterError(
                f"covariates must name ledger covariates from {usable!r}; got {name!r}"
            )
        series = ledger.covariate(name)
        missing = int(series.is_null().to_numpy()[used].sum())
        if missing:
            raise ParameterError(
                f"covariates: {name!r} is missing in {missing} run(s) with logged "
                "propensities; fill it or leave it out"
            )
        if series.dtype == pl.String:
            values = np.asarray(series.to_list(), dtype=object)
            levels = sorted({v for v in values[used]})
            for level in levels[1:]:
                cols.append((values == level).astype(np.float64))
                labels.append(f"{name}={level}")
        else:
            cols.append(series.cast(pl.Float64).fill_null(0.0).to_numpy().astype(np.float64))
            labels.append(name)
    n = len(ledger)
    matrix = np.column_stack(cols) if cols else np.zeros((n, 0))
    return matrix, labels


def _fit_predict(x_train: np.ndarray, y_train: np.ndarray, x_new: np.ndarray) -> np.ndarray:
    # numpy's least squares instead of statsmodels.OLS: AIPW needs 2 x folds small fits per
    # lesson, and only the predictions; lstsq's minimum-norm solution handles a column that
    # is constant within a training fold exactly as statsmodels' pinv does.
    beta, *_ = np.linalg.lstsq(x_train, y_train, rcond=None)
    return np.asarray(x_new @ beta, dtype=np.float64)


def _fold_ids(rng: np.random.Generator, a: np.ndarray, folds: int) -> np.ndarray:
    """Fold of each run, balanced within each arm (stratified) so each fold has both arms."""
    out = np.empty(len(a), dtype=np.int64)
    for arm in (True, False):
        idx = np.flatnonzero(a == arm)
        out[idx] = rng.permutation(len(idx)) % folds
    return out


def _aipw_features(
    pr: _Pairs,
    j: int,
    rows: np.ndarray,
    cov: np.ndarray,
    cov_labels: list[str],
    inclusion: Any,
) -> tuple[np.ndarray, list[str]]:
    """Build the outcome model's design for lesson ``j`` on its eligible ``rows``, with labels."""
    k = len(pr.fact_ids)
    parts = [np.ones((len(rows), 1)), cov[rows]]
    labels = ["intercept", *cov_labels]
    if inclusion is not None and k > 1:
        others = np.delete(np.arange(k), j)
        parts.insert(1, inclusion[rows][:, others].toarray())
        labels[1:1] = [pr.fact_ids[o] for o in others]
    return np.hstack(parts), labels


def _aipw_scores(
    x: np.ndarray,
    y: np.ndarray,
    p: np.ndarray,
    a: np.ndarray,
    n_folds: int,
    gen: np.random.Generator,
) -> tuple[float, float, float, float]:
    """One lesson's AIPW estimate, its standard error and the two arms' AIPW means."""
    fold = _fold_ids(gen, a, n_folds) if n_folds > 1 else np.zeros(len(y), np.int64)
    m1 = np.empty(len(y))
    m0 = np.empty(len(y))
    for f in range(n_folds):
        test = fold == f
        train = ~test if n_folds > 1 else test
        m1[test] = _fit_predict(x[train & a], y[train & a], x[test])
        m0[test] = _fit_predict(x[train & ~a], y[train & ~a], x[test])
    af = a.astype(np.float64)
    psi1 = m1 + af * (y - m1) / p
    psi0 = m0 + (1.0 - af) * (y - m0) / (1.0 - p)
    phi = psi1 - psi0
    return (
        float(phi.mean()),
        float(phi.std(ddof=1) / np.sqrt(len(phi))),
        float(psi1.mean()),
        float(psi0.mean()),
    )


@register(
    "aipw",
    defaults={
        "confidence_level": 0.95,
        "covariates": (),
        "folds": 2,
        "clip": 0.0,
        "lesson_indicators": True,
    },
    description="augmented IPW (doubly robust) with logged propensities and a cross-fitted "
    "OLS outcome model per arm",
    uses_rng=True,
    invalid={
        "confidence_level": -0.1,
        "covariates": ("no_such_covariate",),
        "folds": 0,
        "clip": -0.1,
        "lesson_indicators": "yes",
    },
    requires=("propensities",),
)
def aipw(
    ledger: Ledger,
    *,
    rng: Any,
    confidence_level: float,
    covariates: Sequence[str],
    folds: int,
    clip: float,
    lesson_indicators: bool,
) -> Attribution:
    """Augmented inverse probability weighted (doubly robust) effect of every lesson.

    For lesson ``j``, over the runs where it was eligible with ``0 < p_i < 1``: an outcome
    model ``m_a(x)`` (OLS of the score on an intercept, the other lessons' inclusion
    indicators and ``covariates``) is fitted separately among injected (``a = 1``) and
    not-injected (``a = 0``) runs.  Each run's AIPW score is::

        phi_i = m1(x_i) - m0(x_i) + A_i (Y_i - m1(x_i)) / p_i - (1 - A_i)(Y_i - m0(x_i)) / (1 - p_i)

    ``estimate = mean(phi)`` and ``std_error = sd(phi) / sqrt(n)`` (``n - 1`` in the sd),
    its influence-function standard error; normal intervals and two-sided p-values.  With
    ``folds = K >= 2`` the runs are split at random (``rng``; balanced within each arm) into
    K folds and each run's ``m1``, ``m0`` come from models fitted on the other folds
    (cross-fitting), so a run's own score never enters its prediction.

    Assumptions.  Because the propensities are logged, not modelled, the propensity half of
    the double robustness holds by design: the estimate is unbiased for ``tau_j`` whatever
    the outcome model (exactly so with cross-fitting; with ``folds=1`` up to an
    ``O(features / n)`` overfitting term), and a good outcome model only lowers the
    variance.  That needs (besides the module's assumptions) the features to be unaffected
    by whether ``j`` was injected: covariates measured before retrieval, and other lessons
    drawn independently of ``j``.  A policy with a fixed number of slots, where injecting
    ``j`` displaces another lesson, breaks this for the lesson indicators: pass
    ``lesson_indicators=False`` there.  Many lessons relative to runs make the per-arm OLS
    noisy (still unbiased, but then possibly worse than plain IPW).

    Parameters
    ----------
    ledger : Ledger
        Must carry ``eligible_ids`` and ``propensities`` (else :class:`LedgerError`).
    rng : int, numpy.random.Generator or None
        Draws the fold split (unused when ``folds == 1``).
    confidence_level : float
        Level of the normal intervals, in (0, 1).
    covariates : sequence of str
        Ledger covariate names for the outcome model: numbers and booleans enter linearly,
        strings as dummies (sorted levels, first dropped).  They may not be missing in runs
        with logged propensities.
    folds : int
        Cross-fitting folds (>= 1; 1 fits and predicts on the same runs).  A lesson needs at
        least ``max(2, folds)`` runs in each arm, else its row is null.
    clip : float
        Propensities are clipped to ``[clip, 1 - clip]``, in [0, 0.5); 0 (the default)
        clips nothing.  See :func:`ipw`.
    lesson_indicators : bool
        Whether the other lessons' inclusion indicators enter the outcome model.

    Returns
    -------
    Attribution
        ``trials``/``baseline_runs``: injected / not-injected eligible runs.  Method columns
        ``mean_with`` and ``mean_without`` (the AIPW means of each arm, whose difference is
        the estimate), ``excluded_runs`` (propensity exactly 0 or 1).  ``extras["features"]``
        names the outcome model's columns.

    Notes
    -----
    Validated by simulation (``tests/unit/test_propensity.py``): unbiased with nominal
    coverage under randomized and confounded, covariate-dependent propensities; a smaller
    variance than IPW when the covariates predict the score; ``folds=1`` with no features
    reproduces the closed form (Horvitz-Thompson around the arm means), and with features
    equals the AIPW score rebuilt from statsmodels OLS fits per arm (to 1e-10).

    Cost: per lesson and fold, a least-squares outcome model on the lesson's eligible runs
    (O(n_j f^2) with f features; with ``lesson_indicators`` every other lesson is a feature);
    memory O(pairs + n_j f).

    Examples
    --------
    >>> import numpy as np
    >>> from cogstats import Ledger, attribute
    >>> rng = np.random.default_rng(1)
    >>> d = rng.normal(0, 0.1, 400)                 # run difficulty, logged as a covariate
    >>> p = 1 / (1 + np.exp(-d / 0.1))              # retrieval favours easy runs
    >>> a = rng.random(400) < p
    >>> score = np.clip(0.5 + d + 0.1 * a + rng.normal(0, 0.03, 400), 0, 1)
    >>> ledger = Ledger.from_records(
    ...     {"run_id": f"r{i}", "score": float(score[i]), "fact_ids": ["a"] if a[i] else [],
    ...      "difficulty": float(d[i]), "eligible_ids": ["a"], "propensities": [float(p[i])]}
    ...     for i in range(400))
    >>> row = attribute(ledger, method="aipw", covariates=["difficulty"], rng=3).row("a")
    >>> round(row["estimate"], 3), round(row["std_error"], 4)
    (0.092, 0.0039)
    >>> round(attribute(ledger, method="lift").row("a")["estimate"], 3)  # confounded
    0.155
    """
    level = check_probability("confidence_level", confidence_level)
    n_folds = cast(int, check_int("folds", folds, minimum=1))
    clip = _check_clip(clip)
    use_lessons = _check_bool("lesson_indicators", lesson_indicators)
    gen = np.random.default_rng(rng)
    pr = _pairs(ledger, "aipw", clip)
    k = len(pr.fact_ids)
    used = np.zeros(len(ledger), dtype=bool)
    used[pr.row] = True
    cov, cov_labels = _covariate_matrix(ledger, covariates, used)
    inclusion = ledger.design().matrix.tocsr() if use_lessons else None
    y_all = ledger.scores

    est = np.full(k, np.nan)
    se = np.full(k, np.nan)
    mean1 = np.full(k, np.nan)
    mean0 = np.full(k, np.nan)
    n1 = np.zeros(k, dtype=np.int64)
    n0 = np.zeros(k, dtype=np.int64)
    features: dict[str, list[str]] = {}
    for j, fact in enumerate(pr.fact_ids):  # a loop over lessons; runs are vectorized
        block = slice(pr.starts[j], pr.starts[j + 1])
        rows, p, a = pr.row[block], pr.p[block], pr.a[block]
        n1[j], n0[j] = int(a.sum()), int((~a).sum())
        x, features[fact] = _aipw_features(pr, j, rows, cov, cov_labels, inclusion)
        if min(n1[j], n0[j]) < max(2, n_folds):
            continue
        est[j], se[j], mean1[j], mean0[j] = _aipw_scores(x, y_all[rows], p, a, n_folds, gen)
    pvalue, lo, hi = _normal_inference(est, se, level)
    table = make_table(
        "aipw",
        {
            "fact_id": list(pr.fact_ids),
            "estimate": est,
            "std_error": se,
            "ci_low": lo,
            "ci_high": hi,
            "pvalue": pvalue,
            "trials": n1,
            "baseline_runs": n0,
            "mean_with": mean1,
            "mean_without": mean0,
            "excluded_runs": pr.excluded,
        },
    )
    settings = {
        "confidence_level": level,
        "covariates": tuple(covariates),
        "folds": n_folds,
        "clip": clip,
        "lesson_indicators": use_lessons,
        "interval": "wald",
    }
    return Attribution("aipw", table, settings, seed=seed_of(rng), extras={"features": features})
