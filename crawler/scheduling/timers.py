"""One timer for many asks: the scheduler's wake-ups of the engine and of due revisits."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from scrapy.utils.asyncio import call_later


class EarliestCall:
    """Calls ``fn`` once, at the earliest time asked for since it last ran: a thousand
    "wake me in 2 s" cost one pending call, and a sooner ask replaces a later one."""

    def __init__(self, fn: Callable[[], object]) -> None:
        self.fn = fn
        self._call: Any = None
        self._at = 0.0

    def in_seconds(self, seconds: float) -> None:
        seconds = max(0.0, seconds)
        at = time.monotonic() + seconds
        if self._call is not None:
            if self._at <= at + 0.001:
                return
            self._call.cancel()
        self._at = at
        self._call = call_later(seconds, self._run)

    def at(self, unix_time: float) -> None:
        """At ``unix_time`` (a frontier time), a little after so that it is due."""
        self.in_seconds(unix_time - time.time() + 0.01)

    def cancel(self) -> None:
        if self._call is not None:
            self._call.cancel()
            self._call = None

    def _run(self) -> None:
        self._call = None
        self.fn()
