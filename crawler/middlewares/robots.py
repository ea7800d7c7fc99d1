"""robots.txt under RFC 9309, fetched once per host before anything else on it."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING
from urllib.parse import urljoin, urlsplit

from scrapy import Request, signals
from scrapy.exceptions import (
    CannotResolveHostError,
    DownloadConnectionRefusedError,
    DownloadTimeoutError,
    IgnoreRequest,
    NotConfigured,
    StopDownload,
)
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet.defer import Deferred

from crawler import defaults
from crawler import signals as crawler_signals
from crawler.context.crawl import CrawlContext
from crawler.frontier.failure import FailureKind, FetchFailure
from crawler.middlewares.decompression import CUT_FLAG, DECODED_KEEP_PREFIX, DECODED_MAXSIZE
from crawler.robots.cache import RobotsCachePolicy, RobotsEntry, RobotsLru, SharedRobotsCache
from crawler.robots.rules import ROBOTS_MAX_BYTES, RobotsRules, product_token
from crawler.scheduling.codec import LEASE_META, mark_failed
from crawler.urls.normalize import normalize_url
from crawler.urls.rejects import rejection_reason

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)

MAX_REDIRECTS = 5  # RFC 9309 2.3.1.2: follow at least five consecutive redirects
_ROBOTS = "robots_fetch"  # request.meta: marks our own robots.txt requests


def _status_class(status: int) -> str:
    """"2xx", "4xx", "5xx"...; 429 keeps its number: it means unreachable, not unavailable."""
    return "429" if status == 429 else f"{status // 100}xx"


def _error_kind(error: Exception) -> str:
    """What a failed robots.txt download ran into, for ``robotstxt/error/<kind>``."""
    if isinstance(error, DownloadTimeoutError | TimeoutError):
        return "timeout"
    if isinstance(error, DownloadConnectionRefusedError | ConnectionRefusedError):
        return "refused"
    if isinstance(error, CannotResolveHostError):
        return "dns"
    if isinstance(error, IgnoreRequest):
        return "ignored"  # by a middleware: the address guard, offsite...
    return "connection"


class RobotsMiddleware:
    """Downloader middleware obeying robots.txt as RFC 9309 says (``ROBOTSTXT_OBEY``).

    Replaces Scrapy's RobotsTxtMiddleware, which parses a 5xx error page as rules,
    never refreshes, reads any size, ignores Crawl-delay and lets requests through
    while robots.txt is still being fetched. Here:

    - every request waits for its host's robots.txt; concurrent requests to a new
      host share one fetch; the rules are checked right before each fetch;
    - 2xx: parsed (first ``ROBOTS_MAX_BYTES``, the download is stopped there);
      3xx: up to 5 redirects followed, across hosts, applied to the original host
      (more: unavailable); 4xx: unavailable, all allowed; 5xx, 429, timeout or
      connection failure: unreachable, all disallowed, fetched again with backoff;
    - answers expire after ``ROBOTSTXT_CACHE_TTL`` (24 h); the parsed rules (not the
      bodies) of at most ``ROBOTSTXT_CACHE_SIZE`` hosts are kept, least recently used
      dropped first;
    - the group is chosen by the exact product token ``ROBOTSTXT_USER_AGENT``
      (default: from ``USER_AGENT``);
    - Crawl-delay (capped at ``ROBOTSTXT_CRAWL_DELAY_MAX``, off with
      ``ROBOTSTXT_CRAWL_DELAY = False``) is sent to the frontier as a floor on the
      host's gap (signal ``crawler.signals.robots_crawl_delay``);
    - the robots.txt fetch counts as the host's fetch: the request that waited for it
      goes back to the frontier for the politeness gap, when a frontier listens to
      ``crawler.signals.robots_fetched``;
    - with ``SITEMAP_FOLLOW``, the Sitemap lines are announced
      (``crawler.signals.sitemaps_found``) for the spider to follow.

    A request refused by the rules is dropped (``IgnoreRequest``), counted in
    ``robotstxt/forbidden`` and ``robotstxt/forbidden/<status class>``. A request to
    an unreachable host goes back to the frontier to wait for the next robots.txt
    attempt when a frontier listens to ``crawler.signals.host_unavailable``, until
    ``ROBOTSTXT_RETRY_TIMES`` attempts in a row have failed; after that a request the
    frontier handed out is marked failed for good (``robotstxt/given_up``): the URL and
    the host's queue become dead letters. Any other is dropped as forbidden. Each failed
    attempt is logged at WARNING and counted in ``robotstxt/error/<kind>`` (``5xx``,
    ``429``, ``timeout``, ``refused``, ``dns``, ``connection``, ``ignored``).
    """

    def __init__(self, crawler: Crawler, token: str, policy: RobotsCachePolicy,
                 crawl_delay_max: float | None, retry_times: int = defaults.ROBOTSTXT_RETRY_TIMES,
                 sitemap_follow: bool = False, clock: Callable[[], float] = time.time,
                 cache_size: int = defaults.ROBOTSTXT_CACHE_SIZE) -> None:
        self.crawler = crawler
        self.sitemap_follow = sitemap_follow
        self.token = token
        self.policy = policy
        self.retry_times = retry_times
        self.shared: SharedRobotsCache | None = None
        self.crawl_delay_max = crawl_delay_max
        self.clock = clock
        self._entries = RobotsLru(cache_size)
        self._waiting: dict[str, list[Deferred]] = {}

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RobotsMiddleware:
        s = crawler.settings
        if not s.getbool("ROBOTSTXT_OBEY"):
            raise NotConfigured
        token = product_token(s.get("ROBOTSTXT_USER_AGENT") or s.get("USER_AGENT") or "")
        if not token:
            raise NotConfigured("ROBOTSTXT_USER_AGENT (or USER_AGENT) gives no product token")
        honour = s.getbool("ROBOTSTXT_CRAWL_DELAY", defaults.ROBOTSTXT_CRAWL_DELAY)
        middleware = cls(
            crawler,
            token,
            RobotsCachePolicy(
                ttl=s.getfloat("ROBOTSTXT_CACHE_TTL", defaults.ROBOTSTXT_CACHE_TTL),
                retry=s.getfloat("ROBOTSTXT_RETRY_DELAY", defaults.ROBOTSTXT_RETRY_DELAY),
            ),
            s.getfloat("ROBOTSTXT_CRAWL_DELAY_MAX", defaults.ROBOTSTXT_CRAWL_DELAY_MAX) if honour else None,
            s.getint("ROBOTSTXT_RETRY_TIMES", defaults.ROBOTSTXT_RETRY_TIMES),
            s.getbool("SITEMAP_FOLLOW", defaults.SITEMAP_FOLLOW),
            cache_size=s.getint("ROBOTSTXT_CACHE_SIZE", defaults.ROBOTSTXT_CACHE_SIZE),
        )
        crawler.signals.connect(middleware._bytes_received, signal=signals.bytes_received)
        context = CrawlContext.of(crawler)
        if context.uses_redis:
            middleware.shared = SharedRobotsCache(context.redis, context.keys.key("robots:"),
                                                  context.spared_calls("robots-cache-io"))
        return middleware

    @property
    def stats(self) -> StatsCollector:
        return self.crawler.stats

    # ---------------------------------------------------------------- per request

    async def process_request(self, request: Request) -> Request | None:
        if request.meta.get("dont_obey_robotstxt"):
            return None
        parts = urlparse_cached(request)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            return None
        origin = f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"
        started = time.monotonic()
        entry, fetched = await self._entry(origin)
        if entry.rules.allowed(request.url):
            if fetched:
                # robots.txt was this host's fetch: the frontier holds the host for the gap
                # after it, and a URL it leased (LEASE_META) goes back to wait it out.
                self.crawler.signals.send_catch_log(
                    crawler_signals.robots_fetched, host=parts.hostname, seconds=time.monotonic() - started
                )
                if LEASE_META in request.meta:
                    return request.replace(dont_filter=True)
            return None
        if entry.rules.kind == "disallow_all" and entry.failures < self.retry_times:
            self.crawler.signals.send_catch_log(
                crawler_signals.host_unavailable, host=parts.hostname, until=entry.expires
            )
            if LEASE_META in request.meta:  # the frontier holds the host until then: back to it
                self.stats.inc_value("robotstxt/deferred")
                return request.replace(dont_filter=True)
        if entry.rules.kind == "disallow_all" and LEASE_META in request.meta:
            # Unreachable through every attempt: the frontier keeps the URL as a dead letter.
            self.stats.inc_value("robotstxt/given_up")
            mark_failed(request, FetchFailure(
                FailureKind.EXHAUSTED, f"RobotsUnreachable: robots.txt of {origin} gave no rules "
                                       f"({entry.status_class}) in {entry.failures} attempts"))
            raise IgnoreRequest(f"robots.txt of {origin} unreachable: {request.url} is a dead letter")
        self.stats.inc_value("robotstxt/forbidden")
        self.stats.inc_value(f"robotstxt/forbidden/{entry.status_class}")
        raise IgnoreRequest(f"Forbidden by robots.txt ({entry.status_class}): {request.url}")

    async def _entry(self, origin: str) -> tuple[RobotsEntry, bool]:
        """The host's current robots entry, fetching it once for all waiting requests;
        and whether this call fetched it."""
        entry = self._entries.get(origin)
        if entry is not None and entry.expires > self.clock():
            return entry, False
        if origin in self._waiting:
            waiter: Deferred[RobotsEntry] = Deferred()
            self._waiting[origin].append(waiter)
            return await maybe_deferred_to_future(waiter), False
        self._waiting[origin] = []
        shared = await self.shared.lookup(origin, self.token) if self.shared else None
        if shared is not None and shared.expires > self.clock():
            self._entries.put(origin, shared)  # another worker fetched it
            for waiter in self._waiting.pop(origin):
                waiter.callback(shared)
            return shared, False
        try:
            status_class, body, error = await self._fetch(origin)
        except Exception:  # a bug must not leave the waiting requests hanging
            logger.exception("robots.txt of %s: fetch failed", origin)
            status_class, body, error = "unreachable", None, "bug"
        rules = self._rules(status_class, body)
        entry = self.policy.after_fetch(entry or shared, rules, status_class, self.clock())
        self._entries.put(origin, entry)
        if self.shared:
            self.shared.keep(origin, entry, body)
        self._announce(origin, entry, rules, error)
        for waiter in self._waiting.pop(origin):
            waiter.callback(entry)
        return entry, True

    def _rules(self, status_class: str, body: bytes | None) -> RobotsRules | None:
        """The rules a fetch outcome means; None for unreachable (RFC 9309 2.3.1)."""
        if status_class == "2xx":
            return RobotsRules.parse(body or b"", self.token)
        if status_class in ("4xx", "redirects"):
            return RobotsRules.allow_all()
        return None

    def _announce(self, origin: str, entry: RobotsEntry, rules: RobotsRules | None,
                  error: str | None) -> None:
        self.stats.inc_value(f"robotstxt/fetched/{entry.status_class}")
        if rules is None:
            self.stats.inc_value(f"robotstxt/error/{error}")
            if entry.failures < self.retry_times:
                then = f"next attempt in {entry.expires - self.clock():.0f} s"
            else:
                then = f"its requests are dropped after {entry.failures} failed attempt(s)"
            logger.warning("robots.txt of %s unreachable (%s, attempt %d of %d): host disallowed, %s",
                           origin, error, entry.failures, max(1, self.retry_times), then)
            return
        if rules.encoding not in (None, "utf-8"):
            self.stats.inc_value(f"robotstxt/encoding/{rules.encoding}")
        if self.sitemap_follow and rules.sitemaps:
            self.crawler.signals.send_catch_log(
                crawler_signals.sitemaps_found, sitemaps=rules.sitemaps, robots_url=origin + "/robots.txt"
            )
        if self.crawl_delay_max is not None and rules.crawl_delay:
            delay = min(rules.crawl_delay, self.crawl_delay_max)
            host = urlsplit(origin).hostname  # as the frontier keys hosts: no port, no brackets
            self.crawler.signals.send_catch_log(crawler_signals.robots_crawl_delay, host=host, delay=delay)

    async def _fetch(self, origin: str) -> tuple[str, bytes | None, str | None]:
        """(status class, body when 2xx, error kind when unreachable) of ``origin``'s robots.txt."""
        url = origin + "/robots.txt"
        for _ in range(MAX_REDIRECTS + 1):
            request = Request(url, priority=1000, dont_filter=True, meta={
                _ROBOTS: 0, "dont_obey_robotstxt": True, "dont_redirect": True, "dont_retry": True,
                "handle_httpstatus_all": True, "download_maxsize": 0,
                # RFC 9309 2.5: what fits is parsed, however much the body decodes to.
                DECODED_MAXSIZE: ROBOTS_MAX_BYTES + 1, DECODED_KEEP_PREFIX: True,
            })
            try:
                response: Response = await self.crawler.engine.download_async(request)
            except Exception as error:  # timeout, refused, reset, DNS: unreachable
                logger.debug("robots.txt %s: %r", url, error)
                return "unreachable", None, _error_kind(error)
            status = response.status
            location = response.headers.get(b"Location") if 300 <= status < 400 else None
            if location is not None:
                target = self._redirect_target(url, location.decode("latin-1"))
                if target is None:
                    return "redirects", None, None  # nowhere to go: unavailable, as too many
                url = target
                continue
            if 200 <= status < 300:
                if CUT_FLAG in response.flags or len(response.body) > ROBOTS_MAX_BYTES:
                    self._truncated(origin, response)
                return "2xx", response.body[:ROBOTS_MAX_BYTES + 1], None
            if 400 <= status < 500 and status != 429:
                return "4xx", None, None
            return _status_class(status), None, _status_class(status)  # 5xx, 429, odd codes: unreachable
        return "redirects", None, None  # more than 5: unavailable (2.3.1.2)

    def _redirect_target(self, url: str, location: str) -> str | None:
        """Where a robots.txt redirect goes, or None (counted in ``urls/rejected/<reason>``)."""
        try:
            target = urljoin(url, location)
        except ValueError:  # a malformed IPv6 literal
            target = location
        if normalize_url(target) is None:
            self.stats.inc_value(f"urls/rejected/{rejection_reason(target)}")
            return None
        return target

    def _bytes_received(self, data: bytes, request: Request) -> None:
        """Stop a robots.txt download at ROBOTS_MAX_BYTES: a 1 GB file is not read."""
        received = request.meta.get(_ROBOTS)
        if received is None:
            return
        received += len(data)
        request.meta[_ROBOTS] = received
        if received > ROBOTS_MAX_BYTES:  # past the limit: parse knows the last line was cut
            raise StopDownload(fail=False)

    def _truncated(self, origin: str, response: Response) -> None:
        """A robots.txt over ROBOTS_MAX_BYTES, as sent or once decoded: its first
        ROBOTS_MAX_BYTES are parsed (RFC 9309 2.5); counted, and said once per fetch."""
        self.stats.inc_value("robotstxt/truncated")
        how = "decodes to" if CUT_FLAG in response.flags else "is"
        logger.info("robots.txt of %s %s more than %d bytes: its first %d bytes are parsed",
                    origin, how, ROBOTS_MAX_BYTES, ROBOTS_MAX_BYTES)

