"""The address guard's downloader middleware: refuse before robots.txt, count, log once."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING
from urllib.parse import ParseResult, SplitResult, urlsplit
from urllib.request import getproxies

from scrapy import signals
from scrapy.exceptions import CannotResolveHostError, IgnoreRequest
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet.error import DNSLookupError

from crawler.net.addresses import canonical_host
from crawler.net.once import OncePerHost
from crawler.net.resolver import AddressRefused, installed, policy_from_settings

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler

    from crawler.net.addresses import AddressPolicy
    from crawler.net.resolver import GuardedResolver

logger = logging.getLogger(__name__)

_DEFAULT_PORTS = {"http": 80, "https": 443}


def origin(url: SplitResult | ParseResult) -> tuple[str, int] | None:
    """(host, port) of an http or https URL, the scheme's default port when none is named."""
    if url.scheme not in _DEFAULT_PORTS or not url.hostname:
        return None
    try:
        return url.hostname, url.port or _DEFAULT_PORTS[url.scheme]
    except ValueError:  # a port out of range
        return None


def _is_seed(request: Request) -> bool:
    """A request the spider started with (not a redirect hop from one)."""
    return bool(request.meta.get("is_start_request")) and not request.meta.get("redirect_urls")


class AddressGuardMiddleware:
    """Downloader middleware of the address guard (``NETWORK_GUARD``, ``NETWORK_ALLOW``).

    Before robots.txt and before any proxy, a request's host is resolved through the
    :class:`~crawler.net.resolver.GuardedResolver` and refused (``IgnoreRequest``)
    when no address of it is allowed, or when its scheme is not http or https. The
    seeds' origins (host and port) and configured proxies are allowed: another port of a
    seed's host goes through the guard like any address. The resolver checks again at
    connection time, on the addresses actually connected to; a refusal there (a DNS
    answer that changed) surfaces as CannotResolveHostError and is turned into
    ``IgnoreRequest`` here. Each refusal is counted as ``address_guard/refused/<reason>``
    and logged once per host at INFO.
    """

    def __init__(self, crawler: Crawler, policy: AddressPolicy, resolver: GuardedResolver | None) -> None:
        self.crawler = crawler
        self.policy = policy
        self.resolver = resolver
        self._said = OncePerHost()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> AddressGuardMiddleware:
        policy = policy_from_settings(crawler.settings)
        resolver = installed()
        if resolver is not None:
            resolver.policy = policy  # the crawl's settings, spider's included
        elif policy.enabled:
            logger.warning(
                "NETWORK_GUARD: TWISTED_DNS_RESOLVER is not crawler.net.resolver.GuardedResolver "
                "(or a subclass); connections are not checked"
            )
        if crawler.settings.getbool("HTTPPROXY_ENABLED"):
            for proxy in getproxies().values():
                if proxy and (proxy_host := urlsplit(proxy).hostname):
                    policy.allow_host(proxy_host)
        middleware = cls(crawler, policy, resolver)
        crawler.signals.connect(middleware.spider_opened, signal=signals.spider_opened)
        return middleware

    def spider_opened(self, spider: Spider) -> None:
        seeds = getattr(spider, "seed_urls", None) or getattr(spider, "start_urls", None) or []
        for url in seeds:
            seed = origin(urlsplit(url))
            if seed:
                self.policy.allow_origin(*seed)

    async def process_request(self, request: Request) -> None:
        if not self.policy.enabled:
            return
        parts = urlparse_cached(request)
        host = parts.hostname or ""
        where = origin(parts)
        if _is_seed(request) and where:
            self.policy.allow_origin(*where)
        if parts.scheme not in ("http", "https"):
            if not _is_seed(request):
                self._refuse(request, host or parts.scheme, "scheme")
            return
        proxy = request.meta.get("proxy")
        if proxy and urlsplit(proxy).hostname:
            self.policy.allow_host(urlsplit(proxy).hostname)
        port = where[1] if where else None
        if self.resolver is None or self.policy.allows_host(host, port):
            return
        try:
            await maybe_deferred_to_future(self.resolver.addresses(host, port))
        except AddressRefused as refused:
            self._refuse(request, host, refused.reason)
        except DNSLookupError:
            return  # the download fails with it, and is counted there

    def process_exception(self, request: Request, exception: Exception) -> None:
        if self.resolver is None or not isinstance(exception, CannotResolveHostError):
            return
        parts = urlparse_cached(request)
        where = origin(parts)
        host = parts.hostname or ""
        reason = self.resolver.refusal(host, where[1] if where else None)
        if reason:
            self._refuse(request, host, reason)

    def _refuse(self, request: Request, host: str, reason: str) -> None:
        self.crawler.stats.inc_value(f"address_guard/refused/{reason}")
        key = canonical_host(host)  # 2130706433 and 0x7f000001 are one host: 127.0.0.1
        if self._said.first(key):
            logger.info(
                "Address guard refused %s (%s): %s; allow it with NETWORK_ALLOW", host, reason, request.url
            )
        raise IgnoreRequest(f"address guard: {reason}: {request.url}")
