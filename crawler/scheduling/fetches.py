"""The end of each leased fetch, heard from Scrapy's downloader signals and reported to
the frontier in one step per reactor turn."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from scrapy import signals
from scrapy.utils.asyncio import call_later

from crawler.frontier.api import Fetch
from crawler.frontier.policy import parse_retry_after
from crawler.scheduling.codec import LEASE_META

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.http import Response
    from scrapy.signalmanager import SignalManager

FETCH_META = "_frontier_fetch"  # request.meta: [start time, status, Retry-After]


class FetchReports:
    """Times each leased request in the downloader (failures included: a fetch that got no
    response has status None) and hands the fetches that ended in one reactor turn to
    ``report`` together (Redis: one round trip for all). A fetch that got no response is
    kept back until its lease ends (``unanswered``): only then is its failure known, and a
    host that did not answer must be held in the same step that releases it."""

    def __init__(self, report: Callable[[list[Fetch]], object],
                 later: Callable[[float, Callable[[], None]], object] = call_later) -> None:
        self.report = report
        self.later = later  # the reactor's call_later: the flush at the end of this turn
        self._ended: list[Fetch] = []
        self._unanswered: dict[tuple[int, int], Fetch] = {}  # by lease

    def connect(self, manager: SignalManager) -> None:
        manager.connect(self.reached_downloader, signal=signals.request_reached_downloader)
        manager.connect(self.response_downloaded, signal=signals.response_downloaded)
        manager.connect(self.left_downloader, signal=signals.request_left_downloader)

    def reached_downloader(self, request: Request) -> None:
        if LEASE_META in request.meta:
            request.meta[FETCH_META] = [time.monotonic(), None, None]

    def response_downloaded(self, response: Response, request: Request) -> None:
        fetch = request.meta.get(FETCH_META)
        if fetch is not None:
            fetch[1] = response.status
            fetch[2] = response.headers.get(b"Retry-After")

    def left_downloader(self, request: Request) -> None:
        fetch = request.meta.pop(FETCH_META, None)
        lease = request.meta.get(LEASE_META)
        if fetch is None or lease is None:
            return
        now = time.time()
        ended = Fetch(lease[0], lease[1], now, time.monotonic() - fetch[0], fetch[1],
                      parse_retry_after(fetch[2], now))
        if ended.status is None:
            self._unanswered[(ended.fp, ended.token)] = ended
            return
        if not self._ended:
            self.later(0, self.flush)
        self._ended.append(ended)

    def unanswered(self, fp: int, token: int) -> Fetch | None:
        """The fetch under this lease that got no response, kept back for its lease's end
        to report (once), or None."""
        return self._unanswered.pop((fp, token), None)

    def flush(self) -> None:
        """Report the fetches ended so far."""
        ended, self._ended = self._ended, []
        if ended:
            self.report(ended)
