"""Part 1 of the Redis frontier bench: the seen set's bytes per URL, ours against scrapy-redis's."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import redis
from common import fmt_table, machine
from redis_server import RedisServer

from crawler.frontier.api import Entry
from crawler.frontier.backends.redis.single import RedisFrontier
from crawler.urls.keys import fingerprint


def memory_of(client: redis.Redis, pattern: str) -> int:
    return sum(client.memory_usage(key, samples=0) or 0 for key in client.scan_iter(pattern, count=10_000))


def seen_set(n: int, tmp: Path) -> None:
    urls = [f"http://host{i % 5000}.example/path/{i}/page.html" for i in range(n)]
    server = RedisServer(tmp).start()
    try:
        client = redis.Redis.from_url(server.url)
        fingerprints = [fingerprint(url) for url in urls]

        def fill(frontier: RedisFrontier) -> float:
            started = time.perf_counter()
            for start in range(0, n, 1000):
                frontier.add([Entry(fp, "h", 0, "x") for fp in fingerprints[start:start + 1000]])
            return time.perf_counter() - started

        frontier = RedisFrontier(client, "bench", expected_urls=n)
        add_seconds = fill(frontier)
        ours = memory_of(client, "crawl:{bench}:seen:*")
        bloom = RedisFrontier(client, "bloom", expected_urls=n, seen_set="bloom", bloom_error=0.01)
        bloom_seconds = fill(bloom)
        bloom_bytes = memory_of(client, "crawl:{bloom}:bloom:*")
        bloom_lost = n - int(client.hget("crawl:{bloom}:counters", "seen") or 0)
        started = time.perf_counter()
        pipe = client.pipeline(transaction=False)
        for i, url in enumerate(urls):
            pipe.sadd("bench:dupefilter", hashlib.sha1(url.encode()).hexdigest())
            if i % 1000 == 999:
                pipe.execute()
        pipe.execute()
        theirs = client.memory_usage("bench:dupefilter", samples=0)
        sadd_seconds = time.perf_counter() - started
    finally:
        server.stop()
    print("# Seen set in Redis: bytes per URL\n")
    print(f"- {machine()}; {n:,} URLs; Redis {server.command[0]}")
    print(f"- ours: {frontier.bucket_bits}-bit buckets ({1 << frontier.bucket_bits:,} hashes), "
          f"{n / (1 << frontier.bucket_bits):.0f} fingerprints a bucket\n")
    print(fmt_table(
        ["seen set", "bytes", "bytes/URL", "adds/s"],
        [["ours (small hashes: fingerprint bits past the bucket as fields)", f"{ours:,}", f"{ours / n:.1f}",
          f"{n / add_seconds:,.0f}"],
         [f"ours, Bloom at 1% (k={bloom.bloom.k}; {bloom_lost:,} new URLs taken for seen: "
          f"{bloom_lost / n:.2%})", f"{bloom_bytes:,}", f"{bloom_bytes / n:.1f}",
          f"{n / bloom_seconds:,.0f}"],
         ["scrapy-redis RFPDupeFilter (set of 40-char hex SHA-1)", f"{theirs:,}", f"{theirs / n:.1f}",
          f"{n / sadd_seconds:,.0f} (pipelined SADD)"]],
    ), flush=True)
