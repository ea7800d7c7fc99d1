"""The frontier contract's fixtures and steps, shared by the ``test_frontier*.py`` suites:
``make_frontier`` builds each backend in turn, on a fake clock."""

from __future__ import annotations

import uuid

import pytest
import redis
from redis_cluster import RedisClusterNodes
from redis_server import RedisServer

from crawler.frontier.api import Claim, Entry
from crawler.frontier.backends.embedded.frontier import EmbeddedFrontier
from crawler.frontier.backends.redis.opening import open_redis_frontier
from crawler.frontier.backends.redis.single import RedisFrontier
from crawler.frontier.policy import PolitenessPolicy
from crawler.urls.keys import url_fingerprint

POLICY = PolitenessPolicy(min_delay=1.0, delay_factor=10.0, max_delay=30.0, backoff_max=3600.0)


def entry(url: str, host: str | None = None, level: int = 0) -> Entry:
    host = host or url.split("/")[2]
    return Entry(url_fingerprint(url), host, level, url)


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory):
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    yield server.url
    server.stop()


@pytest.fixture(scope="module")
def cluster_url(tmp_path_factory):
    nodes = RedisClusterNodes(tmp_path_factory.mktemp("cluster")).start()
    yield nodes.url
    nodes.stop()


@pytest.fixture(params=["embedded", "redis", "redis-bloom", "redis-sharded", "redis-cluster"])
def make_frontier(request, tmp_path):
    """Each contract test runs against both backends."""
    crawl_id = uuid.uuid4().hex

    def make(**kwargs) -> EmbeddedFrontier | RedisFrontier:
        kwargs.setdefault("policy", POLICY)
        if request.param == "embedded":
            return EmbeddedFrontier(kwargs.pop("path", ":memory:"), **kwargs)
        kwargs.pop("path", None)
        if request.param == "redis-bloom":
            kwargs["seen_set"] = "bloom"
        if request.param == "redis-cluster":  # 3 masters, REDIS_SHARDS' default of hash tags
            client = redis.RedisCluster.from_url(request.getfixturevalue("cluster_url"))
            return open_redis_frontier([client], crawl_id, **kwargs)
        url = request.getfixturevalue("redis_url")
        if request.param == "redis-sharded":  # two shards: databases 1 and 2 of one server
            return open_redis_frontier([redis.Redis.from_url(f"{url}/{db}") for db in (1, 2)],
                                       crawl_id, **kwargs)
        return RedisFrontier(redis.Redis.from_url(url), crawl_id, **kwargs)
    make.backend = request.param
    return make


def claim(frontier, now) -> Claim:
    result = frontier.next(now)
    assert isinstance(result, Claim), result
    return result


def finish(frontier, c: Claim, now: float, seconds: float = 0.01, status: int | None = 200,
           retry_after: float | None = None) -> float:
    gap = frontier.fetched(c.fp, c.token, now, seconds, status, retry_after)
    frontier.ack(c.fp, c.token)
    return gap


def hosts_on_one_shard(f, count: int) -> list[str]:
    """``count`` host names that one politeness key can group (a sharded frontier groups the
    hosts of one shard only)."""
    names = [f"h{i}.test" for i in range(1000)]
    if not hasattr(f, "shard_of"):
        return names[:count]
    return [n for n in names if f.shard_of(n) == f.shard_of(names[0])][:count]
