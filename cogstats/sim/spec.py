"""Scenario specs: frozen dataclasses, loadable from TOML, validated at the door.

A :class:`Scenario` says everything one simulated replicate needs: how many runs, which
lessons arrive when with which true effects (listed lessons, arrival streams, poisoning
events), how run difficulty varies, how a run's score is made, which retrieval policy
picks the lessons and which gate judges them.  A :class:`SimulationSpec` adds a grid of
values to vary, the number of replicates and the root seed; ``simulations/*.toml`` hold
them.  Every error names the key (as a dotted path) and the file.

TOML layout (every table optional except ``runs``)::

    name = "poison-crater"
    runs = 30
    replicates = 200          # SimulationSpec only
    seed = 20261130           # SimulationSpec only
    record_empty_runs = true

    [lessons]                 # ids ("ordered" or "shuffled"), id_seed
    [[lessons.listed]]        # id, effect, kind, arrives_at_run, applies_to, group,
                              # effect_by_family, changes
    [[lessons.streams]]       # kind, per_run, from_run, to_run, effect, applies_to,
                              # paraphrase_prob, effect_by_family
    [[lessons.poison]]        # after_run, count, effect
    [[interactions]]          # lessons, effect
    [difficulty]              # model, sd, ar, proxy_corr, families, regimes
    [score]                   # base, noise_sd, link, saturation, poison_damping
    [retrieval]               # policy (a registry name or "pkg.mod:Class") and its options
    [gate]                    # type (a registry name, "pkg.mod:Class" or "none"), every,
                              # from_run, recheck_verified, then the gate's options
    [policy]                  # preset = "recommended": replaces [retrieval] and [gate] but
                              # keeps max_facts, candidate_slots and the gate's cadence;
    [policy.retrieval]        #   the preset's own options, tuned
    [policy.gate]
    [grid]                    # SimulationSpec only: "dotted.path" = [values]

docs/scenarios.md lists every key with its type, default and meaning; the keys of a
non-additive store (paraphrase groups, interactions, effects by task family, changes of
effect) are read by :mod:`cogstats.sim.spec_world`.

A listed lesson's ``kind`` (``genuine``, ``neutral``, ``poison``) says how its decisions
are scored (evicting a genuine lesson is a false eviction, evicting a poison a catch).
Without one, a lesson with a negative fixed effect is a ``poison`` and any other
``genuine``, decided per grid cell (a grid that makes the effect negative makes it a
poison, unless the spec names its kind); streams keep their group's ``kind``.

The ``[retrieval]`` and ``[gate]`` tables are validated by the registered classes
(:data:`cogstats.retrieval.RETRIEVAL_POLICIES`, :data:`cogstats.gates.GATES`): their
options are the classes' dataclass fields, with the classes' defaults and checks; an error
still names the key and the file.  A default that changes what the spec says is a
:class:`~cogstats.sim.spec_notes.SpecWarning`: ``max_facts`` set without
``candidate_slots`` keeps the policy's default slots (2 for ``randomized``), so a run
carries that many lessons until some are promoted.

With a preset (:data:`cogstats.presets.PRESETS`), the scenario's retrieval and gate are
the preset's; the other keys of ``[retrieval]`` and ``[gate]`` describe the replaced parts
and are ignored.  Grid axes ``gate.<option>`` and ``retrieval.<option>`` on the preset's
own options tune it (they are the paths ``policy.gate.<option>`` and
``policy.retrieval.<option>``); an axis on a replaced setting is an error naming it.
"""

from __future__ import annotations

import math
import numbers
import re
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, cast

from cogstats._codes import KINDS
from cogstats._registry import Entry
from cogstats._toml import Problems, TomlTable, read_toml
from cogstats._validation import ParameterError, SpecError, suggest
from cogstats.sim._grid import build_cells, check_grid, count_cells
from cogstats.sim._sizes import check_fits, replicate_bytes
from cogstats.sim.spec_notes import SpecWarning, slot_warning
from cogstats.sim.spec_paths import check_same_type, get_path, set_path
from cogstats.sim.spec_world import (
    ID_MODES,
    LISTED_KEYS,
    STREAM_KEYS,
    EffectChange,
    Interaction,
    listed_family_value,
    listed_table,
    parse_changes,
    parse_family_effects,
    parse_interaction,
    stream_table,
    world_problems,
)

__all__ = [
    "DifficultySpec",
    "EffectDist",
    "Family",
    "GateSpec",
    "LessonStream",
    "ListedLesson",
    "PoisonEvent",
    "Regime",
    "RetrievalSpec",
    "Scenario",
    "ScoreSpec",
    "SimulationSpec",
    "load_spec",
    "preset_path",
    "with_preset_table",
]

#: keys of the [gate] table that are the simulator's, not the gate's
GATE_CADENCE = ("type", "every", "from_run", "recheck_verified")
DIST_PARAMS = {
    "constant": ("value",),
    "uniform": ("low", "high"),
    "normal": ("mean", "sd"),
    "choice": ("values",),
}


#: the typed reader of a spec table (shared with the sweep and admission specs)
_Reader = TomlTable


