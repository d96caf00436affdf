"""cogstats.serve: the application in process (endpoints, errors, token, limits, order).

The real server processes (start, stop, kill -9, load, the clients) are in
test_service_process.py.
"""

from __future__ import annotations

import asyncio
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

with warnings.catch_warnings():  # starlette suggests httpx2 now; the client is the same
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

from cogstats._validation import LedgerError
from cogstats.serve import MAX_ID_LENGTH, create_app
from cogstats.serve.app import parse_body
from cogstats.store import Durability, LessonStore, StateWriteError
from cogstats.store.core import run_content

TOKEN = "test-token-0123456789abcdef"


def _store(path: Path) -> LessonStore:
    return LessonStore.open(path, preset="recommended", max_facts=4, candidate_slots=2, seed=3)


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with TestClient(create_app(_store(tmp_path / "s"))) as c:
        yield c


def _detail(r: httpx.Response) -> dict[str, Any]:
    body = r.json()
    assert set(body) == {"detail"} and len(body["detail"]) == 1, body
    item: dict[str, Any] = body["detail"][0]
    assert set(item) == {"field", "got", "msg", "loc", "type"}
    return item


def test_the_endpoints_answer_as_documented(client: TestClient) -> None:
    health = client.get("/health").json()
    assert health == {
        "status": "ok",
        "runs": 0,
        "lessons": 0,
        "gate": "recommended",
        "preset": "recommended",
        "version": health["version"],
    }
    row = client.post("/lessons", json={"id": "cite-sources", "family": "web"}).json()
    assert row["fact_id"] == "cite-sources" and row["status"] == "candidate"
    assert row["family"] == "web" and row["trials"] == 0 and row["estimate"] is None
    assert client.post("/lessons", json={"id": "cite-sources"}).json() == row  # a no-op
    sel = client.post("/select", json={"context": {"family": "web"}}).json()
    assert sel == {"fact_ids": ["cite-sources"], "propensities": None}
    assert client.post("/select").json() == sel  # the body is optional
    run = {"run_id": "r1", "score": 0.7, "fact_ids": sel["fact_ids"]}
    r = client.post("/runs", json={**run, "covariates": {"difficulty_proxy": 0.3}})
    assert r.status_code == 200 and r.json() == {"changes": []}
    assert "cogstats-repeat" not in r.headers
    lessons = client.get("/lessons").json()
    assert [x["fact_id"] for x in lessons] == ["cite-sources"] and lessons[0]["trials"] == 1
    assert set(lessons[0]) == {
        "fact_id", "status", "since", "trials", "estimate", "std_error", "t", "why",
        "reason", "created_at", "family",
    }  # fmt: skip
    assert client.get("/health").json()["runs"] == 1
    assert client.get("/events").json() == []


def _runs(n: int) -> list[dict[str, Any]]:
    """Runs of lessons a..e, a harmful: the gate's looks move statuses."""
    import numpy as np

    rng = np.random.default_rng(5)
    out = []
    for i in range(n):
        facts = [f for f in "abcde" if rng.random() < 0.5]
        d = float(rng.normal(0, 0.1))
        y = float(np.clip(0.6 + d - 0.3 * ("a" in facts) + rng.normal(0, 0.03), 0, 1))
        out.append(
            {
                "run_id": f"r{i}",
                "score": y,
                "fact_ids": facts,
                "covariates": {"difficulty_proxy": d},
            }
        )
    return out


def test_events_after_k_and_the_changes_of_each_run(client: TestClient) -> None:
    answers = [client.post("/runs", json=run).json()["changes"] for run in _runs(30)]
    events = client.get("/events").json()
    assert len(events) >= 2  # the harmful lesson moved
    assert [e["event"] for e in events] == list(range(1, len(events) + 1))
    assert [{k: v for k, v in e.items() if k not in ("event", "run_id")} for e in events] == [
        c for a in answers for c in a
    ]  # the events are the runs' changes, in order
    assert all(e["run_id"] == f"r{e['run'] - 1}" for e in events)
    assert client.get("/events", params={"after": 1}).json() == events[1:]
    assert client.get("/events", params={"after": len(events)}).json() == []
    status = {x["fact_id"]: x["status"] for x in client.get("/lessons").json()}
    assert status["a"] in ("suspended", "evicted")
    item = _detail(client.get("/events", params={"after": -1}))
    assert item["field"] == "after" and item["got"] == "'-1'" and item["loc"] == ["query", "after"]


