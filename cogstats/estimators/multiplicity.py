"""Multiple-testing control across lessons.

:func:`benjamini_hochberg` is the step-up rule cycgraph's gate uses (inclusive
comparison ``p_(k) <= (k / m) * q``), computed by statsmodels' ``multipletests`` with the
method named explicitly; it reproduces cycgraph's recorded vectors exactly.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from statsmodels.stats.multitest import multipletests

from cogstats._validation import ParameterError, check_probability

__all__ = ["benjamini_hochberg"]


def _pvalue_array(pvalues: Sequence[float] | np.ndarray, name: str = "pvalues") -> np.ndarray:
    p = np.asarray(pvalues, dtype=float)
    if p.ndim != 1:
        raise ParameterError(f"{name} must be one-dimensional; got shape {p.shape}")
    if np.isnan(p).any() or (p < 0).any() or (p > 1).any():
        bad = p[np.isnan(p) | (p < 0) | (p > 1)][0]
        raise ParameterError(f"{name} must lie in [0, 1]; got {bad!r}")
    return p


def benjamini_hochberg(pvalues: Sequence[float] | np.ndarray, q: float) -> np.ndarray:
    """Benjamini-Hochberg step-up rule at false discovery rate ``q``.

    Parameters
    ----------
    pvalues : sequence of float
        One p-value per hypothesis, each in [0, 1].
    q : float
        Target false discovery rate, in (0, 1).

    Returns
    -------
    numpy.ndarray of bool
        ``True`` where the hypothesis is rejected.

    Examples
    --------
    >>> benjamini_hochberg([0.01, 0.02, 0.03], q=0.06).tolist()
    [True, True, True]
    """
    p = _pvalue_array(pvalues)
    q = check_probability("q", q)
    if p.size == 0:
        return np.zeros(0, dtype=bool)
    reject, *_ = multipletests(p, alpha=q, method="fdr_bh", is_sorted=False, returnsorted=False)
    return np.asarray(reject, dtype=bool)
