"""What was chosen, kept: the gate object, a ``[gate]`` TOML snippet, the command lines.

:class:`Chosen` holds the settings of a tuning widget (gate and retrieval policy with
their options, replicates, seed and, for a simulation, the tuned scenario) and writes them
out as the library, a spec file and the command line read them back:

* :meth:`Chosen.gate` / :meth:`Chosen.policy`: the objects (``GATES.make(name, **options)``);
* :meth:`Chosen.toml`: ``[retrieval]`` and ``[gate]`` tables for a scenario spec;
* :meth:`Chosen.spec_toml`: the whole tuned spec (for ``cogstats simulate``);
* :meth:`Chosen.gate_command` / :meth:`Chosen.simulate_command`: the equivalent
  ``cogstats gate`` and ``cogstats simulate`` command lines (each option that differs
  from the class's default, spelled as the command line's own flags).
"""

from __future__ import annotations

import json
import math
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cogstats.tuning.controls import option_specs

__all__ = ["Chosen", "toml_text"]


def _key(name: str) -> str:
    return name if name.replace("_", "").replace("-", "").isalnum() else json.dumps(name)


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, Mapping):
        inner = ", ".join(f"{_key(str(k))} = {_value(x)}" for k, x in v.items() if x is not None)
        return "{ " + inner + " }" if inner else "{}"
    if isinstance(v, Sequence):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    raise TypeError(f"cannot write {type(v).__name__} {v!r} as TOML")


def toml_text(data: Mapping[str, Any], prefix: str = "") -> str:
    """Write a mapping as TOML: scalars first, then tables and arrays of tables.

    None values are left out (TOML has no null).  Mappings inside arrays are inline.

    Examples
    --------
    >>> print(toml_text({"runs": 3, "gate": {"type": "cycgraph", "max_trials": None,
    ...     "min_trials": 2}, "lessons": {"listed": [{"id": "a", "effect": 0.1}]}}))
    runs = 3
    <BLANKLINE>
    [gate]
    type = "cycgraph"
    min_trials = 2
    <BLANKLINE>
    [[lessons.listed]]
    id = "a"
    effect = 0.1
    <BLANKLINE>
    """
    lines: list[str] = []
    tables: list[tuple[str, Mapping[str, Any]]] = []
    arrays: list[tuple[str, list[Mapping[str, Any]]]] = []
    for key, value in data.items():
        path = f"{prefix}.{_key(key)}" if prefix else _key(key)
        if value is None:
            continue
        if isinstance(value, Mapping):
            tables.append((path, value))
        elif (
            isinstance(value, list | tuple) and value and all(isinstance(x, Mapping) for x in value)
        ):
            arrays.append((path, list(value)))
        else:
            lines.append(f"{_key(key)} = {_value(value)}")
    out = "\n".join(lines) + ("\n" if lines else "")
    for path, table in tables:
        body = toml_text(table, path)
        head = f"[{path}]\n"
        out += ("\n" if out else "") + (
            head + body if not body.startswith("[") and not body.startswith("\n[") else body
        )
    for path, items in arrays:
        for item in items:
            out += ("\n" if out else "") + f"[[{path}]]\n" + toml_text(item, path)
    return out


