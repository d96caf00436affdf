"""The spec keys of a non-additive lesson store, read and checked at the door.

A real store is not a sum of effects: paraphrases share one benefit (``group`` on listed
lessons, ``paraphrase_prob`` on streams), some lessons are bad together
(``[[interactions]]``), a lesson's effect depends on the task family
(``effect_by_family``) and may change some runs after it arrived (``changes``).  This
module holds those pieces (:class:`EffectChange`, :class:`Interaction`), their readers
(used by :mod:`cogstats.sim.spec`, every error naming its key) and the checks across the
scenario (:func:`world_problems`).  docs/scenarios.md lists every key of a spec.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from cogstats._toml import TomlTable
from cogstats._validation import SpecError

__all__ = [
    "ID_MODES",
    "LISTED_KEYS",
    "MAX_INTERACTION_LESSONS",
    "STREAM_KEYS",
    "EffectChange",
    "Interaction",
    "listed_family_value",
    "listed_table",
    "parse_changes",
    "parse_family_effects",
    "parse_interaction",
    "stream_table",
    "world_problems",
]

#: how the ids of generated lessons (streams, poison events) are made: ``ordered``
#: (G0001 ... P0043, by kind and index) or ``shuffled`` (random hex names)
ID_MODES = ("ordered", "shuffled")
#: the most distinct lessons the interactions may name: the oracle enumerates every
#: subset of them (2 ** 10 prompts a run at most)
MAX_INTERACTION_LESSONS = 10


@dataclass(frozen=True)
class EffectChange:
    """From ``after_runs`` runs after its arrival on, a lesson's effect is ``effect``.

    The run ``arrives_at_run + after_runs`` is the first with the new effect (in every
    task family).
    """

    after_runs: int
    effect: float


@dataclass(frozen=True)
class Interaction:
    """``effect`` added to a run's score when every lesson of ``lessons`` is in its prompt."""

    lessons: tuple[str, ...]
    effect: float


def parse_family_effects(
    r: TomlTable, parse_value: Callable[[Any, str], Any]
) -> tuple[tuple[str, Any], ...]:
    """Read ``effect_by_family`` (a table: family name -> value) of a lesson or a stream.

    ``parse_value(raw, key)`` reads one value (a number on a listed lesson, a number or
    a distribution on a stream).  The names are checked against the families later
    (:func:`world_problems`).
    """
    raw = r.get("effect_by_family", {})
    if not isinstance(raw, Mapping):
        raise r.error(
            "effect_by_family",
            f"must be a table of family name = effect; got {raw!r}",
        )
    return tuple(
        (str(name), parse_value(value, r.key(f"effect_by_family.{name}")))
        for name, value in raw.items()
    )


def listed_family_value(raw: Any, key: str, source: str | None) -> float:
    """Read one family's effect of a listed lesson: a finite number.

    Examples
    --------
    >>> listed_family_value(-0.12, "lessons.listed[0].effect_by_family.web", None)
    -0.12
    >>> listed_family_value("big", "k", "s.toml")
    Traceback (most recent call last):
    ...
    cogstats._validation.SpecError: s.toml, key 'k': must be a number; got 'big'
    """
    if isinstance(raw, bool) or not isinstance(raw, numbers.Real) or raw != raw:
        raise SpecError(f"must be a number; got {raw!r}", key=key, source=source)
    value = float(raw)
    if value in (float("inf"), float("-inf")):
        raise SpecError(f"must be finite; got {raw!r}", key=key, source=source)
    return value


def parse_changes(r: TomlTable, arrives_at_run: int, runs: int) -> tuple[EffectChange, ...]:
    """Read a listed lesson's ``changes``: ``[{after_runs = 12, effect = -0.15}, ...]``.

    ``after_runs`` (>= 1) increase strictly; each change falls within the scenario's runs
    (``arrives_at_run + after_runs <= runs``).
    """
    out: list[EffectChange] = []
    for t in r.table_list("changes"):
        after = t.integer("after_runs", minimum=1)
        effect = t.number("effect")
        t.done(("after_runs", "effect"))
        if out and after <= out[-1].after_runs:
            raise t.error(
                "after_runs",
                f"must increase from one change to the next (> {out[-1].after_runs}); got {after}",
            )
        if arrives_at_run + after > runs:
            raise t.error(
                "after_runs",
                f"must be <= runs - arrives_at_run ({runs - arrives_at_run}): a change "
                f"after run {runs} never happens; got {after}",
            )
        out.append(EffectChange(int(after), float(effect)))
    return tuple(out)


def parse_interaction(r: TomlTable) -> Interaction:
    """Read one ``[[interactions]]`` table: ``lessons`` (two or more listed ids), ``effect``."""
    names = r.get("lessons")
    if (
        not isinstance(names, list)
        or len(names) < 2
        or any(not isinstance(n, str) or not n for n in names)
    ):
        raise r.error("lessons", f"must be a list of two or more lesson ids; got {names!r}")
    if len(set(names)) != len(names):
        raise r.error("lessons", f"lists a lesson twice: {names!r}")
    effect = r.number("effect")
    r.done(("lessons", "effect"))
    return Interaction(tuple(names), float(effect))


