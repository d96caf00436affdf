"""Small admission worlds for the tests (the shipped spec's assumptions, fewer tenants)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cogstats.admission import AdmissionSpec, load_admission_spec

SHIPPED = Path(__file__).resolve().parents[2] / "simulations" / "write_path_admission.toml"

#: 3 tenants of the shipped geometry (8 topics of 8 subjects, ~3800 memories), dimension 64
SMALL: dict[str, Any] = {
    "world.dim": 64,
    "world.tenants": 3,
    "world.queries": 1500,
    "poison.targeted_topics": 3,
    "monitor.periods": 16,
    "monitor.warmup": 6,
    "monitor.onset": 8,
    "monitor.attack_periods": 2,
    "monitor.replicates": 2,
}


def small_spec(**values: Any) -> AdmissionSpec:
    """The shipped spec at the small size, with dotted-path overrides (``__`` for ``.``)."""
    changes = {**SMALL, **{k.replace("__", "."): v for k, v in values.items()}}
    return load_admission_spec(SHIPPED).with_values(changes)
