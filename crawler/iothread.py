"""Blocking calls (a Redis client's) in a thread of their own, so that a server that stops
answering stalls that thread, never the reactor and the downloads on it."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from redis import RedisError
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet import defer, threads
from twisted.internet.interfaces import IReactorFromThreads
from twisted.python.threadpool import ThreadPool

T = TypeVar("T")


class IoThread:
    """Runs each call, in the order asked, in one thread of its own; results and errors
    come back on the reactor as Deferreds. ``waiting_for`` tells how long the running call
    has waited, so a stalled server shows long before its socket timeout."""

    def __init__(self, name: str) -> None:
        from twisted.internet import reactor

        self._pool = ThreadPool(minthreads=1, maxthreads=1, name=name)
        self._pool.start()
        self._since: float | None = None  # when the running call started
        # Its thread would keep the process alive: ended at shutdown if not before.
        reactor.addSystemEventTrigger("during", "shutdown", self.stop)

    def run(self, fn: Callable[..., T], *args: Any) -> defer.Deferred[T]:
        from twisted.internet import reactor

        return threads.deferToThreadPool(IReactorFromThreads(reactor), self._pool, self._timed, fn, *args)

    def _timed(self, fn: Callable[..., T], *args: Any) -> T:
        self._since = time.monotonic()
        try:
            return fn(*args)
        finally:
            self._since = None

    def waiting_for(self) -> float:
        """Seconds the running call has waited so far (0: none runs)."""
        since = self._since
        return 0.0 if since is None else time.monotonic() - since

    def stop(self) -> None:
        """Wait for the calls asked for, then end the thread (once)."""
        if self._pool.started:
            self._pool.stop()


class RedisStalled(RedisError):
    """Redis has not answered a call for ``REDIS_STALL_SECONDS``."""


class SparedCalls:
    """Redis calls that a component can do without for a while (a shared cache, a check):
    each runs in an ``IoThread`` and is given up on after ``stall`` seconds, and while one
    hangs every later call fails at once, both with ``RedisStalled`` (a ``RedisError``), so
    the component's own "Redis unreachable" path takes over and no page waits on Redis."""

    def __init__(self, name: str, stall: float) -> None:
        self.io = IoThread(name)
        self.stall = stall

    async def call(self, fn: Callable[..., T], *args: Any) -> T:
        return await maybe_deferred_to_future(self.start(fn, *args))

    def start(self, fn: Callable[..., T], *args: Any) -> defer.Deferred[T]:
        """``call`` for a caller that does not wait: a Deferred of the result."""
        from twisted.internet import reactor

        waited = self.io.waiting_for()
        if waited >= self.stall:
            return defer.fail(RedisStalled(f"no answer for {waited:.0f} s"))
        d = self.io.run(fn, *args)
        d.addTimeout(self.stall, reactor, onTimeoutCancel=self._stalled)
        return d

    def _stalled(self, result: Any, timeout: float) -> Any:
        raise RedisStalled(f"no answer for {timeout:.0f} s")

    def stop(self) -> None:
        self.io.stop()


async def spared_or_inline(calls: SparedCalls | None, fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)``: through ``calls`` off the reactor, or at once where the component has
    no thread (its state is local: SQLite on local disk or memory, which cannot stall)."""
    return fn(*args) if calls is None else await calls.call(fn, *args)
