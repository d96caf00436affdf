"""A lesson store's settings: its gate, its retrieval policy, its cadence, written once.

:class:`StoreSettings` is what ``store.json`` holds: the preset (or None), the gate's and
the policy's registry names and options, the gate's cadence (``every``, ``from_run``,
``recheck_verified``) and what :meth:`LessonStore.record` does with a lesson id it does
not know (``unknown_lessons``: ``"add"`` as a candidate, or ``"refuse"``).  A store
reopened with other settings is refused with :class:`StoreSettingsError`, naming each
setting that differs (:meth:`StoreSettings.differences`).
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cogstats._validation import ParameterError
from cogstats.store.lifecycle import Cadence

__all__ = ["UNKNOWN_LESSONS", "StoreSettings", "StoreSettingsError"]

#: what ``record`` does with a lesson id the store does not hold
UNKNOWN_LESSONS: tuple[str, ...] = ("add", "refuse")
#: the ``format`` of ``store.json``
SETTINGS_FORMAT = "cogstats.lesson-store"
#: the ``version`` of ``store.json`` (another version is refused)
SETTINGS_VERSION = 1


class StoreSettingsError(ParameterError):
    """A store reopened with other settings than it was created with (names each one)."""


def _encode(value: Any, where: str) -> Any:
    """Return JSON-ready options (tuples tagged, so that they come back as tuples)."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"__float__": repr(value)}
    if isinstance(value, tuple):
        return {"__tuple__": [_encode(v, where) for v in value]}
    if isinstance(value, list):
        return [_encode(v, where) for v in value]
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise ParameterError(f"{where}: option keys must be strings; got {k!r}")
            out[k] = _encode(v, where)
        return out
    raise ParameterError(
        f"{where} must be JSON values (numbers, strings, booleans, null, lists, tuples, "
        f"mappings) for a store to keep them; got {type(value).__name__} {value!r}"
    )


def _decode(value: Any) -> Any:
    if isinstance(value, list):
        return [_decode(v) for v in value]
    if isinstance(value, dict):
        if set(value) == {"__tuple__"}:
            return tuple(_decode(v) for v in value["__tuple__"])
        if set(value) == {"__float__"}:
            return float(value["__float__"])
        return {k: _decode(v) for k, v in value.items()}
    return value


def options_of(obj: Any, where: str) -> dict[str, Any]:
    """Return a gate's or policy's options, JSON-ready (``to_policy()`` or dataclass fields)."""
    to_policy = getattr(obj, "to_policy", None)
    if callable(to_policy):
        raw = dict(to_policy())
    elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        raw = {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj) if f.init}
    else:
        raise ParameterError(
            f"a store keeps its {where}'s options: its dataclass fields or its to_policy(); "
            f"got {type(obj).__name__}"
        )
    return dict(_encode(raw, f"{where} options"))


def name_of(obj: Any, registry: Any) -> str:
    """Return the registry name of a gate or policy object (else ``"module:Class"``)."""
    cls = type(obj)
    for name in registry:
        if registry[name].cls is cls:
            return str(name)
    return f"{cls.__module__}:{cls.__qualname__}"


