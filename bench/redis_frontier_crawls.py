"""Part 3 of the Redis frontier bench: pages/s of 1..n worker processes crawling the test web, ours
against scrapy-redis, and their politeness from the web's log."""

from __future__ import annotations

import argparse
import math
import resource
import signal
import subprocess
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import redis
import scrapy
from common import WebLogRun, fmt_table
from crawling import crawl_command
from redis_server import RedisServer
from scrapy_redis import defaults as sr_defaults
from scrapy_redis import picklecompat
from scrapy_redis.dupefilter import RFPDupeFilter
from scrapy_redis.queue import PriorityQueue
from testweb import RequestRecord, Site, TestWeb

SPIDER = "srbench"  # the scrapy-redis spider's name: its keys are srbench:requests, srbench:dupefilter

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


def report_errors(run: str, logs: list[Path]) -> None:
    """Print the workers' first ERROR lines: a run that misses pages with every worker
    exiting 0 (each fetch failing, say) says nothing otherwise."""
    errors = [line for log in logs for line in log.read_text(errors="replace").splitlines()
              if "] ERROR: " in line]
    print(f"{run}: not every page fetched; {len(errors)} ERROR line(s) in the workers' logs"
          + "".join(f"\n  {line[:300]}" for line in errors[:3]), file=sys.stderr)


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
        "DOWNLOAD_DELAY_JITTER": 0,
        "ROBOTSTXT_OBEY": False,
        "COOKIES_ENABLED": False,
        "TELNETCONSOLE_ENABLED": False,
        "REMOTE_CONTROL_ENABLED": False,
        "TWISTED_DNS_RESOLVER": "testweb.LoopbackResolver",
        # The test web's resolver is our address guard, which refuses loopback unless
        # allowed; our add-on allows the seeds' hosts, a stock worker has nothing to.
        "NETWORK_ALLOW": "127.0.0.0/8",
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
                    elif runs[-1].pages < len(expected):
                        report_errors(f"{name} x{workers}", logs)
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
