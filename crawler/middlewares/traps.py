"""The traps that end themselves, as Scrapy components: learned parameters, the
soft-404 probe and duplicate-rate demotion (rules in ``crawler.traps``)."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from redis import RedisError
from scrapy import Request, signals
from scrapy.exceptions import IgnoreRequest
from scrapy.utils.httpobj import urlparse_cached
from twisted.python.failure import Failure

from crawler import defaults
from crawler import signals as crawler_signals
from crawler.context.crawl import CrawlContext
from crawler.dedup.fingerprints import content_fingerprints
from crawler.extract.html import word_count
from crawler.iothread import SparedCalls, spared_or_inline
from crawler.items import Page, ProbeAnswer
from crawler.paths import embedded_frontier_path
from crawler.traps.content import Probe, counts_for_demotion, probe_url
from crawler.traps.params import strip_params
from crawler.traps.state import Traps, TrapSettings
from crawler.traps.store import EmbeddedTrapStore, RedisTrapStore, TrapStore
from crawler.urls.keys import host_key, url_host

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)

#: A probe goes before its host's other URLs (its level is the first).
PROBE_PRIORITY = 1000


def trap_store(crawler: Crawler) -> TrapStore:
    """The crawl's trap state: in Redis with ``REDIS_URL``, else ``traps.sqlite`` beside
    the embedded frontier's file."""
    context = CrawlContext.of(crawler)
    if context.uses_redis:
        return RedisTrapStore(context.redis, context.crawl_id)
    state_dir = embedded_frontier_path(crawler.settings, context.crawl_id).parent
    return EmbeddedTrapStore(state_dir / "traps.sqlite")


