"""The run machinery of ``bench/frontier.py``: the crawlers, scenarios and runs it compares,
and the bench that starts them over one test web (see that file's docstring)."""

from __future__ import annotations

import math
import os
import re
import resource
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from testweb import RequestRecord, Site, TestWeb  # noqa: E402

#: Politeness tolerance: a gap this much under the configured one is still fine
#: (timer and clock granularity).
TOLERANCE = 0.005
#: Seconds a crawl process may take to start before its first request.
STARTUP_GRACE = 30.0
#: Longest ``-a seeds=<comma list>`` given to ours; a longer list goes in a seeds file
#: (one URL per line). The web spider's ``parse_seeds`` first tries the value as a file
#: name (``Path(value).is_file()``), which raises ``OSError: [Errno 36] File name too
#: long`` for a value over PATH_MAX (4096 bytes on Linux), so 500 seeds fail that way.
SEED_ARG_MAX = 4000

COMMON_SETTINGS: dict[str, str] = {
    "TWISTED_DNS_RESOLVER": "testweb.LoopbackResolver",
    "ROBOTSTXT_OBEY": "False",
    "TELNETCONSOLE_ENABLED": "False",
    "REMOTE_CONTROL_ENABLED": "False",
    "LOG_LEVEL": "INFO",
    "COOKIES_ENABLED": "False",
    # The test web is on loopback: stock Scrapy has no seed list to allow it from.
    "NETWORK_ALLOW": "127.0.0.0/8",
}

STOCK_SPIDER = '''\
import scrapy
from scrapy.linkextractors import LinkExtractor
from w3lib.url import url_query_cleaner


def drop_tracking(value):
    return url_query_cleaner(value, ("utm_source", "utm_medium", "utm_campaign"), remove=True)


class StockSpider(scrapy.Spider):
    name = "stock"
    allowed_domains = {hosts!r}
    start_urls = {seeds!r}
    link_extractor = LinkExtractor(process_value=drop_tracking)

    async def start(self):
        # Not start_urls' default dont_filter=True: "/" is linked from every page and
        # must be fetched once, as ours does.
        for url in self.start_urls:
            yield scrapy.Request(url, callback=self.parse)

    def parse(self, response):
        for link in self.link_extractor.extract_links(response):
            yield response.follow(link, callback=self.parse)
'''


# --------------------------------------------------------------------------- model


@dataclass(frozen=True)
class Crawler:
    """One crawler configuration: ``kind`` "ours" or "stock", plus its own settings."""

    label: str
    kind: str
    settings: Mapping[str, str]


@dataclass
class Scenario:
    name: str
    sites: list[Site]
    gap: float
    concurrency: int
    latency: float
    limit: float  # seconds from the first request; then the run is killed
    small_hosts: list[str] = field(default_factory=list)
    windowed: bool = False  # pages/s over min(limit, crawl length)

    @property
    def hosts(self) -> list[str]:
        return [s.host for s in self.sites]

    @property
    def pages(self) -> int:
        return sum(s.pages for s in self.sites)

    def bound_seconds(self, pages: int) -> float:
        """Politeness bound of a host with ``pages`` pages: (n - 1) x gap."""
        return (pages - 1) * self.gap

    @property
    def bound_rate(self) -> float:
        """min(hosts / gap, concurrency / latency) pages/s."""
        by_hosts = len(self.sites) / self.gap if self.gap else math.inf
        by_slots = self.concurrency / self.latency if self.latency else math.inf
        return min(by_hosts, by_slots)


@dataclass
class Violation:
    """A request to ``host`` that came too soon after the previous one(s)."""

    host: str
    kind: str  # "overlap", "short gap" or "short start gap"
    prev: RequestRecord  # the host's previous request (by start)
    prev_end: float  # latest end of the host's earlier requests
    record: RequestRecord

    @property
    def gap(self) -> float:
        """End-to-start gap, or start-to-start for a short start gap."""
        if self.kind == "short start gap":
            return self.record.start - self.prev.start
        return self.record.start - self.prev_end


@dataclass
class Run:
    crawler: Crawler
    scenario: Scenario
    records: list[RequestRecord]
    spawn: float
    stopped: float  # monotonic time the process exited or was killed
    timed_out: bool
    returncode: int
    log: str
    cpu: float = 0.0  # user + system seconds of the crawl process

    # ---------------------------------------------------------------- derived

    @property
    def first_start(self) -> float:
        return min((r.start for r in self.records), default=self.spawn)

    @property
    def last_end(self) -> float:
        return max((r.end for r in self.records), default=self.spawn)

    def by_host(self) -> dict[str, list[RequestRecord]]:
        hosts: dict[str, list[RequestRecord]] = defaultdict(list)
        for r in self.records:
            hosts[r.host].append(r)
        for rs in hosts.values():
            rs.sort(key=lambda r: r.start)
        return hosts

    def done_hosts(self, hosts: Sequence[str]) -> list[str]:
        """Hosts of ``hosts`` every page of which was answered 200."""
        wanted = {s.host: s.pages for s in self.scenario.sites}
        got: dict[str, set[str]] = defaultdict(set)
        for r in self.records:
            if r.status == 200:
                got[r.host].add(r.path)
        return [h for h in hosts if len(got[h]) >= wanted[h]]

    @property
    def complete(self) -> bool:
        return len(self.done_hosts(self.scenario.hosts)) == len(self.scenario.sites)

    @property
    def pages(self) -> int:
        return sum(1 for r in self.records if r.status == 200)

    def window(self) -> tuple[float, int]:
        """(seconds, 200 responses) of the measured window from the first request."""
        t0 = self.first_start
        length = self.last_end - t0
        if self.scenario.windowed and (self.timed_out or length > self.scenario.limit):
            length = self.scenario.limit
        pages = sum(1 for r in self.records if r.status == 200 and r.end <= t0 + length + 1e-9)
        return length, pages

    def violations(self) -> tuple[list[Violation], list[Violation], float]:
        """(overlaps and short gaps, short start gaps, smallest end-to-start gap)."""
        found: list[Violation] = []
        short_starts: list[Violation] = []
        min_gap = math.inf
        limit = self.scenario.gap - TOLERANCE
        for host, rs in self.by_host().items():
            prev: RequestRecord | None = None
            prev_end = -math.inf
            for r in rs:
                if prev is not None:
                    gap = r.start - prev_end
                    min_gap = min(min_gap, gap)
                    if gap < 0:
                        found.append(Violation(host, "overlap", prev, prev_end, r))
                    elif gap < limit:
                        found.append(Violation(host, "short gap", prev, prev_end, r))
                    if r.start - prev.start < limit:
                        short_starts.append(Violation(host, "short start gap", prev, prev_end, r))
                prev_end = max(prev_end, r.end)
                prev = r
        return found, short_starts, min_gap

    @property
    def finish_reason(self) -> str:
        m = re.search(r"'finish_reason': '([^']*)'", self.log)
        return m.group(1) if m else "-"

    @property
    def errors(self) -> int:
        return len(re.findall(r"^\S+ \S+ \[[^\]]+\] ERROR:", self.log, re.MULTILINE))


