"""Part 3 of the dedup bench: the near-dup index at scale, each index filled in a process of its own."""

from __future__ import annotations

import hashlib
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from dedup_pages import SEED

from crawler.dedup.near import NearDupIndex

#: The command line whose ``--index-worker`` runs :func:`index_worker` in a child process.
BENCH = Path(__file__).with_name("dedup.py")


def rss_bytes() -> int:
    """VmRSS of this process, in bytes."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def index_worker(kind: str, n: int, queries: int) -> dict[str, Any]:
    """Fill one index with `n` random fingerprints in this process; rates and RSS growth."""
    rng = random.Random(SEED)
    fps = [rng.getrandbits(64) for _ in range(n)]
    keys = [f"https://docs.example.org/page/{i:09d}" for i in range(n)]
    misses = [rng.getrandbits(64) for _ in range(queries)]
    hits = []
    for _ in range(queries):
        fp = rng.choice(fps)
        for bit in rng.sample(range(64), rng.randint(1, 3)):
            fp ^= 1 << bit
        hits.append(fp)
    before = rss_bytes()
    if kind == "ours":
        index = NearDupIndex()
        start = time.perf_counter()
        for fp, key in zip(fps, keys, strict=True):
            index.add(fp, key)
        add_s = time.perf_counter() - start
        after = rss_bytes()

        def find(fp: int) -> bool:
            return index.find(fp) is not None
    elif kind == "redis":
        return redis_index_worker(fps, keys, misses, hits)
    else:
        import simhash

        start = time.perf_counter()
        pindex = simhash.SimhashIndex([], k=3)
        for fp, key in zip(fps, keys, strict=True):
            pindex.add(key, simhash.Simhash(fp))
        add_s = time.perf_counter() - start
        after = rss_bytes()

        def find(fp: int) -> bool:
            return bool(pindex.get_near_dups(simhash.Simhash(fp)))

    rates = {}
    for name, batch in (("miss", misses), ("hit", hits)):
        start = time.perf_counter()
        found = sum(map(find, batch))
        rates[name] = len(batch) / (time.perf_counter() - start)
        rates[f"{name}_found"] = found
    per_key = sum(map(sys.getsizeof, keys[:1000])) / 1000 + 8  # the str and the list slot
    return {
        "n": n,
        "add_per_s": n / add_s,
        "rss_per_entry": (after - before) / n,
        "key_bytes": per_key,
        **rates,
    }


def redis_index_worker(fps: list[int], keys: list[str], misses: list[int], hits: list[int]) -> dict[str, Any]:
    """``RedisContentIndex`` on a redis-server of its own: the pages are added by the
    check-and-add script in pipelined batches of 1,000; lookups are single calls, one
    round trip each as a worker makes them, and pipelined (the server's own rate).
    Memory is Redis's ``used_memory`` growth per page."""
    import redis
    from redis_server import RedisServer

    from crawler.dedup.index import RedisContentIndex

    def pages(batch: list[int], first: int, tag: str = "") -> list[tuple[bytes, int, str, str, bool]]:
        """Pages of `batch`'s fingerprints, the i-th with text and URL number `first` + i."""
        made = []
        for i, fp in enumerate(batch, first):
            url = keys[i] if not tag else f"https://query.example.org/{tag}/{i:09d}"
            made.append((hashlib.sha256(url.encode()).digest(), fp, url, "docs.example.org", True))
        return made

    with tempfile.TemporaryDirectory() as tmp:
        server = RedisServer(Path(tmp)).start()
        try:
            client = redis.Redis.from_url(server.url)
            index = RedisContentIndex(client, "bench")
            before = client.info("memory")["used_memory"]
            start = time.perf_counter()
            for first in range(0, len(fps), 1000):
                index.check_and_add_many(pages(fps[first:first + 1000], first))
            add_s = time.perf_counter() - start
            per_entry = (client.info("memory")["used_memory"] - before) / len(fps)
            rates: dict[str, Any] = {}
            for name, batch in (("miss", misses), ("hit", hits)):
                tenth = len(batch) // 10
                start = time.perf_counter()
                single = pages(batch[:tenth], 0, name)
                found = sum(index.check_and_add(*page) is not None for page in single)
                rates[name] = tenth / (time.perf_counter() - start)
                rest = batch[tenth:]
                start = time.perf_counter()
                for first in range(0, len(rest), 1000):
                    many = pages(rest[first:first + 1000], tenth + first, name)
                    found += sum(match is not None for match in index.check_and_add_many(many))
                rates[f"{name}_pipelined"] = len(rest) / (time.perf_counter() - start)
                rates[f"{name}_found"] = found
        finally:
            server.stop()
    return {"n": len(fps), "add_per_s": len(fps) / add_s, "rss_per_entry": per_entry, "key_bytes": 0, **rates}


def run_worker(kind: str, n: int, queries: int) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, str(BENCH), "--index-worker", kind, str(n), str(queries)],
        capture_output=True, text=True, timeout=900, check=True,
    )  # fmt: skip
    return json.loads(done.stdout)


def section_index(n: int, n_package: int, queries: int) -> None:
    print("## 3. The near-dup index at scale\n")
    ours = run_worker("ours", n, queries)
    shared = run_worker("redis", n, queries)
    package = run_worker("package", n_package, queries // 10)
    print(
        f"Random 64-bit fingerprints under 35-character URL keys; {queries:,} random queries (misses) and "
        f"{queries:,} queries 1-3 bits from a stored fingerprint (hits), a tenth of that for the package; "
        "each index in its own process. The Redis index (a redis-server of its own on loopback) is filled "
        "by its check-and-add script in pipelined batches of 1,000; its lookups are that script too (a miss "
        "adds the page): a tenth as single calls, one round trip each as a worker makes them, the rest "
        "pipelined (the server's rate).\n"
    )
    print("| index | entries | adds/s | miss lookups/s | hit lookups/s | hits found | memory per entry |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for label, r, q in (
        ("`NearDupIndex()` (k=3), in process", ours, queries),
        ("`RedisContentIndex` (k=3), single calls", shared, queries),
        ("`simhash.SimhashIndex(k=3)`", package, queries // 10),
    ):
        print(
            f"| {label} | {r['n']:,} | {r['add_per_s']:,.0f} | {r['miss']:,.0f} | {r['hit']:,.0f} | "
            f"{r['hit_found']:,}/{q:,} | {r['rss_per_entry']:.0f} B |"
        )
    print(
        f"| `RedisContentIndex`, pipelined | | | {shared['miss_pipelined']:,.0f} | "
        f"{shared['hit_pipelined']:,.0f} | | |"
    )
    print(
        f"\nMemory per entry is RSS growth while adding (in process, with the key strings already made; each "
        f"key is ~{ours['key_bytes']:.0f} B more: str object and list slot), or Redis's `used_memory` growth "
        f"(URL and SHA-256 prefix included). At {ours['n']:,} entries a lookup scans "
        f"~{4 * ours['n'] / 65536:.0f} candidates (4 n / 65,536) with C-level iteration, in the worker for "
        f"Redis too (its script scans only what was appended since the worker read the buckets); "
        f"random queries found {ours['miss_found']} false hits in process, "
        f"{shared['miss_found']} in Redis.\n"
    )
