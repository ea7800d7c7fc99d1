"""CPU time per stage of a page's processing, counted in the crawl's stats.

Each stage adds the CPU time of the thread that ran it (``time.thread_time_ns``: the
reactor's, not the S3 uploads' or the DNS resolver's) to the stat ``cpu_ms/<stage>``,
so a crawl's stats dump tells where its CPU went per page (``bench/crawl_speed.py``
prints it as a breakdown). Two clock reads a stage: about a microsecond a page.
"""

from __future__ import annotations

from time import thread_time_ns
from typing import Protocol


class _Stats(Protocol):
    """Scrapy's stats collector, as its signature is annotated."""

    def inc_value(self, key: str, count: int = 1, start: int = 0) -> None: ...


class StageClock:
    """``start = clock.now(); ...; clock.add("parse", start)``."""

    now = staticmethod(thread_time_ns)

    def __init__(self, stats: _Stats) -> None:
        self.stats = stats
        self._keys: dict[str, str] = {}

    def add(self, stage: str, start: int) -> int:
        """Count the CPU time since ``start`` (a :meth:`now`) to ``stage``; returns now."""
        now = thread_time_ns()
        key = self._keys.get(stage)
        if key is None:
            key = self._keys[stage] = f"cpu_ms/{stage}"
        # Milliseconds as a float: Scrapy annotates the count as an int, though its
        # collectors add any number.
        self.stats.inc_value(key, (now - start) / 1e6, 0.0)  # type: ignore[arg-type]
        return now
