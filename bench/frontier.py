"""Politeness and throughput: our frontier (``FrontierScheduler``) vs stock Scrapy, same web, same run.

Run from the repo root: ``python bench/frontier.py`` (about 7 minutes; ``--quick`` for
a smoke run under a minute with smaller sites; ``--help`` for the other options).

What is compared. One test web (``tests/testweb.py``) is served from a thread of this
process on loopback; every host is a ``.test`` name that the crawl subprocesses
resolve to 127.0.0.1 through ``testweb.LoopbackResolver``. Each site is a tree
(page ``i`` links to ``3i+1 .. 3i+3`` and to ``/``), ~2 kB per page, and sleeps its
``latency`` before every answer. Each crawler is a subprocess:

* ours: ``python -m scrapy crawl web -a seeds=<comma list>`` with
  ``SCRAPY_SETTINGS_MODULE=crawler.settings`` (so ``FrontierScheduler``, Scrapy's own
  ``DOWNLOAD_DELAY = 0``), ``PYTHONPATH`` = repo root + ``tests/``, a temp cwd and temp
  ``FRONTIER_DIR``/``STORE_URI``; its gap is ``POLITENESS_MIN_DELAY`` with
  ``POLITENESS_DELAY_FACTOR=1`` (gap = max(min delay, 1 x fetch time)), measured from
  the end of a fetch to the start of the next one to the host.
* stock: a plain ``scrapy.Spider`` (written to a temp file, ``python -m scrapy
  runspider`` in a temp dir without ``scrapy.cfg`` or ``SCRAPY_SETTINGS_MODULE``) that
  follows every link its ``LinkExtractor`` finds (``response.follow``), with
  ``allowed_domains`` = the test hosts, the site's ``utm_`` parameters dropped (as our
  normaliser does) and start requests that go through the duplicate filter, so both
  crawlers fetch the same pages once each. ``DOWNLOAD_DELAY`` = the gap,
  ``CONCURRENT_REQUESTS_PER_DOMAIN=1``, ``DOWNLOAD_DELAY_JITTER=0`` (2.19's
  replacement of the deprecated ``RANDOMIZE_DOWNLOAD_DELAY``), run with its default
  ``SCHEDULER_PRIORITY_QUEUE`` (``DownloaderAwarePriorityQueue``, "stock DAPQ") and,
  in the skewed scenario, with ``scrapy.pqueues.ScrapyPriorityQueue`` ("stock SPQ").
  Note that Scrapy's ``DOWNLOAD_DELAY`` runs from the *start* of one request to the
  start of the next, so its end-to-start gaps are the delay minus the fetch time.

All runs: ``TWISTED_DNS_RESOLVER=testweb.LoopbackResolver ROBOTSTXT_OBEY=False
TELNETCONSOLE_ENABLED=False REMOTE_CONTROL_ENABLED=False LOG_LEVEL=INFO
COOKIES_ENABLED=False NETWORK_ALLOW=127.0.0.0/8`` and ``CONCURRENT_REQUESTS`` of the scenario.

Scenarios.

1. Skewed: one big host (listed first in the seeds) and 49 hosts of 10 pages, 20 ms
   latency, gap 0.2 s, 16 concurrent. Reported: the time until every small host has
   all its pages (last response end on a small host minus the run's first request
   start) and until the whole crawl is done, against the politeness bound
   (n - 1) x gap for a host of n pages (the big host's bound fixes the whole crawl's).
   Each run is cut off after ``--skew-timeout`` seconds (SIGKILL) and then reported as
   "timed out after N s, X/Y small hosts done".
2. Wide: 500 hosts x 20 pages, 20 ms latency, gap 1 s, 64 concurrent; pages/s against
   the bound min(hosts / gap, concurrency / latency); each run is stopped after
   ``--wide-window`` seconds from its first request (or when done), and pages/s is
   the 200 responses that ended within the window over the window (or over the
   crawl's length if it finished sooner).

Politeness, checked on the server's log for every run (``web.hits(host)``: monotonic
``start`` when the request line was read, ``end`` just before the last write): per
host, requests sorted by start, a request is an *overlap* if it starts before every
earlier request to the host has ended, else a *short gap* if it starts less than
gap - 5 ms after that end; *short start gaps* counts starts less than gap - 5 ms after
the previous start (the contract of Scrapy's ``DOWNLOAD_DELAY``). Ours must show 0
overlaps and 0 short gaps; any it shows are printed with host, times and gap.

Output: Markdown, one table per scenario and notes per run (with the crawl process's
CPU, user + system, per request: on this 2-core machine the wide runs are CPU-bound).
"""

from __future__ import annotations

