"""Steps for one shard of a Redis Cluster crawl that survive its master's outage, so that
only the hosts of that shard wait while the other shards go on."""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from redis import RedisError
from redis.exceptions import ClusterError

from crawler.frontier.backends.redis.single import RedisFrontier
from crawler.frontier.outages import OutageNotices

logger = logging.getLogger(__name__)


class ShardPauses:
    """Which shards failed lately: a shard whose node did not answer is left alone for a
    backoff (0.5 s doubling to 30 s), so only its hosts wait. One WARNING when shards
    start failing and one when all answer again (the other shards of a failed node, which
    fail in the next calls, are logged at INFO, and so is an outage that flaps: see
    ``OutageNotices``).
    Shards are claimed from in threads of their own at once: steps are taken under a lock,
    or each would find the outage not begun and say it."""

    def __init__(self, describe: Callable[[int], str]) -> None:
        self.describe = describe
        self._down: dict[int, tuple[float, float, float]] = {}  # shard -> (since, backoff, retry at)
        self._outage_since: float | None = None
        self._notices = OutageNotices()
        self._lock = threading.Lock()

    def usable(self, shard: int) -> bool:
        return shard not in self._down or time.monotonic() >= self._down[shard][2]

    def failed(self, shards: list[int], error: Exception) -> None:
        with self._lock:
            self._failed(shards, error)

    def _failed(self, shards: list[int], error: Exception) -> None:
        now = time.monotonic()
        new = [shard for shard in shards if shard not in self._down]
        if new:
            level = self._notices.start() if self._outage_since is None else logging.INFO
            logger.log(level, "Redis Cluster shards %s unreachable (%s): their hosts wait, their steps "
                       "are kept and retried with backoff", ", ".join(self.describe(s) for s in new), error)
            self._outage_since = self._outage_since or now
        for shard in shards:
            since, backoff, _ = self._down.get(shard, (now, 0.0, 0.0))
            backoff = min(30.0, max(0.5, backoff * 2))
            self._down[shard] = (since, backoff, now + backoff)

    def answered(self, shard: int) -> None:
        with self._lock:
            self._answered(shard)

    def _answered(self, shard: int) -> None:
        if shard in self._down:
            since = self._down.pop(shard)[0]
            logger.info("Redis Cluster shard %s answers again after %.1f s", self.describe(shard),
                        time.monotonic() - since)
            if not self._down and self._outage_since is not None:
                logger.log(self._notices.end(), "Every Redis Cluster shard answers again after %.1f s; "
                           "kept steps were sent", time.monotonic() - self._outage_since)
                self._outage_since = None


def _each(value: Any) -> Callable[[tuple], Any]:
    return lambda args: [value] * len(args[0])


# The frontier's writes, and what each answers while it waits (as the scheduler's outbox does).
WRITES: dict[str, Callable[[tuple], Any]] = {
    "add": _each(True), "ack_many": _each(True), "fetched_many": _each(None), "revisit_many": _each(True),
    **{name: (lambda args: True) for name in ("ack", "requeue", "retry_later", "dead_letter", "defer",
                                               "requeue_dead")},
    **{name: (lambda args: None) for name in ("fetched", "renew", "set_politeness_key", "set_crawl_delay",
                                               "count")},
    "demote": lambda args: 0, "dead_letter_host": lambda args: 0, "hasten_revisit": lambda args: False,
}


class BufferedShard:
    """A shard whose writes wait out its master's outage: a write that fails, and every
    later one, is kept in order and sent once the shard answers (tried again after the
    shard's backoff). Reads and claims of a shard with kept writes raise ``ClusterError``
    (a count that missed them could end the crawl early); plain attributes pass through."""

    def __init__(self, shard: RedisFrontier, index: int, pauses: ShardPauses) -> None:
        self.shard = shard
        self.index = index
        self.pauses = pauses
        self.kept: deque[tuple[str, tuple]] = deque()

    def flush(self, force: bool = False) -> bool:
        """Send the kept writes; False while the shard still does not answer."""
        if not self.kept:
            return True
        if not force and not self.pauses.usable(self.index):
            return False
        while self.kept:
            name, args = self.kept[0]
            try:
                getattr(self.shard, name)(*args)
            except RedisError as error:
                self.pauses.failed([self.index], error)
                return False
            self.kept.popleft()
        self.pauses.answered(self.index)
        return True

    def _write(self, name: str, args: tuple) -> Any:
        if self.flush():
            try:
                return getattr(self.shard, name)(*args)
            except RedisError as error:
                self.pauses.failed([self.index], error)
        self.kept.append((name, args))
        return WRITES[name](args)

    def _read(self, read: Callable[[], Any]) -> Any:
        if not self.flush():
            raise ClusterError(f"shard {self.index} ({self.shard.prefix}) keeps {len(self.kept)} steps "
                               f"until its master answers")
        if not self.pauses.usable(self.index):
            raise ClusterError(f"shard {self.index} ({self.shard.prefix}) waits for its master")
        try:
            value = read()
        except RedisError as error:
            self.pauses.failed([self.index], error)
            raise
        self.pauses.answered(self.index)
        return value

    def __getattr__(self, name: str) -> Any:
        if name in WRITES:
            return lambda *args: self._write(name, args)
        member = getattr(type(self.shard), name, None)
        if isinstance(member, property):
            return self._read(lambda: getattr(self.shard, name))
        if callable(member):
            return lambda *args, **kwargs: self._read(lambda: getattr(self.shard, name)(*args, **kwargs))
        return getattr(self.shard, name)
