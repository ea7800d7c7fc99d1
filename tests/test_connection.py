"""Redis clients from settings, as scrapy-redis users know them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from redis_server import RedisServer, free_port
from scrapy.exceptions import UsageError
from scrapy.settings import Settings

from crawler.commands import check_redis
from crawler.context.connection import first_redis, redis_clients, uses_redis
from crawler.frontier.policy import PriorityLevels
from crawler.scheduling.factory import open_frontier

PROJECT = Path(__file__).resolve().parent.parent


def kwargs(client) -> dict:
    return client.connection_pool.connection_kwargs


def test_no_server_set_means_the_embedded_frontier():
    assert not uses_redis(Settings())
    assert uses_redis(Settings({"REDIS_URL": "redis://127.0.0.1:6390/0"}))
    assert uses_redis(Settings({"REDIS_HOST": "127.0.0.1"}))


def test_redis_params_win_as_in_scrapy_redis():
    settings = Settings({"REDIS_URL": "redis://127.0.0.1:6390/2", "REDIS_PARAMS": {"socket_timeout": 20}})
    client = first_redis(settings)
    assert kwargs(client)["socket_timeout"] == 20
    assert kwargs(client)["db"] == 2
    assert kwargs(client)["socket_connect_timeout"] == 5  # ours, where REDIS_PARAMS is silent


def test_redis_host_and_port_are_read_as_scrapy_redis_reads_them():
    client = first_redis(Settings({"REDIS_HOST": "127.0.0.1", "REDIS_PORT": 6391, "REDIS_DB": 3}))
    assert (kwargs(client)["host"], kwargs(client)["port"], kwargs(client)["db"]) == ("127.0.0.1", 6391, 3)
    assert not kwargs(client).get("decode_responses")  # the frontier's state is bytes


def test_a_comma_list_of_urls_gives_one_client_per_shard_in_order():
    clients = redis_clients(Settings({"REDIS_URL": "redis://127.0.0.1:6392/0, redis://127.0.0.1:6393/0"}))
    assert [kwargs(c)["port"] for c in clients] == [6392, 6393]


def test_per_ip_politeness_over_shards_says_its_limit_once_at_start(tmp_path, caplog):
    servers = [RedisServer(tmp_path / name) for name in "ab"]
    for directory in ("a", "b"):
        (tmp_path / directory).mkdir()
    try:
        urls = ",".join(server.start().url for server in servers)
        for per_ip, url, said in ((True, urls, 1), (False, urls, 0), (True, servers[0].url, 0)):
            caplog.clear()
            settings = Settings({"REDIS_URL": url, "POLITENESS_PER_IP": per_ip})
            open_frontier(settings, "ip", PriorityLevels()).close()
            assert sum("POLITENESS_PER_IP with a sharded" in r.getMessage() for r in caplog.records) == said
    finally:
        for server in servers:
            server.stop()


def _scrapy(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "scrapy", *args], capture_output=True, text=True,
                          timeout=60, check=False, cwd=PROJECT)


@pytest.mark.parametrize("url", ["redis://127.0.0.1:{port}/0", "127.0.0.1:{port}"])
def test_a_redis_that_cannot_be_used_stops_the_crawl_and_the_commands_naming_it(url, tmp_path):
    # A closed port, or a URL without its scheme: each was a traceback from deep in the
    # scheduler's first read (the crawl) or from redis-py (crawlstats, deadletters, forget).
    url = url.format(port=free_port())
    for args in (("crawl", "web", "-a", "seeds=http://127.0.0.1:9/"), ("crawlstats", "c"),
                 ("deadletters", "c"), ("forget", "c")):
        done = _scrapy(*args, "-s", f"REDIS_URL={url}", "-s", f"DATA_DIR={tmp_path}")
        assert done.returncode == 2, (args, done.stderr[-2000:])
        assert "Redis cannot be used" in done.stderr, args
        assert f"\n  REDIS_URL = {url!r}: " in done.stderr, args
        assert "Traceback" not in done.stderr, args


def test_one_redis_check_serves_the_crawl_and_the_commands_each_saying_its_consequence():
    url = f"redis://127.0.0.1:{free_port()}/0"
    with pytest.raises(UsageError) as crawl_error:
        check_redis(Settings({"REDIS_URL": url}), ", nothing was fetched")
    said = str(crawl_error.value)
    assert said.startswith(f"Redis cannot be used, nothing was fetched:\n  REDIS_URL = {url!r}: ")
    with pytest.raises(UsageError) as command_error:
        check_redis(Settings({"REDIS_URL": url}))
    assert str(command_error.value).startswith("Redis cannot be used:\n  REDIS_URL")
    check_redis(Settings())  # the embedded frontier: no Redis to check
