"""Benchmark S-1: the lesson store service's select + record round trip, on loopback.

A client's round trip is what an agent pays per run: ``POST /select`` (the lessons for the
prompt), then ``POST /runs`` (the run's score, the lessons it carried, the selection's
propensities), on one keep-alive connection (``http.client``, the lightest Python client:
the figures are the service's, not a client library's).  At 40 and 1,000 lessons
(``--max-facts 12 --candidate-slots 6``, the recommended preset), after a warm-up that
gives the store a history.

**One client, three arms side by side.**  The service (a run fsynced before it is
answered), the service with ``--sync-every 1000000`` (no fsync per run) and the same loop
on :class:`~cogstats.store.LessonStore` in this process take turns, round by round (the
order rotated), so that the machine's load of the moment is the same for the three.  The
three stores are seeded alike and given the same scores, so they do the same work: the
paired differences are what HTTP, JSON and the store's thread add (service minus in
process) and what durability adds (fsync minus no fsync).  Reported: each arm's median,
99th percentile and throughput in wall-clock time, the medians of the paired differences,
and CPU time a round trip (the in-process thread's; the server process's from /proc),
which the load does not inflate.

**Eight clients**: eight client processes started together against the service (fsync on),
each doing ``rounds`` round trips: median, p99 and the throughput of all together (the
store serialises its calls: a round trip waits for the others').

A bare ``write`` + ``fsync`` of a journal-sized line on the same disk is timed too.

Goals (issue 32): median at most 3 ms at 40 lessons and 8 ms at 1,000, p99 at most 30 ms.

Run: ``python -m benchmarks.service [--quick]``; writes benchmarks/results/service.json
(or ``--json PATH``).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._common import machine

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
GOALS = {40: 3e-3, 1000: 8e-3}
P99_GOAL = 30e-3
MAX_FACTS, SLOTS, SEED = 12, 6, 1

CLIENT = r"""
import http.client, json, random, sys, time
port, rounds, name = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
start_at, seed = float(sys.argv[4]), int(sys.argv[5])
conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
head = {"content-type": "application/json"}
def post(path, body):
    conn.request("POST", path, body=json.dumps(body), headers=head)
    r = conn.getresponse()
    data = r.read()
    if r.status != 200:
        raise SystemExit(f"{path}: {r.status} {data[:300]!r}")
    return json.loads(data)
def effect(lesson):
    j = int(lesson[1:])
    return -0.2 if j % 10 == 0 else ((j * 7919) % 101 - 50) / 2500
rng = random.Random(seed)
while time.time() < start_at:
    time.sleep(0.0005)
lat, begin = [], time.time()
for i in range(rounds):
    t0 = time.perf_counter()
    sel = post("/select", {"context": {}})
    d = rng.gauss(0, 0.05)
    score = min(1.0, max(0.0, 0.6 + d + sum(map(effect, sel["fact_ids"])) + rng.gauss(0, 0.05)))
    post("/runs", {"run_id": f"{name}-{i}", "score": score, "fact_ids": sel["fact_ids"],
                   "covariates": {"difficulty_proxy": d}, "propensities": sel["propensities"]})
    lat.append(time.perf_counter() - t0)
print(json.dumps({"lat": lat, "begin": begin, "end": time.time()}))
"""


def _effect(lesson: str) -> float:
    j = int(lesson[1:])
    return -0.2 if j % 10 == 0 else ((j * 7919) % 101 - 50) / 2500


def _score(rng: random.Random, fact_ids: list[str]) -> tuple[float, float]:
    """The simulated run: (score, difficulty), the same draws in every arm."""
    d = rng.gauss(0, 0.05)
    score = 0.6 + d + sum(map(_effect, fact_ids)) + rng.gauss(0, 0.05)
    return min(1.0, max(0.0, score)), d


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _cpu_s(pid: int) -> float | None:
    """A process's CPU time so far (user + system; Linux's /proc), None elsewhere."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _stats(lat: list[float], wall: float) -> dict[str, Any]:
    a = np.asarray(lat)
    return {
        "round_trips": len(a),
        "median_ms": float(np.median(a) * 1e3),
        "p99_ms": float(np.percentile(a, 99) * 1e3),
        "mean_ms": float(a.mean() * 1e3),
        "throughput_per_s": len(a) / wall,
    }