def test_a_retried_run_is_answered_as_the_first_and_other_content_is_409(
    client: TestClient,
) -> None:
    runs = _runs(30)
    first = [client.post("/runs", json=run) for run in runs]
    again = [client.post("/runs", json=run) for run in runs]
    assert [r.json() for r in again] == [r.json() for r in first]
    assert any(r.json()["changes"] for r in first)  # some answers carry changes
    assert all(r.headers["cogstats-repeat"] == "true" for r in again)
    assert client.get("/health").json()["runs"] == 30  # counted once
    other = {**runs[4], "score": 0.123}
    r = client.post("/runs", json=other)
    assert r.status_code == 409
    item = _detail(r)
    assert item["field"] == "run_id" and item["got"] == "'r4'" and item["type"] == "conflict"
    assert f"score {runs[4]['score']!r}" in item["msg"] and "got score 0.123" in item["msg"]


def _ledger_message(**run: Any) -> str:
    with pytest.raises(LedgerError) as caught:
        run_content(run["run_id"], run["score"], run.get("fact_ids", []), run.get("covariates"))
    return caught.value.message


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"run_id": "r1", "score": 1.5}, "score"),
        ({"run_id": "r1", "score": "0.5"}, "score"),
        ({"run_id": "r1", "score": True}, "score"),
        ({"run_id": 7, "score": 0.5}, "run_id"),
        ({"run_id": " ", "score": 0.5}, "run_id"),
        ({"run_id": "r1", "score": 0.5, "fact_ids": [1]}, "fact_ids"),
        ({"run_id": "r1", "score": 0.5, "fact_ids": "abc"}, "fact_ids"),
        ({"run_id": "r1", "score": 0.5, "covariates": {"d": [1, 2]}}, "covariates.d"),
        ({"run_id": "r1", "score": 0.5, "covariates": {"d": {"x": 1}}}, "covariates.d"),
    ],
)
def test_a_bad_value_is_422_with_the_ledgers_message(
    client: TestClient, body: dict[str, Any], field: str
) -> None:
    r = client.post("/runs", json=body)
    assert r.status_code == 422
    item = _detail(r)
    assert item["field"] == field and item["loc"] == ["body", *field.split(".")]
    if field == "fact_ids" and isinstance(body["fact_ids"], str):
        assert item["msg"].startswith("fact_ids must be a list of lesson ids")
    else:
        assert item["msg"] == _ledger_message(**body)  # the CLI's message
        assert item["type"] == "ledger"
    value = body
    for part in field.split("."):
        value = value[part]
    assert item["got"] == repr(value)
    assert client.get("/health").json()["runs"] == 0  # nothing recorded


@pytest.mark.parametrize(
    ("raw", "field", "text"),
    [
        (b'{"run_id": "r1", "score": NaN}', "score", "finite"),
        (b'{"run_id": "r1", "score": Infinity}', "score", "finite"),
        (b'{"run_id": "r1", "score": 0.5, "covariates": {"d": NaN}}', "covariates.d", "finite"),
        (b'{"run_id": "r1"}', "score", "score is required"),
        (b'{"run_id": "r1", "score": 0.5, "extra": 1}', "extra", "unknown field 'extra'"),
        (b'{"run_id": "r1", "score": 0.5, "context": "web"}', "context", "JSON object"),
        (b'{"run_id": "r1", "score": 0.5, "covariates": [1]}', "covariates", "JSON object"),
        (b'{"run_id": "r1", "run_id": "r2", "score": 0.5}', "run_id", "appears twice"),
        (b'{"run_id": "r1", "score": ' + b"9" * 4400 + b"}", "score", "4400 digits"),
        (b'{"run_id": "r1", "score": 0.5, "context": ' + b"[" * 33 + b"]" * 33 + b"}",
         "context", "nested deeper than 32"),
        (b"[" * 100000 + b"]" * 100000, "body", "JSON object"),
        (b'{"run_id": "r1", "score": 0.5', "body", "malformed JSON"),
        (b"\xff\xfe{}", "body", "not UTF-8"),
        (b"[1, 2]", "body", "JSON object"),
        (b"", "body", "needs a JSON body"),
    ],
)  # fmt: skip
def test_a_malformed_body_is_422_naming_the_field(
    client: TestClient, raw: bytes, field: str, text: str
) -> None:
    r = client.post("/runs", content=raw, headers={"content-type": "application/json"})
    assert r.status_code == 422, r.text
    item = _detail(r)
    assert item["field"] == field and text in item["msg"], item
    assert client.get("/health").json()["runs"] == 0


