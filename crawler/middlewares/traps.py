"""The traps that end themselves, as Scrapy components: learned parameters, the
soft-404 probe and duplicate-rate demotion (rules in ``crawler.traps``)."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import AsyncIterator, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from redis import RedisError
from scrapy import Request, signals
from scrapy.exceptions import IgnoreRequest
from scrapy.utils.httpobj import urlparse_cached

from crawler import defaults
from crawler import signals as crawler_signals
from crawler.dedup.fingerprints import content_fingerprints
from crawler.frontier.connection import first_redis, uses_redis
from crawler.frontier.crawl_id import crawl_id_of
from crawler.items import Page, ProbeAnswer
from crawler.paths import embedded_frontier_path
from crawler.traps.content import Probe, counts_for_demotion, probe_url
from crawler.traps.state import Traps, TrapSettings
from crawler.traps.store import EmbeddedTrapStore, RedisTrapStore, TrapStore
from crawler.urls.keys import url_host

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)

#: A probe goes before its host's other URLs (its level is the first).
PROBE_PRIORITY = 1000


def trap_store(crawler: Crawler) -> TrapStore:
    """The crawl's trap state: in Redis with ``REDIS_URL``, else ``traps.sqlite`` beside
    the embedded frontier's file."""
    s = crawler.settings
    crawl_id = crawl_id_of(crawler)
    if uses_redis(s):
        return RedisTrapStore(first_redis(s), crawl_id)
    return EmbeddedTrapStore(embedded_frontier_path(s, crawl_id).with_name("traps.sqlite"))


