"""A URL that failed, retried along the retry chain, durably in the frontier, or given up."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from scrapy.utils.asyncio import call_later

from crawler.frontier.failure import FailureKind, FetchFailure
from crawler.frontier.policy import RetryPolicy
from crawler.scheduling.codec import ATTEMPTS_META, mark_failed, request_to_json, requeue
from crawler.store.space import StoreFull
from crawler.urls.keys import host_key

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.http import Response
    from scrapy.statscollectors import StatsCollector

    from crawler.frontier.api import Fetch
    from crawler.scheduling.client import FrontierClient
    from crawler.scheduling.fetches import FetchReports

logger = logging.getLogger(__name__)


class _Failure(NamedTuple):
    url: str
    fp: int
    token: int
    data: str  # the request as stored, its attempts included
    failure: FetchFailure
    attempts: int
    now: float
    host: str


class FailureChain:
    """What follows a failed fetch, callback, pipeline or store: a retry after the next delay
    of ``FRONTIER_RETRY_DELAYS``, or a dead letter; a host that gives no answer is held as a
    whole, its run of unanswered fetches counted by the frontier for every worker alike, and
    its hold written with the report of the fetch that failed (``fetches`` keeps that report
    back until then; ``report`` sends it), so no other fetch of the host slips in before.
    Steps go through ``client`` (the scheduler's); ``wake`` asks the engine for
    requests; ``is_open`` is False once the scheduler closed."""

    def __init__(self, client: FrontierClient, stats: StatsCollector, retry: RetryPolicy,
                 wake: Callable[[], None], crawl_id: str, is_open: Callable[[], bool],
                 fetches: FetchReports, report: Callable[[list[Fetch]], object]) -> None:
        self.client = client
        self.stats = stats
        self.retry = retry
        self.wake = wake
        self.crawl_id = crawl_id
        self.is_open = is_open
        self.fetches = fetches
        self.report = report
        self.given_up: set[str] = set()  # hosts whose queues went to the dead letters

    def failed(self, request: Request, fp: int, token: int, failure: FetchFailure,
               spider: Spider | None) -> None:
        """The URL failed (fetch, callback, pipeline or store): retry it after the next
        delay of the chain, durably in the frontier, or give it up as a dead letter. A
        host that gave no answer is held as a whole, one probe per delay of the chain,
        and after the last its queued URLs are dead letters too."""
        attempts = request.meta.get(ATTEMPTS_META, 0) + 1
        request.meta[ATTEMPTS_META] = attempts
        data, _ = request_to_json(request, spider)
        failed = _Failure(request.url, fp, token, data, failure, attempts, time.time(),
                          host_key(request.url))
        if failure.kind is FailureKind.UNREACHABLE:
            self.client.unanswered(failed.host).addCallback(self.decide, failed)
        else:
            self.decide(0, failed)

    def decide(self, unanswered: int, failure: _Failure) -> None:
        """Retry or give up ``failure``, its host's run of unanswered fetches now ``unanswered``."""
        url, fp, token, data, why, attempts, now, host = failure
        reason = why.text
        delay = self.retry.delay_after(attempts, why.kind)
        if unanswered and delay is not None:
            delay = self.hold(host, reason, unanswered, now)
        if delay is None and (why.kind in (FailureKind.EXHAUSTED, FailureKind.PERMANENT)
                              or unanswered > len(self.retry.delays)):
            # Its queue goes first: the report of this fetch frees the host, and a claim
            # run between the two would fetch a URL of a host given up.
            self.give_up_host(host, reason, now)
        fetch = self.fetches.unanswered(fp, token)
        if fetch is not None:
            fetch.hold_until = now + delay if unanswered and delay is not None else 0.0
            self.report([fetch])
        elif unanswered and delay is not None:  # its fetch reported already
            self.client.defer(host, now + delay)
        if delay is None:
            self.client.dead_letter(fp, token, data, reason, now)
            self.stats.inc_value("frontier/dead_letters")
            logger.warning("Giving up %s after %d attempts (%s): a dead letter (scrapy deadletters %s)",
                           url, attempts, reason, self.crawl_id)
            return
        self.client.retry_later(fp, token, data, now + delay)
        call_later(delay, self.promote_due_retries)
        self.stats.inc_value("frontier/retries")
        logger.info("%s failed (%s, attempt %d): tried again in %.0f s", url, reason, attempts, delay)

    def give_up_host(self, host: str, reason: str, now: float) -> None:
        """The host's queued URLs are dead letters too; said once per host."""

        def given_up(dead: int) -> None:
            self.stats.inc_value("frontier/dead_letters", dead)
            if host not in self.given_up:
                self.given_up.add(host)
                logger.warning("Host %s given up after its last try (%s): its %d URLs queued or waiting "
                               "for a retry are dead letters too", host, reason, dead)

        self.client.dead_letter_host(host, reason, now).addCallback(given_up)

    def hold(self, host: str, reason: str, unanswered: int, now: float) -> float | None:
        """How long to hold a host whose last ``unanswered`` fetches got no answer, until its
        next probe; None: give it up."""
        hold = self.retry.delay_after(unanswered)
        if hold is None:
            return None  # given up until it answers: its later failures are dead letters at once
        self.stats.inc_value("frontier/hosts_held")
        if hold >= 60:
            self.client.host_queued(host).addCallback(
                lambda waiting: logger.warning(
                    "Host %s did not answer (%s): held %.0f s, %d more URLs wait; next try at %s", host,
                    reason, hold, waiting, time.strftime("%H:%M:%S", time.localtime(now + hold))))
        return hold

    def host_answered(self, response: Response, request: Request) -> None:
        """A host that answers may be given up again, and said so, later (the frontier ends
        its run of unanswered fetches as the fetch is reported)."""
        if self.given_up:
            self.given_up.discard(host_key(request.url))

    def item_error(self, response: Response, failure: Any) -> None:
        """A page that failed in the pipelines is not stored: an attempt that failed."""
        if response is not None and response.request is not None:
            mark_failed(response.request, FetchFailure(FailureKind.TRANSIENT,
                                                       f"pipeline: {failure.getErrorMessage()}"))

    def item_dropped(self, item: Any, response: Response, exception: BaseException) -> None:
        """A page not stored because the store has no room: queued again at once, not an
        attempt of its URL (the scheduler claims nothing until the store has room)."""
        if isinstance(exception, StoreFull) and response is not None and response.request is not None:
            requeue(response.request)

    def spider_error(self, failure: Any, response: Response) -> None:
        """The callback raised: an attempt that failed (a poison page ends as a dead letter)."""
        if response is not None and response.request is not None:
            mark_failed(response.request, FetchFailure(
                FailureKind.TRANSIENT, f"callback: {failure.type.__name__}: {failure.getErrorMessage()}"))

    def promote_due_retries(self) -> None:
        """A retry of ours falls due now (housekeeping promotes the others' too)."""
        if self.is_open():
            self.client.due_retries(time.time()).addCallback(
                lambda due: due and self.wake())
