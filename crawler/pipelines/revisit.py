"""When each page is fetched again: the revisit policy applied to every page stored."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from crawler import defaults
from crawler import signals as crawler_signals
from crawler.context.crawl import CrawlContext
from crawler.context.outcomes import PageOutcomes
from crawler.freshness.revisit import FIRST, HotShare, RevisitPolicy, RevisitState, importance, revisit_phase
from crawler.items import Page

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)


class RevisitPipeline:
    """Compares each :class:`~crawler.items.Page` with its last visit (kept in its request,
    ``Page.last_visit``) and sets ``Page.revisit`` (first, changed, unchanged or
    not_modified) and ``Page.revisit_state``, the state its next visit starts from and
    when that falls due. The frontier scheduler keeps that state with the URL (told
    through ``PageOutcomes``); the store
    writes an unchanged page as a WARC revisit record, not a second copy.

    Runs after the content hashes (``ContentSeenMiddleware`` or ``ContentHashPipeline``)
    and before the store. Settings: ``REVISIT_INTERVAL``, ``REVISIT_MIN_INTERVAL``,
    ``REVISIT_MAX_INTERVAL``, ``REVISIT_WASTE_COST``, ``REVISIT_EVIDENCE``,
    ``REVISIT_HOT_SHARE``, ``REVISIT_JITTER``. Stats: ``revisit/changed``,
    ``revisit/unchanged``, ``revisit/not_modified``.
    """

    def __init__(self, policy: RevisitPolicy, hot: HotShare, stats: StatsCollector,
                 outcomes: PageOutcomes | None = None) -> None:
        self.policy = policy
        self.hot = hot
        self.stats = stats
        self.outcomes = outcomes if outcomes is not None else PageOutcomes()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RevisitPipeline:
        s = crawler.settings
        pipeline = cls(
            RevisitPolicy(s.getfloat("REVISIT_INTERVAL", defaults.REVISIT_INTERVAL),
                          s.getfloat("REVISIT_MIN_INTERVAL", defaults.REVISIT_MIN_INTERVAL),
                          s.getfloat("REVISIT_MAX_INTERVAL", defaults.REVISIT_MAX_INTERVAL),
                          s.getfloat("REVISIT_WASTE_COST", defaults.REVISIT_WASTE_COST),
                          s.getint("REVISIT_EVIDENCE", defaults.REVISIT_EVIDENCE),
                          s.getfloat("REVISIT_JITTER", defaults.REVISIT_JITTER)),
            HotShare(s.getfloat("REVISIT_HOT_SHARE", defaults.REVISIT_HOT_SHARE)),
            crawler.stats,
            CrawlContext.of(crawler).outcomes,
        )
        crawler.signals.connect(pipeline.page_captured, signal=crawler_signals.page_captured)
        return pipeline

    def page_captured(self, page: Page, response: Response) -> None:
        self.process_item(page)

    def process_item(self, item: Any) -> Any:
        if isinstance(item, Page) and item.revisit is None:
            previous = RevisitState.from_dict(item.last_visit)
            result, state = self.policy.visit(
                previous, item.fetched_at, item.status, item.content_sha256, item.etag,
                item.last_modified, importance(item.depth, item.sitemap_priority), self.hot.stretch(),
                revisit_phase(item.url))
            self.hot.record(previous is not None and self.policy.is_hot(state.interval))
            item.revisit, item.revisit_state = result, state.as_dict()
            self.outcomes.judged(item, item.revisit_state)
            if result != FIRST:
                self.stats.inc_value(f"revisit/{result}")
        return item
