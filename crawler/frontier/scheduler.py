"""``FrontierScheduler``: Scrapy's scheduler interface over a frontier backend."""

from __future__ import annotations

import ipaddress
import logging
import sys
import time
from collections import deque
from typing import TYPE_CHECKING, Any

from redis import RedisError
from scrapy import Request, signals
from scrapy.core.scheduler import BaseScheduler
from scrapy.utils.asyncio import call_later
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet.task import LoopingCall

from crawler import defaults
from crawler import signals as crawler_signals
from crawler.frontier.api import Claim, Entry, Fetch, Frontier, Revisit
from crawler.frontier.codec import (
    ATTEMPTS_META,
    FAILED_META,
    LEASE_META,
    mark_failed,
    request_from_json,
    request_to_json,
)
from crawler.frontier.connection import redis_clients, uses_redis
from crawler.frontier.crawl_id import crawl_id_of, fresh_crawl_command
from crawler.frontier.embedded import EmbeddedFrontier
from crawler.frontier.policy import (
    HostBudget,
    PolitenessPolicy,
    PriorityLevels,
    RetryPolicy,
    parse_retry_after,
)
from crawler.frontier.redis import RedisFrontier, ShardedRedisFrontier, open_redis_frontier
from crawler.frontier.revisit import RevisitPolicy, lastmod_time
from crawler.items import Page
from crawler.paths import embedded_frontier_path

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)