def world_problems(
    placed: Mapping[str, Sequence[tuple[int, Any]]],
    families: Collection[str],
    source: str | None,
) -> list[SpecError]:
    """Return the errors across the scenario's world keys (empty when it is consistent).

    ``placed`` holds the parsed ``listed`` lessons, ``streams`` and ``interactions``,
    each with its index in the spec (for the error's key).  Family names of
    ``effect_by_family`` must be families of ``[difficulty]``; an interaction names
    listed lessons, none of them in a paraphrase ``group`` (a group's value is its best
    member's, an interaction's members count alone), and at most
    :data:`MAX_INTERACTION_LESSONS` distinct ones over all interactions.

    Examples
    --------
    >>> inter = Interaction(("a", "zz"), -0.1)
    >>> [e.key for e in world_problems({"interactions": [(2, inter)]}, [], "s.toml")]
    ['interactions[2].lessons']
    """
    out: list[SpecError] = []
    fams = sorted(families)
    for kind in ("listed", "streams"):
        for k, item in placed.get(kind, ()):
            bad = [name for name, _ in item.effect_by_family if name not in families]
            if bad:
                out.append(
                    SpecError(
                        f"names no family in difficulty.families {fams}; got {bad[0]!r}"
                        if fams
                        else "needs task families: [[difficulty.families]] defines none",
                        key=f"lessons.{kind}[{k}].effect_by_family",
                        source=source,
                    )
                )
    ids = {les.id: les for _, les in placed.get("listed", ())}
    seen: set[str] = set()
    for k, inter in placed.get("interactions", ()):
        key = f"interactions[{k}].lessons"
        missing = [name for name in inter.lessons if name not in ids]
        if missing:
            out.append(
                SpecError(
                    f"names no listed lesson (ids: {sorted(ids)}); got {missing[0]!r}",
                    key=key,
                    source=source,
                )
            )
            continue
        grouped = [name for name in inter.lessons if ids[name].group is not None]
        if grouped:
            out.append(
                SpecError(
                    f"lesson {grouped[0]!r} is in paraphrase group {ids[grouped[0]].group!r}: "
                    "a lesson in an interaction may not be in a group",
                    key=key,
                    source=source,
                )
            )
        seen.update(inter.lessons)
    if len(seen) > MAX_INTERACTION_LESSONS:
        out.append(
            SpecError(
                f"name at most {MAX_INTERACTION_LESSONS} distinct lessons in all (the oracle "
                f"tries every subset of them); got {len(seen)}",
                key="interactions",
                source=source,
            )
        )
    return out


#: the keys of a listed lesson
LISTED_KEYS = (
    "id",
    "effect",
    "kind",
    "arrives_at_run",
    "applies_to",
    "group",
    "effect_by_family",
    "changes",
)
#: the keys of a lesson stream
STREAM_KEYS = (
    "kind",
    "per_run",
    "from_run",
    "to_run",
    "effect",
    "applies_to",
    "paraphrase_prob",
    "effect_by_family",
)


def listed_table(x: Any, full: bool) -> dict[str, Any]:
    """Return a listed lesson as a spec table; unless ``full``, unset keys are left out.

    Examples
    --------
    >>> from cogstats.sim.spec import ListedLesson
    >>> listed_table(ListedLesson("a", 0.1, group="cite"), full=False)
    {'id': 'a', 'effect': 0.1, 'kind': 'genuine', 'arrives_at_run': 1, 'group': 'cite'}
    """
    d: dict[str, Any] = {
        k: v
        for k, v in asdict(x).items()
        if k not in ("kind_given", "effect_by_family", "changes") and (k != "kind" or x.kind_given)
    }
    d["effect_by_family"] = dict(x.effect_by_family)
    d["changes"] = [asdict(c) for c in x.changes]
    if not full:
        d = {k: v for k, v in d.items() if v is not None and v != {} and v != []}
    return d


def stream_table(s: Any, full: bool) -> dict[str, Any]:
    """Return a lesson stream as a spec table; unless ``full``, unset keys are left out.

    Examples
    --------
    >>> from cogstats.sim.spec import EffectDist, LessonStream
    >>> stream_table(LessonStream("genuine", 1, 1, 5, EffectDist(value=0.02),
    ...     paraphrase_prob=0.3), full=False)["paraphrase_prob"]
    0.3
    """
    d: dict[str, Any] = {
        **asdict(s),
        "effect": s.effect.to_toml(),
        "applies_to": list(s.applies_to),
        "effect_by_family": {name: dist.to_toml() for name, dist in s.effect_by_family},
    }
    if not full:
        d = {k: v for k, v in d.items() if v is not None}
        if not s.effect_by_family:
            del d["effect_by_family"]
        if not s.paraphrase_prob:
            del d["paraphrase_prob"]
    return d
