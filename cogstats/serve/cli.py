"""``cogstats serve STATE``: the lesson store as an HTTP service (FastAPI on uvicorn).

``add_arguments`` and ``run`` are the subcommand's entry in :data:`cogstats.cli.SUBCOMMANDS`.
This module imports neither FastAPI nor uvicorn until ``run`` starts the server (the
``serve`` extra), so the command line stays fast and a minimal install names the extra.

Start-up checks, each a one-line error (exit status 2): a token file that is missing,
empty, too short or holds characters a header cannot carry; a non-loopback ``--host``
without ``--token-file``; a store another process holds (its pid and host named); a store
created with other settings (each difference named).  Then one log line when the server
listens, one per error answer, one when it stops (``SIGTERM`` or ``SIGINT``: the requests
in flight finish, the runs since the last snapshot are snapshotted, the journal is synced
and the lock released).
"""

from __future__ import annotations

import argparse
import ipaddress
import logging
import os
import stat
import sys
from pathlib import Path
from typing import Any

from cogstats._validation import ParameterError

__all__ = ["HELP", "MIN_TOKEN_LENGTH", "add_arguments", "is_loopback", "read_token", "run"]

HELP = "serve a lesson store over HTTP (JSON, OpenAPI at /openapi.json) for agents in any language"

#: the shortest token taken from a --token-file (characters)
MIN_TOKEN_LENGTH = 16

log = logging.getLogger("cogstats.serve")


def add_arguments(p: argparse.ArgumentParser, gate: str | None = None) -> None:
    """Add the ``serve`` subcommand's arguments to ``p`` (``gate`` is unused).

    Examples
    --------
    >>> p = argparse.ArgumentParser(prog="cogstats serve")
    >>> add_arguments(p)
    >>> a = p.parse_args(["state/", "--max-facts", "12", "--candidate-slots", "6"])
    >>> a.host, a.port, a.max_facts, a.token_file
    ('127.0.0.1', 8765, 12, None)
    """
    p.add_argument("state", help="the store's folder (created with the settings below if new)")
    p.add_argument(
        "--preset",
        help="the store's preset (default for a new store: recommended; an existing store "
        "keeps its own, and other settings given are refused, naming the difference)",
    )
    p.add_argument("--max-facts", type=int, help="the prompt's cap on lessons")
    p.add_argument("--candidate-slots", type=int, help="the prompt's slots for candidates")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8765, help="port (default 8765; 0: any free)")
    p.add_argument(
        "--token-file",
        help="file holding the bearer token every request but GET /health must carry; "
        "needed to bind a non-loopback address",
    )
    p.add_argument(
        "--max-body",
        type=int,
        default=1 << 20,
        help="largest request body in bytes (default 1 MiB; larger: 413)",
    )
    p.add_argument("--seed", type=int, help="seed of /select's draws (default: fresh entropy)")
    p.add_argument(
        "--sync-every",
        type=int,
        default=1,
        help="fsync the journal every N records (default 1: every run is on disk when "
        "answered; N > 1 may lose the last N-1 answered runs in a machine crash)",
    )
    p.add_argument(
        "--snapshot-every",
        type=int,
        default=1000,
        help="snapshot the statistics every N runs (default 1000: a restart replays at most "
        "that many)",
    )
    p.add_argument(
        "--log-level",
        default="info",
        choices=["debug", "info", "warning", "error"],
        help="default info: a line per start, stop and error answer",
    )
    p.add_argument("--access-log", action="store_true", help="also log every request")


