"""A background worker that runs only the latest request: debounced, newer supersedes older.

A control change submits a request; one worker thread waits until no newer request has
arrived for ``debounce`` seconds, then runs the newest one (the compiled kernel releases
the GIL, so the notebook's kernel stays responsive meanwhile).  Requests that arrive while
a run is in progress replace one another: only the newest waits, and when the run ends
its result is published only if no newer request is waiting (a superseded result is
dropped, never shown).  So however fast the controls move, at most one run is in
progress and one is waiting, and the last thing shown is the answer to the last change:
no run is left behind.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["LatestRunner", "RunnerStats"]


@dataclass
class RunnerStats:
    """Counters of a :class:`LatestRunner` (for tests and the latency benchmark).

    Attributes
    ----------
    submitted : int
        Requests submitted.
    started : int
        Runs started (superseded requests that never started are not counted).
    published : int
        Results published.
    dropped : int
        Runs that finished after a newer request arrived (their result was dropped).
    failed : int
        Runs that raised (the error is published instead of a result).
    """

    submitted: int = 0
    started: int = 0
    published: int = 0
    dropped: int = 0
    failed: int = 0


class LatestRunner:
    """Run ``work(request)`` in a background thread, newest request only.

    Parameters
    ----------
    work : callable
        ``work(request) -> result``; runs in the worker thread.
    publish : callable
        ``publish(request, result, error, seconds)`` with the result (or the exception,
        ``result`` then None) of the newest request and the seconds from its submission
        to the end of its run; runs in the worker thread.
    debounce : float
        Seconds without a newer request before a run starts.

    Examples
    --------
    >>> shown = []
    >>> runner = LatestRunner(lambda x: x * x, lambda req, res, err, s: shown.append(res),
    ...                       debounce=0.01)
    >>> for x in range(5):
    ...     _ = runner.submit(x)
    >>> runner.wait(5.0)
    True
    >>> shown[-1], runner.stats.started <= 2
    (16, True)
    >>> runner.close()
    """

    def __init__(
        self,
        work: Callable[[Any], Any],
        publish: Callable[[Any, Any, BaseException | None, float], None],
        *,
        debounce: float = 0.15,
    ) -> None:
        self._work = work
        self._publish = publish
        self.debounce = float(debounce)
        self.stats = RunnerStats()
        self._cond = threading.Condition()
        self._pending: tuple[int, Any, float] | None = None  # (generation, request, time)
        self._generation = 0
        self._busy = False
        self._closed = False
        self._thread = threading.Thread(target=self._loop, name="cogstats-tune", daemon=True)
        self._thread.start()

    def submit(self, request: Any) -> int:
        """Queue ``request`` in place of any waiting one; return its generation number."""
        with self._cond:
            if self._closed:
                raise RuntimeError("this runner is closed")
            self._generation += 1
            self._pending = (self._generation, request, time.perf_counter())
            self.stats.submitted += 1
            self._cond.notify_all()
            return self._generation

    @property
    def idle(self) -> bool:
        """Whether nothing is running or waiting."""
        with self._cond:
            return self._pending is None and not self._busy

    def wait(self, timeout: float | None = None) -> bool:
        """Block until idle (every request answered or dropped); False on timeout."""
        end = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while self._pending is not None or self._busy:
                left = None if end is None else end - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._cond.wait(left)
            return True

    def close(self) -> None:
        """Stop the worker thread after the run in progress (a waiting request is dropped)."""
        with self._cond:
            self._closed = True
            self._pending = None
            self._cond.notify_all()
        self._thread.join(timeout=60)

    def _loop(self) -> None:
        while True:
            with self._cond:
                while self._pending is None and not self._closed:
                    self._cond.wait()
                if self._closed:
                    return
                # debounce: wait until the newest request is `debounce` seconds old
                while self._pending is not None and not self._closed:
                    age = time.perf_counter() - self._pending[2]
                    if age >= self.debounce:
                        break
                    self._cond.wait(self.debounce - age)
                if self._closed or self._pending is None:
                    continue
                generation, request, submitted = self._pending
                self._pending = None
                self._busy = True
                self.stats.started += 1
            result: Any = None
            error: BaseException | None = None
            try:
                result = self._work(request)
            except Exception as exc:  # shown in the widget, not lost in a thread
                error = exc
            with self._cond:
                current = self._pending is None and generation == self._generation
                if not current:
                    self.stats.dropped += 1
            if current:
                try:
                    self._publish(request, result, error, time.perf_counter() - submitted)
                finally:
                    with self._cond:
                        self.stats.published += 1
                        self.stats.failed += error is not None
            with self._cond:
                self._busy = False
                self._cond.notify_all()
