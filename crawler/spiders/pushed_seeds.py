"""Seeds pushed into Redis while a crawl runs, polled off the reactor for the ``web`` spider."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from redis import Redis, RedisCluster, RedisError
from scrapy import signals
from scrapy.exceptions import DontCloseSpider
from twisted.internet.task import LoopingCall
from twisted.python.failure import Failure

from crawler import defaults
from crawler.context.crawl import CrawlContext
from crawler.iothread import IoThread
from crawler.scheduling.engine import EngineAdapter
from crawler.scheduling.timers import EarliestCall

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from crawler.spiders.web import WebSpider

logger = logging.getLogger(__name__)


class PushedSeeds:
    """Seeds pushed into Redis while a crawl runs: the list ``crawl:{<CRAWL_ID>}:seeds``
    (items: URLs, plain or as JSON strings), or scrapy-redis's ``REDIS_START_URLS_KEY``. Polled every
    ``SEEDS_POLL_INTERVAL`` seconds, off the reactor (a stalled Redis stalls no download);
    an idle worker waits ``SCHEDULER_IDLE_BEFORE_CLOSE`` seconds for more work (pushed seeds,
    or URLs other workers find) before it closes, counted from the end of its last fetch (any
    request that reached the downloader: pages, 304s, errors, redirects, robots.txt)."""

    def __init__(self, spider: WebSpider, client: Redis | RedisCluster, key: str, interval: float,
                 idle_before_close: float, wake_engine: Callable[[], object]) -> None:
        self.spider = spider
        self.redis = client
        self.key = key
        self.interval = interval
        self.idle_before_close = idle_before_close
        self._idle_since: float | None = None
        self._poll = LoopingCall(self.poll)
        self._io: IoThread | None = None
        self._reading = False  # a read on its way
        self._found = 0  # seeds read since the spider was last idle
        self._unreadable_said = False  # the outage was logged
        self._check_after_read = False  # an idle check waits for the read on its way
        # The engine asks again only at its 5 s heartbeat: woken when the idle wait ends,
        # a worker closes then, not up to 5 s later.
        self._idle_over = EarliestCall(wake_engine)

    @classmethod
    def from_crawler(cls, crawler: Crawler, spider: WebSpider) -> PushedSeeds:
        s = crawler.settings
        key = s.get("REDIS_START_URLS_KEY", defaults.REDIS_START_URLS_KEY)
        context = CrawlContext.of(crawler, spider)
        key = key % {"name": spider.name} if key else context.keys.key("seeds")
        seeds = cls(spider, context.redis, key,
                    s.getfloat("SEEDS_POLL_INTERVAL", defaults.SEEDS_POLL_INTERVAL),
                    s.getfloat("SCHEDULER_IDLE_BEFORE_CLOSE", defaults.SCHEDULER_IDLE_BEFORE_CLOSE),
                    EngineAdapter(crawler).wake)
        crawler.signals.connect(seeds.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(seeds.spider_idle, signal=signals.spider_idle)
        crawler.signals.connect(seeds.working, signal=signals.request_reached_downloader)
        crawler.signals.connect(seeds.spider_closed, signal=signals.spider_closed)
        return seeds

    def spider_opened(self) -> None:
        self._io = IoThread("pushed-seeds-io")
        self._poll.start(self.interval, now=False)

    def spider_closed(self) -> None:
        self._idle_over.cancel()
        if self._poll.running:
            self._poll.stop()
        if self._io is not None:
            self._io.stop()

    def poll(self) -> None:
        """Read the seeds waiting in Redis, off the reactor, one read at a time."""
        if self._reading or self._io is None:
            return
        self._reading = True
        d = self._io.run(self.redis.lpop, self.key, 1000)
        d.addCallbacks(self._read, self._unreadable)
        d.addBoth(self._read_over)

    def _read(self, items: list[bytes] | None) -> None:
        """Schedule the seeds read."""
        self._unreadable_said = False
        urls = []
        for item in items or []:
            try:
                urls.append(json.loads(item))
            except ValueError:
                urls.append(item.decode("utf-8", "replace"))
        if urls:
            self._idle_since = None
            self._found += len(urls)
            self.spider.add_seeds(urls)

    def _unreadable(self, failure: Failure) -> None:
        if not failure.check(RedisError):
            failure.raiseException()
        if not self._unreadable_said:  # once until a read succeeds
            self._unreadable_said = True
            logger.warning("Could not read pushed seeds from Redis: %s", failure.value)

    def _read_over(self, result: Any) -> Any:
        self._reading = False
        if self._check_after_read:  # an idle check waited for this read: ask again now
            self._check_after_read = False
            self._idle_over.in_seconds(0)
        return result

    def working(self) -> None:
        """A request reached the downloader (``request_reached_downloader``): the worker is busy,
        and its next idle wait starts anew. Any fetch counts, not only a parsed page: work that
        ends as a 304, an error or a redirect would otherwise leave an old start in place and
        close the worker early."""
        self._idle_since = None

    def spider_idle(self) -> None:
        found, self._found, reading = self._found, 0, self._reading
        self.poll()
        if found:  # seeds came
            raise DontCloseSpider
        if reading:  # seeds may be on their way (the poll's read, at the engine's heartbeat)
            self._check_after_read = True
            raise DontCloseSpider
        now = time.monotonic()
        if self._idle_since is None:
            self._idle_since = now
        waited = now - self._idle_since
        if waited < self.idle_before_close:
            self._idle_over.in_seconds(self.idle_before_close - waited)
            raise DontCloseSpider
