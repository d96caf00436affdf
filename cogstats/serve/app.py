"""The lesson store over HTTP: :func:`create_app` builds the FastAPI application.

What the application promises (docs/service.md):

- **One owner.**  The process holds the store's writer lock; every call to the store runs
  on one thread, in arrival order, so the requests that change the state are serialised
  and none runs beside a read.
- **Durable answers.**  ``POST /runs`` answers once :meth:`LessonStore.record` has
  returned, that is once the run's journal line is fsynced (unless the store batches its
  fsyncs).  A retried run (same id, same content) is answered as the first time and counted
  once; the same id with other content is ``409``.
- **Errors that name the field.**  A body is parsed with the ledger's bounded JSON parser
  (nesting at most 32 deep, integers at most 4,300 digits, no repeated key), its shape
  checked by the models (:mod:`cogstats.serve.models`) and its values by the ledger's
  validator: a ``422`` names the field, the value it got and the ledger's message.  Ids
  are at most :data:`~cogstats.serve.models.MAX_ID_LENGTH` characters.
- **Guarded.**  With a token, every request but ``GET /health`` needs
  ``Authorization: Bearer <token>`` (``401`` otherwise, compared in constant time) before
  anything is read; a body above ``max_body`` bytes is ``413`` (at once when its
  ``Content-Length`` says so, else as soon as the bytes received pass the limit: it is
  never held whole in memory).

Examples
--------
>>> import tempfile
>>> from cogstats.store import LessonStore
>>> store = LessonStore.open(tempfile.mkdtemp(), preset="recommended", max_facts=4,
...                          candidate_slots=2)
>>> app = create_app(store)
>>> sorted(r.path for r in app.routes if r.path.startswith(("/r", "/s", "/l")))
['/lessons', '/lessons', '/runs', '/select']
>>> store.close()
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import hmac
import logging
import math
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from typing import Any, TypeVar, cast

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.routing import APIRoute
from pydantic import BaseModel
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from cogstats._validation import CogstatsError, LedgerError
from cogstats._version import __version__
from cogstats.ledger import parse_json_record
from cogstats.serve.models import (
    BODY_FIELDS,
    MAX_ID_LENGTH,
    ErrorOut,
    Event,
    Health,
    LessonIn,
    LessonRow,
    RunIn,
    RunOut,
    SelectIn,
    SelectionOut,
)
from cogstats.store import (
    LessonStore,
    ReadOnlyStoreError,
    RunConflictError,
    StateWriteError,
)

__all__ = ["MAX_BODY", "OPEN_PATHS", "ApiError", "create_app"]

log = logging.getLogger("cogstats.serve")

#: the largest request body taken by default (bytes): a run with a few hundred lessons
#: and covariates is a few kilobytes
MAX_BODY = 1 << 20
#: the paths a GET may reach without the token (a load balancer's or systemd's probe)
OPEN_PATHS = frozenset({"/health"})
#: the answer header that marks a retried run answered from the store (body unchanged)
REPEAT_HEADER = "cogstats-repeat"

_T = TypeVar("_T")
_NOTHING: Any = object()


def _short(value: Any) -> str:
    """``repr(value)`` cut to 80 characters (the size said for a longer one)."""
    text = repr(value)
    if len(text) <= 80:
        return text
    return f"{text[:60]}... ({len(text)} characters)"


def _item(field: str | None, msg: str, got: Any, kind: str, where: str) -> dict[str, Any]:
    return {
        "field": field,
        "got": None if got is _NOTHING else _short(got),
        "msg": msg,
        "loc": [where] if field in (None, "body") else [where, *field.split(".")],
        "type": kind,
    }


class ApiError(HTTPException):
    """An error answer: the status, and the field, the value it got and the message.

    Examples
    --------
    >>> exc = ApiError(422, "score must be in [0, 1]", field="score", got=1.5)
    >>> exc.status_code, exc.items[0]["field"], exc.items[0]["got"]
    (422, 'score', '1.5')
    """

    def __init__(
        self,
        status: int,
        msg: str,
        *,
        field: str | None = None,
        got: Any = _NOTHING,
        kind: str = "value_error",
        where: str = "body",
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(status_code=status, detail=msg, headers=dict(headers or {}) or None)
        self.items = [_item(field, msg, got, kind, where)]


def _error_response(exc: ApiError) -> JSONResponse:
    return JSONResponse({"detail": exc.items}, status_code=exc.status_code, headers=exc.headers)


def _finite(row: Mapping[str, Any]) -> dict[str, Any]:
    """Return ``row`` with NaN and infinities as null (JSON has neither)."""
    return {
        k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in row.items()
    }


# ---------------------------------------------------------------------- the guard
def _header(scope: Scope, name: bytes) -> bytes | None:
    for key, value in scope["headers"]:
        if key.lower() == name:
            return bytes(value)
    return None


async def _send_json(send: Send, status: int, body: bytes, headers: list[Any]) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class Guard:
    """ASGI middleware: the token (before anything is read) and the body size limit.

    Parameters
    ----------
    app : ASGI application
    token : bytes or None
        The bearer token every request but a GET of :data:`OPEN_PATHS` must carry.
    max_body : int
        The largest body taken (bytes): above it, ``413``.
    """

    def __init__(self, app: ASGIApp, *, token: bytes | None, max_body: int) -> None:
        self.app = app
        self.max_body = int(max_body)
        self._digest = None if token is None else hashlib.sha256(token).digest()

    def _authorised(self, scope: Scope) -> bool:
        if self._digest is None:
            return True
        if scope["method"] in ("GET", "HEAD") and scope["path"] in OPEN_PATHS:
            return True
        given = _header(scope, b"authorization") or b""
        scheme, _, token = given.partition(b" ")
        # compare digests of equal length: the time says nothing of the token
        ok = hmac.compare_digest(hashlib.sha256(token.strip()).digest(), self._digest)
        return ok and scheme.lower() == b"bearer"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer 401 or 413 at once, else pass the request on with a counted body."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        where = f"{scope['method']} {scope['path']}"
        if not self._authorised(scope):
            log.warning("%s -> 401: no valid bearer token", where)
            exc = ApiError(
                401,
                "this service needs the header 'Authorization: Bearer <token>' (the token "
                "in the server's --token-file)",
                field="Authorization",
                kind="unauthorized",
                where="header",
            )
            body = _error_response(exc).body
            await _send_json(send, 401, bytes(body), [(b"www-authenticate", b"Bearer")])
            return
        length = _header(scope, b"content-length")
        if length is not None and length.isdigit() and int(length) > self.max_body:
            log.warning("%s -> 413: a body of %s bytes", where, length.decode())
            body = _error_response(_too_large(int(length), self.max_body)).body
            await _send_json(send, 413, bytes(body), [(b"connection", b"close")])
            return
        await self.app(scope, self._counted(receive), send)

    def _counted(self, receive: Receive) -> Receive:
        received = 0
        limit = self.max_body

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:  # a body without Content-Length, or a longer one
                    raise _too_large(received, limit)
            return message

        return counted


def _too_large(size: int, limit: int) -> ApiError:
    return ApiError(
        413,
        f"the body is {size} bytes or more; this service takes at most {limit} (--max-body)",
        field="body",
        kind="too_large",
        headers={"connection": "close"},
    )


# ---------------------------------------------------------------------- the body
def parse_body(raw: bytes) -> Any:
    """Parse a request body with the ledger's bounded JSON parser, or raise a 422.

    Examples
    --------
    >>> parse_body(b'{"run_id": "r1", "score": 0.5}')
    {'run_id': 'r1', 'score': 0.5}
    >>> try:
    ...     parse_body(b'{"context": ' + b"[" * 40 + b"]" * 40 + b"}")
    ... except ApiError as exc:
    ...     print(exc.items[0]["field"], "|", exc.items[0]["msg"][:32])
    context | nested deeper than 32 levels (li
    """
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ApiError(
            422, f"the body is not UTF-8 ({exc.reason} at byte {exc.start})", field="body"
        ) from None
    if text.lstrip(" \t\r\n")[:1] != "{":
        raise ApiError(422, "the body must be a JSON object", field="body", got=text[:80])
    try:
        return parse_json_record(text, row=1, src=None)
    except LedgerError as exc:
        raise ApiError(422, exc.message, field=exc.field or "body", kind="json_invalid") from None


class _JsonRequest(Request):
    """A request whose JSON body is parsed by :func:`parse_body`."""

    async def json(self) -> Any:
        """Return the parsed body (parsed once)."""
        if not hasattr(self, "_parsed"):
            self._parsed = parse_body(await self.body())
        return self._parsed


class _Route(APIRoute):
    """A route that parses bodies with :func:`parse_body` and answers any crash with 500."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        """Wrap FastAPI's handler."""
        handler = super().get_route_handler()

        async def route(request: Request) -> Response:
            try:
                return await handler(_JsonRequest(request.scope, request.receive))
            except (HTTPException, RequestValidationError):
                raise
            except Exception as exc:  # the server keeps serving; the log has the trace
                log.error(
                    "%s %s -> 500: %s: %s",
                    request.method,
                    request.url.path,
                    type(exc).__name__,
                    exc,
                    exc_info=exc,
                )
                return _error_response(
                    ApiError(
                        500,
                        f"internal error ({type(exc).__name__}); the server's log has the details",
                        kind="internal",
                    )
                )

        return route


# ---------------------------------------------------------------------- the store's thread
class _Owner:
    """The store and the one thread that calls it (requests queue in arrival order)."""

    def __init__(self, store: LessonStore) -> None:
        self.store = store
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cogstats-store")

    async def call(self, fn: Callable[..., _T], *args: Any, body: Any = None, **kw: Any) -> _T:
        """Run ``fn`` on the store's thread; the store's errors as :class:`ApiError`."""
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self.pool, functools.partial(fn, *args, **kw))
        except RunConflictError as exc:
            raise ApiError(
                409, str(exc), field="run_id", got=_got(body, "run_id"), kind="conflict"
            ) from None
        except LedgerError as exc:
            field, got = _located(body, exc.field)
            raise ApiError(422, exc.message, field=field, got=got, kind="ledger") from None
        except StateWriteError as exc:
            raise ApiError(507, str(exc), kind="storage") from None
        except ReadOnlyStoreError as exc:
            raise ApiError(503, str(exc), kind="unavailable") from None
        except CogstatsError as exc:
            raise ApiError(422, str(exc)) from None

    def stop(self, close: bool) -> None:
        """Snapshot the runs since the last snapshot and close the store (its thread)."""
        store = self.store

        def finish() -> None:
            if not store.read_only and store.runs > store.snapshot_runs:
                store.snapshot()
            store.close()

        try:
            if close:
                self.pool.submit(finish).result()
        finally:
            self.pool.shutdown(wait=True)