# ---------------------------------------------------------------------- pieces
@dataclass(frozen=True)
class EffectDist:
    """A distribution of true effects: constant, uniform(low, high), normal(mean, sd), choice.

    Drawn by inverse transform from one uniform per lesson, so both simulation engines
    draw the same effects.
    """

    dist: str = "constant"
    value: float = 0.0
    low: float = 0.0
    high: float = 0.0
    mean: float = 0.0
    sd: float = 0.0
    values: tuple[float, ...] = ()

    @classmethod
    def parse(cls, raw: Any, key: str, source: str | None) -> EffectDist:
        """Read an effect from a spec value: a number (constant) or a ``dist`` table."""
        if isinstance(raw, bool):
            raise SpecError(
                f"effect must be a number or a table; got {raw!r}", key=key, source=source
            )
        if isinstance(raw, numbers.Real):
            if not math.isfinite(float(raw)):
                raise SpecError(f"effect must be finite; got {raw!r}", key=key, source=source)
            return cls("constant", value=float(raw))
        r = _Reader(raw, key, source)
        dist = r.choice("dist", "constant", tuple(DIST_PARAMS))
        if dist == "constant":
            out = cls("constant", value=_req(r.number("value")))
        elif dist == "uniform":
            low, high = _req(r.number("low")), _req(r.number("high"))
            if high < low:
                raise r.error("high", f"must be >= low ({low}); got {high}")
            out = cls("uniform", low=low, high=high)
        elif dist == "normal":
            out = cls("normal", mean=_req(r.number("mean")), sd=_req(r.number("sd", minimum=0)))
        else:
            vals = r.get("values")
            if (
                not isinstance(vals, list)
                or not vals
                or any(isinstance(v, bool) or not isinstance(v, numbers.Real) for v in vals)
            ):
                raise r.error("values", f"must be a non-empty list of numbers; got {vals!r}")
            out = cls("choice", values=tuple(float(v) for v in vals))
        r.done(("dist", *DIST_PARAMS[dist]))
        return out

    def to_toml(self) -> Any:
        """Return the spec value: the number for a constant, else a ``dist`` table."""
        if self.dist == "constant":
            return self.value
        return {"dist": self.dist, **{k: getattr(self, k) for k in DIST_PARAMS[self.dist]}}


@dataclass(frozen=True)
class ListedLesson:
    """One named lesson with a fixed true effect.

    ``group`` names a paraphrase group (its members share one benefit: the largest
    effect among those in the prompt, counted once); ``effect_by_family`` gives the
    effect in named task families (the others take ``effect``); ``changes`` replace the
    effect some runs after the lesson's arrival (:class:`EffectChange`).

    Without a ``kind`` in the spec, a lesson with a negative effect is a ``poison`` (its
    eviction is a catch, not a false eviction) and any other a ``genuine`` lesson; the
    rule applies per grid cell (``kind_given`` False: the kind follows the cell's effect).
    :func:`cogstats.sim.spec_notes.lesson_table` says which rule gave each kind.
    """

    id: str
    effect: float
    kind: str = "genuine"
    arrives_at_run: int = 1
    applies_to: str | None = None
    kind_given: bool = field(default=True, compare=False, repr=False)
    group: str | None = None
    effect_by_family: tuple[tuple[str, float], ...] = ()
    changes: tuple[EffectChange, ...] = ()


@dataclass(frozen=True)
class LessonStream:
    """``per_run`` new candidates at every run from ``from_run`` to ``to_run`` (arrival runs).

    With ``paraphrase_prob`` p, each new lesson is, with probability p, a paraphrase of
    a random earlier lesson of its kind (it joins that lesson's group); with
    ``effect_by_family``, its effect in a named task family is drawn from that family's
    distribution (the others take ``effect``).
    """

    kind: str
    per_run: int
    from_run: int
    to_run: int
    effect: EffectDist
    applies_to: tuple[str, ...] = ()
    paraphrase_prob: float = 0.0
    effect_by_family: tuple[tuple[str, EffectDist], ...] = ()


@dataclass(frozen=True)
class PoisonEvent:
    """``count`` poisons entering after run ``after_run``'s gate (retrievable from the next run)."""

    after_run: int
    count: int
    effect: EffectDist


@dataclass(frozen=True)
class Family:
    """A task family: its difficulty shift and its share of runs."""

    name: str
    shift: float = 0.0
    weight: float = 1.0


@dataclass(frozen=True)
class Regime:
    """From ``from_run`` on, every run's difficulty is shifted by ``shift``."""

    from_run: int
    shift: float


@dataclass(frozen=True)
class DifficultySpec:
    """Run difficulty d_r = family shift + regime shift + process (none, iid, AR(1)).

    ``sd`` is the process's stationary standard deviation and ``ar`` its AR(1)
    coefficient.  With ``proxy_corr`` set, the ledger records a covariate
    ``difficulty_proxy`` = proxy_corr * x_r / sd + sqrt(1 - proxy_corr^2) * N(0, 1), where x_r
    is the process (correlation ``proxy_corr`` with it).
    """

    model: str = "none"
    sd: float = 0.0
    ar: float = 0.0
    proxy_corr: float | None = None
    families: tuple[Family, ...] = ()
    regimes: tuple[Regime, ...] = ()


@dataclass(frozen=True)
class ScoreSpec:
    """score = link(base + difficulty + sum of injected effects + N(0, noise_sd)).

    ``link`` "clamp" clamps to [0, 1]; "logistic" maps through expit with ``base`` on the
    probability scale and effects, difficulty and noise on the logit scale.
    ``saturation`` (optional, > 0) bends the total positive effect G to
    ``saturation * tanh(G / saturation)``; ``poison_damping`` in [0, 1] scales a poison's
    effect by ``1 - poison_damping`` in runs that also carry a helpful lesson.
    """

    base: float = 0.6
    noise_sd: float = 0.1
    link: str = "clamp"
    saturation: float | None = None
    poison_damping: float = 0.0


@dataclass(frozen=True)
class RetrievalSpec:
    """Which retrieval policy picks the lessons, and its complete options.

    ``policy`` is a name in :data:`cogstats.retrieval.RETRIEVAL_POLICIES` or an import path
    ``"package.module:Class"``; ``options`` holds every option of its class (defaults
    filled in).  An option reads as an attribute too: ``spec.retrieval.max_facts``.

    Examples
    --------
    >>> RetrievalSpec("ucb1", {"max_facts": 3}).build().max_facts
    3
    """

    policy: str = "in_progress_first"
    options: Mapping[str, Any] = field(default_factory=dict)

    def entry(self) -> Entry:
        """Return the policy's registry entry."""
        from cogstats.retrieval import get_policy

        return get_policy(self.policy)

    def build(self) -> Any:
        """Build the policy object this spec describes."""
        return self.entry().make(**dict(self.options))

    def __getattr__(self, name: str) -> Any:
        """Return the policy option ``name`` (its default where unset)."""
        # only called for names that are not fields: the policy's options
        options = self.__dict__.get("options")
        if name.startswith("_") or options is None:
            raise AttributeError(name)
        if name in options:
            return options[name]
        defaults = self.entry().defaults()
        if name in defaults:
            return defaults[name]
        raise AttributeError(
            f"retrieval policy {self.__dict__.get('policy')!r} has no option {name!r}"
        )


