"""Seeded fuzz of the hostile-input classes of issue 19: only the documented errors, ever.

Every hostile value (deep nesting, integers of thousands of digits or beyond 64 bits,
objects where lists belong, lone surrogates, non-finite numbers) in every field of a
JSON Lines run, and random byte damage (changed bytes, truncation, inserted brackets,
digits, byte-order marks, ``sep=`` lines, quotes) of JSON Lines, CSV and cycgraph JSON
ledgers: ``Ledger.read`` and ``StreamingGate.ingest(on_error="raise")`` raise
:class:`LedgerError` or nothing, ``ingest(on_error="skip")`` never raises.  (State files
and sweep stores have their own property tests: test_durability_state.py and
test_durability_store.py.)
"""

from __future__ import annotations

import contextlib
import json
import random
import warnings
from pathlib import Path

import pytest

from cogstats import Ledger
from cogstats._validation import LedgerError
from cogstats.gates import CycgraphGate, EvidenceGate, StreamingGate

HOSTILE = [
    "[" * 1000 + "]" * 1000,
    "{" * 40 + "}" * 40,
    "9" * 5000,
    "-" + "9" * 5000,
    "1" * 4301,
    str(2**63),
    str(-(2**63) - 1),
    str(2**64),
    "1e999",
    "NaN",
    "-Infinity",
    '{"L1": 1, "L2": 1}',
    '[["a"]]',
    "[1, 2]",
    "[null]",
    '[""]',
    '["\\ud800"]',
    '"\\ud800"',
    "true",
    "null",
    '"a"',
    '{"a": ' * 33 + "1" + "}" * 33,
]
FIELDS = ["run_id", "score", "fact_ids", "d", "eligible_ids", "propensities", "other"]


def _runs(rng: random.Random, n: int = 12) -> list[dict]:
    return [
        {
            "run_id": f"r{i}",
            "score": round(rng.random(), 3),
            "fact_ids": [f"L{j}" for j in rng.sample(range(8), 3)],
            "d": round(rng.random(), 2),
            "fam": rng.choice(["a", "b"]),
        }
        for i in range(n)
    ]


def _all_calls(path: Path) -> None:
    """Each reader: LedgerError or nothing; ingest with skip: nothing."""
    for call in (
        lambda: Ledger.read(path),
        lambda: StreamingGate(CycgraphGate()).ingest(path) if path.suffix == ".jsonl" else None,
    ):
        with contextlib.suppress(LedgerError):
            call()
    if path.suffix == ".jsonl":
        StreamingGate(CycgraphGate()).ingest(path, on_error="skip")
        ols = EvidenceGate(method="ols", options={"cov": "nonrobust", "covariates": ("d",)})
        StreamingGate(ols).ingest(path, on_error="skip")


@pytest.mark.parametrize("field", FIELDS)
def test_a_hostile_value_in_any_field_is_a_ledger_error(tmp_path: Path, field: str) -> None:
    rng = random.Random(19)
    good = [json.dumps(r) for r in _runs(rng, 6)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for k, value in enumerate(HOSTILE):
            line = '{"run_id": "h", "score": 0.5, "fact_ids": ["L1"], ' + f'"{field}": {value}}}'
            path = tmp_path / f"h{k}.jsonl"
            path.write_text("\n".join([*good[:3], line, *good[3:]]) + "\n")
            _all_calls(path)


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".json"])
def test_random_damage_to_a_ledger_file_is_a_ledger_error(tmp_path: Path, suffix: str) -> None:
    rng = random.Random(f"damage{suffix}")
    data = Ledger.from_records(_runs(rng, 30)).write(tmp_path / f"good{suffix}").read_bytes()
    inserts = [b"[" * 100, b"9" * 5000, b'{"a":1}', b"\xef\xbb\xbf", b"sep=;\n", b'"', b"\r"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for t in range(80):
            damaged = bytearray(data)
            op = rng.random()
            if op < 0.4:
                for _ in range(rng.randint(1, 4)):
                    damaged[rng.randrange(len(damaged))] = rng.randrange(256)
            elif op < 0.7:
                damaged = damaged[: rng.randrange(len(damaged))]
            else:
                pos = rng.randrange(len(damaged))
                damaged[pos:pos] = rng.choice(inserts)
            path = tmp_path / f"m{t}{suffix}"
            path.write_bytes(bytes(damaged))
            _all_calls(path)
