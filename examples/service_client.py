"""Calling the lesson store service from Python with httpx: an agent loop over HTTP.

The agent (simulated) has six lessons, one of them harmful (``skip-checks``).  Before each
run it asks the service which lessons to put in the prompt (``POST /select``); after the
run it sends the run's id, its score and the lessons the prompt carried (``POST /runs``),
with the selection's propensities.  A run whose answer was lost is sent again with the
same id and content: the service answers it as the first time and counts it once.  A
different run under a used id is refused (409), a malformed one named (422).

Run it: ``python examples/service_client.py`` starts ``cogstats serve`` on a free loopback
port in a temporary folder and stops it with SIGTERM at the end; ``--url URL`` (and
``--token-file FILE``) uses a running service instead.  Needs ``pip install
'cogstats[serve]' httpx``.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np

LESSONS = {  # lesson id -> its effect on the score (unknown to the agent)
    "cite-sources": 0.02,
    "plan-first": 0.03,
    "check-units": 0.0,
    "short-answers": 0.0,
    "ask-clarifying": 0.01,
    "skip-checks": -0.30,  # harmful
}
RUNS = 60


class LessonService:
    """A small client of ``cogstats serve`` (one keep-alive connection)."""

    def __init__(self, url: str, token: str | None = None, timeout: float = 30) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.http = httpx.Client(base_url=url, headers=headers, timeout=timeout)

    def _call(self, method: str, path: str, **kw: Any) -> Any:
        r = self.http.request(method, path, **kw)
        if r.status_code >= 400:
            item = r.json()["detail"][0]
            raise ServiceError(r.status_code, item["field"], item["msg"])
        return r.json()

    def health(self) -> dict[str, Any]:
        return self._call("GET", "/health")  # type: ignore[no-any-return]

    def add(self, lesson_id: str, family: str | None = None) -> dict[str, Any]:
        return self._call("POST", "/lessons", json={"id": lesson_id, "family": family})  # type: ignore[no-any-return]

    def select(self, context: dict[str, Any] | None = None) -> dict[str, Any]:
        return self._call("POST", "/select", json={"context": context})  # type: ignore[no-any-return]

    def record(
        self,
        run_id: str,
        score: float,
        fact_ids: list[str],
        *,
        covariates: dict[str, Any] | None = None,
        propensities: dict[str, float] | None = None,
        attempts: int = 8,
    ) -> list[dict[str, Any]]:
        """Record a run; retried (same id, same content) until the service answers."""
        body = {
            "run_id": run_id,
            "score": score,
            "fact_ids": fact_ids,
            "covariates": covariates,
            "propensities": propensities,
        }
        for attempt in range(attempts):
            try:
                r = self.http.post("/runs", json=body)
            except httpx.TransportError:  # the service restarting: the same run again
                time.sleep(min(2.0, 0.1 * 2**attempt))
                continue
            if r.status_code in (502, 503, 504):
                time.sleep(min(2.0, 0.1 * 2**attempt))
                continue
            if r.status_code >= 400:
                item = r.json()["detail"][0]
                raise ServiceError(r.status_code, item["field"], item["msg"])
            return r.json()["changes"]  # type: ignore[no-any-return]
        raise ServiceError(503, None, f"run {run_id!r} not acknowledged after {attempts} tries")

    def lessons(self) -> list[dict[str, Any]]:
        return self._call("GET", "/lessons")  # type: ignore[no-any-return]

    def events(self, after: int = 0) -> list[dict[str, Any]]:
        return self._call("GET", "/events", params={"after": after})  # type: ignore[no-any-return]


class ServiceError(Exception):
    def __init__(self, status: int, field: str | None, msg: str) -> None:
        super().__init__(f"{status} {field}: {msg}")
        self.status, self.field, self.msg = status, field, msg


def start_service(folder: Path) -> tuple[subprocess.Popen[bytes], str]:
    """``cogstats serve`` on a free loopback port; returns the process and its URL."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [sys.executable, "-m", "cogstats.cli", "serve", str(folder / "store"),
           "--preset", "recommended", "--max-facts", "4", "--candidate-slots", "2",
           "--port", str(port), "--seed", "7"]  # fmt: skip
    proc = subprocess.Popen(cmd)
    url = f"http://127.0.0.1:{port}"
    for _ in range(1200):
        if proc.poll() is not None:
            raise SystemExit(f"the service exited with status {proc.returncode}")
        try:
            httpx.get(url + "/health", timeout=2)
            return proc, url
        except httpx.TransportError:
            time.sleep(0.1)
    raise SystemExit("the service did not start in 120 s")


def agent(service: LessonService) -> None:
    rng = np.random.default_rng(11)
    for lesson in LESSONS:
        service.add(lesson, family="web")
    changes = []
    for i in range(RUNS):
        sel = service.select(context={"family": "web"})
        difficulty = float(rng.normal(0, 0.05))
        score = 0.6 + difficulty + sum(LESSONS[f] for f in sel["fact_ids"])
        score = float(np.clip(score + rng.normal(0, 0.03), 0, 1))
        run = {"covariates": {"difficulty_proxy": difficulty}, "propensities": sel["propensities"]}
        answer = service.record(f"run-{i}", score, sel["fact_ids"], **run)
        changes += answer
        if i == RUNS - 1:  # the answer lost: the agent sends the same run again
            again = service.record(f"run-{i}", score, sel["fact_ids"], **run)
            print("retry answered as the first:", again == answer)
    health = service.health()
    print(f"runs recorded: {health['runs']} (sent {RUNS}, one twice)")
    try:
        service.record("run-0", 0.99, [])
    except ServiceError as exc:
        print(f"a different run under a used id: {exc.status} {exc.field}")
    try:
        service.record("run-x", 1.7, ["cite-sources"])
    except ServiceError as exc:
        print(f"a bad score: {exc.status} {exc.field}: {exc.msg}")
    for row in service.lessons():
        print(f"  {row['fact_id']:15s} {row['status']:10s} trials {row['trials']:3d}  "
              f"{row['why'] or ''}")  # fmt: skip
    for e in service.events():
        print(f"  event {e['event']}: after run {e['run_id']} {e['fact_id']} "
              f"{e['from']} -> {e['to']} ({e['why']})")  # fmt: skip
    status = {row["fact_id"]: row["status"] for row in service.lessons()}
    print("harmful lesson out of the prompt:", status["skip-checks"] in ("suspended", "evicted"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="a running service (default: start one)")
    parser.add_argument("--token-file", help="the service's token file")
    args = parser.parse_args()
    token = Path(args.token_file).read_text().strip() if args.token_file else None
    if args.url:
        agent(LessonService(args.url, token))
        return
    with tempfile.TemporaryDirectory() as tmp:
        proc, url = start_service(Path(tmp))
        try:
            agent(LessonService(url))
        finally:
            proc.send_signal(signal.SIGTERM)
            print("service stopped with status", proc.wait(60))


if __name__ == "__main__":
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    main()
