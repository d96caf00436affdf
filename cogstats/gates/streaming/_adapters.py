"""The deprecated streaming-adapter protocol (kept working; gates now have ``judge``).

Before the gate protocol of issue 17, a gate streamed through an *adapter*: an object
with a ``judge(stats, candidates)`` method, found from the gate's ``streaming_adapter()``
method or :data:`STREAMING_ADAPTERS` (factories keyed by the gate's registry name, added
with :func:`register_streaming`).  A gate now streams by having
``running_statistics()`` and ``judge(stats, statuses, candidates)`` (see
:class:`~cogstats.gates.StreamingGate`); adapters still work, and those of gates outside
cogstats (and :func:`register_streaming`) warn ``DeprecationWarning``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from cogstats._registry import Registry
from cogstats._validation import ParameterError
from cogstats.stats import StreamingStats

__all__ = ["STREAMING_ADAPTERS", "StreamingAdapter", "register_streaming"]

_DEPRECATED = (
    "streaming adapters are deprecated: give the gate running_statistics() and "
    "judge(stats, statuses=None, candidates=None, *, rng=None) (docs/gates.md, "
    "'Writing a gate'); StreamingGate runs it"
)


class StreamingAdapter:
    """Base class of the objects that let a gate stream (deprecated: see the module).

    Subclass it, implement :meth:`judge`, and make it findable: a ``streaming_adapter()``
    method on the gate class that returns one, or a factory registered with
    :func:`register_streaming` under the gate's registry name.  The other hooks are
    optional.

    Attributes
    ----------
    regression_covariates : tuple of str or None
        Set it to keep ``X'X``, ``X'y``, ``y'y`` over ``[1, these covariates' columns,
        lessons]`` (``()``: intercept and lessons; the default None keeps none).  The
        streaming gate then refuses a run without a value for one of them (a regression
        cannot use it; the batch gate would raise on the whole ledger).
    replays_on_replace : bool
        Whether :meth:`observe` state must be rebuilt from the runs when a run is
        recorded again (the default True calls :meth:`reset` then :meth:`observe` for
        every run).

    Examples
    --------
    A gate of one's own that holds every lesson, streamed:

    >>> import warnings
    >>> from dataclasses import dataclass
    >>> import polars as pl
    >>> from cogstats.gates import GateReport, StreamingGate
    >>> class HoldAllAdapter(StreamingAdapter):
    ...     def judge(self, stats, candidates):
    ...         ids = list(stats.fact_ids if candidates is None else candidates)
    ...         return GateReport("hold_all", pl.DataFrame(
    ...             {"fact_id": ids, "decision": ["hold"] * len(ids)},
    ...             schema=[("fact_id", pl.String), ("decision", pl.String)]))
    >>> @dataclass(frozen=True)
    ... class HoldAll:
    ...     def evaluate(self, ledger, candidates=None, *, rng=None):
    ...         raise NotImplementedError
    ...     def streaming_adapter(self):
    ...         return HoldAllAdapter()
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", DeprecationWarning)
    ...     sg = StreamingGate(HoldAll())
    >>> _ = sg.record("r1", 0.5, ["a"])
    >>> sg.report().held
    ('a',)
    """

    regression_covariates: tuple[str, ...] | None = None
    replays_on_replace: bool = True

    def new_statistics(self) -> StreamingStats:
        """Return the empty statistics the adapter reads (default: per its covariates)."""
        return StreamingStats(self.regression_covariates)

    def judge(self, stats: StreamingStats, candidates: Sequence[str] | None) -> Any:
        """Decide on ``candidates`` (None: ``stats.fact_ids``): a GateReport or Judgement."""
        raise NotImplementedError

    def validate(self, stats: StreamingStats, covariates: Mapping[str, Any]) -> None:
        """Refuse a run before it is recorded (raise :class:`LedgerError` naming the field)."""
        stats.check_regression_covariates(covariates, self.regression_covariates or ())

    def observe(self, stats: StreamingStats, position: int) -> None:
        """Update own state after run ``position`` was appended (optional)."""

    def reset(self, stats: StreamingStats) -> None:
        """Forget own state (before a replay after a run was recorded again)."""

    def state(self) -> dict[str, np.ndarray]:
        """Own state as named arrays, for :meth:`StreamingGate.save` (optional)."""
        return {}

    def restore(self, state: Mapping[str, np.ndarray]) -> None:
        """Take back what :meth:`state` returned (after :meth:`StreamingGate.load`)."""


#: Adapter factories by gate registry name: ``STREAMING_ADAPTERS[name](gate) -> adapter``
#: (deprecated; the built-in gates' entries wrap their ``judge``).
STREAMING_ADAPTERS: Registry[Callable[[Any], StreamingAdapter]] = Registry(
    "streaming adapter", param="gate", sort=True
)


def register_streaming(
    name: str,
) -> Callable[[Callable[[Any], StreamingAdapter]], Callable[[Any], StreamingAdapter]]:
    """Register an adapter factory for the gate registered as ``name`` (deprecated).

    The factory receives the gate object and returns a :class:`StreamingAdapter`, or
    raises :class:`~cogstats._validation.ParameterError` naming the settings it cannot
    stream.  Warns ``DeprecationWarning``: give the gate ``running_statistics()`` and
    ``judge()`` instead.

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", DeprecationWarning)
    ...     @register_streaming("hold_all_example")
    ...     def _factory(gate):
    ...         return StreamingAdapter()
    >>> "hold_all_example" in STREAMING_ADAPTERS
    True
    >>> del STREAMING_ADAPTERS["hold_all_example"]
    """
    warnings.warn(f"register_streaming({name!r}): {_DEPRECATED}", DeprecationWarning, stacklevel=2)

    def deco(factory: Callable[[Any], StreamingAdapter]) -> Callable[[Any], StreamingAdapter]:
        if name in STREAMING_ADAPTERS:
            del STREAMING_ADAPTERS[name]  # registering again replaces, as the dict did
        STREAMING_ADAPTERS.add(name, factory)
        return factory

    return deco


def find_adapter(gate: Any, name: str) -> StreamingAdapter | None:
    """Return the gate's deprecated adapter, if it has one (its method, else the table)."""
    own = getattr(gate, "streaming_adapter", None)
    if callable(own):
        adapter = own()
        if not isinstance(adapter, StreamingAdapter):
            raise ParameterError(
                f"{type(gate).__name__}.streaming_adapter() must return a StreamingAdapter; "
                f"got {type(adapter).__name__}"
            )
        if not type(gate).__module__.startswith("cogstats."):
            warnings.warn(
                f"{type(gate).__name__}.streaming_adapter(): {_DEPRECATED}",
                DeprecationWarning,
                stacklevel=3,
            )
        return adapter
    if name in STREAMING_ADAPTERS and name not in _BUILTIN:
        return STREAMING_ADAPTERS[name](gate)
    return None


class _JudgeAdapter(StreamingAdapter):
    """A built-in gate's ``running_statistics`` and ``judge`` as an adapter (compatibility)."""

    replays_on_replace = False

    def __init__(self, gate: Any) -> None:
        self.gate = gate
        self._stats = gate.running_statistics()  # raises for settings it cannot stream
        self.regression_covariates = self._stats.regression_covariates

    def new_statistics(self) -> StreamingStats:
        """Return the gate's running statistics."""
        return self._stats

    def judge(self, stats: StreamingStats, candidates: Sequence[str] | None) -> Any:
        """Return the gate's judgement (or report) of the running statistics."""
        judgement = getattr(self.gate, "judgement", None)
        if callable(judgement):
            return judgement(stats, None, candidates)
        return self.gate.judge(stats, None, candidates)


_BUILTIN = ("cycgraph", "evidence")
for _name in _BUILTIN:
    STREAMING_ADAPTERS.add(_name, _JudgeAdapter)
