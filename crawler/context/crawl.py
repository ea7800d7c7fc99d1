"""``CrawlContext``: what one crawl is, built once per crawler for all its components.

The crawl id (``crawl_id_of``), its key layout (``CrawlKeys``), the Redis client of its
shared state beside the frontier (robots.txt cache, content index, trap state, pushed
seeds) and the I/O threads that call it, and the pages' outcomes on their way to the
scheduler (``PageOutcomes``): each component asks ``CrawlContext.of(crawler)`` instead of
deriving them again. The frontier keeps Redis clients of its own (one per shard, with
no retry inside redis-py: ``crawler.scheduling.factory``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

from scrapy import signals

from crawler import defaults
from crawler.context.connection import first_redis, uses_redis
from crawler.context.crawl_id import crawl_id_of
from crawler.context.keys import CrawlKeys
from crawler.context.outcomes import PageOutcomes
from crawler.iothread import SparedCalls

if TYPE_CHECKING:
    from redis import Redis, RedisCluster
    from scrapy import Spider
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings


class CrawlContext:
    """One crawl's id, keys and shared Redis client; its Redis client is made at first use
    and closed when the engine stops (components do not close it)."""

    _of: WeakKeyDictionary[Crawler, CrawlContext] = WeakKeyDictionary()

    def __init__(self, crawler: Crawler, settings: BaseSettings, crawl_id: str) -> None:
        self.crawler = crawler
        self.settings = settings
        self.crawl_id = crawl_id
        self.keys = CrawlKeys(crawl_id)
        self.outcomes = PageOutcomes()
        self._redis: Redis | RedisCluster | None = None

    @classmethod
    def of(cls, crawler: Crawler, spider: Spider | None = None) -> CrawlContext:
        """The context of ``crawler``'s crawl, built at the first ask (``spider``: for an
        ask before ``crawler.spider`` is set)."""
        context = cls._of.get(crawler)
        if context is None:
            context = cls._of[crawler] = cls(crawler, crawler.settings, crawl_id_of(crawler, spider))
            crawler.signals.connect(context.close, signal=signals.engine_stopped)
        return context

    @property
    def uses_redis(self) -> bool:
        """Whether the crawl's state is shared in Redis (``REDIS_URL`` or scrapy-redis's settings)."""
        return uses_redis(self.settings)

    @property
    def redis(self) -> Redis | RedisCluster:
        """The crawl's client of its first Redis server (or of its cluster)."""
        if self._redis is None:
            self._redis = first_redis(self.settings)
        return self._redis

    def spared_calls(self, name: str) -> SparedCalls:
        """A new I/O thread ``name`` for one component's Redis calls, given up on after
        ``REDIS_STALL_SECONDS`` and stopped when the spider closes. One per component, so
        that a component whose server stalls holds no other's calls."""
        calls = SparedCalls(name, self.settings.getfloat("REDIS_STALL_SECONDS", defaults.REDIS_STALL_SECONDS))
        self.crawler.signals.connect(calls.stop, signal=signals.spider_closed)
        return calls

    def close(self) -> None:
        if self._redis is not None:
            self._redis.close()
            self._redis = None
