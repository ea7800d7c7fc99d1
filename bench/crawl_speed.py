"""Crawl speed: one crawl process of ours (spider ``web``) against stock Scrapy's CrawlSpider.

Run from the repo root: ``python bench/crawl_speed.py`` (``--help`` for options;
``--profile FILE`` also runs ours once under cProfile and prints where its time goes).

What is compared. Both crawlers fetch the same generated, link-heavy site (the
project's test web, ``tests/testweb.py``, served from a thread of this process on
loopback, default vhost, no latency): every page carries about 314 links, almost all
of them to pages already seen, in a mix of absolute, root-relative and
document-relative forms with fragments and ``utm_`` parameters, like the navigation of
a documentation site. Each crawler runs as its own subprocess:

* ours: ``python -m scrapy crawl web -a seeds=http://127.0.0.1:<port>/`` with the
  project settings (``SCRAPY_SETTINGS_MODULE=crawler.settings``). It extracts every
  page's text and title, hashes the text (SHA-256) and stores html + text + metadata
  (gzip WARC) under a temporary ``STORE_URI``.
* stock: ``python -m scrapy runspider`` of a ``CrawlSpider`` with
  ``Rule(LinkExtractor(), callback="parse_item", follow=True)`` and
  ``allowed_domains = ["127.0.0.1"]`` whose callback yields nothing: it only follows
  links. Its link extractor drops the site's ``utm_`` parameters (``process_value``
  with w3lib's ``url_query_cleaner``, < 0.5 ms per page) as our URL normaliser does,
  so both fetch the same pages; without it stock fetches every page twice. Stock
  still fetches ``/`` twice (start requests bypass the duplicate filter). It runs on
  Scrapy's defaults (temp cwd, no ``scrapy.cfg``, no
  ``SCRAPY_SETTINGS_MODULE``).

Both get the same overriding settings (:data:`COMMON_SETTINGS`): no delay, 16
concurrent requests (16 per domain), robots.txt off, cookies off, no telnet or
remote-control ports, ``LOG_LEVEL=INFO``, ``DEPTH_LIMIT=20`` and ``DEPTH_PRIORITY=1``
(shallow pages first); stock keeps its default scheduler queues. Ours also gets its
frontier's politeness gap set to none (:data:`OURS_SETTINGS`, the counterpart of
``DOWNLOAD_DELAY=0``) and a fresh ``FRONTIER_DIR`` per run (no resuming); its frontier
still fetches one page of a host at a time, which the bench does not change. The bench
checks that both fetched the same number of pages (within 2%).

How it is measured. pages/s is the 200 responses received divided by the crawl's
``elapsed_time_seconds``, both from the "Dumping Scrapy stats" block of the log. CPU
per page is the child's user + system CPU seconds (``os.wait4``) divided by pages,
raw and net of the fixed startup cost, which is measured once per side by crawling a
seed that answers 404. The sides run alternately (ours, stock, ours, stock, ...), and
the best run of each side is reported (highest pages/s; lowest CPU per page). The
site is deterministic (seeded); timings are not: ours' crawls of a few seconds vary by
up to ~20% from run to run on a 2-core machine, stock's by a few percent.
The output is Markdown.
"""

from __future__ import annotations

import argparse
import os
import pstats
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from common import fmt_table, machine

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from testweb import Site, TestWeb  # noqa: E402

#: The site: 1200 pages, ~314 links each (280 navigation links + 4 tree children + 30
#: seeded-random links, 99.7% of all links to pages already seen); 20 kB of HTML per
#: page. 1200 rather than 600 pages so that our crawl lasts a few seconds, not two.
#: Its host is the default vhost's own name, so the absolute links stay on the crawled
#: host (no resolver needed).
SITE_PAGES = 1200
SITE_KWARGS: dict[str, int] = {
    "fanout": 4,
    "nav_links": 280,
    "extra_links": 30,
    "page_bytes": 20_000,
}
SITE_HOST = "127.0.0.1"

