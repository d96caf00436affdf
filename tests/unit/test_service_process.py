"""``cogstats serve`` as real processes on free loopback ports: start, stop, refusals, bad
bodies, 8 clients with the server killed -9 twice, and the two example clients."""

from __future__ import annotations

import json
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from cogstats.store import LessonStore
from tests.unit._service import ROOT, Server, env, free_port

TOKEN = "serve-test-token-0123456789abcdef"


def _serve(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``cogstats serve ...`` expected to stop by itself (a refusal)."""
    return subprocess.run(
        [sys.executable, "-m", "cogstats.cli", "serve", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env(),
    )


def test_start_log_lines_and_a_graceful_stop_on_sigterm(tmp_path: Path) -> None:
    state = tmp_path / "state"
    srv = Server(state, "--max-facts", "4", "--candidate-slots", "2", "--seed", "1").start()
    with httpx.Client(base_url=srv.url) as h:
        for i in range(5):
            run = {"run_id": f"r{i}", "score": 0.5 + i / 20, "fact_ids": ["a", "b"][: i % 3]}
            assert h.post("/runs", json=run).status_code == 200
        assert h.post("/runs", json={"run_id": "bad", "score": 2}).status_code == 422
        # one writer: a second service on the same folder is refused, naming the holder
        second = _serve(str(state), "--port", str(free_port()))
        assert second.returncode == 2
        assert "cogstats serve: error:" in second.stderr
        assert f"pid {srv.proc.pid}" in second.stderr  # type: ignore[union-attr]
        # a port in use: a log line, status 1, and that store's lock released
        other = _serve(str(tmp_path / "other"), "--port", str(srv.port))
        assert other.returncode == 1, other.stderr
        assert f"ERROR error: the service did not start on 127.0.0.1:{srv.port}" in other.stderr
        LessonStore.open(tmp_path / "other").close()
    assert srv.stop(signal.SIGTERM) == 0
    log = srv.text()
    started = re.findall(r"INFO started: store (\S+) \(0 runs.*listening on (\S+);", log)
    assert started == [(str(state), f"http://127.0.0.1:{srv.port}")]
    assert "WARNING POST /runs -> 422: score must be a finite number in [0, 1]; got 2" in log
    assert re.search(r"INFO stopped \(SIGTERM\): store \S+, 5 runs, 2 lessons", log)
    with LessonStore.open(state, read_only=True) as reader:  # the state saved at the stop
        assert reader.runs == 5 and reader.snapshot_runs == 5
    LessonStore.open(state).close()  # the lock released


def test_what_the_server_refuses_at_start(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each a one-line error and exit status 2, before anything listens (in process:
    ``cogstats.cli.main``, as the console script runs it)."""
    from cogstats.cli import main

    token = tmp_path / "token"
    token.write_text("short\n")
    state = str(tmp_path / "state")
    for args, message in (
        (["--host", "0.0.0.0"], "is not a loopback address"),
        (["--host", "192.0.2.1"], "needs --token-file"),
        (["--token-file", str(token)], "at least 16 are needed"),
        (["--token-file", str(tmp_path / "missing")], "cannot be read"),
        (["--max-body", "0"], "--max-body must be a positive number"),
    ):
        assert main(["serve", state, *args]) == 2, args
        err = capsys.readouterr().err
        assert err.startswith("cogstats serve: error: ") and message in err, (args, err)
    assert not (tmp_path / "state").exists()  # refused before the store was opened
    LessonStore.open(state, preset="recommended", max_facts=4, candidate_slots=2).close()
    assert main(["serve", state, "--max-facts", "5", "--candidate-slots", "2"]) == 2
    assert "max_facts: 4 (stored) != 5 (given)" in capsys.readouterr().err
    token.write_text("x" * 15 + " y\n")
    assert main(["serve", state, "--token-file", str(token)]) == 2
    assert "visible ASCII characters without spaces" in capsys.readouterr().err


def _raw_413(port: int, head: bytes, chunks: int) -> tuple[bytes, int]:
    """Send a request's head, then up to ``chunks`` chunks of 64 KiB until an answer comes;
    return the answer and the body bytes sent."""
    sent = 0
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(head)
        try:
            for _ in range(chunks):
                if select.select([s], [], [], 0.01)[0]:
                    break
                piece = b"x" * 65536
                s.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
                sent += len(piece)
        except (BrokenPipeError, ConnectionResetError):
            pass
        answer = b""
        while b"\r\n\r\n" not in answer:
            data = s.recv(65536)
            if not data:
                break
            answer += data
    return answer, sent


def test_bad_bodies_get_4xx_naming_the_field_and_the_server_keeps_serving(
    tmp_path: Path,
) -> None:
    (tmp_path / "token").write_text(TOKEN)
    (tmp_path / "token").chmod(0o600)
    args = ("--max-facts", "4", "--candidate-slots", "2", "--token-file", str(tmp_path / "token"))
    auth = {"Authorization": f"Bearer {TOKEN}"}
    json_type = {"content-type": "application/json", **auth}
    huge = "L" * 100_000
    srv = Server(tmp_path / "state", *args).start()
    with httpx.Client(base_url=srv.url, headers=auth, timeout=60) as h:
        assert h.post("/runs", json={"run_id": "ok-1", "score": 0.5}).status_code == 200
        cases: list[tuple[Any, int, str]] = [
            ({"run_id": "r", "score": "high"}, 422, "score"),
            ({"run_id": ["r"], "score": 0.5}, 422, "run_id"),
            ({"run_id": "r", "score": 0.5, "fact_ids": [1, 2]}, 422, "fact_ids"),
            ({"run_id": "r", "score": 0.5, "covariates": {"d": {"x": 1}}}, 422, "covariates.d"),
            (b'{"run_id": "r", "score": NaN}', 422, "score"),
            ({"run_id": huge, "score": 0.5}, 422, "run_id"),
            ({"run_id": "r", "score": 0.5, "fact_ids": [huge]}, 422, "fact_ids"),
            (b'{"run_id": "r", "score": 0.5, "context": ' + b"[" * 5000 + b"]" * 5000 + b"}",
             422, "context"),
            (b"[" * 400_000 + b"]" * 400_000, 422, "body"),
            (b'{"run_id": "r", "score": 0.5, "context": {"pad": "' + b"x" * 10_000_000 + b'"}}',
             413, "body"),
        ]  # fmt: skip
        for body, status, field in cases:
            if isinstance(body, bytes):
                r = h.post("/runs", content=body, headers=json_type)
            else:
                r = h.post("/runs", json=body)
            assert r.status_code == status, (field, r.text[:300])
            assert r.json()["detail"][0]["field"] == field
            assert h.get("/health").json()["status"] == "ok"  # still serving
        r = h.post("/runs", json={"run_id": "ok-2", "score": 0.5})
        assert r.status_code == 200
        assert httpx.post(srv.url + "/runs", json={"run_id": "x", "score": 0.5}).status_code == 401
        # a 10 MB body refused by its Content-Length, before a byte of it is sent
        head = (
            b"POST /runs HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\n"
            b"Authorization: Bearer " + TOKEN.encode() + b"\r\n"
        )
        answer, _ = _raw_413(srv.port, head + b"Content-Length: 10000000\r\n\r\n", 0)
        assert answer.startswith(b"HTTP/1.1 413 "), answer[:200]
        # without Content-Length: refused before the client has sent 10 MB
        answer, sent = _raw_413(srv.port, head + b"Transfer-Encoding: chunked\r\n\r\n", 160)
        assert answer.startswith(b"HTTP/1.1 413 "), answer[:200]
        assert sent < 10_000_000
        health = h.get("/health").json()
        assert health["runs"] == 2 and health["lessons"] == 0
    assert srv.stop(signal.SIGINT) == 0
    assert "INFO stopped (SIGINT): store" in srv.text()


CLIENTS, RUNS_EACH, LESSONS = 8, 500, [f"L{j}" for j in range(10)]


def _client_runs(c: int) -> list[dict[str, Any]]:
    rng = np.random.default_rng([20261206, c])
    return [
        {
            "run_id": f"c{c}-r{i}",
            "score": float(rng.random()),
            "fact_ids": [f for f in LESSONS if rng.random() < 0.25],
            "covariates": {"difficulty_proxy": float(rng.normal(0, 0.1))},
        }
        for i in range(RUNS_EACH)
    ]


def test_8_clients_500_runs_each_with_the_server_killed_9_twice(tmp_path: Path) -> None:
    """Every acknowledged run is counted exactly once and none is lost: each client sends
    its runs one after another, and sends a run again (same id, same content) until it is
    acknowledged; the server is killed with SIGKILL twice while they send, and restarted."""
    srv = Server(
        tmp_path / "state",
        "--max-facts", "6", "--candidate-slots", "3", "--snapshot-every", "250",
    ).start()  # fmt: skip
    plans = {c: _client_runs(c) for c in range(CLIENTS)}
    acked: dict[str, dict[str, Any]] = {}
    tries: dict[str, int] = {}
    repeats: list[str] = []
    problems: list[str] = []
    lock = threading.Lock()

    def client(c: int) -> None:
        with httpx.Client(base_url=srv.url, timeout=60) as h:
            for run in plans[c]:
                deadline = time.monotonic() + 240
                while True:
                    with lock:
                        tries[run["run_id"]] = tries.get(run["run_id"], 0) + 1
                    try:
                        r = h.post("/runs", json=run)
                    except httpx.TransportError:  # the server is down: the same run again
                        if time.monotonic() > deadline:
                            problems.append(f"{run['run_id']}: never acknowledged")
                            return
                        time.sleep(0.05)
                        continue
                    with lock:
                        if r.status_code != 200:
                            problems.append(f"{run['run_id']}: {r.status_code} {r.text[:200]}")
                            return
                        acked[run["run_id"]] = r.json()
                        if r.headers.get("cogstats-repeat") == "true":
                            repeats.append(run["run_id"])
                    break

    threads = [threading.Thread(target=client, args=(c,)) for c in range(CLIENTS)]
    for t in threads:
        t.start()
    kills = []
    for at in (1300, 2600):
        while len(acked) < at and not problems and any(t.is_alive() for t in threads):
            time.sleep(0.01)
        srv.kill9()
        kills.append(len(acked))
        srv.start()
    for t in threads:
        t.join(600)
    assert problems == []
    assert len(kills) == 2 and all(k < CLIENTS * RUNS_EACH for k in kills)
    runs = [run for c in range(CLIENTS) for run in plans[c]]
    assert set(acked) == {run["run_id"] for run in runs}  # every run acknowledged
    retried = sorted(k for k, n in tries.items() if n > 1)
    assert retried  # the kills interrupted clients
    # a retry of an acknowledged run: the same answer, counted once
    with httpx.Client(base_url=srv.url) as h:
        for run in runs[::400]:
            r = h.post("/runs", json=run)
            assert r.json() == acked[run["run_id"]]
            assert r.headers["cogstats-repeat"] == "true"
        assert h.get("/health").json()["runs"] == len(runs)
    assert srv.stop() == 0
    assert srv.text().count("INFO started:") == 3 and srv.text().count("INFO stopped") == 1
    with LessonStore.open(tmp_path / "state", read_only=True) as store:
        frame = store.ledger().to_frame()
        trials = dict(store.lessons().select("fact_id", "trials").iter_rows())
    assert frame.height == len(runs) and frame["run_id"].n_unique() == len(runs)
    stored = {r["run_id"]: r for r in frame.iter_rows(named=True)}
    for run in runs:  # each run as sent, once
        got = stored[run["run_id"]]
        assert got["score"] == run["score"] and got["fact_ids"] == run["fact_ids"]
        assert got["difficulty_proxy"] == run["covariates"]["difficulty_proxy"]
    assert trials == {f: sum(f in run["fact_ids"] for run in runs) for f in LESSONS}
    print(f"killed after {kills} acknowledged runs; {len(retried)} runs sent more than once, "
          f"{len(repeats)} answered as repeats")  # fmt: skip


def test_the_python_client_example(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "service_client.py")],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env=env(),
    )
    assert out.returncode == 0, out.stderr
    assert "retry answered as the first: True" in out.stdout
    assert "runs recorded: 60 (sent 60, one twice)" in out.stdout
    assert "a different run under a used id: 409 run_id" in out.stdout
    assert "a bad score: 422 score: score must be a finite number in [0, 1]; got 1.7" in out.stdout
    assert "harmful lesson out of the prompt: True" in out.stdout
    assert "service stopped with status 0" in out.stdout
    assert "INFO started: store" in out.stderr and "INFO stopped (SIGTERM)" in out.stderr


