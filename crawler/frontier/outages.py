"""How loudly an outage of the shared frontier is told: once, even when it flaps."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable


class OutageNotices:
    """The log level of an outage's first line and of its "answers again" line: WARNING,
    except for an outage that starts within ``quiet`` seconds of the last one's end (a
    failover comes and goes more than once: a node answers, then fails again), which is
    told at INFO, start and end, as part of the one already said."""

    def __init__(self, quiet: float = 60.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.quiet = quiet
        self.clock = clock
        self._said = False  # the outage going on was told at WARNING
        self._last_end = -math.inf

    def start(self) -> int:
        """An outage begins: the level of its line."""
        self._said = self.clock() - self._last_end > self.quiet
        return logging.WARNING if self._said else logging.INFO

    def end(self) -> int:
        """The outage is over: the level of its line (that of its start)."""
        self._last_end = self.clock()
        return logging.WARNING if self._said else logging.INFO
