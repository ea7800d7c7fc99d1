"""The content-seen index over rounds of a continuous crawl: keys and memory per round.

A fixed set of URLs is checked round after round, some of them with a new text (a new
SHA-256 and a random simhash) at every round, as a continuous crawl of pages that change
sees them. The index keeps one version per URL, so its size after the first round stays
flat. Measured on a redis-server and on a 3-master Redis Cluster the bench starts on
loopback ports (``RedisContentIndex``, ``ClusterContentIndex`` over 16 shard tags), and
in memory (``MemoryContentIndex``, its entries). Prints two Markdown tables: keys and
memory by round, then each key family's ``MEMORY USAGE`` per URL after the last round.

    python bench/dedup_versions.py [--urls 600] [--changing 200] [--rounds 31]
"""

from __future__ import annotations

import argparse
import hashlib
import random
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests")]

import redis  # noqa: E402
from redis_cluster import RedisClusterNodes  # noqa: E402
from redis_server import RedisServer  # noqa: E402

from crawler.dedup.index import MemoryContentIndex, PageKeys, RedisContentIndex  # noqa: E402
from crawler.dedup.split import ClusterContentIndex  # noqa: E402
from crawler.frontier.backends.redis.cluster import shard_tags  # noqa: E402

SEED = 38


def rounds_of_pages(urls: int, changing: int, rounds: int) -> list[list[PageKeys]]:
    """Each round's pages: `urls` URLs on 20 hosts, the first `changing` with a new text
    every round, the rest with their first one."""
    rng = random.Random(SEED)
    names = [f"https://h{n % 20}.example.org/page/{n:06d}" for n in range(urls)]
    simhashes = [rng.getrandbits(64) for _ in names]
    made = []
    for version in range(rounds):
        pages = []
        for n, url in enumerate(names):
            text = version if n < changing else 0
            if n < changing and version:
                simhashes[n] = rng.getrandbits(64)
            sha = hashlib.sha256(f"{url} {text}".encode()).digest()
            pages.append((sha, simhashes[n], url, url.split("/")[2], True))
        made.append(pages)
    return made


def measure(check: Callable[[list[PageKeys]], object], sample: Callable[[], tuple[int, int]],
            rounds: list[list[PageKeys]]) -> list[tuple[int, int]]:
    """(keys, used bytes) after each round, its pages checked in batches of 100."""
    sizes = []
    for pages in rounds:
        for first in range(0, len(pages), 100):
            check(pages[first:first + 100])
        sizes.append(sample())
    return sizes


def families(nodes: Iterable[redis.Redis]) -> Counter[str]:
    """``MEMORY USAGE`` summed per key family over the content keys of `nodes`: ``x``,
    ``n`` (the 4 band tables), ``s``, ``v`` and ``counts`` (pages, dups, cuts)."""
    usage: Counter[str] = Counter()
    for node in nodes:
        for key in node.scan_iter(match="crawl:*:content:*", count=1000):
            name = key.decode().split(":content:")[1].split(":")[0]
            family = name.rstrip("0123") if name[0] in "xnsv" else "counts"
            usage[family] += node.memory_usage(key) or 0
    return usage


Sizes = tuple[list[tuple[int, int]], Counter[str]]


def on_redis(rounds: list[list[PageKeys]], tmp: Path) -> Sizes:
    (tmp / "redis").mkdir()
    server = RedisServer(tmp / "redis").start()
    try:
        client = redis.Redis.from_url(server.url)
        index = RedisContentIndex(client, "bench")
        sizes = measure(index.check_and_add_many,
                        lambda: (client.dbsize(), client.info("memory")["used_memory"]), rounds)
        return sizes, families([client])
    finally:
        server.stop()


def on_cluster(rounds: list[list[PageKeys]], tmp: Path) -> Sizes:
    (tmp / "cluster").mkdir()
    nodes = RedisClusterNodes(tmp / "cluster").start()
    try:
        masters = [redis.Redis(port=port) for port in nodes.masters_ports()]
        index = ClusterContentIndex(redis.RedisCluster.from_url(nodes.url), shard_tags("bench", 16))

        def sample() -> tuple[int, int]:
            return (sum(node.dbsize() for node in masters),
                    sum(node.info("memory")["used_memory"] for node in masters))

        return measure(index.check_and_add_many, sample, rounds), families(masters)
    finally:
        nodes.stop()


def in_memory(rounds: list[list[PageKeys]]) -> list[tuple[int, int]]:
    index = MemoryContentIndex()

    def sample() -> tuple[int, int]:
        return len(index.exact) + len(index.near) + len(index.versions), 0

    return measure(lambda pages: [index.check_and_add(*page) for page in pages], sample, rounds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--urls", type=int, default=600, help="URLs checked every round")
    parser.add_argument("--changing", type=int, default=200, help="URLs with a new text every round")
    parser.add_argument("--rounds", type=int, default=31)
    args = parser.parse_args()
    rounds = rounds_of_pages(args.urls, args.changing, args.rounds)
    with tempfile.TemporaryDirectory() as tmp:
        redis_sizes, redis_families = on_redis(rounds, Path(tmp))
        cluster_sizes, cluster_families = on_cluster(rounds, Path(tmp))
    memory_sizes = in_memory(rounds)
    print(f"{args.urls} URLs, {args.changing} of them with a new text every round\n")
    print("| round | Redis keys | Redis used_memory | Cluster keys | Cluster used_memory (3 masters) "
          "| in-memory entries |")
    print("|---:|---:|---:|---:|---:|---:|")
    for n in sorted({0, *range(0, args.rounds, 10), args.rounds - 1}):
        (keys, used), (cluster_keys, cluster_used) = redis_sizes[n], cluster_sizes[n]
        print(f"| {n + 1} | {keys:,} | {used / 1e6:.2f} MB | {cluster_keys:,} | {cluster_used / 1e6:.2f} MB "
              f"| {memory_sizes[n][0]:,} |")
    print(f"\nAfter round {args.rounds}, `MEMORY USAGE` per URL by family (`counts`: pages, dups, cuts)\n")
    print("| family | Redis | Cluster |")
    print("|---|---:|---:|")
    for family in ("x", "n", "s", "v", "counts"):
        print(f"| {family} | {redis_families[family] / args.urls:.0f} B | "
              f"{cluster_families[family] / args.urls:.0f} B |")


if __name__ == "__main__":
    main()