class TrapsMiddleware:
    """Spider middleware, after content seen: learns each host's irrelevant parameters
    from the pages' texts (``TRAP_PARAM_EVIDENCE``), sends one soft-404 probe per host
    before its first URL (``TRAP_SOFT_404_PROBE``; the spider's ``parse_probe`` answers
    it) and marks pages that copy the probe's answer ``soft_404`` (stored as duplicates
    of the probe URL, links not followed), and demotes a host whose last
    ``TRAP_DUPLICATE_WINDOW`` pages were more than ``TRAP_DUPLICATE_RATE`` duplicates
    (signal ``host_demoted``, ``TRAP_DEMOTED_MARGIN``). Stats: see :class:`Traps`.
    """

    def __init__(self, crawler: Crawler, traps: Traps, probe: bool, margin: int) -> None:
        self.crawler = crawler
        self.traps = traps
        self.probe = probe
        self.margin = margin
        self._last_store_error = -math.inf

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> TrapsMiddleware:
        s = crawler.settings
        settings = TrapSettings(
            evidence=s.getint("TRAP_PARAM_EVIDENCE", defaults.TRAP_PARAM_EVIDENCE),
            window=s.getint("TRAP_DUPLICATE_WINDOW", defaults.TRAP_DUPLICATE_WINDOW),
            rate=s.getfloat("TRAP_DUPLICATE_RATE", defaults.TRAP_DUPLICATE_RATE),
            refresh=s.getfloat("TRAP_STATE_REFRESH", defaults.TRAP_STATE_REFRESH),
            max_distance=s.getint("SIMHASH_MAX_DISTANCE", defaults.SIMHASH_MAX_DISTANCE),
            min_words=s.getint("SIMHASH_MIN_WORDS", defaults.SIMHASH_MIN_WORDS),
        )
        store = trap_store(crawler)
        middleware = cls(crawler, Traps(store, crawler.stats, settings),
                         s.getbool("TRAP_SOFT_404_PROBE", defaults.TRAP_SOFT_404_PROBE),
                         s.getint("TRAP_DEMOTED_MARGIN", defaults.TRAP_DEMOTED_MARGIN))
        crawler.signals.connect(store.close, signal=signals.spider_closed)
        return middleware

    def _probe_for(self, request: Request) -> Request | None:
        """The probe of ``request``'s host, if it is the first this crawl sees."""
        parse_probe = getattr(self.crawler.spider, "parse_probe", None)
        if not self.probe or parse_probe is None or request.meta.get("trap_probe"):
            return None
        parts = urlparse_cached(request)
        if parts.scheme not in ("http", "https") or not self.traps.claim_probe(parts.hostname or ""):
            return None
        return Request(probe_url(f"{parts.scheme}://{parts.netloc}"), callback=parse_probe,
                       priority=PROBE_PRIORITY, meta={"trap_probe": True, "dont_redirect": True})

    def _page(self, page: Page) -> None:
        if page.content_sha256 is None:
            return
        words = len(page.text.split())
        probe = self.traps.soft_404(page.url, page.content_sha256, page.simhash or 0, words)
        if probe is not None:
            page.soft_404 = True
            page.duplicate_of, page.duplicate_kind = probe.url, "soft_404"
        elif words:
            self.traps.observe(page.url, page.content_sha256)
        duplicate = counts_for_demotion(page.fetched_url or page.url, page.duplicate_of, page.duplicate_kind)
        if self.traps.page_seen(page.url, duplicate):
            self.crawler.signals.send_catch_log(crawler_signals.host_demoted, host=url_host(page.url),
                                                margin=self.margin)

    def _answered(self, answer: ProbeAnswer) -> None:
        digest, simhash, _ = content_fingerprints(answer.text)
        self.traps.probe_answered(url_host(answer.url), Probe(answer.url, digest, simhash))

    def _route(self, obj: Any) -> Iterator[Any]:
        probe = None
        try:
            if isinstance(obj, ProbeAnswer):
                self._answered(obj)
            elif isinstance(obj, Page):
                self._page(obj)
            elif isinstance(obj, Request):
                probe = self._probe_for(obj)
        except RedisError as error:
            self.store_unreachable(error)
        if probe is not None:
            yield probe
        if not isinstance(obj, ProbeAnswer):
            yield obj

    def rewrite(self, url: str) -> str | None:
        """``Traps.rewrite``, or ``url`` as it is while the shared trap state is unreachable."""
        try:
            return self.traps.rewrite(url)
        except RedisError as error:
            self.store_unreachable(error)
            return url

    def store_unreachable(self, error: RedisError) -> None:
        """The shared trap state did not answer: the page or URL goes on unchecked
        (``traps/store_errors``), with one WARNING per outage (errors less than a minute
        apart are one outage)."""
        self.crawler.stats.inc_value("traps/store_errors")
        now = time.monotonic()
        if now - self._last_store_error > 60:
            logger.warning("Trap state unreachable, pages pass without trap checks until it answers "
                           "(traps/store_errors counts them): %s", error)
        self._last_store_error = now

    async def process_start(self, start: AsyncIterator[Any]) -> AsyncIterator[Any]:
        async for obj in start:
            for out in self._route(obj):
                yield out

    def process_spider_output(self, response: Response, result: Iterable[Any]) -> Iterator[Any]:
        for obj in result:
            yield from self._route(obj)

    async def process_spider_output_async(self, response: Response,
                                          result: AsyncIterator[Any]) -> AsyncIterator[Any]:
        async for obj in result:
            for out in self._route(obj):
                yield out


class LearnedParamsMiddleware:
    """Downloader middleware: a URL queued before its host learned an irrelevant
    parameter is fetched without it, or not at all when that form was fetched already
    (``traps/dropped/learned_params``)."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> LearnedParamsMiddleware:
        return cls(crawler)

    def process_request(self, request: Request, spider: Any = None) -> Request | None:
        middleware = self.crawler.get_spider_middleware(TrapsMiddleware)
        if middleware is None or request.meta.get("trap_probe"):
            return None
        url = middleware.rewrite(request.url)
        if url is None:
            raise IgnoreRequest(f"learned parameters: {request.url} was fetched as another spelling")
        return None if url == request.url else request.replace(url=url)