@dataclass(frozen=True)
class GateSpec:
    """Which gate, its options, and when it looks.

    ``type`` is a name in :data:`cogstats.gates.GATES`, an import path
    ``"package.module:Class"`` (a gate of one's own; spawned sweep workers import it), or
    ``"none"``; ``policy`` holds the gate's options.  ``every``: gate every this many runs,
    starting after run ``from_run``; ``recheck_verified``: verified lessons are judged
    again (evicting a verified lesson when the evidence turns).
    """

    type: str = "cycgraph"
    policy: Mapping[str, Any] = field(default_factory=dict)
    every: int = 1
    from_run: int = 1
    recheck_verified: bool = False

    def entry(self) -> Entry | None:
        """Return the gate's registry entry (None for type "none")."""
        if self.type == "none":
            return None
        from cogstats.gates import get_gate

        return get_gate(self.type)

    def build(self) -> Any:
        """Build the gate object this spec describes (None for type "none")."""
        entry = self.entry()
        return None if entry is None else entry.make(**dict(self.policy))


def part_options(obj: Any, entry: Entry) -> dict[str, Any]:
    """Return the complete options of a built gate or policy.

    These are ``to_policy()`` where the class has it, else its option fields.
    """
    to_policy = getattr(obj, "to_policy", None)
    if callable(to_policy):
        return dict(to_policy())
    return {f.name: getattr(obj, f.name) for f in entry.fields()}


