"""A Redis worker's idle wait for pushed seeds ends on time, not at Scrapy's 5 s heartbeat,
and counts from the worker's last fetch."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from scrapy import Request, signals
from scrapy.exceptions import DontCloseSpider
from scrapy.utils.test import get_crawler
from twisted.internet import defer

from crawler.spiders import pushed_seeds
from crawler.spiders.pushed_seeds import PushedSeeds


class Asks:
    """Stands for the engine's wake-up timer: records each "wake the engine in s seconds"."""

    seconds: list[float] = []

    def __init__(self, fn) -> None:
        self.fn = fn

    def in_seconds(self, seconds: float) -> None:
        Asks.seconds.append(seconds)

    def cancel(self) -> None:
        """Nothing pending."""


class HeldRead:
    """The I/O thread with the seeds' read on its way until ``answer``."""

    def __init__(self) -> None:
        self.read = defer.Deferred()

    def run(self, fn, *args):
        return self.read

    def answer(self, items) -> None:
        self.read.callback(items)


@pytest.fixture
def seeds(monkeypatch):
    monkeypatch.setattr(pushed_seeds, "EarliestCall", Asks)
    Asks.seconds = []
    return PushedSeeds(spider=None, client=SimpleNamespace(lpop=None), key="seeds", interval=5.0,
                       idle_before_close=2.0, wake_engine=lambda: None)


def test_an_idle_worker_asks_to_be_woken_when_its_wait_ends(seeds):
    with pytest.raises(DontCloseSpider):
        seeds.spider_idle()
    assert Asks.seconds == [pytest.approx(2.0, abs=0.5)]


def test_an_idle_check_that_meets_a_read_on_its_way_asks_again_once_it_is_in(seeds):
    seeds._io = io = HeldRead()
    seeds.poll()  # the poll's read, as at the engine's heartbeat
    with pytest.raises(DontCloseSpider):
        seeds.spider_idle()  # seeds may be on their way
    assert Asks.seconds == []
    io.answer([])  # none came
    assert Asks.seconds == [0]  # the engine is asked again now


def test_an_idle_wait_counts_from_the_last_fetch_not_the_first_idle(monkeypatch):
    """Work that reaches the downloader but parses no page (a 304, an error, a redirect,
    robots.txt) between two idle spells starts the wait anew: an old start closed the
    worker sooner than SCHEDULER_IDLE_BEFORE_CLOSE after its last fetch."""
    monkeypatch.setattr(pushed_seeds, "EarliestCall", Asks)
    Asks.seconds = []
    now = [100.0]
    monkeypatch.setattr(pushed_seeds, "time", SimpleNamespace(monotonic=lambda: now[0]))
    # A client is made, never used: no seeds are polled (the spider is never opened).
    crawler = get_crawler(settings_dict={"REDIS_URL": "redis://127.0.0.1:1/0", "CRAWL_ID": "idle",
                                         "SCHEDULER_IDLE_BEFORE_CLOSE": 10.0})
    seeds = PushedSeeds.from_crawler(crawler, SimpleNamespace(name="web"))
    with pytest.raises(DontCloseSpider):
        seeds.spider_idle()  # idle from 100
    now[0] = 105.0  # the frontier hands it a URL that ends as a 304, not a parsed page
    crawler.signals.send_catch_log(signals.request_reached_downloader,
                                   request=Request("http://a.test/"), spider=None)
    now[0] = 112.0  # idle again: 12 s after the first idle, 7 s after the fetch
    with pytest.raises(DontCloseSpider):
        seeds.spider_idle()
    assert Asks.seconds[-1] == 10.0  # the wait starts now
    now[0] = 121.0
    with pytest.raises(DontCloseSpider):
        seeds.spider_idle()
    now[0] = 122.0
    seeds.spider_idle()  # its wait is over: the worker closes
