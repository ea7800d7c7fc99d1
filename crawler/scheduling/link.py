"""The scheduler's line to its frontier: every call off the reactor, claims buffered, writes
in order through the outbox, the frontier's counts kept from the last read."""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from typing import Any

from twisted.internet import defer
from twisted.python.failure import Failure

from crawler.frontier.api import Claim, Frontier, FrontierUnavailable
from crawler.scheduling.calls import calls_for
from crawler.scheduling.client import FrontierClient
from crawler.scheduling.outbox import Outbox
from crawler.scheduling.upkeep import Counts, PendingCounts, claim_due

logger = logging.getLogger(__name__)


class FrontierLink:
    """Calls ``frontier`` through ``calls_for(frontier)`` (an I/O thread for Redis), so that a
    stalled Redis stalls no download. Scrapy asks for requests synchronously: they come from
    ``claimed``, a buffer refilled in the background (``claim``), and ``wake_engine`` is
    called when claims come in. Writes go through ``client``, each a step of the ``outbox``;
    a call waiting longer than ``stall_seconds`` is an outage (``watch``); ``wake_in`` hears
    when to try again."""

    def __init__(self, frontier: Frontier, inc_stat: Callable[[str], None], wake_engine: Callable[[], None],
                 wake_in: Callable[[float], None], stall_seconds: float, calls: Any = None) -> None:
        self.frontier = frontier
        self.calls = calls or calls_for(frontier)
        # Drained: a "pending?" answered None while steps waited can be answered now.
        self.outbox = Outbox(self.calls, inc_stat, wake_in, drained=lambda: self.counts_read())
        self.client = FrontierClient(self.outbox)  # the frontier's changing calls, typed
        self.pending = PendingCounts()
        self.wake_engine = wake_engine
        self.wake_in = wake_in
        self.stall_seconds = stall_seconds
        self.claimed: deque[Claim] = deque()  # claimed in one batch, not yet handed out
        self.closed = False
        self._claiming: defer.Deferred | None = None  # the claim on its way
        self._claim_after = 0  # the outbox's steps that claim runs after
        # Hears each fresh read of the counts, and each time the outbox is drained.
        self.counts_read: Callable[[], None] = lambda: None


    def run(self, fn: Callable[..., Any], *args: Any) -> defer.Deferred:
        """``fn(*args)`` off the reactor (a read, or upkeep that need not be replayed)."""
        return self.calls.run(fn, *args)

    def failed(self, failure: Failure) -> None:
        """A call off the reactor failed: Redis is down (the outbox backs off), or a bug."""
        if failure.check(FrontierUnavailable):
            self.outbox.outage(failure.value)
        else:
            logger.error("Frontier call failed", exc_info=(failure.type, failure.value, failure.tb))

    def watch(self) -> None:
        """A frontier call waiting longer than ``REDIS_STALL_SECONDS``: Redis is stalled."""
        waited = self.calls.waiting_for()
        if waited >= self.stall_seconds:
            self.outbox.stalled(waited)

    # ---------------------------------------------------------------- claims

    def claim(self, limit: int) -> None:
        """Claim up to ``limit`` due hosts in one step, unless a claim is on its way or Redis
        is down; when none is due, ``wake_in`` hears when the next one is. A claim that finds
        none while steps written after it wait behind it (a fetch's report, which frees its
        host) wakes the engine to ask again: the engine's asks meanwhile were dropped, and its
        "none due, none queued" may no longer hold."""
        if self._claiming is not None or self.outbox.down or self.closed:
            return
        self._claim_after = self.outbox.sent
        self._claiming = d = self.calls.run(claim_due, self.frontier, limit)
        d.addCallbacks(self._claims_in, self._claim_failed)

    def _claims_in(self, result: tuple[list[Claim], float | None]) -> None:
        self._claiming = None
        self.outbox.answered()
        claims, wait = result
        if self.closed:  # came back after close: to their queues
            for claim in claims:
                self.client.requeue(claim.fp, claim.token, claim.request)
            return
        self.claimed.extend(claims)
        if claims or self.outbox.written != self._claim_after:
            self.wake_engine()
        elif wait is not None:
            self.wake_in(wait)

    def _claim_failed(self, failure: Failure) -> None:
        self._claiming = None
        self.failed(failure)

    async def give_back(self) -> None:
        """At close: the claims never handed out (those on their way too) go back to their queues."""
        self.closed = True
        if self._claiming is not None:
            await self._claiming
        while self.claimed:
            claim = self.claimed.popleft()
            self.client.requeue(claim.fp, claim.token, claim.request)

    # ---------------------------------------------------------------- counts

    def counts(self) -> Counts | None:
        """The frontier's counts as last read, if that read came after this worker's last
        write; else None (and a read starts off the reactor: ``counts_read`` hears of it).
        None too while claims wait here or steps in the outbox, or Redis is down."""
        # A claim on its way needs no say: what it may claim is in the counts as queued or leased.
        if self.claimed or not self.outbox.idle or self.outbox.down:
            return None
        written = self.outbox.written
        if self.pending.stale(written) and not self.pending.reading:
            started = self.pending.start()
            d = self.calls.run(Counts.read, self.frontier)
            d.addCallbacks(self._counts_in, self._counts_failed, callbackArgs=(written, started))
        return self.pending.counts if self.pending.holds(written) else None

    def _counts_in(self, counts: Counts, written: int, started: float) -> None:
        self.pending.update(counts, written, started)
        self.outbox.answered()
        self.counts_read()

    def _counts_failed(self, failure: Failure) -> None:
        self.pending.reading = False
        self.failed(failure)

    def read_with_counts(self, fn: Callable[..., Any], *args: Any) -> defer.Deferred:
        """``fn(*args)`` off the reactor, whose result carries fresh ``counts``: kept as the last read."""
        written, started = self.outbox.written, self.pending.start()

        def read(result: Any) -> Any:
            self.pending.update(result.counts, written, started)
            self.outbox.answered()
            self.counts_read()
            return result

        def failed(failure: Failure) -> Failure:
            self.pending.reading = False
            return failure

        return self.calls.run(fn, *args).addCallbacks(read, failed)
