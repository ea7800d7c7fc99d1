"""A crawl's numbers, read from its frontier (embedded state file or Redis), never from
the crawl process: fetched, failed, queued, stored, dead letters, hosts, fetch times."""
# The embedded readers here are read-only SQL on the state file, which the running crawl holds.

from __future__ import annotations

import json
import re
import sqlite3
import time
from typing import TYPE_CHECKING, Any

from crawler.context.connection import redis_clients, uses_redis
from crawler.frontier.api import FETCH_SECONDS_BUCKETS
from crawler.frontier.backends.embedded.store import (
    DEAD,
    LEASED,
    QUEUED,
    WAITING,
    read_counts,
    read_host_queues,
)
from crawler.frontier.backends.redis.opening import open_redis_frontier
from crawler.frontier.backends.redis.sharded import ShardedRedisFrontier
from crawler.frontier.backends.redis.single import RedisFrontier
from crawler.paths import embedded_frontier_path
from crawler.scheduling.codec import ATTEMPTS_META

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

# The integers GET /crawls/{id} reports, all present (0 before the frontier exists).
COUNT_NAMES = ("fetched", "failed", "queued", "stored", "dead_letters", "leased", "waiting", "seen",
               "hosts_active")
_LOG_PROBLEM = re.compile(r"^\S+ \S+ \[[^\]]+\] (ERROR|WARNING): (.*)$", re.M)


class FrontierReader:
    """Reads the frontiers of the service's crawls, with the service's settings (its
    ``DATA_DIR``; ``REDIS_URL`` when its crawls share Redis)."""

    def __init__(self, settings: BaseSettings) -> None:
        self.settings = settings
        self.redis = uses_redis(settings)
        self._frontiers: dict[str, RedisFrontier | ShardedRedisFrontier] = {}

    def _redis_frontier(self, crawl_id: str) -> RedisFrontier | ShardedRedisFrontier:
        if crawl_id not in self._frontiers:
            self._frontiers[crawl_id] = open_redis_frontier(redis_clients(self.settings), crawl_id)
        return self._frontiers[crawl_id]

    def raw(self, crawl_id: str) -> dict[str, int]:
        """The frontier's own counters and gauges, by their frontier names."""
        if self.redis:
            frontier = self._redis_frontier(crawl_id)
            return {**frontier.counters, **frontier.gauges(time.time())}
        try:
            return read_counts(embedded_frontier_path(self.settings, crawl_id))
        except sqlite3.OperationalError:  # not there yet, or its tables not yet made
            return {}

    def counts(self, crawl_id: str) -> dict:
        """The counts of ``COUNT_NAMES`` and the fetch-time histogram's raw counters."""
        raw = self.raw(crawl_id)
        counts: dict[str, Any] = {name: int(raw.get(name, 0)) for name in COUNT_NAMES}
        counts["hosts_active"] = int(raw.get("hosts/active", 0))  # every backend's gauge
        counts["fetch_seconds"] = {key.split("/", 1)[1]: value for key, value in raw.items()
                                   if key.startswith("fetch_seconds/")}
        return counts

    def host_queues(self, crawl_id: str, limit: int = 10) -> list[dict]:
        """The busiest hosts: the ones with the most URLs queued."""
        if self.redis:
            queues = self._redis_frontier(crawl_id).host_queues(limit)
        else:
            try:
                queues = read_host_queues(embedded_frontier_path(self.settings, crawl_id), limit)
            except sqlite3.OperationalError:
                queues = []
        return [{"host": host, "queued": n} for host, n in queues]

    def hosts(self, crawl_id: str, limit: int = 20) -> list[dict]:
        """The top hosts by URLs queued: queued, in flight, next allowed fetch (epoch
        seconds), backoff (seconds) and errors (URLs waiting for a retry or given up; on
        Redis, waiting for a retry: its dead letters are not kept by host)."""
        if self.redis:
            queues = self.host_queues(crawl_id, limit)
            details = self._redis_frontier(crawl_id).host_details([queue["host"] for queue in queues])
            return [{**queue, "in_flight": busy, "next_allowed": next_allowed, "backoff": backoff,
                     "errors": waiting} for queue, (busy, next_allowed, backoff, waiting)
                    in zip(queues, details, strict=True)]
        try:
            rows = _read_only(embedded_frontier_path(self.settings, crawl_id), _HOSTS_SQL,
                              (QUEUED, LEASED, WAITING, DEAD, limit))
        except sqlite3.OperationalError:
            return []
        return [{"host": host, "queued": queued, "in_flight": leased, "next_allowed": next_allowed or None,
                 "backoff": backoff, "errors": errors} for host, queued, leased, errors, next_allowed, backoff
                in rows]

    def dead_letters(self, crawl_id: str, limit: int = 100) -> list[dict]:
        """The crawl's last ``limit`` dead letters: URL, reason, attempts, when (epoch s)."""
        if self.redis:
            letters = [(d.request, d.error, d.at) for d in self._redis_frontier(crawl_id).dead_letters()]
        else:
            try:
                letters = _read_only(embedded_frontier_path(self.settings, crawl_id), _DEAD_SQL, ())
            except sqlite3.OperationalError:
                letters = []
        out = []
        for request, error, at in letters[-limit:]:
            stored = json.loads(request)
            out.append({"url": stored["url"], "reason": error, "at": at,
                        "attempts": stored.get("meta", {}).get(ATTEMPTS_META, 0)})
        return out


_HOSTS_SQL = """
SELECT h.name, sum(u.state = ?1), sum(u.state = ?2), sum(u.state IN (?3, ?4)), h.next_allowed, h.backoff
FROM urls u JOIN hosts h ON h.id = u.host_id GROUP BY u.host_id
ORDER BY sum(u.state = ?1) DESC, sum(u.state = ?2) DESC, h.name LIMIT ?5"""
_DEAD_SQL = "SELECT u.request, d.error, d.at FROM dead_letters d JOIN urls u ON u.fp = d.fp ORDER BY d.at"


def _read_only(path: object, sql: str, args: tuple) -> list[tuple]:
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return db.execute(sql, args).fetchall()
    finally:
        db.close()


def histogram(fetch_seconds: dict[str, int]) -> tuple[list[tuple[str, int]], float]:
    """Cumulative (upper bound, count) buckets ending with ``+Inf``, and the sum in seconds,
    from the frontier's per-bucket counters."""
    buckets, total = [], 0
    for bound in FETCH_SECONDS_BUCKETS:
        total += fetch_seconds.get(str(bound), 0)
        buckets.append((str(bound), total))
    buckets.append(("+Inf", total + fetch_seconds.get("inf", 0)))
    return buckets, fetch_seconds.get("sum_ms", 0) / 1000


def recent_problems(log: str, limit: int = 10) -> list[str]:
    """The last ``limit`` ERROR and WARNING lines of a crawl's log."""
    return [f"{level}: {message}" for level, message in _LOG_PROBLEM.findall(log)][-limit:]
