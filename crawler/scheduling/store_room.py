"""Whether the page store has room: while it has none, this worker claims no URL."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from crawler import signals as crawler_signals

if TYPE_CHECKING:
    from scrapy.signalmanager import SignalManager


class StoreRoom:
    """Follows ``crawler.signals.store_full`` and ``store_writable``: ``full`` while the
    store cannot be written, so the scheduler hands out nothing (fetching pages that cannot
    be stored would only spend their attempts); ``wake`` asks the engine again once it can."""

    def __init__(self, signals: SignalManager, wake: Callable[[], object]) -> None:
        self.full = False
        self.wake = wake
        signals.connect(self.store_full, signal=crawler_signals.store_full)
        signals.connect(self.store_writable, signal=crawler_signals.store_writable)

    def store_full(self) -> None:
        self.full = True

    def store_writable(self) -> None:
        self.full = False
        self.wake()
