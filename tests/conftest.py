"""Shared fixtures. Tests import the test web and crawl helpers from this directory."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

sys.path.insert(0, str(Path(__file__).resolve().parent))

from crawling import run_crawl
from frontier_cases import cluster_url, make_frontier, redis_url  # noqa: F401  the contract's fixtures
from moto.server import ThreadedMotoServer
from redis_server import RedisServer, free_port
from testweb import Site, TestWeb


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory):
    """A redis-server of the test module's own, on a free loopback port."""
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    yield server
    server.stop()


@pytest.fixture
def client(redis_server):
    """A client of ``redis_server``, its database emptied for each test."""
    client = redis.Redis.from_url(redis_server.url)
    client.flushdb()
    yield client
    client.close()


@pytest.fixture
def crawl():
    return run_crawl


@pytest.fixture(scope="module")
def moto() -> Iterator[str]:
    """moto's standalone S3 server on a free loopback port: its endpoint URL."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=free_port(), verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def web_factory():
    """Start test webs: ``web_factory([Site(...)])``; each is stopped after the test."""
    webs: list[TestWeb] = []

    def make(sites: list[Site]) -> TestWeb:
        web = TestWeb(sites).start()
        webs.append(web)
        return web

    yield make
    for web in webs:
        web.stop()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked slow (minutes long) first, so that they run beside the rest rather than after."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
