"""The attribution result type and the registry of estimators.

Every estimator is a function ``fn(ledger, *, rng, **options) -> Attribution`` registered
under a method name with its options and their defaults.  :func:`attribute` looks the
method up in :data:`METHODS` (a :class:`~cogstats._registry.Registry`), rejects unknown
options (naming the allowed ones), and calls it.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np
import polars as pl
from scipy import special

from cogstats._registry import Registry
from cogstats._results import format_settings, frame_text
from cogstats._validation import ParameterError, check_probability, suggest

__all__ = [
    "ATTRIBUTION_COLUMNS",
    "METHODS",
    "Attribution",
    "EstimatorSpec",
    "get_spec",
    "register",
]

#: The fixed leading columns of every attribution frame, in order.
ATTRIBUTION_COLUMNS: tuple[str, ...] = (
    "fact_id",
    "method",
    "estimate",
    "std_error",
    "ci_low",
    "ci_high",
    "pvalue",
    "trials",
    "baseline_runs",
)

_SCHEMA: dict[str, Any] = {
    "fact_id": pl.String,
    "method": pl.String,
    "estimate": pl.Float64,
    "std_error": pl.Float64,
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
    "pvalue": pl.Float64,
    "trials": pl.Int64,
    "baseline_runs": pl.Int64,
}


@dataclass(frozen=True, repr=False, eq=False)
class Attribution:
    """Per-lesson effect estimates from one estimator on one ledger.

    Attributes
    ----------
    method : str
        The registry name of the estimator that made it.
    table : polars.DataFrame
        One row per lesson; columns :data:`ATTRIBUTION_COLUMNS` then method-specific
        ones.  ``estimate`` is the lesson's effect on the score; ``pvalue`` is two-sided
        for H0: effect = 0 unless the method says otherwise in ``settings``.
    settings : mapping
        Every option the estimator ran with (defaults filled in).
    seed : int or None
        Entropy of the random stream used, for methods that draw (else None).
    extras : mapping
        Raw material kept for inspection (null distributions, fitted models, ...).
    """

    method: str
    table: pl.DataFrame
    settings: Mapping[str, Any] = field(default_factory=dict)
    seed: int | None = None
    extras: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        missing = [c for c in ATTRIBUTION_COLUMNS if c not in self.table.columns]
        if missing:  # a programming error in an estimator, not a user error
            raise RuntimeError(f"attribution table from {self.method!r} lacks columns {missing}")
        object.__setattr__(self, "settings", MappingProxyType(dict(self.settings)))
        object.__setattr__(self, "extras", MappingProxyType(dict(self.extras)))

    @property
    def fact_ids(self) -> tuple[str, ...]:
        """Lesson ids in table order."""
        return tuple(self.table["fact_id"].to_list())

    def to_frame(self) -> pl.DataFrame:
        """Return the attribution table (fixed column names; numbers are never rounded)."""
        return self.table

    def row(self, fact_id: str) -> dict[str, Any]:
        """Return the row of one lesson as a dict.

        Raises
        ------
        ParameterError
            When the lesson is not in the table.
        """
        hit = self.table.filter(pl.col("fact_id") == fact_id)
        if hit.height == 0:
            raise ParameterError(
                f"fact_id {fact_id!r} is not in this attribution{suggest(fact_id, self.fact_ids)}"
            )
        return hit.row(0, named=True)

    def confidence_interval(self, confidence_level: float = 0.95) -> pl.DataFrame:
        """Intervals at another level, for methods with a normal or t reference.

        Uses ``estimate +/- q * std_error`` with ``q`` from the t distribution when the
        table has a ``df`` column, else the normal.  Methods whose intervals are not of
        that form (permutation, confidence sequences) raise.

        Examples
        --------
        >>> from cogstats import Ledger, attribute
        >>> ledger = Ledger.from_records([
        ...     {"run_id": f"r{i}", "score": s, "fact_ids": f}
        ...     for i, (s, f) in enumerate([(0.9, ["a"]), (0.7, ["a"]), (0.5, []), (0.6, [])])
        ... ])
        >>> ci = attribute(ledger, method="lift").confidence_interval(0.9)
        >>> ci.columns
        ['fact_id', 'ci_low', 'ci_high']
        """
        if self.settings.get("interval") not in (None, "wald"):
            raise ParameterError(
                f"method {self.method!r} gives {self.settings.get('interval')} intervals; "
                "re-run attribute(..., confidence_level=...) instead"
            )
        level = check_probability("confidence_level", confidence_level)
        est = self.table["estimate"].to_numpy()
        se = self.table["std_error"].to_numpy()
        if "df" in self.table.columns:
            df = self.table["df"].to_numpy().astype(float)
            finite = np.isfinite(df)
            q = np.where(
                finite,
                special.stdtrit(np.where(finite, df, 1.0), 0.5 + level / 2),
                special.ndtri(0.5 + level / 2),
            )
        else:
            q = np.full(len(est), special.ndtri(0.5 + level / 2))
        return pl.DataFrame(
            {
                "fact_id": self.table["fact_id"],
                "ci_low": est - q * se,
                "ci_high": est + q * se,
            }
        )

    def summary(self) -> str:
        """Return a text report: method, settings, and the table."""
        lines = [f"Attribution (method={self.method!r})"]
        if self.settings:
            lines.append(f"settings: {format_settings(self.settings)}")
        lines.append(frame_text(self.table))
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"Attribution(method={self.method!r}, lessons={self.table.height})"

    def _repr_html_(self) -> str:
        head = f"<strong>Attribution</strong> method={html.escape(self.method)}"
        if self.settings:
            head += f"<br><small>{html.escape(format_settings(self.settings))}</small>"
        with pl.Config(float_precision=4, tbl_rows=50):
            return f"<div>{head}{self.table._repr_html_()}</div>"


def check_fact_id(ledger: Any, fact_id: Any) -> str:
    """Return ``fact_id`` when it is a lesson of ``ledger``; else a ParameterError.

    The error says what was given, suggests a near id, and how many lessons there are.

    Examples
    --------
    >>> from cogstats import Ledger
    >>> ledger = Ledger.from_records([{"run_id": "r1", "score": 0.5, "fact_ids": ["tone"]}])
    >>> check_fact_id(ledger, "tone")
    'tone'
    >>> check_fact_id(ledger, "tones")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    cogstats._validation.ParameterError: fact_id must be a lesson in the ledger; got 'tones'...
    """
    if not isinstance(fact_id, str) or fact_id not in ledger.fact_ids:
        hint = suggest(fact_id, ledger.fact_ids) if isinstance(fact_id, str) else ""
        raise ParameterError(
            f"fact_id must be a lesson in the ledger; got {fact_id!r}{hint} "
            f"(the ledger has {len(ledger.fact_ids)} lessons)"
        )
    return fact_id


def make_table(method: str, columns: Mapping[str, Any]) -> pl.DataFrame:
    """Build an attribution table with the fixed columns first and typed.

    ``columns`` must hold every name in :data:`ATTRIBUTION_COLUMNS` except ``method``;
    extra names become method-specific columns, after the fixed ones.
    """
    n = len(columns["fact_id"])
    data: dict[str, pl.Series] = {}
    for name in ATTRIBUTION_COLUMNS:
        values = [method] * n if name == "method" else columns[name]
        data[name] = _series(name, values, _SCHEMA[name])
    for name, values in columns.items():
        if name not in data:
            data[name] = _series(name, values, None)
    return pl.DataFrame(data)


def _series(name: str, values: Any, dtype: Any) -> pl.Series:
    if isinstance(values, pl.Series):
        return values.rename(name).cast(dtype) if dtype is not None else values.rename(name)
    if isinstance(values, np.ndarray) and values.dtype.kind == "f":
        # NaN marks "not available" inside estimators; the frame says null
        s = pl.Series(name, values, dtype=dtype or pl.Float64, nan_to_null=True)
        return s
    return pl.Series(name, values, dtype=dtype, strict=False)


@dataclass(frozen=True)
class EstimatorSpec:
    """One registry entry.

    Attributes
    ----------
    name : str
        The method name.
    function : callable
        ``function(ledger, [rng=...,] **options) -> Attribution``.
    defaults : mapping
        Every option with its default; :func:`attribute` rejects other names.
    description : str
        One line for listings.
    uses_rng : bool
        Whether the method draws (then it receives ``rng``).
    invalid : mapping
        For the conformance suite: an invalid value of each option that the estimator
        must reject with a :class:`~cogstats._validation.ParameterError` naming it.
    requires : tuple of str
        Ledger columns the method needs beyond run_id, score, fact_ids (the conformance
        suite provides them; e.g. ``("propensities",)``).
    conservative : bool
        True when the method's tests are valid but conservative by design (anytime-valid
        methods), so calibration checks only bound the error rate from above.
    """

    name: str
    function: Callable[..., Attribution]
    defaults: Mapping[str, Any]
    description: str
    uses_rng: bool = False
    invalid: Mapping[str, Any] = field(default_factory=dict)
    requires: tuple[str, ...] = ()
    conservative: bool = False


#: The registry: method name -> :class:`EstimatorSpec` (a :class:`~cogstats._registry.Registry`).
#: A method's module is imported when the method is first asked for (a gate on ``welch``
#: must not pay for statsmodels' regression stack); listing it imports every estimator
#: module (``cogstats.estimators.METHODS`` is the complete registry).
METHODS: Registry[EstimatorSpec] = Registry(
    "estimator",
    {
        "lift": "cogstats.estimators.lift",
        "welch": "cogstats.estimators.lift",
        "permutation": "cogstats.estimators.permutation",
        "freedman_lane": "cogstats.estimators.permutation",
        "ipw": "cogstats.estimators.propensity",
        "aipw": "cogstats.estimators.propensity",
        "ols": "cogstats.estimators.regression",
        "ridge": "cogstats.estimators.regression",
        "fraclogit": "cogstats.estimators.regression",
        "mixed": "cogstats.estimators.regression",
        "confseq": "cogstats.estimators.confseq",
        "anytime_ols": "cogstats.estimators.anytime_ols",
        "debiased_ridge": "cogstats.estimators.debiased_ridge",
    },
    param="method",
)


def load_methods() -> Registry[EstimatorSpec]:
    """Import every estimator module, so that :data:`METHODS` is complete; return it."""
    return METHODS.load()


def register(
    name: str,
    *,
    defaults: Mapping[str, Any],
    description: str,
    uses_rng: bool = False,
    invalid: Mapping[str, Any] | None = None,
    requires: tuple[str, ...] = (),
    conservative: bool = False,
) -> Callable[[Callable[..., Attribution]], Callable[..., Attribution]]:
    """Add an estimator function to :data:`METHODS` (a decorator; see :class:`EstimatorSpec`)."""

    def deco(fn: Callable[..., Attribution]) -> Callable[..., Attribution]:
        METHODS.add(
            name,
            EstimatorSpec(
                name,
                fn,
                dict(defaults),
                description,
                uses_rng,
                dict(invalid or {}),
                tuple(requires),
                conservative,
            ),
        )
        return fn

    return deco


def get_spec(method: str) -> EstimatorSpec:
    """Return the registry entry of ``method``, with a clear error when it is unknown.

    Imports only the module that registers ``method`` when it is a known name; the whole
    registry otherwise (to list the choices).

    Examples
    --------
    >>> get_spec("welch").uses_rng
    False
    >>> get_spec("lfit")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    cogstats._validation.ParameterError: method must be one of [...]; got 'lfit' (did you mean...
    """
    return METHODS.lookup(method)
