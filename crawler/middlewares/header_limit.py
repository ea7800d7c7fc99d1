"""Responses whose header section is too large are refused as soon as it has arrived."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy import signals
from scrapy.exceptions import IgnoreRequest, NotConfigured, StopDownload

from crawler import defaults
from crawler.net.once import OncePerHost
from crawler.urls.keys import host_key

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Headers, Response
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)

_TOO_LARGE = "header_limit_size"  # request.meta: the size of the header section refused


def header_section_size(headers: Headers) -> int:
    """Bytes of a header section as sent: ``name: value`` and CRLF for every field line."""
    return sum((len(name) + 4) * len(values) + sum(map(len, values)) for name, values in headers.items())


class HeaderLimitMiddleware:
    """Downloader middleware that refuses a response whose header section is over
    ``DOWNLOAD_MAXHEADERSIZE`` bytes (64 KiB: the order of the limits of common servers
    and browsers); 0 turns it off. Its body is not read; it is counted in
    ``download/bad_response/headers_too_large``, said once per host, and skipped as done:
    the same headers would come again, so it is not retried. Such headers would
    otherwise be kept with the page and written into the WARC file.

    Twisted holds the header section while it arrives: a server sending headers
    without end is stopped by ``DOWNLOAD_TIMEOUT``, not by this limit.
    """

    def __init__(self, stats: StatsCollector, max_size: int) -> None:
        self.stats = stats
        self.max_size = max_size
        self._said = OncePerHost()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> HeaderLimitMiddleware:
        max_size = crawler.settings.getint("DOWNLOAD_MAXHEADERSIZE", defaults.DOWNLOAD_MAXHEADERSIZE)
        if max_size <= 0:
            raise NotConfigured
        middleware = cls(crawler.stats, max_size)
        crawler.signals.connect(middleware.headers_received, signal=signals.headers_received)
        return middleware

    def headers_received(self, headers: Headers, body_length: int, request: Request) -> None:
        size = header_section_size(headers)
        if size > self.max_size:
            request.meta[_TOO_LARGE] = size
            raise StopDownload(fail=False)

    def process_response(self, request: Request, response: Response) -> Response:
        size = request.meta.pop(_TOO_LARGE, None)
        if size is None:
            return response
        self.stats.inc_value("download/bad_response/headers_too_large")
        if self._said.first(host_key(request.url)):
            logger.warning("Skipped %s: its header section is %d bytes, over DOWNLOAD_MAXHEADERSIZE = %d "
                           "(said once per host)", request.url, size, self.max_size)
        raise IgnoreRequest(f"headers_too_large: {request.url}")
