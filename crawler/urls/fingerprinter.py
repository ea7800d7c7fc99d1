"""Request fingerprints from the normalised URL (``REQUEST_FINGERPRINTER_CLASS``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.utils.request import RequestFingerprinter

from crawler import defaults
from crawler.urls.keys import fingerprint
from crawler.urls.normalize import UrlNormalizer

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler


class UrlFingerprinter:
    """Fingerprints a body-less GET or HEAD request as the 8-byte BLAKE2b of its
    normalised URL (see :func:`crawler.urls.fingerprint`), so ``Example.COM:80/a#x``
    and ``example.com/a`` are one request to Scrapy's duplicate filter and cache.

    Other requests (POST, bodies, URLs that are not http(s)) keep Scrapy's own
    fingerprint, so a project's form submissions are not merged by URL.
    Settings: ``URL_DROP_PARAMS``.
    """

    def __init__(
        self,
        drop_params: str = defaults.URL_DROP_PARAMS,
        fallback: RequestFingerprinter | None = None,
    ) -> None:
        self._normalize = UrlNormalizer(drop_params)
        self._fallback = fallback or RequestFingerprinter()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> UrlFingerprinter:
        drop_params = crawler.settings.get("URL_DROP_PARAMS", defaults.URL_DROP_PARAMS)
        return cls(drop_params, RequestFingerprinter.from_crawler(crawler))

    def fingerprint(self, request: Request) -> bytes:
        if request.method in ("GET", "HEAD") and not request.body:
            url = self._normalize(request.url)
            if url is not None:
                return fingerprint(url).to_bytes(8, "big")
        return self._fallback.fingerprint(request)
