"""The scheduler of a crawl that may not run: its state is held by another process."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from scrapy.core.scheduler import BaseScheduler
from scrapy.utils.asyncio import call_later
from scrapy.utils.defer import deferred_from_coro

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler

    from crawler.frontier.api import CrawlStateInUse

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

    @classmethod
    def saying(cls, crawler: Crawler, crawl_id: str, refusal: CrawlStateInUse) -> RefusedScheduler:
        """The scheduler of crawl ``crawl_id``, refused by its frontier: said in one ERROR
        line that names the process holding it."""
        from crawler.commands import lock_holder, process_command  # the command line says the same

        holder = lock_holder(Path(refusal.state_dir) / "frontier.sqlite") or "another process"
        logger.error("Crawl %s is running in %s, nothing was fetched: wait for it to end, or set "
                     "CRAWL_ID to another id to run a second crawl of the same seeds", crawl_id,
                     process_command(holder))
        return cls(crawler)

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
