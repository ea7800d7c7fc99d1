"""Coming from scrapy-redis: its spiders and settings run on the polite frontier."""

from __future__ import annotations

import json

import pytest
import redis
from projects import ADDON_LINE, scrapy, start_project
from redis_server import RedisServer
from testweb import Site, TestWeb

from crawler.store.files import LocalStore, iter_records

REDIS_SPIDER = '''
from scrapy_redis.spiders import RedisSpider


class PagesSpider(RedisSpider):
    """Written for scrapy-redis: seeds come from the Redis list "pages:start_urls"."""

    name = "pages"

    def parse(self, response):
        yield {"url": response.url}
        for href in response.css("a::attr(href)").getall():
            yield response.follow(href, self.parse)
'''

# What a scrapy-redis project's settings.py says; the add-on line is the only change.
SCRAPY_REDIS_SETTINGS = (
    'SCHEDULER = "scrapy_redis.scheduler.Scheduler"',
    'DUPEFILTER_CLASS = "scrapy_redis.dupefilter.RFPDupeFilter"',
    "SCHEDULER_PERSIST = True",
    'REDIS_PARAMS = {"socket_timeout": 20}',
    "MAX_IDLE_TIME_BEFORE_CLOSE = 3",
    ADDON_LINE,
)


@pytest.fixture
def redis_server(tmp_path):
    (tmp_path / "redis").mkdir()
    server = RedisServer(tmp_path / "redis").start()
    yield server
    server.stop()


def test_a_redis_spider_runs_on_the_polite_frontier_with_its_seeds_pushed(tmp_path, redis_server):
    project = start_project(tmp_path, REDIS_SPIDER, *SCRAPY_REDIS_SETTINGS)
    host, port = redis_server.url.split("//", 1)[1].split("/", 1)[0].split(":")
    site = Site("shop.test", pages=9, fanout=3, robots_txt="User-agent: *\nDisallow: /p/4.html\n")
    with TestWeb([site]) as web:
        client = redis.Redis(host=host, port=int(port))
        client.rpush("pages:start_urls", web.url("shop.test"))
        done = scrapy(
            project, "crawl", "pages", "-o", "items.jsonl",
            "-s", f"REDIS_HOST={host}", "-s", f"REDIS_PORT={port}", "-s", "CRAWL_ID=shop",
            "-s", "TWISTED_DNS_RESOLVER=testweb.LoopbackResolver",
            # A RedisSpider schedules its seeds itself (engine.crawl): the guard is told their host.
            "-s", "NETWORK_ALLOW=shop.test",
            "-s", f"STORE_URI={tmp_path / 'store'}", "-s", "POLITENESS_MIN_DELAY=0.1",
            "-s", "POLITENESS_DELAY_FACTOR=0", env=web.subprocess_env(),
        )
        assert done.returncode == 0, done.stderr[-3000:]
        hits = web.hits("shop.test")
        assert hits[0].path == "/robots.txt"
        assert "/p/4.html" not in {h.path for h in hits}
        assert web.max_in_flight("shop.test") == 1
        assert web.min_gap("shop.test") >= 0.1 - 0.005
        pages = [h for h in hits if h.path != "/robots.txt"]
        assert len(pages) == len({h.path for h in pages}) == 8  # each once, the forbidden one never
        # The frontier, its seen set and its counters are ours, in that Redis, under the crawl id.
        counters = {k.decode(): int(v) for k, v in client.hgetall("crawl:{shop}:counters").items()}
        assert counters["seen"] >= 9 and counters["stored"] == 8, counters
        assert client.keys("crawl:{shop}:seen:*")
        assert not client.exists("pages:requests")  # scrapy-redis's own queue was not used
    assert "replaces SCHEDULER scrapy_redis.scheduler.Scheduler" in done.stderr
    records = list(iter_records(LocalStore(tmp_path / "store")))
    assert len(records) == 8
    items = [json.loads(line) for line in (project / "items.jsonl").read_text().splitlines()]
    assert len(items) == 8 and all(set(item) == {"url"} for item in items)


def test_scheduler_persist_false_deletes_a_finished_crawls_keys_with_its_last_worker(
        crawl, tmp_path, redis_server):
    with TestWeb([Site("a.test", pages=4)]) as web:
        result = crawl(web, tmp_path, "seeds=" + web.url("a.test"), REDIS_URL=redis_server.url,
                       CRAWL_ID="gone", SCHEDULER_PERSIST=False, ROBOTSTXT_OBEY=False,
                       SCHEDULER_IDLE_BEFORE_CLOSE=0.5)
    assert result.returncode == 0, result.log[-3000:]
    assert len(result.records) == 4
    assert "Crawl gone finished" in result.log
    assert redis.Redis.from_url(redis_server.url).keys("crawl:{gone}*") == []
