"""Redis frontier bench, first part: seen-set bytes per URL, ours vs scrapy-redis.

Starts its own redis-server on a free loopback port (Debian's package), adds N URL
fingerprints through ``RedisFrontier.add`` (the real Lua script; requests are a byte
each so only the seen set grows) and sums ``MEMORY USAGE`` over our ``seen:*`` keys;
then the same N URLs into a Redis set the way scrapy-redis's RFPDupeFilter stores them
(40-character hex SHA-1 fingerprints). Run: ``python bench/redis_frontier.py [--urls N]``.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import redis  # noqa: E402
from common import fmt_table, machine  # noqa: E402
from redis_server import RedisServer  # noqa: E402

from crawler.frontier.embedded import Entry  # noqa: E402
from crawler.frontier.redis import RedisFrontier  # noqa: E402
from crawler.urls import fingerprint  # noqa: E402


def memory_of(client: redis.Redis, pattern: str) -> int:
    return sum(client.memory_usage(key, samples=0) or 0 for key in client.scan_iter(pattern, count=10_000))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--urls", type=int, default=1_000_000)
    args = parser.parse_args()
    n = args.urls
    urls = [f"http://host{i % 5000}.example/path/{i}/page.html" for i in range(n)]
    with tempfile.TemporaryDirectory() as tmp:
        server = RedisServer(Path(tmp)).start()
        try:
            client = redis.Redis.from_url(server.url)
            frontier = RedisFrontier(client, "bench", expected_urls=n)
            started = time.perf_counter()
            batch = []
            for url in urls:
                batch.append(Entry(fingerprint(url), "h", 0, "x"))
                if len(batch) == 1000:
                    frontier.add(batch)
                    batch.clear()
            frontier.add(batch)
            add_seconds = time.perf_counter() - started
            ours = memory_of(client, "crawl:{bench}:seen:*")
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
         ["scrapy-redis RFPDupeFilter (set of 40-char hex SHA-1)", f"{theirs:,}", f"{theirs / n:.1f}",
          f"{n / sadd_seconds:,.0f} (pipelined SADD)"]],
    ))


if __name__ == "__main__":
    main()