class _Service:
    """``cogstats serve`` on a fresh store with ``lessons`` lessons; one client connection."""

    def __init__(self, folder: Path, lessons: int, sync_every: int) -> None:
        self.port = _free_port()
        self.name = f"serve-{lessons}-{sync_every}"
        self.log = (folder / f"{self.name}.log").open("wb")
        cmd = [sys.executable, "-m", "cogstats.cli", "serve", str(folder / self.name),
               "--preset", "recommended", "--max-facts", str(MAX_FACTS),
               "--candidate-slots", str(SLOTS), "--port", str(self.port), "--seed", str(SEED),
               "--sync-every", str(sync_every), "--log-level", "warning"]  # fmt: skip
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=self.log, env=_env())
        self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)
        for _ in range(6000):
            try:
                self.get("/health")
                break
            except OSError:
                if self.proc.poll() is not None:
                    raise SystemExit(f"the service exited: see {self.log.name}") from None
                self.conn.close()
                time.sleep(0.05)
        for j in range(lessons):
            self.post("/lessons", {"id": f"L{j}"})
        self.rng = random.Random(SEED)
        self.i = 0

    def _request(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body)
        head = {"content-type": "application/json"}
        try:
            self.conn.request(method, path, body=data, headers=head)
            r = self.conn.getresponse()
        except (ConnectionError, http.client.HTTPException):
            # the server closed an idle keep-alive connection (uvicorn: after 5 s): again
            # (safe for /runs too: a run sent again is answered as the first time)
            self.conn.close()
            self.conn.request(method, path, body=data, headers=head)
            r = self.conn.getresponse()
        raw = r.read()
        if r.status != 200:
            raise SystemExit(f"{self.name} {method} {path}: {r.status} {raw[:300]!r}")
        return json.loads(raw)

    def post(self, path: str, body: Any) -> Any:
        return self._request("POST", path, body)

    def get(self, path: str) -> Any:
        return self._request("GET", path)

    def round_trip(self) -> float:
        t0 = time.perf_counter()
        sel = self.post("/select", {"context": {}})
        score, d = _score(self.rng, sel["fact_ids"])
        self.post(
            "/runs",
            {
                "run_id": f"r{self.i}",
                "score": score,
                "fact_ids": sel["fact_ids"],
                "covariates": {"difficulty_proxy": d},
                "propensities": sel["propensities"],
            },
        )
        self.i += 1
        return time.perf_counter() - t0

    def clients(self, n: int, rounds: int, tag: str) -> dict[str, Any]:
        """``n`` client processes, started together, ``rounds`` round trips each."""
        before = self.get("/health")["runs"]
        cpu0 = _cpu_s(self.proc.pid)
        start_at = time.time() + 1.0 + 0.1 * n  # the clients' start-up, then together
        argv = [sys.executable, "-c", CLIENT, str(self.port), str(rounds)]
        procs = [
            subprocess.Popen(
                [*argv, f"{tag}{k}", str(start_at), str(k)], stdout=subprocess.PIPE, env=_env()
            )
            for k in range(n)
        ]
        outs = [json.loads(p.communicate(timeout=3600)[0]) for p in procs]
        if any(p.returncode for p in procs):
            raise SystemExit(f"a client failed: see {self.log.name}")
        cpu1 = _cpu_s(self.proc.pid)
        lat = [x for o in outs for x in o["lat"]]
        wall = max(o["end"] for o in outs) - min(o["begin"] for o in outs)
        cpu = None if cpu0 is None or cpu1 is None else (cpu1 - cpu0) / len(lat) * 1e3
        return {
            "clients": n,
            "runs_before": before,
            **_stats(lat, wall),
            "server_cpu_ms_per_round_trip": cpu,
        }

    def stop(self) -> None:
        self.conn.close()
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(600)
        self.log.close()


class _InProcess:
    """The same loop on LessonStore itself (fsync on, as the service)."""

    def __init__(self, folder: Path, lessons: int) -> None:
        from cogstats.store import LessonStore

        self.store = LessonStore.open(
            folder / f"inproc-{lessons}", preset="recommended", max_facts=MAX_FACTS,
            candidate_slots=SLOTS, seed=SEED,
        )  # fmt: skip
        for j in range(lessons):
            self.store.add(f"L{j}")
        self.rng = random.Random(SEED)
        self.i = 0
        self.cpu: list[float] = []

    def round_trip(self) -> float:
        t0, c0 = time.perf_counter(), time.thread_time()
        sel = self.store.select(context={})
        score, d = _score(self.rng, list(sel.fact_ids))
        self.store.record(f"r{self.i}", score, sel, {"difficulty_proxy": d})
        self.i += 1
        self.cpu.append(time.thread_time() - c0)
        return time.perf_counter() - t0


def bare_fsync(folder: Path, n: int = 200) -> dict[str, Any]:
    """``write`` + ``fsync`` of a 200-byte line appended to a file on the same disk."""
    path = folder / "fsync.probe"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    times = []
    try:
        for _ in range(n):
            t0 = time.perf_counter()
            os.write(fd, b"x" * 199 + b"\n")
            os.fsync(fd)
            times.append(time.perf_counter() - t0)
    finally:
        os.close(fd)
    return {
        "median_ms": float(np.median(times) * 1e3),
        "p99_ms": float(np.percentile(times, 99) * 1e3),
    }


