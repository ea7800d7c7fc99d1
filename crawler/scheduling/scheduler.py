"""``FrontierScheduler``: Scrapy's scheduler interface over a frontier backend."""

from __future__ import annotations

import logging
import time
from collections import deque
from typing import TYPE_CHECKING, Any

from scrapy import Request, signals
from scrapy.core.scheduler import BaseScheduler
from twisted.internet import defer
from twisted.internet.task import LoopingCall
from twisted.python.failure import Failure

from crawler import defaults
from crawler import signals as crawler_signals
from crawler.context.crawl import CrawlContext
from crawler.frontier.api import (
    CrawlStateInUse,
    Fetch,
    Frontier,
    Revisit,
    SharedFrontier,
    fetch_seconds_counts,
)
from crawler.frontier.policy import PriorityLevels, RetryPolicy, beat_interval
from crawler.items import Page
from crawler.scheduling.codec import (
    LEASE_META,
    request_from_json,
    request_to_json,
    revisit_request,
)
from crawler.scheduling.engine import EngineAdapter
from crawler.scheduling.factory import open_frontier
from crawler.scheduling.failures import FailureChain
from crawler.scheduling.fetches import FetchReports
from crawler.scheduling.host_news import HostNews
from crawler.scheduling.hostkeys import PolitenessKeys
from crawler.scheduling.intake import Intake
from crawler.scheduling.leases import LeaseBook
from crawler.scheduling.link import FrontierLink
from crawler.scheduling.refused import RefusedScheduler
from crawler.scheduling.store_room import StoreRoom
from crawler.scheduling.timers import EarliestCall
from crawler.scheduling.upkeep import (
    Opening,
    Upkeep,
    forget_if_finished,
    promote_revisits,
    take_new_hosts,
    upkeep,
)

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)


