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
"""

from __future__ import annotations

import argparse
import hashlib
import math
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import redis  # noqa: E402
import scrapy  # noqa: E402
from common import WebLogRun, fmt_table, machine  # noqa: E402
from crawling import crawl_command  # noqa: E402
from redis_server import RedisServer  # noqa: E402
from scrapy_redis import defaults as sr_defaults  # noqa: E402
from scrapy_redis import picklecompat  # noqa: E402
from scrapy_redis.dupefilter import RFPDupeFilter  # noqa: E402
from scrapy_redis.queue import PriorityQueue  # noqa: E402
from testweb import RequestRecord, Site, TestWeb  # noqa: E402

from crawler.frontier.api import Entry, Fetch  # noqa: E402
from crawler.frontier.codec import request_to_json  # noqa: E402
from crawler.frontier.policy import PolitenessPolicy  # noqa: E402
from crawler.frontier.redis import RedisFrontier  # noqa: E402
from crawler.urls.keys import fingerprint  # noqa: E402

SPIDER = "srbench"  # the scrapy-redis spider's name: its keys are srbench:requests, srbench:dupefilter


# --------------------------------------------------------------------------- part 1: seen set


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


# --------------------------------------------------------------------------- part 2: claim + ack


class CountingConnection(redis.Connection):
    """A redis-py connection that counts round trips: each packet of commands it sends
    (one command, or a whole pipeline / MULTI..EXEC) waits for its replies once."""

    sends = 0

    def send_packed_command(self, command: object, check_health: bool = True) -> None:
        CountingConnection.sends += 1
        super().send_packed_command(command, check_health)


def redis_cpu(client: redis.Redis) -> float:
    info = client.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


@dataclass
class OpsResult:
    pairs: int
    seconds: float
    round_trips: int
    client_cpu: float
    server_cpu: float
    best: float = 0.0  # pairs/s of the best round

    @property
    def per_second(self) -> float:
        return self.pairs / self.seconds

    @classmethod
    def total(cls, rounds: list[OpsResult]) -> OpsResult:
        result = cls(*(sum(getattr(r, name) for r in rounds) for name in
                       ("pairs", "seconds", "round_trips", "client_cpu", "server_cpu")))
        result.best = max(r.per_second for r in rounds)
        return result


def measure(client: redis.Redis, pairs: int, step: object) -> OpsResult:
    """Run ``step(most)`` (which returns how many pairs it did) until ``pairs`` are done."""
    CountingConnection.sends = 0
    server0, cpu0, started = redis_cpu(client), time.process_time(), time.perf_counter()
    done = 0
    while done < pairs:
        done += step(pairs - done)  # type: ignore[operator]
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu0
    trips = CountingConnection.sends - 1  # the INFO below is one of them
    server = redis_cpu(client) - server0
    return OpsResult(done, seconds, trips, cpu, server)


ROUNDS = 5  # claim + ack: measured in rounds, ours and theirs in turn


def claim_ack(n: int, hosts: int, batch: int, tmp: Path) -> tuple[OpsResult, OpsResult]:
    warm = 100
    n -= n % ROUNDS
    spider = scrapy.Spider(name="bench")
    urls = [f"http://host{i % hosts}.example/path/{i}/page.html" for i in range(n + warm)]
    server = RedisServer(tmp).start()
    try:
        client = redis.Redis.from_url(server.url, connection_class=CountingConnection)
        # Ours: N entries (+ warm-up) over `hosts` hosts, every host always due.
        frontier = RedisFrontier(client, "ops", policy=PolitenessPolicy(min_delay=0, delay_factor=0),
                                 expected_urls=n)
        entries = []
        for url in urls:
            entries.append(Entry(fingerprint(url), urlsplit(url).hostname or "",
                                 0, request_to_json(scrapy.Request(url), spider)[0]))
            if len(entries) == 1000:
                frontier.add(entries)
                entries.clear()
        frontier.add(entries)

        steps = {"claim_many": [0.0, 0], "fetched_many": [0.0, 0], "ack_many": [0.0, 0]}  # s, trips

        def timed(name: str, call: object, *args: object) -> object:
            sends, started = CountingConnection.sends, time.perf_counter()
            result = call(*args)  # type: ignore[operator]
            steps[name][0] += time.perf_counter() - started
            steps[name][1] += CountingConnection.sends - sends
            return result

        def ours_step(most: int) -> int:
            now = time.time()
            claims, _ = timed("claim_many", frontier.claim_many, now, min(batch, most))
            assert claims, "nothing claimed"
            timed("fetched_many", frontier.fetched_many,
                  [Fetch(c.fp, c.token, now, 0.05, 200) for c in claims])
            timed("ack_many", frontier.ack_many, [(c.fp, c.token) for c in claims])
            return len(claims)

        # Theirs: the queue class and key its Scheduler uses, with the pickle serializer.
        queue = PriorityQueue(server=client, spider=spider,
                              key=sr_defaults.SCHEDULER_QUEUE_KEY % {"spider": spider.name},
                              serializer=picklecompat)
        for url in urls[:n]:
            queue.push(scrapy.Request(url))
        more = iter([scrapy.Request(f"http://host{i % hosts}.example/more/{i}/page.html")
                     for i in range(n + warm)])  # new URLs: the queue keeps its size

        def theirs_step(most: int) -> int:
            queue.push(next(more))
            request = queue.pop()
            assert request is not None
            return 1

        for _ in range(warm):  # loads our scripts (NOSCRIPT, SCRIPT LOAD) outside the timing
            ours_step(1)
            theirs_step(1)
        for step in steps.values():
            step[:] = [0.0, 0]
        # Interleaved rounds, so that both sides share whatever else the machine is doing.
        ours_rounds, theirs_rounds = [], []
        for _ in range(ROUNDS):
            ours_rounds.append(measure(client, n // ROUNDS, ours_step))
            theirs_rounds.append(measure(client, n // ROUNDS, theirs_step))
        ours, theirs = OpsResult.total(ours_rounds), OpsResult.total(theirs_rounds)
        ours_left = (frontier.queued, frontier.leased)
        ours_done = frontier.done_count()
        theirs_left = len(queue)
    finally:
        server.stop()
    per = {name: f"{1e6 * t / ours.pairs:.0f} µs and {trips / ours.pairs:.3f} round trips a pair"
           for name, (t, trips) in steps.items()}
    print(f"\n# Claim + ack pairs per second, one worker process, one local Redis\n\n"
          f"- {n:,} pairs each after warm-up, in {ROUNDS} rounds taken in turn (ours, theirs, ...); "
          "pairs/s over all rounds, and of the best round; one client connection. "
          f"Ours: {n:,} URLs over {hosts:,} hosts, every host always due (min delay 0, factor 0), "
          f"drained to {ours_left[0]} queued, {ours_left[1]} leased, {ours_done:,} done. Theirs: "
          f"{n:,} Requests queued, each pair pushes a new one (queue left at {theirs_left:,})\n"
          "- round trips counted on the client's connection (one per packet sent: one command, or "
          "one pipeline / MULTI..EXEC); CPU per pair: client from `process_time`, Redis from `INFO cpu`\n"
          f"- ours, a step of up to {batch} pairs: `claim_many(now, {batch})` = "
          "one claim script (for each claim: pops the earliest due host of the level the policy's "
          "cycle names, takes the URL of the level the host's own cursor names, marks its "
          "politeness group busy, writes the lease with a token, returns the group's times) "
          f"[{per['claim_many']}]; `fetched_many(...)` = the policy in Python from the times the "
          "claim read, one script writing each next allowed time and releasing the host where "
          f"those times still hold [{per['fetched_many']}]; `ack_many(...)` = one ack script "
          f"[{per['ack_many']}]\n"
          "- theirs, a pair: `push` = `Request.to_dict` + pickle + ZADD; `pop` = MULTI ZRANGE 0 0 + "
          "ZREMRANGEBYRANK 0 0 EXEC (one round trip) + unpickle + `request_from_dict`. No per-host "
          "state, no lease, no ack: a popped request that is never fetched is lost\n")
    rows = [[name, what, f"{r.round_trips / r.pairs:.2f}", f"{r.per_second:,.0f}", f"{r.best:,.0f}",
             f"{1e6 * r.client_cpu / r.pairs:.0f}", f"{1e6 * r.server_cpu / r.pairs:.0f}"]
            for name, what, r in (("ours: RedisFrontier", f"claim + release + ack, {batch} a step", ours),
                                  ("scrapy-redis: PriorityQueue", "push + pop", theirs))]
    print(fmt_table(["queue", "a pair", "round trips/pair", "pairs/s", "best round", "client CPU µs/pair",
                     "Redis CPU µs/pair"], rows))
    print(f"\nRatio: ours {ours.per_second / theirs.per_second:.2f}x scrapy-redis's pairs/s "
          f"(best rounds: {ours.best / theirs.best:.2f}x).", flush=True)
    return ours, theirs


# --------------------------------------------------------------------------- part 3: workers

#: The scrapy-redis worker: a plain spider (run with ``scrapy runspider``) that follows
#: same-host links; its requests come from the scrapy-redis queue the bench seeded. An idle
#: worker waits ``idle`` seconds for work (others may still be producing URLs), then closes.
THEIR_SPIDER = '''
import time
from urllib.parse import urlsplit

import scrapy
from scrapy import signals
from scrapy.exceptions import DontCloseSpider
from w3lib.url import url_query_cleaner


class Bench(scrapy.Spider):
    name = "srbench"

    def __init__(self, idle="3", **kwargs):
        super().__init__(**kwargs)
        self.idle = float(idle)
        self.idle_since = None

    @classmethod
    def from_crawler(cls, crawler, *args, **kwargs):
        spider = super().from_crawler(crawler, *args, **kwargs)
        crawler.signals.connect(spider.spider_idle, signal=signals.spider_idle)
        return spider

    async def start(self):
        return
        yield

    def spider_idle(self):
        now = time.monotonic()
        if self.idle_since is None:
            self.idle_since = now
        if now - self.idle_since < self.idle:
            raise DontCloseSpider

    def parse(self, response):
        self.idle_since = None
        host = urlsplit(response.url).netloc
        for href in response.xpath("//a/@href").getall():
            url = url_query_cleaner(response.urljoin(href), ["utm_source"], remove=True)
            if urlsplit(url).netloc == host:
                yield scrapy.Request(url)
'''


@dataclass
class Run(WebLogRun):
    name: str
    workers: int
    wall: float
    timed_out: bool
    exit_codes: list[int]
    cpu: float  # the workers' user + system CPU seconds
    records: list[RequestRecord]
    expected: set[tuple[str, str]]
    gap: float

    @property
    def pages(self) -> int:
        return len({(r.host, r.path) for r in self.records} & self.expected)

    def row(self) -> list[str]:
        records, pages, span = self.records, self.pages, self.span
        fetched = Counter((r.host, r.path) for r in records)
        duplicates = sum(c - 1 for c in fetched.values() if c > 1)
        by_host: dict[str, list[RequestRecord]] = defaultdict(list)
        for r in records:
            by_host[r.host].append(r)
        overlaps = short = 0
        least = math.inf
        for host_records in by_host.values():
            host_records.sort(key=lambda r: r.start)
            last_end = None
            for r in host_records:
                if last_end is not None:
                    gap = r.start - last_end
                    least = min(least, gap)
                    if gap < 0:
                        overlaps += 1
                    elif gap < self.gap - 0.005:
                        short += 1
                last_end = r.end if last_end is None else max(last_end, r.end)
        in_flight = sum(r.end - r.start for r in records) / span if span > 0 else math.nan
        complete = "yes" if pages == len(self.expected) else f"NO: {pages:,}/{len(self.expected):,}"
        wall = f"{self.wall:.0f}" + (" (timeout)" if self.timed_out else "")
        bad_exits = [c for c in self.exit_codes if c != 0]
        if bad_exits and not self.timed_out:
            wall += f" (exit {bad_exits})"
        return [self.name, str(self.workers), complete, f"{len(records):,}", f"{span:.1f}",
                f"{self.rate:.1f}", f"{in_flight:.1f}", str(duplicates), str(overlaps),
                str(short), f"{least:.3f}" if least != math.inf else "-",
                f"{1000 * self.cpu / max(1, len(records)):.0f}", wall]


def wait_all(workers: list[subprocess.Popen], timeout: float) -> bool:
    """Wait for the workers; on timeout stop them (SIGTERM, then SIGKILL). True if timed out."""
    deadline = time.monotonic() + timeout
    for worker in workers:
        try:
            worker.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            break
    else:
        return False
    for worker in workers:
        if worker.poll() is None:
            worker.send_signal(signal.SIGTERM)
    for worker in workers:
        try:
            worker.wait(timeout=10)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()
    return True


def run_ours(web: TestWeb, home: Path, redis_url: str, seeds: list[str], workers: int,
             args: argparse.Namespace) -> tuple[list[subprocess.Popen], list[Path]]:
    procs, logs = [], []
    for k in range(workers):
        wdir = home / f"ours-{workers}-{k}"
        wdir.mkdir(parents=True)
        command, env = crawl_command(
            web, wdir, "seeds=" + ",".join(seeds), REDIS_URL=redis_url, CRAWL_ID=f"bench{workers}",
            ROBOTSTXT_OBEY=False, STORE_URI=home / f"ours-{workers}-store", POLITENESS_MIN_DELAY=args.gap,
            POLITENESS_DELAY_FACTOR=0, CONCURRENT_REQUESTS=args.concurrency,
            SCHEDULER_IDLE_BEFORE_CLOSE=args.idle)
        logs.append(wdir / "log")
        procs.append(subprocess.Popen(command, cwd=wdir, env=env, stdout=subprocess.DEVNULL,
                                      stderr=logs[-1].open("w")))
    return procs, logs


def run_theirs(web: TestWeb, home: Path, redis_url: str, seeds: list[str], workers: int,
               args: argparse.Namespace) -> tuple[list[subprocess.Popen], list[Path]]:
    client = redis.Redis.from_url(redis_url)
    spider = scrapy.Spider(name=SPIDER)
    # What scrapy_redis.scheduler.Scheduler.enqueue_request does with each start Request.
    queue = PriorityQueue(server=client, spider=spider, serializer=picklecompat,
                          key=sr_defaults.SCHEDULER_QUEUE_KEY % {"spider": SPIDER})
    dupefilter = RFPDupeFilter(client, key=sr_defaults.SCHEDULER_DUPEFILTER_KEY % {"spider": SPIDER})
    for url in seeds:
        request = scrapy.Request(url)
        if not dupefilter.request_seen(request):
            queue.push(request)
    client.close()
    spider_file = home / "their_spider.py"
    spider_file.write_text(THEIR_SPIDER)
    settings = {
        "SCHEDULER": "scrapy_redis.scheduler.Scheduler",
        "DUPEFILTER_CLASS": "scrapy_redis.dupefilter.RFPDupeFilter",
        "SCHEDULER_PERSIST": True,
        "REDIS_URL": redis_url,
        "CONCURRENT_REQUESTS": args.concurrency,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
        "DOWNLOAD_DELAY": args.gap,
        "RANDOMIZE_DOWNLOAD_DELAY": False,
        "ROBOTSTXT_OBEY": False,
        "COOKIES_ENABLED": False,
        "TELNETCONSOLE_ENABLED": False,
        "REMOTE_CONTROL_ENABLED": False,
        "TWISTED_DNS_RESOLVER": "testweb.LoopbackResolver",
        "LOG_LEVEL": "INFO",
    }
    procs, logs = [], []
    for k in range(workers):
        wdir = home / f"theirs-{workers}-{k}"
        wdir.mkdir(parents=True)
        command = [sys.executable, "-m", "scrapy", "runspider", str(spider_file), "-a", f"idle={args.idle}"]
        for name, value in settings.items():
            command += ["-s", f"{name}={value}"]
        env = web.subprocess_env()
        env.pop("SCRAPY_SETTINGS_MODULE", None)
        logs.append(wdir / "log")
        procs.append(subprocess.Popen(command, cwd=wdir, env=env, stdout=subprocess.DEVNULL,
                                      stderr=logs[-1].open("w")))
    return procs, logs


def crawls(args: argparse.Namespace, tmp: Path) -> None:
    sites = [Site(f"w{i:03d}.test", pages=args.pages, latency=args.latency) for i in range(args.hosts)]
    runs: list[Run] = []
    with TestWeb(sites) as web:
        seeds = [web.url(s.host) for s in sites]
        expected = {((p := urlsplit(u)).hostname or "", p.path) for u in web.reachable(seeds)}
        (tmp / "redis").mkdir()
        server = RedisServer(tmp / "redis").start()
        try:
            client = redis.Redis.from_url(server.url)
            for workers in args.workers:
                for name, launch in (("ours", run_ours), ("scrapy-redis", run_theirs)):
                    client.flushall()
                    web.reset()
                    cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
                    started = time.monotonic()
                    procs, logs = launch(web, tmp / "runs", server.url, seeds, workers, args)
                    timed_out = wait_all(procs, args.run_timeout)
                    wall = time.monotonic() - started
                    after = resource.getrusage(resource.RUSAGE_CHILDREN)
                    cpu_seconds = after.ru_utime + after.ru_stime - cpu.ru_utime - cpu.ru_stime
                    codes = [p.returncode for p in procs]
                    runs.append(Run(name, workers, wall, timed_out, codes, cpu_seconds, web.hits(),
                                    expected, args.gap))
                    if any(codes) and not timed_out:
                        tail = logs[codes.index(next(filter(None, codes)))].read_text(errors="replace")
                        print(f"{name} x{workers}: a worker failed; its log ends:\n{tail[-2000:]}",
                              file=sys.stderr)
            client.close()
        finally:
            server.stop()
    print(f"\n# Pages/s with {', '.join(map(str, args.workers))} worker process(es), one Redis\n\n"
          f"- test web: {args.hosts} hosts x {args.pages} pages ({len(expected):,} pages), "
          f"{args.latency * 1000:.0f} ms latency per answer; each worker CONCURRENT_REQUESTS = "
          f"{args.concurrency}; politeness gap {args.gap} s; robots.txt off; run timeout "
          f"{args.run_timeout:.0f} s; idle workers close after {args.idle:g} s\n"
          f"- ours: `scrapy crawl web` with REDIS_URL + CRAWL_ID, POLITENESS_MIN_DELAY={args.gap}, "
          f"factor 0 (gap from the end of a fetch), every worker given all {len(seeds)} seeds, pages "
          "stored (WARC)\n"
          f"- scrapy-redis: its Scheduler + RFPDupeFilter (SCHEDULER_PERSIST), default PriorityQueue, "
          f"DOWNLOAD_DELAY={args.gap} not randomised, CONCURRENT_REQUESTS_PER_DOMAIN=1, seeds pushed "
          "once into its queue; the spider follows links, stores nothing. Its DOWNLOAD_DELAY runs from "
          "request start to request start in each worker's own slot (so an end-to-start gap is the delay "
          "minus the response time, and workers do not see each other's fetches); its queue hands out "
          "equal-priority requests in the order of their pickled bytes, which puts a host's URLs next "
          "to each other, so a worker's concurrency fills with requests to a few hosts\n"
          "- from the test web's log: all pages = every page of the web fetched; pages/s = distinct pages "
          "/ span (first request start to last response end); in flight = mean requests being served; "
          "duplicates = fetches beyond the first of a URL; per host: "
          f"overlaps = a request starting before the previous one ended, short gaps = end-to-start "
          f"< {args.gap - 0.005:.3f} s; min gap = the smallest end-to-start (negative: overlap); "
          "CPU ms/fetch = the workers' user + system CPU / fetches (startup included); "
          "wall = first worker start to last worker exit\n")
    print(fmt_table(["crawler", "workers", "all pages", "fetches", "span s", "pages/s", "in flight",
                     "duplicates", "overlaps", "short gaps", "min gap s", "CPU ms/fetch", "wall s"],
                    [r.row() for r in runs]))
    speedups = []
    for name in ("ours", "scrapy-redis"):
        rate = {r.workers: r.rate for r in runs if r.name == name}
        one = rate.get(args.workers[0])
        if one:
            speedups.append(f"{name} " + ", ".join(f"{w} workers {rate[w] / one:.2f}x"
                                                   for w in args.workers[1:] if w in rate))
    if speedups and len(args.workers) > 1:
        print(f"\nSpeed-up of pages/s over {args.workers[0]} worker: " + "; ".join(speedups) + ".")
    stopped = [f"{r.name} x{r.workers}" for r in runs if r.timed_out]
    if stopped:
        print(f"\nStopped at the {args.run_timeout:.0f} s timeout (SIGTERM): {', '.join(stopped)}; "
              "pages/s is over the part crawled.")
    sys.stdout.flush()


# --------------------------------------------------------------------------- main


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
