"""Prototype measurements of the second-version recommended gate (issue 18).

Run: ``python docs/scripts/v2_prototype.py s1 [--reps N]`` or ``... s2 [--reps N]
[--spec PATH ...]``.  Numpy only, one core; every figure with its Monte Carlo standard
error.  The simulator does not yet inject by status (suspended / admitted), so this
script has its own small S1 and S2 models; docs/recommended.md ("Second version") quotes
its output.

**S1** (one lesson, inclusion 1/2 per run, score clamp01(0.6 + e x + N(0, sd)), a look
after every run; ``history`` runs without the lesson recorded before it arrives, budgets
counted from its arrival).  With one lesson the debiased ridge is the pooled two-sample t
test exactly (cogstats.estimators.debiased_ridge), so the statistics are computed in
closed form for every replicate at once and passed to the gate's own rule
(:func:`cogstats.gates.recommended.lifecycle_rule`), with the statuses it leads to carried
from look to look (a suspended lesson is still injected at 1/2: S1's re-test design).
Decided = promoted or convicted by either tier; suspension, admission and release are not
decisions.

**S2** (the S2-type specs of simulations/: their runs, candidate streams, poisons,
difficulty with its proxy, noise and prompt caps, read from the TOML): per replicate the
same draws (lesson effects, difficulty, proxy, noise) for two agents:

- *v2*: the lifecycle gate's ``judge`` after every run on its sufficient statistics
  (``LifecycleStatistics.empty([difficulty_proxy]).add_run`` per run), statuses carried;
  retrieval: one suspended lesson re-tested per run (the re-test slot: suspects kept
  apart), chosen among those suspended at most ``retest_window`` (5) runs ago whose last t
  is at least ``-suspect_t`` or not yet computed, highest t first (the most likely
  innocent first); then candidates, fewest trials and oldest first, each drawn with
  probability 1/2, up to ``candidate_slots``; verified and admitted lessons fill the rest
  (a random subset when there are more); places still empty go to the candidates not
  drawn, each with probability ``fill_prob`` (1: the prompt kept full);
- *margin*: cycgraph's margin rule (``CycgraphGate(decision_rule="margin")`` with the
  spec's options, ``evaluate`` on the ledger after every run) with cycgraph's retrieval
  (in-progress-first, rest after the spec's ``rest_after_trials``).

Metrics per replicate: regret (mean over runs of oracle score - score; the oracle injects
the best ``max_facts`` arrived lessons of positive effect under the same difficulty and
noise), poison exposure (per poison: runs from its arrival through its last injection;
median pooled over poisons, bootstrap error over replicates), poisons injected in the last
5 runs, false conviction (effect >= 0 evicted as harmful / such lessons with a trial),
helpful lost (effect >= 0.05 evicted, retired or suspended at the last run / such lessons
arrived), runs genuine lessons spend suspended (median over those suspended at least once,
and the share suspended).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

import numpy as np
from scipy import special

from cogstats import _codes as C
from cogstats.gates import rule_options
from cogstats.gates.recommended import LifecycleGate, LifecycleStatistics, lifecycle_rule

# the status codes the rule reads (the simulator's; evicted stands for every inactive one)
_ST_CANDIDATE, _ST_ADMITTED, _ST_VERIFIED = C.STATUS_CANDIDATE, C.STATUS_ADMITTED, C.STATUS_VERIFIED
_ST_SUSPENDED, _ST_INACTIVE = C.STATUS_SUSPENDED, C.STATUS_EVICTED

ROOT = Path(__file__).resolve().parents[2]

_NEXT_STATUS = {
    C.OUTCOME_PROMOTE: _ST_VERIFIED,
    C.OUTCOME_EVICT_HARMFUL: _ST_INACTIVE,
    C.OUTCOME_EVICT_NO_LIFT: _ST_INACTIVE,
    C.OUTCOME_ADMIT: _ST_ADMITTED,
    C.OUTCOME_SUSPEND: _ST_SUSPENDED,
    C.OUTCOME_RELEASE: _ST_CANDIDATE,
}


def _rate(x: np.ndarray) -> tuple[float, float]:
    """Mean of 0/1 outcomes and its binomial standard error."""
    x = np.asarray(x, dtype=float)
    p = float(x.mean())
    return p, math.sqrt(max(p * (1 - p), 1e-300) / x.size)


# ======================================================================= S1
def s1_statistics(
    x: np.ndarray, y: np.ndarray, r: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Return the pooled two-sample t statistics after run ``r`` (0-based), every replicate at once.

    ``x`` (replicates, runs) inclusion, ``y`` scores.  Returns (t, df, info, estimate, se,
    sigma, trials); with one lesson the debiased ridge gives exactly these.
    """
    xn = x[:, : r + 1].astype(float)
    yy = y[:, : r + 1]
    big = r + 1
    n = xn.sum(axis=1)
    m = big - n
    s1 = (yy * xn).sum(axis=1)
    s0 = yy.sum(axis=1) - s1
    q1 = (yy * yy * xn).sum(axis=1)
    q0 = (yy * yy).sum(axis=1) - q1
    with np.errstate(divide="ignore", invalid="ignore"):
        ss = np.maximum(q1 - s1 * s1 / n, 0) + np.maximum(q0 - s0 * s0 / m, 0)
        df = np.where((n > 0) & (m > 0) & (big - 2.0 >= 1), big - 2.0, np.nan)
        sig = np.sqrt(ss / df)
        est = s1 / n - s0 / m
        se = sig * np.sqrt(1 / n + 1 / m)
        ok = np.isfinite(est) & np.isfinite(se) & (se > 0)
        t = np.where(ok, est / se, np.nan)
        info = np.where(ok, n * m / big, np.nan)
    return t, df, info, est, se, sig, n.astype(np.int64)


