"""Content seen? A page whose text was seen under another URL is a duplicate."""

from __future__ import annotations

import hashlib
import logging
from collections import Counter
from collections.abc import AsyncIterator, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from scrapy import Request

from crawler import settings as defaults
from crawler.items import Page
from crawler.simhash import NearDupIndex, text_fingerprint
from crawler.text import normalize_whitespace
from crawler.urls import url_host

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)


def content_fingerprints(text: str) -> tuple[str, int, int]:
    """(SHA-256 hex of the whitespace-normalised text, its 64-bit simhash, its word count)."""
    normal = normalize_whitespace(text)
    digest = hashlib.sha256(normal.encode("utf-8")).hexdigest()
    return digest, text_fingerprint(normal), normal.count(" ") + 1 if normal else 0


class ContentSeenMiddleware:
    """Spider middleware: marks pages whose text was seen before and does not follow
    their links.

    For each :class:`~crawler.items.Page` it sets ``content_sha256`` and ``simhash``;
    a page is a duplicate when an earlier page has the same SHA-256 (an exact copy:
    a mirror, one page under many URLs) or, with at least ``SIMHASH_MIN_WORDS`` words,
    a simhash within ``SIMHASH_MAX_DISTANCE`` bits (a near copy: a changed date, an ad
    block, small edits), found through a 4-table pigeonhole index. A duplicate gets
    ``duplicate_of`` (the first page's URL) and the Requests its response yields are
    dropped. Pages without text are never duplicates (a script-only page says nothing
    of its links). Per-host duplicate rates are kept for the trap defences.

    Stats: ``dedup/pages``, ``dedup/exact``, ``dedup/near``, ``dedup/links_dropped``.
    """

    def __init__(self, stats: StatsCollector, max_distance: int, min_words: int) -> None:
        self.stats = stats
        self.min_words = min_words
        self.exact: dict[bytes, str] = {}
        self.near = NearDupIndex(max_distance)
        self.pages: Counter[str] = Counter()
        self.duplicates: Counter[str] = Counter()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ContentSeenMiddleware:
        s = crawler.settings
        return cls(
            crawler.stats,
            s.getint("SIMHASH_MAX_DISTANCE", defaults.SIMHASH_MAX_DISTANCE),
            s.getint("SIMHASH_MIN_WORDS", defaults.SIMHASH_MIN_WORDS),
        )

    def duplicate_rate(self, host: str) -> float:
        """Share of a host's pages that were duplicates (0 when none seen)."""
        pages = self.pages[host]
        return self.duplicates[host] / pages if pages else 0.0

    def check(self, page: Page) -> bool:
        """Fingerprint ``page``, record it, and tell whether it duplicates an earlier one."""
        digest, page.simhash, words = content_fingerprints(page.text)
        page.content_sha256 = digest
        host = url_host(page.url)
        self.pages[host] += 1
        self.stats.inc_value("dedup/pages")
        if not words:
            return False
        key = bytes.fromhex(digest)
        original = self.exact.get(key)
        kind = "exact"
        if original is None and words >= self.min_words:
            original, kind = self.near.find(page.simhash), "near"
        if original is None or original == page.url:
            self.exact.setdefault(key, page.url)
            if words >= self.min_words:
                self.near.add(page.simhash, page.url)
            return False
        page.duplicate_of, page.duplicate_kind = original, kind
        self.duplicates[host] += 1
        self.stats.inc_value(f"dedup/{kind}")
        logger.debug("%s duplicates %s (%s)", page.url, original, kind)
        return True

    def _route(self, obj: Any, state: list[bool]) -> bool:
        """Whether to pass ``obj`` on; ``state[0]`` is "this response's page is a duplicate"."""
        if isinstance(obj, Page):
            state[0] = self.check(obj)
            return True
        if state[0] and isinstance(obj, Request):
            self.stats.inc_value("dedup/links_dropped")
            return False
        return True

    def process_spider_output(self, response: Response, result: Iterable[Any]) -> Iterator[Any]:
        state = [False]
        for obj in result:
            if self._route(obj, state):
                yield obj

    async def process_spider_output_async(
        self, response: Response, result: AsyncIterator[Any]
    ) -> AsyncIterator[Any]:
        state = [False]
        async for obj in result:
            if self._route(obj, state):
                yield obj
