"""The scheduler's parts, each on its own: no engine, no reactor, no server."""

from __future__ import annotations

import logging
import threading
import time
from types import SimpleNamespace

from redis import ConnectionError as RedisConnectionError
from scrapy import Request
from scrapy import signals as scrapy_signals
from scrapy.http import Response
from scrapy.signalmanager import SignalManager
from twisted.internet import defer

from crawler import signals as crawler_signals
from crawler.context.outcomes import PageOutcome, PageOutcomes
from crawler.frontier.api import Entry, Fetch, FrontierUnavailable
from crawler.frontier.backends.embedded.frontier import EmbeddedFrontier
from crawler.frontier.backends.redis.shard_steps import ShardPauses
from crawler.frontier.failure import FailureKind, FetchFailure
from crawler.frontier.outages import OutageNotices
from crawler.frontier.policy import PolitenessPolicy
from crawler.items import Page
from crawler.scheduling.calls import InlineCalls
from crawler.scheduling.client import AddStep, FrontierClient
from crawler.scheduling.codec import FAILED_META, LEASE_META, revisit_request
from crawler.scheduling.fetches import FETCH_META, FetchReports
from crawler.scheduling.host_news import HostNews
from crawler.scheduling.leases import LeaseBook
from crawler.scheduling.link import FrontierLink
from crawler.scheduling.outbox import Outbox, run_steps
from crawler.scheduling.upkeep import Counts, PendingCounts


def test_the_lease_book_sorts_finished_requests_by_how_their_lease_ends():
    book = LeaseBook()
    running, done, failed, kept, uploading = (Request(f"http://a.test/{i}") for i in range(5))
    for i, request in enumerate((running, done, failed, kept, uploading)):
        book.hand_out(request, i, 100 + i)
    failed.meta[FAILED_META] = FetchFailure(FailureKind.TRANSIENT, "callback: boom")
    kept.meta["frontier_keep_lease"] = True
    for request, lease in ((done, (1, 101)), (failed, (2, 102)), (uploading, (4, 104))):
        request.meta[LEASE_META] = lease
    book.page_done(uploading, PageOutcome(stored=True, awaiting=("meta/a", "warc/a")))
    book.page_done(done, PageOutcome(revisit_state={"next_visit": 5.0}))
    book.page_done(failed, PageOutcome(revisit_state={"next_visit": 5.0}))
    finished = book.finished({running})
    assert [fp for _, fp, _ in finished.done] == [1]
    assert [(fp, str(failure)) for _, fp, _, failure in finished.failed] == [(2, "callback: boom")]
    assert finished.kept == 1 and len(book) == 1 and book.awaiting_store == 1
    assert sorted(book.leases()) == [(0, 100), (4, 104)]
    assert book.revisit_state((1, 101)) == {"next_visit": 5.0}
    assert book.revisit_state((1, 101)) is None  # once
    assert book.revisit_state((2, 102)) is None  # a failed lease has no revisit
    # Uploaded one file of two: still waiting; both: done.
    assert book.stored_safely("warc/a") == []
    assert [(fp, token) for _, fp, token in book.stored_safely("meta/a")] == [(4, 104)]
    assert book.awaiting_store == 0


class FlakyFrontier:
    def __init__(self) -> None:
        self.down = False
        self.calls: list[tuple] = []

    def ack_many(self, leases):
        if self.down:
            raise FrontierUnavailable("connection refused")
        self.calls.append(("ack_many", leases))
        return [True] * len(leases)


class Timers:
    """Timers that never fire: the tests replay by hand (``drain``)."""

    def __init__(self) -> None:
        self.asked: list[float] = []

    def later(self, seconds: float, fn: object) -> Timers:
        self.asked.append(seconds)
        return self

    def cancel(self) -> None:
        """Nothing to cancel."""


