"""Write the version-1 streaming states of tests/data/streaming with the pre-split code.

Run from a checkout of cogstats before the statistics package (commit ce67ac5 or earlier):
``PYTHONPATH=<that checkout> python tests/data/streaming/make_v1_states.py tests/data/streaming``.
The runs are the ones tests/unit/test_streaming_gate.py regenerates (same seed).
"""

import sys
import warnings
from pathlib import Path

import numpy as np

from cogstats.gates import CycgraphGate, EvidenceGate, StreamingGate
from cogstats.gates.streaming import STATE_VERSION


def main() -> None:
    assert STATE_VERSION == 1
    out = Path(sys.argv[1])
    rng = np.random.default_rng(20261202)
    runs = []
    for i in range(30):
        ids = [f"L{j}" for j in range(5) if rng.random() < 0.4]
        runs.append((f"r{i}", float(rng.integers(0, 21) * 0.05), ids, {"d": float(rng.normal())}))
    gates = {
        "cycgraph": CycgraphGate(min_trials=2),
        "confseq": EvidenceGate(method="confseq", min_trials=2),
        "ols": EvidenceGate(method="ols", options={"cov": "nonrobust", "covariates": ("d",)}),
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, gate in gates.items():
            sg = StreamingGate(gate)
            for run_id, score, ids, covs in runs[:20]:
                sg.record(run_id, score, ids, **covs)
            sg.record("r3", 0.95, ["L0"], d=0.5)  # a replaced run
            sg.save(out / f"streaming_state_v1_{name}.npz")
    print("written", sorted(p.name for p in out.glob("streaming_state_v1_*")))


if __name__ == "__main__":  # (pytest imports this file while collecting doctests)
    main()