# --------------------------------------------------------------------------- running


def base_env() -> dict[str, str]:
    """This environment without proxies, Scrapy project selection or Python path."""
    return {
        k: v
        for k, v in os.environ.items()
        if k.lower() not in ("http_proxy", "https_proxy", "all_proxy")
        and k not in ("SCRAPY_SETTINGS_MODULE", "SCRAPY_PROJECT", "PYTHONPATH")
    }


def settings_args(settings: Mapping[str, str]) -> list[str]:
    return [arg for name, value in settings.items() for arg in ("-s", f"{name}={value}")]


class Bench:
    """Runs crawler subprocesses against one served test web, one at a time."""

    def __init__(self, web: TestWeb, workdir: Path) -> None:
        self.web = web
        self.workdir = workdir
        self.counter = 0

    def _command(self, crawler: Crawler, scenario: Scenario, rundir: Path) -> list[str]:
        seeds = [self.web.url(host) for host in scenario.hosts]
        settings = {**COMMON_SETTINGS, "CONCURRENT_REQUESTS": str(scenario.concurrency), **crawler.settings}
        head = [sys.executable, "-m", "scrapy"]
        if crawler.kind == "ours":
            seed_arg = ",".join(seeds)
            if len(seed_arg) > SEED_ARG_MAX:  # see SEED_ARG_MAX
                seed_file = rundir / "seeds.txt"
                seed_file.write_text("\n".join(seeds) + "\n", encoding="utf-8")
                seed_arg = str(seed_file)
            return [
                *head, "crawl", "web", "-a", f"seeds={seed_arg}",
                "-s", f"FRONTIER_DIR={rundir / 'frontier'}", "-s", f"STORE_URI={rundir / 'store'}",
                *settings_args(settings),
            ]
        spider = rundir / "stock_spider.py"
        spider.write_text(STOCK_SPIDER.format(hosts=scenario.hosts, seeds=seeds), encoding="utf-8")
        return [*head, "runspider", str(spider), *settings_args(settings)]

    def _env(self, crawler: Crawler) -> dict[str, str]:
        env = self.web.subprocess_env(base_env())  # PYTHONPATH = tests/ (for the resolver)
        if crawler.kind == "ours":
            env["SCRAPY_SETTINGS_MODULE"] = "crawler.settings"
            env["PYTHONPATH"] = os.pathsep.join([str(REPO), env["PYTHONPATH"]])
        return env

    def _first_start(self, spawn: float) -> float | None:
        head = self.web.log[:1]  # ordered by end; near enough to detect the first request
        return head[0].start if head and head[0].start >= spawn else None

    def run(self, crawler: Crawler, scenario: Scenario) -> Run:
        self.counter += 1
        rundir = self.workdir / f"{self.counter:02d}-{crawler.label.replace(' ', '-')}"
        cwd = rundir / "cwd"
        cwd.mkdir(parents=True)
        cmd = self._command(crawler, scenario, rundir)
        log_path = rundir / "crawl.log"
        self.web.reset()
        timed_out = False
        # The crawl's CPU: what this process's reaped children used, before and after it.
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        with log_path.open("wb") as log:
            spawn = time.monotonic()
            proc = subprocess.Popen(
                cmd, cwd=cwd, env=self._env(crawler), stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
            first: float | None = None
            while proc.poll() is None:
                now = time.monotonic()
                first = first or self._first_start(spawn)
                if (first is not None and now - first >= scenario.limit) or (
                    first is None and now - spawn >= STARTUP_GRACE
                ):
                    proc.kill()
                    timed_out = True
                    break
                time.sleep(0.05)
            stopped = time.monotonic()
            proc.wait()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime - usage.ru_utime + after.ru_stime - usage.ru_stime
        if timed_out:
            time.sleep(0.5)  # let server threads of cut connections finish their records
        records = [r for r in self.web.hits() if r.start >= spawn]
        self.web.reset()
        return Run(crawler, scenario, records, spawn, stopped, timed_out, proc.returncode,
                   log_path.read_text(encoding="utf-8", errors="replace"), cpu)


# --------------------------------------------------------------------------- scenarios