def test_the_outbox_keeps_steps_in_order_through_an_outage_and_says_so_once(caplog):
    frontier, stats, retries, results, drained = FlakyFrontier(), [], [], [], []
    outbox = Outbox(InlineCalls(frontier), stats.append, retries.append, later=Timers().later)
    FrontierClient(outbox).ack_many([(1, 1)]).addCallback(results.append)
    assert results == [[True]]
    frontier.down = True
    with caplog.at_level(logging.WARNING):
        FrontierClient(outbox).ack_many([(2, 2)]).addCallback(results.append)
        FrontierClient(outbox).ack_many([(3, 3)]).addCallback(results.append)  # waits behind it
        outbox.drain().addCallback(drained.append)
    assert drained == [False] and len(outbox) == 2 and results == [[True]] and outbox.down
    assert stats == ["frontier/redis_errors"] * 2 and retries == [0.5, 1.0]
    frontier.down = False
    with caplog.at_level(logging.WARNING):
        outbox.drain().addCallback(drained.append)
    outbox.cancel()
    assert drained == [False, True] and results == [[True]] * 3 and not outbox.down and retries[-1] == 0
    assert frontier.calls == [("ack_many", [(1, 1)]), ("ack_many", [(2, 2)]), ("ack_many", [(3, 3)])]
    messages = [r.getMessage() for r in caplog.records]
    assert sum("unreachable" in m for m in messages) == 1 and sum("is back" in m for m in messages) == 1


def test_a_call_that_hangs_is_an_outage_said_once_and_over_when_a_step_gets_through(caplog):
    frontier, stats = FlakyFrontier(), []
    outbox = Outbox(InlineCalls(frontier), stats.append, lambda seconds: None, later=Timers().later)
    with caplog.at_level(logging.WARNING):
        outbox.stalled(6.0)
        outbox.stalled(7.0)
        assert outbox.down and stats == ["frontier/redis_stalls"]
        FrontierClient(outbox).ack_many([(1, 1)])
    assert not outbox.down and outbox.idle
    messages = [r.getMessage() for r in caplog.records]
    assert sum("not answered for 6 s" in m for m in messages) == 1
    assert sum("is back" in m for m in messages) == 1


def test_pending_counts_hold_only_when_read_after_the_latest_write():
    pending = PendingCounts()
    assert pending.stale(written=0) and not pending.holds(written=0)
    pending.update(Counts(queued=0, leased=1, waiting=0, revisits=0), written=3, started=pending.start())
    assert pending.holds(written=3) and not pending.stale(written=3)
    assert not pending.holds(written=4) and pending.stale(written=4)  # a write since the read


def test_the_lease_book_counts_pages_waiting_for_uploads_apart_from_those_waiting_for_fsync():
    book = LeaseBook()
    synced, uploaded = Request("http://a.test/1"), Request("http://a.test/2")
    book.hand_out(synced, 1, 101)
    book.hand_out(uploaded, 2, 102)
    book.page_done(synced, PageOutcome(stored=True, awaiting=("fsync:0",)))
    book.page_done(uploaded, PageOutcome(stored=True, awaiting=("fsync:0", "warc/a")))
    book.finished(set())
    assert (book.awaiting_store, book.awaiting_upload) == (2, 1)
    book.stored_safely("fsync:0")
    assert (book.awaiting_store, book.awaiting_upload) == (1, 1)


def test_fetch_reports_time_each_leased_fetch_and_report_them_together():
    reported = []
    turns = []
    reports = FetchReports(reported.append, lambda delay, flush: turns.append(flush))
    leased, other = Request("http://a.test/1", meta={"_frontier_lease": (7, 70)}), Request("http://b.test/")
    for request in (leased, other):
        reports.reached_downloader(request)
    assert FETCH_META not in other.meta
    reports.response_downloaded(Response(leased.url, status=429, headers={"Retry-After": "30"}), leased)
    reports.left_downloader(leased)
    reports.left_downloader(other)
    assert len(turns) == 1  # one flush for the turn
    turns[0]()
    (fetch,) = reported[0]
    assert (fetch.fp, fetch.token, fetch.status, fetch.retry_after) == (7, 70, 429, 30.0)
    assert fetch.fetch_seconds >= 0 and FETCH_META not in leased.meta


