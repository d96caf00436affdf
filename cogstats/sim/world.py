"""The truth of a non-additive lesson store: groups, interactions, effects by family and time.

A scenario that uses none of the keys of :mod:`cogstats.sim.spec_world` is *additive*:
every lesson's effect adds up alone, and nothing here is built.  Otherwise both engines
and the metrics read the store's truth from two tables:

- :class:`WorldTable` (static, one per scenario): each lesson's listed paraphrase group,
  its stream's ``paraphrase_prob``, the interactions, the effects by task family given as
  numbers, the changes of effect (absolute runs), the family weights;
- :class:`WorldDraws` (one chunk of replicates, from the pre-drawn uniforms of
  :mod:`cogstats.sim.draws`): each lesson's group (``group[rep, j]``, the index of the
  group's first member: a lesson alone is its own group), its effect in every family
  (``fam_effects[rep, j, f]``) and in every run (``run_effects[rep, r, j]``: the run's
  family, the changes applied).

Paraphrases.  Lessons are visited in arrival order (ties by index); a lesson of a stream
with ``paraphrase_prob`` p is, when its first uniform is below p, a paraphrase of a lesson
picked by its second uniform among the lessons of its kind that arrived at an earlier
run and are in no interaction: it joins that lesson's group.  The world never depends
on the gate's decisions (the same draws for every policy, so comparisons are paired).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["WorldDraws", "WorldTable", "draw_world", "mean_effects_at", "world_table"]

#: the run of a change that never comes (the pad of ``WorldTable.change_run``)
NEVER = np.iinfo(np.int64).max // 2


@dataclass(frozen=True)
class WorldTable:
    """The static truth of a non-additive scenario, by lesson index.

    Attributes
    ----------
    weights : numpy.ndarray
        (F,) the task families' shares of runs (F = 1 without families).
    root : numpy.ndarray
        (L,) the first listed member of the lesson's ``group``; the lesson itself otherwise.
    paraphrase : numpy.ndarray
        (L,) the ``paraphrase_prob`` of the lesson's stream (0 for other lessons).
    in_inter : numpy.ndarray
        (L,) whether the lesson is named by an interaction.
    inter_ptr, inter_les, inter_eff : numpy.ndarray
        Interaction ``k`` adds ``inter_eff[k]`` when the lessons
        ``inter_les[inter_ptr[k]:inter_ptr[k + 1]]`` are all in the prompt.
    fam_value : numpy.ndarray
        (L, F) a listed lesson's effect in a family named by its ``effect_by_family``;
        NaN elsewhere.
    fam_dist : tuple
        (lesson, family, EffectDist) of every family effect a stream draws.
    change_run, change_eff : numpy.ndarray
        (L, C) the first run of each change of effect and the new effect
        (:data:`NEVER` pads).
    """

    weights: np.ndarray
    root: np.ndarray
    paraphrase: np.ndarray
    in_inter: np.ndarray
    inter_ptr: np.ndarray
    inter_les: np.ndarray
    inter_eff: np.ndarray
    fam_value: np.ndarray
    fam_dist: tuple[tuple[int, int, Any], ...]
    change_run: np.ndarray
    change_eff: np.ndarray

    @property
    def families(self) -> int:
        """The number of task families (1 without families)."""
        return int(self.weights.shape[0])

    @property
    def paraphrases(self) -> bool:
        """Whether some stream writes paraphrases."""
        return bool((self.paraphrase > 0).any())

    def harmful_interactions(self) -> np.ndarray:
        """Return the indices of the interactions with a negative effect."""
        return np.flatnonzero(self.inter_eff < 0)


@dataclass(frozen=True)
class WorldDraws:
    """The truth of a chunk's replicates: groups and effects by family and by run.

    Attributes
    ----------
    group : numpy.ndarray
        (n, L) each lesson's group (the index of its first member).
    fam_effects : numpy.ndarray
        (n, L, F) each lesson's effect in each family, before any change.
    run_effects : numpy.ndarray
        (n, runs, L) each lesson's effect in each run: the run's family, changes applied.
    """

    group: np.ndarray
    fam_effects: np.ndarray
    run_effects: np.ndarray


def world_table(
    s: Any,
    arrival: np.ndarray,
    groups: Sequence[str | None],
    paraphrase: Sequence[float],
    family_effects: Sequence[tuple[tuple[str, Any], ...]],
    changes: Sequence[tuple[Any, ...]],
    ids: Sequence[str],
) -> WorldTable | None:
    """Return the world table of scenario ``s`` (None when it is additive).

    The per-lesson sequences are in lesson index order (as
    :func:`cogstats.sim.draws.scenario_lessons` builds them): the listed ``group``, the
    stream's ``paraphrase_prob``, the family effects (numbers for listed lessons,
    distributions for streams) and the listed ``changes``.

    Examples
    --------
    >>> import numpy as np
    >>> from cogstats.sim import Scenario
    >>> from cogstats.sim.draws import scenario_lessons
    >>> s = Scenario.from_dict({"runs": 5, "lessons": {"listed": [
    ...     {"id": "a", "effect": 0.1, "group": "g"}, {"id": "b", "effect": 0.05, "group": "g"},
    ...     {"id": "c", "effect": 0.02}]}})
    >>> scenario_lessons(s).world.root.tolist()
    [0, 0, 2]
    """
    if s.additive:
        return None
    n = len(ids)
    fams = [f.name for f in s.difficulty.families]
    weights = np.asarray([f.weight for f in s.difficulty.families] or [1.0], dtype=float)
    weights = weights / weights.sum()
    first: dict[str, int] = {}
    root = np.arange(n, dtype=np.int64)
    for j, g in enumerate(groups):
        if g is not None:
            root[j] = first.setdefault(g, j)
    index = {f: j for j, f in enumerate(ids)}
    ptr: list[int] = [0]
    members: list[int] = []
    effects: list[float] = []
    for inter in s.interactions:
        members.extend(index[f] for f in inter.lessons)
        ptr.append(len(members))
        effects.append(inter.effect)
    in_inter = np.zeros(n, dtype=np.bool_)
    in_inter[np.asarray(members, dtype=np.int64)] = True
    fam_value = np.full((n, len(weights)), np.nan)
    fam_dist: list[tuple[int, int, Any]] = []
    for j, given in enumerate(family_effects):
        for name, value in given:
            f = fams.index(name)
            if isinstance(value, float | int):
                fam_value[j, f] = float(value)
            else:
                fam_dist.append((j, f, value))
    width = max([len(c) for c in changes] + [1])
    change_run = np.full((n, width), NEVER, dtype=np.int64)
    change_eff = np.zeros((n, width))
    for j, chs in enumerate(changes):
        for c, ch in enumerate(chs):
            change_run[j, c] = int(arrival[j]) + ch.after_runs
            change_eff[j, c] = ch.effect
    return WorldTable(
        weights=weights,
        root=root,
        paraphrase=np.asarray(paraphrase, dtype=float),
        in_inter=in_inter,
        inter_ptr=np.asarray(ptr, dtype=np.int64),
        inter_les=np.asarray(members, dtype=np.int64),
        inter_eff=np.asarray(effects, dtype=float),
        fam_value=fam_value,
        fam_dist=tuple(fam_dist),
        change_run=change_run,
        change_eff=change_eff,
    )


def draw_world(
    wt: WorldTable,
    arrival: np.ndarray,
    kind: np.ndarray,
    effects: np.ndarray,
    family: np.ndarray,
    u_para: np.ndarray | None,
    fam_draws: np.ndarray | None,
) -> WorldDraws:
    """Return a chunk's groups and effects by family and run.

    ``effects`` (n, L) are the lessons' drawn effects, ``family`` (n, runs) each run's
    family, ``u_para`` (n, 2 L) two uniforms per lesson for the paraphrases (None when
    no stream writes any), ``fam_draws`` (n, L, F) the family effects drawn for
    streams (NaN where none is; None without any).

    Examples
    --------
    >>> import numpy as np
    >>> from cogstats.sim import Scenario
    >>> from cogstats.sim.draws import draw_uniforms, layout, prepare, scenario_lessons
    >>> s = Scenario.from_dict({"runs": 4, "lessons": {"listed": [
    ...     {"id": "a", "effect": 0.1, "changes": [{"after_runs": 2, "effect": -0.1}]}]}})
    >>> les, lay = scenario_lessons(s), layout(s)
    >>> prep = prepare(s, les, draw_uniforms(np.random.SeedSequence(1), 0, 1, lay), lay)
    >>> prep.world.run_effects[0, :, 0].tolist()  # arrives at run 1, changes from run 3
    [0.1, 0.1, -0.1, -0.1]
    """
    n, n_les = effects.shape
    runs = family.shape[1]
    group = np.repeat(wt.root[None, :], n, axis=0)
    if u_para is not None:
        for j in sorted(range(n_les), key=lambda i: (arrival[i], i)):
            p = wt.paraphrase[j]
            if p <= 0:
                continue
            targets = np.flatnonzero(
                (arrival < arrival[j]) & (kind == kind[j]) & ~wt.in_inter
            ).astype(np.int64)
            if targets.size == 0:
                continue
            coin = u_para[:, 2 * j] < p
            pick = targets[
                np.minimum((u_para[:, 2 * j + 1] * targets.size).astype(np.int64), targets.size - 1)
            ]
            group[coin, j] = group[coin, pick[coin]]
    fam = np.repeat(effects[:, :, None], wt.families, axis=2)
    given = ~np.isnan(wt.fam_value)
    fam[:, given] = wt.fam_value[given][None, :]
    if fam_draws is not None:
        drawn = ~np.isnan(fam_draws)
        fam[drawn] = fam_draws[drawn]
    run_effects = np.take_along_axis(fam.transpose(0, 2, 1), family[:, :, None], axis=1)
    run_effects = np.ascontiguousarray(run_effects)  # (n, runs, L)
    run_no = np.arange(1, runs + 1)
    for j, c in zip(*np.nonzero(wt.change_run < NEVER), strict=True):
        from_r = run_no >= wt.change_run[j, c]
        run_effects[:, from_r, j] = wt.change_eff[j, c]
    return WorldDraws(group=group, fam_effects=fam, run_effects=run_effects)


def mean_effects_at(wt: WorldTable, draws: WorldDraws, run: np.ndarray | int) -> np.ndarray:
    """Return each lesson's effect at ``run`` averaged over the task families by their shares.

    This is the effect of a lesson kept in every prompt (its "value alone" in the
    metrics); ``run`` is one run for every replicate, or one per (replicate, lesson)
    (an (n, L) array).  A change of effect counts from its first run on.

    Examples
    --------
    >>> import numpy as np
    >>> wt = WorldTable(np.array([0.5, 0.5]), np.arange(1), np.zeros(1), np.zeros(1, bool),
    ...     np.zeros(1, np.int64), np.zeros(0, np.int64), np.zeros(0), np.full((1, 2), np.nan),
    ...     (), np.array([[4]]), np.array([[-0.2]]))
    >>> d = WorldDraws(np.zeros((1, 1), np.int64), np.array([[[0.08, -0.12]]]), np.zeros((1, 5, 1)))
    >>> mean_effects_at(wt, d, 3).round(3).tolist(), mean_effects_at(wt, d, 4).tolist()
    ([[-0.02]], [[-0.2]])
    """
    out = (draws.fam_effects * wt.weights[None, None, :]).sum(axis=2)
    at = np.broadcast_to(np.asarray(run, dtype=np.int64), out.shape)
    for c in range(wt.change_run.shape[1]):
        switched = at >= wt.change_run[None, :, c]
        out = np.where(switched, wt.change_eff[None, :, c], out)
    return out