import argparse
import itertools
import math
import re
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from common import fmt_table, machine
from frontier_runs import COMMON_SETTINGS, SEED_ARG_MAX, TOLERANCE, Bench, Crawler, Run, Scenario, Violation
from testweb import Site, TestWeb  # on sys.path through frontier_runs


def crawlers(gap: float, stock_queues: Sequence[tuple[str, str | None]]) -> list[Crawler]:
    ours = Crawler("ours", "ours", {"POLITENESS_MIN_DELAY": f"{gap:g}", "POLITENESS_DELAY_FACTOR": "1"})
    stock = []
    for label, queue in stock_queues:
        settings = {
            "DOWNLOAD_DELAY": f"{gap:g}",
            "CONCURRENT_REQUESTS_PER_DOMAIN": "1",
            "DOWNLOAD_DELAY_JITTER": "0",
        }
        if queue:
            settings["SCHEDULER_PRIORITY_QUEUE"] = queue
        stock.append(Crawler(label, "stock", settings))
    return [ours, *stock]


DAPQ = ("stock DAPQ", None)
SPQ = ("stock SPQ", "scrapy.pqueues.ScrapyPriorityQueue")


def skewed(big_pages: int, small_hosts: int, small_pages: int, gap: float, concurrency: int,
           latency: float, limit: float) -> Scenario:
    big = Site("big.test", pages=big_pages, latency=latency, seed=1)
    small = [
        Site(f"small{k:02d}.test", pages=small_pages, latency=latency, seed=100 + k)
        for k in range(1, small_hosts + 1)
    ]
    return Scenario("skewed", [big, *small], gap, concurrency, latency, limit,
                    small_hosts=[s.host for s in small])


def wide(hosts: int, pages: int, gap: float, concurrency: int, latency: float, window: float) -> Scenario:
    sites = [Site(f"w{k:03d}.test", pages=pages, latency=latency, seed=1000 + k) for k in range(hosts)]
    return Scenario("wide", sites, gap, concurrency, latency, window, windowed=True)


# --------------------------------------------------------------------------- report


HEADER = ["crawler", "small-hosts-done s", "total s", "bound s", "pages", "pages/s", "overlaps",
          "short gaps", "short start gaps", "min gap ms"]


def row(run: Run) -> list[str]:
    sc = run.scenario
    t0 = run.first_start
    found, short_starts, min_gap = run.violations()
    overlaps = sum(1 for v in found if v.kind == "overlap")
    elapsed = run.stopped - t0
    if sc.small_hosts:
        done = run.done_hosts(sc.small_hosts)
        if len(done) == len(sc.small_hosts):
            small_end = max(r.end for r in run.records if r.host in set(sc.small_hosts))
            small = f"{small_end - t0:.1f}"
        else:
            small = f"timed out after {elapsed:.0f} s, {len(done)}/{len(sc.small_hosts)} done"
        big_pages = max(s.pages for s in sc.sites)
        small_pages = max(s.pages for s in sc.sites if s.host in set(sc.small_hosts))
        bound = f"{sc.bound_seconds(small_pages):.1f} / {sc.bound_seconds(big_pages):.1f}"
    else:
        small = "-"
        bound = f"{sc.bound_seconds(max(s.pages for s in sc.sites)):.1f}"
    if run.complete:
        total = f"{run.last_end - t0:.1f}"
    elif run.timed_out:
        done_all = len(run.done_hosts(sc.hosts))
        stop = "stopped" if sc.windowed else "timed out"
        total = f"{stop} after {elapsed:.0f} s ({done_all}/{len(sc.hosts)} hosts done)"
    else:
        total = f"exited at {run.last_end - t0:.1f} s, INCOMPLETE"
    length, pages = run.window()
    rate = pages / length if length > 0 else 0.0
    return [run.crawler.label, small, total, bound, str(run.pages), f"{rate:.1f}", str(overlaps),
            str(len(found) - overlaps), str(len(short_starts)),
            f"{min_gap * 1000:.0f}" if min_gap != math.inf else "-"]


def describe(v: Violation, t0: float) -> str:
    p, r = v.prev, v.record
    what = "start-to-start" if v.kind == "short start gap" else "gap"
    return (
        f"    - {v.host}: {v.kind}: {p.path} {p.start - t0:.3f}-{p.end - t0:.3f} s, then {r.path} "
        f"{r.start - t0:.3f}-{r.end - t0:.3f} s: {what} {v.gap * 1000:.1f} ms"
    )


def error_summary(log: str) -> list[str]:
    """Distinct exception lines of a crawl log, most frequent first."""
    counts: dict[str, int] = defaultdict(int)
    for line in log.splitlines():
        if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Failure)\b", line):
            counts[line.strip()[:200]] += 1
    return [f"{n} x {text}" for text, n in sorted(counts.items(), key=lambda kv: -kv[1])]