def _s1_look(
    gate: LifecycleGate, x: np.ndarray, y: np.ndarray, r: int, status: np.ndarray
) -> np.ndarray:
    """Apply the gate's rule at the look after run ``r`` for every replicate (outcome codes)."""
    t, df, info, est, se, sig, n = s1_statistics(x, y, r)
    with np.errstate(invalid="ignore"):
        crater_p = np.where(
            np.isfinite(t), special.stdtr(np.where(np.isfinite(df), df, 1.0), t), np.nan
        )
    x = {"t": t, "df": df, "info": info, "estimate": est, "se": se, "sigma": sig, "trials": n,
         "identifiable": np.ones(len(t), dtype=bool), "crater_p": crater_p, "status": status,
         "level": gate.levels_at(info)}  # fmt: skip
    out, _, _ = lifecycle_rule(x, rule_options(gate))
    return out


def s1_outcomes_candidate(gate: LifecycleGate, x: np.ndarray, y: np.ndarray) -> list[int]:
    """One replicate's outcome code at every look, its status held at candidate (a check)."""
    xx, yy = x[None, :], y[None, :]
    st = np.array([_ST_CANDIDATE])
    return [int(_s1_look(gate, xx, yy, r, st)[0]) for r in range(x.shape[0])]


def s1_cells(
    gate: LifecycleGate,
    effect: float,
    noise: float,
    reps: int,
    seed: int,
    history: int = 0,
    runs: int = 100,
    budgets: tuple[int, ...] = (10, 25, 50, 100),
) -> dict[int, dict[str, float]]:
    """S1 for one (effect, noise): per budget, the share decided and the share correct."""
    rng = np.random.default_rng(seed)
    tot = history + runs
    x = np.zeros((reps, tot), dtype=bool)
    x[:, history:] = rng.random((reps, runs)) < 0.5
    y = np.clip(0.6 + effect * x + rng.normal(0.0, noise, (reps, tot)), 0.0, 1.0)
    status = np.full(reps, _ST_CANDIDATE, dtype=np.int64)
    first = np.full(reps, -1, dtype=np.int64)  # outcome code of the first decision
    when = np.full(reps, runs + 1, dtype=np.int64)
    for r in range(history, tot):
        out = _s1_look(gate, x, y, r, status)
        live = first < 0
        dec = live & ((out == C.OUTCOME_PROMOTE) | (out == C.OUTCOME_EVICT_HARMFUL))
        first[dec] = out[dec]
        when[dec] = r - history + 1
        stop = live & (out == C.OUTCOME_EVICT_NO_LIFT)
        first[stop] = out[stop]
        when[stop] = runs + 2  # ended without a decision
        for code, nxt in _NEXT_STATUS.items():
            status[live & (out == code)] = nxt
    res = {}
    want = C.OUTCOME_PROMOTE if effect > 0 else C.OUTCOME_EVICT_HARMFUL
    for b in budgets:
        decided = (when <= b) & ((first == C.OUTCOME_PROMOTE) | (first == C.OUTCOME_EVICT_HARMFUL))
        correct = decided & (first == want)
        res[b] = {
            "decided": _rate(decided)[0],
            "decided_se": _rate(decided)[1],
            "correct": _rate(correct)[0],
            "correct_se": _rate(correct)[1],
        }
    return res


