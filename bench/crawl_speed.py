"""Crawl speed: one crawl process of ours (spider ``web``) against stock Scrapy's CrawlSpider.

Run from the repo root: ``python bench/crawl_speed.py`` (``--help`` for options;
``--profile FILE`` also runs ours once under cProfile and prints where its time goes).
``--site python3-doc`` (or ``postgresql-doc``, or a directory with an index.html)
crawls a real static site instead: a Debian documentation package served by Debian's
nginx on a free loopback port (``apt-get install nginx-light python3-doc``;
``bench/nginx_site.py``), from its ``index.html``.

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
seed that answers 404. Ours' package is byte-compiled first (as stock's Scrapy, installed
by pip, is), so no run compiles it from source. The sides run alternately (ours, stock, ours, stock, ...), and
the best run of each side is reported (highest pages/s; lowest CPU per page). The
site is deterministic (seeded); timings are not: ours' crawls of a few seconds vary by
up to ~20% from run to run on a 2-core machine, stock's by a few percent.
Ours counts the CPU of each stage of a page (parse, text, links, normalise, sha256,
simhash, store: ``crawler/stages.py``) in ``cpu_ms/*`` stats; the bench prints them per
page for ours' run with the least CPU per page, with the rest of the net CPU (Scrapy,
frontier, network, GC). The output is Markdown.
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import pstats
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from common import fmt_table, machine
from crawl_runs import CrawlError, Run, base_env, log_tail, parse_stats, run_process, settings_args
from nginx_site import DOC_SITES, NginxSite, site_root

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


class Bench:
    """Builds and runs the crawl commands of both sides against one served site."""

    def __init__(self, workdir: Path, timeout: float) -> None:
        self.workdir = workdir
        self.timeout = timeout
        self.counter = 0

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


def print_breakdown(run: Run, startup: float) -> None:
    """Where ours' CPU per page goes, from its ``cpu_ms/<stage>`` stats."""
    stages = {k.removeprefix("cpu_ms/"): v for k, v in run.stats.items() if k.startswith("cpu_ms/")}
    print("\n### Where ours' CPU goes (ms per page, the run with the least CPU per page)\n")
    if not stages or not run.pages:
        print("(this version of ours records no `cpu_ms/*` stats)")
        return
    net = (run.cpu - startup) * 1000 / run.pages
    rows = [[stage, f"{ms / run.pages:.2f}", f"{ms / run.pages / net:.0%}"] for stage, ms in stages.items()]
    rest = net - sum(stages.values()) / run.pages
    rows.append(["rest (Scrapy, frontier, network, GC)", f"{rest:.2f}", f"{rest / net:.0%}"])
    rows.append(["net CPU per page", f"{net:.2f}", "100%"])
    print(fmt_table(["stage", "ms/page", "share"], rows))


@contextlib.contextmanager
def served_site(name: str, pages: int) -> Iterator[tuple[str, str, int]]:
    """(seed URL, description, pages expected) of the site, served while the block runs."""
    if name == "testweb":
        site = Site(SITE_HOST, pages=pages, **SITE_KWARGS)
        with TestWeb([site]) as web:
            sample = web._render(web._answer(site, "/p/7.html", "", stateful=False))
            seed = f"http://127.0.0.1:{web.port}/"
            expected = len(web.reachable([seed], {SITE_HOST}))
            yield seed, (f"test web: {pages} pages on loopback (default vhost), "
                         f"{sample.count(b'<a href')} links/page, {len(sample):,} bytes/page"), expected
        return
    root = site_root(name)
    sizes = sorted(p.stat().st_size for p in root.rglob("*.html"))
    with NginxSite(root) as served:
        yield served.url + "index.html", (
            f"real site: {root} ({name}) served by nginx on loopback, {len(sizes)} HTML files, "
            f"median {sizes[len(sizes) // 2]:,} bytes"), len(sizes)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", default="testweb",
                        help=f"testweb (default), a Debian doc package ({', '.join(DOC_SITES)}) "
                             "or a directory with an index.html, served by nginx")
    parser.add_argument("--runs", type=int, default=2, help="crawls per side, alternating (default 2)")
    parser.add_argument("--pages", type=int, default=SITE_PAGES, help=f"test web size (default {SITE_PAGES})")
    parser.add_argument("--timeout", type=float, default=RUN_TIMEOUT, help="seconds per crawl")
    parser.add_argument("--profile", type=Path, help="also run ours once under cProfile into this file")
    parser.add_argument("--top", type=int, default=25, help="functions shown per profile ordering")
    args = parser.parse_args(argv)

    t_start = time.perf_counter()
    # Ours' modules byte-compiled, as an installed package's are (pip compiles what it
    # installs, so stock's Scrapy is): a checkout run with PYTHONDONTWRITEBYTECODE set
    # would compile its ~100 modules from source in every crawl (~0.1 s of CPU each).
    compileall.compile_dir(str(REPO / "crawler"), quiet=1)
    with served_site(args.site, args.pages) as (seed, described, expected), \
            tempfile.TemporaryDirectory(prefix="crawl-speed-") as tmp:
        bench = Bench(Path(tmp), args.timeout)
        # Fixed cost of a crawl process (imports, start, one 404 fetch, stats, exit);
        # these runs also warm the page cache for the imports of the timed runs.
        missing = seed.rsplit("/", 1)[0] + "/startup-404.html"
        startup = {side: bench.run(side, missing).cpu for side in SIDES}
        runs: dict[str, list[Run]] = {side: [] for side in SIDES}
        for _ in range(args.runs):
            for side in SIDES:
                runs[side].append(bench.run(side, seed))
        profile_run: Run | None = None
        if args.profile:
            python = ["-m", "cProfile", "-o", str(args.profile.resolve())]
            profile_run = bench.run("ours", seed, python)
    total = time.perf_counter() - t_start

    print("## Crawl speed: ours (`web` spider) vs stock Scrapy CrawlSpider\n")
    print(f"- {machine()}")
    print(f"- {described}; seed {seed}")
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
    ours_ms = best_cpu["ours"].cpu_per_page() * 1000
    print(f"\n- pages/s ours/stock: **{rate_ratio:.2f}x** (target >= 5x: "
          f"{'met' if rate_ratio >= 5 else 'NOT met'})")
    print(f"- CPU/page of ours: **{ours_ms:.2f} ms** (target <= 10 ms: "
          f"{'met' if ours_ms <= 10 else 'NOT met'})")
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
    print_breakdown(best_cpu["ours"], startup["ours"])

    if args.profile and profile_run is not None:
        print(f"\n- profiled ours: {profile_run.pages} pages, {profile_run.elapsed:.2f} s crawl, "
              f"{profile_run.cpu:.2f} s CPU (under cProfile), dump: {args.profile}")
        print_profile(args.profile, args.top)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