def test_ids_are_validated_as_in_the_ledger_and_bounded(client: TestClient) -> None:
    long = "x" * (MAX_ID_LENGTH + 1)
    for body, field in (
        ({"run_id": long, "score": 0.5}, "run_id"),
        ({"run_id": "r1", "score": 0.5, "fact_ids": ["a", long]}, "fact_ids"),
        ({"run_id": "r1", "score": 0.5, "propensities": {long: 0.5}}, "propensities"),
    ):
        item = _detail(client.post("/runs", json=body))
        assert item["field"] == field and f"at most {MAX_ID_LENGTH}" in item["msg"]
        assert item["got"].endswith(f"({len(long) + 2} characters)")  # cut to 80
    item = _detail(client.post("/lessons", json={"id": long}))
    assert item["field"] == "id" and f"at most {MAX_ID_LENGTH}" in item["msg"]
    for bad in ("", " ", 5, None):
        item = _detail(client.post("/lessons", json={"id": bad}))
        assert item["field"] == "id", item
    item = _detail(client.post("/lessons", json={"id": "a", "family": 3}))
    assert item["field"] == "family" and item["got"] == "3"
    ok = client.post("/lessons", json={"id": "x" * MAX_ID_LENGTH})
    assert ok.status_code == 200
    assert client.get("/health").json()["lessons"] == 1


def test_propensities_from_select_are_logged_with_the_run(client: TestClient) -> None:
    client.post("/lessons", json={"id": "a"})
    body = {"run_id": "r1", "score": 0.5, "fact_ids": ["a"], "propensities": {"a": 0.8, "b": 0.4}}
    assert client.post("/runs", json=body).status_code == 200
    item = _detail(client.post("/runs", json={**body, "run_id": "r2", "propensities": {"a": 1.5}}))
    assert item["field"] == "propensities" and "probability" in item["msg"]
    store = client.app.state.owner.store  # type: ignore[attr-defined]
    frame = store.ledger().to_frame()
    assert frame["eligible_ids"].to_list() == [["a", "b"]]
    assert frame["propensities"].to_list() == [[0.8, 0.4]]


def test_the_token_is_needed_everywhere_but_health(tmp_path: Path) -> None:
    app = create_app(_store(tmp_path), token=TOKEN)
    with TestClient(app) as c:
        assert c.get("/health").status_code == 200  # open: a probe's
        for method, path in (
            ("POST", "/select"),
            ("POST", "/runs"),
            ("POST", "/lessons"),
            ("GET", "/lessons"),
            ("GET", "/events"),
            ("GET", "/openapi.json"),
            ("GET", "/nowhere"),
        ):
            for header in ({}, {"Authorization": "Bearer wrong"},
                           {"Authorization": f"Basic {TOKEN}"},
                           {"Authorization": f"Bearer {TOKEN}x"}):  # fmt: skip
                r = c.request(method, path, headers=header, json={"run_id": "r", "score": 0.5})
                assert r.status_code == 401, (method, path, header)
                assert r.headers["www-authenticate"] == "Bearer"
                item = _detail(r)
                assert item["field"] == "Authorization"
                assert item["loc"] == ["header", "Authorization"]
        good = {"Authorization": f"Bearer {TOKEN}"}
        assert c.post("/runs", headers=good, json={"run_id": "r", "score": 0.5}).status_code == 200
        assert c.get("/openapi.json", headers=good).status_code == 200
        assert c.get("/health").json()["runs"] == 1  # only the authorised run


def test_a_body_above_the_limit_is_413(tmp_path: Path) -> None:
    """By its Content-Length, or by its bytes when it has none (that the server does not
    read the rest is checked on a real server: test_service_process.py)."""
    app = create_app(_store(tmp_path), max_body=4096)

    def chunks() -> Iterator[bytes]:
        yield b'{"run_id": "r1", "score": 0.5, "context": {"pad": "'
        for _ in range(10):
            yield b"x" * 1024
        yield b'"}}'

    with TestClient(app) as c:
        big = b'{"run_id": "r1", "score": 0.5, "context": {"pad": "' + b"x" * 5000 + b'"}}'
        r = c.post("/runs", content=big, headers={"content-type": "application/json"})
        assert r.status_code == 413 and r.headers["connection"] == "close"
        item = _detail(r)
        assert item["field"] == "body" and "at most 4096" in item["msg"]
        # no Content-Length: refused once the bytes received pass the limit
        r = c.post("/runs", content=chunks(), headers={"content-type": "application/json"})
        assert r.status_code == 413 and _detail(r)["field"] == "body"
        ok = c.post("/runs", json={"run_id": "r1", "score": 0.5})
        assert ok.status_code == 200  # and it keeps serving


