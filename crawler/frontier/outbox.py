"""Frontier steps that survive a Redis outage: kept in order and replayed once it answers."""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from redis import RedisError

logger = logging.getLogger(__name__)


class Outbox:
    """Calls frontier steps (``write("ack_many", leases)``). While the shared frontier is
    unreachable each step, and every later one, waits here in order and is replayed when
    it answers, with backoff (0.5 s doubling to 30 s): nothing is lost, and the outage is
    logged once at WARNING and once when it ends. ``retry_in`` hears each backoff, so the
    caller can wake up to try again. Stat: ``frontier/redis_errors``."""

    def __init__(self, frontier: Any, inc_stat: Callable[[str], None],
                 retry_in: Callable[[float], None]) -> None:
        self.frontier = frontier
        self.inc_stat = inc_stat
        self.retry_in = retry_in
        self._steps: deque[tuple[str, tuple]] = deque()
        self._down_since: float | None = None
        self._backoff = 0.0
        self._retry_at = 0.0

    def __len__(self) -> int:
        return len(self._steps)

    def write(self, name: str, *args: Any, default: Any = None) -> Any:
        """The step's result, or ``default`` when it had to wait."""
        if self._steps and not self.flush():
            self._steps.append((name, args))
            return default
        try:
            return getattr(self.frontier, name)(*args)
        except RedisError as error:
            self.outage(error)
            self._steps.append((name, args))
            return default

    def flush(self, force: bool = False) -> bool:
        """Replay the waiting steps; False while the frontier is still unreachable.
        ``force``: try now, backoff or not (at close)."""
        if not force and time.monotonic() < self._retry_at:
            return False
        while self._steps:
            name, args = self._steps[0]
            try:
                getattr(self.frontier, name)(*args)
            except RedisError as error:
                self.outage(error)
                return False
            self._steps.popleft()
        if self._down_since is not None:
            logger.warning("Redis is back after %.1f s; buffered steps replayed",
                           time.monotonic() - self._down_since)
            self._down_since, self._backoff = None, 0.0
        return True

    def outage(self, error: Exception) -> None:
        """A call failed: back off before the next try."""
        now = time.monotonic()
        if self._down_since is None:
            self._down_since = now
            logger.warning("Redis unreachable (%s): buffering frontier steps, retrying with backoff", error)
        self.inc_stat("frontier/redis_errors")
        self._backoff = min(30.0, max(0.5, self._backoff * 2))
        self._retry_at = now + self._backoff
        self.retry_in(self._backoff)
