"""Attribution estimators: every lesson's effect on the score, with inference.

``attribute(ledger, method=...)`` looks the method up in :data:`METHODS`; every method
returns an :class:`Attribution`.  Production code may import this package with numpy,
scipy, polars and statsmodels only.
"""

from cogstats.estimators import lift as _lift  # noqa: F401  (registers lift, welch)
from cogstats.estimators._base import (
    ATTRIBUTION_COLUMNS,
    METHODS,
    Attribution,
    EstimatorSpec,
    attribute,
)
from cogstats.estimators.lift import WelchResult, required_trials, student_t_cdf, welch_lift
from cogstats.estimators.multiplicity import benjamini_hochberg

__all__ = [
    "ATTRIBUTION_COLUMNS",
    "METHODS",
    "Attribution",
    "EstimatorSpec",
    "WelchResult",
    "attribute",
    "benjamini_hochberg",
    "required_trials",
    "student_t_cdf",
    "welch_lift",
]
