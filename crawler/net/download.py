"""The HTTP/1.1 download handler, with the downloads in flight ended when the crawl closes."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler
from scrapy.exceptions import IgnoreRequest
from scrapy.utils.asyncio import call_later, is_asyncio_available

from crawler import defaults
from crawler import signals as crawler_signals
from crawler.scheduling.codec import keep_lease

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)


class PromptDownloadHandler(HTTP11DownloadHandler):
    """Scrapy's HTTP/1.1 handler (``DOWNLOAD_HANDLERS`` for http and https) whose
    downloads still in flight ``DOWNLOAD_CLOSE_GRACE`` seconds after the crawl decided to
    close (``crawler.signals.crawl_closing``) are cancelled, their connections aborted.

    Scrapy waits for every download in flight before it closes: a stalled server held
    the end of a crawl for ``DOWNLOAD_TIMEOUT``. A cancelled request is not a failure of
    its URL: it keeps its lease, so the frontier hands it out again on resume
    (``download/cancelled_at_close``).
    """

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self.grace = crawler.settings.getfloat("DOWNLOAD_CLOSE_GRACE", defaults.DOWNLOAD_CLOSE_GRACE)
        self.stats = crawler.stats
        self.closing = False
        self._in_flight: set[asyncio.Task[Response]] = set()
        crawler.signals.connect(self.crawl_closing, signal=crawler_signals.crawl_closing)

    async def download_request(self, request: Request) -> Response:
        if not is_asyncio_available():  # a Twisted reactor of another kind: nothing to cancel with
            return await super().download_request(request)
        if self.closing:
            self._cancelled(request)
        task = asyncio.ensure_future(super().download_request(request))
        self._in_flight.add(task)
        try:
            return await task
        except asyncio.CancelledError:
            if not self.closing or not task.cancelled():
                raise
            self._cancelled(request)
        finally:
            self._in_flight.discard(task)
        raise AssertionError("unreachable")  # _cancelled raised

    def crawl_closing(self, reason: str) -> None:
        self.closing = True
        if self._in_flight:
            call_later(self.grace, self._cancel_in_flight)

    def _cancel_in_flight(self) -> None:
        if self._in_flight:
            logger.info("Closing: %d download(s) still in flight after %.0f s cancelled; their URLs "
                        "are fetched again on resume", len(self._in_flight), self.grace)
        for task in list(self._in_flight):
            task.cancel()

    def _cancelled(self, request: Request) -> None:
        self.stats.inc_value("download/cancelled_at_close")
        keep_lease(request)
        raise IgnoreRequest(f"cancelled at close: {request.url}")