def _paired(folder: Path, lessons: int, warm: int, rounds: int) -> tuple[dict[str, Any], _Service]:
    """The three arms, round by round; the 8-client phase on the service afterwards."""
    arms: dict[str, Any] = {
        "service": _Service(folder, lessons, 1),
        "service_no_fsync": _Service(folder, lessons, 1_000_000),
        "in_process": _InProcess(folder, lessons),
    }
    names = list(arms)
    try:
        for _ in range(warm):  # the stores' history
            for name in names:
                arms[name].round_trip()
        lat: dict[str, list[float]] = {name: [] for name in names}
        arms["in_process"].cpu.clear()
        cpu0 = {n: _cpu_s(arms[n].proc.pid) for n in ("service", "service_no_fsync")}
        t0 = time.perf_counter()
        for i in range(rounds):
            for name in names[i % 3 :] + names[: i % 3]:  # the order rotated
                lat[name].append(arms[name].round_trip())
        wall = time.perf_counter() - t0
        out: dict[str, Any] = {}
        for name in names:  # each arm's throughput: its share of the wall time
            share = sum(lat[name]) / sum(sum(v) for v in lat.values())
            out[name] = {"clients": 1, "runs_before": warm, **_stats(lat[name], wall * share)}
        for n in ("service", "service_no_fsync"):
            c0, c1 = cpu0[n], _cpu_s(arms[n].proc.pid)
            out[n]["server_cpu_ms_per_round_trip"] = (
                None if c0 is None or c1 is None else (c1 - c0) / rounds * 1e3
            )
        cpu = np.asarray(arms["in_process"].cpu)
        out["in_process"]["cpu_median_ms"] = float(np.median(cpu) * 1e3)
        out["in_process"]["cpu_mean_ms"] = float(cpu.mean() * 1e3)
        a, b, c = (np.asarray(lat[n]) for n in names)
        out["paired_median_ms"] = {
            "service_minus_in_process": float(np.median(a - c) * 1e3),
            "fsync_minus_no_fsync": float(np.median(a - b) * 1e3),
        }
        return out, arms["service"]
    except BaseException:
        arms["service"].stop()
        raise
    finally:
        arms["in_process"].store.close()
        arms["service_no_fsync"].stop()


def run(quick: bool = False) -> dict[str, Any]:
    sizes = {  # lessons -> (warm-up runs, rounds with 1 client, rounds per client with 8)
        40: (60, 40, 10) if quick else (200, 200, 40),
        1000: (20, 10, 3) if quick else (60, 60, 10),
    }
    out: dict[str, Any] = {
        "machine": machine(),
        "max_facts": MAX_FACTS,
        "candidate_slots": SLOTS,
        "quick": quick,
        "sizes": {},
    }
    with tempfile.TemporaryDirectory(prefix="cogstats-bench-service-") as tmp:
        folder = Path(tmp)
        out["bare_fsync"] = bare_fsync(folder)
        print(f"bare write+fsync on this disk: median {out['bare_fsync']['median_ms']:.2f} ms")
        for lessons, (warm, one, eight) in sizes.items():
            row, service = _paired(folder, lessons, warm, one)
            try:
                row["service_8_clients"] = service.clients(8, eight, "b")
            finally:
                service.stop()
            ref, svc = row["in_process"], row["service"]
            if svc["server_cpu_ms_per_round_trip"] is not None:
                row["http_added_cpu_ms"] = svc["server_cpu_ms_per_round_trip"] - ref["cpu_mean_ms"]
            goal = GOALS[lessons] * 1e3
            row["goal"] = {"median_ms": goal, "p99_ms": P99_GOAL * 1e3}
            row["met"] = {
                k: bool(row[k]["median_ms"] <= goal and row[k]["p99_ms"] <= P99_GOAL * 1e3)
                for k in ("service", "service_8_clients")
            }
            out["sizes"][str(lessons)] = row
            _print(lessons, row)
    out["machine_after"] = machine()["load_average_1min"]
    return out


def _print(lessons: int, row: dict[str, Any]) -> None:
    names = {
        "in_process": "in process (LessonStore)",
        "service": "service, 1 client",
        "service_no_fsync": "service, no fsync, 1 client",
        "service_8_clients": "service, 8 clients",
    }
    for key, name in names.items():
        r = row[key]
        print(
            f"{lessons:5d} lessons  {name:28s} median {r['median_ms']:8.2f} ms  "
            f"p99 {r['p99_ms']:8.2f} ms  {r['throughput_per_s']:7.1f} round trips/s"
        )
    paired = row["paired_median_ms"]
    print(
        f"{lessons:5d} lessons  paired medians: service - in process "
        f"{paired['service_minus_in_process']:+.2f} ms, fsync - no fsync "
        f"{paired['fsync_minus_no_fsync']:+.2f} ms; CPU a round trip: in process "
        f"{row['in_process']['cpu_mean_ms']:.2f} ms, server "
        f"{row['service']['server_cpu_ms_per_round_trip'] or float('nan'):.2f} ms; "
        f"goal median {row['goal']['median_ms']:.0f} ms, p99 {row['goal']['p99_ms']:.0f} ms: "
        f"met {row['met']}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller samples, same code")
    parser.add_argument("--json", help="default benchmarks/results/service.json")
    args = parser.parse_args()
    out = run(quick=args.quick)
    path = Path(args.json) if args.json else RESULTS / "service.json"
    path.write_text(json.dumps(out, indent=1, default=str))
    print(f"written {path}")


if __name__ == "__main__":
    main()
