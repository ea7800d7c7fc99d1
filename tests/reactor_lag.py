"""A test extension: the reactor's ticks, written to ``REACTOR_LAG_FILE`` when the spider
closes, so a test can see whether the reactor kept running (e.g. while Redis was stopped)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING

from scrapy import signals
from twisted.internet.task import LoopingCall

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

TICK = 0.1


class ReactorTicks:
    """Records the wall time of each tick of a 0.1 s LoopingCall: a reactor blocked for
    N seconds shows as a gap of N seconds between two ticks."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.ticks: list[float] = []
        self._loop = LoopingCall(lambda: self.ticks.append(time.time()))

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ReactorTicks:
        ticks = cls(Path(crawler.settings["REACTOR_LAG_FILE"]))
        crawler.signals.connect(ticks.opened, signal=signals.spider_opened)
        crawler.signals.connect(ticks.closed, signal=signals.spider_closed)
        return ticks

    def opened(self) -> None:
        self._loop.start(TICK)

    def closed(self) -> None:
        if self._loop.running:
            self._loop.stop()
        self.path.write_text(json.dumps(self.ticks))
