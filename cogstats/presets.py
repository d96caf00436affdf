"""Presets: a named pair of a retrieval policy and a gate, meant to be used together.

:data:`PRESETS` maps names to :class:`Preset` entries; ``recommended`` is the one to reach
for (docs/recommended.md): the lesson lifecycle gate
(:class:`cogstats.gates.LifecycleGate`) with its re-test design on cycgraph's in-progress-first
retrieval
(:class:`cogstats.retrieval.InProgressFirst` with :data:`RECOMMENDED_RETRIEVAL`).  A
preset replaces a
scenario's retrieval policy and gate but keeps its prompt caps (``max_facts``,
``candidate_slots``) and the gate's cadence (``every``, ``from_run``, ``recheck_verified``):

- in Python, :func:`recommended` (or ``PRESETS["recommended"].build(...)``) returns the
  pair;
- in a spec, ``[policy] preset = "recommended"``, with the preset's own options tuned in
  ``[policy.retrieval]`` and ``[policy.gate]`` (grid axes ``gate.<option>`` and
  ``retrieval.<option>`` reach them; an axis on a replaced setting is an error);
- on the command line, ``cogstats simulate SPEC --policy recommended`` and ``cogstats
  sweep SPEC --policy recommended``; on a real ledger ``cogstats gate LEDGER --gate
  recommended``.

A preset of one's own is registered with :func:`register_preset`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from cogstats._registry import Registry
from cogstats._validation import ParameterError

__all__ = [
    "PRESETS",
    "RECOMMENDED_RETRIEVAL",
    "Preset",
    "get_preset",
    "recommended",
    "register_preset",
]

#: The prompt caps a preset keeps from the scenario or takes as arguments.
CAPS: tuple[str, ...] = ("max_facts", "candidate_slots")


@dataclass(frozen=True)
class Preset:
    """A retrieval policy and a gate by registry name, with the preset's option values.

    Attributes
    ----------
    name : str
        The preset's name.
    policy, gate : str
        Registry names in :data:`cogstats.retrieval.RETRIEVAL_POLICIES` and
        :data:`cogstats.gates.GATES`.
    description : str
        One line for listings.
    policy_options, gate_options : mapping
        Options that differ from the classes' defaults (``recommended``'s retrieval
        options, :data:`RECOMMENDED_RETRIEVAL`).
    """

    name: str
    policy: str
    gate: str
    description: str
    policy_options: Mapping[str, Any] = field(default_factory=dict)
    gate_options: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        """Freeze the option mappings."""
        object.__setattr__(self, "policy_options", MappingProxyType(dict(self.policy_options)))
        object.__setattr__(self, "gate_options", MappingProxyType(dict(self.gate_options)))

    def policy_entry(self) -> Any:
        """Return the retrieval policy's registry entry."""
        from cogstats.retrieval import get_policy

        return get_policy(self.policy)

    def gate_entry(self) -> Any:
        """Return the gate's registry entry."""
        from cogstats.gates import get_gate

        return get_gate(self.gate)

    def build(
        self,
        *,
        policy_options: Mapping[str, Any] | None = None,
        gate_options: Mapping[str, Any] | None = None,
    ) -> tuple[Any, Any]:
        """Return ``(retrieval policy, gate)`` with the preset's options and overrides.

        Examples
        --------
        >>> policy, gate = PRESETS["recommended"].build(policy_options={"max_facts": 12})
        >>> type(policy).__name__, policy.max_facts, type(gate).__name__
        ('InProgressFirst', 12, 'LifecycleGate')
        """
        p = {**self.policy_options, **dict(policy_options or {})}
        g = {**self.gate_options, **dict(gate_options or {})}
        return self.policy_entry().make(**p), self.gate_entry().make(**g)


#: The presets: name -> :class:`Preset` (a :class:`~cogstats._registry.Registry`).
PRESETS: Registry[Preset] = Registry("preset", param="preset")


def register_preset(preset: Preset) -> Preset:
    """Add a preset to :data:`PRESETS` (a name may be registered once).

    Examples
    --------
    >>> p = register_preset(Preset("mine_doc", "randomized", "evidence", "an example"))
    >>> get_preset("mine_doc").gate
    'evidence'
    >>> del PRESETS["mine_doc"]
    """
    if not isinstance(preset, Preset):
        raise ParameterError(f"register_preset takes a Preset; got {type(preset).__name__}")
    if preset.name in PRESETS:
        raise ParameterError(f"preset {preset.name!r} is registered already")
    return PRESETS.add(preset.name, preset)


def get_preset(name: str) -> Preset:
    """Look a preset up by name, naming the registered ones when it is unknown.

    Examples
    --------
    >>> get_preset("recommended").policy
    'in_progress_first'
    >>> get_preset("recomended")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    cogstats._validation.ParameterError: preset must be one of [...]; got 'recomended' ...
    """
    return PRESETS.lookup(name)


#: The recommended preset's retrieval options: cycgraph's in-progress-first ordering with
#: its rest bench, one suspect re-tested a run (the most likely innocent first, within 5
#: runs of its suspension, none whose gate t is below -2) and the prompt kept full
#: (docs/recommended.md, "The re-test design").
RECOMMENDED_RETRIEVAL: dict[str, Any] = {
    "rest_after_trials": 2,
    "retest_order": "likely_innocent",
    "retest_prob": 1.0,
    "retest_window": 5,
    "retest_floor": 2.0,
    "fill_empty": True,
}

register_preset(
    Preset(
        name="recommended",
        policy="in_progress_first",
        gate="recommended",
        description="the lesson lifecycle gate with its re-test design (suspects re-tested "
        "one at a time, most likely innocent first; the prompt kept full)",
        policy_options=RECOMMENDED_RETRIEVAL,
    )
)


def recommended(
    max_facts: int = 10, candidate_slots: int = 2, **gate_options: Any
) -> tuple[Any, Any]:
    """Return the recommended preset's parts: ``(InProgressFirst, LifecycleGate)``.

    The retrieval is cycgraph's in-progress-first ordering with the lifecycle's re-test
    design (:data:`RECOMMENDED_RETRIEVAL`); the gate is the lesson lifecycle gate
    (:class:`~cogstats.gates.LifecycleGate`).

    Parameters
    ----------
    max_facts, candidate_slots : int
        The prompt caps (lessons a run; candidates a run).
    **gate_options
        Options of :class:`~cogstats.gates.LifecycleGate` (e.g. ``covariates``).

    Returns
    -------
    tuple
        The retrieval policy and the gate.

    Examples
    --------
    >>> import cogstats
    >>> policy, gate = cogstats.recommended(max_facts=12, candidate_slots=6)
    >>> policy.candidate_slots, policy.retest_order, type(gate).__name__, gate.covariates
    (6, 'likely_innocent', 'LifecycleGate', ('difficulty_proxy',))
    """
    return PRESETS["recommended"].build(
        policy_options={"max_facts": max_facts, "candidate_slots": candidate_slots},
        gate_options=gate_options,
    )
