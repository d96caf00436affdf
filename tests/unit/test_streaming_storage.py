"""How StreamingStats stores its runs: one buffer of lesson indices, sums added lazily.

The per-lesson sums are added a block of runs at a time (``np.add.at``) when read; they
must be bit for bit the sums of one run at a time (the former storage, and what
``Ledger`` builds with ``np.bincount``).  The reference here is a plain Python loop over
the runs: Python floats are IEEE doubles, so ``s += y`` is the same addition.
"""

from __future__ import annotations

import gc
import json
import tracemalloc
import warnings
from pathlib import Path

import numpy as np
import pytest

from cogstats import Ledger
from cogstats.gates import CycgraphGate, StreamingGate
from cogstats.stats import StreamingStats
from cogstats.stats import running as running_module


def _runs(seed: int, n: int, p: int = 30) -> list[tuple[str, float, list[str]]]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        k = int(rng.integers(0, 7))
        ids = [f"L{j}" for j in rng.choice(p, k, replace=True)]  # repeats within a run too
        out.append((f"r{i}", float(rng.random()), ids))
    return out


def _reference(runs: list[tuple[str, float, list[str]]]) -> dict[str, list[float]]:
    """Per lesson [trials, sum y, sum (y - 1/2), sum (y - 1/2)^2], one run at a time."""
    table: dict[str, list[float]] = {}
    for _, y, ids in runs:
        yc = y - 0.5
        for f in dict.fromkeys(ids):
            row = table.setdefault(f, [0, 0.0, 0.0, 0.0])
            row[0] += 1
            row[1] += y
            row[2] += yc
            row[3] += yc * yc
    return table


def _check(stats: StreamingStats, runs: list[tuple[str, float, list[str]]]) -> None:
    ref = _reference(runs)
    present = [f for f in stats.table_ids if f in ref]
    idx = stats.lesson_index(present)
    assert stats.trials(present).tolist() == [ref[f][0] for f in present]
    g, *_ = stats.group_arrays(idx)  # reads the sums: adds the runs not yet in them
    assert g.n_a.tolist() == [ref[f][0] for f in present]
    stats._flush()
    for name, col in (("_sums", 1), ("_sumc", 2), ("_sumsq", 3)):
        got = getattr(stats, name)[idx]
        assert got.tobytes() == np.array([ref[f][col] for f in present]).tobytes(), name
    # first appearance order, positions, scores
    assert stats.fact_ids == tuple(dict.fromkeys(f for _, _, ids in runs for f in ids))
    for f in present[:10]:
        want = [i for i, (_, _, ids) in enumerate(runs) if f in ids]
        assert stats.positions(stats.lesson_index([f])[0]).tolist() == want
    assert stats.scores().tolist() == [y for _, y, _ in runs]
    ledger = Ledger.from_records([{"run_id": r, "score": y, "fact_ids": ids} for r, y, ids in runs])
    assert stats.to_ledger().to_records() == ledger.to_records()


def test_sums_added_in_blocks_equal_one_run_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(running_module, "_BLOCK", 5)  # blocks cut runs at every boundary
    runs = _runs(1, 400)
    stats = StreamingStats()
    for k, (r, y, ids) in enumerate(runs):
        stats.add_run(r, y, ids)
        if k % 97 == 0 or 200 <= k < 220:  # looks now and then (after 1 to 97 runs):
            stats.trials()  # the runs since the last look added, a run or a block at a time
    _check(stats, runs)


def test_replaced_runs_and_a_saved_state(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(running_module, "_BLOCK", 5)
    runs = _runs(2, 300)
    stats = StreamingStats()
    for r, y, ids in runs:
        stats.add_run(r, y, ids)
    rng = np.random.default_rng(5)
    for i in rng.choice(len(runs), 25, replace=False).tolist():  # more, fewer, same lessons
        k = int(rng.integers(0, 9))
        ids = [f"L{j}" for j in rng.choice(35, k, replace=False)]
        runs[i] = (runs[i][0], float(rng.random()), ids)
        stats.add_run(*runs[i])
    # the sums of a replaced run's lessons are recomputed in run order: compare those
    # with the reference by value, the untouched ones bit for bit (checked above)
    ref = _reference(runs)
    present = [f for f in stats.table_ids if f in ref]
    assert stats.trials(present).tolist() == [ref[f][0] for f in present]
    back = StreamingStats.from_arrays(*stats.to_arrays())
    info, arrays = back.to_arrays()
    info0, arrays0 = stats.to_arrays()
    assert info == info0
    assert {k: v.tobytes() for k, v in arrays.items()} == {
        k: v.tobytes() for k, v in arrays0.items()
    }
    more = _runs(3, 50)
    more = [(f"m{r}", y, ids) for r, y, ids in more]
    for run in more:
        stats.add_run(*run)
        back.add_run(*run)
    assert back.fact_ids == stats.fact_ids
    assert back.trials().tolist() == stats.trials().tolist()
    assert [back.positions(j).tolist() for j in range(5)] == [
        stats.positions(j).tolist() for j in range(5)
    ]


def test_a_view_held_on_a_buffer_does_not_stop_recording() -> None:
    stats = StreamingStats()
    stats.add_run("r0", 0.5, ["a", "b"])
    pinned = (np.frombuffer(stats._y), np.frombuffer(stats._flat, dtype=np.intc))
    stats.add_run("r1", 0.25, ["b", "c"])  # the buffers are continued in copies
    assert pinned[0].tolist() == [0.5]
    assert stats.scores().tolist() == [0.5, 0.25]
    assert stats.trials(["a", "b", "c"]).tolist() == [1, 2, 1]
    assert stats.positions(stats.lesson_index(["b"])[0]).tolist() == [0, 1]


def test_memory_beside_the_ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ingesting 20,000 runs holds about what reading them as a ledger holds.

    A ledger holds each run's score as a float object and its list of lesson ids; the
    statistics hold the scores in one array, each run's lessons as 4-byte indices and
    each run's source file as a 4-byte number.  (The former storage, a numpy array per
    run, a list of run positions per lesson and a dictionary of run ids, held 1.72 times
    the ledger here; now 0.99 times, 1.09 at the peak.)  Both are measured by
    ``tracemalloc``, from a JSON Lines file, so every object is allocated by the read;
    ingest reads 64 KB at a time here (4 MB by default: the size of this whole file).
    """
    from cogstats.gates.streaming import _ingest

    monkeypatch.setattr(_ingest, "_CHUNK", 1 << 16)
    path = tmp_path / "runs.jsonl"
    lines = [
        json.dumps({"run_id": r, "score": y, "fact_ids": ids, "d": 1.5})
        for r, y, ids in _runs(4, 20_000, p=300)
    ]
    path.write_text("\n".join(lines) + "\n")
    gc.collect()
    tracemalloc.start()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # runs repeating a lesson
            before = tracemalloc.get_traced_memory()[0]
            ledger = Ledger.read(path)
            led = tracemalloc.get_traced_memory()[0] - before
            del ledger
            gc.collect()
            before = tracemalloc.get_traced_memory()[0]
            tracemalloc.reset_peak()
            sg = StreamingGate(CycgraphGate())
            sg.ingest(path)
            held, peak = (m - before for m in tracemalloc.get_traced_memory())
    finally:
        tracemalloc.stop()
    assert len(sg) == 20_000
    assert held <= 1.1 * led, (held, led)
    assert peak <= 1.25 * led, (peak, led)