#: Settings given to both crawlers on the command line.
COMMON_SETTINGS: dict[str, str] = {
    "DOWNLOAD_DELAY": "0",
    "CONCURRENT_REQUESTS": "16",
    "CONCURRENT_REQUESTS_PER_DOMAIN": "16",
    "ROBOTSTXT_OBEY": "False",
    "TELNETCONSOLE_ENABLED": "False",
    "REMOTE_CONTROL_ENABLED": "False",
    "LOG_LEVEL": "INFO",
    "COOKIES_ENABLED": "False",
    "DEPTH_LIMIT": "20",
    "DEPTH_PRIORITY": "1",
}

#: Settings of ours only: its frontier's politeness gap (``POLITENESS_*``, the
#: counterpart of ``DOWNLOAD_DELAY``) set to none, as the brief has no politeness delay
#: for either side; settings a version of ours without a frontier ignores.
OURS_SETTINGS: dict[str, str] = {
    "POLITENESS_MIN_DELAY": "0",
    "POLITENESS_DELAY_FACTOR": "0",
}

STOCK_SPIDER = '''\
from scrapy.linkextractors import LinkExtractor
from scrapy.spiders import CrawlSpider, Rule
from w3lib.url import url_query_cleaner


def drop_tracking(value):
    return url_query_cleaner(value, ("utm_source", "utm_medium", "utm_campaign"), remove=True)


class StockSpider(CrawlSpider):
    name = "stock"
    allowed_domains = ["127.0.0.1"]
    start_urls = [{url!r}]
    rules = (Rule(LinkExtractor(process_value=drop_tracking), callback="parse_item", follow=True),)

    def parse_item(self, response):
        yield from ()
'''

SIDES = ("ours", "stock")
RUN_TIMEOUT = 120.0  # seconds per crawl subprocess
STATS_START = "Dumping Scrapy stats"
_STAT_RE = re.compile(r"'([^']+)':\s*(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*[,}]")


@dataclass
class Run:
    """One finished crawl subprocess."""

    side: str
    cpu: float  # user + system seconds of the child
    wall: float  # seconds from spawn to exit
    stats: dict[str, float] = field(default_factory=dict)

    @property
    def pages(self) -> int:
        return int(self.stats.get("downloader/response_status_count/200", 0))

    @property
    def received(self) -> int:
        return int(self.stats.get("response_received_count", 0))

    @property
    def elapsed(self) -> float:
        return self.stats.get("elapsed_time_seconds", 0.0)

    @property
    def pages_per_s(self) -> float:
        return self.pages / self.elapsed if self.elapsed > 0 else 0.0

    def cpu_per_page(self, startup: float = 0.0) -> float:
        return (self.cpu - startup) / self.pages if self.pages else float("nan")


class CrawlError(RuntimeError):
    """A crawl subprocess failed, timed out or logged no stats."""


def parse_stats(log: str) -> dict[str, float]:
    """Integer and float stats of the last 'Dumping Scrapy stats' block of a log."""
    start = log.rfind(STATS_START)
    if start < 0:
        return {}
    block = log[start:]
    end = block.find("}")
    block = block[: end + 1] if end >= 0 else block
    return {name: float(value) for name, value in _STAT_RE.findall(block)}


def run_process(
    cmd: Sequence[str], env: Mapping[str, str], cwd: Path, log_path: Path, timeout: float
) -> tuple[float, float, int]:
    """Run ``cmd`` with stdout + stderr to ``log_path``; (CPU s, wall s, exit code).

    CPU is the child's user + system time from ``os.wait4`` (its own rusage, not a
    delta of this process's children, so the server thread here never counts).
    """
    with log_path.open("wb") as log:
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            list(cmd), cwd=cwd, env=dict(env), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if wall >= timeout:
        raise CrawlError(
            f"timed out after {timeout:.0f} s: {' '.join(cmd)}\nlast lines of its log:\n{log_tail(log_path)}"
        )
    return usage.ru_utime + usage.ru_stime, wall, proc.returncode


def log_tail(log_path: Path, lines: int = 30) -> str:
    return "\n".join(log_path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])


