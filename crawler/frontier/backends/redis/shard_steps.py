"""Steps for one shard of a Redis Cluster crawl that survive its master's outage, so that
only the hosts of that shard wait while the other shards go on."""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from redis import RedisCluster, RedisError
from redis.exceptions import ClusterError

from crawler.frontier.api import Claim, DeadLetter, Entry, Fetch, Revisit
from crawler.frontier.backends.redis.single import RedisFrontier
from crawler.frontier.outages import OutageNotices
from crawler.frontier.policy import RetryPolicy

logger = logging.getLogger(__name__)

T = TypeVar("T")


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


class BufferedShard(RedisFrontier):
    """A shard whose writes wait out its master's outage: a write that fails, and every
    later one, is kept in order and sent once the shard answers (tried again after the
    shard's backoff), answering meanwhile as the scheduler's outbox does. Reads and claims
    of a shard with kept writes raise ``ClusterError`` (a count that missed them could end
    the crawl early); plain attributes are the shard's own."""

    def __init__(self, client: RedisCluster, tag: str, index: int, pauses: ShardPauses,
                 **options: Any) -> None:
        super().__init__(client, tag, **options)
        self.index = index
        self.pauses = pauses
        self.kept: deque[Callable[[], object]] = deque()

    def flush(self, force: bool = False) -> bool:
        """Send the kept writes; False while the shard still does not answer."""
        if not self.kept:
            return True
        if not force and not self.pauses.usable(self.index):
            return False
        while self.kept:
            try:
                self.kept[0]()
            except RedisError as error:
                self.pauses.failed([self.index], error)
                return False
            self.kept.popleft()
        self.pauses.answered(self.index)
        return True

    def _write(self, write: Callable[[], T], waiting: T) -> T:
        """``write()`` now, or kept for later (answering ``waiting``)."""
        if self.flush():
            try:
                return write()
            except RedisError as error:
                self.pauses.failed([self.index], error)
        self.kept.append(write)
        return waiting

    def _read(self, read: Callable[[], T]) -> T:
        if not self.flush():
            raise ClusterError(f"shard {self.index} ({self.prefix}) keeps {len(self.kept)} steps "
                               f"until its master answers")
        if not self.pauses.usable(self.index):
            raise ClusterError(f"shard {self.index} ({self.prefix}) waits for its master")
        try:
            value = read()
        except RedisError as error:
            self.pauses.failed([self.index], error)
            raise
        self.pauses.answered(self.index)
        return value

    # ---------------------------------------------------------------- writes
    def add(self, entries: Iterable[Entry], force: bool = False) -> list[bool]:
        batch = list(entries)
        return self._write(lambda: RedisFrontier.add(self, batch, force), [True] * len(batch))

    def ack_many(self, leases: list[tuple[int, int]]) -> list[bool]:
        return self._write(lambda: RedisFrontier.ack_many(self, leases), [True] * len(leases))

    def fetched_many(self, fetches: list[Fetch]) -> list[float | None]:
        return self._write(lambda: RedisFrontier.fetched_many(self, fetches), [None] * len(fetches))

    def revisit_many(self, revisits: list[Revisit]) -> list[bool]:
        return self._write(lambda: RedisFrontier.revisit_many(self, revisits), [True] * len(revisits))

    def ack(self, fp: int, token: int) -> bool:
        return self._write(lambda: RedisFrontier.ack(self, fp, token), True)

    def requeue(self, fp: int, token: int, request: str) -> bool:
        return self._write(lambda: RedisFrontier.requeue(self, fp, token, request), True)

    def retry_later(self, fp: int, token: int, request: str, due: float) -> bool:
        return self._write(lambda: RedisFrontier.retry_later(self, fp, token, request, due), True)

    def dead_letter(self, fp: int, token: int, request: str, error: str, now: float) -> bool:
        return self._write(lambda: RedisFrontier.dead_letter(self, fp, token, request, error, now), True)

    def defer(self, name: str, until: float) -> bool:
        return self._write(lambda: RedisFrontier.defer(self, name, until), True)

    def requeue_dead(self, letter: DeadLetter, request: str) -> bool:
        return self._write(lambda: RedisFrontier.requeue_dead(self, letter, request), True)

    def fetched(self, fp: int, token: int, now: float, fetch_seconds: float, status: int | None,
                retry_after: float | None = None, hold_until: float = 0.0) -> float | None:
        return self._write(lambda: RedisFrontier.fetched(self, fp, token, now, fetch_seconds, status,
                                                         retry_after, hold_until), None)

    def renew(self, fp: int, token: int, expires: float) -> None:
        self._write(lambda: RedisFrontier.renew(self, fp, token, expires), None)

    def set_politeness_key(self, name: str, key: str) -> None:
        self._write(lambda: RedisFrontier.set_politeness_key(self, name, key), None)

    def set_crawl_delay(self, name: str, delay: float) -> None:
        self._write(lambda: RedisFrontier.set_crawl_delay(self, name, delay), None)

    def count(self, key: str, n: int = 1) -> None:
        self._write(lambda: RedisFrontier.count(self, key, n), None)

    def demote(self, name: str, margin: int) -> int:
        return self._write(lambda: RedisFrontier.demote(self, name, margin), 0)

    def dead_letter_host(self, name: str, error: str, now: float) -> int:
        return self._write(lambda: RedisFrontier.dead_letter_host(self, name, error, now), 0)

    def hasten_revisit(self, fp: int, host: str, due: float) -> bool:
        return self._write(lambda: RedisFrontier.hasten_revisit(self, fp, host, due), False)

    # ---------------------------------------------------------------- reads and claims
    def claim_in_order(self, now: float, limit: int, order: list[int] | None = None
                       ) -> tuple[list[Claim], float | None]:
        return self._read(lambda: RedisFrontier.claim_in_order(self, now, limit, order))

    def due_retries(self, now: float) -> int:
        return self._read(lambda: RedisFrontier.due_retries(self, now))

    def due_revisits(self, now: float, limit: int = 10_000) -> int:
        return self._read(lambda: RedisFrontier.due_revisits(self, now, limit))

    def revisit_at(self, fp: int, host: str) -> tuple[float, float] | None:
        return self._read(lambda: RedisFrontier.revisit_at(self, fp, host))

    def next_revisit(self) -> float | None:
        return self._read(lambda: RedisFrontier.next_revisit(self))

    def dead_letters(self) -> list[DeadLetter]:
        return self._read(lambda: RedisFrontier.dead_letters(self))

    def host_queued(self, name: str) -> int:
        return self._read(lambda: RedisFrontier.host_queued(self, name))

    def unanswered(self, name: str) -> int:
        return self._read(lambda: RedisFrontier.unanswered(self, name))

    def reap(self, now: float) -> int:
        return self._read(lambda: RedisFrontier.reap(self, now))

    def heartbeat(self, now: float) -> list[tuple[str, int, float]]:
        return self._read(lambda: RedisFrontier.heartbeat(self, now))

    def leave(self, now: float, retry: RetryPolicy) -> int:
        return self._read(lambda: RedisFrontier.leave(self, now, retry))

    def pending_counts(self) -> tuple[int, int, int, int]:
        return self._read(lambda: RedisFrontier.pending_counts(self))

    def has_pending(self) -> bool:
        return self._read(lambda: RedisFrontier.has_pending(self))

    def done_count(self) -> int:
        return self._read(lambda: RedisFrontier.done_count(self))

    def gauges(self, now: float) -> dict[str, int]:
        return self._read(lambda: RedisFrontier.gauges(self, now))

    def host_queues(self, limit: int, scan_keys: int = 10_000) -> list[tuple[str, int]]:
        return self._read(lambda: RedisFrontier.host_queues(self, limit, scan_keys))

    def host_details(self, hosts: list[str]) -> list[tuple[int, float | None, float, int]]:
        return self._read(lambda: RedisFrontier.host_details(self, hosts))

    def forget(self) -> int:
        return self._read(lambda: RedisFrontier.forget(self))

    @property
    def queued(self) -> int:
        return self._read(lambda: RedisFrontier.queued.__get__(self))

    @property
    def leased(self) -> int:
        return self._read(lambda: RedisFrontier.leased.__get__(self))

    @property
    def waiting(self) -> int:
        return self._read(lambda: RedisFrontier.waiting.__get__(self))

    @property
    def revisits(self) -> int:
        return self._read(lambda: RedisFrontier.revisits.__get__(self))

    @property
    def counters(self) -> dict[str, int]:
        return self._read(lambda: RedisFrontier.counters.__get__(self))
