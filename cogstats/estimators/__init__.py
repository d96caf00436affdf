"""Attribution estimators: every lesson's effect on the score, with inference.

``attribute(ledger, method=...)`` looks the method up in :data:`METHODS`; every method
returns an :class:`Attribution`.  Production code may import this package with numpy,
scipy, polars and statsmodels only.
"""

from cogstats.estimators import lift as _lift  # noqa: F401  (registers lift, welch)
from cogstats.estimators import propensity as _propensity  # noqa: F401  (registers ipw, aipw)
from cogstats.estimators._base import (
    ATTRIBUTION_COLUMNS,
    METHODS,
    Attribution,
    EstimatorSpec,
    attribute,
)
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

__all__ = [
    "ATTRIBUTION_COLUMNS",
    "LOND",
    "METHODS",
    "Attribution",
    "EstimatorSpec",
    "LORDpp",
    "MultipleTestingResult",
    "WelchResult",
    "adjust",
    "aipw",
    "attribute",
    "benjamini_hochberg",
    "e_bh",
    "ipw",
    "required_trials",
    "student_t_cdf",
    "welch_lift",
]
