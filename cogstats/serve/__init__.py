"""The lesson store as an HTTP service, for agents in any language (``cogstats serve``).

:func:`create_app` wraps an open :class:`~cogstats.store.LessonStore` in a FastAPI
application (JSON in and out, the OpenAPI schema at ``/openapi.json``); :func:`serve` runs
it on one uvicorn worker until ``SIGTERM``.  The endpoints: ``GET /health``,
``POST /lessons``, ``POST /select``, ``POST /runs``, ``GET /lessons``,
``GET /events?after=K``; docs/service.md says what each answers and what the service
promises.

Needs the ``serve`` extra (FastAPI, uvicorn).  Nothing here is imported by
``cogstats.ledger``, ``cogstats.estimators``, ``cogstats.gates`` or ``cogstats.store``;
this package sits above the store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cogstats._lazy import attach

if TYPE_CHECKING:
    from cogstats.serve.app import MAX_BODY, ApiError, create_app
    from cogstats.serve.models import MAX_ID_LENGTH
    from cogstats.serve.server import serve

_LAZY: dict[str, str] = {
    "ApiError": "cogstats.serve.app",
    "MAX_BODY": "cogstats.serve.app",
    "MAX_ID_LENGTH": "cogstats.serve.models",
    "create_app": "cogstats.serve.app",
    "serve": "cogstats.serve.server",
}

__all__ = sorted(_LAZY)

__getattr__, __dir__ = attach("cogstats.serve", _LAZY, globals())
