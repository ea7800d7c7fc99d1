"""Redis clients from the settings, as scrapy-redis builds them.

``REDIS_URL`` (a comma list of servers shards the crawl by host) or scrapy-redis's
``REDIS_HOST``/``REDIS_PORT``/``REDIS_DB`` choose the servers; each client is made by
scrapy-redis's own helper, so ``REDIS_PARAMS`` and ``REDIS_ENCODING`` mean what its users
know. With ``REDIS_CLUSTER``, one redis-py cluster client from the first node named
(it finds the others, and follows MOVED and ASK). No server set: the embedded frontier.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from redis import RedisCluster, RedisError
from redis.backoff import NoBackoff
from redis.exceptions import ClusterError, RedisClusterException
from redis.retry import Retry
from scrapy_redis.connection import SETTINGS_PARAMS_MAP, get_redis
from scrapy_redis.defaults import REDIS_PARAMS

from crawler import defaults

if TYPE_CHECKING:
    from redis import Redis
    from scrapy.settings import BaseSettings

# Ours, under the user's REDIS_PARAMS: a stalled Redis is noticed within seconds.
CLIENT_OPTIONS = {"socket_timeout": 10, "socket_connect_timeout": 5}


class CrawlCluster(RedisCluster):
    """redis-py's cluster client, one of its bugs made an outage: while a new master takes
    over slots it can look up a node it does not know yet and fail with AttributeError
    (redis/redis-py#2432, still in 8.2). Raised as ``ClusterError`` after a topology
    refresh, callers back off and retry as for any Redis outage."""

    def execute_command(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().execute_command(*args, **kwargs)
        except AttributeError as error:
            with contextlib.suppress(RedisError):
                self.nodes_manager.initialize()
            raise ClusterError(f"cluster topology changing: {error}") from error


def uses_redis(settings: BaseSettings) -> bool:
    """Whether the crawl's state is shared in Redis (``REDIS_URL`` or ``REDIS_HOST`` set)."""
    return bool(settings.get("REDIS_URL") or settings.get("REDIS_HOST"))


def uses_cluster(settings: BaseSettings) -> bool:
    """Whether ``REDIS_URL`` names a node of a Redis Cluster (``REDIS_CLUSTER``)."""
    return settings.getbool("REDIS_CLUSTER", defaults.REDIS_CLUSTER)


def redis_clients(settings: BaseSettings, **options: Any) -> list[Redis] | list[RedisCluster]:
    """One client per server of the crawl, in ``REDIS_URL``'s order (every worker must
    list the same servers in the same order). ``options`` are the caller's defaults:
    ``REDIS_PARAMS`` overrides them, as it overrides scrapy-redis's own."""
    # redis-py 6 retries on timeouts by itself and deprecates scrapy-redis's retry_on_timeout.
    base = {k: v for k, v in REDIS_PARAMS.items() if k != "retry_on_timeout"}
    params = {**base, **CLIENT_OPTIONS, **options, **settings.getdict("REDIS_PARAMS")}
    urls = [url.strip() for url in (settings.get("REDIS_URL") or "").split(",") if url.strip()]
    for setting, param in SETTINGS_PARAMS_MAP.items():  # scrapy-redis's REDIS_HOST, _PORT, _DB...
        if settings.get(setting) and setting != "REDIS_URL" and (not urls or setting == "REDIS_ENCODING"):
            params[param] = settings.get(setting)
    params.pop("decode_responses", None)  # our state is bytes: fingerprints, JSON, packed arrays
    if uses_cluster(settings):
        params.pop("db", None)  # a cluster has database 0 only
        # No retry of a connection error: the error is ours to handle (the frontier pauses the
        # shards of a failed master, with backoff and a WARNING), instead of redis-py retrying
        # in silence with the reactor stopped. MOVED, ASK and TRYAGAIN are still followed.
        params.setdefault("retry", Retry(NoBackoff(), 0))
        url = urls[0] if urls else f"redis://{params.pop('host', 'localhost')}:{params.pop('port', 6379)}"
        return [CrawlCluster.from_url(url, **params)]
    if not urls:
        return [get_redis(**params)]
    return [get_redis(url=url, **params) for url in urls]


def redis_problem(settings: BaseSettings) -> str | None:
    """Why the crawl's Redis cannot be used, naming the setting: a ``REDIS_URL`` redis-py
    cannot read, or a server that does not answer a PING within ``REDIS_CONNECT_TIMEOUT``
    (no retry); None when every server answers."""
    timeout = settings.getfloat("REDIS_CONNECT_TIMEOUT", defaults.REDIS_CONNECT_TIMEOUT)
    try:
        for client in redis_clients(settings, socket_connect_timeout=timeout, socket_timeout=timeout,
                                    retry=Retry(NoBackoff(), 0)):
            client.ping()
            client.close()
    except (RedisError, RedisClusterException, ValueError) as error:
        name = "REDIS_URL" if settings.get("REDIS_URL") else "REDIS_HOST"
        return f"{name} = {settings.get(name)!r}: {error}"
    return None


def first_redis(settings: BaseSettings, **options: Any) -> Redis | RedisCluster:
    """A client of the crawl's first server (or of its cluster): where the crawl-wide state
    that is not sharded by host lives (pushed seeds, the robots.txt cache, the content
    index), under the crawl's own hash tag; on a cluster, the content index is split over
    the shard tags instead."""
    return redis_clients(settings, **options)[0]
