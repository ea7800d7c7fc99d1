"""What the scheduler needs of Scrapy's engine that Scrapy 2.19 has no public API for."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler


class EngineAdapter:
    """The engine's in-progress requests and its next-call trigger, both on the private
    ``engine._slot``: 2.19 signals no "request fully processed" (items included) and has
    no public way to ask the engine for requests again before its 5 s heartbeat."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    def in_progress(self) -> set[Request] | None:
        """Requests the engine has not finished with (None before the crawl runs)."""
        slot = getattr(self.crawler.engine, "_slot", None)
        return None if slot is None else slot.inprogress

    def wake(self) -> None:
        """Ask the engine for requests now."""
        slot = getattr(self.crawler.engine, "_slot", None)
        if slot is not None:
            slot.nextcall.schedule()