def test_a_fetch_with_no_response_waits_for_its_lease_to_end_to_be_reported():
    reported, turns = [], []
    reports = FetchReports(reported.append, lambda delay, flush: turns.append(flush))
    failed = Request("http://down.test/", meta={"_frontier_lease": (8, 80)})
    reports.reached_downloader(failed)
    reports.left_downloader(failed)  # no response_downloaded: no answer
    assert turns == [] and reports.unanswered(9, 90) is None
    fetch = reports.unanswered(8, 80)
    assert (fetch.fp, fetch.token, fetch.status, fetch.hold_until) == (8, 80, None, 0.0)
    assert reports.unanswered(8, 80) is None  # once


def test_a_revisit_request_is_conditional_and_drops_what_belonged_to_one_fetch():
    request = Request("http://a.test/p", headers={"User-Agent": "old", "X-Mine": "1"},
                      meta={"depth": 2, "redirect_times": 1, "retry_times": 1, "_frontier_lease": (1, 2),
                            "sitemap_lastmod": "2024-01-01"})
    state = {"etag": '"e1"', "last_modified": "Mon, 01 Jan 2024 00:00:00 GMT", "next_visit": 9.0}
    again = revisit_request(request, state, conditional=True)
    assert again.headers[b"If-None-Match"] == b'"e1"' and b"If-Modified-Since" in again.headers
    assert b"User-Agent" not in again.headers and again.headers[b"X-Mine"] == b"1"
    assert again.meta == {"depth": 2, "revisit": state, "handle_httpstatus_list": [304]}
    plain = revisit_request(request, state, conditional=False)  # a spider that cannot read a 304
    assert b"If-None-Match" not in plain.headers and "handle_httpstatus_list" not in plain.meta


class CountingFrontier:
    def __init__(self) -> None:
        self.seen: set[int] = set()
        self.calls: list[tuple] = []

    def add(self, entries, force=False):
        self.calls.append(("add", len(entries), force))
        added = []
        for e in entries:  # in order, as every backend: a URL twice in one call is added once
            added.append(e.fp not in self.seen or force)
            self.seen.add(e.fp)
        return added

    def ack_many(self, leases):
        self.calls.append(("ack_many", len(leases)))
        return [True] * len(leases)


def test_a_run_of_adds_goes_as_one_call_and_each_step_hears_its_own_answer():
    frontier = CountingFrontier()
    a, b, c = (Entry(fp, "a.test", 0, "{}") for fp in (1, 2, 3))
    steps = [AddStep([a], False), AddStep([b, a], False), lambda f: f.ack_many([(9, 9)]),
             AddStep([a], True), AddStep([c], False)]
    results, error = run_steps(frontier, steps)
    answers = [value for ok, value in results]
    assert error is None and all(ok for ok, _ in results)
    assert answers == [[True], [True, False], [True], [True], [True]]
    assert frontier.calls == [("add", 3, False), ("ack_many", 1), ("add", 1, True), ("add", 1, False)]


def test_a_failover_that_comes_and_goes_is_said_once(caplog):
    pauses = ShardPauses(str)
    with caplog.at_level(logging.INFO, logger="crawler.frontier.backends.redis.shard_steps"):
        for _ in range(3):  # a master failed over: its shards fail, answer, fail again...
            pauses.failed([0, 1], RedisConnectionError("refused"))
            pauses.answered(0)
            pauses.answered(1)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2 and "unreachable" in warnings[0] and "answers again" in warnings[1]