def base_env() -> dict[str, str]:
    """This environment without proxies, Scrapy project selection or Python path."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k.lower() not in ("http_proxy", "https_proxy", "all_proxy")
        and k not in ("SCRAPY_SETTINGS_MODULE", "SCRAPY_PROJECT", "PYTHONPATH")
    }
    env["PYTHONHASHSEED"] = "0"
    return env


def settings_args(settings: Mapping[str, str]) -> list[str]:
    return [arg for name, value in settings.items() for arg in ("-s", f"{name}={value}")]


class Bench:
    """Builds and runs the crawl commands of both sides against one served site."""

    def __init__(self, port: int, workdir: Path, timeout: float) -> None:
        self.port = port
        self.workdir = workdir
        self.timeout = timeout
        self.counter = 0

    def seed(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def _rundir(self, side: str) -> Path:
        self.counter += 1
        path = self.workdir / f"{self.counter:02d}-{side}"
        path.mkdir()
        return path

    def command(self, side: str, rundir: Path, seed: str, python: Sequence[str] = ()) -> list[str]:
        head = [sys.executable, *python, "-m", "scrapy"]
        if side == "ours":
            store = rundir / "store"
            return [
                *head, "crawl", "web", "-a", f"seeds={seed}",
                "-s", f"STORE_URI={store}", "-s", f"FRONTIER_DIR={rundir / 'frontier'}",
                *settings_args(COMMON_SETTINGS), *settings_args(OURS_SETTINGS),
            ]
        spider = rundir / "stock_spider.py"
        spider.write_text(STOCK_SPIDER.format(url=seed), encoding="utf-8")
        return [*head, "runspider", str(spider), *settings_args(COMMON_SETTINGS)]

    def env(self, side: str) -> dict[str, str]:
        env = base_env()
        if side == "ours":
            env["SCRAPY_SETTINGS_MODULE"] = "crawler.settings"
            env["PYTHONPATH"] = str(REPO)
        return env

    def run(self, side: str, seed: str, python: Sequence[str] = ()) -> Run:
        rundir = self._rundir(side)
        cwd = rundir / "cwd"
        cwd.mkdir()
        log_path = rundir / "crawl.log"
        cmd = self.command(side, rundir, seed, python)
        cpu, wall, code = run_process(cmd, self.env(side), cwd, log_path, self.timeout)
        log = log_path.read_text(encoding="utf-8", errors="replace")
        stats = parse_stats(log)
        if code != 0 or not stats:
            raise CrawlError(f"{side} crawl failed (exit {code}, {len(stats)} stats):\n{log_tail(log_path)}")
        for name in ("store", "frontier"):
            shutil.rmtree(rundir / name, ignore_errors=True)
        return Run(side, cpu, wall, stats)


def print_profile(path: Path, top: int) -> None:
    """Top functions of a cProfile dump by tottime and by cumulative time."""
    for order in ("tottime", "cumulative"):
        print(f"\n### Profile of ours, top {top} by {order}\n\n```")
        stats = pstats.Stats(str(path), stream=sys.stdout)
        stats.strip_dirs().sort_stats(order).print_stats(top)
        print("```")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=2, help="crawls per side, alternating (default 2)")
    parser.add_argument("--pages", type=int, default=SITE_PAGES, help=f"site size (default {SITE_PAGES})")
    parser.add_argument("--timeout", type=float, default=RUN_TIMEOUT, help="seconds per crawl")
    parser.add_argument("--profile", type=Path, help="also run ours once under cProfile into this file")
    parser.add_argument("--top", type=int, default=25, help="functions shown per profile ordering")
    args = parser.parse_args(argv)

    site = Site(SITE_HOST, pages=args.pages, **SITE_KWARGS)
    t_start = time.perf_counter()
    with TestWeb([site]) as web, tempfile.TemporaryDirectory(prefix="crawl-speed-") as tmp:
        bench = Bench(web.port, Path(tmp), args.timeout)
        sample = web._render(web._answer(site, "/p/7.html", "", stateful=False))
        links_per_page = sample.count(b"<a href")
        expected = len(web.reachable([bench.seed()], {SITE_HOST}))

        # Fixed cost of a crawl process (imports, start, one 404 fetch, stats, exit);
        # these runs also warm the page cache for the imports of the timed runs.
        startup = {side: bench.run(side, bench.seed("/startup-404.html")).cpu for side in SIDES}
        runs: dict[str, list[Run]] = {side: [] for side in SIDES}
        for _ in range(args.runs):
            for side in SIDES:
                runs[side].append(bench.run(side, bench.seed()))
        profile_run: Run | None = None
        if args.profile:
            python = ["-m", "cProfile", "-o", str(args.profile.resolve())]
            profile_run = bench.run("ours", bench.seed(), python)
    total = time.perf_counter() - t_start

    print("## Crawl speed: ours (`web` spider) vs stock Scrapy CrawlSpider\n")
    print(f"- {machine()}")
    print(f"- site: {args.pages} pages on loopback (default vhost), {links_per_page} links/page, "
          f"{len(sample):,} bytes/page; {expected} reachable pages")
    print(f"- settings (both): {' '.join(f'{k}={v}' for k, v in COMMON_SETTINGS.items())}; "
          f"ours also {' '.join(f'{k}={v}' for k, v in OURS_SETTINGS.items())}")
    print(f"- {args.runs} runs per side, alternating; best run per metric; "
          f"startup CPU (404 seed): ours {startup['ours']:.2f} s, stock {startup['stock']:.2f} s")
    print("\n### Runs\n")
    rows = []
    for i in range(args.runs):
        for side in SIDES:
            r = runs[side][i]
            rows.append([
                side, str(i + 1), str(r.pages), str(r.received), f"{r.elapsed:.2f}", f"{r.wall:.2f}",
                f"{r.pages_per_s:.1f}", f"{r.cpu:.2f}", f"{r.cpu_per_page() * 1000:.2f}",
                f"{r.cpu_per_page(startup[side]) * 1000:.2f}",
            ])
    print(fmt_table(
        ["side", "run", "pages", "responses", "crawl s", "wall s", "pages/s", "CPU s",
         "CPU ms/page", "net CPU ms/page"],
        rows,
    ))

    best_rate = {side: max(runs[side], key=lambda r: r.pages_per_s) for side in SIDES}
    best_cpu = {side: min(runs[side], key=lambda r: r.cpu_per_page()) for side in SIDES}
    print("\n### Best of each side\n")
    print(fmt_table(
        ["side", "pages", "seconds", "pages/s", "CPU ms/page", "net CPU ms/page"],
        [
            [
                side, str(best_rate[side].pages), f"{best_rate[side].elapsed:.2f}",
                f"{best_rate[side].pages_per_s:.1f}", f"{best_cpu[side].cpu_per_page() * 1000:.2f}",
                f"{best_cpu[side].cpu_per_page(startup[side]) * 1000:.2f}",
            ]
            for side in SIDES
        ],
    ))
    rate_ratio = best_rate["ours"].pages_per_s / best_rate["stock"].pages_per_s
    cpu_ratio = best_cpu["ours"].cpu_per_page() / best_cpu["stock"].cpu_per_page()
    net_ratio = best_cpu["ours"].cpu_per_page(startup["ours"]) / best_cpu["stock"].cpu_per_page(
        startup["stock"]
    )
    print(f"\n- pages/s ours/stock: **{rate_ratio:.2f}x** (target >= 3x: "
          f"{'met' if rate_ratio >= 3 else 'NOT met'})")
    print(f"- CPU/page ours/stock: {cpu_ratio:.2f}x raw, {net_ratio:.2f}x net of startup "
          "(below 1 means ours uses less CPU per page)")
    ours_stored = {int(r.stats.get("store/pages", 0)) for r in runs["ours"]}
    stored_mb = max(r.stats.get("store/warc_bytes", 0) for r in runs["ours"]) / 1e6
    print(f"- pages per run: ours {sorted({r.pages for r in runs['ours']})} (stored "
          f"{sorted(ours_stored)}, {stored_mb:.1f} MB of gzip WARC), "
          f"stock {sorted({r.pages for r in runs['stock']})}, expected {expected}")
    all_pages = [r.pages for side in SIDES for r in runs[side]]
    same = min(all_pages) >= 0.98 * max(all_pages)
    if not same:
        print(f"- **WARNING**: the crawls fetched different numbers of pages: {all_pages}")
    print(f"- bench wall time: {total:.0f} s")

    if args.profile and profile_run is not None:
        print(f"\n- profiled ours: {profile_run.pages} pages, {profile_run.elapsed:.2f} s crawl, "
              f"{profile_run.cpu:.2f} s CPU (under cProfile), dump: {args.profile}")
        print_profile(args.profile, args.top)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
