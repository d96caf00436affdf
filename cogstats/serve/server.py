"""Running the service on uvicorn: one worker, a log line at start and at stop.

:func:`serve` runs :func:`~cogstats.serve.app.create_app`'s application until ``SIGTERM``
or ``SIGINT``: uvicorn stops taking connections, lets the requests in flight finish, and
the application's shutdown snapshots the runs since the last snapshot, syncs the journal
and releases the store's lock; then one log line says so and :func:`serve` returns 0.
"""

from __future__ import annotations

import logging
import os
import signal
from typing import Any

import uvicorn

from cogstats._version import __version__
from cogstats.serve.app import create_app

__all__ = ["Server", "serve"]

log = logging.getLogger("cogstats.serve")


class Server(uvicorn.Server):
    """uvicorn's server, with a log line once it listens and the signal that stopped it.

    Parameters
    ----------
    config : uvicorn.Config
    store : LessonStore
        The store the application serves (named in the log line).
    guarded : bool
        Whether a token is needed (said in the log line).
    max_body : int
        The body limit (said in the log line).
    """

    def __init__(self, config: uvicorn.Config, store: Any, *, guarded: bool, max_body: int):
        super().__init__(config)
        self.store = store
        self.guarded = guarded
        self.max_body = max_body
        self.stop_signal = 0

    def handle_exit(self, sig: int, frame: Any) -> None:
        """Note the first signal, then uvicorn's graceful stop."""
        self.stop_signal = self.stop_signal or sig
        super().handle_exit(sig, frame)

    async def startup(self, sockets: Any = None) -> None:
        """Start, then log the address (the port chosen when asked for port 0)."""
        await super().startup(sockets=sockets)
        if not self.started:
            return
        host, port = self.servers[0].sockets[0].getsockname()[:2]
        store = self.store
        log.info(
            "started: store %s (%d runs, %d lessons, gate %s, preset %s) listening on "
            "http://%s:%d; token %s; max body %d bytes; fsync every %d record(s); "
            "cogstats %s, pid %d",
            store.path,
            store.runs,
            store.lessons().height,
            store.settings.gate["name"],
            store.settings.preset,
            f"[{host}]" if ":" in host else host,
            port,
            "required (GET /health open)" if self.guarded else "none (loopback only)",
            self.max_body,
            store.durability.sync_every,
            __version__,
            os.getpid(),
        )


def serve(
    store: Any,
    *,
    host: str,
    port: int,
    token: str | None,
    max_body: int,
    access_log: bool = False,
) -> int:
    """Serve ``store`` until SIGTERM or SIGINT; return the exit status (0: stopped cleanly).

    The store is closed when this returns, whatever happened.  Returns 1 when uvicorn
    could not start (e.g. the port is taken: its log line says why).
    """
    logging.captureWarnings(True)  # the store's warnings (a torn journal line cut): log lines
    try:
        app = create_app(store, token=token, max_body=max_body)
        config = uvicorn.Config(
            app,
            host=host,
            port=port,
            workers=1,  # the store allows one writer
            log_config=None,
            access_log=access_log,
            lifespan="on",
            server_header=False,
            timeout_graceful_shutdown=30,
        )
        server = Server(config, store, guarded=token is not None, max_body=max_body)
        # uvicorn raises the stopping signal again once it has stopped: with these
        # handlers in place that returns here (exit status 0) instead of killing Python
        previous = {
            sig: signal.signal(sig, lambda s, f: None) for sig in (signal.SIGTERM, signal.SIGINT)
        }
        try:
            server.run()
        except SystemExit:  # uvicorn could not start (its log line says why)
            log.error("error: the service did not start on %s:%s", host, port)
            return 1
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
    finally:
        store.close()
        logging.captureWarnings(False)
    how = signal.Signals(server.stop_signal).name if server.stop_signal else "shutdown"
    log.info(
        "stopped (%s): store %s, %d runs, %d lessons; journal synced, latest snapshot at "
        "run %d, lock released",
        how,
        store.path,
        store.runs,
        store.lessons().height,
        store.snapshot_runs,
    )
    return 0
