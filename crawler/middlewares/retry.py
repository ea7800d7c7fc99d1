"""Transient failures go to the frontier's retry chain, not to Scrapy's immediate retry;
responses that are not HTTP are skipped."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy.exceptions import (
    CannotResolveHostError,
    DownloadConnectionRefusedError,
    DownloadTimeoutError,
    IgnoreRequest,
)
from scrapy.utils.misc import load_object
from scrapy.utils.response import response_status_message
from twisted.internet import error as twisted_errors
from twisted.internet.error import DNSLookupError

from crawler.frontier.failure import FailureKind, FetchFailure
from crawler.net import bad_responses
from crawler.net.resolver import installed
from crawler.scheduling.codec import LEASE_META, mark_failed
from crawler.urls.keys import host_key

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)

#: Exceptions that say the host gave no answer at all (their own classes, not subclasses:
#: a ConnectionLost is an answer cut short). The frontier holds such a host as a whole.
UNREACHABLE_EXCEPTIONS = frozenset({
    DownloadConnectionRefusedError, DownloadTimeoutError, CannotResolveHostError,
    twisted_errors.ConnectionRefusedError, twisted_errors.TCPTimedOutError, twisted_errors.TimeoutError,
    twisted_errors.ConnectError, DNSLookupError, TimeoutError,
})


class FrontierRetryMiddleware:
    """Downloader middleware in RetryMiddleware's place (the add-on turns Scrapy's off:
    retried at once it would only multiply attempts on a host that is struggling).

    A request the frontier handed out that fails transiently (a status in Scrapy's
    ``RETRY_HTTP_CODES``, an exception in its ``RETRY_EXCEPTIONS``; not with
    ``dont_retry``) is marked for the frontier's retry chain (``FRONTIER_RETRY_DELAYS``)
    and goes no further: the spider sees neither the error page nor the exception.
    Requests of other schedulers pass untouched. Stats: ``retry/failures/<status or exception>``.

    A response that is not HTTP (a header line over 16 KiB, a malformed status line: a
    parse error of Twisted's) shows that the host is up. The same bytes would come again, so
    the URL is not retried: it is logged, counted in ``download/bad_response/<error>`` and
    skipped as done.
    """

    def __init__(self, crawler: Crawler) -> None:
        bad_responses.install()
        settings = crawler.settings
        self.stats = crawler.stats
        self.codes = {int(code) for code in settings.getlist("RETRY_HTTP_CODES")}
        self.exceptions = tuple(load_object(e) if isinstance(e, str) else e
                                for e in settings.getlist("RETRY_EXCEPTIONS"))

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> FrontierRetryMiddleware:
        return cls(crawler)

    def _ours(self, request: Request) -> bool:
        return LEASE_META in request.meta and not request.meta.get("dont_retry", False)

    def _fail(self, request: Request, failure: FetchFailure, stat: str) -> None:
        mark_failed(request, failure)
        self.stats.inc_value(f"retry/failures/{stat}")
        raise IgnoreRequest(f"{failure.text}: the frontier tries {request.url} again later")

    def process_response(self, request: Request, response: Response) -> Response:
        if response.status in self.codes and self._ours(request):
            failure = FetchFailure(FailureKind.TRANSIENT, response_status_message(response.status))
            self._fail(request, failure, str(response.status))
        return response

    def process_exception(self, request: Request, exception: Exception) -> None:
        bad = bad_responses.bad_response(exception)
        if bad is not None and LEASE_META in request.meta:
            name = type(bad).__name__
            self.stats.inc_value(f"download/bad_response/{name}")
            logger.warning("Skipped %s: its response is not HTTP (%s: %s)", request.url, name, bad.args[0])
            raise IgnoreRequest(f"{name}: {request.url} answered with something that is not HTTP")
        if isinstance(exception, self.exceptions) and self._ours(request):
            name = type(exception).__name__
            reason = f"{name}: {exception}"
            unreachable = type(exception) in UNREACHABLE_EXCEPTIONS
            kind = FailureKind.UNREACHABLE if unreachable else FailureKind.TRANSIENT
            resolver = installed()
            if isinstance(exception, CannotResolveHostError | DNSLookupError) and resolver is not None:
                error = resolver.lookup_error(host_key(request.url))
                if error:
                    reason += f" ({error})"
                if resolver.name_missing(host_key(request.url)):
                    kind = FailureKind.PERMANENT  # NXDOMAIN: a dead letter once confirmed
            self._fail(request, FetchFailure(kind, reason), name)
