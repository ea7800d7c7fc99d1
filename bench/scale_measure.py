"""The measurements ``bench/scale_model.py`` calibrates its model with, each on servers it
starts itself on loopback: shard CPU per claim+ack pair and per link check (a
``RedisFrontier`` on a redis-server of its own, Redis CPU from ``INFO cpu``), seen-set
bytes per URL, pages/s of one worker process, and real crawls on the test web."""

from __future__ import annotations

import itertools
import random
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "bench")]

import redis  # noqa: E402
from common import WebLogRun  # noqa: E402
from crawling import crawl_command  # noqa: E402
from redis_frontier_claims import redis_cpu  # noqa: E402
from redis_frontier_crawls import wait_all  # noqa: E402
from redis_frontier_seen import memory_of  # noqa: E402
from redis_server import RedisServer  # noqa: E402
from scale_sim import ShardCosts  # noqa: E402
from testweb import RequestRecord, Site, TestWeb  # noqa: E402

from crawler.dedup.index import RedisContentIndex  # noqa: E402
from crawler.dedup.split import ClusterContentIndex  # noqa: E402
from crawler.frontier.api import Entry, Fetch  # noqa: E402
from crawler.frontier.backends.redis.cluster import shard_tags  # noqa: E402
from crawler.frontier.backends.redis.single import RedisFrontier  # noqa: E402
from crawler.frontier.policy import PolitenessPolicy  # noqa: E402
from crawler.urls.keys import fingerprint  # noqa: E402

CALLS_PER_STEP = 4  # claim, times, fetched, ack: the scripts of one claim_many/fetched_many/ack_many step


@dataclass
class Line:
    """Redis CPU seconds of ``calls`` calls moving ``items`` items, and the client's wall time."""

    calls: int
    items: int
    cpu: float
    wall: float


def fit(small: Line, large: Line) -> tuple[float, float]:
    """(CPU per call, CPU per item) from two batch sizes: cpu = calls x a + items x b."""
    per_small, per_large = small.cpu / small.calls, large.cpu / large.calls
    size_small, size_large = small.items / small.calls, large.items / large.calls
    item = max(0.0, (per_large - per_small) / (size_large - size_small))
    return max(0.0, per_small - size_small * item), item


@dataclass
class ShardRates:
    pairs_small: Line  # claim+fetched+ack steps of one pair
    pairs_large: Line  # steps of `batch` pairs
    links_small: Line  # add calls of one link
    links_large: Line  # add calls of a page's links
    seen_bytes_per_url: float
    rtt: float  # seconds of a PING round trip on loopback
    content: Line  # content checks of one Redis's index (one page each): a REDIS_URL list's first server
    content_split: Line  # content checks of the Redis Cluster index, all its tags on this one server

    def costs(self) -> ShardCosts:
        """Shard CPU per call and per item. A step's fixed part is split evenly over its four
        scripts (fetched counts two: times read, times written), its per-pair part over
        claim, fetched and ack."""
        step, pair = fit(self.pairs_small, self.pairs_large)
        call = step / CALLS_PER_STEP
        link_call, link_item = fit(self.links_small, self.links_large)
        return ShardCosts(claim_call=call, claim_item=pair / 3, report_call=2 * call, report_item=pair / 3,
                          ack_call=call, ack_item=pair / 3, link_call=link_call, link_item=link_item,
                          content=self.content_split.cpu / self.content_split.items)


def _timed(client: redis.Redis, rounds: int, step: object) -> Line:
    cpu0, started = redis_cpu(client), time.perf_counter()
    items = sum(step() for _ in range(rounds))  # type: ignore[operator]
    wall = time.perf_counter() - started
    return Line(rounds, items, redis_cpu(client) - cpu0, wall)


