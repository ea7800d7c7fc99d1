"""``BoundMonitor``: once per ``LOGSTATS_INTERVAL``, which of politeness, the network, the
CPU or storage bounds the crawl (``crawl/bound``), in one log line."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from scrapy import signals
from scrapy.exceptions import NotConfigured
from twisted.internet.task import LoopingCall

from crawler import defaults
from crawler.bound.verdict import Interval, Thresholds, verdict

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

PROBE_SECONDS = 0.25  # how often the downloader's busy slots and the reactor's lag are sampled


class BoundMonitor:
    """Samples the downloader's busy slots (``engine.downloader.active``) and the
    reactor's lag every 0.25 s, the process CPU per interval, and reads the frontier's
    gauges from the stats (``frontier/queued``, ``frontier/hosts/active``,
    ``frontier/awaiting_upload``). Stats: ``crawl/bound`` (the latest verdict) and
    ``crawl/bound/<verdict>`` (intervals under each). Off with ``LOGSTATS_INTERVAL = 0``."""

    def __init__(self, crawler: Crawler, interval: float, thresholds: Thresholds) -> None:
        self.crawler = crawler
        self.interval = interval
        self.thresholds = thresholds
        self._probe = LoopingCall(self.probe)
        self._report = LoopingCall(self.report)
        self._reset()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> BoundMonitor:
        interval = crawler.settings.getfloat("LOGSTATS_INTERVAL")
        if not interval:
            raise NotConfigured
        lag = crawler.settings.getfloat("BOUND_LAG", defaults.BOUND_LAG)
        monitor = cls(crawler, interval, Thresholds(lag=lag))
        crawler.signals.connect(monitor.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(monitor.spider_closed, signal=signals.spider_closed)
        return monitor

    def _reset(self) -> None:
        self._samples = 0
        self._busy = 0
        self._lag = 0.0
        self._expected = time.monotonic() + PROBE_SECONDS
        self._wall = time.monotonic()
        self._cpu = time.process_time()

    def spider_opened(self) -> None:
        self._reset()
        self._backlog = 0
        self._probe.start(PROBE_SECONDS, now=False)
        self._report.start(self.interval, now=False)

    def spider_closed(self) -> None:
        for call in (self._probe, self._report):
            if call.running:
                call.stop()

    def probe(self) -> None:
        now = time.monotonic()
        self._lag += max(0.0, now - self._expected)
        self._expected = now + PROBE_SECONDS
        self._busy += len(self.crawler.engine.downloader.active)
        self._samples += 1

    def report(self) -> None:
        stats = self.crawler.stats
        samples = max(1, self._samples)
        wall = max(1e-6, time.monotonic() - self._wall)
        backlog = int(stats.get_value("frontier/awaiting_upload", 0))
        measured = Interval(
            slots=self.crawler.settings.getint("CONCURRENT_REQUESTS"),
            busy=self._busy / samples,
            lag=self._lag / samples,
            cpu=(time.process_time() - self._cpu) / wall,
            queued=int(stats.get_value("frontier/queued", 0)),
            hosts=int(stats.get_value("frontier/hosts/active", 0)),
            backlog_growth=backlog - self._backlog,
            backlog=backlog,
        )
        self._backlog = backlog
        found = verdict(measured, self.thresholds)
        stats.set_value("crawl/bound", found.bound)
        stats.inc_value(f"crawl/bound/{found.bound}")
        logger.info("Crawl bound: %s (%s)", found.bound, found.detail)
        self._reset()
