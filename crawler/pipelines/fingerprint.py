"""Content fingerprints of each page's text, where ContentSeenMiddleware is off."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from crawler import signals as crawler_signals
from crawler.dedup.fingerprints import content_fingerprints
from crawler.items import Page
from crawler.stages import StageClock

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response


class ContentHashPipeline:
    """Sets ``Page.content_sha256`` (SHA-256 hex of the whitespace-normalised text, so
    pages that differ only in markup or spacing hash alike) and ``Page.simhash``,
    unless ``ContentSeenMiddleware`` already did. Other items pass through untouched."""

    def __init__(self, clock: StageClock | None = None) -> None:
        self.clock = clock

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ContentHashPipeline:
        pipeline = cls(StageClock(crawler.stats))
        crawler.signals.connect(pipeline.page_captured, signal=crawler_signals.page_captured)
        return pipeline

    def page_captured(self, page: Page, response: Response) -> None:
        self.process_item(page)

    def process_item(self, item: Any) -> Any:
        if isinstance(item, Page) and item.content_sha256 is None:
            item.content_sha256, item.simhash, _ = content_fingerprints(item.text, self.clock)
        return item