def shard_rates(tmp: Path, pairs: int, links: int, batch: int, page_links: int) -> ShardRates:
    """Claim+ack steps of 1 and of ``batch`` pairs over 1,000 always-due hosts; then link
    checks (add), 90% of them URLs already seen, one a call and ``page_links`` a call."""
    server = RedisServer(tmp).start()
    try:
        client = redis.Redis.from_url(server.url)
        started = time.perf_counter()
        for _ in range(200):
            client.ping()
        rtt = (time.perf_counter() - started) / 200
        frontier = RedisFrontier(client, "pairs", policy=PolitenessPolicy(min_delay=0, delay_factor=0),
                                 expected_urls=pairs)
        urls = [f"http://host{i % 1000}.example/p/{i}" for i in range(2 * pairs + 200)]
        for start in range(0, len(urls), 1000):
            frontier.add([Entry(fingerprint(u), urlsplit(u).hostname or "", 0, "x")
                          for u in urls[start:start + 1000]])

        def step(size: int) -> int:
            now = time.time()
            claims, _ = frontier.claim_many(now, size)
            frontier.fetched_many([Fetch(c.fp, c.token, now, 0.05, 200) for c in claims])
            frontier.ack_many([(c.fp, c.token) for c in claims])
            return len(claims)

        for _ in range(100):  # scripts loaded (SCRIPT LOAD) outside the timing
            step(1)
        small = _timed(client, pairs // 4, lambda: step(1))
        large = _timed(client, max(1, pairs // batch), lambda: step(batch))

        seen = RedisFrontier(client, "links", expected_urls=links)
        known = [fingerprint(f"http://site{i % 500}.example/a/{i}") for i in range(links)]
        for start in range(0, links, 1000):
            seen.add([Entry(fp, "h", 0, "x") for fp in known[start:start + 1000]])
        seen_bytes = memory_of(client, "crawl:{links}:seen:*") / links
        fresh = iter(fingerprint(f"http://site{i % 500}.example/b/{i}") for i in range(10 * links))
        probe = iter(range(10 * links))

        def check(size: int) -> int:
            entries = []
            for _ in range(size):
                k = next(probe)
                fp = next(fresh) if k % 10 == 0 else known[(k * 7919) % links]  # 90% seen
                entries.append(Entry(fp, "h", 0, "x"))
            seen.add(entries)
            return size

        links_small = _timed(client, links // 4, lambda: check(1))
        links_large = _timed(client, max(1, links // page_links), lambda: check(page_links))

        # A new page a check (SHA-256 and simhash at random, near copies looked up): one Redis's
        # index (MGET + script), then the cluster's split one (2 pipelines of plain commands),
        # all of its 16 tags on this server: its CPU a page, whatever the shards it is spread over.
        checks = max(1, links // 10)
        content_line = _timed(client, checks, _content_checks(RedisContentIndex(client, "content")))
        split = ClusterContentIndex(client, shard_tags("split", 16))
        split_line = _timed(client, checks, _content_checks(split))
    finally:
        server.stop()
    return ShardRates(small, large, links_small, links_large, seen_bytes, rtt, content_line, split_line)


def _content_checks(index: RedisContentIndex | ClusterContentIndex) -> Callable[[], int]:
    pages = random.Random(0)

    def check() -> int:
        k = pages.getrandbits(32)
        index.check_and_add(pages.randbytes(32), pages.getrandbits(64), f"http://h{k % 500}/{k}",
                            f"h{k % 500}", near=True)
        return 1

    return check


# --------------------------------------------------------------------------- real crawls


@dataclass
class Crawl(WebLogRun):
    records: list[RequestRecord]
    starts: list[float]  # each worker's first request, seconds after the first of all
    timed_out: bool
    warc_bytes: int

    @property
    def pages(self) -> int:
        return len({(r.host, r.path) for r in self.records if r.status == 200})

    @property
    def body_bytes(self) -> int:
        return sum(r.bytes_sent for r in self.records)

    def politeness(self, gap: float, tolerance: float = 0.005) -> tuple[int, int]:
        """(overlaps, short gaps) per host on the web's log, as bench/redis_frontier.py counts them."""
        by_host: dict[str, list[RequestRecord]] = {}
        for r in self.records:
            by_host.setdefault(r.host, []).append(r)
        overlaps = short = 0
        for records in by_host.values():
            records.sort(key=lambda r: r.start)
            for before, after in itertools.pairwise(records):
                if after.start < before.end:
                    overlaps += 1
                elif after.start - before.end < gap - tolerance:
                    short += 1
        return overlaps, short


def crawl(web: TestWeb, sites: list[Site], home: Path, redis_urls: list[str], workers: int,
          timeout: float, **settings: object) -> Crawl:
    """``workers`` processes of ``scrapy crawl web`` sharing one crawl over ``redis_urls``
    (several: the sharded backend), each given every seed and its own User-Agent."""
    seeds = ",".join(web.url(s.host) for s in sites)
    web.reset()
    procs = []
    for k in range(workers):
        wdir = home / f"worker-{k}"
        wdir.mkdir(parents=True)
        command, env = crawl_command(
            web, wdir, f"seeds={seeds}", REDIS_URL=",".join(redis_urls), CRAWL_ID=home.name,
            ROBOTSTXT_OBEY=False, STORE_URI=home / "store", USER_AGENT=f"scale-model-{k}",
            TELNETCONSOLE_ENABLED=False, **settings)
        procs.append(subprocess.Popen(command, cwd=wdir, env=env, stdout=subprocess.DEVNULL,
                                      stderr=(wdir / "log").open("w")))
    timed_out = wait_all(procs, timeout)
    records = web.hits()
    first = min((r.start for r in records), default=0.0)
    starts = [min((r.start for r in records if r.headers.get("User-Agent") == f"scale-model-{k}"),
                  default=first) - first for k in range(workers)]
    warc = sum(p.stat().st_size for p in (home / "store").rglob("*.warc.gz"))
    return Crawl(records, starts, timed_out, warc)


def worker_rate(tmp: Path, hosts: int, pages: int, concurrency: int, timeout: float) -> Crawl:
    """One worker on a web that never makes it wait (no latency, no gap, many hosts):
    its pages/s is what its CPU sustains, through the Redis frontier."""
    sites = [Site(f"c{i:03d}.test", pages=pages) for i in range(hosts)]
    server = RedisServer(tmp).start()
    try:
        with TestWeb(sites) as web:
            return crawl(web, sites, tmp / "cpu", [server.url], 1, timeout,
                         CONCURRENT_REQUESTS=concurrency, SCHEDULER_IDLE_BEFORE_CLOSE=1)
    finally:
        server.stop()


def sharded_crawl(tmp: Path, sites: list[Site], shards: int, workers: int, concurrency: int, gap: float,
                  timeout: float) -> Crawl:
    """``workers`` processes over ``shards`` redis-servers (REDIS_URL lists them all)."""
    servers = []
    try:
        for i in range(shards):
            (tmp / f"redis-{i}").mkdir()
            servers.append(RedisServer(tmp / f"redis-{i}").start())
        with TestWeb(sites) as web:
            return crawl(web, sites, tmp / "sharded", [s.url for s in servers], workers, timeout,
                         CONCURRENT_REQUESTS=concurrency, POLITENESS_MIN_DELAY=gap,
                         SCHEDULER_IDLE_BEFORE_CLOSE=2)
    finally:
        for server in servers:
            server.stop()