class FrontierScheduler(BaseScheduler):
    """Gives the engine requests from a polite frontier (``SCHEDULER``).

    Politeness is the frontier's: one fetch in flight per host, and after each fetch
    a gap of max(min delay, factor x fetch time, Crawl-delay, backoff). So Scrapy's
    own delays must be off (``DOWNLOAD_DELAY = 0``, per-domain concurrency >= 1), or
    requests waiting out a slot delay would block the global concurrency.

    Fetches are reported through Scrapy's downloader signals (``response_downloaded``,
    ``request_left_downloader``), failures included. A URL's lease is acked when the
    engine is done with its Request: the engine keeps it in its in-progress set until
    the response has gone through the spider and every item it produced through the
    pipelines, so a page is acked only once stored. Scrapy 2.19 signals no such
    moment, so the scheduler reads that set (``EngineAdapter``) whenever the engine
    calls it. When nothing is due, the scheduler wakes the engine as the next
    host falls due, instead of leaving it to the 5-second heartbeat.

    The frontier is embedded (SQLite under ``FRONTIER_DIR``) or, with ``REDIS_URL``,
    shared in Redis by every worker started with the same ``CRAWL_ID``.

    No call to a Redis frontier runs on the reactor: Scrapy's synchronous calls are
    answered from this worker's state (claims buffered, counts from the last read), and
    every frontier call runs in an I/O thread (``FrontierLink``), so a stalled Redis
    stalls no download.

    Its parts, each with one job: ``FrontierLink`` (calls off the reactor, claims buffered,
    counts), ``Outbox`` (writes in order, through a Redis outage), ``LeaseBook`` (what each
    lease waits for, from its page's ``PageOutcome``), ``FailureChain`` (retries and dead
    letters), ``FetchReports`` (the downloader's signals, batched), ``PolitenessKeys``
    (per-IP keys), ``StoreRoom`` (no claim while the store or the frontier's state has no
    room), ``EarliestCall`` (wake-ups) and ``EngineAdapter``; this class wires them.

    Settings: ``REDIS_URL``, ``FRONTIER_DIR``, ``CRAWL_ID``, ``POLITENESS_*``, ``HOST_PAGE_BUDGET``,
    ``FRONTIER_PRIORITY_LEVELS``, ``FRONTIER_LEASE_SECONDS``, ``FRONTIER_COMMIT_INTERVAL``,
    ``FRONTIER_CACHE_KIB``, ``FRONTIER_RETRY_DELAYS``, ``CRAWL_CONTINUOUS``, ``REDIS_STALL_SECONDS``.
    """

    def __init__(self, crawler: Crawler, frontier: Frontier, levels: PriorityLevels,
                 commit_interval: float, crawl_id: str = "", persist: bool = True,
                 retry: RetryPolicy | None = None, continuous: bool = False) -> None:
        self.crawler = crawler
        self.frontier = frontier
        self.levels = levels
        self.commit_interval = commit_interval
        self.crawl_id = crawl_id
        self.persist = persist
        self.retry = retry or RetryPolicy()
        self.continuous = continuous
        self.spider: Spider | None = None
        self._closed = False
        self._concurrency = max(1, crawler.settings.getint("CONCURRENT_REQUESTS"))
        self._upkeeping = False
        self._said_pending = True  # the last answer to has_pending_requests
        self._timers: list[LoopingCall] = []
        self.engine = EngineAdapter(crawler)
        self.waker = EarliestCall(self.engine.wake)
        self.revisit_timer = EarliestCall(self._promote_due_revisits)
        stall = crawler.settings.getfloat("REDIS_STALL_SECONDS", defaults.REDIS_STALL_SECONDS)
        self.link = FrontierLink(frontier, crawler.stats.inc_value, self.engine.wake,
                                 self.waker.in_seconds, stall)
        self.link.counts_read = self._counts_read
        self.leases = LeaseBook()
        self.outcomes = CrawlContext.of(crawler).outcomes
        self.outcomes.attach(crawler.signals)
        self.in_memory: deque[Request] = deque()  # requests the frontier cannot store (Intake)
        client = self.link.client
        self.intake = Intake(crawler.request_fingerprinter, levels, crawler.stats, client, lambda:
                             self.revisit_timer.in_seconds(0), self._key_new_hosts, self.in_memory.append)
        self.fetches = FetchReports(self._fetches_ended)
        self.fetches.connect(crawler.signals)
        self.failures = FailureChain(client, crawler.stats, self.retry, lambda: self.waker.in_seconds(0),
                                     crawl_id, lambda: not self._closed, self.fetches, self._fetches_ended)
        self.keys = PolitenessKeys(client, lambda: self.waker.in_seconds(0))
        self.host_news = HostNews(client, frontier.policy)  # kept: signals hold weak references
        self.host_news.connect(crawler.signals)
        self.store_room = StoreRoom.from_crawler(crawler, lambda: self.waker.in_seconds(0), commit_interval,
                                                 self.link.claimed.clear)
        for handler, signal in (
            (self.failures.item_error, signals.item_error),
            (self.failures.item_dropped, signals.item_dropped),
            (self.failures.spider_error, signals.spider_error),
            (self._item_scraped, signals.item_scraped),
            (self._page_done, crawler_signals.page_processed),
            (self._stored_safely, crawler_signals.store_safe),
            (self.failures.host_answered, signals.response_downloaded),
        ):
            crawler.signals.connect(handler, signal=signal)

    # Scrapy types from_crawler as returning the class itself; a crawl whose state another
    # process holds gets the RefusedScheduler instead, which closes it at once.
    @classmethod
    def from_crawler(cls, crawler: Crawler) -> FrontierScheduler | RefusedScheduler:  # type: ignore[override]
        s = crawler.settings
        crawl_id = CrawlContext.of(crawler).crawl_id
        levels = PriorityLevels(s.getint("FRONTIER_PRIORITY_LEVELS", defaults.FRONTIER_PRIORITY_LEVELS))
        try:
            frontier = open_frontier(s, crawl_id, levels)
        except CrawlStateInUse as refusal:
            return RefusedScheduler.saying(crawler, crawl_id, refusal)
        if s.getfloat("DOWNLOAD_DELAY") or s.getbool("AUTOTHROTTLE_ENABLED"):
            logger.warning("FrontierScheduler keeps politeness itself: set DOWNLOAD_DELAY = 0 and "
                           "AUTOTHROTTLE_ENABLED = False, or Scrapy adds delays of its own.")
        logger.info("Crawl id %s, frontier state: %s", crawl_id, frontier.describe())
        return cls(crawler, frontier, levels, s.getfloat(
            "FRONTIER_COMMIT_INTERVAL", defaults.FRONTIER_COMMIT_INTERVAL), crawl_id,
            s.getbool("SCHEDULER_PERSIST", defaults.SCHEDULER_PERSIST),
            RetryPolicy.parse(s.get("FRONTIER_RETRY_DELAYS", defaults.FRONTIER_RETRY_DELAYS),
                              s.getfloat("DNS_NEGATIVE_TTL", defaults.DNS_NEGATIVE_TTL)),
            s.getbool("CRAWL_CONTINUOUS", defaults.CRAWL_CONTINUOUS))

    # ---------------------------------------------------------------- lifecycle

    def open(self, spider: Spider) -> defer.Deferred:
        """Read the frontier as this worker finds it (off the reactor), then start the timers."""
        self.spider = spider
        return self.link.read_with_counts(Opening.read, self.frontier, time.time()).addCallback(self._opened)

    def _opened(self, opening: Opening) -> None:
        if opening.promoted:  # a rerun revisits what has fallen due since
            self.crawler.stats.inc_value("revisit/due", opening.promoted)
        if opening.next_revisit is not None:
            self.revisit_timer.at(opening.next_revisit)
        if opening.done and not opening.pending and not self.continuous:
            opening.say_finished(self.crawl_id)
        elif opening.done or opening.counts.queued:
            logger.info("Resuming the crawl %s: %d URLs done, %d queued to fetch", self.crawl_id,
                        opening.done, opening.counts.queued)
        self._key_new_hosts()
        # Often enough that a worker beats at least three times per FRONTIER_WORKER_TIMEOUT.
        housekeeping = beat_interval(self.crawler.settings.getfloat(
            "FRONTIER_WORKER_TIMEOUT", defaults.FRONTIER_WORKER_TIMEOUT))
        self._housekeeping()  # the first heartbeat, before any claim
        watch = min(1.0, self.link.stall_seconds / 2)
        for interval, step in ((self.commit_interval, self._commit), (housekeeping, self._housekeeping),
                               (watch, self.link.watch)):
            timer = LoopingCall(step)
            timer.start(interval, now=False)
            self._timers.append(timer)

    def close(self, reason: str) -> defer.Deferred:
        """Send every step still waiting (the engine waits for it), then close the frontier."""
        self._closed = self.keys.closed = True
        left = self.link.counts()
        if reason == "shutdown" and left is not None and (n := left.queued + left.leased + left.waiting):
            logger.info("Crawl %s stopped, %d URLs left: the same command resumes it", self.crawl_id, n)
        for timer in self._timers:
            if timer.running:
                timer.stop()
        self.waker.cancel()
        self.revisit_timer.cancel()
        return defer.ensureDeferred(self._close())

    async def _close(self) -> None:
        await self.link.give_back()
        self.fetches.flush()
        self._ack_finished()
        outbox = self.link.outbox
        if await outbox.drain():
            self._upkeeping = False
            last = self._housekeeping()
            if last is not None:
                await last
            # The leases still held go back now, for the workers that go on (holds kept).
            await self.link.run(self.frontier.leave, time.time(), self.retry)
            if not self.persist and isinstance(self.frontier, SharedFrontier):
                await self.link.run(forget_if_finished, self.frontier, self.crawl_id)
        else:
            logger.error("%d frontier steps could not reach Redis; their URLs will be fetched "
                         "again once their leases expire", len(outbox))
        outbox.cancel()
        await self.link.run(self.frontier.close)
        self.link.calls.stop()

    # ---------------------------------------------------------------- housekeeping

    def _commit(self) -> None:
        self._ack_finished()
        d = self.link.run(self.frontier.commit)
        d.addCallbacks(self.store_room.state_committed, self.store_room.state_full)
        d.addErrback(self.link.failed)

    def _housekeeping(self) -> defer.Deferred | None:
        """Renew our leases, beat, reap the dead's, promote due retries and revisits, and
        publish the frontier's gauges and counters as stats: one job off the reactor. It runs
        while Redis is down too: its first success ends the outage."""
        if self._upkeeping:
            return None
        self._upkeeping = True
        leases = list(self.leases.leases()) + [(c.fp, c.token) for c in self.link.claimed]
        d = self.link.read_with_counts(upkeep, self.frontier, leases)
        return d.addCallbacks(self._upkept, self._upkeep_failed)

    def _upkeep_failed(self, failure: Failure) -> None:
        self._upkeeping = False
        self.link.failed(failure)

    def _upkept(self, result: Upkeep) -> None:
        self._upkeeping = False
        result.say_dead_workers()
        if result.due_revisits:
            self.crawler.stats.inc_value("revisit/due", result.due_revisits)
        if result.due_retries or result.due_revisits:
            self.waker.in_seconds(0)
        if result.next_revisit is not None and not self._closed:
            self.revisit_timer.at(result.next_revisit)
        stats = self.crawler.stats
        result.publish(stats)
        stats.set_value("frontier/awaiting_store", self.leases.awaiting_store)
        stats.set_value("frontier/awaiting_upload", self.leases.awaiting_upload)

    # ---------------------------------------------------------------- engine side

    def has_pending_requests(self) -> bool:
        """Answered from this worker's state and the last read of the frontier's counts (a
        fresh read starts off the reactor when that one is old): never a call to Redis here."""
        self._ack_finished()
        self._said_pending = bool(self.in_memory) or self._pending()
        return self._said_pending

    def _pending(self) -> bool:
        counts = self.link.counts()
        if counts is None:
            return True  # never close a crawl while its frontier is unreachable
        # Leases that wait only for this worker's uploads or fsyncs do not keep the
        # crawl open: the last are done when the store closes.
        if counts.queued + counts.leased + counts.waiting - self.leases.awaiting_store > 0:
            return True
        # Continuous: asleep until the next revisit falls due (its timer wakes the engine);
        # pages waiting to be safely stored become revisits once they are.
        return self.continuous and (counts.revisits > 0 or self.leases.awaiting_store > 0)

    def _counts_read(self) -> None:
        if self._said_pending and not self._pending():
            self.engine.wake()  # the engine asks again, and hears that nothing is left

    def enqueue_request(self, request: Request) -> bool:
        return self.intake.enqueue(request, self.spider)

    def next_request(self) -> Request | None:
        """The next claimed request, from the local buffer; an empty buffer is refilled off the
        reactor (as many due hosts as the downloader has free slots, in one step), and the
        engine woken when the claims are in."""
        self._ack_finished()
        if self.in_memory:
            return self.in_memory.popleft()
        claimed = self.link.claimed
        if self.store_room.full:  # pages fetched now could not be stored
            return None
        if not claimed:
            self.link.claim(max(1, self._concurrency - len(self.leases)))
            if not claimed:
                return None
        result = claimed.popleft()
        request = request_from_json(result.request, self.spider)
        request.meta[LEASE_META] = (result.fp, result.token)
        self.leases.hand_out(request, result.fp, result.token)
        self.crawler.stats.inc_value("frontier/claims")
        return request

    # ---------------------------------------------------------------- ends of leases

    def _ack_finished(self) -> None:
        """End the leases of the requests the engine has finished with."""
        in_progress = self.engine.in_progress()
        if in_progress is None or not len(self.leases):
            return
        finished = self.leases.finished(in_progress)
        for request, fp, token, failure in finished.failed:
            self.failures.failed(request, fp, token, failure, self.spider)
        for request, fp, token in finished.requeued:  # not a failure: its attempts not spent
            self.link.client.requeue(fp, token, request_to_json(request, self.spider)[0])
        if finished.kept:
            self.crawler.stats.inc_value("frontier/kept_leases", finished.kept)
        self._done(finished.done)

    def _done(self, entries: list[tuple[Request, int, int]]) -> None:
        """The URLs are done: an ack, or a revisit where the page was judged
        (``RevisitPipeline``); one frontier step for each kind."""
        unanswered = [f for _, fp, token in entries if (f := self.fetches.unanswered(fp, token))]
        if unanswered:  # a failure that is not ours to retry (it is reported before its ack)
            self._fetches_ended(unanswered)
        acks, revisits = [], []
        conditional = getattr(self.spider, "yields_pages", False)  # it reads a 304
        for request, fp, token in entries:
            state = self.leases.revisit_state((fp, token))
            if state is None:
                acks.append((fp, token))
                continue
            data, _ = request_to_json(revisit_request(request, state, conditional), self.spider)
            revisits.append(Revisit(fp, token, data, state["next_visit"], state["fetched_at"]))
        if acks:
            self.link.client.ack_many(acks)
        if revisits:
            self.link.client.revisit_many(revisits)
            self.revisit_timer.at(min(r.due for r in revisits))

    def _promote_due_revisits(self) -> None:
        """Queue the revisits that are due; wake the engine, and again for the next one."""
        if self._closed:
            return
        d = self.link.run(promote_revisits, self.frontier, time.time())
        d.addCallbacks(self._revisits_promoted, self.link.failed)

    def _revisits_promoted(self, result: tuple[int, float | None]) -> None:
        due, upcoming = result
        if due:
            self.crawler.stats.inc_value("revisit/due", due)
            self.waker.in_seconds(0)
        if upcoming is not None and not self._closed:
            self.revisit_timer.at(upcoming)

    def _item_scraped(self, item: Any, response: Response) -> None:
        if isinstance(item, Page):  # a project's own items are not pages stored
            self._page_done(item, response)

    def _page_done(self, page: Page, response: Response) -> None:
        """Scrapy is done with ``page``: its outcome in the pipelines goes with its lease."""
        outcome = self.outcomes.take(page)
        request = response.request if response is not None else None
        if outcome is None or request is None:
            return
        self.leases.page_done(request, outcome)
        if outcome.stored:  # not: no store, or it failed there
            self.link.client.count("stored")

    def _stored_safely(self, name: str) -> None:
        """An upload or fsync batch is safe: the URLs whose pages all waited for it are done."""
        self._done(self.leases.stored_safely(name))

    def _fetches_ended(self, ended: list[Fetch]) -> None:
        """Each ended fetch sets its host's next allowed time; its time goes in the histogram."""
        self.link.client.fetched_many(ended)
        for key, n in fetch_seconds_counts(ended).items():
            self.link.client.count(key, n)

    def _key_new_hosts(self) -> None:
        """With ``POLITENESS_PER_IP``, resolve each new host; it is held until then."""
        if self.frontier.new_hosts:  # a peek: the list is taken in the thread that fills it
            self.link.run(take_new_hosts, self.frontier).addCallbacks(self.keys.resolve, self.link.failed)
