"""Whether the page store and the frontier's state have room: while one has none, this worker
claims no URL."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from scrapy.utils.defer import deferred_from_coro
from twisted.python.failure import Failure

from crawler import defaults
from crawler import signals as crawler_signals
from crawler.frontier.api import FrontierFull

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.signalmanager import SignalManager
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)


class StoreRoom:
    """``full`` while the store cannot be written (``crawler.signals.store_full`` until
    ``store_writable``) or the frontier's last commit found no room (``state_full`` until
    ``state_committed``), so the scheduler hands out nothing (fetching pages that cannot be
    stored, or whose acks cannot be saved, would only spend their attempts); ``wake`` asks the
    engine again once both can be written. The frontier's pause is said in one ERROR line;
    still full after ``timeout`` seconds, ``close("frontier_full")`` ends the crawl, to be
    resumed later. Stats: ``frontier/state_full`` (times it filled),
    ``frontier/state_full_seconds``."""

    def __init__(self, signals: SignalManager, wake: Callable[[], object], stats: StatsCollector,
                 retry_interval: float, timeout: float, close: Callable[[str], object],
                 reloaded: Callable[[], object]) -> None:
        self.store_has_room = True
        self.state_full_since: float | None = None
        self.wake = wake
        self.stats = stats
        self.retry_interval = retry_interval
        self.timeout = timeout
        self.close = close
        self.reloaded = reloaded
        self.signals = signals
        signals.connect(self.store_full, signal=crawler_signals.store_full)
        signals.connect(self.store_writable, signal=crawler_signals.store_writable)

    @classmethod
    def from_crawler(cls, crawler: Crawler, wake: Callable[[], object], retry_interval: float,
                     reloaded: Callable[[], object]) -> StoreRoom:
        """With ``STORE_FULL_TIMEOUT``; ``reloaded`` hears that the frontier's leases are gone."""
        return cls(crawler.signals, wake, crawler.stats, retry_interval,
                   crawler.settings.getfloat("STORE_FULL_TIMEOUT", defaults.STORE_FULL_TIMEOUT),
                   lambda reason: deferred_from_coro(crawler.engine.close_spider_async(reason=reason)),
                   reloaded)

    @property
    def full(self) -> bool:
        return not self.store_has_room or self.state_full_since is not None

    def store_full(self) -> None:
        self.store_has_room = False

    def store_writable(self) -> None:
        self.store_has_room = True
        if not self.full:
            self.wake()

    def state_full(self, failure: Failure) -> None:
        """A commit of the frontier's state found no room (``FrontierFull``: it rolled back and
        reloaded, so the claims waiting to be handed out are ``reloaded``, and
        ``crawler.signals.frontier_reloaded`` sent); other failures pass."""
        failure.trap(FrontierFull)  # raises any other
        self.reloaded()
        self.signals.send_catch_log(crawler_signals.frontier_reloaded)
        now = time.monotonic()
        if self.state_full_since is None:
            self.state_full_since = now
            self.stats.inc_value("frontier/state_full")
            logger.error("Frontier state has no room (%s): its steps since its last commit are undone and "
                         "its leased URLs queued again (a page stored since may be stored twice); no URL is "
                         "claimed until it commits again (tried every %.1f s), or the crawl closes after "
                         "STORE_FULL_TIMEOUT = %.0f s", failure.value, self.retry_interval, self.timeout)
        elif now - self.state_full_since >= self.timeout:
            self.state_full_since = now  # said once: the next try is another timeout away
            logger.error("Frontier state still has no room after %.0f s: the crawl closes; make room, then "
                         "run the same command again to resume it", self.timeout)
            self.close("frontier_full")

    def state_committed(self, _: object = None) -> None:
        """A commit of the frontier's state succeeded: it has room again."""
        if self.state_full_since is None:
            return
        waited = time.monotonic() - self.state_full_since
        self.state_full_since = None
        self.stats.inc_value("frontier/state_full_seconds", int(waited))
        logger.info("Frontier state can be written again after %.0f s: the crawl goes on", waited)
        if not self.full:
            self.wake()