class TrapsMiddleware:
    """Spider middleware, after content seen: learns each host's irrelevant parameters
    from the pages' texts (``TRAP_PARAM_EVIDENCE``), sends one soft-404 probe per host
    before its first URL (``TRAP_SOFT_404_PROBE``; the spider's ``parse_probe`` answers
    it) and marks pages that copy the probe's answer ``soft_404`` (stored as duplicates
    of the probe URL, links not followed), and demotes a host whose last
    ``TRAP_DUPLICATE_WINDOW`` pages were more than ``TRAP_DUPLICATE_RATE`` duplicates
    (signal ``host_demoted``, ``TRAP_DEMOTED_MARGIN``). Stats: see :class:`Traps`.

    With Redis the rules and their store run in a thread of their own (``calls``), given
    up after ``REDIS_STALL_SECONDS``: a stalled Redis never holds the reactor, and pages
    pass unchecked meanwhile. A link is rewritten with the learned parameters as last
    read (read again in the background once older than ``TRAP_STATE_REFRESH``); whether
    its rewritten form was fetched already is checked before its download
    (:class:`LearnedParamsMiddleware`).
    """

    def __init__(self, crawler: Crawler, traps: Traps, probe: bool, margin: int,
                 calls: SparedCalls | None = None) -> None:
        self.crawler = crawler
        self.traps = traps
        self.probe = probe
        self.margin = margin
        self.calls = calls
        self._last_store_error = -math.inf
        self._reading: set[str] = set()  # hosts whose learned parameters are being read

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
        calls = None
        context = CrawlContext.of(crawler)
        if context.uses_redis:
            calls = context.spared_calls("trap-state-io")  # stopped before the store closes
        middleware = cls(crawler, Traps(store, crawler.stats, settings),
                         s.getbool("TRAP_SOFT_404_PROBE", defaults.TRAP_SOFT_404_PROBE),
                         s.getint("TRAP_DEMOTED_MARGIN", defaults.TRAP_DEMOTED_MARGIN), calls)
        crawler.signals.connect(store.close, signal=signals.spider_closed)
        return middleware

    async def _probe_for(self, request: Request) -> Request | None:
        """The probe of ``request``'s host, if it is the first this crawl sees."""
        parse_probe = getattr(self.crawler.spider, "parse_probe", None)
        if not self.probe or parse_probe is None or request.meta.get("trap_probe"):
            return None
        parts = urlparse_cached(request)
        host = host_key(request.url)
        if parts.scheme not in ("http", "https") or self.traps.probed(host):
            return None
        if not await spared_or_inline(self.calls, self.traps.claim_probe, host):
            return None
        return Request(probe_url(f"{parts.scheme}://{parts.netloc}"), callback=parse_probe,
                       priority=PROBE_PRIORITY, meta={"trap_probe": True, "dont_redirect": True})

    def _page(self, page: Page) -> bool:
        """Apply the rules to ``page``; whether its host is to be (re)demoted."""
        if page.content_sha256 is None:
            return False
        words = word_count(page.text)
        probe = self.traps.soft_404(page.url, page.content_sha256, page.simhash or 0, words)
        if probe is not None:
            page.soft_404 = True
            page.duplicate_of, page.duplicate_kind = probe.url, "soft_404"
        elif words:
            self.traps.observe(page.url, page.content_sha256, page.simhash, words)
        duplicate = counts_for_demotion(page.fetched_url or page.url, page.duplicate_of, page.duplicate_kind)
        return self.traps.page_seen(page.url, duplicate)

    def _answered(self, answer: ProbeAnswer) -> None:
        digest, simhash, _ = content_fingerprints(answer.text)
        self.traps.probe_answered(url_host(answer.url), Probe(answer.url, digest, simhash))

    async def _route(self, obj: Any, response: Response | None = None) -> list[Any]:
        """What goes on in place of ``obj``: the host's probe first where it is due."""
        probe, demote = None, False
        try:
            if isinstance(obj, ProbeAnswer):
                await spared_or_inline(self.calls, self._answered, obj)
            elif isinstance(obj, Page):
                demote = await spared_or_inline(self.calls, self._page, obj)
            elif isinstance(obj, Request):
                probe = await self._probe_for(obj)
        except RedisError as error:
            self.store_unreachable(error)
        if isinstance(obj, Page) and obj.soft_404 and obj.duplicate_of is not None:
            self.crawler.signals.send_catch_log(crawler_signals.page_duplicate, page=obj, response=response,
                                                original=obj.duplicate_of, kind="soft_404")
        if demote:
            self.crawler.signals.send_catch_log(crawler_signals.host_demoted, host=url_host(obj.url),
                                                margin=self.margin)
        out = [] if probe is None else [probe]
        return out if isinstance(obj, ProbeAnswer) else [*out, obj]

    async def rewrite(self, url: str) -> str | None:
        """``Traps.rewrite``, or ``url`` as it is while the shared trap state is unreachable."""
        try:
            return await spared_or_inline(self.calls, self.traps.rewrite, url)
        except RedisError as error:
            self.store_unreachable(error)
            return url

    def rewrite_link(self, url: str) -> str | None:
        """A link without its host's learned parameters, for the spider's parse (sync, on the
        reactor). With a local store, ``Traps.rewrite`` itself; with Redis, the parameters as
        last read, with a read in the background when that is stale."""
        if self.calls is None:
            return self.traps.rewrite(url)
        host = url_host(url)
        learned, fresh = self.traps.known_learned(host)
        if not fresh and host not in self._reading:
            self._reading.add(host)
            read = self.calls.start(self.traps.host_params, host)
            read.addErrback(self._read_failed)
            read.addBoth(lambda _: self._reading.discard(host))
        return strip_params(url, learned) if learned else url

    def _read_failed(self, failure: Failure) -> None:
        failure.trap(RedisError)
        self.store_unreachable(failure.value)

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
            for out in await self._route(obj):
                yield out

    async def process_spider_output(self, response: Response,
                                    result: AsyncIterator[Any]) -> AsyncIterator[Any]:
        # Async only: Scrapy 2.13+ hands every middleware an async iterable.
        async for obj in result:
            for out in await self._route(obj, response):
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

    async def process_request(self, request: Request) -> Request | None:
        middleware = self.crawler.get_spider_middleware(TrapsMiddleware)
        if middleware is None or request.meta.get("trap_probe"):
            return None
        url = await middleware.rewrite(request.url)
        if url is None:
            raise IgnoreRequest(f"learned parameters: {request.url} was fetched as another spelling")
        return None if url == request.url else request.replace(url=url)
