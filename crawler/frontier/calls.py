"""Frontier calls off the reactor: each call's result comes back as a Deferred."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from twisted.internet import defer, threads
from twisted.python.threadpool import ThreadPool

from crawler.frontier.api import Frontier
from crawler.frontier.embedded import EmbeddedFrontier


class InlineCalls:
    """Runs each call at once on the reactor thread: the embedded frontier, whose SQLite is
    on local disk (it cannot stall as a server can) and whose connection belongs to the thread
    that opened it. Its Deferreds have fired when ``run`` returns."""

    def __init__(self, frontier: Frontier) -> None:
        self.frontier = frontier

    def run(self, fn: Callable[..., Any], *args: Any) -> defer.Deferred:
        return defer.maybeDeferred(fn, *args)

    def waiting_for(self) -> float:
        """Nothing waits: each call is over when ``run`` returns."""
        return 0.0

    def stop(self) -> None:
        """Nothing runs elsewhere."""


class ThreadCalls:
    """Runs each call, in the order asked, in one I/O thread of its own; results and errors
    come back on the reactor as Deferreds.

    One thread running the sync, contract-tested frontier rather than ``redis.asyncio``:
    every Redis backend (one server, shards, a Cluster) keeps a single implementation, and
    one thread keeps steps in order. A Redis that stops answering stalls this thread up to
    the socket timeout (``REDIS_SOCKET_TIMEOUT``), never the reactor."""

    def __init__(self, frontier: Frontier) -> None:
        self.frontier = frontier
        from twisted.internet import reactor

        self._pool = ThreadPool(minthreads=1, maxthreads=1, name="frontier-io")
        self._pool.start()
        self._since: float | None = None  # when the running call started
        # Its thread would keep the process alive: ended at shutdown if not at close.
        reactor.addSystemEventTrigger("during", "shutdown", self.stop)

    def run(self, fn: Callable[..., Any], *args: Any) -> defer.Deferred:
        from twisted.internet import reactor

        return threads.deferToThreadPool(reactor, self._pool, self._timed, fn, *args)

    def _timed(self, fn: Callable[..., Any], *args: Any) -> Any:
        self._since = time.monotonic()
        try:
            return fn(*args)
        finally:
            self._since = None

    def waiting_for(self) -> float:
        """Seconds the running call has waited so far (0: none runs): a stalled Redis shows here
        long before the socket timeout."""
        since = self._since
        return 0.0 if since is None else time.monotonic() - since

    def stop(self) -> None:
        """Wait for the calls asked for, then end the thread (once)."""
        if self._pool.started:
            self._pool.stop()


def calls_for(frontier: Frontier) -> InlineCalls | ThreadCalls:
    """The embedded frontier in-thread; every other (network) backend in the I/O thread."""
    return InlineCalls(frontier) if isinstance(frontier, EmbeddedFrontier) else ThreadCalls(frontier)