@dataclass(frozen=True)
class Scenario:
    """Everything a simulated replicate needs.  Build with :meth:`from_dict` or :func:`load_spec`.

    Examples
    --------
    >>> from cogstats.sim import Scenario
    >>> s = Scenario.from_dict({
    ...     "runs": 20,
    ...     "lessons": {"listed": [{"id": "L1", "effect": 0.1}]},
    ...     "retrieval": {"max_facts": 4, "candidate_slots": 2, "rest_after_trials": 5},
    ... })
    >>> s.runs, s.listed[0].effect, s.retrieval.rest_after_trials
    (20, 0.1, 5)
    """

    runs: int
    name: str = "scenario"
    description: str = ""
    listed: tuple[ListedLesson, ...] = ()
    streams: tuple[LessonStream, ...] = ()
    poison: tuple[PoisonEvent, ...] = ()
    difficulty: DifficultySpec = DifficultySpec()
    score: ScoreSpec = ScoreSpec()
    retrieval: RetrievalSpec = RetrievalSpec()
    gate: GateSpec = GateSpec()
    record_empty_runs: bool = True
    preset: str | None = None
    interactions: tuple[Interaction, ...] = ()
    ids: str = "ordered"
    id_seed: int = 0

    @property
    def additive(self) -> bool:
        """Whether every lesson's effect adds up alone (no key of a non-additive store).

        Examples
        --------
        >>> s = Scenario.from_dict({"runs": 5, "lessons": {"listed": [{"id": "a", "effect": 0}]}})
        >>> s.additive
        True
        """
        return not (
            self.interactions
            or any(x.group or x.effect_by_family or x.changes for x in self.listed)
            or any(x.paraphrase_prob > 0 or x.effect_by_family for x in self.streams)
        )

    @property
    def n_lessons(self) -> int:
        """Lessons per replicate (fixed by the spec)."""
        return (
            len(self.listed)
            + sum(s.per_run * (s.to_run - s.from_run + 1) for s in self.streams)
            + sum(p.count for p in self.poison)
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], *, source: str | None = None) -> Scenario:
        """Validate a scenario mapping (as read from TOML); errors name the key and file."""
        # every independent piece is checked, and all their errors reported at once
        # (cogstats._toml.Problems); within one piece the first error stops it
        problems = Problems()
        r = _Reader(data, "", source)
        runs: int | None = None
        with problems.catch():
            runs = _req(r.integer("runs", minimum=1))
        # checks against the run count are skipped while it is unknown (no false errors)
        horizon = runs if runs is not None else sys.maxsize
        name, description, record_empty = "scenario", "", True
        with problems.catch():
            name = r.string("name", "scenario") or "scenario"
        with problems.catch():
            description = r.get("description", "")
            if not isinstance(description, str):
                raise r.error("description", "must be a string")
        with problems.catch():
            record_empty = r.boolean("record_empty_runs", True)
        lessons = r.table("lessons")
        at: dict[str, list[int]] = {"listed": [], "streams": [], "interactions": []}
        listed = _each(
            problems, lessons, "listed", lambda t: _parse_listed(t, horizon), at["listed"]
        )
        streams = _each(
            problems, lessons, "streams", lambda t: _parse_stream(t, horizon), at["streams"]
        )
        poison = _each(problems, lessons, "poison", lambda t: _parse_poison(t, horizon))
        ids_mode, id_seed = "ordered", 0
        with problems.catch():
            ids_mode = lessons.choice("ids", "ordered", ID_MODES)
        with problems.catch():
            id_seed = _req(lessons.integer("id_seed", 0, minimum=0))
        with problems.catch():
            lessons.done(("listed", "streams", "poison", "ids", "id_seed"))
        interactions = _each(problems, r, "interactions", parse_interaction, at["interactions"])
        ids = [les.id for les in listed]
        dup = {i for i in ids if ids.count(i) > 1}
        if dup:
            problems.add(lessons.error("listed", f"lesson id {sorted(dup)[0]!r} is listed twice"))
        difficulty: DifficultySpec | None = None
        with problems.catch():
            difficulty = _parse_difficulty(r.table("difficulty"), horizon)
        if difficulty is not None:
            fam_names = {f.name for f in difficulty.families}
            for k, les in zip(at["listed"], listed, strict=True):
                if les.applies_to is not None and les.applies_to not in fam_names:
                    problems.add(
                        lessons.error(
                            f"listed[{k}].applies_to",
                            f"names no family in difficulty.families {sorted(fam_names)}; got "
                            f"{les.applies_to!r}",
                        )
                    )
            for k, st in zip(at["streams"], streams, strict=True):
                bad = [a for a in st.applies_to if a not in fam_names]
                if bad:
                    problems.add(
                        lessons.error(
                            f"streams[{k}].applies_to",
                            f"names no family in difficulty.families {sorted(fam_names)}; "
                            f"got {bad[0]!r}",
                        )
                    )
            placed = {
                name: tuple(zip(at[name], items, strict=True))
                for name, items in (
                    ("listed", listed),
                    ("streams", streams),
                    ("interactions", interactions),
                )
            }
            for error in world_problems(placed, fam_names, source):
                problems.add(error)
        score: ScoreSpec | None = None
        with problems.catch():
            score = _parse_score(r.table("score"))
        preset: str | None = None
        retrieval: RetrievalSpec | None = None
        gate: GateSpec | None = None
        with problems.catch():
            preset = _preset_name(r.table("policy"))
            if preset is None:
                retrieval = _parse_retrieval(r.table("retrieval"))
                gate = _parse_gate(r.table("gate"), horizon)
            else:
                retrieval, gate = _parse_preset(
                    r.table("policy"), r.table("retrieval"), r.table("gate"), horizon
                )
        with problems.catch():
            r.done(
                (
                    "runs",
                    "name",
                    "description",
                    "record_empty_runs",
                    "lessons",
                    "difficulty",
                    "score",
                    "retrieval",
                    "gate",
                    "policy",
                    "interactions",
                )
            )
        problems.check()
        if runs is None or difficulty is None or score is None or retrieval is None or gate is None:
            raise RuntimeError("unreachable: a piece failed without an error")  # pragma: no cover
        scenario = cls(
            runs=runs,
            name=name,
            description=description,
            listed=listed,
            streams=streams,
            poison=poison,
            difficulty=difficulty,
            score=score,
            retrieval=retrieval,
            gate=gate,
            record_empty_runs=record_empty,
            preset=preset,
            interactions=interactions,
            ids=ids_mode,
            id_seed=id_seed,
        )
        if scenario.n_lessons == 0:
            raise SpecError("the scenario has no lessons", key="lessons", source=source)
        max_facts = getattr(retrieval, "max_facts", 0)  # (a policy of one's own may lack it)
        needed = replicate_bytes(runs, scenario.n_lessons, max_facts, 0)
        check_fits(
            needed,
            key="runs",
            what=f"one replicate of {runs:,} runs and {scenario.n_lessons:,} lesson(s)",
            source=source,
            hint=f"lower runs (a run's draws and outcomes take {needed // runs} bytes or more)",
        )
        return scenario

    def to_dict(self, *, full: bool = False) -> dict[str, Any]:
        """Return the scenario as a mapping that round-trips through :meth:`from_dict`.

        ``full=True`` keeps unset optional fields as None and writes the gate's complete
        policy, so that every parameter has a dotted path (grids use it); the default
        drops them (TOML has no null).
        """
        keep = (lambda d: d) if full else _drop_none
        d: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "runs": self.runs,
            "record_empty_runs": self.record_empty_runs,
        }
        lessons: dict[str, Any] = {}
        if self.listed:
            lessons["listed"] = [listed_table(x, full) for x in self.listed]
        if self.streams:
            lessons["streams"] = [stream_table(s, full) for s in self.streams]
        if self.poison:
            lessons["poison"] = [{**asdict(p), "effect": p.effect.to_toml()} for p in self.poison]
        if full or self.ids != "ordered" or self.id_seed:
            lessons["ids"] = self.ids
            lessons["id_seed"] = self.id_seed
        d["lessons"] = lessons
        if full or self.interactions:
            d["interactions"] = [
                {"lessons": list(x.lessons), "effect": x.effect} for x in self.interactions
            ]
        diff = keep(asdict(self.difficulty))
        diff["families"] = [asdict(f) for f in self.difficulty.families]
        diff["regimes"] = [asdict(g) for g in self.difficulty.regimes]
        d["difficulty"] = diff
        d["score"] = keep(asdict(self.score))
        gate: dict[str, Any] = {
            "type": self.gate.type,
            "every": self.gate.every,
            "from_run": self.gate.from_run,
            "recheck_verified": self.gate.recheck_verified,
        }
        policy = dict(self.gate.policy)
        entry = self.gate.entry()
        if full and entry is not None:
            policy = part_options(self.gate.build(), entry)
        if self.preset is not None:
            # the preset's parts, tuned, under [policy]; the caps and the cadence stay
            options = dict(self.retrieval.options)
            d["retrieval"] = {"policy": self.retrieval.policy}
            d["retrieval"].update({k: options.pop(k) for k in PRESET_CAPS if k in options})
            d["policy"] = {
                "preset": self.preset,
                "retrieval": keep(options),
                "gate": keep(policy),
            }
            d["gate"] = gate
            return d
        d["retrieval"] = keep({"policy": self.retrieval.policy, **self.retrieval.options})
        gate.update(keep(policy))
        d["gate"] = gate
        return d

    def with_preset(self, name: str, *, source: str | None = None) -> Scenario:
        """Return a copy with the preset ``name``'s retrieval policy and gate.

        The prompt caps and the gate's cadence are kept.

        Examples
        --------
        >>> s = Scenario.from_dict({"runs": 10, "lessons": {"listed": [{"id": "a", "effect": 0}]},
        ...     "retrieval": {"max_facts": 5, "candidate_slots": 3, "rest_after_trials": 2}})
        >>> r = s.with_preset("recommended")
        >>> r.retrieval.policy, r.retrieval.candidate_slots, r.gate.type
        ('in_progress_first', 3, 'recommended')
        >>> r.retrieval.retest_order, r.retrieval.fill_empty, r.retrieval.rest_after_trials
        ('likely_innocent', True, 2)
        """
        data = self.to_dict()
        data.pop("policy", None)
        data["policy"] = {"preset": name}
        return Scenario.from_dict(data, source=source)

    def with_values(self, values: Mapping[str, Any], *, source: str | None = None) -> Scenario:
        """Return a copy with dotted-path values replaced, e.g. ``{"gate.min_trials": 5}``.

        Examples
        --------
        >>> s = Scenario.from_dict({"runs": 10, "lessons": {"listed": [{"id": "a", "effect": 0}]}})
        >>> s.with_values({"lessons.listed[0].effect": 0.2, "runs": 25}).listed[0].effect
        0.2
        """
        if self.preset is not None:
            values = {preset_path(self, p, source): v for p, v in values.items()}
        data = self.to_dict(full=True)
        new_gate = values.get("gate.type", self.gate.type)
        if new_gate != self.gate.type and isinstance(new_gate, str):
            # a different kind of gate: the old gate's policy does not carry over; the new
            # one starts from its defaults (so that grid paths into it exist)
            data["gate"] = {k: v for k, v in data["gate"].items() if k in GATE_CADENCE}
            entry = _lookup(GateSpec(type=new_gate).entry, "gate.type", source)
            if entry is not None:
                data["gate"].update(part_options(entry.make(), entry))
        new_policy = values.get("retrieval.policy", self.retrieval.policy)
        if new_policy != self.retrieval.policy and isinstance(new_policy, str):
            # a different retrieval policy: options it shares with the old one carry over,
            # the others start from its defaults
            entry = _lookup(RetrievalSpec(new_policy).entry, "retrieval.policy", source)
            defaults = cast(Entry, entry).defaults()
            data["retrieval"] = {
                "policy": new_policy,
                **{k: data["retrieval"].get(k, v) for k, v in defaults.items()},
            }
        for path, value in values.items():
            set_path(data, path, value, source)
        return Scenario.from_dict(data, source=source)