def _got(body: Any, field: str | None) -> Any:
    """Return the value a body (a mapping or a request model) holds for ``field``."""
    if isinstance(body, BaseModel):
        body = body.model_dump()
    if isinstance(body, Mapping) and field is not None and field in body:
        return body[field]
    return _NOTHING


def _located(body: Any, field: str | None) -> tuple[str | None, Any]:
    """Return the body's name of a field the ledger named, and its value.

    A covariate is ``covariates.NAME``; the propensity columns come from ``propensities``.
    """
    if isinstance(body, BaseModel):
        body = body.model_dump()
    if field is None or not isinstance(body, Mapping):
        return field, _NOTHING
    covs = body.get("covariates")
    if isinstance(covs, Mapping) and field in covs:
        return f"covariates.{field}", covs[field]
    if field in ("eligible_ids", "propensities") and body.get("propensities") is not None:
        return "propensities", body["propensities"]
    return field, _got(body, field)


def _check_id(value: Any, field: str) -> None:
    if isinstance(value, str) and len(value) > MAX_ID_LENGTH:
        raise ApiError(
            422,
            f"{field} is an id of {len(value)} characters; this service takes at most "
            f"{MAX_ID_LENGTH}",
            field=field.partition("[")[0],
            got=value,
        )


def _check_object(value: Any, field: str) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ApiError(
            422,
            f"{field} must be a JSON object or null; got {type(value).__name__}",
            field=field,
            got=value,
        )
    return value


