"""What bounds the crawl: the verdict as a pure function, and live on the test web."""

from __future__ import annotations

import re
import threading
from collections import Counter

import pytest
from test_s3 import CREDENTIALS, FlakyProxy, make_bucket
from testweb import Site, TestWeb

from crawler.bound.verdict import CPU, IDLE, NETWORK, POLITENESS, STORAGE, Interval, hosts_to_fill, verdict

# The live tests judge what bounds a crawl from its own CPU share: run alone, after the rest
# (.ci/run), as other tests' crawls on the same cores would make a CPU-bound crawl look
# politeness-bound.
pytestmark = pytest.mark.serial


def interval(**changes) -> Interval:
    base = {"slots": 16, "busy": 2.0, "lag": 0.001, "cpu": 0.2, "queued": 500, "hosts": 2}
    return Interval(**{**base, **changes})


def test_each_bound_is_named_by_what_was_measured():
    assert verdict(interval()).bound == POLITENESS
    assert verdict(interval(busy=15.0)).bound == NETWORK
    assert verdict(interval(lag=0.2)).bound == CPU
    assert verdict(interval(cpu=0.97, busy=15.0)).bound == CPU  # a full core outranks busy slots
    assert verdict(interval(backlog_growth=40, lag=0.2)).bound == STORAGE
    assert verdict(interval(queued=0, busy=0.0, hosts=0)).bound == IDLE
    assert verdict(interval(queued=0, busy=0.0, hosts=0, backlog=30)).bound == STORAGE  # only uploads left


def test_politeness_says_how_many_hosts_would_fill_the_slots():
    found = verdict(interval(busy=2.0, hosts=2))  # one slot per host: 16 hosts fill 16 slots
    assert "about 16 hosts" in found.detail
    assert hosts_to_fill(interval(busy=4.0, hosts=8)) == 32
    assert hosts_to_fill(interval(busy=0.0, hosts=3)) == 16


def bounds(log: str) -> list[str]:
    return re.findall(r"Crawl bound: (\w+)", log)


def mostly(seen: list[str]) -> str:
    """The verdict of most intervals (a crawl's last ones, with few URLs left, may differ)."""
    assert seen, "no verdict logged"
    return Counter(seen).most_common(1)[0][0]


LIVE = {"LOGSTATS_INTERVAL": 1, "FRONTIER_WORKER_TIMEOUT": 3, "ROBOTSTXT_OBEY": False}


def test_a_crawl_of_one_host_with_a_gap_is_bound_by_politeness(crawl, tmp_path):
    with TestWeb([Site("one.test", pages=12, fanout=4)]) as web:
        result = crawl(web, tmp_path, "seeds=" + web.url("one.test"), POLITENESS_MIN_DELAY=0.5,
                       CONCURRENT_REQUESTS=8, **LIVE)
    assert result.returncode == 0, result.log[-2000:]
    seen = bounds(result.log)
    assert mostly(seen) == POLITENESS, seen
    assert "hosts would fill the slots" in result.log


def test_a_crawl_of_slow_hosts_with_few_slots_is_bound_by_the_network(crawl, tmp_path):
    sites = [Site(f"slow{i}.test", pages=6, fanout=3, latency=0.4) for i in range(6)]
    with TestWeb(sites) as web:
        seeds = ",".join(web.url(s.host) for s in sites)
        result = crawl(web, tmp_path, "seeds=" + seeds, CONCURRENT_REQUESTS=2, **LIVE)
    assert result.returncode == 0, result.log[-2000:]
    seen = bounds(result.log)
    assert mostly(seen) == NETWORK, seen


def test_a_crawl_whose_pipeline_burns_cpu_is_bound_by_the_cpu(crawl, tmp_path):
    sites = [Site(f"fast{i}.test", pages=40, fanout=4) for i in range(4)]
    with TestWeb(sites) as web:
        seeds = ",".join(web.url(s.host) for s in sites)
        result = crawl(web, tmp_path, "seeds=" + seeds, ITEM_PIPELINES='{"busy_pipeline.BurnCpu": 100}',
                       **LIVE)
    assert result.returncode == 0, result.log[-2000:]
    seen = bounds(result.log)
    assert mostly(seen) == CPU, seen


def test_a_crawl_storing_to_a_slow_s3_is_bound_by_storage(crawl, tmp_path, moto):
    """Every upload held 1.5 s by a proxy in front of moto's S3 server, files rolled
    every few pages: pages wait for their uploads faster than they leave."""
    make_bucket(moto, "slow")
    proxy = FlakyProxy(moto, failures=0, delay=1.5)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    sites = [Site(f"s{i}.test", pages=30, fanout=4, page_bytes=6000) for i in range(4)]
    try:
        with TestWeb(sites) as web:
            seeds = ",".join(web.url(s.host) for s in sites)
            result = crawl(web, tmp_path, "seeds=" + seeds, STORE_URI="s3://slow/c",
                           AWS_ENDPOINT_URL=f"http://127.0.0.1:{proxy.server_address[1]}",
                           STORE_ROLL_BYTES=20_000, STORE_SPOOL_DIR=tmp_path / "spool",
                           **CREDENTIALS, **LIVE)
    finally:
        proxy.shutdown()
    assert result.returncode == 0, result.log[-2000:]
    seen = bounds(result.log)
    assert mostly(seen) == STORAGE, seen
    assert "upload backlog grew" in result.log or "waiting for" in result.log
