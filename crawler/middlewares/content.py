"""Stop downloads that are not HTML, or too large, as soon as their headers arrive."""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING

from scrapy import signals
from scrapy.exceptions import IgnoreRequest, StopDownload

from crawler import defaults

_MIME = re.compile(r"[a-z0-9][a-z0-9!#$&^_.+-]{0,63}/[a-z0-9][a-z0-9!#$&^_.+-]{0,63}")


def mime_type(content_type: bytes | None) -> str:
    """A Content-Type's MIME type for a stat name: ``none`` when absent, ``other`` when
    it is not one (a hostile server's header makes no unbounded stat name)."""
    if not content_type:
        return "none"
    mime = content_type.split(b";", 1)[0].strip().lower().decode("latin-1")
    return mime if _MIME.fullmatch(mime) else "other"

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Headers, Response
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)

_STOPPED = "html_only_stopped"


class HtmlOnlyMiddleware:
    """Downloader middleware that keeps only HTML pages of a bearable size.

    On ``headers_received`` it reads Content-Type and Content-Length and stops a
    download that is not one of ``HTML_CONTENT_TYPES`` or larger than
    ``DOWNLOAD_MAXSIZE`` before its body is read; the stopped 2xx response is then
    dropped (``IgnoreRequest``), while a stopped 3xx/4xx/5xx goes on to the
    redirect, retry and error middlewares, which need only its headers. A response
    without Content-Type is let through (Scrapy sniffs its body, and the ``web``
    spider skips what is not HTML).

    Requests with ``meta["html_only"] = False`` and robots.txt requests
    (``dont_obey_robotstxt``) are never stopped. Stats: ``content/dropped/not_html``,
    ``content/dropped/too_large``, and ``content/dropped_type/<MIME type>`` for each.
    """

    def __init__(self, stats: StatsCollector, content_types: list[str], max_bytes: int) -> None:
        self.stats = stats
        self.content_types = tuple(t.lower().encode("ascii") for t in content_types)
        self.max_bytes = max_bytes

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> HtmlOnlyMiddleware:
        settings = crawler.settings
        middleware = cls(
            crawler.stats,
            settings.getlist("HTML_CONTENT_TYPES", defaults.HTML_CONTENT_TYPES),
            settings.getint("DOWNLOAD_MAXSIZE"),
        )
        crawler.signals.connect(middleware.headers_received, signal=signals.headers_received)
        return middleware

    @staticmethod
    def _applies(request: Request) -> bool:
        meta = request.meta
        return meta.get("html_only", True) and not meta.get("dont_obey_robotstxt")

    def rejection(self, headers: Headers) -> str | None:
        """Why a response with these headers is not kept ('not_html', 'too_large') or None."""
        content_type = headers.get(b"Content-Type")
        if content_type:
            mime = content_type.split(b";", 1)[0].strip().lower()
            if mime not in self.content_types:
                return "not_html"
        length = headers.get(b"Content-Length")
        if self.max_bytes and length and length.isdigit() and int(length) > self.max_bytes:
            return "too_large"
        return None

    def headers_received(self, headers: Headers, body_length: int, request: Request) -> None:
        if not self._applies(request):
            return
        reason = self.rejection(headers)
        if reason:
            request.meta[_STOPPED] = reason
            raise StopDownload(fail=False)

    def process_response(self, request: Request, response: Response) -> Response:
        if not self._applies(request):
            return response
        reason = request.meta.pop(_STOPPED, None)
        if reason is None or response.status >= 300:
            return response
        self.stats.inc_value(f"content/dropped/{reason}")
        self.stats.inc_value(f"content/dropped_type/{mime_type(response.headers.get(b'Content-Type'))}")
        logger.debug("Dropped %s (%s, %s)", request.url, reason,
                     response.headers.get(b"Content-Type", b"").decode("latin-1"))
        raise IgnoreRequest(f"{reason}: {request.url}")