def _run_arguments(body: RunIn) -> tuple[Any, Any, list[Any], dict[str, Any]]:
    """Return the run's (run_id, score, fact_ids, covariates), ids and shapes checked."""
    _check_id(body.run_id, "run_id")
    facts = body.fact_ids
    if not isinstance(facts, list):
        raise ApiError(
            422,
            f"fact_ids must be a list of lesson ids; got {type(facts).__name__}",
            field="fact_ids",
            got=facts,
        )
    for k, f in enumerate(facts):
        _check_id(f, f"fact_ids[{k}]")
    covs = dict(_check_object(body.covariates, "covariates") or {})
    props = _check_object(body.propensities, "propensities")
    _check_object(body.context, "context")
    if props is not None:  # the /select answer's propensities: the ledger's two columns
        for k, f in enumerate(props):
            _check_id(f, f"propensities[{k}]")
        covs.setdefault("eligible_ids", list(props))
        covs.setdefault("propensities", list(props.values()))
    return body.run_id, body.score, facts, covs


# ---------------------------------------------------------------------- the application
def _validation_handler(request: Request, exc: Exception) -> JSONResponse:
    """Answer 422 naming each field, what it got and what was wrong."""
    fields = BODY_FIELDS.get(request.url.path, ())
    items = []
    for err in cast(RequestValidationError, exc).errors():
        loc = [x for x in err.get("loc", ()) if x != "body"]
        where = "query" if err.get("loc", ("",))[0] == "query" else "body"
        loc = [x for x in loc if x != "query"]
        field = ".".join(str(x) for x in loc) or "body"
        kind = str(err.get("type", "value_error"))
        got = err.get("input", _NOTHING)
        if kind == "missing":
            msg = f"{field} is required" if field != "body" else "the request needs a JSON body"
            got = _NOTHING
        elif kind == "extra_forbidden":
            msg = f"unknown field {field!r}; the body takes {', '.join(fields)}"
        elif kind in ("model_attributes_type", "dict_type", "model_type"):
            msg = f"the body must be a JSON object; got {type(got).__name__}"
        else:
            msg = f"{field}: {err.get('msg', 'invalid')}"
        items.append(_item(field, msg, got, kind, where))
    first = items[0] if items else {"field": None, "msg": "invalid request"}
    log.warning("%s %s -> 422: %s", request.method, request.url.path, first["msg"])
    return JSONResponse({"detail": items}, status_code=422)