def test_shards_failing_in_threads_at_once_are_said_once(caplog):
    def slow_describe(shard: int) -> str:  # widens the window between "begun?" and "begun"
        time.sleep(0.05)
        return str(shard)

    pauses = ShardPauses(slow_describe)
    with caplog.at_level(logging.INFO, logger="crawler.frontier.backends.redis.shard_steps"):
        threads = [threading.Thread(target=pauses.failed, args=([shard], RedisConnectionError("refused")))
                   for shard in range(6)]  # the cluster's claim threads, one per shard
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=10)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "unreachable" in warnings[0], warnings


class RecordingClient:
    """The ``FrontierClient`` calls that host news makes, recorded."""

    def __init__(self) -> None:
        self.steps: list[tuple] = []

    def set_crawl_delay(self, name, delay):
        self.steps.append(("set_crawl_delay", name, delay))

    def demote(self, name, margin):
        self.steps.append(("demote", name, margin))

    def defer(self, name, until):
        self.steps.append(("defer", name, until))


def test_host_news_from_signals_become_frontier_steps():
    client = RecordingClient()
    steps = client.steps
    news = HostNews(client, PolitenessPolicy(min_delay=1.0, delay_factor=0.0))
    manager = SignalManager()
    news.connect(manager)
    manager.send_catch_log(crawler_signals.robots_crawl_delay, host="a.test", delay=5.0)
    manager.send_catch_log(crawler_signals.host_demoted, host="b.test", margin=10)
    manager.send_catch_log(crawler_signals.host_unavailable, host="c.test", until=99.0)
    before = time.time()
    manager.send_catch_log(crawler_signals.robots_fetched, host="d.test", seconds=0.2)
    assert steps[:3] == [("set_crawl_delay", "a.test", 5.0), ("demote", "b.test", 10),
                         ("defer", "c.test", 99.0)]
    name, host, until = steps[3]
    assert (name, host) == ("defer", "d.test")
    assert before + 1.0 <= until <= time.time() + 1.0  # the policy's gap after it


class QueuedCalls:
    """The frontier's I/O thread held still: calls wait in the order asked until ``run_all``."""

    def __init__(self, frontier) -> None:
        self.frontier = frontier
        self.queue: list[tuple] = []

    def run(self, fn, *args):
        done = defer.Deferred()
        self.queue.append((fn, args, done))
        return done

    def run_all(self) -> None:
        for _ in range(100):  # each call's callbacks may ask for more
            if not self.queue:
                return
            fn, args, done = self.queue.pop(0)
            done.callback(fn(*args))

    def waiting_for(self) -> float:
        return 0.0


def test_an_empty_claim_sent_before_a_fetch_report_asks_again():
    """The engine asks while its one host's fetch is in flight; the fetch ends and its report
    (which frees the host) goes after that claim, and the engine's next ask is dropped as a
    claim is on its way. The claim's "nothing due" is stale: the engine is asked again, or
    the host waits for Scrapy's 5 s heartbeat."""
    frontier = EmbeddedFrontier(":memory:", policy=PolitenessPolicy(min_delay=0.5, delay_factor=0))
    frontier.add([Entry(fp, "a.test", 0, f"/{fp}") for fp in (1, 2)])
    calls, wakes, waits = QueuedCalls(frontier), [], []
    link = FrontierLink(frontier, lambda key: None, lambda: wakes.append(1), waits.append, 10.0, calls)
    link.claim(4)
    calls.run_all()
    handed = link.claimed.popleft()
    assert wakes == [1]
    link.claim(4)  # the engine asks while the fetch is in flight
    link.client.fetched_many([Fetch(handed.fp, handed.token, time.time(), 0.01, 200)])  # it ended
    link.claim(4)  # asked again: a claim is on its way
    calls.run_all()
    assert not link.claimed and wakes == [1, 1]  # that claim ran before the report: asked again
    link.claim(4)
    calls.run_all()
    assert not link.claimed and wakes == [1, 1]  # nothing written since: its answer holds
    assert len(waits) == 1 and 0 < waits[0] <= 0.5  # the host falls due after its gap
    frontier.close()