def run_s1(gate: LifecycleGate, reps: int, seed: int) -> None:
    """Print S1's cells: null decided rates and power, new ledger and with 20 runs of history."""
    print(f"S1 ({reps} replicates per cell, seed {seed}); gate: {gate.to_policy()}")
    for history in (0, 20):
        print(f"\n-- history {history} runs")
        for noise in (0.05, 0.1, 0.2):
            c = s1_cells(gate, 0.0, noise, reps, seed + 1, history)
            row = "  ".join(
                f"b{b}: {100 * v['decided']:.2f}% ± {100 * v['decided_se']:.2f}"
                for b, v in c.items()
            )
            print(f"null decided, noise {noise}: {row}")
        for noise in (0.05, 0.1):
            for e in (-0.3, 0.3, -0.2, 0.2, -0.1, 0.1, -0.05, 0.05):
                c = s1_cells(gate, e, noise, reps, seed + 2, history)
                row = "  ".join(
                    f"b{b}: {v['correct']:.3f} ± {v['correct_se']:.3f}" for b, v in c.items()
                )
                print(f"correct, noise {noise}, e {e:+.2f}: {row}")


# ======================================================================= S4
def run_s4(gate: LifecycleGate, reps: int, seed: int, runs: int = 200, k: int = 20) -> None:
    """Print S4's false decisions (simulations/peeking_null.toml, statuses carried).

    20 null lessons injected at 1/2 in every run whatever their status, clamp01(0.6 +
    N(0, 0.1)), the rule after every one of 200 runs (``decide`` on the statistics).
    Prints the share of lessons ever promoted or convicted, and of those retired for no
    lift by futility.
    """
    ss = np.random.SeedSequence([seed, 4])
    decided, futile = [], []
    for child in ss.spawn(reps):
        rng = np.random.default_rng(child)
        x = rng.random((runs, k)) < 0.5
        y = np.clip(0.6 + rng.normal(0.0, 0.1, runs), 0.0, 1.0)
        ids = [f"N{j}" for j in range(k)]
        stats = LifecycleStatistics.empty()
        status = np.full(k, _ST_CANDIDATE, dtype=np.int64)
        ever = np.zeros(k, dtype=bool)
        fut = np.zeros(k, dtype=bool)
        for r in range(runs):
            stats = stats.add_run(f"r{r}", float(y[r]), [ids[j] for j in np.flatnonzero(x[r])])
            col = {f: i for i, f in enumerate(stats.ridge.fact_ids)}
            order = [col[f] for f in ids if f in col]
            have = np.array([f in col for f in ids])
            st = np.full(len(col), _ST_CANDIDATE, dtype=np.int64)
            st[order] = status[have]
            out, _, _ = gate.decide(stats, st)
            o = np.full(k, C.OUTCOME_HOLD, dtype=np.int64)
            o[have] = out[order]
            live = status != _ST_INACTIVE
            ever |= live & ((o == C.OUTCOME_PROMOTE) | (o == C.OUTCOME_EVICT_HARMFUL))
            fut |= live & (o == C.OUTCOME_EVICT_NO_LIFT)
            for code, nxt in _NEXT_STATUS.items():
                status[live & (o == code)] = nxt
            status[ever] = _ST_INACTIVE  # a decided lesson is counted once
        decided.append(ever.mean())
        futile.append(fut.mean())
    d, f = np.array(decided), np.array(futile)
    print(f"S4 ({reps} replicates x {k} null lessons, {runs} runs, seed {seed})")
    se_d, se_f = d.std(ddof=1) / math.sqrt(reps), f.std(ddof=1) / math.sqrt(reps)
    print(f"promoted or convicted: {100 * d.mean():.2f}% ± {100 * se_d:.2f}")
    print(f"retired by futility:   {100 * f.mean():.2f}% ± {100 * se_f:.2f}")


