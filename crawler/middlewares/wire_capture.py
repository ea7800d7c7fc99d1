"""Capture each fetch as it went over the wire, for the WARC store."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from scrapy.http import HtmlResponse
from scrapy.responsetypes import responsetypes

from crawler import signals as crawler_signals
from crawler.items import Page
from crawler.store.wire import WIRE_META, exchange_of

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.settings import BaseSettings

_REDIRECTS = frozenset({301, 302, 303, 307, 308})


class WireCaptureMiddleware:
    """Downloader middleware that keeps each response as received and its request as sent
    (:class:`~crawler.store.wire.Exchange`), for the WARC ``request`` and ``response``
    records. Placed above Scrapy's ``HttpCompressionMiddleware`` (590) and the redirect
    middleware (600), so it sees the body before decompression and every 3xx; above the
    middlewares that set request headers, so it sees them as sent.

    A response a spider may make a page of (HTML, a status the spider is given) carries
    its exchange in ``request.meta`` to the page store, which archives it with the page,
    or as a revisit of the page it repeats. Any other response (robots.txt, a redirect,
    an error page or a non-HTML file the spider never sees) is sent at once with the
    ``fetch_captured`` signal and archived as it is. Stats: ``wire/pages``,
    ``wire/others``.
    """

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.settings: BaseSettings = crawler.settings

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> WireCaptureMiddleware:
        return cls(crawler)

    def process_response(self, request: Request, response: Response) -> Response:
        exchange = exchange_of(request, response)
        if self._page_bound(request, response):
            request.meta[WIRE_META] = exchange
            self.crawler.stats.inc_value("wire/pages")
        else:
            request.meta.pop(WIRE_META, None)
            self.crawler.stats.inc_value("wire/others")
            self.crawler.signals.send_catch_log(crawler_signals.fetch_captured, exchange=exchange)
        return response

    def _page_bound(self, request: Request, response: Response) -> bool:
        """Whether the response goes on to a spider that may store it as a page: HTML (or
        a 304 to a revisit) that is no robots.txt fetch, no redirect, and of a status
        Scrapy's HttpErrorMiddleware lets through."""
        meta = request.meta
        status = response.status
        if "download_stopped" in response.flags:  # cut at its headers: never a page
            return False
        if meta.get("dont_obey_robotstxt") or (status in _REDIRECTS and b"Location" in response.headers
                                               and not meta.get("dont_redirect")):
            return False
        if not _html(response) and status != 304:
            return False
        if 200 <= status < 300 or meta.get("handle_httpstatus_all"):
            return True
        spider = self.crawler.spider
        allowed = meta.get("handle_httpstatus_list")
        if allowed is None:
            allowed = getattr(spider, "handle_httpstatus_list", None) or self.settings.getlist(
                "HTTPERROR_ALLOWED_CODES")
        return status in {int(code) for code in allowed} or self.settings.getbool("HTTPERROR_ALLOW_ALL")


def _html(response: Response) -> bool:
    """Whether the spider will see HTML: Scrapy makes an encoded body a plain Response until
    it is decompressed, so the Content-Type says it here (none: Scrapy sniffs the body later)."""
    content_type = response.headers.get(b"Content-Type")
    if not content_type:
        return True
    return issubclass(responsetypes.from_content_type(content_type), HtmlResponse)


class UnstoredFetchMiddleware:
    """Spider middleware: a response that carried its exchange to the spider and came out
    as no page to store (``noindex``, past ``max_pages``, a soft 404, a callback that
    failed) is archived as it is, with the ``fetch_captured`` signal: every fetch gets
    its request and response records. Placed near the engine (50), so it sees what the
    other spider middlewares let through. Stats: ``wire/unstored``."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> UnstoredFetchMiddleware:
        return cls(crawler)

    def process_spider_output(self, response: Response, result: Iterable[Any]) -> Iterator[Any]:
        exchange, carried = response.meta.get(WIRE_META), False
        for obj in result:
            carried = carried or (isinstance(obj, Page) and obj.wire is exchange)
            yield obj
        self._leftover(response, carried)

    async def process_spider_output_async(self, response: Response,
                                          result: AsyncIterator[Any]) -> AsyncIterator[Any]:
        exchange, carried = response.meta.get(WIRE_META), False
        async for obj in result:
            carried = carried or (isinstance(obj, Page) and obj.wire is exchange)
            yield obj
        self._leftover(response, carried)

    def process_spider_exception(self, response: Response, exception: Exception) -> None:
        self._leftover(response, False)

    def _leftover(self, response: Response, carried: bool) -> None:
        exchange = response.meta.pop(WIRE_META, None)
        if exchange is None or carried:
            return
        self.crawler.stats.inc_value("wire/unstored")
        self.crawler.signals.send_catch_log(crawler_signals.fetch_captured, exchange=exchange)
