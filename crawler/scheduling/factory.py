"""The frontier a crawl's settings ask for: embedded, or shared in Redis."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from redis.backoff import NoBackoff
from redis.retry import Retry

from crawler import defaults
from crawler.context.connection import redis_clients, uses_cluster, uses_redis
from crawler.frontier.api import Frontier
from crawler.frontier.backends.embedded.frontier import EmbeddedFrontier
from crawler.frontier.backends.redis.opening import open_redis_frontier
from crawler.frontier.policy import HostBudget, PolitenessPolicy, PriorityLevels
from crawler.paths import embedded_frontier_path

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)


def open_frontier(s: BaseSettings, crawl_id: str, levels: PriorityLevels) -> Frontier:
    """Crawl ``crawl_id``'s frontier: in Redis with ``REDIS_URL`` (one or several shards, or
    ``REDIS_SHARDS`` hash tags of a Redis Cluster),
    else embedded in SQLite under ``FRONTIER_DIR`` (or ``JOBDIR``)."""
    policy = PolitenessPolicy(
        min_delay=s.getfloat("POLITENESS_MIN_DELAY", defaults.POLITENESS_MIN_DELAY),
        delay_factor=s.getfloat("POLITENESS_DELAY_FACTOR", defaults.POLITENESS_DELAY_FACTOR),
        max_delay=s.getfloat("POLITENESS_MAX_DELAY", defaults.POLITENESS_MAX_DELAY),
        backoff_max=s.getfloat("POLITENESS_BACKOFF_MAX", defaults.POLITENESS_BACKOFF_MAX),
    )
    common: dict[str, Any] = {
        "policy": policy,
        "levels": levels,
        "budget": HostBudget(s.getint("HOST_PAGE_BUDGET", defaults.HOST_PAGE_BUDGET)),
        "lease_seconds": s.getfloat("FRONTIER_LEASE_SECONDS", defaults.FRONTIER_LEASE_SECONDS),
        "hold_new_hosts": s.getbool("POLITENESS_PER_IP", defaults.POLITENESS_PER_IP),
    }
    if uses_redis(s):
        # No retry inside redis-py: a script resent at once to a stalled Redis could run twice;
        # the scheduler's outbox replays a failed step after a backoff instead.
        clients = redis_clients(
            s, socket_timeout=s.getfloat("REDIS_SOCKET_TIMEOUT", defaults.REDIS_SOCKET_TIMEOUT),
            socket_connect_timeout=s.getfloat("REDIS_CONNECT_TIMEOUT", defaults.REDIS_CONNECT_TIMEOUT),
            retry=Retry(NoBackoff(), 0))
        shards = s.getint("REDIS_SHARDS", defaults.REDIS_SHARDS) if uses_cluster(s) else None
        if common["hold_new_hosts"] and (shards or len(clients) > 1):
            logger.warning("POLITENESS_PER_IP with a sharded frontier: hosts that share an address "
                           "are spaced as one only when they fall on the same shard (a host is on "
                           "one shard; each host's own politeness holds crawl-wide)")
        return open_redis_frontier(
            clients, crawl_id, shards=shards,
            worker_timeout=s.getfloat("FRONTIER_WORKER_TIMEOUT", defaults.FRONTIER_WORKER_TIMEOUT),
            expected_urls=s.getint("SEEN_SET_EXPECTED_URLS", defaults.SEEN_SET_EXPECTED_URLS),
            seen_set=s.get("SEEN_SET", defaults.SEEN_SET),
            bloom_error=s.getfloat("SEEN_SET_ERROR_RATE", defaults.SEEN_SET_ERROR_RATE), **common)
    return EmbeddedFrontier(embedded_frontier_path(s, crawl_id),
                            cache_kib=s.getint("FRONTIER_CACHE_KIB", defaults.FRONTIER_CACHE_KIB), **common)