@dataclass(frozen=True)
class SimulationSpec:
    """A scenario, an optional grid of values to vary over it, replicates and a root seed.

    ``grid`` maps dotted paths to lists of values; cells are the Cartesian product of the
    axes, except axes listed together in ``zip`` (lists of paths), which vary together.
    """

    scenario: Scenario
    grid: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)
    zip: tuple[tuple[str, ...], ...] = ()
    replicates: int = 100
    seed: int = 0
    source: str | None = None

    @property
    def n_cells(self) -> int:
        """Number of cells (the product of the axes' lengths; zipped axes count once)."""
        return count_cells(self.grid, self.zip)

    def cells(self) -> list[tuple[dict[str, Any], Scenario]]:
        """Every cell's grid values and its validated scenario, in a stable order.

        Built once (see :mod:`cogstats.sim._grid`: each section's combinations are
        validated once) and kept.
        """
        cached = self.__dict__.get("_cells")
        if cached is None:
            cached = build_cells(self.scenario, self.grid, self.zip, self.source)
            object.__setattr__(self, "_cells", cached)  # (a frozen dataclass's cache)
        return list(cached)


def load_spec(
    path: str | Path, *, preset: str | None = None, allow_import: Sequence[str] | None = None
) -> SimulationSpec:
    r"""Read a simulation spec (TOML): a scenario plus ``replicates``, ``seed``, ``[grid]``.

    Every cell of the grid is validated here, before anything runs.  ``preset`` (e.g.
    ``"recommended"``, the command line's ``--policy``) replaces the spec's retrieval
    policy and gate with the preset's (see :func:`with_preset_table`).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "s.toml"
    >>> text = 'runs = 10\nreplicates = 5\n[[lessons.listed]]\nid = "a"\neffect = 0.1\n'
    >>> _ = p.write_text(text)
    >>> load_spec(p).replicates
    5
    """
    from cogstats._imports import allow_imports

    path = Path(path)
    with allow_imports(allow_import):  # modules a 'module:Class' name may import
        return spec_from_dict(read_toml(path), source=str(path), preset=preset)


def with_preset_table(data: Mapping[str, Any], preset: str | None) -> dict[str, Any]:
    """Return a spec mapping with ``[policy] preset = preset``.

    The mapping is unchanged for None; a [policy] table naming the same preset keeps its
    tuned options.

    Examples
    --------
    >>> with_preset_table({"runs": 5}, "recommended")
    {'runs': 5, 'policy': {'preset': 'recommended'}}
    """
    data = dict(data)
    if preset is None:
        return data
    current = data.get("policy")
    if not (isinstance(current, Mapping) and current.get("preset") == preset):
        data["policy"] = {"preset": preset}
    return data


