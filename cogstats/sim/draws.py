"""Random draws and the static lesson tables that both simulation engines consume.

Streams.  Each replicate owns a fixed-size block of the cell's PCG64 stream: replicate
``r`` uses outputs ``[r K, (r + 1) K)`` of the stream seeded by the cell's
``SeedSequence`` (``PCG64.advance`` jumps there), where ``K`` is fixed by the scenario
(:class:`Layout`).  Every draw is a uniform double (one 64-bit output each); normals come
from the inverse normal CDF.  A replicate's draws therefore depend only on the seed and
its index, not on chunking or on how many workers share the cells, and the compiled
engine and the reference engine see the same numbers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special

from cogstats._codes import KIND_CODES
from cogstats.sim.spec import EffectDist, Scenario
from cogstats.sim.world import WorldDraws, WorldTable, draw_world, world_table

__all__ = [
    "Layout",
    "LessonTable",
    "Prepared",
    "draw_uniforms",
    "layout",
    "prepare",
    "scenario_lessons",
]


@dataclass(frozen=True)
class LessonTable:
    """The lessons of a scenario, in index order (listed, then streams, then poison)."""

    ids: tuple[str, ...]
    kind: np.ndarray  # int codes, see KIND_CODES
    kind_names: tuple[str, ...]
    arrival: np.ndarray  # run at which the lesson becomes a candidate
    applies: np.ndarray  # family index, -1 for every family
    age_rank: np.ndarray  # rank by (arrival, id): oldest first
    newest_rank: np.ndarray  # rank by (-arrival, id): newest first
    dists: tuple[EffectDist, ...]  # effect distribution of each lesson
    world: WorldTable | None = None  # the non-additive truth (None: effects add up)


@dataclass(frozen=True)
class Layout:
    """Positions of each kind of draw inside a replicate's block of K uniforms."""

    runs: int
    n_lessons: int
    pool: int  # uniforms per run for retrieval, besides the two coins (exploration, size)
    noise: int
    difficulty: int
    proxy: int
    family: int
    effect: int
    retrieval: int
    size: int
    paraphrase: int = 0  # 2 L uniforms when a stream writes paraphrases (else none)
    family_effect: int = 0  # L F uniforms when a stream draws family effects (else none)