def main(argv: list[str] | None = None) -> int:
    """Command line: ``s1`` or ``s2``."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", choices=["s1", "s2", "s4"])
    ap.add_argument("--reps", type=int, default=None)
    ap.add_argument("--seed", type=int, default=20261202)
    ap.add_argument("--spec", nargs="*", default=None)
    ap.add_argument("--set", nargs="*", default=[], help="gate options name=value")
    a = ap.parse_args(argv)
    opts: dict[str, Any] = {}
    for kv in a.set:
        k, v = kv.split("=", 1)
        opts[k] = float(v) if k != "looks" and k != "min_trials" else int(v)
    gate = LifecycleGate(**opts)
    t0 = time.perf_counter()
    if a.what == "s1":
        run_s1(gate, a.reps or 4000, a.seed)
    elif a.what == "s4":
        run_s4(gate, a.reps or 100, a.seed)
    else:
        specs = a.spec or DEFAULT_SPECS
        for path in specs:
            run_s2(gate, ROOT / path, a.reps or 200, a.seed)
    print(f"\n({time.perf_counter() - t0:.1f} s)", file=sys.stderr)
    return 0


DEFAULT_SPECS = [
    "simulations/poison_crater.toml",
    "simulations/s2_variants/mild_poisons.toml",
    "simulations/s2_variants/noisy_runs.toml",
    "simulations/s2_variants/single_poison.toml",
    "simulations/s2_variants/small_prompt.toml",
    "simulations/s2_variants/two_waves.toml",
    "simulations/s2_variants/with_history.toml",
]


# ======================================================================= S2
def load_s2(path: Path) -> dict[str, Any]:
    """Read the parts of an S2-type spec this model reads (see the module docstring)."""
    with open(path, "rb") as fh:
        d = tomllib.load(fh)
    les = d.get("lessons", {})
    known = {"streams", "poison"}
    if set(les) - known or "families" in d or "regimes" in d:
        raise SystemExit(f"{path}: only lessons.streams and lessons.poison are modelled")
    return {
        "name": d.get("name", path.stem),
        "runs": int(d["runs"]),
        "streams": les.get("streams", []),
        "poison": les.get("poison", []),
        "difficulty_sd": float(d.get("difficulty", {}).get("sd", 0.0)),
        "proxy_corr": d.get("difficulty", {}).get("proxy_corr"),
        "base": float(d["score"]["base"]),
        "noise_sd": float(d["score"]["noise_sd"]),
        "max_facts": int(d["retrieval"]["max_facts"]),
        "candidate_slots": int(d["retrieval"]["candidate_slots"]),
        "rest_after_trials": int(d["retrieval"].get("rest_after_trials", 2)),
        "gate": {k: v for k, v in d["gate"].items() if k not in ("type",)},
    }


def _draw_effect(spec: Any, rng: np.random.Generator, k: int) -> np.ndarray:
    if isinstance(spec, (int, float)):
        return np.full(k, float(spec))
    if spec.get("dist") == "uniform":
        return rng.uniform(float(spec["low"]), float(spec["high"]), k)
    if spec.get("dist") == "constant":
        return np.full(k, float(spec["value"]))
    raise SystemExit(f"effect {spec!r} is not modelled")


def draw_world(sc: dict[str, Any], rng: np.random.Generator) -> dict[str, np.ndarray]:
    """One replicate's draws: lessons (arrival, effect, kind), difficulty, proxy, noise."""
    arr, eff, kind = [], [], []
    for st in sc["streams"]:
        for r in range(int(st["from_run"]), int(st["to_run"]) + 1):
            k = int(st["per_run"])
            arr += [r] * k
            eff += list(_draw_effect(st["effect"], rng, k))
            kind += [C.KIND_CODES[st.get("kind", "genuine")]] * k
    for ev in sc["poison"]:
        k = int(ev["count"])
        arr += [int(ev["after_run"]) + 1] * k
        eff += list(_draw_effect(ev["effect"], rng, k))
        kind += [C.KIND_POISON] * k
    runs = sc["runs"]
    sd = sc["difficulty_sd"]
    d = rng.normal(0.0, sd, runs) if sd > 0 else np.zeros(runs)
    rho = sc["proxy_corr"]
    proxy = None
    if rho is not None and sd > 0:
        proxy = rho * d / sd + math.sqrt(1 - rho**2) * rng.normal(0.0, 1.0, runs)
    return {
        "arrival": np.array(arr, dtype=np.int64),
        "effect": np.array(eff, dtype=float),
        "kind": np.array(kind, dtype=np.int64),
        "difficulty": d,
        "proxy": proxy,
        "noise": rng.normal(0.0, sc["noise_sd"], runs),
        "coins": rng.random((runs, len(arr) + 8)),
    }


