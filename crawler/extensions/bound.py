"""``BoundMonitor``: once per ``LOGSTATS_INTERVAL``, which of politeness, the network, the
CPU or storage bounds the crawl (``crawl/bound``), in one log line; and every
``CRAWL_STATS_INTERVAL`` a snapshot of the crawl's stats with what was measured since
the last one, in ``DATA_DIR/crawl-stats/<crawl id>/``, from which ``scrapy serve`` reads
the crawl's numbers and computes the same verdict, whatever started the crawl."""

from __future__ import annotations

import json
import logging
import os
import socket
import time
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from scrapy import signals
from scrapy.exceptions import NotConfigured
from twisted.internet.task import LoopingCall

from crawler import defaults
from crawler.bound.verdict import Interval, Thresholds, verdict
from crawler.context.crawl_id import crawl_id_of
from crawler.paths import checked_data_dir

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)

PROBE_SECONDS = 0.25  # how often the downloader's busy slots and the reactor's lag are sampled
STATS_DIR = "crawl-stats"


def stats_snapshot_dir(settings: BaseSettings, crawl_id: str) -> Path:
    """Where the crawl ``crawl_id`` keeps its stats snapshots, one file per process:
    ``DATA_DIR/crawl-stats/<crawl id>/`` (the working directory when ``DATA_DIR`` is unset)."""
    return Path(checked_data_dir(str(settings.get("DATA_DIR") or "")) or os.getcwd()) / STATS_DIR / crawl_id


class Window:
    """What the probes measured since ``start``: busy slots, reactor lag, process CPU."""

    def __init__(self) -> None:
        self.samples = 0
        self.busy = 0
        self.lag = 0.0
        self.wall = time.monotonic()
        self.cpu = time.process_time()

    def interval(self, slots: int, stats: StatsCollector, backlog_before: int) -> Interval:
        samples = max(1, self.samples)
        wall = max(1e-6, time.monotonic() - self.wall)
        backlog = int(stats.get_value("frontier/awaiting_upload", 0))
        return Interval(
            slots=slots, busy=self.busy / samples, lag=self.lag / samples,
            cpu=(time.process_time() - self.cpu) / wall,
            queued=int(stats.get_value("frontier/queued", 0)),
            hosts=int(stats.get_value("frontier/hosts/active", 0)),
            backlog_growth=backlog - backlog_before, backlog=backlog)


class BoundMonitor:
    """Samples the downloader's busy slots (``engine.downloader.active``) and the
    reactor's lag every 0.25 s, the process CPU per interval, and reads the frontier's
    gauges from the stats (``frontier/queued``, ``frontier/hosts/active``,
    ``frontier/awaiting_upload``). Stats: ``crawl/bound`` (the latest verdict) and
    ``crawl/bound/<verdict>`` (intervals under each). The log line is off with
    ``LOGSTATS_INTERVAL = 0``, the snapshots with ``CRAWL_STATS_INTERVAL = 0``."""

    def __init__(self, crawler: Crawler, interval: float, thresholds: Thresholds,
                 snapshot_interval: float = 0.0) -> None:
        self.crawler = crawler
        self.interval = interval
        self.thresholds = thresholds
        self.snapshot_interval = snapshot_interval
        self._probe = LoopingCall(self.probe)
        self._report = LoopingCall(self.report)
        self._snapshot = LoopingCall(self.snapshot)
        self._snapshot_path: Path | None = None
        self._expected = time.monotonic() + PROBE_SECONDS
        self._windows = [Window(), Window()]  # the log line's, the snapshot's
        self._backlog = self._snapshot_backlog = 0

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> BoundMonitor:
        interval = crawler.settings.getfloat("LOGSTATS_INTERVAL")
        snapshots = crawler.settings.getfloat("CRAWL_STATS_INTERVAL", defaults.CRAWL_STATS_INTERVAL)
        if not interval and not snapshots:
            raise NotConfigured
        lag = crawler.settings.getfloat("BOUND_LAG", defaults.BOUND_LAG)
        monitor = cls(crawler, interval, Thresholds(lag=lag), snapshots)
        crawler.signals.connect(monitor.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(monitor.spider_closed, signal=signals.spider_closed)
        return monitor

    def spider_opened(self) -> None:
        self._windows = [Window(), Window()]
        self._expected = time.monotonic() + PROBE_SECONDS
        self._backlog = self._snapshot_backlog = 0
        self._probe.start(PROBE_SECONDS, now=False)
        if self.interval:
            self._report.start(self.interval, now=False)
        if self.snapshot_interval:
            directory = stats_snapshot_dir(self.crawler.settings, crawl_id_of(self.crawler))
            self._snapshot_path = directory / f"{socket.gethostname()}-{os.getpid()}.json"
            self._snapshot.start(self.snapshot_interval, now=False)

    def spider_closed(self) -> None:
        for call in (self._probe, self._report, self._snapshot):
            if call.running:
                call.stop()
        if self._snapshot_path is not None:
            self.snapshot(closed=True)  # the run's last numbers

    def probe(self) -> None:
        now = time.monotonic()
        lag = max(0.0, now - self._expected)
        self._expected = now + PROBE_SECONDS
        busy = len(self.crawler.engine.downloader.active)
        for window in self._windows:
            window.lag += lag
            window.busy += busy
            window.samples += 1

    def _slots(self) -> int:
        return self.crawler.settings.getint("CONCURRENT_REQUESTS")

    def report(self) -> None:
        stats = self.crawler.stats
        measured = self._windows[0].interval(self._slots(), stats, self._backlog)
        self._backlog = measured.backlog
        found = verdict(measured, self.thresholds)
        stats.set_value("crawl/bound", found.bound)
        stats.inc_value(f"crawl/bound/{found.bound}")
        logger.info("Crawl bound: %s (%s)", found.bound, found.detail)
        self._windows[0] = Window()

    def snapshot(self, closed: bool = False) -> None:
        """Write the stats and the window's measures (atomically: a reader never sees half)."""
        if self._snapshot_path is None:
            return
        measured = self._windows[1].interval(self._slots(), self.crawler.stats, self._snapshot_backlog)
        self._snapshot_backlog = measured.backlog
        self._windows[1] = Window()
        data = {"written_at": time.time(), "closed": closed, "pid": os.getpid(),
                "interval": asdict(measured), "thresholds": asdict(self.thresholds),
                "stats": self.crawler.stats.get_stats()}
        try:
            self._snapshot_path.parent.mkdir(parents=True, exist_ok=True)
            partial = self._snapshot_path.with_suffix(".tmp")
            partial.write_text(json.dumps(data, default=str), encoding="utf-8")
            partial.replace(self._snapshot_path)
        except OSError as error:  # a full disk costs the service its view, not the crawl
            logger.warning("Could not write the crawl's stats snapshot %s: %s", self._snapshot_path, error)
            self._snapshot_path = None