@dataclass(frozen=True)
class Chosen:
    """The settings kept from a tuning widget.

    Attributes
    ----------
    gate_name : str
        The gate's registry name (or import path).
    gate_options : mapping
        Every option of the gate.
    policy_name : str or None
        The retrieval policy (None when tuning over a ledger).
    policy_options : mapping
        Every option of the policy.
    replicates : int or None
        Replicates (simulations).
    seed : int or None
        The root seed.
    scenario : Scenario or None
        The tuned scenario (simulations).

    Examples
    --------
    >>> chosen = Chosen("cycgraph", {"decision_rule": "margin", "min_trials": 4})
    >>> chosen.gate().min_trials
    4
    >>> chosen.gate_command("runs.csv")
    'cogstats gate runs.csv --gate cycgraph --decision-rule margin --min-trials 4'
    >>> print(chosen.toml())
    [gate]
    type = "cycgraph"
    decision_rule = "margin"
    min_trials = 4
    <BLANKLINE>
    """

    gate_name: str
    gate_options: Mapping[str, Any]
    policy_name: str | None = None
    policy_options: Mapping[str, Any] = field(default_factory=dict)
    replicates: int | None = None
    seed: int | None = None
    scenario: Any = None

    def gate(self) -> Any:
        """Build the gate object."""
        from cogstats.gates import make_gate

        return make_gate(self.gate_name, **dict(self.gate_options))

    def policy(self) -> Any:
        """Build the retrieval policy object (None when tuning over a ledger)."""
        if self.policy_name is None:
            return None
        from cogstats.retrieval import make_policy

        return make_policy(self.policy_name, **dict(self.policy_options))

    def toml(self) -> str:
        """Return ``[retrieval]`` (simulations) and ``[gate]`` tables for a scenario spec.

        Under a spec's ``[gate]`` the cadence keys (``every``, ``from_run``) are the
        spec's own; the scenario's are written here when there is one.
        """
        data: dict[str, Any] = {}
        if self.policy_name is not None:
            data["retrieval"] = {"policy": self.policy_name, **dict(self.policy_options)}
        gate: dict[str, Any] = {"type": self.gate_name}
        if self.scenario is not None:
            g = self.scenario.gate
            gate.update(every=g.every, from_run=g.from_run, recheck_verified=g.recheck_verified)
        gate.update(self.gate_options)
        data["gate"] = gate
        return toml_text(data)

    def spec_toml(self) -> str:
        """Return the whole tuned scenario spec as TOML (with replicates and seed)."""
        if self.scenario is None:
            raise ValueError("spec_toml needs a simulation (this was tuned over a ledger)")
        data = self.scenario.to_dict()
        head = {k: data.pop(k) for k in ("name", "description", "runs") if k in data}
        if self.replicates is not None:
            head["replicates"] = self.replicates
        if self.seed is not None:
            head["seed"] = self.seed
        return toml_text({**head, **data})

    def write_spec(self, path: str | Path) -> Path:
        """Write :meth:`spec_toml` to ``path`` and return it."""
        out = Path(path)
        out.write_text(self.spec_toml(), encoding="utf-8")
        return out

    def _changed(self, name: str, options: Mapping[str, Any], part: str) -> dict[str, Any]:
        from cogstats.gates import get_gate
        from cogstats.retrieval import get_policy

        entry = get_gate(name) if part == "gate" else get_policy(name)
        defaults = entry.defaults()
        return {
            k: v
            for k, v in options.items()
            if k not in defaults or _normal(defaults[k]) != _normal(v)
        }

    def gate_command(self, ledger: str = "LEDGER") -> str:
        """Return the ``cogstats gate`` command line that builds the same gate.

        Each option that differs from the class's default is given with the flag the
        command line generates for it (``--min-trials 4``; ``none`` for an option set
        to None; ``--flag``/``--no-flag`` for booleans; ``NAME=VALUE`` pairs for
        mappings).
        """
        return shlex.join(self.gate_argv(ledger))

    def gate_argv(self, ledger: str = "LEDGER") -> list[str]:
        """Return :meth:`gate_command` as an argument list (``argv[0]`` is ``cogstats``)."""
        from cogstats.cli import build_parser
        from cogstats.gates import get_gate

        entry = get_gate(self.gate_name)
        known = _option_strings(build_parser(self.gate_name), "gate")
        specs = {s.name: s for s in option_specs(entry, "gate")}
        argv = ["cogstats", "gate", ledger, "--gate", self.gate_name]
        for name, value in self._changed(self.gate_name, self.gate_options, "gate").items():
            own = "--gate-" + name.replace("_", "-")
            flag = own if own in known else specs[name].flag
            argv += _flag_values(flag, value)
        return argv

    def simulate_command(self, spec_path: str = "tuned.toml") -> str:
        """Return the ``cogstats simulate`` command line for the tuned spec.

        ``cogstats simulate`` reads the gate and policy from the spec:
        :meth:`write_spec` writes it to ``spec_path``.
        """
        argv = ["cogstats", "simulate", spec_path]
        if self.replicates is not None:
            argv += ["--replicates", str(self.replicates)]
        if self.seed is not None:
            argv += ["--seed", str(self.seed)]
        return shlex.join(argv)

    def text(self, ledger: str = "LEDGER", spec_path: str = "tuned.toml") -> str:
        """Everything kept, as text: the gate, the TOML and the command lines."""
        parts = [f"# gate object\n{self.gate()!r}", f"# TOML\n{self.toml()}"]
        parts.append(f"# cogstats gate\n{self.gate_command(ledger)}")
        if self.scenario is not None:
            parts.append(
                f"# cogstats simulate (chosen.write_spec({spec_path!r}) writes the spec)\n"
                f"{self.simulate_command(spec_path)}"
            )
        return "\n\n".join(parts)


def _normal(v: Any) -> Any:
    if isinstance(v, Mapping):
        return {k: _normal(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_normal(x) for x in v]
    return v


def _option_strings(parser: Any, command: str) -> set[str]:
    """Every option string of one subcommand of the real parser."""
    import argparse

    for action in parser._actions:  # argparse keeps its subparsers here (no public API)
        if isinstance(action, argparse._SubParsersAction):
            sub = action.choices[command]
            return {s for a in sub._actions for s in a.option_strings}
    return set()


def _flag_values(flag: str, value: Any) -> list[str]:
    if isinstance(value, bool):
        return [flag if value else "--no-" + flag[2:]]
    if value is None:
        return [flag, "none"]
    if isinstance(value, Mapping):
        out: list[str] = []
        for k, v in value.items():
            out += [flag, f"{k}={json.dumps(v) if not isinstance(v, str) else v}"]
        return out
    if isinstance(value, list | tuple):
        return [flag, *(str(x) for x in value)]
    if isinstance(value, float):
        return [flag, repr(value)]
    return [flag, str(value)]
