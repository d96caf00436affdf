"""Metrics of a non-additive store, and the diagnostics of its failure modes.

A lesson's *value alone* is its effect when it is the only lesson counted: its effect
averaged over the task families by their shares of runs (a lesson kept in every prompt
gets that), at a given run (a change of effect counts from its first run on); the
interactions are not part of it (a conflicting pair's member is judged by its own
effect).  In an additive scenario it is the lesson's drawn effect.  Then, per replicate:

- ``helpful_lost_rate`` counts *units*: a paraphrase group is one unit (a lesson in no
  group is its own), helpful when its best arrived member's value alone at the last run
  is at least :data:`~cogstats.sim.metrics.HELPFUL_EFFECT`, lost when every arrived
  member is retired, evicted or still suspended after the last run;
- ``false_conviction_rate``: a lesson evicted as harmful is a false conviction when its
  value alone at the run of the decision was >= 0 (a lesson that drifted to harm and was
  convicted after its switch is a true one); the denominator counts the tried lessons of
  value >= 0 at their reference run (the conviction's, else the last run).

The columns of :data:`WORLD_COLUMNS`, defined for every scenario (NaN where the world
has nothing of the kind):

- ``regret_runs_1_10`` / ``regret_runs_11_end``: the regret (oracle score - score)
  averaged over runs 1-10 and over runs 11 to the last (NaN with at most 10 runs);
- ``helpful_suspended_rate``: lessons of value alone >= HELPFUL_EFFECT at the last run
  still suspended after it / such lessons arrived;
- ``poison_injected_5plus``: poisons injected in 5 runs or more / poisons arrived;
- ``harmful_pair_runs``: runs in which every lesson of an interaction of negative effect
  was in the prompt, summed over those interactions;
- ``family_harmful_runs``: over the family-specific lessons (harmful in one task family,
  not in another), the mean number of runs each was injected in a run where its effect
  was negative;
- ``group_lost_rate`` / ``group_lost_any``: helpful paraphrase groups of two or more
  arrived members that were lost / whether any was (the share of replicates that lost
  one is the mean of ``group_lost_any``);
- ``drift_runs_after_switch``: over the lessons whose effect turned negative (a change
  to an effect < 0 from a value alone >= 0) within the runs, the mean number of runs each
  was in the prompt from its switch run on.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from cogstats._codes import (
    EVICTED,
    KIND_POISON,
    REASON_CODE_HARMFUL,
    RETIRED,
    STATUS_NAMES,
    SUSPENDED,
)
from cogstats.sim.world import NEVER, WorldDraws, WorldTable, mean_effects_at

__all__ = ["POISON_EXPOSURES", "WORLD_COLUMNS", "world_metrics"]

#: injections from which a poison counts in ``poison_injected_5plus``
POISON_EXPOSURES = 5
#: the split run of ``regret_runs_1_10`` / ``regret_runs_11_end``
SPLIT_RUN = 10
_SUS = STATUS_NAMES.index(SUSPENDED)
_LOST = [STATUS_NAMES.index(EVICTED), STATUS_NAMES.index(RETIRED), _SUS]

WORLD_COLUMNS: tuple[str, ...] = (
    "regret_runs_1_10",
    "regret_runs_11_end",
    "helpful_suspended_rate",
    "poison_injected_5plus",
    "harmful_pair_runs",
    "family_harmful_runs",
    "group_lost_rate",
    "group_lost_any",
    "drift_runs_after_switch",
)


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    """``num / den`` where ``den > 0``, NaN elsewhere (the metrics' rates)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.maximum(den, 1), np.nan)


def _injection_counts(raw: Any, n_les: int) -> np.ndarray:
    """Return (n, L) the runs in which each lesson was in the prompt."""
    n = raw.inj.shape[0]
    in_prompt = np.arange(raw.inj.shape[2])[None, None, :] < raw.ninj[:, :, None]
    cell = np.arange(n, dtype=np.int64)[:, None, None] * n_les + raw.inj
    return np.bincount(cell[in_prompt], minlength=n * n_les).reshape(n, n_les)


def _injections(raw: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return (replicate, run index from 0, lesson) of every injection of the chunk."""
    rep_idx, run_idx, slot = np.nonzero(raw.inj >= 0)
    keep = slot < raw.ninj[rep_idx, run_idx]
    return rep_idx[keep], run_idx[keep], raw.inj[rep_idx, run_idx, slot][keep]


def world_metrics(
    raw: Any,
    kind: np.ndarray,
    arrival: np.ndarray,
    effects: np.ndarray,
    final: np.ndarray,
    helpful_effect: float,
    wt: WorldTable | None = None,
    draws: WorldDraws | None = None,
) -> dict[str, np.ndarray]:
    """Return the columns of :data:`WORLD_COLUMNS` for a chunk, per replicate.

    With a world (``wt`` and ``draws``), also ``helpful_lost_rate`` and
    ``false_conviction_rate`` as the module defines them for a non-additive store.
    ``final`` is each lesson's status code after the last run
    (:func:`cogstats.sim.metrics.lifecycle`), ``helpful_effect`` the least value alone
    of a helpful lesson.

    Examples
    --------
    >>> import numpy as np
    >>> from cogstats.sim import Scenario
    >>> from cogstats.sim.draws import scenario_lessons
    >>> from cogstats.sim.raw import empty_raw
    >>> s = Scenario.from_dict({"runs": 12, "gate": {"type": "none"},
    ...     "lessons": {"listed": [{"id": "p", "effect": -0.2, "kind": "poison"}]}})
    >>> les = scenario_lessons(s)
    >>> raw = empty_raw(s, les, 1)
    >>> raw.inj[0, :6, 0] = 0; raw.ninj[0, :6] = 1   # the poison in runs 1-6
    >>> raw.oracle[0, :] = 0.5; raw.score[0, :10] = 0.3; raw.score[0, 10:] = 0.5
    >>> out = world_metrics(raw, les.kind, les.arrival, np.array([[-0.2]]),
    ...     np.array([[1]]), 0.05)
    >>> out["poison_injected_5plus"].tolist(), out["regret_runs_1_10"].round(3).tolist()
    ([1.0], [0.2])
    >>> out["regret_runs_11_end"].tolist(), np.isnan(out["harmful_pair_runs"]).tolist()
    ([0.0], [True])
    """
    n, runs = raw.score.shape
    n_les = kind.shape[0]
    gap = raw.oracle - raw.score
    split = min(SPLIT_RUN, runs)
    out: dict[str, np.ndarray] = {
        "regret_runs_1_10": gap[:, :split].mean(axis=1),
        "regret_runs_11_end": gap[:, split:].mean(axis=1) if runs > split else np.full(n, np.nan),
    }
    count = _injection_counts(raw, n_les)
    arrived = np.broadcast_to((arrival <= runs)[None, :], (n, n_les))
    poison = np.broadcast_to((kind == KIND_POISON)[None, :], (n, n_les)) & arrived
    out["poison_injected_5plus"] = _ratio(
        (poison & (count >= POISON_EXPOSURES)).sum(axis=1), poison.sum(axis=1)
    )
    value_end = effects if wt is None or draws is None else mean_effects_at(wt, draws, runs)
    helpful = arrived & (value_end >= helpful_effect)
    out["helpful_suspended_rate"] = _ratio(
        (helpful & (final == _SUS)).sum(axis=1), helpful.sum(axis=1)
    )
    nan = np.full(n, np.nan)
    out.update(
        harmful_pair_runs=nan,
        family_harmful_runs=nan,
        group_lost_rate=nan,
        group_lost_any=nan,
        drift_runs_after_switch=nan,
    )
    if wt is None or draws is None:
        return out
    rep_idx, run_idx, les_idx = _injections(raw)
    lost = np.isin(final, _LOST) & arrived
    out.update(_group_metrics(draws.group, value_end, arrived, lost, helpful_effect))
    out.update(_conviction(raw, wt, draws))
    out["harmful_pair_runs"] = _pair_runs(raw, wt)
    out["family_harmful_runs"] = _family_runs(draws, arrived, rep_idx, run_idx, les_idx)
    out["drift_runs_after_switch"] = _drift_runs(
        wt, draws, arrival, runs, rep_idx, run_idx, les_idx
    )
    return out


def _group_metrics(
    group: np.ndarray,
    value: np.ndarray,
    arrived: np.ndarray,
    lost: np.ndarray,
    helpful_effect: float,
) -> dict[str, np.ndarray]:
    """``helpful_lost_rate`` by units, ``group_lost_rate`` and ``group_lost_any``."""
    n, n_les = group.shape
    gid = (np.arange(n)[:, None] * n_les + group)[arrived]
    best = np.full(n * n_les, -np.inf)
    np.maximum.at(best, gid, value[arrived])
    members = np.bincount(gid, minlength=n * n_les)
    n_lost = np.bincount(gid, weights=lost[arrived].astype(float), minlength=n * n_les)
    unit = (members > 0).reshape(n, n_les)
    helpful = (best >= helpful_effect).reshape(n, n_les) & unit
    all_lost = (n_lost == members).reshape(n, n_les) & unit
    multi = (members >= 2).reshape(n, n_les) & helpful
    lost_multi = (multi & all_lost).sum(axis=1)
    return {
        "helpful_lost_rate": _ratio((helpful & all_lost).sum(axis=1), helpful.sum(axis=1)),
        "group_lost_rate": _ratio(lost_multi, multi.sum(axis=1)),
        "group_lost_any": np.where(multi.any(axis=1), (lost_multi > 0).astype(float), np.nan),
    }


def _conviction(raw: Any, wt: WorldTable, draws: WorldDraws) -> dict[str, np.ndarray]:
    """``false_conviction_rate`` by the value alone at the decision (else the last run)."""
    runs = raw.score.shape[1]
    harmful = (raw.evict_run > 0) & (raw.evict_reason == REASON_CODE_HARMFUL)
    ref_run = np.where(harmful, raw.evict_run, runs)
    nonneg = mean_effects_at(wt, draws, ref_run) >= 0
    tried = raw.trials > 0
    return {
        "false_conviction_rate": _ratio(
            (harmful & nonneg).sum(axis=1), (tried & nonneg).sum(axis=1)
        )
    }


def _pair_runs(raw: Any, wt: WorldTable) -> np.ndarray:
    """Count the runs with every lesson of a harmful interaction in the prompt (summed)."""
    n, runs = raw.score.shape
    harmful = wt.harmful_interactions()
    if harmful.size == 0:
        return np.full(n, np.nan)
    slots = np.arange(raw.inj.shape[2])[None, None, :] < raw.ninj[:, :, None]
    total = np.zeros(n)
    for k in harmful:
        together = np.ones((n, runs), dtype=np.bool_)
        for j in wt.inter_les[wt.inter_ptr[k] : wt.inter_ptr[k + 1]]:
            together &= ((raw.inj == j) & slots).any(axis=2)
        total += together.sum(axis=1)
    return total


def _family_runs(
    draws: WorldDraws,
    arrived: np.ndarray,
    rep_idx: np.ndarray,
    run_idx: np.ndarray,
    les_idx: np.ndarray,
) -> np.ndarray:
    """Mean runs a family-specific lesson was injected where its effect was negative."""
    fam = draws.fam_effects
    specific = arrived & (fam.min(axis=2) < 0) & (fam.max(axis=2) >= 0)
    bad = draws.run_effects[rep_idx, run_idx, les_idx] < 0
    keep = bad & specific[rep_idx, les_idx]
    runs_bad = np.zeros(specific.shape)
    np.add.at(runs_bad, (rep_idx[keep], les_idx[keep]), 1.0)
    return _ratio(np.where(specific, runs_bad, 0).sum(axis=1), specific.sum(axis=1))


def _drift_runs(
    wt: WorldTable,
    draws: WorldDraws,
    arrival: np.ndarray,
    runs: int,
    rep_idx: np.ndarray,
    run_idx: np.ndarray,
    les_idx: np.ndarray,
) -> np.ndarray:
    """Mean runs a drifted lesson was in the prompt from its switch run on."""
    n, n_les = draws.group.shape
    switch = np.full((n, n_les), NEVER, dtype=np.int64)
    for c in range(wt.change_run.shape[1]):
        at = wt.change_run[:, c]
        due = (at <= runs) & (wt.change_eff[:, c] < 0)
        if not due.any():
            continue
        before = mean_effects_at(wt, draws, np.broadcast_to(at - 1, (n, n_les)))
        turned = due[None, :] & (before >= 0) & (switch == NEVER) & (arrival <= runs)[None, :]
        switch = np.where(turned, at[None, :], switch)
    drifted = switch < NEVER
    after = (run_idx + 1) >= switch[rep_idx, les_idx]
    runs_after = np.zeros((n, n_les))
    np.add.at(runs_after, (rep_idx[after], les_idx[after]), 1.0)
    return _ratio(np.where(drifted, runs_after, 0).sum(axis=1), drifted.sum(axis=1))
