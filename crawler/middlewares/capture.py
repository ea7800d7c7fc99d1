"""Store the HTML pages of any spider, not only the ``web`` spider's."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.http import HtmlResponse
from twisted.python.failure import Failure

from crawler import defaults
from crawler import signals as crawler_signals
from crawler.extract.page import extract_page
from crawler.frontier.failure import FailureKind, FetchFailure
from crawler.scheduling.codec import mark_failed
from crawler.stages import StageClock
from crawler.store.wire import WIRE_META
from crawler.urls.normalize import UrlNormalizer

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response


class PageCaptureMiddleware:
    """Spider middleware: every HTML response a spider parses becomes a stored page.

    For spiders that do not yield :class:`~crawler.items.Page` items themselves (no
    ``yields_pages = True``), each HTML response that reaches the spider is made into a
    Page and sent with the ``page_captured`` signal to the content-seen check and the
    page store, so it is stored and deduplicated like the ``web`` spider's pages, while
    the spider's own items and requests pass through untouched to the project's own
    pipelines and feeds. A page that fails on the way is not acked (its URL is fetched
    again). Stats: ``capture/pages``, ``capture/errors``.
    """

    def __init__(self, crawler: Crawler, normalize: UrlNormalizer) -> None:
        self.crawler = crawler
        self.normalize = normalize
        self.text_mode = crawler.settings.get("TEXT_EXTRACTION", defaults.TEXT_EXTRACTION)
        self.clock = StageClock(crawler.stats)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> PageCaptureMiddleware:
        return cls(crawler, UrlNormalizer.from_settings(crawler.settings))

    def process_spider_input(self, response: Response) -> None:
        if getattr(self.crawler.spider, "yields_pages", False) or not isinstance(response, HtmlResponse):
            return
        url = self.normalize(response.url) or response.url
        page = extract_page(response, url, self.clock, self.text_mode)[0]
        self.crawler.stats.inc_value("capture/pages")
        results = self.crawler.signals.send_catch_log(crawler_signals.page_captured, page=page,
                                                      response=response)
        self.crawler.signals.send_catch_log(crawler_signals.page_processed, page=page, response=response)
        if any(isinstance(result, Failure) for _, result in results):
            # Logged by the signal manager; not stored: an attempt that failed.
            if response.request is not None:  # None only for a response made by hand
                mark_failed(response.request, FetchFailure(FailureKind.TRANSIENT,
                                                           "capture: a page component failed"))
            self.crawler.stats.inc_value("capture/errors")
        else:
            response.meta.pop(WIRE_META, None)  # its exchange was stored with the page
