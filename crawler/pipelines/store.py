"""Write each page's raw HTML, cleaned text and metadata record to the page store."""

from __future__ import annotations

import json
import logging
import time
from typing import TYPE_CHECKING, Any

from crawler import settings as defaults
from crawler.items import Page
from crawler.store import LocalStore, SegmentWriter, open_store, segment_name

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)


def page_record(page: Page, html: dict, text: dict) -> dict:
    """The metadata record of a stored page (one JSON line in ``meta/``)."""
    return {
        "url": page.url,
        "status": page.status,
        "fetched_at": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(page.fetched_at))
        + f".{int(page.fetched_at % 1 * 1000):03d}Z",
        "depth": page.depth,
        "title": page.title,
        "content_type": page.content_type,
        "content_sha256": page.content_sha256,
        "etag": page.etag,
        "last_modified": page.last_modified,
        "links": page.links,
        "sitemap_lastmod": page.sitemap_lastmod,
        "html": html,
        "text": text,
    }


class PageStorePipeline:
    """Stores every :class:`~crawler.items.Page` under ``STORE_URI``.

    Layout (each file a series of gzip members, one per page; see the README):
    ``html/<segment>.html.gz`` raw bytes as received, ``text/<segment>.txt.gz``
    cleaned text in UTF-8, ``meta/<segment>.jsonl.gz`` one JSON record per page
    saying where the other two are. Files roll at ``STORE_ROLL_BYTES``; members
    are compressed at ``STORE_COMPRESSION_LEVEL``. Stats: ``store/pages``,
    ``store/html_bytes``, ``store/compressed_bytes``.
    """

    def __init__(self, store: LocalStore, stats: StatsCollector, roll_bytes: int, level: int) -> None:
        self.store = store
        self.stats = stats
        self.roll_bytes = roll_bytes
        self.level = level
        self._writers: dict[str, SegmentWriter] = {}

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> PageStorePipeline:
        settings = crawler.settings
        return cls(
            open_store(settings.get("STORE_URI", defaults.STORE_URI)),
            crawler.stats,
            settings.getint("STORE_ROLL_BYTES", defaults.STORE_ROLL_BYTES),
            settings.getint("STORE_COMPRESSION_LEVEL", defaults.STORE_COMPRESSION_LEVEL),
        )

    def open_spider(self) -> None:
        name = segment_name()
        self._writers = {
            kind: SegmentWriter(self.store, kind, name, suffix, self.roll_bytes, self.level)
            for kind, suffix in (("html", "html.gz"), ("text", "txt.gz"), ("meta", "jsonl.gz"))
        }
        logger.info("Storing pages under %s", self.store.root)

    def close_spider(self) -> None:
        for writer in self._writers.values():
            writer.close()

    def process_item(self, item: Any) -> Any:
        if not isinstance(item, Page):
            return item
        html = self._writers["html"].append(item.html)
        text = self._writers["text"].append(item.text.encode("utf-8"))
        item.stored = page_record(item, html.as_dict(), text.as_dict())
        line = json.dumps(item.stored, ensure_ascii=False, separators=(",", ":")) + "\n"
        meta = self._writers["meta"].append(line.encode("utf-8"))
        self.stats.inc_value("store/pages")
        self.stats.inc_value("store/html_bytes", len(item.html))
        self.stats.inc_value("store/compressed_bytes", html.length + text.length + meta.length)
        return item