def _api_error_handler(request: Request, error: Exception) -> JSONResponse:
    exc = cast(ApiError, error)
    first = exc.items[0]
    level = logging.ERROR if exc.status_code >= 500 else logging.WARNING
    log.log(
        level,
        "%s %s -> %d: %s%s",
        request.method,
        request.url.path,
        exc.status_code,
        f"{first['field']}: "
        if first["field"] and not first["msg"].startswith(first["field"])
        else "",
        first["msg"],
    )
    return _error_response(exc)


def _http_error_handler(request: Request, error: Exception) -> JSONResponse:
    """Starlette's own errors (404, 405) in the service's error shape."""
    exc = cast(HTTPException, error)
    if isinstance(exc, ApiError):
        return _api_error_handler(request, exc)
    item = _item(None, str(exc.detail), _NOTHING, f"http_{exc.status_code}", "path")
    return JSONResponse({"detail": [item]}, status_code=exc.status_code, headers=exc.headers)


_ERRORS: dict[int | str, dict[str, Any]] = {
    code: {"model": ErrorOut} for code in (401, 409, 413, 422, 503, 507)
}


def create_app(
    store: LessonStore,
    *,
    token: str | None = None,
    max_body: int = MAX_BODY,
    close_store: bool = True,
) -> FastAPI:
    """Build the service's FastAPI application around an open (writer) store.

    Parameters
    ----------
    store : LessonStore
        The store, opened for writing; the application calls it from one thread.
    token : str, optional
        The bearer token every request but ``GET /health`` needs (none: no check).
    max_body : int
        The largest request body taken, in bytes (default :data:`MAX_BODY`).
    close_store : bool
        At shutdown, snapshot the runs since the last snapshot and close the store
        (default True).

    Returns
    -------
    FastAPI
        Run it with one uvicorn worker (the store allows one writer):
        ``cogstats serve`` does.

    Examples
    --------
    >>> import tempfile
    >>> from cogstats.store import LessonStore
    >>> store = LessonStore.open(tempfile.mkdtemp(), preset="recommended", max_facts=4,
    ...                          candidate_slots=2)
    >>> create_app(store, token="s3cret-token-0123").openapi()["info"]["title"]
    'cogstats lesson store'
    >>> store.close()
    """
    owner = _Owner(store)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await asyncio.get_running_loop().run_in_executor(None, owner.stop, close_store)

    app = FastAPI(
        title="cogstats lesson store",
        version=__version__,
        summary="The recommended lesson lifecycle for a live agent: select before a run, "
        "record after it.",
        lifespan=lifespan,
        docs_url=None,  # Swagger UI loads scripts from a CDN: not from a store's service
        redoc_url=None,
        openapi_url="/openapi.json",
    )
    app.router.route_class = _Route
    app.add_exception_handler(RequestValidationError, _validation_handler)
    app.add_exception_handler(HTTPException, _http_error_handler)
    app.add_middleware(
        Guard, token=None if token is None else token.encode("utf-8"), max_body=max_body
    )
    app.state.owner = owner
    _routes(app, owner)
    return app