def notes(run: Run) -> list[str]:
    sc = run.scenario
    t0 = run.first_start
    statuses: dict[int, int] = defaultdict(int)
    for r in run.records:
        statuses[r.status] += 1
    urls = [(r.host, r.path, r.query) for r in run.records]
    dupes = len(urls) - len(set(urls))
    length, pages = run.window()
    found, short_starts, _ = run.violations()
    lines = [
        f"- {run.crawler.label}: exit {run.returncode}{' (killed)' if run.timed_out else ''}, "
        f"finish_reason {run.finish_reason}, {run.errors} ERROR lines; {len(run.records)} requests "
        f"({', '.join(f'{n} x {s}' for s, n in sorted(statuses.items()))}), {dupes} repeated URLs; "
        f"{pages} pages in the {length:.1f} s window; CPU {run.cpu:.1f} s "
        f"({run.cpu / max(1, len(run.records)) * 1000:.2f} ms a request, start included); first request "
        f"{t0 - run.spawn:.1f} s after spawn; settings: "
        + " ".join(f"{k}={v}" for k, v in run.crawler.settings.items())
    ]
    if run.errors:
        lines.append("  - exceptions in its log: " + "; ".join(error_summary(run.log)[:3]))
    if sc.small_hosts:
        lines.append(big_host_budget(run))
    show = 8 if run.crawler.kind == "ours" else 3
    if found:
        hosts = {v.host for v in found}
        lines.append(
            f"  - {len(found)} overlaps/short gaps on {len(hosts)} hosts (configured gap {sc.gap:g} s, "
            f"times from the first request); the {min(show, len(found))} shortest:"
        )
        lines += [describe(v, t0) for v in sorted(found, key=lambda v: v.gap)[:show]]
    if short_starts:
        hosts = {v.host for v in short_starts}
        lines.append(
            f"  - {len(short_starts)} short start-to-start gaps on {len(hosts)} hosts; "
            f"the {min(show, len(short_starts))} shortest:"
        )
        lines += [describe(v, t0) for v in sorted(short_starts, key=lambda v: v.gap)[:show]]
    return lines


def big_host_budget(run: Run) -> str:
    """Where the big host's time went: answering, the configured gaps, and the rest
    (wake-up and claim latency), against the bound of an end-to-start gap policy."""
    sc = run.scenario
    records = run.by_host().get(sc.sites[0].host, [])
    if len(records) < 2:
        return f"  - big host: {len(records)} requests"
    answering = sum(r.end - r.start for r in records)
    gaps = [b.start - a.end for a, b in itertools.pairwise(records)]
    span = records[-1].end - records[0].start
    policy_bound = answering + len(gaps) * sc.gap
    return (f"  - big host: {len(records)} requests in {span:.1f} s = {answering:.1f} s answering + "
            f"{sum(gaps):.1f} s between (mean gap {statistics.mean(gaps) * 1000:.1f} ms, "
            f"{(statistics.mean(gaps) - sc.gap) * 1000:+.1f} ms against the configured gap); "
            f"{span / policy_bound:.3f}x the end-to-start bound (answering + (n - 1) x gap = "
            f"{policy_bound:.1f} s), {span / sc.bound_seconds(len(records)):.3f}x (n - 1) x gap")


def seed_note(web: TestWeb, scenario: Scenario) -> list[str]:
    length = len(",".join(web.url(h) for h in scenario.hosts))
    if length <= SEED_ARG_MAX:
        return []
    return [
        f"ours gets its {len(scenario.hosts)} seeds as a file (`-a seeds=FILE`): as a comma list "
        f"({length:,} characters) `scrapy crawl web` fails before crawling with `OSError: [Errno 36] "
        "File name too long` (`parse_seeds` tries the value as a file name first)"
    ]


