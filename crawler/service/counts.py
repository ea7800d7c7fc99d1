"""A crawl's numbers, read from its frontier (embedded state file or Redis), never from
the crawl process: fetched, failed, queued, stored, dead letters, hosts, fetch times."""

from __future__ import annotations

import re
import sqlite3
import time
from typing import TYPE_CHECKING

from crawler.frontier.api import FETCH_SECONDS_BUCKETS
from crawler.frontier.connection import redis_clients, uses_redis
from crawler.frontier.embedded_store import read_counts, read_host_queues
from crawler.frontier.redis import RedisFrontier
from crawler.frontier.sharded import ShardedRedisFrontier, open_redis_frontier
from crawler.paths import embedded_frontier_path

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

# The integers GET /crawls/{id} reports, all present (0 before the frontier exists).
COUNT_NAMES = ("fetched", "failed", "queued", "stored", "dead_letters", "leased", "waiting", "seen",
               "hosts_active")
_BOUND = re.compile(r"\] INFO: Crawl bound: (\w+) \((.*)\)$", re.M)
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
        counts = {name: int(raw.get(name, 0)) for name in COUNT_NAMES}
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


def latest_bound(log: str) -> dict | None:
    """The last verdict of what bounds the crawl (``crawler.extensions.bound`` logs one per
    ``LOGSTATS_INTERVAL``), or None before the first."""
    found = _BOUND.findall(log)
    return {"bound": found[-1][0], "detail": found[-1][1]} if found else None
