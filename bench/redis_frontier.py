"""Redis frontier bench: ours (``RedisFrontier``) against scrapy-redis 0.9, three parts.

Everything runs against servers this script starts itself on loopback: a redis-server on
a free port (Debian's package, ``tests/redis_server.py``) and the project's test web
(``tests/testweb.py``), served from threads of this process.

1. **Seen set, bytes per URL.** N URL fingerprints through ``RedisFrontier.add`` (the real
   Lua script; requests are a byte each so only the seen set grows), ``MEMORY USAGE``
   summed over our ``seen:*`` keys; then the same N URLs into a Redis set the way
   scrapy-redis's RFPDupeFilter stores them (40-character hex SHA-1 fingerprints).

2. **Claim + ack pairs per second**, one client process, one Redis. Ours: N entries over
   many hosts, ``PolitenessPolicy(min_delay=0, delay_factor=0)`` so every host is always
   due, then a timed loop of steps of up to ``--batch`` pairs, as the scheduler takes them:
   ``claim_many`` + ``fetched_many`` (release with the policy's gap) + ``ack_many``.
   Theirs: scrapy-redis's default scheduler queue (``scrapy_redis.queue.PriorityQueue``)
   built as its Scheduler builds it (a spider, the pickle serializer), N Scrapy Requests
   pushed, then a timed loop of ``push`` + ``pop``.
   Both are timed in 5 rounds taken in turn, so they share whatever else the machine does.
   Round trips are counted on the client's connection (one per packet of commands sent),
   client CPU with ``time.process_time``, Redis CPU from ``INFO cpu``.

3. **Pages/s with 1, 2 and 4 worker processes** on a wide test web whose hosts answer
   slowly (default: 200 hosts x 8 pages, 200 ms a response), each worker's
   ``CONCURRENT_REQUESTS`` capped (8), so one worker is network-bound; gap 0.5 s.
   Ours: ``scrapy crawl web`` with ``REDIS_URL`` + ``CRAWL_ID``, ``POLITENESS_MIN_DELAY``
   = the gap, factor 0, robots.txt off, every worker given every seed. Theirs: a plain
   spider following same-host links (``utm_`` parameters dropped, as our normaliser
   does) with scrapy-redis's Scheduler + RFPDupeFilter, ``SCHEDULER_PERSIST``,
   ``DOWNLOAD_DELAY`` = the gap (not randomised), one request per domain, seeded by
   pushing the start Requests through the dupefilter into its queue. From the test web's
   log: pages/s (distinct pages / first request start to last response end), duplicate
   fetches, and per host the politeness violations: overlaps (a request starting before
   the previous one to that host ended) and gaps (end to start) shorter than the gap
   minus 5 ms. Each run has a timeout (60 s; its workers then get SIGTERM) and a run that
   does not fetch every page is marked; its pages/s is over the part it crawled.

Run: ``python bench/redis_frontier.py`` (about 5 minutes; ``--quick``: under one).
Each part is a module beside this one: ``redis_frontier_seen``, ``redis_frontier_claims``,
``redis_frontier_crawls``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from redis_frontier_claims import claim_ack  # noqa: E402
from redis_frontier_crawls import crawls  # noqa: E402
from redis_frontier_seen import seen_set  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a smoke run in under a minute")
    parser.add_argument("--urls", type=int, help="seen set: URLs (default 1,000,000; quick 50,000)")
    parser.add_argument("--pairs", type=int, help="claim + ack pairs (default 20,000; quick 2,000)")
    parser.add_argument("--ops-hosts", type=int, default=1000, help="claim + ack: hosts of the entries")
    parser.add_argument("--batch", type=int, default=32,
                        help="claim + ack: claims a step (the scheduler's CONCURRENT_REQUESTS x 2)")
    parser.add_argument("--hosts", type=int, help="test web hosts (default 200; quick 20)")
    parser.add_argument("--pages", type=int, help="pages a host (default 8; quick 5)")
    parser.add_argument("--latency", type=float, default=0.2, help="seconds before each answer")
    parser.add_argument("--workers", help="worker counts (default 1,2,4; quick 1,2)")
    parser.add_argument("--concurrency", type=int, default=8, help="CONCURRENT_REQUESTS of each worker")
    parser.add_argument("--gap", type=float, default=0.5, help="politeness gap, seconds")
    parser.add_argument("--idle", type=float, help="seconds an idle worker waits, then closes (2; quick 1)")
    parser.add_argument("--run-timeout", type=float,
                        help="seconds a crawl run may take (default 60; quick 25)")
    args = parser.parse_args()
    quick = args.quick
    args.urls = args.urls or (50_000 if quick else 1_000_000)
    args.pairs = args.pairs or (2_000 if quick else 20_000)
    args.hosts = args.hosts or (20 if quick else 200)
    args.pages = args.pages or (5 if quick else 8)
    args.workers = [int(w) for w in (args.workers or ("1,2" if quick else "1,2,4")).split(",")]
    args.run_timeout = args.run_timeout or (25.0 if quick else 60.0)
    args.idle = args.idle if args.idle is not None else (1.0 if quick else 2.0)
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for part in ("seen", "ops"):
            (root / part).mkdir()
        seen_set(args.urls, root / "seen")
        ours, theirs = claim_ack(args.pairs, args.ops_hosts, args.batch, root / "ops")
        crawls(args, root)
    print(f"\n({'quick run, ' if quick else ''}{time.monotonic() - started:.0f} s in all)\n")
    print(f"claim+ack pairs/s: ours {ours.per_second:,.0f}, scrapy-redis {theirs.per_second:,.0f}, "
          f"ratio {ours.per_second / theirs.per_second:.2f}")


if __name__ == "__main__":
    main()