def _node() -> str | None:
    """node 18 or later (the global fetch), or None."""
    node = shutil.which("node")
    if node is None:
        return None
    out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=60)
    major = re.match(r"v(\d+)", out.stdout.strip())
    return node if major and int(major.group(1)) >= 18 else None


NODE = _node()


@pytest.mark.skipif(NODE is None, reason="node 18+ is not installed (.ci/run installs nodejs)")
def test_the_node_client_replays_the_recorded_demo(tmp_path: Path) -> None:
    """cycgraph's recorded demo through the service from plain JavaScript (fetch): after
    run 5 P1-P3 are out of the prompt (suspended or evicted) and no /select from then on
    offers them; no genuine lesson is convicted."""
    assert NODE is not None
    (tmp_path / "token").write_text(TOKEN)
    args = ("--preset", "recommended", "--max-facts", "12", "--candidate-slots", "6",
            "--seed", "1", "--token-file", str(tmp_path / "token"))  # fmt: skip
    with Server(tmp_path / "state", *args) as srv:
        out = subprocess.run(
            [NODE, str(ROOT / "examples" / "node-client" / "replay_demo.mjs")],
            capture_output=True,
            text=True,
            timeout=120,
            env={**env(), "COGSTATS_URL": srv.url, "COGSTATS_TOKEN": TOKEN},
        )
        lessons = httpx.get(
            srv.url + "/lessons", headers={"Authorization": f"Bearer {TOKEN}"}
        ).json()
    assert out.returncode == 0, out.stdout + out.stderr
    summary = json.loads(out.stdout.splitlines()[-1].removeprefix("SUMMARY "))
    assert summary["failures"] == [] and summary["convicted"] == []
    assert summary["runs"] == 10  # run 1 was not recorded
    assert sorted(summary["after_run"], key=int) == [str(r) for r in range(5, 12)]
    for statuses in summary["after_run"].values():
        assert set(statuses.values()) <= {"suspended", "evicted"}
    poisons = {"P1", "P2", "P3"}
    assert poisons <= set(summary["selections"]["4"])  # before: in the prompt
    chosen_after_5 = [summary["selections"][str(r)] for r in range(6, 12)]
    assert not poisons & ({f for sel in chosen_after_5 for f in sel} | set(summary["next_prompt"]))
    status = {row["fact_id"]: row["status"] for row in lessons}  # the server's own table
    assert {status[p] for p in poisons} <= {"suspended", "evicted"}
    assert "eval-gate:harmful" not in {row["reason"] for row in lessons if row["fact_id"][0] == "L"}