_FETCH = "_frontier_fetch"  # request.meta: [start time, status, Retry-After]
_UPLOADS = "_frontier_uploads"  # request.meta: store files its page waits to be uploaded in
# Meta of one fetch, not carried into a revisit; headers Scrapy's middlewares set again.
_ONE_FETCH_META = frozenset({"retry_times", "sitemap_lastmod", "frontier_keep_lease", ATTEMPTS_META})
_DEFAULT_HEADERS = (b"User-Agent", b"Accept", b"Accept-Language", b"Accept-Encoding", b"Cookie",
                    b"If-None-Match", b"If-Modified-Since")


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
    moment, so the scheduler reads that set (``engine._slot.inprogress``) whenever the
    engine calls it. When nothing is due, the scheduler wakes the engine as the next
    host falls due, instead of leaving it to the 5-second heartbeat.

    The frontier is embedded (SQLite under ``FRONTIER_DIR``) or, with ``REDIS_URL``,
    shared in Redis by every worker started with the same ``CRAWL_ID``.

    Settings: ``REDIS_URL``, ``FRONTIER_DIR``, ``CRAWL_ID``, ``POLITENESS_*``, ``HOST_PAGE_BUDGET``,
    ``FRONTIER_PRIORITY_LEVELS``, ``FRONTIER_LEASE_SECONDS``,
    ``FRONTIER_COMMIT_INTERVAL``, ``FRONTIER_CACHE_KIB``.
    """

    def __init__(self, crawler: Crawler, frontier: Frontier, levels: PriorityLevels,
                 commit_interval: float, crawl_id: str = "", persist: bool = True,
                 retry: RetryPolicy | None = None, continuous: bool = False) -> None:
        self.crawler = crawler
        self.continuous = continuous
        # Leases whose page was judged by RevisitPipeline: the state its revisit starts from.
        self._revisit_states: dict[tuple[int, int], dict] = {}
        self._awaiting: dict[tuple[int, int], Request] = {}  # leases waiting for uploads
        self._revisit_call: Any = None
        self._revisit_at = 0.0
        self.retry = retry or RetryPolicy()
        self.crawl_id = crawl_id
        self.persist = persist
        self.frontier = frontier
        self.levels = levels
        self.commit_interval = commit_interval
        self._resolving: set[str] = set()
        self._warned: set[str] = set()
        self._closed = False
        self._outbox: deque[tuple[str, tuple]] = deque()  # frontier steps waiting for Redis
        # Leases of pages stored in files not yet uploaded, and the other way round.
        self._waiting_files: dict[tuple[int, int], set[str]] = {}
        self._by_file: dict[str, set[tuple[int, int]]] = {}
        self._uploaded_files: set[str] = set()
        self._down_since: float | None = None
        self._backoff = 0.0
        self._retry_at = 0.0
        self.spider: Spider | None = None
        self._handed_out: list[tuple[Request, int, int]] = []  # (request, fp, lease token)
        # Claimed in one batch, not yet asked for by the engine; fetch ends, reported at the
        # end of the reactor turn in one batch.
        self._claimed: deque[Claim] = deque()
        self._fetches: list[Fetch] = []
        self._concurrency = max(1, crawler.settings.getint("CONCURRENT_REQUESTS"))
        self._wake_at = 0.0
        self._wake_call: Any = None
        self._timers: list[LoopingCall] = []
        crawler.signals.connect(self._reached_downloader, signal=signals.request_reached_downloader)
        crawler.signals.connect(self._response_downloaded, signal=signals.response_downloaded)
        crawler.signals.connect(self._left_downloader, signal=signals.request_left_downloader)
        crawler.signals.connect(self._crawl_delay, signal=crawler_signals.robots_crawl_delay)
        crawler.signals.connect(self._host_unavailable, signal=crawler_signals.host_unavailable)
        crawler.signals.connect(self._item_error, signal=signals.item_error)
        crawler.signals.connect(self._spider_error, signal=signals.spider_error)
        crawler.signals.connect(self._item_scraped, signal=signals.item_scraped)
        crawler.signals.connect(self._page_stored, signal=crawler_signals.page_captured)
        crawler.signals.connect(self._file_uploaded, signal=crawler_signals.store_file_uploaded)
        crawler.signals.connect(self._robots_fetched, signal=crawler_signals.robots_fetched)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> FrontierScheduler:
        s = crawler.settings
        policy = PolitenessPolicy(
            min_delay=s.getfloat("POLITENESS_MIN_DELAY", defaults.POLITENESS_MIN_DELAY),
            delay_factor=s.getfloat("POLITENESS_DELAY_FACTOR", defaults.POLITENESS_DELAY_FACTOR),
            max_delay=s.getfloat("POLITENESS_MAX_DELAY", defaults.POLITENESS_MAX_DELAY),
            backoff_max=s.getfloat("POLITENESS_BACKOFF_MAX", defaults.POLITENESS_BACKOFF_MAX),
        )
        levels = PriorityLevels(s.getint("FRONTIER_PRIORITY_LEVELS", defaults.FRONTIER_PRIORITY_LEVELS))
        crawl_id = crawl_id_of(crawler)
        common = {
            "policy": policy,
            "levels": levels,
            "budget": HostBudget(s.getint("HOST_PAGE_BUDGET", defaults.HOST_PAGE_BUDGET)),
            "lease_seconds": s.getfloat("FRONTIER_LEASE_SECONDS", defaults.FRONTIER_LEASE_SECONDS),
            "hold_new_hosts": s.getbool("POLITENESS_PER_IP", defaults.POLITENESS_PER_IP),
        }
        frontier: Frontier
        if uses_redis(s):
            frontier = open_redis_frontier(
                redis_clients(s), crawl_id,
                worker_timeout=s.getfloat("FRONTIER_WORKER_TIMEOUT", defaults.FRONTIER_WORKER_TIMEOUT),
                expected_urls=s.getint("SEEN_SET_EXPECTED_URLS", defaults.SEEN_SET_EXPECTED_URLS),
                seen_set=s.get("SEEN_SET", defaults.SEEN_SET),
                bloom_error=s.getfloat("SEEN_SET_ERROR_RATE", defaults.SEEN_SET_ERROR_RATE), **common)
        else:
            frontier = EmbeddedFrontier(
                embedded_frontier_path(s, crawl_id),
                cache_kib=s.getint("FRONTIER_CACHE_KIB", defaults.FRONTIER_CACHE_KIB), **common)
        if s.getfloat("DOWNLOAD_DELAY") or s.getbool("AUTOTHROTTLE_ENABLED"):
            logger.warning("FrontierScheduler keeps politeness itself: set DOWNLOAD_DELAY = 0 and "
                           "AUTOTHROTTLE_ENABLED = False, or Scrapy adds delays of its own.")
        logger.info("Crawl id %s, frontier state: %s", crawl_id, frontier.describe())
        return cls(crawler, frontier, levels, s.getfloat(
            "FRONTIER_COMMIT_INTERVAL", defaults.FRONTIER_COMMIT_INTERVAL), crawl_id,
            s.getbool("SCHEDULER_PERSIST", defaults.SCHEDULER_PERSIST),
            RetryPolicy.parse(s.get("FRONTIER_RETRY_DELAYS", defaults.FRONTIER_RETRY_DELAYS)),
            s.getbool("CRAWL_CONTINUOUS", defaults.CRAWL_CONTINUOUS))

    # ---------------------------------------------------------------- lifecycle

    def open(self, spider: Spider) -> None:
        self.spider = spider
        self._promote_due_revisits()  # a rerun revisits what has fallen due since
        done = self.frontier.done_count()
        if done and not self.frontier.has_pending() and not self.continuous:
            self._say_finished(done)
        elif done or self.frontier.queued:
            logger.info("Resuming the crawl: %d URLs done, %d queued", done, self.frontier.queued)
        self._key_new_hosts()
        # Often enough that a worker beats at least three times per FRONTIER_WORKER_TIMEOUT.
        housekeeping = min(5.0, self.crawler.settings.getfloat(
            "FRONTIER_WORKER_TIMEOUT", defaults.FRONTIER_WORKER_TIMEOUT) / 3)
        self._housekeeping()  # the first heartbeat, before any claim
        for interval, step in ((self.commit_interval, self._commit), (housekeeping, self._housekeeping)):
            timer = LoopingCall(step)
            timer.start(interval, now=False)
            self._timers.append(timer)

    def _say_finished(self, done: int) -> None:
        fresh = fresh_crawl_command(sys.argv, self.crawl_id, time.strftime("%Y%m%d-%H%M%S"))
        if isinstance(self.frontier, EmbeddedFrontier):
            how = f"delete {self.frontier.db_path.parent} and run the same command again, or run:\n  {fresh}"
        else:
            how = (f"run `scrapy forget {self.crawl_id} -s REDIS_URL=...` and the same command again, "
                   f"or run:\n  {fresh}")
        revisits = self.frontier.revisits
        later = ""
        if revisits:
            next_at = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.frontier.next_revisit()))
            later = (f"; {revisits} URLs are revisited as they fall due (the next at {next_at}): rerun "
                     "then, or crawl with -s CRAWL_CONTINUOUS=True")
        logger.warning("Crawl %s already finished (%d URLs done, state in %s): URLs seen then are not "
                       "fetched again%s. To crawl afresh, %s",
                       self.crawl_id, done, self.frontier.describe(), later, how)

    def close(self, reason: str) -> None:
        self._closed = True
        for timer in self._timers:
            if timer.running:
                timer.stop()
        for call in (self._wake_call, self._revisit_call):
            if call is not None:
                call.cancel()
        # Requests still in progress keep their lease: the next run fetches them again.
        self._report_fetches()
        self._ack_finished()
        while self._claimed:  # claimed but never handed out: back to their queues
            claim = self._claimed.popleft()
            self._write("requeue", claim.fp, claim.token, claim.request)
        self._retry_at = 0.0
        self._housekeeping()
        if self._outbox:
            logger.error("%d frontier steps could not reach Redis; their URLs will be fetched "
                         "again once their leases expire", len(self._outbox))
        if isinstance(self.frontier, RedisFrontier | ShardedRedisFrontier) and not self.persist:
            self._forget_if_finished()
        self.frontier.close()

    def _forget_if_finished(self) -> None:
        """``SCHEDULER_PERSIST = False``: a finished crawl's keys go with its last worker."""
        try:
            if not self.frontier.has_pending():
                logger.info("Crawl %s finished: %d keys deleted (SCHEDULER_PERSIST = False)",
                            self.crawl_id, self.frontier.forget())
        except RedisError as error:
            logger.warning("Could not delete the finished crawl's keys: %s", error)

    # ---------------------------------------------------------------- Redis outages

    def _write(self, name: str, *args: Any, default: Any = None) -> Any:
        """Call a frontier step; while the shared frontier is unreachable, keep it (and
        every later one, in order) in an outbox replayed when it is back: nothing lost."""
        if self._outbox and not self._flush():
            self._outbox.append((name, args))
            return default
        try:
            return getattr(self.frontier, name)(*args)
        except RedisError as error:
            self._outage(error)
            self._outbox.append((name, args))
            return default

    def _flush(self) -> bool:
        """Replay the outbox; False while the frontier is still unreachable."""
        if time.monotonic() < self._retry_at:
            return False
        while self._outbox:
            name, args = self._outbox[0]
            try:
                getattr(self.frontier, name)(*args)
            except RedisError as error:
                self._outage(error)
                return False
            self._outbox.popleft()
        if self._down_since is not None:
            logger.warning("Redis is back after %.1f s; buffered steps replayed",
                           time.monotonic() - self._down_since)
            self._down_since, self._backoff = None, 0.0
        return True

    def _outage(self, error: Exception) -> None:
        now = time.monotonic()
        if self._down_since is None:
            self._down_since = now
            logger.warning("Redis unreachable (%s): buffering frontier steps, retrying with backoff", error)
        self.crawler.stats.inc_value("frontier/redis_errors")
        self._backoff = min(30.0, max(0.5, self._backoff * 2))
        self._retry_at = now + self._backoff
        self._wake_engine_in(self._backoff)

    def _commit(self) -> None:
        self._ack_finished()
        self.frontier.commit()

    def _housekeeping(self) -> None:
        if not self._flush():
            return
        now = time.time()
        try:
            # Our own requests may wait long (robots.txt, slow pipelines): their leases are
            # ours, so renew them; reaping is for the leases of workers that died.
            expires = now + self.frontier.lease_seconds
            for _, fp, token in self._handed_out:
                self.frontier.renew(fp, token, expires)
            for claim in self._claimed:
                self.frontier.renew(claim.fp, claim.token, expires)
            for fp, token in self._waiting_files:
                self.frontier.renew(fp, token, expires)
            for worker, leases, silent in self.frontier.heartbeat(now):
                logger.warning("Worker %s has been silent for %.0f s: its %d leased URLs are queued "
                               "again and their hosts freed", worker, silent, leases)
            self.frontier.reap(now)
            if self.frontier.due_retries(now):
                self._wake_engine_in(0)
            self._promote_due_revisits()
            stats = self.crawler.stats
            for key, value in self.frontier.gauges(now).items():
                stats.set_value(f"frontier/{key}", value)
            for key, value in self.frontier.counters.items():
                stats.set_value(f"frontier/{key}", value)
        except RedisError as error:
            self._outage(error)

    # ---------------------------------------------------------------- engine side

    def has_pending_requests(self) -> bool:
        self._ack_finished()
        if self._outbox and not self._flush():
            return True  # never close a crawl while its frontier is unreachable
        try:
            # Leases that wait only for this worker's uploads do not keep the crawl open:
            # the last files are uploaded when it closes.
            pending = self.frontier.queued + self.frontier.leased + self.frontier.waiting
            if pending - len(self._waiting_files) > 0:
                return True
            # Continuous: asleep until the next revisit falls due (the timer wakes the engine).
            return self.continuous and self.frontier.revisits > 0
        except RedisError as error:
            self._outage(error)
            return True

    def enqueue_request(self, request: Request) -> bool:
        fp = int.from_bytes(self.crawler.request_fingerprinter.fingerprint(request)[:8], "big")
        inherited = request.meta.pop(LEASE_META, None)
        request.meta.pop(_FETCH, None)
        try:
            data, dropped = request_to_json(request, self.spider)
        except ValueError as error:  # its callback or errback is not a method of the spider
            self.crawler.stats.inc_value("frontier/rejected/callback")
            callback = getattr(request.callback, "__qualname__", request.callback)
            self._warn_once(f"callback:{callback}", "Request for %s not queued: its callback or errback "
                            "is not a method of the spider, so it cannot be stored (%s)", request.url, error)
            return False
        if dropped:
            self.crawler.stats.inc_value("frontier/meta_dropped", len(dropped))
            for key in dropped:
                self._warn_once(f"meta:{key}", "Request for %s: meta[%r] cannot be stored as JSON; it "
                                "is dropped from this and every later request", request.url, key)
        # A retry of the URL its lease holds goes back to the queue; that lease ends.
        if inherited is not None and inherited[0] == fp and self._write(
                "requeue", fp, inherited[1], data, default=True):
            self.crawler.stats.inc_value("frontier/requeued")
            return True
        host = urlparse_cached(request).hostname or ""
        level = self.levels.level(request.meta.get("depth", 0), request.priority)
        added = self._write("add", [Entry(fp, host, level, data)], request.dont_filter, default=[True])[0]
        if added:
            self.crawler.stats.inc_value("frontier/enqueued")
        elif request.meta.get("sitemap_lastmod"):
            self._sitemap_says_changed(fp, host, request.meta["sitemap_lastmod"])
        self._key_new_hosts()
        return added

    def _sitemap_says_changed(self, fp: int, host: str, lastmod: str) -> None:
        """A sitemap's <lastmod> later than a URL's last fetch makes its revisit due now."""
        scheduled = self._write("revisit_at", fp, host)
        if scheduled and RevisitPolicy.due_by_lastmod(scheduled[1], lastmod_time(lastmod)):
            if self._write("hasten_revisit", fp, host, time.time(), default=False):
                self.crawler.stats.inc_value("revisit/lastmod")
                self._arm_revisits(time.time())

    def _warn_once(self, key: str, message: str, *args: Any) -> None:
        """One WARNING per kind of bad request (a callback, a meta key), not one per URL."""
        if key not in self._warned and len(self._warned) < 1000:
            self._warned.add(key)
            logger.warning(message, *args)

    def next_request(self) -> Request | None:
        self._ack_finished()
        if self._outbox and not self._flush():
            return None
        if not self._claimed and not self._claim(time.time()):
            return None
        result = self._claimed.popleft()
        request = request_from_json(result.request, self.spider)
        request.meta[LEASE_META] = (result.fp, result.token)
        self._handed_out.append((request, result.fp, result.token))
        self.crawler.stats.inc_value("frontier/claims")
        return request

    def _claim(self, now: float) -> bool:
        """Claim as many due hosts as the downloader has free slots, in one step; False
        when none is due (the engine is woken when the next one falls due)."""
        limit = max(1, self._concurrency - len(self._handed_out))
        try:
            claims, wait = self.frontier.claim_many(now, limit)
        except RedisError as error:
            self._outage(error)
            return False
        self._claimed.extend(claims)
        if wait is not None and not claims:
            self._wake_engine_in(wait)
        return bool(claims)

    def _ack_finished(self) -> None:
        """Ack the URLs whose Request the engine has finished with."""
        slot = getattr(self.crawler.engine, "_slot", None)
        if slot is None or not self._handed_out:
            return
        in_progress = slot.inprogress
        still, done = [], []
        for entry in self._handed_out:
            if entry[0] in in_progress:
                still.append(entry)
            elif reason := entry[0].meta.get(FAILED_META):
                self._failed(*entry, reason)
            elif entry[0].meta.get("frontier_keep_lease"):
                self.crawler.stats.inc_value("frontier/kept_leases")  # not stored: fetched again
            elif files := entry[0].meta.get(_UPLOADS, set()) - self._uploaded_files:
                key = (entry[1], entry[2])  # stored, but safe only once uploaded
                self._waiting_files[key] = files
                self._awaiting[key] = entry[0]
                for name in files:
                    self._by_file.setdefault(name, set()).add(key)
            else:
                done.append(entry)
        self._handed_out = still
        self._done(done)

    def _done(self, entries: list[tuple[Request, int, int]]) -> None:
        """End the leases of URLs finished with: an ack, or a revisit where the page was
        judged (``RevisitPipeline``), in one frontier step each."""
        acks, revisits = [], []
        for request, fp, token in entries:
            state = self._revisit_states.pop((fp, token), None)
            if state is None:
                acks.append((fp, token))
            else:
                revisits.append(self._revisit(request, fp, token, state))
        if acks:
            self._write("ack_many", acks)
        if revisits:
            self._write("revisit_many", revisits)
            self._arm_revisits(min(r.due for r in revisits))

    def _revisit(self, request: Request, fp: int, token: int, state: dict) -> Revisit:
        """The request that fetches the URL again: conditional (ETag, Last-Modified) for the
        spiders that read a 304 (``yields_pages``), carrying the state to compare with."""
        meta = {k: v for k, v in request.meta.items()
                if not k.startswith(("_", "redirect_")) and k not in _ONE_FETCH_META}
        meta["revisit"] = state
        headers = request.headers.copy()
        for name in _DEFAULT_HEADERS:
            headers.pop(name, None)
        if getattr(self.spider, "yields_pages", False):
            meta["handle_httpstatus_list"] = sorted({*meta.get("handle_httpstatus_list", ()), 304})
            if state.get("etag"):
                headers[b"If-None-Match"] = state["etag"]
            if state.get("last_modified"):
                headers[b"If-Modified-Since"] = state["last_modified"]
        data, _ = request_to_json(request.replace(meta=meta, headers=headers), self.spider)
        return Revisit(fp, token, data, state["next_visit"], state["fetched_at"])

    def _promote_due_revisits(self) -> None:
        """Queue the revisits that are due; wake the engine, and again for the next one."""
        self._revisit_call = None
        if self._closed:
            return
        now = time.time()
        due = self._write("due_revisits", now, default=0)
        if due:
            self.crawler.stats.inc_value("revisit/due", due)
            self._wake_engine_in(0)
        upcoming = self._write("next_revisit", default=None)
        if upcoming is not None:
            self._arm_revisits(upcoming)

    def _arm_revisits(self, at: float) -> None:
        """Promote due revisits at ``at`` (Unix time), unless a call comes sooner."""
        if self._revisit_call is not None:  # pending: it sets itself to None when it runs
            if self._revisit_at <= at:
                return
            self._revisit_call.cancel()
        self._revisit_at = at
        self._revisit_call = call_later(max(0.0, at - time.time()) + 0.01, self._promote_due_revisits)

    def _failed(self, request: Request, fp: int, token: int, reason: str) -> None:
        """The URL failed (fetch, callback, pipeline or store): retry it after the next
        delay of the chain, durably in the frontier, or give it up as a dead letter."""
        attempts = request.meta.get(ATTEMPTS_META, 0) + 1
        request.meta[ATTEMPTS_META] = attempts
        data, _ = request_to_json(request, self.spider)
        delay = self.retry.delay_after(attempts)
        now = time.time()
        if delay is None:
            self._write("dead_letter", fp, token, data, reason, now)
            self.crawler.stats.inc_value("frontier/dead_letters")
            logger.warning("Giving up %s after %d attempts (%s): a dead letter (scrapy deadletters %s)",
                           request.url, attempts, reason, self.crawl_id)
        else:
            self._write("retry_later", fp, token, data, now + delay)
            call_later(delay, self._promote_due_retries)
            self.crawler.stats.inc_value("frontier/retries")
            logger.info("%s failed (%s, attempt %d): tried again in %.0f s", request.url, reason,
                        attempts, delay)

    def _promote_due_retries(self) -> None:
        """A retry of ours falls due now (housekeeping promotes the others' too)."""
        if not self._closed and self._write("due_retries", time.time(), default=0):
            self._wake_engine_in(0)

    def _item_scraped(self, item: Any, response: Response) -> None:
        if isinstance(item, Page):  # a project's own items are not pages stored
            self._page_stored(item, response)

    def _page_stored(self, page: Page, response: Response) -> None:
        """A page went through the store (the scheduler, built last, hears of it last)."""
        lease = response.request.meta.get(LEASE_META) if response is not None and response.request else None
        if page.revisit_state is not None and lease is not None:
            self._revisit_states[tuple(lease)] = page.revisit_state
        if page.stored is None:
            return  # no store, or it failed there
        self._write("count", "stored")
        if page.awaiting_upload and response is not None and response.request is not None:
            response.request.meta.setdefault(_UPLOADS, set()).update(page.awaiting_upload)

    def _file_uploaded(self, name: str) -> None:
        """A store file is uploaded: ack the URLs whose pages were all waiting for it."""
        self._uploaded_files.add(name)
        for key in self._by_file.pop(name, ()):
            waiting = self._waiting_files[key]
            waiting.discard(name)
            if not waiting:
                del self._waiting_files[key]
                self._done([(self._awaiting.pop(key), *key)])

    def _item_error(self, response: Response, failure: Any) -> None:
        """A page that failed in the pipelines is not stored: an attempt that failed."""
        if response is not None and response.request is not None:
            mark_failed(response.request, f"pipeline: {failure.getErrorMessage()}")

    def _spider_error(self, failure: Any, response: Response) -> None:
        """The callback raised: an attempt that failed (a poison page ends as a dead letter)."""
        if response is not None and response.request is not None:
            mark_failed(response.request, f"callback: {failure.type.__name__}: {failure.getErrorMessage()}")

    # ---------------------------------------------------------------- robots.txt

    def _crawl_delay(self, host: str, delay: float) -> None:
        self._write("set_crawl_delay", host, delay)

    def _robots_fetched(self, host: str, seconds: float) -> bool:
        """robots.txt was the host's fetch: its next one waits the policy's gap."""
        until = time.time() + self.frontier.policy.adaptive_gap(seconds)
        return self._write("defer", host, until, default=True)

    def _host_unavailable(self, host: str, until: float) -> bool:
        """Hold the host's URLs until ``until``; True: its requests may come back to us."""
        return self._write("defer", host, until, default=True)

    # ---------------------------------------------------------------- per-IP politeness

    def _key_new_hosts(self) -> None:
        """With ``POLITENESS_PER_IP``, resolve each new host; it is held until then."""
        names, self.frontier.new_hosts = self.frontier.new_hosts, []
        for name in names:
            try:
                ipaddress.ip_address(name)
            except ValueError:
                if name not in self._resolving:
                    self._resolving.add(name)
                    from twisted.internet import reactor  # the crawl's reactor, its resolver

                    d = reactor.resolve(name)
                    d.addCallbacks(self._resolved, self._unresolved, (name,), None, (name,))
            else:
                self._write("set_politeness_key", name, name)

    def _resolved(self, address: str, name: str) -> None:
        self._resolving.discard(name)
        if not self._closed:
            self._write("set_politeness_key", name, address)
            self._wake_engine_in(0)

    def _unresolved(self, failure: Any, name: str) -> None:
        # The fetch will fail with the DNS error and be counted; politeness by name.
        self._resolving.discard(name)
        logger.debug("Could not resolve %s: %s", name, failure.getErrorMessage())
        if not self._closed:
            self._write("set_politeness_key", name, name)
            self._wake_engine_in(0)

    def _wake_engine_in(self, seconds: float) -> None:
        """Ask the engine for requests again when the next host falls due."""
        at = time.monotonic() + seconds
        if self._wake_call is not None:
            if self._wake_at <= at + 0.001:
                return
            self._wake_call.cancel()
        self._wake_at = at
        self._wake_call = call_later(max(0.0, seconds), self._wake_engine)

    def _wake_engine(self) -> None:
        self._wake_call = None
        slot = getattr(self.crawler.engine, "_slot", None)  # no public hook exists in 2.19
        if slot is not None:
            slot.nextcall.schedule()

    # ---------------------------------------------------------------- fetch feedback

    def _reached_downloader(self, request: Request) -> None:
        if LEASE_META in request.meta:
            request.meta[_FETCH] = [time.monotonic(), None, None]

    def _response_downloaded(self, response: Response, request: Request) -> None:
        fetch = request.meta.get(_FETCH)
        if fetch is not None:
            fetch[1] = response.status
            fetch[2] = response.headers.get(b"Retry-After")

    def _left_downloader(self, request: Request) -> None:
        fetch = request.meta.pop(_FETCH, None)
        lease = request.meta.get(LEASE_META)
        if fetch is None or lease is None:
            return
        now = time.time()
        seconds = time.monotonic() - fetch[0]
        status, retry_after = fetch[1], parse_retry_after(fetch[2], now)
        if not self._fetches:  # the fetches that end in this reactor turn go in one step
            call_later(0, self._report_fetches)
        self._fetches.append(Fetch(lease[0], lease[1], now, seconds, status, retry_after))

    def _report_fetches(self) -> None:
        """Each ended fetch sets its host's next allowed time and frees it."""
        fetches, self._fetches = self._fetches, []
        if fetches:
            self._write("fetched_many", fetches)
