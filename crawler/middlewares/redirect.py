"""Scrapy's redirect middlewares, with redirect targets that cannot be fetched counted
and skipped instead of raising from inside the middleware, and targets put through
the rules links go through."""

from __future__ import annotations

import codecs
import logging
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from scrapy.downloadermiddlewares.redirect import MetaRefreshMiddleware, RedirectMiddleware
from scrapy.exceptions import IgnoreRequest
from scrapy.http import HtmlResponse
from scrapy.utils.httpobj import urlparse_cached

from crawler.net.once import OncePerHost
from crawler.urls.keys import host_key
from crawler.urls.links import LinkFollower
from crawler.urls.normalize import normalize_url
from crawler.urls.rejects import rejection_reason

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.http import Response

logger = logging.getLogger(__name__)


class _Rejected(Exception):
    def __init__(self, reason: str, url: str) -> None:
        super().__init__(reason, url)
        self.reason = reason
        self.url = url


class _SkipBadTargets:
    """A redirect to a non-HTTP scheme (javascript:, mailto:, data:, file:), or to a
    malformed host, port or IPv6 literal, is counted in ``urls/rejected/<reason>``,
    logged once per reason (then at DEBUG) and dropped (``IgnoreRequest``). With the
    ``web`` spider a target goes through its link follower as a link does (normalised,
    learned parameters removed, scope, seen, URL length, repeated segments), counted
    by reason, and is fetched in its normal form.

    A redirect back to a URL of its own chain is a loop (``redirect/dropped/loop``), one
    past ``REDIRECT_MAX_TIMES`` a chain too long (``redirect/dropped/max_hops``): each
    dropped, counted and said once per host at INFO, not in silence at DEBUG."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._logged: set[str] = set()
        self._said = OncePerHost()

    def process_response(self, request: Request, response: Response, spider: Spider | None = None) -> Any:
        try:
            return super().process_response(request, response)  # type: ignore[misc]
        except _Rejected as rejected:
            reason, target = rejected.reason, rejected.url
        except ValueError:  # urljoin or w3lib on a Location with a malformed netloc
            target = (response.headers.get("Location") or b"").decode("latin-1")
            if target.startswith("//"):
                target = f"{urlparse_cached(request).scheme}:{target}"
            reason = rejection_reason(target)
        self.crawler.stats.inc_value(f"urls/rejected/{reason}")  # type: ignore[attr-defined]
        level = logging.DEBUG if reason in self._logged else logging.INFO
        self._logged.add(reason)
        logger.log(level, "Redirect from %s to %r skipped (%s)", request.url, target, reason)
        raise IgnoreRequest(f"redirect target rejected ({reason}): {target!r}")

    def _build_redirect_request(
        self, source_request: Request, response: Response, *, url: str, **kwargs: Any
    ) -> Request:
        target = normalize_url(url)
        if target is None:
            raise _Rejected(rejection_reason(url), url)
        chain = [*source_request.meta.get("redirect_urls", ()), source_request.url]
        if target in {normalize_url(u) for u in chain}:
            self._drop(source_request, "loop", f"back to {url} after {len(chain)} redirect(s)")
        if len(chain) > self.max_redirect_times:  # type: ignore[attr-defined]
            self._drop(source_request, "max_hops", f"more than REDIRECT_MAX_TIMES = "
                                                    f"{self.max_redirect_times} redirects")  # type: ignore[attr-defined]
        links = getattr(self.crawler.spider, "links", None)  # type: ignore[attr-defined]
        if isinstance(links, LinkFollower):
            accepted = links.accept(url)
            if accepted is None:
                raise IgnoreRequest(f"redirect target dropped by the link rules: {url!r}")
            url = accepted
        return super()._build_redirect_request(source_request, response, url=url, **kwargs)  # type: ignore[misc]


    def _drop(self, request: Request, why: str, detail: str) -> None:
        self.crawler.stats.inc_value(f"redirect/dropped/{why}")  # type: ignore[attr-defined]
        first = request.meta.get("redirect_urls", [request.url])[0]
        if self._said.first(host_key(request.url)):
            logger.info("Redirects from %s dropped: %s (said once per host)", first, detail)
        raise IgnoreRequest(f"redirect {why}: {first}")


class SafeRedirectMiddleware(_SkipBadTargets, RedirectMiddleware):
    """Scrapy's RedirectMiddleware (3xx ``Location``), skipping unfetchable targets."""


# Bytes that hold the first 4,096 characters Scrapy looks for a refresh in (UTF-8: up to 4
# bytes a character), a byte order mark included.
_REFRESH_SCAN = 4 * 4096 + 4
# Encodings that write every ASCII character as its own byte and nothing else as ASCII
# bytes: a page in one of them that has no "refresh" in its bytes has none in its text.
_ASCII_SAFE = frozenset({"utf-8", "ascii", "latin-1", "koi8-r", "koi8-u",
                         *(f"cp{n}" for n in range(1250, 1259)), *(f"iso8859-{n}" for n in range(2, 17))})


@lru_cache(maxsize=64)
def _ascii_safe(encoding: str) -> bool:
    try:
        return codecs.lookup(encoding).name in _ASCII_SAFE
    except LookupError:
        return False


def may_refresh(response: HtmlResponse) -> bool:
    """Whether the page may hold a ``<meta http-equiv=refresh>``: false when its first
    bytes have no "refresh" in any case, in an encoding where that settles it. Scrapy's
    check decodes the whole body to read its first 4,096 characters (~0.1 ms a 50 KB page)."""
    return not _ascii_safe(response.encoding) or b"refresh" in response.body[:_REFRESH_SCAN].lower()


class SafeMetaRefreshMiddleware(_SkipBadTargets, MetaRefreshMiddleware):
    """Scrapy's MetaRefreshMiddleware (``<meta http-equiv=refresh>``), skipping unfetchable
    targets, and pages that cannot hold a refresh without decoding them (``may_refresh``)."""

    def process_response(self, request: Request, response: Response, spider: Spider | None = None) -> Any:
        if isinstance(response, HtmlResponse) and not may_refresh(response):
            return response
        return super().process_response(request, response, spider)