def test_an_outage_that_flaps_is_told_at_warning_once():
    now = [0.0]
    notices = OutageNotices(quiet=60.0, clock=lambda: now[0])
    assert (notices.start(), notices.end()) == (logging.WARNING, logging.WARNING)
    now[0] = 30.0  # failed again half a minute after it answered: the same failover
    assert (notices.start(), notices.end()) == (logging.INFO, logging.INFO)
    now[0] = 200.0  # a new outage
    assert notices.start() == logging.WARNING


def test_the_outbox_tells_an_outage_that_flaps_once(caplog):
    frontier = FlakyFrontier()
    outbox = Outbox(InlineCalls(frontier), lambda stat: None, lambda seconds: None, later=Timers().later)
    with caplog.at_level(logging.INFO, logger="crawler.scheduling.outbox"):
        for _ in range(3):  # down, answers, down again...
            frontier.down = True
            FrontierClient(outbox).ack_many([(1, 1)])
            frontier.down = False
            outbox.drain()
    outbox.cancel()
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2 and "unreachable" in warnings[0] and "is back" in warnings[1]
    assert sum("unreachable" in r.getMessage() for r in caplog.records) == 3


def test_the_outbox_tells_each_time_its_last_waiting_step_has_run():
    frontier, told = FlakyFrontier(), []
    outbox = Outbox(InlineCalls(frontier), lambda stat: None, lambda seconds: None, later=Timers().later,
                    drained=lambda: told.append(len(outbox)))
    FrontierClient(outbox).ack_many([(1, 1)])
    assert told == [0]
    frontier.down = True
    FrontierClient(outbox).ack_many([(2, 2)])
    assert told == [0]  # it waits through the outage
    frontier.down = False
    outbox.drain()
    outbox.cancel()
    assert told == [0, 0]


def test_a_pending_ask_left_unanswered_is_answered_once_the_counts_are_known():
    """The engine asks "anything pending?" while a step waits in the outbox, or while another
    read of the counts is on its way: no answer yet. Once the step ran or the read came, the
    scheduler hears it and can answer, or the engine waits for its 5 s heartbeat to ask again."""
    frontier = EmbeddedFrontier(":memory:")
    frontier.add([Entry(1, "a.test", 0, "/1")])
    calls, heard = QueuedCalls(frontier), []
    link = FrontierLink(frontier, lambda key: None, lambda: None, lambda seconds: None, 10.0, calls)
    link.counts_read = lambda: heard.append(link.counts())
    link.client.ack_many([(2, 1)])
    assert link.counts() is None  # a step waits
    calls.run_all()
    assert heard[-1] == Counts(queued=1, leased=0, waiting=0, revisits=0)
    heard.clear()
    link.read_with_counts(lambda f: SimpleNamespace(counts=Counts.read(f)), frontier)  # upkeep's read
    calls.run_all()
    assert heard == [Counts(queued=1, leased=0, waiting=0, revisits=0)]
    frontier.close()


def test_page_outcomes_keep_nothing_unattached_and_forget_dropped_items():
    def page(n: int) -> Page:
        return Page(f"http://a.test/{n}", 200, 0.0, 0, b"", "")

    outcomes, kept, dropped = PageOutcomes(), page(1), page(2)
    outcomes.judged(kept, {"next_visit": 1.0})
    assert outcomes.take(kept) is None  # no taker: nothing kept
    manager = SignalManager()
    outcomes.attach(manager)
    outcomes.judged(kept, {"next_visit": 1.0})
    outcomes.stored(kept, ["warc/b", "meta/a"], None)
    outcomes.stored(dropped, ["warc/b"], None)
    manager.send_catch_log(scrapy_signals.item_dropped, item=dropped, response=None, exception=None)
    assert outcomes.take(dropped) is None
    assert outcomes.take(kept) == PageOutcome({"next_visit": 1.0}, True, ("meta/a", "warc/b"))
    assert outcomes.take(kept) is None  # once
