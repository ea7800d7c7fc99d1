"""Frontier calls off the reactor: each call's result comes back as a Deferred."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from twisted.internet import defer

from crawler.frontier.api import Frontier
from crawler.iothread import IoThread


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


class ThreadCalls(IoThread):
    """Runs each call, in the order asked, in one I/O thread of its own; results and errors
    come back on the reactor as Deferreds.

    One thread running the sync, contract-tested frontier rather than ``redis.asyncio``:
    every Redis backend (one server, shards, a Cluster) keeps a single implementation, and
    one thread keeps steps in order. A Redis that stops answering stalls this thread up to
    the socket timeout (``REDIS_SOCKET_TIMEOUT``), never the reactor."""

    def __init__(self, frontier: Frontier) -> None:
        super().__init__("frontier-io")
        self.frontier = frontier


def calls_for(frontier: Frontier) -> InlineCalls | ThreadCalls:
    """A shared backend (on a server, which can stall) in the I/O thread; local state inline."""
    return ThreadCalls(frontier) if frontier.shared else InlineCalls(frontier)
