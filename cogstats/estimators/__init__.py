"""Attribution estimators: every lesson's effect on the score, with inference.

``attribute(ledger, method=...)`` looks the method up in :data:`METHODS`; every method
returns an :class:`Attribution`.  Production code may import this package with numpy,
scipy, polars and statsmodels only.
"""

from cogstats.estimators import lift as _lift  # noqa: F401  (registers lift, welch)
from cogstats.estimators import permutation as _permutation  # noqa: F401  (+ freedman_lane)
from cogstats.estimators import propensity as _propensity  # noqa: F401  (registers ipw, aipw)
from cogstats.estimators import regression as _regression  # noqa: F401  (ols, ridge, ...)
from cogstats.estimators import sequential as _sequential  # noqa: F401  (confseq, anytime_ols)
from cogstats.estimators._base import (
    ATTRIBUTION_COLUMNS,
    METHODS,
    Attribution,
    EstimatorSpec,
    attribute,
)
from cogstats.estimators.identifiability import check_identifiability
from cogstats.estimators.lift import WelchResult, required_trials, student_t_cdf, welch_lift
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
from cogstats.estimators.sequential import (
    SequencePaths,
    SpendingBoundaries,
    anytime_ols_paths,
    anytime_ols_sequence,
    confidence_sequence,
    confseq_paths,
    spending_boundaries,
)

__all__ = [
    "ATTRIBUTION_COLUMNS",
    "LOND",
    "METHODS",
    "Attribution",
    "EstimatorSpec",
    "LORDpp",
    "MixedFallbackWarning",
    "MultipleTestingResult",
    "SequencePaths",
    "SpendingBoundaries",
    "WelchResult",
    "adjust",
    "aipw",
    "anytime_ols_paths",
    "anytime_ols_sequence",
    "attribute",
    "benjamini_hochberg",
    "check_identifiability",
    "confidence_sequence",
    "confseq_paths",
    "e_bh",
    "ipw",
    "required_trials",
    "spending_boundaries",
    "student_t_cdf",
    "welch_lift",
]
