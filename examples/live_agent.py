"""A live agent on a lesson store: ``select`` before each run, ``record`` after it.

The agent (simulated here: a world of 24 genuine lessons of small effect and two poisons
that arrive at run 100) runs 300 times.  Before each run it asks the store for the prompt's
lessons (:meth:`cogstats.LessonStore.select`); after it, it records the score
(:meth:`~cogstats.LessonStore.record`), which returns the status changes the recommended
lifecycle made (suspended, admitted, promoted, evicted, ...).

The agent keeps the run it is about to record in an outbox file (as an agent keeps a
request it may have to send again).  Halfway it is killed (a child process that ends with
``os._exit``: no close, no flush) right after its 150th run was acknowledged; the
restarted agent opens the same folder, sends its outbox again (the store answers a run it
holds as the first time: no run counted twice; one it lacks is recorded) and goes on.
A reader (``read_only=True``) looks at the store beside the writer.

Run it: ``python examples/live_agent.py [WORKDIR]`` (default: a temporary folder).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from cogstats import LessonStore

RUNS = 300
KILL_AFTER = 150
GENUINE = [f"tip-{j:02d}" for j in range(24)]
POISONS = ["P1", "P2"]


def world(seed: int = 7) -> dict[str, Any]:
    """Return the lessons' true effects, their arrivals, every run's difficulty and noise."""
    rng = np.random.default_rng(seed)
    effects = {f: float(rng.uniform(0.0, 0.04)) for f in GENUINE}
    effects.update(dict.fromkeys(POISONS, -0.2))
    arrives = {f: 1 + j // 2 for j, f in enumerate(GENUINE)}  # two a run from run 1
    arrives.update(dict.fromkeys(POISONS, 100))
    difficulty = rng.normal(0.0, 0.1, RUNS)
    proxy = 0.8 * difficulty + rng.normal(0.0, 0.06, RUNS)
    noise = rng.normal(0.0, 0.05, RUNS)
    return {"effects": effects, "arrives": arrives, "d": difficulty, "p": proxy, "e": noise}


def agent(folder: Path, kill_after: int | None) -> None:
    """Run the agent from where the store stands; ``os._exit`` after run ``kill_after``."""
    w = world()
    store = LessonStore.open(folder, preset="recommended", max_facts=8, candidate_slots=4)
    outbox = folder.parent / "outbox.json"
    if outbox.exists():  # a restart: the last run may or may not have been acknowledged
        sent = json.loads(outbox.read_text())
        held = store.runs
        retried = store.record(sent["run_id"], sent["score"], sent["fact_ids"], sent["covariates"])
        print(
            f"restart: the store holds {held} runs; the outbox's {sent['run_id']} sent again "
            f"changed nothing: {store.runs == held} ({len(retried)} changes, as first answered)"
        )
    for r in range(store.runs, RUNS):
        for f, run in w["arrives"].items():
            if run == r + 1:
                store.add(f)
        sel = store.select(context={"family": "research"}, rng=1000 + r)
        effect = sum(w["effects"][f] for f in sel.fact_ids)
        score = float(np.clip(0.6 + w["d"][r] + effect + w["e"][r], 0.0, 1.0))
        covariates = {"difficulty_proxy": float(w["p"][r])}
        if sel.propensities is not None:  # the re-test slot's draw, logged
            covariates["eligible_ids"] = list(sel.propensities)
            covariates["propensities"] = list(sel.propensities.values())
        run_id = f"run-{r + 1:03d}"
        sent = {"run_id": run_id, "score": score, "fact_ids": list(sel.fact_ids)}
        outbox.write_text(json.dumps({**sent, "covariates": covariates}))
        changes = store.record(run_id, score, sel.fact_ids, covariates)
        for c in changes:
            if c.new in ("evicted", "verified") or c.fact_id in POISONS:
                print(f"run {r + 1}: {c.fact_id} {c.old} -> {c.new} ({c.why})")
        if kill_after is not None and r + 1 == kill_after:
            print(f"killed after run {r + 1}", flush=True)
            os._exit(3)  # no close: the lock and the journal as a crash leaves them
    store.close()


def main(workdir: Path) -> None:
    """Run the agent, kill it halfway, restart it, and check the store."""
    folder = workdir / "lessons"
    child = subprocess.run(
        [sys.executable, __file__, str(workdir), "--child"],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    print(child.stdout, end="")
    assert child.returncode == 3, child.stderr
    with LessonStore.open(folder, read_only=True) as reader:  # no settings needed
        lock = (folder / "store.lock").exists()
        print(f"a reader sees {reader.runs} runs (the killed agent's lock is still there: {lock})")
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        agent(folder, None)
    stale = any("stale lock" in str(x.message) for x in caught)
    print(f"the restart took over the stale lock: {stale}")
    with LessonStore.open(folder, read_only=True) as store:
        ids = list(store.ledger().run_ids)
        once = ids == [f"run-{k:03d}" for k in range(1, RUNS + 1)]
        print(f"{len(ids)} runs recorded, each once: {once}")
        status = dict(store.lessons().select("fact_id", "status").iter_rows())
        out = sorted(p for p in POISONS if status[p] in ("evicted", "suspended"))
        print(f"poisons out of the prompt: {out}")
        events = store.events()
        harmful = events.filter(events["reason"] == "eval-gate:harmful")["fact_id"].to_list()
        print(f"genuine lessons convicted as harmful: {[f for f in harmful if f in GENUINE]}")
        counts: dict[str, int] = {}
        for s in status.values():
            counts[s] = counts.get(s, 0) + 1
        print(f"statuses at run {RUNS}: {dict(sorted(counts.items()))}")
    left = sorted(p.name for p in folder.iterdir() if p.suffix in (".tmp", ".lock"))
    print(f"left behind: {left}")


if __name__ == "__main__":
    if "--child" in sys.argv:
        agent(Path(sys.argv[1]) / "lessons", KILL_AFTER)
    else:
        main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp()))
