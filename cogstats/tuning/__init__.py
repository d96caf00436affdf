"""Tune a gate live in JupyterLab: move a control, see the answer beside a baseline.

:func:`tune` returns a widget (ipywidgets for the controls, altair's ``JupyterChart``
for the charts, which update in place) with one control per option of the chosen gate
and retrieval policy, generated from their registered options dataclasses (the source of
the command line's flags), plus replicates and seed.  Each change re-simulates the spec
with the compiled kernel in a background thread (or, given a ledger, replays the gate
over it run by run), debounced, the newest change superseding older ones.  Needs the
``tune`` extra (ipywidgets, anywidget, altair) and a running kernel; docs/tuning.md has
the tour.
"""

from __future__ import annotations

from typing import Any

from cogstats._validation import ParameterError

__all__ = ["tune"]


def tune(
    spec: Any = None,
    *,
    ledger: Any = None,
    gate: Any = None,
    policy: Any = None,
    replicates: int | None = None,
    seed: int | None = None,
    baseline: Any = "margin",
    debounce: float = 0.15,
    max_looks: int | None = 200,
) -> Any:
    """Return a live tuning widget for a gate over a simulated scenario or a ledger.

    Parameters
    ----------
    spec : str, Path, SimulationSpec, Scenario or mapping, optional
        The scenario to simulate (a spec with a grid gives its base scenario).
    ledger : Ledger or path, optional
        A recorded history to replay the gate over instead (give ``spec`` or
        ``ledger``, not both).
    gate : str or gate object, optional
        The gate to tune: a registry name, an import path ``"package.module:Class"`` or
        a gate object (its options start the controls).  Default: the spec's gate, or
        cycgraph's for a ledger.
    policy : str or policy object, optional
        The retrieval policy (simulations only; default the spec's).
    replicates : int, optional
        Starting replicates (default the spec's, at most 200).
    seed : int, optional
        Starting root seed (default the spec's).
    baseline : "margin", gate object or Chosen
        What every answer is shown beside: ``"margin"`` (default) is cycgraph's margin
        rule (with the spec's other gate options when its gate is cycgraph's); or a gate
        object; or settings kept from a widget (:meth:`keep`).  The "Pin as baseline"
        button pins the current settings.
    debounce : float
        Seconds without a newer change before a run starts.
    max_looks : int or None
        Ledgers: at most this many looks, evenly spaced (a look every
        ``ceil(runs / max_looks)`` runs; None: after every run).  The replay is the
        lesson store's, run by run with statuses (:func:`cogstats.tuning.ledger.replay`).

    Returns
    -------
    SimulationTuner or LedgerTuner
        Display it in a notebook.  ``set(min_trials=4)`` moves a control from code,
        ``wait()`` blocks until the answer is in, ``keep()`` returns the current
        settings (:class:`~cogstats.tuning.export.Chosen`: the gate object, a ``[gate]``
        TOML snippet, the ``cogstats gate`` / ``cogstats simulate`` command lines),
        ``metrics_frame()`` (simulations) and ``changes()`` (ledgers) the figures shown.

    Examples
    --------
    >>> import cogstats
    >>> t = cogstats.tune("simulations/poison_crater.toml", replicates=50, seed=1)
    >>> t.wait(120)
    True
    >>> t.set(min_trials=4)
    >>> t.wait(120), t.keep().gate().min_trials
    (True, 4)
    >>> t.set(max_trials=3)  # below min_trials: refused, with the class's message
    >>> t.last_error.split(":")[0]
    'max_trials must be >= min_trials (4); got 3'
    >>> t.close()
    """
    if (spec is None) == (ledger is None):
        raise ParameterError(
            f"tune needs a spec or a ledger (one of them); got spec={spec!r}, ledger={ledger!r}"
        )
    if ledger is not None:
        if policy is not None or replicates is not None:
            raise ParameterError(
                "policy and replicates apply to simulations; a ledger's prompts are recorded"
            )
        from cogstats.tuning.ledger import LedgerTuner

        return LedgerTuner(
            ledger,
            gate="cycgraph" if gate is None else gate,
            baseline=baseline,
            max_looks=max_looks,
            debounce=debounce,
            seed=seed,
        )
    from cogstats.tuning.simulation import SimulationTuner

    return SimulationTuner(
        spec,
        gate=gate,
        policy=policy,
        replicates=replicates,
        seed=seed,
        baseline=baseline,
        debounce=debounce,
    )