def _score(sc: dict[str, Any], w: dict[str, np.ndarray], r: int, total: float) -> float:
    return float(np.clip(sc["base"] + w["difficulty"][r] + total + w["noise"][r], 0.0, 1.0))


def _oracle(sc: dict[str, Any], w: dict[str, np.ndarray], r: int) -> float:
    e = w["effect"][(w["arrival"] <= r + 1) & (w["effect"] > 0)]
    best = np.sort(e)[::-1][: sc["max_facts"]]
    return _score(sc, w, r, float(best.sum()))


_FUTURE = -1


def agent_v2(
    gate: LifecycleGate,
    sc: dict[str, Any],
    w: dict[str, np.ndarray],
    retest_slots: int = 1,
    retest_floor: float | None = None,
    retest_window: int | None = 5,
    fill_room: bool = True,
    fill_prob: float = 1.0,
) -> dict[str, np.ndarray]:
    """Run the lifecycle gate with its retrieval: injections per run and final statuses."""
    n_les = len(w["effect"])
    ids = [f"L{i}" for i in range(n_les)]
    status = np.full(n_les, _FUTURE, dtype=np.int64)
    retests = np.zeros(n_les, dtype=np.int64)
    since = np.zeros(n_les, dtype=np.int64)
    susp_runs = np.zeros(n_les, dtype=np.int64)
    ever_susp = np.zeros(n_les, dtype=bool)
    convicted = np.zeros(n_les, dtype=bool)
    trials = np.zeros(n_les, dtype=np.int64)
    last_t = np.zeros(n_les)
    runs = sc["runs"]
    inj = np.zeros((runs, n_les), dtype=bool)
    cov_name = "difficulty_proxy" if w["proxy"] is not None else None
    stats: LifecycleStatistics | None = None
    names = {
        _ST_CANDIDATE: C.CANDIDATE,
        _ST_ADMITTED: C.ADMITTED,
        _ST_VERIFIED: C.VERIFIED,
        _ST_SUSPENDED: C.SUSPENDED,
    }
    scores = np.zeros(runs)
    for r in range(runs):
        status[(status == _FUTURE) & (w["arrival"] <= r + 1)] = _ST_CANDIDATE
        coins = w["coins"][r]
        chosen: list[int] = []
        floor = gate.suspect_t if retest_floor is None else retest_floor
        sus = np.flatnonzero((status == _ST_SUSPENDED) & (last_t >= -floor))
        if retest_window is not None:
            sus = sus[r + 1 - since[sus] <= retest_window]
        if sus.size:
            # the most likely innocent first (highest t), one at a time: suspects apart
            order = sus[np.lexsort((since[sus], -last_t[sus]))]
            chosen += list(order[: min(retest_slots, sc["candidate_slots"])])
        cand = np.flatnonzero(status == _ST_CANDIDATE)
        cand = cand[np.lexsort((w["arrival"][cand], trials[cand]))]
        for j in cand:
            if len(chosen) >= sc["candidate_slots"]:
                break
            if coins[j] < 0.5:
                chosen.append(int(j))
        room = sc["max_facts"] - len(chosen)
        fill = np.flatnonzero((status == _ST_ADMITTED) | (status == _ST_VERIFIED))
        if fill.size > room:
            fill = fill[np.argsort(coins[fill + 1] if fill.max() + 1 < coins.size else fill)][:room]
            fill = np.sort(fill)
        chosen += list(fill)
        if fill_room and len(chosen) < sc["max_facts"]:
            # keep the prompt full: the places left go to further candidates, each drawn
            # at 1/2 (their inclusion stays randomized)
            taken = set(chosen)
            for j in cand:
                if len(chosen) >= sc["max_facts"]:
                    break
                if j not in taken and coins[(j + 3) % coins.size] < fill_prob:
                    chosen.append(int(j))
        on = np.zeros(n_les, dtype=bool)
        on[chosen] = True
        inj[r] = on
        trials += on
        retests[on & (status == _ST_SUSPENDED)] += 1
        y = _score(sc, w, r, float(w["effect"][on].sum()))
        scores[r] = y
        cov = {cov_name: float(w["proxy"][r])} if cov_name else {}
        facts = [ids[j] for j in chosen]
        if stats is None:
            stats = LifecycleStatistics.empty([cov_name] if cov_name else [])
        stats = stats.add_run(f"r{r + 1}", y, facts, cov)
        live = [j for j in range(n_les) if status[j] in names and ids[j] in stats.ridge.fact_ids]
        st = {ids[j]: names[int(status[j])] for j in live}
        rep = gate.judge(stats, st, [ids[j] for j in live]).to_frame()
        for f, dec, reason, tv in zip(
            rep["fact_id"], rep["decision"], rep["reason"], rep["t_stat"], strict=True
        ):
            jj = int(f[1:])
            last_t[jj] = 99.0 if tv is None else tv  # no t yet: needs a re-test first
            code = C.outcome_code(dec, reason)
            nxt = _NEXT_STATUS.get(code)
            if nxt is None:
                continue
            if code == C.OUTCOME_EVICT_HARMFUL:
                convicted[jj] = True
            if nxt == _ST_SUSPENDED:
                retests[jj] = 0
                since[jj] = r + 1
                ever_susp[jj] = True
            status[jj] = nxt
        susp_runs += status == _ST_SUSPENDED
    return {
        "inj": inj,
        "score": scores,
        "status": status,
        "convicted": convicted,
        "ever_susp": ever_susp,
        "susp_runs": susp_runs,
        "trials": trials,
    }