def _routes(app: FastAPI, owner: _Owner) -> None:
    store = owner.store

    def health() -> dict[str, Any]:
        return {
            "status": "ok",
            "runs": store.runs,
            "lessons": store.lessons().height,
            "gate": store.settings.gate["name"],
            "preset": store.settings.preset,
            "version": __version__,
        }

    @app.get("/health", response_model=Health, tags=["store"])
    async def get_health() -> JSONResponse:
        """Return the store's size and settings (open without the token)."""
        return JSONResponse(await owner.call(health))

    @app.post("/lessons", response_model=LessonRow, responses=_ERRORS, tags=["store"])
    async def post_lesson(body: LessonIn) -> JSONResponse:
        """Add a lesson as a candidate; a repeat is a no-op.  Answers its row."""
        _check_id(body.id, "id")
        if body.family is not None and not isinstance(body.family, str):
            raise ApiError(
                422,
                f"family must be a string or null; got {type(body.family).__name__}",
                field="family",
                got=body.family,
            )
        payload = {"fact_ids": [body.id]}  # the ledger names a bad id's field fact_ids
        try:
            row = await owner.call(store.add, body.id, family=body.family, body=payload)
        except ApiError as exc:
            if exc.items[0]["field"] == "fact_ids":
                exc.items[0].update(field="id", loc=["body", "id"], got=_short(body.id))
            raise
        return JSONResponse(_finite(row))

    @app.post("/select", response_model=SelectionOut, responses=_ERRORS, tags=["store"])
    async def post_select(body: SelectIn | None = None) -> JSONResponse:
        """Choose the lessons for the coming run's prompt (nothing is written)."""
        context = None if body is None else _check_object(body.context, "context")
        sel = await owner.call(store.select, context=context)
        props = sel.propensities
        return JSONResponse(
            {"fact_ids": list(sel.fact_ids), "propensities": None if props is None else dict(props)}
        )

    def record(
        run_id: Any, score: Any, facts: list[Any], covs: dict[str, Any]
    ) -> tuple[list[dict[str, Any]], bool]:
        before = store.runs
        changes = store.record(run_id, score, facts, covs)
        return [c.to_dict() for c in changes], store.runs == before

    @app.post("/runs", response_model=RunOut, responses=_ERRORS, tags=["store"])
    async def post_run(body: RunIn) -> JSONResponse:
        """Record a finished run (durable when answered) and apply the gate's look.

        A retry with the same run id and content is answered as the first time (the
        header ``cogstats-repeat: true`` says so) and counted once; the same id with
        other content is 409.
        """
        args = _run_arguments(body)
        changes, repeat = await owner.call(record, *args, body=body)
        headers = {REPEAT_HEADER: "true"} if repeat else None
        return JSONResponse({"changes": changes}, headers=headers)

    @app.get("/lessons", response_model=list[LessonRow], tags=["store"])
    async def get_lessons() -> JSONResponse:
        """Every lesson: status, since, trials, the gate's last estimate and reason."""
        rows = await owner.call(lambda: store.lessons().to_dicts())
        return JSONResponse([_finite(r) for r in rows])

    @app.get("/events", response_model=list[Event], responses=_ERRORS, tags=["store"])
    async def get_events(
        after: int = Query(0, ge=0, description="the last event number seen (0: all)"),
    ) -> JSONResponse:
        """Return the status events after event ``after``, numbered from 1."""

        def events() -> list[dict[str, Any]]:
            rows = store.events().slice(after).to_dicts()
            return [{"event": after + k, **r} for k, r in enumerate(rows, start=1)]

        return JSONResponse(await owner.call(events))
