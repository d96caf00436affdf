"""Benchmark S2 with evicted lessons left out of the evidence (docs/lineage.md).

Runs ``simulations/poison_crater.toml`` (S2) in the reference engine with cycgraph's
gate (the spec's margin rule, and the inference rule) three ways:

- ``plain``: cycgraph's gate on the whole ledger (the compiled engine's numbers);
- ``exclude runs``: :class:`cogstats.gates.LineageGate` with ``exclude_evicted``:
  the runs that carried an evicted lesson leave every other lesson's evidence (trials and
  baseline);
- ``exclude baselines``: those runs leave only the *baselines* of the other lessons (each
  candidate keeps its own runs); one gate call per candidate (exact for the margin rule,
  which judges each lesson alone; the inference rule's BH family then holds one lesson).

Usage: ``python docs/scripts/lineage_s2.py [REPLICATES] [SEED]`` (default: the spec's 500
replicates and seed).  Prints one line per (rule, variant) with the false eviction rate,
poison recall and their Monte Carlo standard errors.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from typing import Any

import polars as pl

from cogstats.estimators.lineage import evicted_lessons
from cogstats.gates import GateReport, LineageGate, make_gate
from cogstats.ledger import Ledger
from cogstats.reports.resources import resource_path
from cogstats.sim import load_spec, simulate

MEASURES = ("false_eviction_rate", "poison_recall", "time_to_verdict", "regret")


class ExcludeFromBaselines:
    """cycgraph's gate with evicted lessons' runs left out of other lessons' baselines."""

    uses_lessons = True

    def __init__(self, policy: dict[str, Any]) -> None:
        """Build the inner cycgraph gate."""
        self.gate = make_gate("cycgraph", **policy)

    def evaluate(
        self,
        ledger: Ledger,
        candidates: Sequence[str] | None = None,
        *,
        rng: Any = None,
        lessons: Any = None,
    ) -> GateReport:
        """Judge each candidate on its runs and the runs without it or any evicted lesson."""
        evicted = evicted_lessons(lessons) if lessons is not None else []
        if not evicted:
            return self.gate.evaluate(ledger, candidates, rng=rng)
        frame = ledger.frame
        tainted = frame["fact_ids"].list.eval(pl.element().is_in(evicted)).list.any()
        parts = []
        for c in candidates if candidates is not None else ledger.fact_ids:
            own = frame["fact_ids"].list.contains(c)
            view = Ledger.from_frame(frame.filter(~tainted | own))
            parts.append(self.gate.evaluate(view, [c], rng=rng).to_frame())
        return GateReport("cycgraph", pl.concat(parts, how="diagonal_relaxed"))


def measure(replicates: int | None = None, seed: int | None = None) -> pl.DataFrame:
    """Return one row per (rule, variant): the S2 measures with their MC errors."""
    spec = load_spec(resource_path("simulations/poison_crater.toml"))
    scenario = spec.scenario
    n = replicates or spec.replicates
    rng = spec.seed if seed is None else seed
    rows = []
    for rule in ("margin", "inference"):
        policy = {**scenario.gate.policy, "decision_rule": rule}
        variants = {
            "plain": LineageGate("cycgraph", policy, exclude_evicted=False),
            "exclude runs": LineageGate("cycgraph", policy, exclude_evicted=True),
            "exclude baselines": ExcludeFromBaselines(policy),
        }
        for name, gate in variants.items():
            start = time.perf_counter()
            result = simulate(
                scenario, replicates=n, rng=rng, engine="reference", gate=gate, progress=False
            )
            summary = result.summary_row()
            row: dict[str, Any] = {"rule": rule, "variant": name, "replicates": n}
            for m in MEASURES:
                row[m] = summary[m]
                row[f"{m}_mcse"] = summary.get(f"{m}_mcse")
            row["seconds"] = time.perf_counter() - start
            rows.append(row)
    return pl.DataFrame(rows)


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:3]]
    table = measure(*args)
    with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_width_chars=200, float_precision=4):
        print(table)