def agent_margin(sc: dict[str, Any], w: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Cycgraph's margin rule with cycgraph's retrieval (in-progress-first, rest bench)."""
    from cogstats import Ledger
    from cogstats.gates import CycgraphGate

    opts = dict(sc["gate"])
    gate = CycgraphGate(**opts)
    n_les = len(w["effect"])
    ids = [f"L{i}" for i in range(n_les)]
    status = np.full(n_les, _FUTURE, dtype=np.int64)
    convicted = np.zeros(n_les, dtype=bool)
    trials = np.zeros(n_les, dtype=np.int64)
    promoted_at = np.zeros(n_les, dtype=np.int64)
    runs = sc["runs"]
    inj = np.zeros((runs, n_les), dtype=bool)
    records: list[dict[str, Any]] = []
    scores = np.zeros(runs)
    rest = sc["rest_after_trials"]
    for r in range(runs):
        status[(status == _FUTURE) & (w["arrival"] <= r + 1)] = _ST_CANDIDATE
        cand = np.flatnonzero((status == _ST_CANDIDATE) & (trials < rest))
        cand = cand[np.lexsort((cand, w["arrival"][cand], -trials[cand]))]
        chosen = list(cand[: sc["candidate_slots"]])
        room = sc["max_facts"] - len(chosen)
        ver = np.flatnonzero(status == _ST_VERIFIED)
        ver = ver[np.lexsort((ver, -promoted_at[ver]))][:room]
        chosen = list(ver) + chosen
        on = np.zeros(n_les, dtype=bool)
        on[chosen] = True
        inj[r] = on
        trials += on
        y = _score(sc, w, r, float(w["effect"][on].sum()))
        scores[r] = y
        records.append({"run_id": f"r{r + 1}", "score": y, "fact_ids": [ids[j] for j in chosen]})
        ledger = Ledger.from_records(records)
        have = set(ledger.fact_ids)
        live = [ids[j] for j in np.flatnonzero(status == _ST_CANDIDATE) if ids[j] in have]
        if not live:
            continue
        rep = gate.evaluate(ledger, live).to_frame()
        for f, dec, reason in zip(rep["fact_id"], rep["decision"], rep["reason"], strict=True):
            j = int(f[1:])
            if dec == C.PROMOTE:
                status[j] = _ST_VERIFIED
                promoted_at[j] = r + 1
            elif dec == C.EVICT:
                status[j] = _ST_INACTIVE
                convicted[j] = reason == C.HARMFUL
    return {
        "inj": inj,
        "score": scores,
        "status": status,
        "convicted": convicted,
        "ever_susp": np.zeros(n_les, dtype=bool),
        "susp_runs": np.zeros(n_les, dtype=np.int64),
        "trials": trials,
    }


def replicate_metrics(
    sc: dict[str, Any], w: dict[str, np.ndarray], a: dict[str, np.ndarray]
) -> dict[str, Any]:
    """One replicate's metrics for one agent (the module docstring's definitions)."""
    runs = sc["runs"]
    oracle = np.array([_oracle(sc, w, r) for r in range(runs)])
    poison = w["kind"] == C.KIND_POISON
    exposure = []
    late_out = []
    for j in np.flatnonzero(poison):
        on = np.flatnonzero(a["inj"][:, j])
        exposure.append(0 if on.size == 0 else int(on[-1] + 1 - w["arrival"][j] + 1))
        late_out.append(not a["inj"][runs - 5 :, j].any())
    gen = (w["effect"] >= 0) & ~poison
    tried = gen & (a["trials"] > 0)
    helpful = (w["effect"] >= 0.05) & ~poison
    lost = helpful & np.isin(a["status"], (_ST_INACTIVE, _ST_SUSPENDED))
    g_susp = gen & a["ever_susp"]
    return {
        "regret": float(np.mean(oracle - a["score"])),
        "exposure": exposure,
        "late_out": float(np.mean(late_out)) if late_out else float("nan"),
        "fc_num": int((tried & a["convicted"]).sum()),
        "fc_den": int(tried.sum()),
        "hl_num": int(lost.sum()),
        "hl_den": int(helpful.sum()),
        "susp_runs": list(a["susp_runs"][g_susp]),
        "susp_share_num": int(g_susp.sum()),
        "susp_share_den": int(gen.sum()),
        "poison_convicted": float(np.mean(a["convicted"][poison])) if poison.any() else np.nan,
    }


def _ratio(num: Any, den: Any) -> tuple[float, float]:
    """Ratio of sums over replicates with its cluster (delta-method) standard error."""
    num = np.asarray(num, float)
    den = np.asarray(den, float)
    if den.sum() == 0:
        return float("nan"), float("nan")
    r = num.sum() / den.sum()
    k = len(num)
    resid = num - r * den
    se = math.sqrt(k / max(k - 1, 1) * np.sum(resid**2)) / den.sum()
    return float(r), float(se)


def _median_boot(
    lists: list[list[int]], rng: np.random.Generator, b: int = 300
) -> tuple[float, float]:
    """Median pooled over replicates, with a bootstrap (over replicates) standard error."""
    flat = np.concatenate([np.asarray(x, float) for x in lists if len(x)] or [np.zeros(0)])
    if flat.size == 0:
        return float("nan"), float("nan")
    med = float(np.median(flat))
    k = len(lists)
    boots = []
    for _ in range(b):
        pick = rng.integers(0, k, k)
        parts = [np.asarray(lists[i], float) for i in pick if len(lists[i])]
        if parts:
            boots.append(np.median(np.concatenate(parts)))
    return med, float(np.std(boots))


def summarize(
    rows: list[dict[str, Any]], rng: np.random.Generator
) -> dict[str, tuple[float, float]]:
    """Figures with Monte Carlo standard errors over replicates."""
    reg = np.array([r["regret"] for r in rows])
    late = np.array([r["late_out"] for r in rows])
    out = {
        "regret": (float(reg.mean()), float(reg.std(ddof=1) / math.sqrt(len(reg)))),
        "exposure_median": _median_boot([r["exposure"] for r in rows], rng),
        "poisons_out_last5": (
            float(np.nanmean(late)),
            float(np.nanstd(late, ddof=1) / math.sqrt(len(late))),
        ),
        "false_conviction": _ratio([r["fc_num"] for r in rows], [r["fc_den"] for r in rows]),
        "helpful_lost": _ratio([r["hl_num"] for r in rows], [r["hl_den"] for r in rows]),
        "genuine_suspended_share": _ratio(
            [r["susp_share_num"] for r in rows], [r["susp_share_den"] for r in rows]
        ),
        "genuine_suspended_runs_median": _median_boot([r["susp_runs"] for r in rows], rng),
        "poison_convicted": (
            float(np.nanmean([r["poison_convicted"] for r in rows])),
            float(np.nanstd([r["poison_convicted"] for r in rows], ddof=1) / math.sqrt(len(rows))),
        ),
    }
    return out


def run_s2(
    gate: LifecycleGate,
    path: Path,
    reps: int,
    seed: int,
    margin: bool = True,
    **agent: Any,
) -> dict[str, Any]:
    """One S2-type spec: both agents on the same draws; prints and returns the figures."""
    sc = load_s2(path)
    ss = np.random.SeedSequence([seed, int.from_bytes(sc["name"].encode()[:8], "little")])
    rows_v2, rows_m, diff = [], [], []
    t0 = time.perf_counter()
    for child in ss.spawn(reps):
        w = draw_world(sc, np.random.default_rng(child))
        m2 = replicate_metrics(sc, w, agent_v2(gate, sc, w, **agent))
        rows_v2.append(m2)
        if margin:
            mm = replicate_metrics(sc, w, agent_margin(sc, w))
            rows_m.append(mm)
            diff.append(m2["regret"] - mm["regret"])
    rng = np.random.default_rng(seed)
    res: dict[str, Any] = {"v2": summarize(rows_v2, rng)}
    if margin:
        res["margin"] = summarize(rows_m, rng)
        d = np.array(diff)
        se = float(d.std(ddof=1) / math.sqrt(len(d)))
        res["regret_diff"] = (float(d.mean()), se, float(d.mean() + 1.96 * se))
    print(f"\n== {sc['name']} ({reps} replicates, seed {seed}; {time.perf_counter() - t0:.0f} s)")
    for key in res["v2"]:
        v = res["v2"][key]
        line = f"{key:32s} v2 {v[0]:.4f} ± {v[1]:.4f}"
        if margin:
            mv = res["margin"][key]
            line += f"   margin {mv[0]:.4f} ± {mv[1]:.4f}"
        print(line)
    if margin:
        dm, dse, up = res["regret_diff"]
        print(f"{'regret v2 - margin (paired)':32s} {dm:+.4f} ± {dse:.4f} (upper 95% {up:+.4f})")
    sys.stdout.flush()
    return res


if __name__ == "__main__":
    raise SystemExit(main())
