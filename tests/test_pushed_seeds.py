"""A Redis worker's idle wait for pushed seeds ends on time, not at Scrapy's 5 s heartbeat."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from scrapy.exceptions import DontCloseSpider
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
