"""Rebuild ``cogstats/estimators/spending_table.json``: the built-in gates' boundaries.

Run ``python docs/scripts/spending_table.py`` after changing a built-in gate's spending
defaults (or the solver, with ``SOLVER_VERSION``).  It builds every registered gate with
its defaults, asks each for the boundaries it needs (``nominal_levels()``, or a decision
on a small ledger), and writes the solutions this process computed.  The table holds
exact inputs, so an entry that no longer matches a gate is simply never used.
"""

from __future__ import annotations

import json
import os
import tempfile

from cogstats import Ledger
from cogstats.estimators import spending
from cogstats.gates import GATES, make_gate


def main() -> None:
    """Compute the defaults' boundaries afresh and write the table."""
    os.environ["COGSTATS_CACHE_DIR"] = tempfile.mkdtemp()  # compute, do not read
    spending._TABLE = {}
    records = [
        {"run_id": f"r{i}", "score": (i % 7) / 7, "fact_ids": ["a", "b"] if i % 2 else ["c"]}
        for i in range(60)
    ]
    ledger = Ledger.from_records(records)
    for name in sorted(GATES):
        gate = make_gate(name)
        levels = getattr(gate, "nominal_levels", None)
        if callable(levels):
            levels()
        try:
            gate.evaluate(ledger)
        except Exception as exc:  # a gate that needs more (covariates, lessons): skip it
            print(f"{name}: not evaluated ({type(exc).__name__})")
    entries = spending.memo_entries()
    text = json.dumps(entries, indent=0, sort_keys=True) + "\n"
    spending.TABLE.write_text(text, encoding="utf-8")
    print(f"{spending.TABLE}: {len(entries)} entries, {len(text)} bytes")


if __name__ == "__main__":
    main()
