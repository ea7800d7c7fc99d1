"""Stop downloads that are not HTML as soon as their headers arrive, and too large ones as
soon as their headers or their first bytes past the cap do."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from scrapy import signals
from scrapy.exceptions import IgnoreRequest, StopDownload

from crawler import defaults
from crawler.net.once import OncePerHost
from crawler.urls.keys import host_key

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
_BODY_CAP = "html_only_body_cap"  # request.meta: the body's _Counted while it downloads


@dataclass
class _Counted:
    """A body whose size was not announced, counted against ``cap`` as it comes."""

    cap: int
    had_meta: bool  # whether the request's meta had download_maxsize, to put it back
    received: int = 0
    over: bool = False


class HtmlOnlyMiddleware:
    """Downloader middleware that keeps only HTML pages of a bearable size.

    On ``headers_received`` it reads Content-Type and Content-Length and stops a
    download that is not one of ``HTML_CONTENT_TYPES`` or larger than
    ``DOWNLOAD_MAXSIZE`` before its body is read. A body whose size is not announced
    (close-delimited, chunked) is counted as it comes (``bytes_received``) and stopped
    at the first bytes past the cap: Scrapy's own cap would cancel it as a failed
    download, with a traceback, and the host backed off. The stopped 2xx response is
    then dropped (``IgnoreRequest``, said once per host), while a stopped 3xx/4xx/5xx
    goes on to the redirect, retry and error middlewares, which need only its headers.
    A response without Content-Type is let through (Scrapy sniffs its body, and the
    ``web`` spider skips what is not HTML).

    Requests with ``meta["html_only"] = False`` and robots.txt requests
    (``dont_obey_robotstxt``) are never stopped. Stats: ``content/dropped/not_html``,
    ``content/dropped/too_large``, and ``content/dropped_type/<MIME type>`` for each.
    """

    def __init__(self, stats: StatsCollector, content_types: list[str], max_bytes: int) -> None:
        self.stats = stats
        self.content_types = tuple(t.lower().encode("ascii") for t in content_types)
        self.max_bytes = max_bytes
        self._said = OncePerHost()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> HtmlOnlyMiddleware:
        settings = crawler.settings
        middleware = cls(
            crawler.stats,
            settings.getlist("HTML_CONTENT_TYPES", defaults.HTML_CONTENT_TYPES),
            settings.getint("DOWNLOAD_MAXSIZE"),
        )
        crawler.signals.connect(middleware.headers_received, signal=signals.headers_received)
        crawler.signals.connect(middleware.bytes_received, signal=signals.bytes_received)
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
        cap = request.meta.get("download_maxsize", self.max_bytes)
        if cap and not (headers.get(b"Content-Length") or b"").isdigit():
            # Counted here: Scrapy's handler, which reads download_maxsize next, would fail
            # the download at the cap. The meta is put back as the response comes up the
            # middlewares (_uncount), before the decoding that reads it as its cap.
            request.meta[_BODY_CAP] = _Counted(cap, "download_maxsize" in request.meta)
            request.meta["download_maxsize"] = 0

    def bytes_received(self, data: bytes, request: Request) -> None:
        counted = request.meta.get(_BODY_CAP)
        if counted is None or counted.over:
            return
        counted.received += len(data)
        if counted.received > counted.cap:
            counted.over = True
            request.meta[_STOPPED] = "too_large"
            raise StopDownload(fail=False)

    @staticmethod
    def _uncount(request: Request) -> None:
        """The request's cap meta as it was before its body was counted."""
        counted = request.meta.pop(_BODY_CAP, None)
        if counted is not None and counted.had_meta:
            request.meta["download_maxsize"] = counted.cap
        elif counted is not None:
            del request.meta["download_maxsize"]

    def process_exception(self, request: Request, exception: Exception) -> None:
        self._uncount(request)

    def process_response(self, request: Request, response: Response) -> Response:
        self._uncount(request)
        if not self._applies(request):
            return response
        reason = request.meta.pop(_STOPPED, None)
        if reason is None or response.status >= 300:
            return response
        self.stats.inc_value(f"content/dropped/{reason}")
        self.stats.inc_value(f"content/dropped_type/{mime_type(response.headers.get(b'Content-Type'))}")
        content_type = (response.headers.get(b"Content-Type") or b"").decode("latin-1")
        if reason == "too_large" and self._said.first(host_key(request.url)):
            logger.info("Dropped %s: larger than DOWNLOAD_MAXSIZE (%d bytes; said once per host)",
                        request.url, request.meta.get("download_maxsize", self.max_bytes))
        else:
            logger.debug("Dropped %s (%s, %s)", request.url, reason, content_type)
        raise IgnoreRequest(f"{reason}: {request.url}")
