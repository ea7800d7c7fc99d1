"""Content-Encoding decoded with a hard cap on its output: a decompression bomb ends bounded."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy.downloadermiddlewares.httpcompression import ACCEPTED_ENCODINGS
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http import TextResponse
from scrapy.responsetypes import responsetypes

from crawler.net.decoding import Decoded, DecodingError, codings, decode
from crawler.net.once import OncePerHost
from crawler.urls.keys import host_key

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)

#: request.meta: the most bytes its body may decode to (default: its ``download_maxsize``,
#: else ``DOWNLOAD_MAXSIZE``; 0: no cap).
DECODED_MAXSIZE = "decoded_maxsize"
#: request.meta: True to keep the first ``decoded_maxsize`` bytes of a body decoding to more,
#: the response flagged :data:`CUT_FLAG` (a robots.txt is parsed as far as it fits); else
#: such a 2xx response is dropped.
DECODED_KEEP_PREFIX = "decoded_keep_prefix"
#: Response flag: its body is the first bytes of what it decodes to.
CUT_FLAG = "decoded_cut"


class BoundedDecompressionMiddleware:
    """Downloader middleware in the place of Scrapy's HttpCompressionMiddleware (order 590).

    Asks for ``gzip, deflate, br, zstd`` and decodes each layer of a response's
    Content-Encoding to at most the request's cap (``DECODED_MAXSIZE`` meta, else its
    ``download_maxsize``, else ``DOWNLOAD_MAXSIZE``), so memory stays bounded whatever
    the compression ratio; Scrapy's own decoding is uncapped for a request with
    ``download_maxsize = 0`` and can only fail at the cap. A 2xx body that decodes to
    more is dropped, counted in ``content/dropped/too_large`` and said once per host at
    INFO; one of another status keeps its headers and the first bytes of its body (the
    redirect and retry middlewares need only those); a request with
    ``DECODED_KEEP_PREFIX`` meta keeps the first bytes in every case, flagged ``decoded_cut``.
    A body that is not in the coding it names is dropped (``content/dropped/bad_encoding``);
    unknown codings are left in the header, as Scrapy leaves them.
    """

    def __init__(self, stats: StatsCollector, max_size: int) -> None:
        self.stats = stats
        self.max_size = max_size
        self._said = OncePerHost()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> BoundedDecompressionMiddleware:
        if not crawler.settings.getbool("COMPRESSION_ENABLED"):
            raise NotConfigured
        return cls(crawler.stats, crawler.settings.getint("DOWNLOAD_MAXSIZE"))

    def process_request(self, request: Request) -> None:
        request.headers.setdefault("Accept-Encoding", b", ".join(ACCEPTED_ENCODINGS))

    def process_response(self, request: Request, response: Response) -> Response:
        applied = codings(response.headers.getlist("Content-Encoding"))
        if request.method == "HEAD" or not applied:
            return response
        limit = request.meta.get(DECODED_MAXSIZE, request.meta.get("download_maxsize", self.max_size))
        try:
            decoded = decode(response.body, applied, limit)
        except DecodingError as error:
            return self._bad_encoding(request, response, applied, error)
        self.stats.inc_value("httpcompression/response_count")
        self.stats.inc_value("httpcompression/response_bytes", len(decoded.body))
        if decoded.cut:
            self._cut(request, response, limit)
        return self._decoded(response, decoded)

    def _cut(self, request: Request, response: Response, limit: int) -> None:
        """Drop a 2xx body over the cap, unless its request keeps what fits."""
        if request.meta.get(DECODED_KEEP_PREFIX) or response.status >= 300:
            return
        self.stats.inc_value("content/dropped/too_large")
        coding = (response.headers.get(b"Content-Encoding") or b"").decode("latin-1")
        self._say_once(request, "Dropped %s: its body decodes to more than %d bytes (%s, %d bytes sent)",
                       request.url, limit, coding, len(response.body))
        raise IgnoreRequest(f"too_large: {request.url} decodes to more than {limit} bytes")

    def _bad_encoding(self, request: Request, response: Response, applied: list[bytes],
                      error: DecodingError) -> Response:
        if response.status >= 300 and not request.meta.get(DECODED_KEEP_PREFIX):
            return self._decoded(response, Decoded(b"", False, ()))
        self.stats.inc_value("content/dropped/bad_encoding")
        self._say_once(request, "Dropped %s: its body is not %s (%s)", request.url,
                       b", ".join(applied).decode("latin-1"), error)
        raise IgnoreRequest(f"bad_encoding: {request.url}")

    def _say_once(self, request: Request, message: str, *args: object) -> None:
        if self._said.first(host_key(request.url)):
            logger.info(message + " (said once per host)", *args)
        else:
            logger.debug(message, *args)

    @staticmethod
    def _decoded(response: Response, decoded: Decoded) -> Response:
        """``response`` with the decoded body, the codings left in its header."""
        headers = response.headers.copy()
        if decoded.left:
            headers[b"Content-Encoding"] = b", ".join(decoded.left)
        else:
            del headers[b"Content-Encoding"]
        cls = responsetypes.from_args(headers=headers, url=response.url, body=decoded.body)
        kwargs: dict[str, object] = {"body": decoded.body, "headers": headers}
        if issubclass(cls, TextResponse):
            kwargs["encoding"] = None  # guessed again from the decoded body, as Scrapy does
        if decoded.cut:
            kwargs["flags"] = [*response.flags, CUT_FLAG]
        return response.replace(cls=cls, **kwargs)
