"""The store is full: the crawl pauses, says so once, and goes on when it can write again."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from twisted.internet.task import LoopingCall

from crawler import signals as crawler_signals
from crawler.store.space import can_write, free_bytes

if TYPE_CHECKING:
    from scrapy.signalmanager import SignalManager
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)


class StoreSpaceWatch:
    """Whether the store has room. When a write fails for lack of it, or its filesystem has
    less than ``reserve`` bytes free before a page is stored (``has_room``), ``full``
    holds, one ERROR line names the store and its free space,
    ``crawler.signals.store_full`` is sent (the scheduler claims no URL meanwhile) and the
    store is probed every ``probe_interval`` seconds by writing to it; once a probe
    succeeds with twice the reserve free (not to pause again at the next page),
    ``crawler.signals.store_writable`` is sent and the crawl goes on. Still full after
    ``timeout`` seconds, ``close(reason)`` ends the crawl, which can be resumed later.
    Stats: ``store/full`` (times it filled), ``store/full_seconds``.

    The reserve is what the crawl's other files on that disk (the frontier's state, the
    page index, the stats) write while the crawl pauses: SQLite rolls back a commit that
    finds no room.
    """

    def __init__(self, directory: Path, stats: StatsCollector, signals: SignalManager,
                 probe_interval: float, timeout: float, close: Callable[[str], object],
                 reserve: int = 0) -> None:
        self.directory = directory
        self.stats = stats
        self.signals = signals
        self.probe_interval = probe_interval
        self.timeout = timeout
        self.close = close
        self.reserve = reserve
        self.full = False
        self._since = 0.0
        self._probe = LoopingCall(self.probe)

    def has_room(self) -> bool:
        """Whether a page may be stored now: the store is not full, and its filesystem has
        the reserve free (a ``statvfs`` call); under the reserve, the store becomes full."""
        if self.full:
            return False
        if self._free_under(self.reserve):
            self.became_full(f"under STORE_MIN_FREE = {self.reserve / 1e6:.0f} MB")
            return False
        return True

    def _free_under(self, size: int) -> bool:
        """Whether the store's filesystem has less than ``size`` bytes free (0: never)."""
        if not size:
            return False
        free = free_bytes(self.directory)
        return free is not None and free < size

    def became_full(self, reason: str) -> None:
        """The store has no room (``reason``: the write's error, or the reserve)."""
        if self.full:
            return
        self.full = True
        self._since = time.monotonic()
        self.stats.inc_value("store/full")
        free = free_bytes(self.directory)
        logger.error("Store %s has no room (%s; %s free): the crawl pauses, no page is stored and no URL "
                     "claimed; it goes on by itself once the store can be written (tried every %.0f s), "
                     "or closes after STORE_FULL_TIMEOUT = %.0f s", self.directory, reason,
                     "?" if free is None else f"{free / 1e6:.1f} MB", self.probe_interval, self.timeout)
        self.signals.send_catch_log(crawler_signals.store_full)
        if not self._probe.running:
            self._probe.start(self.probe_interval, now=False)

    def probe(self) -> None:
        waited = time.monotonic() - self._since
        if can_write(self.directory) and not self._free_under(2 * self.reserve):
            self._stop()
            self.full = False
            self.stats.inc_value("store/full_seconds", int(waited))
            logger.info("Store %s can be written again after %.0f s: the crawl goes on",
                        self.directory, waited)
            self.signals.send_catch_log(crawler_signals.store_writable)
        elif waited >= self.timeout:
            self._stop()
            logger.error("Store %s still has no room after %.0f s: the crawl closes; make room, then run "
                         "the same command again to resume it", self.directory, waited)
            self.close("store_full")

    def _stop(self) -> None:
        if self._probe.running:
            self._probe.stop()

    def stop(self) -> None:
        """The crawl ends: no more probes."""
        self._stop()