def spec_from_dict(
    data: Mapping[str, Any], *, source: str | None = None, preset: str | None = None
) -> SimulationSpec:
    """Build a :class:`SimulationSpec` from a mapping (see :func:`load_spec`)."""
    data = with_preset_table(data, preset)
    r = _Reader({k: data.pop(k) for k in ("replicates", "seed", "grid") if k in data}, "", source)
    problems = Problems()  # the run settings' errors and the scenario's, all at once
    replicates, seed = 100, 0
    with problems.catch():
        replicates = _req(r.integer("replicates", 100, minimum=1))
    with problems.catch():
        seed = _req(r.integer("seed", 0, minimum=0))
    grid_raw = r.table("grid")
    zip_raw = grid_raw.data.pop("zip", [])
    scenario: Scenario | None = None
    with problems.catch():
        scenario = Scenario.from_dict(data, source=source)
    problems.check()
    assert scenario is not None
    grid: dict[str, tuple[Any, ...]] = {}
    base = scenario.to_dict(full=True)
    for path, values in grid_raw.data.items():
        if not isinstance(values, list) or not values:
            raise SpecError(
                "a grid axis must be a non-empty list of values", key=f"grid.{path}", source=source
            )
        target = preset_path(scenario, path, source) if scenario.preset else path
        current = get_path(base, target, source, key=f"grid.{path}")
        for v in values:
            check_same_type(current, v, f"grid.{path}", source)
        grid[path] = tuple(values)
    if not isinstance(zip_raw, list) or any(
        not isinstance(g, list) or len(g) < 2 or any(not isinstance(p, str) for p in g)
        for g in zip_raw
    ):
        raise SpecError(
            "must be a list of lists of grid paths (two or more each)",
            key="grid.zip",
            source=source,
        )
    seen: set[str] = set()
    for group in zip_raw:
        lengths = set()
        for p in group:
            if p not in grid:
                raise SpecError(
                    f"zips {p!r}, which is not a grid axis", key="grid.zip", source=source
                )
            if p in seen:
                raise SpecError(f"{p!r} is zipped twice", key="grid.zip", source=source)
            seen.add(p)
            lengths.add(len(grid[p]))
        if len(lengths) > 1:
            raise SpecError(
                f"zipped axes {group} have different lengths", key="grid.zip", source=source
            )
    spec = SimulationSpec(
        scenario=scenario,
        grid=grid,
        zip=tuple(tuple(g) for g in zip_raw),
        replicates=replicates,
        seed=seed,
        source=source,
    )
    check_grid(grid, spec.zip, source)  # before a cell is built: cells that cannot fit
    spec.cells()  # validate every cell before anything runs
    return spec


# ---------------------------------------------------------------------- parsers
def _req(value: Any) -> Any:
    if value is None:  # pragma: no cover - the readers raise first
        raise ParameterError("required value missing")
    return value


def _each(
    problems: Problems,
    table: _Reader,
    name: str,
    parse: Callable[[_Reader], Any],
    positions: list[int] | None = None,
) -> tuple[Any, ...]:
    """Parse every entry of a list of tables, collecting each entry's error.

    ``positions`` receives the index in the list of each entry parsed (the entries with
    an error are left out of the result).
    """
    out = []
    entries: list[_Reader] = []
    with problems.catch():
        entries = table.table_list(name)
    for k, t in enumerate(entries):
        with problems.catch():
            out.append(parse(t))
            if positions is not None:
                positions.append(k)
    return tuple(out)


