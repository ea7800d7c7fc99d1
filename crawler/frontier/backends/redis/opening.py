"""The Redis frontier a crawl's clients ask for: one server, shards, or a Redis Cluster."""

from __future__ import annotations

from typing import Any

from redis import Redis, RedisCluster

from crawler.frontier.backends.redis.cluster import ClusterFrontier, shard_count
from crawler.frontier.backends.redis.sharded import ShardedRedisFrontier
from crawler.frontier.backends.redis.single import RedisFrontier, default_worker_id


def open_redis_frontier(clients: list[Redis] | list[RedisCluster], crawl_id: str, shards: int | None = None,
                        **options: Any) -> RedisFrontier | ShardedRedisFrontier:
    """The frontier on ``clients``: one Redis, or several shards (every worker must list
    the same ones in the same order; see :func:`crawler.context.connection.redis_clients`),
    or a Redis Cluster client split over ``shards`` hash tags (None: the crawl's own)."""
    options.setdefault("worker_id", default_worker_id())  # one id on every shard
    if isinstance(clients[0], RedisCluster):
        return ClusterFrontier(clients[0], crawl_id, shard_count(clients[0], crawl_id, shards), **options)
    parts = [RedisFrontier(client, crawl_id, **options) for client in clients]
    return parts[0] if len(parts) == 1 else ShardedRedisFrontier(parts)