def scenario_lessons(s: Scenario) -> LessonTable:
    """Index every lesson of the scenario and precompute its orderings.

    Listed lessons keep their ids; the generated ones (streams, poison events) are named
    by kind and index (``G0003``, ``P0041``) or, with ``[lessons] ids = "shuffled"``, by
    six random hex digits drawn from ``id_seed`` (so that no order of names follows the
    lessons' kinds: ids break ties in retrieval and in the gates).  A non-additive
    scenario's truth is built here too (``world``, :func:`cogstats.sim.world.world_table`).

    Examples
    --------
    >>> from cogstats.sim import Scenario
    >>> s = Scenario.from_dict({"runs": 5, "lessons": {
    ...     "streams": [{"per_run": 1, "from_run": 1, "to_run": 2, "effect": 0.0}],
    ...     "poison": [{"after_run": 1, "count": 1, "effect": -0.2}]}})
    >>> scenario_lessons(s).ids
    ('G0001', 'G0002', 'P0003')
    >>> s2 = s.with_values({"lessons.ids": "shuffled"})
    >>> [len(i) for i in scenario_lessons(s2).ids]
    [6, 6, 6]
    """
    ids: list[str] = []
    kinds: list[str] = []
    arrival: list[int] = []
    applies: list[int] = []
    dists: list[EffectDist] = []
    groups: list[str | None] = []
    paraphrase: list[float] = []
    fam_effects: list[tuple[tuple[str, Any], ...]] = []
    changes: list[tuple[Any, ...]] = []
    fam_index = {f.name: i for i, f in enumerate(s.difficulty.families)}
    for les in s.listed:
        ids.append(les.id)
        kinds.append(les.kind)
        arrival.append(les.arrives_at_run)
        applies.append(-1 if les.applies_to is None else fam_index[les.applies_to])
        dists.append(EffectDist("constant", value=les.effect))
        groups.append(les.group)
        paraphrase.append(0.0)
        fam_effects.append(les.effect_by_family)
        changes.append(les.changes)
    prefix = {"genuine": "G", "neutral": "N", "poison": "P"}
    generated = []
    for st in s.streams:
        k = 0
        for run in range(st.from_run, st.to_run + 1):
            for _ in range(st.per_run):
                generated.append(len(ids))
                ids.append(f"{prefix[st.kind]}{len(ids) + 1:04d}")
                kinds.append(st.kind)
                arrival.append(run)
                applies.append(
                    fam_index[st.applies_to[k % len(st.applies_to)]] if st.applies_to else -1
                )
                dists.append(st.effect)
                groups.append(None)
                paraphrase.append(st.paraphrase_prob)
                fam_effects.append(st.effect_by_family)
                changes.append(())
                k += 1
    for ev in s.poison:
        for _ in range(ev.count):
            generated.append(len(ids))
            ids.append(f"P{len(ids) + 1:04d}")
            kinds.append("poison")
            arrival.append(ev.after_run + 1)
            applies.append(-1)
            dists.append(ev.effect)
            groups.append(None)
            paraphrase.append(0.0)
            fam_effects.append(())
            changes.append(())
    if s.ids == "shuffled" and generated:
        names = np.random.default_rng(s.id_seed).choice(16**6, size=len(generated), replace=False)
        for j, name in zip(generated, names.tolist(), strict=True):
            ids[j] = f"{name:06x}"
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        from cogstats._validation import SpecError

        raise SpecError(f"lesson id {dup!r} collides with a generated id; rename it", key="lessons")
    arr = np.asarray(arrival, dtype=np.int64)
    n = len(ids)
    by_age = sorted(range(n), key=lambda j: (arrival[j], ids[j]))
    by_new = sorted(range(n), key=lambda j: (-arrival[j], ids[j]))
    age_rank = np.empty(n, dtype=np.int64)
    newest_rank = np.empty(n, dtype=np.int64)
    age_rank[by_age] = np.arange(n)
    newest_rank[by_new] = np.arange(n)
    return LessonTable(
        ids=tuple(ids),
        kind=np.asarray([KIND_CODES[k] for k in kinds], dtype=np.int64),
        kind_names=tuple(kinds),
        arrival=arr,
        applies=np.asarray(applies, dtype=np.int64),
        age_rank=age_rank,
        newest_rank=newest_rank,
        dists=tuple(dists),
        world=world_table(s, arr, groups, paraphrase, fam_effects, changes, ids),
    )


def pool_width(s: Scenario) -> int:
    """Return the uniforms per run that retrieval may use besides the two coins.

    One per pool position, as the policy says (``uniforms_per_run``, the simulation
    protocol of :mod:`cogstats.retrieval`).
    """
    policy = s.retrieval.build()
    per_run = getattr(policy, "uniforms_per_run", None)
    if per_run is None:  # a policy of one's own without the method: one per lesson
        return s.n_lessons
    return max(0, int(per_run(s.n_lessons)) - 2)


def layout(s: Scenario) -> Layout:
    """Return the block layout of one replicate's uniforms.

    The draws of a non-additive store (paraphrases, family effects of streams) come
    after the others, so that an additive scenario's block is as it always was.
    """
    runs, n_les, pool = s.runs, s.n_lessons, pool_width(s)
    n_fam = max(1, len(s.difficulty.families))
    paraphrase = 2 * n_les if any(st.paraphrase_prob > 0 for st in s.streams) else 0
    family_effect = n_les * n_fam if any(st.effect_by_family for st in s.streams) else 0
    pos = 0
    offsets = {}
    for name, size in (
        ("noise", runs),
        ("difficulty", runs),
        ("proxy", runs),
        ("family", runs),
        ("effect", n_les),
        ("retrieval", runs * (pool + 2)),
        ("paraphrase", paraphrase),
        ("family_effect", family_effect),
    ):
        offsets[name] = pos
        pos += size
    return Layout(runs=runs, n_lessons=n_les, pool=pool, size=pos, **offsets)


def draw_uniforms(seed: np.random.SeedSequence, start: int, count: int, lay: Layout) -> np.ndarray:
    """Uniforms in (0, 1) for replicates ``start .. start + count - 1``: shape (count, K).

    Examples
    --------
    >>> from cogstats.sim import Scenario
    >>> s = Scenario.from_dict({"runs": 5, "lessons": {"listed": [{"id": "a", "effect": 0}]}})
    >>> lay = layout(s)
    >>> ss = np.random.SeedSequence(1)
    >>> whole = draw_uniforms(ss, 0, 4, lay)
    >>> np.array_equal(whole[2:], draw_uniforms(ss, 2, 2, lay))
    True
    """
    bg = np.random.PCG64(seed)
    if start:
        bg.advance(start * lay.size)
    u = np.random.Generator(bg).random((count, lay.size))
    # random() gives k * 2**-53 with k in [0, 2**53); shift to the open interval (0, 1)
    return u + 2.0**-54