def is_loopback(host: str) -> bool:
    """Return whether ``host`` is a loopback address (or ``localhost``).

    Examples
    --------
    >>> is_loopback("127.0.0.1"), is_loopback("::1"), is_loopback("0.0.0.0")
    (True, True, False)
    """
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def read_token(path: str | os.PathLike[str]) -> str:
    r"""Read the bearer token from ``path`` (surrounding whitespace dropped).

    Raises
    ------
    ParameterError
        When the file cannot be read, or the token is shorter than
        :data:`MIN_TOKEN_LENGTH` characters or holds characters other than visible ASCII.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "token"
    >>> _ = p.write_text("0123456789abcdef0123\n")
    >>> read_token(p)
    '0123456789abcdef0123'
    """
    where = Path(path)
    try:
        raw = where.read_bytes()
    except OSError as exc:
        raise ParameterError(
            f"--token-file {str(where)!r} cannot be read ({exc.strerror})"
        ) from None
    try:
        token = raw.decode("ascii").strip()
    except UnicodeDecodeError:
        raise ParameterError(
            f"--token-file {str(where)!r} must hold visible ASCII characters only"
        ) from None
    if not (token.isprintable() and " " not in token):
        raise ParameterError(
            f"--token-file {str(where)!r}: the token must be visible ASCII characters without "
            "spaces (it travels in a header)"
        )
    if len(token) < MIN_TOKEN_LENGTH:
        raise ParameterError(
            f"--token-file {str(where)!r} holds a token of {len(token)} characters; at least "
            f"{MIN_TOKEN_LENGTH} are needed (e.g. `openssl rand -hex 32 > {where}`)"
        )
    mode = where.stat().st_mode
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        log.warning(
            "the token file %s is readable by other users (mode %o): chmod 600 it",
            where,
            stat.S_IMODE(mode),
        )
    return token


class _Stderr(logging.StreamHandler):
    """A handler writing to the ``sys.stderr`` of the moment (a test may replace it)."""

    @property
    def stream(self) -> Any:
        """Return the current standard error."""
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass


def _logging(level: str) -> None:
    handler = _Stderr()
    handler.setFormatter(
        logging.Formatter(
            "%(asctime)s cogstats serve[%(process)d] %(levelname)s %(message)s",
            datefmt="%Y-%m-%dT%H:%M:%S%z",
        )
    )
    own = ("cogstats.serve", "uvicorn", "uvicorn.access", "py.warnings")
    for name in (*own, "uvicorn.error"):
        logger = logging.getLogger(name)
        logger.handlers[:] = [handler] if name in own else []
        logger.propagate = name not in own
    logging.getLogger("cogstats.serve").setLevel(level.upper())
    # uvicorn's own lines (a bind failure, a protocol error) at warning and above; its
    # access lines (--access-log) at info
    logging.getLogger("uvicorn").setLevel(max(logging.WARNING, logging.getLevelName(level.upper())))
    logging.getLogger("uvicorn.access").setLevel(logging.INFO)


def _open_store(args: argparse.Namespace) -> Any:
    from cogstats.store import Durability, LessonStore

    durability = Durability(sync_every=args.sync_every, snapshot_every=args.snapshot_every)
    given = {
        k: v
        for k, v in (
            ("preset", args.preset),
            ("max_facts", args.max_facts),
            ("candidate_slots", args.candidate_slots),
        )
        if v is not None
    }
    if not given and not (Path(args.state) / "store.json").exists():
        given = {"preset": "recommended"}
    elif given and "preset" not in given:
        given["preset"] = "recommended"
    return LessonStore.open(args.state, seed=args.seed, durability=durability, **given)


def run(args: argparse.Namespace) -> int:
    """Start the service; return its exit status when it stops (0 after SIGTERM/SIGINT)."""
    _logging(args.log_level)
    token = None if args.token_file is None else read_token(args.token_file)
    if token is None and not is_loopback(args.host):
        raise ParameterError(
            f"--host {args.host!r} is not a loopback address: a service reachable from "
            "other machines needs --token-file (a file holding a secret of at least "
            f"{MIN_TOKEN_LENGTH} characters); or bind 127.0.0.1"
        )
    if args.max_body < 1:
        raise ParameterError(f"--max-body must be a positive number of bytes; got {args.max_body}")
    from cogstats.serve.server import serve

    try:
        store = _open_store(args)
    except OSError as exc:  # StateWriteError: the folder cannot be written
        raise ParameterError(str(exc)) from None
    return serve(
        store,
        host=args.host,
        port=args.port,
        token=token,
        max_body=args.max_body,
        access_log=args.access_log,
    )
