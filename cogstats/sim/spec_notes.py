"""What a scenario spec says, in words: the lesson table, the kind rule and the warnings.

A spec is read literally, but two things it does not say decide what a simulation means:

- **the kind rule**: a listed lesson without a ``kind`` is a ``poison`` when its fixed
  effect is negative and ``genuine`` otherwise, per grid cell (evicting a poison is a
  catch, evicting a genuine lesson a false eviction); lesson streams and poison events keep
  their group's kind (:data:`KIND_RULE`, stated under the table that
  ``cogstats simulate`` prints, :func:`lesson_table`);
- **defaults that change what the spec says**: a ``[retrieval]`` table that sets
  ``max_facts`` but not ``candidate_slots`` keeps the policy's default number of candidate
  slots (2 for ``randomized``), so a run carries far fewer lessons than ``max_facts``
  until lessons are promoted: reading the spec warns (:class:`SpecWarning`, from
  :func:`slot_warning`) with the number injected and the key that changes it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl

__all__ = ["KIND_RULE", "SpecWarning", "lesson_table", "slot_warning"]

#: The kind rule, as the printed lesson table states it.
KIND_RULE = (
    "kind rule: a listed lesson without a kind is a poison when its fixed effect is negative "
    "(evicting it is a catch), genuine otherwise (evicting it is a false eviction); set kind "
    "in [[lessons.listed]] to say otherwise; streams and poison events keep their own kind"
)


class SpecWarning(UserWarning):
    """A spec that is read, but perhaps not as meant (a default changes what it says)."""


def slot_warning(policy: str, given: Mapping[str, Any], built: Any) -> str | None:
    """Say when a policy's default ``candidate_slots`` caps what ``max_facts`` says.

    Parameters
    ----------
    policy : str
        The retrieval policy's name.
    given : mapping
        The ``[retrieval]`` options the spec sets.
    built : object
        The policy object (every option, defaults filled in).

    Returns
    -------
    str or None
        The warning, or None when the spec sets ``candidate_slots``, does not set
        ``max_facts``, or the policy fills ``max_facts`` with candidates anyway.

    Examples
    --------
    >>> from cogstats.retrieval import get_policy
    >>> built = get_policy("randomized").make(max_facts=8)
    >>> print(slot_warning("randomized", {"max_facts": 8}, built))  # doctest: +ELLIPSIS
    max_facts = 8, but policy 'randomized' injects at most candidate_slots = 2 candidate...
    >>> slot_warning("randomized", {"max_facts": 8, "candidate_slots": 8}, built) is None
    True
    """
    if "max_facts" not in given or "candidate_slots" in given:
        return None
    mf = getattr(built, "max_facts", None)
    cs = getattr(built, "candidate_slots", None)
    if not isinstance(mf, int) or not isinstance(cs, int) or cs >= mf:
        return None
    return (
        f"max_facts = {mf}, but policy {policy!r} injects at most candidate_slots = {cs} "
        f"candidate lessons a run (its default, which the spec does not set): the other "
        f"{mf - cs} places take verified lessons only, so until lessons are promoted a run "
        f"carries {cs} lessons; set candidate_slots (at most {mf}) in [retrieval] to inject more"
    )


def _dist_text(dist: Any) -> str:
    """Return an effect distribution as text: ``-0.2``, ``uniform(0, 0.04)``."""
    if dist.dist == "constant":
        return f"{dist.value:g}"
    if dist.dist == "uniform":
        return f"uniform({dist.low:g}, {dist.high:g})"
    if dist.dist == "normal":
        return f"normal({dist.mean:g}, {dist.sd:g})"
    return "choice(" + ", ".join(f"{v:g}" for v in dist.values) + ")"


def lesson_table(scenario: Any) -> pl.DataFrame:
    """Return the scenario's lessons as the spec defines them, with each kind and why.

    One row per listed lesson, lesson stream and poison event: ``lessons`` (an id, or
    how many), ``effect`` (the fixed effect, or the distribution), ``kind``, ``kind from``
    (``"spec"``, or the kind rule's reason), ``arrives`` (the run, or the range); in a
    non-additive store, ``store`` too (paraphrase group, effects by family, changes of
    effect, interactions; docs/scenarios.md).

    Examples
    --------
    >>> from cogstats.sim import Scenario
    >>> s = Scenario.from_dict({"runs": 10, "lessons": {"listed": [
    ...     {"id": "bad", "effect": -0.2}, {"id": "ok", "effect": 0.0},
    ...     {"id": "odd", "effect": -0.1, "kind": "genuine"}]}})
    >>> for row in lesson_table(s).select("lessons", "kind", "kind from").rows():
    ...     print(row)
    ('bad', 'poison', 'kind rule: negative effect')
    ('ok', 'genuine', 'kind rule: effect >= 0')
    ('odd', 'genuine', 'spec')
    """
    rows: list[dict[str, str]] = []
    for les in scenario.listed:
        if les.kind_given:
            why = "spec"
        else:
            why = "kind rule: negative effect" if les.effect < 0 else "kind rule: effect >= 0"
        rows.append(
            {
                "lessons": les.id,
                "effect": f"{les.effect:g}",
                "kind": les.kind,
                "kind from": why,
                "arrives": f"run {les.arrives_at_run}",
            }
        )
    for st in scenario.streams:
        runs = f"runs {st.from_run}-{st.to_run}"
        rows.append(
            {
                "lessons": f"{st.per_run} a run ({st.per_run * (st.to_run - st.from_run + 1)})",
                "effect": _dist_text(st.effect),
                "kind": st.kind,
                "kind from": "stream",
                "arrives": runs,
            }
        )
    for ev in scenario.poison:
        rows.append(
            {
                "lessons": str(ev.count),
                "effect": _dist_text(ev.effect),
                "kind": "poison",
                "kind from": "poison event",
                "arrives": f"after run {ev.after_run}",
            }
        )
    schema = dict.fromkeys(("lessons", "effect", "kind", "kind from", "arrives"), pl.String)
    table = pl.DataFrame(rows, schema=schema)
    if scenario.additive:
        return table
    return table.with_columns(pl.Series("store", _store_notes(scenario), dtype=pl.String))


def _store_notes(scenario: Any) -> list[str]:
    """Say, per row of :func:`lesson_table`, what a non-additive store adds to it.

    The paraphrase group, the effects by family, the changes of effect and the
    interactions of a listed lesson; a stream's paraphrase probability and family
    effects; "" where there is nothing.
    """
    inter: dict[str, list[str]] = {}
    for x in scenario.interactions:
        for les in x.lessons:
            others = ", ".join(o for o in x.lessons if o != les)
            inter.setdefault(les, []).append(f"with {others}: {x.effect:+g}")
    notes = []
    for les in scenario.listed:
        parts = [f"group {les.group}"] if les.group else []
        parts += [f"{name}: {value:g}" for name, value in les.effect_by_family]
        parts += [f"after {c.after_runs} runs: {c.effect:g}" for c in les.changes]
        parts += inter.get(les.id, [])
        notes.append("; ".join(parts))
    for st in scenario.streams:
        parts = [f"paraphrases {st.paraphrase_prob:.0%}"] if st.paraphrase_prob else []
        parts += [f"{name}: {_dist_text(d)}" for name, d in st.effect_by_family]
        notes.append("; ".join(parts))
    notes += [""] * len(scenario.poison)
    return notes
