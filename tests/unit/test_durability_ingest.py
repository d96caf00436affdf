"""Ingest markers through live records, and one run recorded atomically (issue 19, Build 7).

- A service that records each run live (``record``) *and* appends it to the file it
  ingests: ``save`` moves the file's marker past the lines whose runs the state holds,
  so a restart's catch-up reads only the runs the state lacks.
- A gate's own ``add_run`` that raises leaves the shared statistics without the run: with
  ``on_error="skip"`` the line is skipped and listed, the marker passes it, and the report
  is the batch gate's on the other runs; with ``"raise"`` nothing is recorded and the
  marker stays at the line.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cogstats import Ledger
from cogstats._validation import LedgerError
from cogstats.gates import CycgraphGate, StreamingGate
from cogstats.stats import StreamingStats


def _runs(n: int, start: int = 0, seed: int = 5) -> list[dict[str, Any]]:
    rng = np.random.default_rng(seed + start)
    return [
        {
            "run_id": f"r{i}",
            "score": round(float(rng.random()), 3),
            "fact_ids": [f"L{j}" for j in rng.choice(6, 2, replace=False)],
            "d": round(float(rng.random()), 2),
        }
        for i in range(start, start + n)
    ]


def _append(path: Path, runs: list[dict[str, Any]]) -> None:
    with path.open("a") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in runs)


def _record(sg: StreamingGate, runs: list[dict[str, Any]]) -> None:
    for r in runs:
        sg.record(r["run_id"], r["score"], r["fact_ids"], d=r["d"])


# ---------------------------------------------------------------------- item 2: markers
def test_save_moves_the_marker_past_runs_recorded_live(tmp_path: Path) -> None:
    log, state = tmp_path / "runs.jsonl", tmp_path / "gate.npz"
    first, live, down = _runs(30), _runs(40, 30), _runs(5, 70)
    _append(log, first)
    with StreamingGate.open(state, gate=CycgraphGate()) as sg:
        assert sg.ingest(log).lines == 30
        _append(log, live)  # the agent writes each run and hands it to the service
        _record(sg, live)
        assert sg.marker(log)[1] == 30  # record() alone does not read the file
        sg.save()
        assert sg.marker(log) == (log.stat().st_size, 70)
    _append(log, down)  # written while the service is down
    with StreamingGate.open(state, gate=CycgraphGate()) as back:
        caught = back.ingest(log)
        assert (caught.lines, caught.recorded) == (5, 5)  # the new runs only
        assert len(back) == 75
        batch = CycgraphGate().evaluate(Ledger.from_records(first + live + down))
        keys = ["fact_id", "decision", "reason", "trials", "baseline_runs"]
        assert back.report().to_frame()[keys].equals(batch.to_frame()[keys])


def test_the_marker_stops_at_a_run_the_state_does_not_hold_as_written(tmp_path: Path) -> None:
    log = tmp_path / "runs.jsonl"
    runs = _runs(12)
    _append(log, runs[:4])
    sg = StreamingGate(CycgraphGate())
    sg.ingest(log)
    _append(log, runs[4:])
    _record(sg, runs[4:7])  # r4..r6 live; r7 recorded with another score
    changed = dict(runs[7], score=0.123)
    _record(sg, [changed])
    _record(sg, runs[8:10])  # r8, r9 live too, but after the differing r7
    sg.save(tmp_path / "s.npz")
    assert sg.marker(log)[1] == 7  # past r4..r6, stopped at r7
    result = sg.ingest(log)  # r7 from the file replaces the live one; r8..r11 read
    assert (result.lines, result.recorded) == (5, 5)
    assert sg.to_ledger().scores.tolist()[7] == runs[7]["score"]


def test_settling_stops_at_a_bad_or_incomplete_line_and_survives_a_lost_file(
    tmp_path: Path,
) -> None:
    log = tmp_path / "runs.jsonl"
    runs = _runs(6)
    _append(log, runs[:2])
    sg = StreamingGate(CycgraphGate())
    sg.ingest(log)
    _append(log, runs[2:4])
    with log.open("a") as fh:
        fh.write('{"run_id": "bad", "score": 7}\n' + json.dumps(runs[4])[:-3])
    _record(sg, runs[2:5])
    sg.save(tmp_path / "s.npz")
    assert sg.marker(log)[1] == 4  # before the bad line, which ingest still reports
    with pytest.raises(LedgerError, match="score"):
        sg.ingest(log)
    log.unlink()  # a followed file that is gone: the save goes on, the marker stays
    _record(sg, runs[5:])
    sg.save(tmp_path / "s.npz")
    assert sg.marker(log)[1] == 4


def test_an_unchanged_state_does_not_read_the_files_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cogstats.gates.streaming import _ingest

    log = tmp_path / "runs.jsonl"
    _append(log, _runs(3))
    sg = StreamingGate(CycgraphGate())
    sg.ingest(log)
    calls: list[int] = []
    settle = _ingest.settle
    monkeypatch.setattr(_ingest, "settle", lambda g: (calls.append(1), settle(g)))
    sg.save(tmp_path / "a.npz")
    sg.save(tmp_path / "b.npz")  # nothing recorded in between
    assert calls == [1]
    _record(sg, _runs(1, 3))
    sg.save(tmp_path / "c.npz")
    assert calls == [1, 1]


# ---------------------------------------------------------------------- item 3: add_run
@dataclass
class _Counts:
    """A gate's own statistics: runs per lesson and their score sums (updated in place)."""

    trials: dict[str, int]
    sums: dict[str, float]
    fail_on: str | None = None

    def add_run(self, run_id: str, score: float, facts: list[str], covs: dict[str, Any]) -> None:
        for f in dict.fromkeys(facts):  # half-updated when it raises below
            self.trials[f] = self.trials.get(f, 0) + 1
            self.sums[f] = self.sums.get(f, 0.0) + score
            if run_id == self.fail_on:
                raise ZeroDivisionError(f"cannot add {run_id}")


