"""The front door of the estimators: :func:`attribute`.

An in-memory :class:`~cogstats.ledger.Ledger` goes to the method registered in
:data:`~cogstats.estimators._base.METHODS`; the path of a partitioned Parquet dataset goes
to :mod:`cogstats.estimators.partitioned`, which reduces the partitions' sufficient
statistics.  The front door sits above both, so neither imports the other's caller.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

from cogstats._validation import CogstatsError, ParameterError, suggest
from cogstats.estimators._base import Attribution, get_spec
from cogstats.ledger import Ledger

__all__ = ["attribute"]


def attribute(
    ledger: Ledger | str | os.PathLike[str],
    method: str = "lift",
    *,
    rng: Any = None,
    executor: str = "local",
    scheduler: str | None = None,
    **options: Any,
) -> Attribution:
    """Estimate every lesson's effect on the score with one method from the registry.

    Parameters
    ----------
    ledger : Ledger, or str / path of a partitioned Parquet dataset
        The run outcomes.  A path (a directory of Parquet partitions, or one file) is
        attributed partition by partition without loading it (``lift``, ``welch`` and
        ``ols``; see :mod:`cogstats.estimators.partitioned` for the layout), with the
        dataset options ``workers`` and ``check_run_ids`` besides the method's.
    executor : {"local", "dask"}
        For a dataset path: stream the partitions through this process, or reduce them on
        a Dask cluster (the sweeps' words).  An in-memory ledger runs locally.
    scheduler : str, optional
        ``executor="dask"``: the scheduler address (default: a LocalCluster for the call).
    method : str
        A key of :data:`METHODS` (``cogstats.estimators.METHODS`` lists them with their
        options and defaults).
    rng : int, numpy.random.Generator or None
        Seed or generator for methods that draw (permutation); passed through
        ``numpy.random.default_rng``.  Ignored by deterministic methods.
    **options
        Method options; unknown names raise, naming the allowed ones.

    Returns
    -------
    Attribution
        One row per lesson.  On data too thin for a number the number is null, never an
        error: an empty ledger or one without lessons gives an empty table; a lesson in
        every run or in none, or with fewer than 2 runs on a side, has null inference
        (and, where the contrast is missing, a null estimate); a model with as many
        parameters as runs fits exactly and has null standard errors, intervals and
        p-values.

    Raises
    ------
    ParameterError
        For an unknown method or option, an invalid option value, or data a method
        cannot run on at all (e.g. ``mixed`` with a single group, covariates the ledger
        lacks or that have nulls, ``cov="cluster"`` with one cluster); the message
        starts with the method's name and says what to do.
    LedgerError
        When the ledger lacks columns the method needs (``ipw``/``aipw`` without logged
        propensities).

    Examples
    --------
    >>> from cogstats import Ledger, attribute
    >>> ledger = Ledger.from_records([
    ...     {"run_id": "r1", "score": 0.9, "fact_ids": ["a"]},
    ...     {"run_id": "r2", "score": 0.8, "fact_ids": ["a"]},
    ...     {"run_id": "r3", "score": 0.5, "fact_ids": []},
    ...     {"run_id": "r4", "score": 0.6, "fact_ids": []},
    ... ])
    >>> result = attribute(ledger, method="lift")
    >>> round(result.row("a")["estimate"], 10)
    0.3
    """
    if isinstance(ledger, (str, os.PathLike)):
        from cogstats.estimators.partitioned import attribute_dataset  # (Dask, pyarrow: lazily)

        return attribute_dataset(ledger, method, executor=executor, scheduler=scheduler, **options)
    if not isinstance(ledger, Ledger):
        raise ParameterError(
            "ledger must be a cogstats Ledger or the path of a partitioned Parquet dataset; "
            f"got {type(ledger).__name__}"
        )
    if executor != "local" or scheduler is not None:
        raise ParameterError(
            f"executor={executor!r}/scheduler={scheduler!r} apply to a partitioned dataset "
            "path; an in-memory Ledger is attributed in this process (executor='local')"
        )
    spec = get_spec(method)
    unknown = [k for k in options if k not in spec.defaults]
    if unknown:
        raise ParameterError(
            f"unknown option {unknown[0]!r} for method {method!r}"
            f"{suggest(unknown[0], spec.defaults)}; allowed: {sorted(spec.defaults)}"
        )
    merged = {**spec.defaults, **options}
    try:
        with warnings.catch_warnings():
            # numpy's divide-by-zero and invalid-value warnings on degenerate data: the
            # affected numbers are NaN (null in the table), which is the documented answer
            warnings.simplefilter("ignore", RuntimeWarning)
            if spec.uses_rng:
                return spec.function(ledger, rng=rng, **merged)
            return spec.function(ledger, **merged)
    except CogstatsError as exc:
        _name_method(exc, method)
        raise


def _name_method(exc: CogstatsError, method: str) -> None:
    """Prefix the message of an error raised inside an estimator with the method's name."""
    text = str(exc.args[0]) if exc.args else ""
    if f"method {method!r}" not in text and not text.startswith(f"{method}:"):
        exc.args = (f"method {method!r}: {text}", *exc.args[1:])