def _drop_none(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


def _parse_listed(r: _Reader, runs: int) -> ListedLesson:
    effect = _req(r.number("effect"))
    given = r.has("kind")
    # no kind: harmful by the sign of its fixed effect (issue 20), per cell
    default = "genuine" if given or effect >= 0 else "poison"
    les = ListedLesson(
        id=_req(r.string("id", optional=False)),
        effect=effect,
        kind=r.choice("kind", default, KINDS),
        arrives_at_run=_req(r.integer("arrives_at_run", 1, minimum=1)),
        applies_to=r.string("applies_to"),
        kind_given=given,
        group=r.string("group"),
        effect_by_family=parse_family_effects(
            r, lambda raw, key: listed_family_value(raw, key, r.source)
        ),
    )
    if les.arrives_at_run > runs:
        raise r.error("arrives_at_run", f"must be <= runs ({runs}); got {les.arrives_at_run}")
    les = replace(les, changes=parse_changes(r, les.arrives_at_run, runs))
    r.done(LISTED_KEYS)
    return les


def _parse_stream(r: _Reader, runs: int) -> LessonStream:
    if "effect" not in r.data:
        raise r.error("effect", "is required")
    applies = r.get("applies_to", [])
    if isinstance(applies, str):
        applies = [applies]
    if not isinstance(applies, list) or any(not isinstance(a, str) for a in applies):
        raise r.error("applies_to", f"must be a family name or a list of them; got {applies!r}")
    st = LessonStream(
        kind=r.choice("kind", "genuine", KINDS),
        per_run=_req(r.integer("per_run", 1, minimum=1)),
        from_run=_req(r.integer("from_run", 1, minimum=1)),
        to_run=_req(r.integer("to_run", minimum=1)),
        effect=EffectDist.parse(r.get("effect"), r.key("effect"), r.source),
        applies_to=tuple(applies),
        paraphrase_prob=_req(r.number("paraphrase_prob", 0.0, minimum=0.0, maximum=1.0)),
        effect_by_family=parse_family_effects(
            r, lambda raw, key: EffectDist.parse(raw, key, r.source)
        ),
    )
    if st.to_run < st.from_run:
        raise r.error("to_run", f"must be >= from_run ({st.from_run}); got {st.to_run}")
    if st.to_run > runs:
        raise r.error("to_run", f"must be <= runs ({runs}); got {st.to_run}")
    r.done(STREAM_KEYS)
    return st


def _parse_poison(r: _Reader, runs: int) -> PoisonEvent:
    if "effect" not in r.data:
        raise r.error("effect", "is required")
    ev = PoisonEvent(
        after_run=_req(r.integer("after_run", minimum=0)),
        count=_req(r.integer("count", 1, minimum=1)),
        effect=EffectDist.parse(r.get("effect"), r.key("effect"), r.source),
    )
    if ev.after_run >= runs:
        raise r.error(
            "after_run",
            f"must be < runs ({runs}): poison entering after run {ev.after_run} would never "
            "be retrieved",
        )
    r.done(("after_run", "count", "effect"))
    return ev


def _parse_difficulty(r: _Reader, runs: int) -> DifficultySpec:
    model = r.choice("model", "none", ("none", "iid", "ar1"))
    sd = _req(r.number("sd", 0.0, minimum=0.0))
    ar = _req(r.number("ar", 0.0, minimum=-0.999, maximum=0.999))
    proxy = r.number("proxy_corr", None, minimum=-1.0, maximum=1.0, optional=True)
    if proxy is not None and (model == "none" or sd == 0):
        raise r.error("proxy_corr", "needs a difficulty process (model iid or ar1 with sd > 0)")
    if model == "none" and sd != 0:
        raise r.error("sd", "is set but model is 'none'; use model = 'iid' or 'ar1'")
    fams = []
    for t in r.table_list("families"):
        fams.append(
            Family(
                name=_req(t.string("name", optional=False)),
                shift=_req(t.number("shift", 0.0)),
                weight=_req(t.number("weight", 1.0, minimum=0.0)),
            )
        )
        t.done(("name", "shift", "weight"))
    names = [f.name for f in fams]
    if len(set(names)) != len(names):
        raise r.error("families", "family names must be unique")
    if fams and sum(f.weight for f in fams) <= 0:
        raise r.error("families", "family weights must not all be zero")
    regs = []
    for t in r.table_list("regimes"):
        reg = Regime(from_run=_req(t.integer("from_run", minimum=1)), shift=_req(t.number("shift")))
        if reg.from_run > runs:
            raise t.error("from_run", f"must be <= runs ({runs}); got {reg.from_run}")
        regs.append(reg)
        t.done(("from_run", "shift"))
    r.done(("model", "sd", "ar", "proxy_corr", "families", "regimes"))
    return DifficultySpec(
        model, sd, ar, proxy, tuple(fams), tuple(sorted(regs, key=lambda g: g.from_run))
    )


def _parse_score(r: _Reader) -> ScoreSpec:
    link = r.choice("link", "clamp", ("clamp", "logistic"))
    base = _req(r.number("base", 0.6, minimum=0.0, maximum=1.0))
    if link == "logistic" and not 0 < base < 1:
        raise r.error("base", f"must be in (0, 1) with the logistic link; got {base}")
    out = ScoreSpec(
        base=base,
        noise_sd=_req(r.number("noise_sd", 0.1, minimum=0.0)),
        link=link,
        saturation=r.number("saturation", None, minimum=1e-9, optional=True),
        poison_damping=_req(r.number("poison_damping", 0.0, minimum=0.0, maximum=1.0)),
    )
    r.done(("base", "noise_sd", "link", "saturation", "poison_damping"))
    return out


def _lookup(find: Any, key: str, source: str | None) -> Any:
    """Look up a registry entry; a failure names the spec key and file.

    A ``"module:Class"`` name in a spec file (``source`` given) comes from data: its
    module is imported only when allowed (``allow_import=``, ``--allow-import``; see
    :mod:`cogstats._imports`).  A mapping built in Python (no ``source``) is the user's
    own code.
    """
    from cogstats._imports import from_data, trusted

    try:
        with from_data(f"the spec's {key} in {source}") if source else trusted():
            return find()
    except ParameterError as exc:
        raise SpecError(str(exc), key=key, source=source) from None


def _part_options(r: _Reader, entry: Entry, name: str, reserved: Sequence[str]) -> dict[str, Any]:
    """Read the table's options for a registered part, unknown keys named with the allowed."""
    allowed = [f.name for f in entry.fields()]
    options = {k: v for k, v in r.data.items() if k not in reserved and v is not None}
    for key in options:
        if key in allowed:
            continue
        others = _owners(key, entry)
        if others:
            raise r.error(
                key,
                f"does not apply to {entry.kind} {name!r} (it takes {allowed}; {key!r} is "
                f"an option of {others})",
            )
        raise r.error(key, f"unknown key{suggest(key, allowed)}; {name!r} takes {allowed}")
    return options


def _owners(key: str, entry: Entry) -> list[str]:
    """Return the registered parts of the same kind that take option ``key``."""
    from cogstats.gates import GATES
    from cogstats.retrieval import RETRIEVAL_POLICIES

    registry = RETRIEVAL_POLICIES if entry.kind == RETRIEVAL_POLICIES.kind else GATES
    return sorted(n for n, e in registry.items() if key in [f.name for f in e.fields()])


def _build_part(r: _Reader, entry: Entry, options: Mapping[str, Any]) -> Any:
    """Build a gate or policy; its class's validation error names the key and file."""
    try:
        return entry.make(**options)
    except (ValueError, TypeError) as exc:  # ParameterError, or a class of one's own
        key = _param_name(str(exc))
        raise SpecError(str(exc), key=r.key(key) if key else r.path, source=r.source) from None


def _parse_retrieval(r: _Reader) -> RetrievalSpec:
    from cogstats.retrieval import get_policy

    policy = r.string("policy", "in_progress_first") or "in_progress_first"
    entry = _lookup(lambda: get_policy(policy), r.key("policy"), r.source)
    options = _part_options(r, entry, policy, ("policy",))
    built = _build_part(r, entry, options)
    _warn_slots(r, policy, options, built)
    return RetrievalSpec(policy, part_options(built, entry))


def _warn_slots(r: _Reader, policy: str, given: Mapping[str, Any], built: Any) -> None:
    """Warn when a default ``candidate_slots`` caps the spec's ``max_facts`` (spec_notes)."""
    note = slot_warning(policy, given, built)
    if note is not None:
        where = ", ".join([*([r.source] if r.source else []), f"key {r.key('max_facts')!r}"])
        warnings.warn(SpecWarning(f"{where}: {note}"), stacklevel=3)


def _parse_gate(r: _Reader, runs: int) -> GateSpec:
    gtype = r.string("type", "cycgraph") or "cycgraph"
    every = _req(r.integer("every", 1, minimum=1))
    from_run = _req(r.integer("from_run", 1, minimum=1))
    if from_run > runs:
        raise r.error("from_run", f"must be <= runs ({runs}); got {from_run}")
    recheck = r.boolean("recheck_verified", False)
    if gtype == "none":
        policy = {k: v for k, v in r.data.items() if k not in GATE_CADENCE and v is not None}
        if policy:
            raise r.error(next(iter(policy)), "gate type 'none' takes no policy")
        return GateSpec(gtype, {}, every, from_run, recheck)
    entry = _lookup(lambda: GateSpec(gtype).entry(), r.key("type"), r.source)
    options = dict(r.data)
    if callable(getattr(entry.cls, "from_policy", None)):
        # the class reads other spellings itself (cycgraph's camelCase)
        options = {k: v for k, v in options.items() if k not in GATE_CADENCE and v is not None}
    else:
        options = _part_options(r, entry, gtype, GATE_CADENCE)
    built = _build_part(r, entry, options)
    # normalise: the complete policy, defaults filled in
    full = {k: v for k, v in part_options(built, entry).items() if v is not None}
    return GateSpec(gtype, full, every, from_run, recheck)


#: the keys of [retrieval] and [gate] that a preset keeps
PRESET_CAPS: tuple[str, ...] = ("max_facts", "candidate_slots")
PRESET_CADENCE: tuple[str, ...] = ("every", "from_run", "recheck_verified")


def _preset_name(r: _Reader) -> str | None:
    """Return the [policy] table's preset (None without one), checking the table's keys."""
    if not r.data:
        return None
    name = r.string("preset", optional=False)
    from cogstats.presets import get_preset

    _lookup(lambda: get_preset(str(name)), r.key("preset"), r.source)
    for key in r.data:
        if key not in ("preset", "retrieval", "gate"):
            raise r.error(
                key,
                "unknown key; [policy] takes preset and the tables retrieval and gate (the "
                "preset's options)",
            )
    return name


def _parse_preset(
    policy: _Reader, retrieval: _Reader, gate: _Reader, runs: int
) -> tuple[RetrievalSpec, GateSpec]:
    """Return the preset's retrieval and gate.

    Caps come from [retrieval], cadence from [gate], the preset's own options from
    [policy.retrieval] and [policy.gate].
    """
    from cogstats.presets import get_preset

    preset = get_preset(str(policy.get("preset")))
    p_entry = _lookup(preset.policy_entry, policy.key("preset"), policy.source)
    g_entry = _lookup(preset.gate_entry, policy.key("preset"), policy.source)
    caps = {k: retrieval.data[k] for k in PRESET_CAPS if retrieval.data.get(k) is not None}
    p_table = policy.table("retrieval")
    p_opts = {**preset.policy_options, **_part_options(p_table, p_entry, preset.policy, ())}
    for k in PRESET_CAPS:
        if k in p_opts:
            raise p_table.error(k, f"is a prompt cap: set it in [retrieval] ({k} is kept)")
    p_built = _build_part(p_table, p_entry, {**p_opts, **caps})
    _warn_slots(retrieval, preset.policy, {**p_opts, **caps}, p_built)
    cadence = {k: gate.data[k] for k in PRESET_CADENCE if gate.data.get(k) is not None}
    every = _req(_Reader(cadence, gate.path, gate.source).integer("every", 1, minimum=1))
    from_run = _req(_Reader(cadence, gate.path, gate.source).integer("from_run", 1, minimum=1))
    if from_run > runs:
        raise gate.error("from_run", f"must be <= runs ({runs}); got {from_run}")
    recheck = _Reader(cadence, gate.path, gate.source).boolean("recheck_verified", False)
    g_table = policy.table("gate")
    g_opts = {**preset.gate_options, **_part_options(g_table, g_entry, preset.gate, ())}
    g_built = _build_part(g_table, g_entry, g_opts)
    full = {k: v for k, v in part_options(g_built, g_entry).items() if v is not None}
    return (
        RetrievalSpec(preset.policy, part_options(p_built, p_entry)),
        GateSpec(preset.gate, full, every, from_run, recheck),
    )


def preset_path(scenario: Scenario, path: str, source: str | None = None) -> str:
    """Return the path a grid axis sets in a preset scenario.

    ``gate.<option>`` and ``retrieval.<option>`` of the preset's own options become
    ``policy.gate.<option>`` and ``policy.retrieval.<option>``; the caps and the cadence
    stay; an axis on a setting the preset replaced raises :class:`SpecError` naming it.

    Examples
    --------
    >>> s = Scenario.from_dict({"runs": 10, "lessons": {"listed": [{"id": "a", "effect": 0}]},
    ...     "policy": {"preset": "recommended"}})
    >>> preset_path(s, "gate.alpha"), preset_path(s, "retrieval.max_facts")
    ('policy.gate.alpha', 'retrieval.max_facts')
    >>> preset_path(s, "gate.decision_rule")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    cogstats._validation.SpecError: key 'grid.gate.decision_rule': sets a setting that preset ...
    """
    head, _, rest = path.partition(".")
    if head not in ("gate", "retrieval") or not rest:
        return path
    option = rest.split(".")[0].split("[")[0]
    kept = PRESET_CADENCE if head == "gate" else PRESET_CAPS
    if option in kept:
        return path
    part = scenario.gate if head == "gate" else scenario.retrieval
    entry = part.entry()
    own = [] if entry is None else [f.name for f in entry.fields()]
    if option in own and option not in PRESET_CAPS:
        return f"policy.{path}"
    raise SpecError(
        f"sets a setting that preset {scenario.preset!r} replaces; the preset's {head} "
        f"options are {sorted(o for o in own if o not in PRESET_CAPS)} (and "
        f"{list(kept)} are kept)",
        key=f"grid.{path}",
        source=source,
    )


def _param_name(message: str) -> str | None:
    m = re.match(r"unknown (?:policy key|option) '([^']+)'", message) or re.match(
        r"(\w+) must", message
    )
    return m.group(1) if m else None