@dataclass(frozen=True)
class StoreSettings:
    """The settings a store is created with (see the module notes).

    Examples
    --------
    >>> s = StoreSettings.build(preset="recommended", max_facts=12, candidate_slots=6)
    >>> s.policy["name"], s.policy["options"]["max_facts"], s.gate["name"]
    ('in_progress_first', 12, 'recommended')
    >>> other = StoreSettings.build(preset="recommended", max_facts=10, candidate_slots=6)
    >>> s.differences(other)
    ['policy option max_facts: 12 (stored) != 10 (given)']
    """

    preset: str | None
    gate: Mapping[str, Any]
    policy: Mapping[str, Any]
    cadence: Cadence = field(default_factory=Cadence)
    unknown_lessons: str = "add"

    def __post_init__(self) -> None:
        """Validate ``unknown_lessons``."""
        if self.unknown_lessons not in UNKNOWN_LESSONS:
            raise ParameterError(
                f"unknown_lessons must be one of {list(UNKNOWN_LESSONS)}; got "
                f"{self.unknown_lessons!r}"
            )

    @classmethod
    def build(
        cls,
        *,
        preset: str | None = None,
        gate: Any = None,
        policy: Any = None,
        max_facts: int | None = None,
        candidate_slots: int | None = None,
        every: int = 1,
        from_run: int = 1,
        recheck_verified: bool = False,
        unknown_lessons: str = "add",
    ) -> StoreSettings:
        """Return the settings of a preset, or of a gate and a policy (names or objects).

        ``max_facts`` and ``candidate_slots`` set the policy's prompt caps (a policy
        object given must have them already, or they must agree).
        """
        from cogstats.gates import GATES
        from cogstats.retrieval import RETRIEVAL_POLICIES

        caps = {
            k: v
            for k, v in (("max_facts", max_facts), ("candidate_slots", candidate_slots))
            if v is not None
        }
        if preset is not None:
            if gate is not None or policy is not None:
                raise ParameterError(
                    "give preset= or gate= and policy=, not both; got "
                    f"preset={preset!r}, gate={gate!r}, policy={policy!r}"
                )
            from cogstats.presets import get_preset

            entry = get_preset(preset)
            pol, gt = entry.build(policy_options=caps)
            preset = entry.name
        else:
            if gate is None or policy is None:
                raise ParameterError(
                    "a new lesson store needs preset= (e.g. 'recommended') or both gate= and "
                    f"policy=; got gate={gate!r}, policy={policy!r}"
                )
            gt = GATES.make(gate) if isinstance(gate, str) else gate
            if isinstance(policy, str):
                pol = RETRIEVAL_POLICIES.make(policy, **caps)
            else:
                pol = policy
                for k, v in caps.items():
                    if getattr(pol, k, v) != v:
                        raise ParameterError(
                            f"{k}={v!r} differs from the policy object's {k}="
                            f"{getattr(pol, k)!r}; give it to the policy"
                        )
        return cls(
            preset=preset,
            gate={"name": name_of(gt, GATES), "options": options_of(gt, "gate")},
            policy={"name": name_of(pol, RETRIEVAL_POLICIES), "options": options_of(pol, "policy")},
            cadence=Cadence(every, from_run, recheck_verified),
            unknown_lessons=unknown_lessons,
        )

    def parts(self, allow_import: Any = None) -> tuple[Any, Any]:
        """Return ``(policy, gate)`` objects built from the settings."""
        from cogstats._imports import from_data
        from cogstats.gates import GATES
        from cogstats.retrieval import RETRIEVAL_POLICIES

        with from_data("a lesson store's settings", allow_import):
            gate = GATES.make(self.gate["name"], **_decode(dict(self.gate["options"])))
            policy = RETRIEVAL_POLICIES.make(
                self.policy["name"], **_decode(dict(self.policy["options"]))
            )
        return policy, gate

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON-ready form written to ``store.json``."""
        return {
            "format": SETTINGS_FORMAT,
            "version": SETTINGS_VERSION,
            "preset": self.preset,
            "gate": {"name": self.gate["name"], "options": dict(self.gate["options"])},
            "policy": {"name": self.policy["name"], "options": dict(self.policy["options"])},
            "cadence": self.cadence.to_dict(),
            "unknown_lessons": self.unknown_lessons,
        }

    def to_json(self) -> bytes:
        """Return ``store.json``'s bytes."""
        return (json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n").encode("utf-8")

    @classmethod
    def from_dict(cls, data: Any, where: str) -> StoreSettings:
        """Read ``store.json``'s content (a :class:`ParameterError` naming what is wrong)."""
        if not isinstance(data, dict) or data.get("format") != SETTINGS_FORMAT:
            raise ParameterError(f"{where} is not a lesson store's settings file")
        if data.get("version") != SETTINGS_VERSION:
            raise ParameterError(
                f"{where}: settings version {data.get('version')!r}; this cogstats reads "
                f"version {SETTINGS_VERSION}"
            )
        try:
            cad = data["cadence"]
            return cls(
                preset=data["preset"],
                gate={"name": data["gate"]["name"], "options": dict(data["gate"]["options"])},
                policy={
                    "name": data["policy"]["name"],
                    "options": dict(data["policy"]["options"]),
                },
                cadence=Cadence(cad["every"], cad["from_run"], cad["recheck_verified"]),
                unknown_lessons=data["unknown_lessons"],
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ParameterError(f"{where}: damaged settings ({exc!r})") from None

    def differences(self, given: StoreSettings) -> list[str]:
        """Return one line per setting that differs (``self`` stored, ``given`` asked)."""
        out: list[str] = []
        mine, theirs = self.to_dict(), given.to_dict()
        for key in ("preset", "unknown_lessons"):
            if mine[key] != theirs[key]:
                out.append(f"{key}: {mine[key]!r} (stored) != {theirs[key]!r} (given)")
        for part in ("gate", "policy"):
            a, b = mine[part], theirs[part]
            if a["name"] != b["name"]:
                out.append(f"{part}: {a['name']!r} (stored) != {b['name']!r} (given)")
                continue
            for k in sorted(set(a["options"]) | set(b["options"])):
                va, vb = a["options"].get(k), b["options"].get(k)
                if va != vb:
                    out.append(
                        f"{part} option {k}: {_decode(va)!r} (stored) != {_decode(vb)!r} (given)"
                    )
        for k in sorted(mine["cadence"]):
            if mine["cadence"][k] != theirs["cadence"][k]:
                out.append(
                    f"{k}: {mine['cadence'][k]!r} (stored) != {theirs['cadence'][k]!r} (given)"
                )
        return out
