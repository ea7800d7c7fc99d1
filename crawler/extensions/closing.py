"""Say when the crawl decides to close, so that what is in flight can end promptly."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy import signals

from crawler import signals as crawler_signals

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


class ClosingAnnouncer:
    """Extension that sends ``crawler.signals.crawl_closing`` once, when the engine is
    asked to close the spider (``max_pages``, ``CLOSESPIDER_*``, a stop, SIGINT).

    Scrapy then waits for every download in flight before closing, up to
    ``DOWNLOAD_TIMEOUT`` for a stalled one, and 2.19 has no signal at that moment: the
    engine's public ``close_spider_async``, through which every way of closing goes, is
    wrapped to send one (``PromptDownloadHandler`` ends the downloads on it).
    """

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.sent = False

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ClosingAnnouncer:
        extension = cls(crawler)
        crawler.signals.connect(extension.engine_started, signal=signals.engine_started)
        return extension

    def engine_started(self) -> None:
        engine = self.crawler.engine
        close = engine.close_spider_async

        async def announced_close(*, reason: str = "cancelled") -> None:
            self.announce(reason)
            await close(reason=reason)

        engine.close_spider_async = announced_close  # type: ignore[method-assign]

    def announce(self, reason: str) -> None:
        if not self.sent:
            self.sent = True
            self.crawler.signals.send_catch_log(crawler_signals.crawl_closing, reason=reason)
