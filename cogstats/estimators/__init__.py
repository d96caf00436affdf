"""Attribution estimators: every lesson's effect on the score, with inference.

``attribute(ledger, method=...)`` looks the method up in :data:`METHODS`; every method
returns an :class:`Attribution`.  Production code may import this package with numpy,
scipy, polars and statsmodels only.

The public names are loaded on first use (PEP 562), so that importing one estimator
module, or a gate built on it, does not pay for statsmodels' regression stack; the
registry is complete as soon as :data:`METHODS`, :func:`attribute` or any method is used.
Group-sequential error spending (:data:`SPENDING`, :func:`spending_boundaries`) is not an
estimator: it lives in :mod:`cogstats.estimators.spending`, for the gates that use it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cogstats._lazy import attach

if TYPE_CHECKING:  # the real names, for type checkers and IDEs
    from cogstats.estimators._base import (
        ATTRIBUTION_COLUMNS,
        METHODS,
        Attribution,
        EstimatorSpec,
        get_spec,
        make_table,
    )
    from cogstats.estimators.anytime_ols import anytime_ols_paths, anytime_ols_sequence
    from cogstats.estimators.attribution import attribute
    from cogstats.estimators.confseq import SequencePaths, confidence_sequence, confseq_paths
    from cogstats.estimators.identifiability import check_identifiability
    from cogstats.estimators.lift import WelchResult, required_trials, student_t_cdf, welch_lift
    from cogstats.estimators.lineage import (
        apply_lessons,
        evicted_lessons,
        exclude_lessons,
        lineage_ancestors,
        pool_lineage,
    )
    from cogstats.estimators.multiplicity import (
        LOND,
        LORDpp,
        MultipleTestingResult,
        adjust,
        benjamini_hochberg,
        e_bh,
    )
    from cogstats.estimators.propensity import aipw, ipw
    from cogstats.estimators.regression import MixedFallbackWarning
    from cogstats.estimators.spending import SPENDING, SpendingBoundaries, spending_boundaries


#: public name -> module that defines it
_LAZY: dict[str, str] = {
    "ATTRIBUTION_COLUMNS": "cogstats.estimators._base",
    "Attribution": "cogstats.estimators._base",
    "EstimatorSpec": "cogstats.estimators._base",
    "get_spec": "cogstats.estimators._base",
    "make_table": "cogstats.estimators._base",
    "attribute": "cogstats.estimators.attribution",
    "check_identifiability": "cogstats.estimators.identifiability",
    "WelchResult": "cogstats.estimators.lift",
    "required_trials": "cogstats.estimators.lift",
    "student_t_cdf": "cogstats.estimators.lift",
    "welch_lift": "cogstats.estimators.lift",
    "apply_lessons": "cogstats.estimators.lineage",
    "evicted_lessons": "cogstats.estimators.lineage",
    "exclude_lessons": "cogstats.estimators.lineage",
    "lineage_ancestors": "cogstats.estimators.lineage",
    "pool_lineage": "cogstats.estimators.lineage",
    "LOND": "cogstats.estimators.multiplicity",
    "LORDpp": "cogstats.estimators.multiplicity",
    "MultipleTestingResult": "cogstats.estimators.multiplicity",
    "adjust": "cogstats.estimators.multiplicity",
    "benjamini_hochberg": "cogstats.estimators.multiplicity",
    "e_bh": "cogstats.estimators.multiplicity",
    "aipw": "cogstats.estimators.propensity",
    "ipw": "cogstats.estimators.propensity",
    "MixedFallbackWarning": "cogstats.estimators.regression",
    "SequencePaths": "cogstats.estimators.confseq",
    "confidence_sequence": "cogstats.estimators.confseq",
    "confseq_paths": "cogstats.estimators.confseq",
    "anytime_ols_paths": "cogstats.estimators.anytime_ols",
    "anytime_ols_sequence": "cogstats.estimators.anytime_ols",
    "SPENDING": "cogstats.estimators.spending",
    "SpendingBoundaries": "cogstats.estimators.spending",
    "spending_boundaries": "cogstats.estimators.spending",
}

__all__ = sorted([*_LAZY, "METHODS"])

_getattr, __dir__ = attach("cogstats.estimators", _LAZY, globals())


def __getattr__(name: str) -> Any:
    if name == "METHODS":  # the registry, complete
        from cogstats.estimators._base import load_methods

        return load_methods()
    return _getattr(name)