def test_a_crash_is_500_a_full_disk_507_and_the_service_keeps_serving(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = _store(tmp_path)
    with TestClient(create_app(store)) as c:
        monkeypatch.setattr(store, "select", lambda **kw: 1 / 0)
        r = c.post("/select")
        assert r.status_code == 500 and "ZeroDivisionError" in _detail(r)["msg"]

        def full(*a: Any, **kw: Any) -> None:
            raise StateWriteError(28, f"{tmp_path}/journal.jsonl: no space left", str(tmp_path))

        monkeypatch.setattr(store, "record", full)
        r = c.post("/runs", json={"run_id": "r1", "score": 0.5})
        assert r.status_code == 507 and "no space left" in _detail(r)["msg"]
        monkeypatch.undo()
        assert c.post("/runs", json={"run_id": "r1", "score": 0.5}).status_code == 200
        assert c.post("/select").status_code == 200


def test_store_calls_run_one_at_a_time_on_one_thread(tmp_path: Path) -> None:
    """40 concurrent requests of every kind: the store never runs two calls at once."""
    store = _store(tmp_path)
    app = create_app(store)
    inside = 0
    most = 0
    threads: set[int] = set()
    guard = threading.Lock()

    def traced(fn: Any) -> Any:
        def call(*a: Any, **kw: Any) -> Any:
            nonlocal inside, most
            with guard:
                inside += 1
                most = max(most, inside)
                threads.add(threading.get_ident())
            time.sleep(0.002)
            try:
                return fn(*a, **kw)
            finally:
                with guard:
                    inside -= 1

        return call

    for name in ("record", "select", "add", "lessons", "events"):
        setattr(store, name, traced(getattr(store, name)))

    async def main() -> list[int]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
            calls = []
            for i in range(8):
                calls += [
                    c.post("/runs", json={"run_id": f"r{i}", "score": 0.5, "fact_ids": ["a"]}),
                    c.post("/select"),
                    c.post("/lessons", json={"id": f"l{i}"}),
                    c.get("/lessons"),
                    c.get("/events"),
                ]
            return [r.status_code for r in await asyncio.gather(*calls)]

    assert asyncio.run(main()) == [200] * 40
    assert most == 1 and len(threads) == 1
    assert store.runs == 8
    app.state.owner.stop(True)


def test_the_openapi_schema_documents_every_endpoint(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()
    assert set(schema["paths"]) == {"/health", "/lessons", "/select", "/runs", "/events"}
    assert set(schema["paths"]["/lessons"]) == {"get", "post"}
    parts = schema["components"]["schemas"]
    run = parts["RunIn"]
    assert sorted(run["required"]) == ["run_id", "score"]
    assert run["properties"]["score"]["maximum"] == 1
    assert run["properties"]["run_id"]["maxLength"] == MAX_ID_LENGTH
    assert run["additionalProperties"] is False
    assert "from" in parts["Change"]["properties"]
    answers = schema["paths"]["/runs"]["post"]["responses"]
    assert {"200", "409", "413", "422", "507"} <= set(answers)


def test_parse_body_refuses_what_the_ledger_readers_refuse() -> None:
    assert parse_body(b' {"a": [1, {"b": null}]}') == {"a": [1, {"b": None}]}
    with pytest.raises(Exception, match="nested deeper"):
        parse_body(b'{"a": ' + b"[" * 40 + b"]" * 40 + b"}")


def test_a_live_backup_of_the_settings_and_the_journal_restores_the_store(
    tmp_path: Path,
) -> None:
    """docs/service.md's backup: store.json, then journal.jsonl (append-only), copied
    while the service runs, restore every acknowledged run and the same lifecycle (the
    snapshot files are optional: without them the journal is replayed)."""
    import shutil

    store = LessonStore.open(
        tmp_path / "s",
        preset="recommended",
        max_facts=4,
        candidate_slots=2,
        seed=3,
        durability=Durability(snapshot_every=10),
    )
    with TestClient(create_app(store)) as c:
        for run in _runs(25):
            assert c.post("/runs", json=run).status_code == 200
        backup = tmp_path / "backup"
        backup.mkdir()
        for name in ("store.json", "journal.jsonl"):  # the journal last
            shutil.copy2(tmp_path / "s" / name, backup / name)
        assert (tmp_path / "s" / "snapshot.json").exists()  # not copied
        lessons, events = c.get("/lessons").json(), c.get("/events").json()
    with LessonStore.open(backup, read_only=True) as restored:
        assert restored.runs == 25 and restored.snapshot_runs == 0
        rows = restored.lessons().to_dicts()
        assert [{k: None if v != v else v for k, v in r.items()} for r in rows] == lessons
        assert len(restored.events()) == len(events)
        assert restored.events()["fact_id"].to_list() == [e["fact_id"] for e in events]