@dataclass(frozen=True)
class Prepared:
    """Per-replicate arrays for a chunk, shared by both engines."""

    noise: np.ndarray  # (n, runs) standard normals
    difficulty: np.ndarray  # (n, runs) total difficulty shift of each run
    proxy: np.ndarray | None  # (n, runs) observed difficulty proxy
    family: np.ndarray  # (n, runs) family index (0 when there are no families)
    effects: np.ndarray  # (n, L) true effects
    retrieval: np.ndarray  # (n, runs, pool + 2) retrieval uniforms: two coins, then the pool
    world: WorldDraws | None = None  # groups, effects by family and run (non-additive)


def prepare(s: Scenario, lessons: LessonTable, u: np.ndarray, lay: Layout) -> Prepared:
    """Turn a chunk's uniforms into noise, difficulty, families, effects (vectorized)."""
    n, runs = u.shape[0], lay.runs
    noise = special.ndtri(u[:, lay.noise : lay.noise + runs])
    d = s.difficulty
    z = special.ndtri(u[:, lay.difficulty : lay.difficulty + runs])
    if d.model == "iid":
        process = d.sd * z
    elif d.model == "ar1":
        process = np.empty_like(z)
        process[:, 0] = d.sd * z[:, 0]
        innov = d.sd * np.sqrt(1.0 - d.ar**2)
        for r in range(1, runs):
            process[:, r] = d.ar * process[:, r - 1] + innov * z[:, r]
    else:
        process = np.zeros_like(z)
    if d.families:
        w = np.asarray([f.weight for f in d.families], dtype=float)
        cum = np.cumsum(w / w.sum())
        cum[-1] = 1.0
        fam = np.searchsorted(cum, u[:, lay.family : lay.family + runs], side="right")
        fam = np.minimum(fam, len(d.families) - 1).astype(np.int64)
        shift = np.asarray([f.shift for f in d.families])[fam]
    else:
        fam = np.zeros((n, runs), dtype=np.int64)
        shift = np.zeros((n, runs))
    regime = np.zeros(runs)
    for g in d.regimes:
        regime[g.from_run - 1 :] = g.shift
    difficulty = process + shift + regime[None, :]
    proxy = None
    if d.proxy_corr is not None:
        pz = special.ndtri(u[:, lay.proxy : lay.proxy + runs])
        rho = d.proxy_corr
        proxy = rho * process / d.sd + np.sqrt(1.0 - rho**2) * pz
    ue = u[:, lay.effect : lay.effect + lay.n_lessons]
    effects = np.empty_like(ue)
    for j, dist in enumerate(lessons.dists):
        effects[:, j] = _inverse(dist, ue[:, j])
    retr = u[:, lay.retrieval : lay.retrieval + runs * (lay.pool + 2)].reshape(
        n, runs, lay.pool + 2
    )
    world = None
    wt = lessons.world
    if wt is not None:
        fam_draws = None
        if wt.fam_dist:
            uf = u[:, lay.family_effect : lay.family_effect + lay.n_lessons * wt.families]
            uf = uf.reshape(n, lay.n_lessons, wt.families)
            fam_draws = np.full(uf.shape, np.nan)
            for j, f, dist in wt.fam_dist:
                fam_draws[:, j, f] = _inverse(dist, uf[:, j, f])
        up = u[:, lay.paraphrase : lay.paraphrase + 2 * lay.n_lessons] if wt.paraphrases else None
        world = draw_world(wt, lessons.arrival, lessons.kind, effects, fam, up, fam_draws)
    return Prepared(noise, difficulty, proxy, fam, effects, np.ascontiguousarray(retr), world)


def _inverse(dist: EffectDist, u: np.ndarray) -> np.ndarray:
    if dist.dist == "constant":
        return np.full(u.shape, dist.value)
    if dist.dist == "uniform":
        return dist.low + (dist.high - dist.low) * u
    if dist.dist == "normal":
        return dist.mean + dist.sd * special.ndtri(u)
    vals = np.asarray(dist.values)
    idx = np.minimum((u * len(vals)).astype(np.int64), len(vals) - 1)
    return vals[idx]