@dataclass(frozen=True)
class _CountGate:
    """Promote a lesson with a mean score of at least 0.5 after 3 trials (own statistics)."""

    fail_on: str | None = None

    def running_statistics(self) -> _Counts:
        return _Counts({}, {}, self.fail_on)

    def statistics(self, ledger: Ledger) -> _Counts:
        out = _Counts({}, {})
        for run_id, score, facts in zip(
            ledger.run_ids, ledger.scores.tolist(), ledger.frame["fact_ids"].to_list(), strict=True
        ):
            out.add_run(run_id, score, facts, {})
        out.fail_on = self.fail_on  # rebuilt statistics fail on the same run
        return out

    def evaluate(self, ledger: Ledger, candidates: Any = None, **_: Any) -> Any:
        return self.judge(self.statistics(ledger), None, candidates)

    def judge(self, stats: _Counts, statuses: Any = None, candidates: Any = None, **_: Any) -> Any:
        import polars as pl

        from cogstats.gates import GateReport

        ids = list(stats.trials if candidates is None else candidates)
        n = [stats.trials.get(f, 0) for f in ids]
        means = [stats.sums.get(f, 0.0) / k if k else 0.0 for f, k in zip(ids, n, strict=True)]
        up = [k >= 3 and m >= 0.5 for k, m in zip(n, means, strict=True)]
        frame = pl.DataFrame(
            {
                "fact_id": ids,
                "decision": ["promote" if u else "hold" for u in up],
                "reason": [None] * len(ids),
                "why": ["promote_evidence" if u else "min_trials" for u in up],
                "trials": n,
                "estimate": means,
            },
            schema={
                "fact_id": pl.String,
                "decision": pl.String,
                "reason": pl.String,
                "why": pl.String,
                "trials": pl.Int64,
                "estimate": pl.Float64,
            },
        )
        return GateReport("count_test", frame)


def test_a_gate_whose_add_run_raises_leaves_no_half_recorded_run(tmp_path: Path) -> None:
    runs = _runs(10)
    log = tmp_path / "runs.jsonl"
    _append(log, runs)
    sg = StreamingGate(_CountGate(fail_on="r4"))
    with pytest.raises(LedgerError, match="ZeroDivisionError.*line 5"):
        sg.ingest(log)
    assert len(sg) == 4 and sg.marker(log)[1] == 4  # r0..r3; the marker at r4's line
    assert sg.stats.index_of("r4") is None
    before = sg.report().to_frame()
    expected = _CountGate().evaluate(Ledger.from_records(runs[:4]))
    assert before.equals(expected.to_frame())  # the gate's own half-update is gone
    result = sg.ingest(log, on_error="skip")
    assert [s.line for s in result.skipped] == [5] and "cannot add r4" in result.skipped[0].error
    assert sg.marker(log) == (log.stat().st_size, 10)
    assert len(sg) == 9 and sg.stats.index_of("r4") is None
    rest = [r for r in runs if r["run_id"] != "r4"]
    batch = _CountGate().evaluate(Ledger.from_records(rest))
    assert sg.report().to_frame().equals(batch.to_frame())
    assert sg.to_ledger().frame.equals(Ledger.from_records(rest).frame)


def test_record_with_a_raising_add_run_records_nothing() -> None:
    sg = StreamingGate(_CountGate(fail_on="r2"))
    runs = _runs(4)
    _record(sg, runs[:2])
    with pytest.raises(ZeroDivisionError):
        _record(sg, runs[2:3])
    assert len(sg) == 2 and sg.stats.n_runs == 2
    _record(sg, runs[3:])
    batch = _CountGate().evaluate(Ledger.from_records([runs[0], runs[1], runs[3]]))
    assert sg.report().to_frame().equals(batch.to_frame())


def test_streaming_stats_is_not_the_gates_own_object() -> None:
    # the test gate really runs the "own statistics" path (not the shared statistics)
    sg = StreamingGate(_CountGate())
    assert not isinstance(sg._own, StreamingStats) and isinstance(sg._own, _Counts)
