"""Content seen? A page whose text was seen under another URL is a duplicate."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from redis import RedisCluster
from redis.exceptions import RedisError
from scrapy import Request

from crawler import defaults
from crawler import signals as crawler_signals
from crawler.context.crawl import CrawlContext
from crawler.dedup.fingerprints import content_fingerprints
from crawler.dedup.index import ContentIndex, MemoryContentIndex, RedisContentIndex
from crawler.dedup.same import SameText
from crawler.dedup.split import cluster_content_index
from crawler.freshness.revisit import UNCHANGED, RevisitState, outcome
from crawler.frontier.outages import OutageNotices
from crawler.iothread import SparedCalls, spared_or_inline
from crawler.items import Page
from crawler.stages import StageClock
from crawler.urls.keys import url_host

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.signalmanager import SignalManager
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)


class ContentSeenMiddleware:
    """Spider middleware: marks pages whose text was seen before and does not follow
    their links.

    For each :class:`~crawler.items.Page` it sets ``content_sha256`` and ``simhash``;
    a page is a duplicate when an earlier page has the same SHA-256 (an exact copy:
    a mirror, one page under many URLs) or, with at least ``SIMHASH_MIN_WORDS`` words,
    a simhash within ``SIMHASH_MAX_DISTANCE`` bits (a near copy: a changed date, an ad
    block, small edits), found through a 4-table pigeonhole index. A duplicate gets
    ``duplicate_of`` (the first page's URL), is said with the ``page_duplicate`` signal,
    and the Requests its response yields are dropped. Pages without text are never
    duplicates (a script-only page says nothing of its links). Per-host duplicate rates
    are kept for the trap defences.

    The pages seen are kept in this process (``MemoryContentIndex``), or with
    ``REDIS_URL`` in Redis for all workers of the crawl (``RedisContentIndex``; the
    first URL where there are several; on a Redis Cluster ``ClusterContentIndex``, split
    over the frontier's shard tags), called from a thread of its own. When Redis
    cannot be reached, or has not answered for ``REDIS_STALL_SECONDS``, the page is
    taken as an original: it is stored and its links followed, so nothing is lost and
    no page waits on Redis.

    Stats: ``dedup/pages``, ``dedup/exact``, ``dedup/near``, ``dedup/links_dropped``,
    ``dedup/index_errors``.
    """

    def __init__(self, stats: StatsCollector, max_distance: int, min_words: int,
                 index: ContentIndex | None = None, calls: SparedCalls | None = None,
                 signals: SignalManager | None = None) -> None:
        self.stats = stats
        self.signals = signals  # page_duplicate is sent through it
        self.clock = StageClock(stats)
        self.same = SameText(max_distance, min_words)  # the crawl's one test of the same page
        self.index = index if index is not None else MemoryContentIndex(max_distance)
        self.calls = calls  # the index's calls off the reactor (a shared one), or inline
        self._index_down = False
        self._notices = OutageNotices()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ContentSeenMiddleware:
        s = crawler.settings
        max_distance = s.getint("SIMHASH_MAX_DISTANCE", defaults.SIMHASH_MAX_DISTANCE)
        index: ContentIndex | None = None
        calls = None
        context = CrawlContext.of(crawler)
        if context.uses_redis:
            client, crawl_id = context.redis, context.crawl_id
            if isinstance(client, RedisCluster):
                index = cluster_content_index(client, s, crawl_id, max_distance)
            else:
                index = RedisContentIndex(client, crawl_id, max_distance)
            calls = context.spared_calls("content-index-io")
        middleware = cls(crawler.stats, max_distance,
                         s.getint("SIMHASH_MIN_WORDS", defaults.SIMHASH_MIN_WORDS), index, calls,
                         crawler.signals)
        crawler.signals.connect(middleware.page_captured, signal=crawler_signals.page_captured)
        return middleware

    def page_captured(self, page: Page, response: Response) -> None:
        """A page captured from another spider's response is checked like a yielded one."""
        self.check(page, response)

    def duplicate_rate(self, host: str) -> float:
        """Share of a host's pages with text that were duplicates (0 when none seen)."""
        return self.index.duplicate_rate(host)

    def check(self, page: Page, response: Response | None = None) -> bool:
        """Fingerprint ``page``, record it, and tell whether it duplicates an earlier one.
        A revisit answered 304, or whose text is its last visit's, is no duplicate: it is
        the page itself, already in the index."""
        lookup = self._lookup(page)
        if lookup is None:
            return False
        try:
            return self._judge(page, self.index.check_and_add(*lookup), response)
        except RedisError as error:
            return self._unreachable(error)

    async def check_async(self, page: Page, response: Response | None = None) -> bool:
        """``check``, its index call off the reactor when the index is shared."""
        lookup = self._lookup(page)
        if lookup is None:
            return False
        try:
            match = await spared_or_inline(self.calls, self.index.check_and_add, *lookup)
            return self._judge(page, match, response)
        except RedisError as error:
            return self._unreachable(error)

    def _lookup(self, page: Page) -> tuple | None:
        """Fingerprint ``page``; the index call's arguments, or None: nothing to look up."""
        if page.status == 304:
            return None
        digest, page.simhash, words = content_fingerprints(page.text, self.clock)
        page.content_sha256 = digest
        self.stats.inc_value("dedup/pages")
        last = RevisitState.from_dict(page.last_visit)
        if not words or outcome(last, page.status, digest) == UNCHANGED:
            return None
        return (bytes.fromhex(digest), page.simhash, page.url, url_host(page.url),
                self.same.comparable(words))

    def _unreachable(self, error: RedisError) -> bool:
        """The page is taken as an original; said once per outage, not once per page, and at
        INFO when the outage flaps (``OutageNotices``): on a cluster, pages whose shards all
        answer pass now and then while a master is away."""
        self.stats.inc_value("dedup/index_errors")
        if not self._index_down:
            logger.log(self._notices.start(), "Content index unreachable, pages are taken as "
                       "originals until it answers (dedup/index_errors counts them): %s", error)
        self._index_down = True
        return False

    def _judge(self, page: Page, match: Any, response: Response | None) -> bool:
        """Record the index's answer on ``page`` and say a duplicate (``page_duplicate``);
        whether it is one."""
        if self._index_down:
            logger.info("Content index answers again")
            self._index_down = False
            self._notices.end()
        if match is None:
            return False
        page.duplicate_of, page.duplicate_kind = match.original, match.kind
        self.stats.inc_value(f"dedup/{match.kind}")
        logger.debug("%s duplicates %s (%s)", page.url, match.original, match.kind)
        if self.signals is not None:
            self.signals.send_catch_log(crawler_signals.page_duplicate, page=page, response=response,
                                        original=match.original, kind=match.kind)
        return True

    def _route(self, obj: Any, state: list[bool], response: Response) -> bool:
        """Whether to pass ``obj`` on; ``state[0]`` is "this response's page is a duplicate"."""
        if isinstance(obj, Page):
            state[0] = self.check(obj, response)
            return True
        if state[0] and isinstance(obj, Request):
            self.stats.inc_value("dedup/links_dropped")
            return False
        return True

    def process_spider_output(self, response: Response, result: Iterable[Any]) -> Iterator[Any]:
        state = [False]
        for obj in result:
            if self._route(obj, state, response):
                yield obj

    async def process_spider_output_async(
        self, response: Response, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        state = [False]
        async for obj in result:
            if isinstance(obj, Page):
                state[0] = await self.check_async(obj, response)
                yield obj
            elif self._route(obj, state, response):
                yield obj