def report(scenario: Scenario, runs: list[Run], title: str, lines: list[str]) -> bool:
    """Print one scenario; returns whether ours kept its politeness."""
    print(f"\n## {title}\n")
    for line in lines:
        print(f"- {line}")
    print()
    print(fmt_table(HEADER, [row(r) for r in runs]))
    print()
    ok = True
    for run in runs:
        for line in notes(run):
            print(line)
        found, _, _ = run.violations()
        if run.crawler.kind == "ours" and found:
            ok = False
            print(f"  - **OURS VIOLATED POLITENESS in the {scenario.name} scenario** (see above)")
    return ok


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, a smoke run under a minute")
    parser.add_argument("--big-pages", type=int, help="pages of the big host (default 500; quick 40)")
    parser.add_argument("--skew-timeout", type=float, help="seconds per skewed run (default 240; quick 20)")
    parser.add_argument("--wide-window", type=float, help="seconds per wide run (default 60; quick 10)")
    parser.add_argument("--scenario", choices=("all", "skewed", "wide"), default="all")
    args = parser.parse_args(argv)

    latency = 0.02
    if args.quick:
        skew = skewed(args.big_pages or 40, 9, 10, 0.1, 16, latency, args.skew_timeout or 20)
        wid = wide(40, 10, 0.5, 16, latency, args.wide_window or 10)
    else:
        skew = skewed(args.big_pages or 500, 49, 10, 0.2, 16, latency, args.skew_timeout or 240)
        wid = wide(500, 20, 1.0, 64, latency, args.wide_window or 60)
    scenarios = {"skewed": skew, "wide": wid}
    wanted = list(scenarios) if args.scenario == "all" else [args.scenario]

    t_start = time.monotonic()
    all_sites = [s for name in wanted for s in scenarios[name].sites]
    print("# Frontier politeness and throughput: ours vs stock Scrapy\n")
    print(f"- {machine()}{'; --quick sizes' if args.quick else ''}")
    print(f"- common settings: {' '.join(f'{k}={v}' for k, v in COMMON_SETTINGS.items())}")
    print(f"- violations: overlap = starts before the host's previous request ended; short gap = "
          f"end-to-start gap < configured gap - {TOLERANCE * 1000:.0f} ms; short start gap = "
          f"start-to-start < gap - {TOLERANCE * 1000:.0f} ms (Scrapy's DOWNLOAD_DELAY contract)")
    ok = True
    with TestWeb(all_sites) as web, tempfile.TemporaryDirectory(prefix="bench-frontier-") as tmp:
        bench = Bench(web, Path(tmp))
        if "skewed" in wanted:
            sc = skew
            runs = [bench.run(c, sc) for c in crawlers(sc.gap, [DAPQ, SPQ])]
            big = sc.sites[0]
            ok &= report(sc, runs, "Scenario 1: skewed (one big host first, many small ones)", [
                f"hosts: {big.host} with {big.pages} pages (first seed) + {len(sc.small_hosts)} hosts x "
                f"{sc.sites[1].pages} pages = {sc.pages} pages; latency {sc.latency * 1000:.0f} ms per "
                f"answer; gap {sc.gap:g} s; CONCURRENT_REQUESTS={sc.concurrency}",
                f"bound s = (n - 1) x gap: small hosts {sc.bound_seconds(sc.sites[1].pages):.1f} s / whole "
                f"crawl (big host) {sc.bound_seconds(big.pages):.1f} s (an end-to-start gap adds n x "
                f"latency: {sc.sites[1].pages * sc.latency:.1f} s / {big.pages * sc.latency:.1f} s)",
                f"times from the run's first request (server clock); runs killed after {sc.limit:g} s",
                "ours: POLITENESS_MIN_DELAY=gap POLITENESS_DELAY_FACTOR=1 (project settings otherwise: "
                "CONCURRENT_REQUESTS_PER_DOMAIN=16, DOWNLOAD_DELAY=0, FRONTIER_PRIORITY_LEVELS=4)",
                *seed_note(web, sc),
            ])
        if "wide" in wanted:
            sc = wid
            runs = [bench.run(c, sc) for c in crawlers(sc.gap, [DAPQ])]
            ok &= report(sc, runs, "Scenario 2: wide (many hosts, same size)", [
                f"{len(sc.sites)} hosts x {sc.sites[0].pages} pages = {sc.pages} pages; latency "
                f"{sc.latency * 1000:.0f} ms; gap {sc.gap:g} s; CONCURRENT_REQUESTS={sc.concurrency}",
                f"bound: min(hosts / gap, concurrency / latency) = min({len(sc.sites)} / {sc.gap:g}, "
                f"{sc.concurrency} / {sc.latency:g}) = {sc.bound_rate:.0f} pages/s; bound s = (n - 1) x gap "
                f"of one host = {sc.bound_seconds(sc.sites[0].pages):.1f} s, and the crawl needs at least "
                f"{sc.pages / sc.bound_rate:.1f} s at the bound rate",
                f"runs stopped {sc.limit:g} s after their first request if not done; pages/s = 200 "
                "responses ended in the window / window",
                "ours: POLITENESS_MIN_DELAY=gap POLITENESS_DELAY_FACTOR=1 (a 20 ms fetch never "
                "lifts the gap above the min delay)",
                *seed_note(web, sc),
            ])
    print(f"\n- bench wall time: {time.monotonic() - t_start:.0f} s")
    if not ok:
        print("- **ours violated politeness: see the notes above**")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
