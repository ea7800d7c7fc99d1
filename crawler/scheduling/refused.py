"""The scheduler of a crawl that may not run: its state is held by another process."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy.core.scheduler import BaseScheduler
from scrapy.utils.asyncio import call_later
from scrapy.utils.defer import deferred_from_coro

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

#: The finish reason of a crawl refused so (``finish_reason`` in its stats).
REFUSED_REASON = "crawl_state_in_use"


class RefusedScheduler(BaseScheduler):
    """Holds nothing and closes the crawl as soon as it opens, with ``REFUSED_REASON``:
    a crawl started from a script (``CrawlerProcess``) whose crawl id another process runs
    ends with one ERROR line, said by whoever made this, instead of a traceback. ``scrapy
    crawl`` refuses such a crawl before it starts (exit 2)."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    def open(self, spider: Spider) -> None:
        engine = self.crawler.engine
        if engine is not None:
            call_later(0, lambda: deferred_from_coro(engine.close_spider_async(reason=REFUSED_REASON)))

    def has_pending_requests(self) -> bool:
        return False

    def enqueue_request(self, request: Request) -> bool:
        return False

    def next_request(self) -> Request | None:
        return None
