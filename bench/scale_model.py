"""How many frontier shards and worker processes a crawl at 23,000 fetches/s needs: a
discrete-event model (``bench/scale_sim.py``) calibrated on this machine, checked
against a real sharded crawl, then run over a grid of N shards x M workers.

Run: ``python bench/scale_model.py`` (about 12 minutes) or ``--quick`` (about 2 minutes:
fewer, shorter simulations). Everything it starts listens on loopback only.

1. **Per shard** (one redis-server started on a free loopback port, one ``RedisFrontier``,
   one client): Redis CPU (``INFO cpu``) per claim+fetched+ack step of 1 and of
   ``--batch`` pairs over 1,000 always-due hosts, and per link check (``add``, 90% of the
   URLs already seen) one a call (what the scheduler sent before a page's links went in one
   call) and ``--page-links`` a call.
   A shard is one single-threaded Redis, so its capacity is 1 / its CPU per operation.
   Seen-set bytes per URL: ``MEMORY USAGE`` of the seen keys after the fill. And the
   content check of a page: one Redis's index (``RedisContentIndex``, on the first server
   of a ``REDIS_URL`` list) and the Redis Cluster one (``ClusterContentIndex``, split over
   the shards by fingerprint: its CPU a page, all its tags on this one server), which the
   model spreads over the shards.
2. **Per worker**: one ``scrapy crawl web`` process on the test web (100 hosts x 20 pages, quick 10,
   no latency, no gap, ``CONCURRENT_REQUESTS`` 16) with a local Redis frontier: pages/s
   from the web's log (distinct pages / first request start to last response end) is
   what one worker's CPU sustains here.
3. **Validation**: 3 redis-servers (``REDIS_URL`` lists them: the sharded backend) x 4
   worker processes on a test web of 60 hosts of power-law sizes (3 to 16 pages), 200 ms
   answers, a 1 s gap, 2 concurrent requests per worker: measured pages/s (the web's
   log) against the model given the same web, the same workers' start times, the shard
   costs of part 1 and the worker rate of part 2 measured in this same run.
4. **Grid**: the model of a web of power-law host sizes and lognormal latencies (median
   0.5 s), the crawler's default politeness (gap = max(1 s, 10 x fetch time), at most
   30 s), ``--page-links`` link checks a page, ``--rtt`` worker-shard round trips: fetch
   rate, shard utilisation, worker thread use and politeness violations for each N x M, and
   the smallest (fewest processes) that reaches ``--target``; then the plan's other
   figures for it (``crawler.plan.sizing`` for the arithmetic it already does).
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import scale_measure as measure  # puts the repo and tests/ on sys.path
import scale_sim as sim
from common import fmt_table, machine
from scale_sim import Result, Setup, ShardCosts, Web, lognormal_latencies, power_law_sizes, simulate
from testweb import Site

from crawler import defaults
from crawler.frontier.policy import PolitenessPolicy
from crawler.plan.sizing import Target, plan

# The scale target: 10 billion pages in 5 days (`scrapy plan --pages 1e10 --change 100%:5`: 23,148 pages/s).
TARGET = Target(pages=10e9, classes=((1.0, 5.0),))


# The validation crawl: hosts, smallest and largest host, answer seconds, gap seconds, slots a worker.
HOSTS, SMALLEST, LARGEST, LATENCY, GAP, SLOTS = 60, 3, 16, 0.2, 1.0, 2


def validation(args: argparse.Namespace, tmp: Path, page_rate: float, costs: ShardCosts,
               rtt: float) -> tuple[measure.Crawl, Result, Web, Setup]:
    hosts, gap = HOSTS, GAP
    sizes = power_law_sizes(hosts, SMALLEST, 1.2, LARGEST)
    sites = [Site(f"v{i:03d}.test", pages=size, latency=LATENCY) for i, size in enumerate(sizes)]
    real = measure.sharded_crawl(tmp, sites, 3, 4, SLOTS, gap, args.run_timeout)
    fetch = sum(r.end - r.start for r in real.records) / max(1, len(real.records))
    web = Web(sizes, tuple([fetch + rtt] * hosts))
    setup = Setup(shards=3, workers=4, concurrency=SLOTS, page_rate=page_rate, links=3, rtt=rtt,
                  starts=tuple(real.starts), policy=PolitenessPolicy(min_delay=gap, delay_factor=0))
    return real, simulate(web, setup, costs, duration=600.0), web, setup


def synthetic_web(target: float, policy: PolitenessPolicy, seed: int) -> Web:
    """Enough hosts that 2.5x the target's hosts-in-cycle are queued, power-law sizes of at
    least 10 pages (no host runs dry within a run), lognormal fetch times around 0.5 s."""
    probe = lognormal_latencies(1000, 0.5, 0.5, seed)
    cycle = sum(policy.adaptive_gap(t) + t for t in probe) / len(probe)
    hosts = math.ceil(2.5 * target * cycle)
    return Web(power_law_sizes(hosts, 10, 1.2, 100_000), lognormal_latencies(hosts, 0.5, 0.5, seed))


def done_call(costs: ShardCosts, links: int, link_batch: bool) -> float:
    """Shard CPU of the call that acks a page and checks its links."""
    calls = (1 if links else 0) if link_batch else links
    return costs.ack_call + costs.ack_item + calls * costs.link_call + links * costs.link_item


def grid_centre(args: argparse.Namespace, costs: ShardCosts, page_rate: float) -> tuple[int, int]:
    """Where the grid is centred: shards 70% busy with one claim call a page, and workers
    whose thread also waits a round trip and the page's shard call, queueing included
    (M/D/1 at 70%: 1.2 x the call), at ``scrapy plan``'s workers = rate / worker rate."""
    busy = 0.7
    done = done_call(costs, args.page_links, args.link_batch)
    steps = costs.claim_call + costs.claim_item + costs.report_call + costs.report_item
    per_page = steps + done + costs.content
    queued = 1 + busy / (2 * (1 - busy))
    thread = 1 / page_rate + (1 + sim.CONTENT_ROUNDS) * args.rtt + (done + costs.content) * queued
    workers = plan(Target(pages=TARGET.pages, classes=TARGET.classes, worker_rate=1 / thread)).workers
    return math.ceil(args.target * per_page / busy), workers or 1


def grid(args: argparse.Namespace, web: Web, costs: ShardCosts,
         page_rate: float) -> list[tuple[int, int, Result, float]]:
    shards0, workers0 = grid_centre(args, costs, page_rate)
    shard_steps = (1.0, 1.25) if args.quick else (0.8, 1.0, 1.25)
    worker_steps = (1.0, 1.2) if args.quick else (1.0, 1.15, 1.3)
    rows = []
    for n in sorted({max(1, round(shards0 * f)) for f in shard_steps}):
        for m in sorted({max(1, round(workers0 * f)) for f in worker_steps}):
            setup = Setup(shards=n, workers=m, concurrency=args.concurrency, page_rate=page_rate,
                          links=args.page_links, link_batch=args.link_batch, rtt=args.rtt,
                          starts=tuple(0.5 * w / m for w in range(m)), ramp=args.warmup)
            started = time.monotonic()
            result = simulate(web, setup, costs, duration=args.sim_seconds, warmup=args.warmup)
            rows.append((n, m, result, time.monotonic() - started))
            print(f"  simulated {n} shards x {m} workers: {result.fetch_rate:,.0f} fetches/s "
                  f"({rows[-1][3]:.0f} s)", file=sys.stderr, flush=True)
    return rows


def options() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add = parser.add_argument
    add("--quick", action="store_true", help="fewer, shorter simulations (under 2 minutes)")
    add("--target", type=float, default=23_000, help="fetches/s to reach (1e10 pages in 5 days: 23,000)")
    add("--pairs", type=int, help="claim+ack pairs measured (default 4,000; quick 2,000)")
    add("--links", type=int, help="link checks measured (default 40,000; quick 20,000)")
    add("--batch", type=int, default=32, help="claims a step in the batched measurement")
    add("--page-links", type=int, default=60,
        help="link checks a page sends to the shards (60: the design's 1.4 M/s at 23,000 pages/s)")
    add("--link-batch", action="store_true",
        help="model one add call per page for all its links, as the scheduler sends them "
             "(default: one call a link, as it sent them before)")
    add("--concurrency", type=int, default=200, help="CONCURRENT_REQUESTS of each modelled worker")
    add("--rtt", type=float, default=0.0005, help="worker-shard round trip in the grid, seconds")
    add("--sim-seconds", type=float, help="simulated seconds a grid point (default 20; quick 6)")
    add("--warmup", type=float, help="simulated seconds not measured (default 8; quick 3)")
    add("--run-timeout", type=float, default=120.0, help="seconds a real crawl may take")
    add("--stored-kb", type=float, default=100.0,
        help="KB of WARC stored a page (100: as served, uncompressed: an upper bound)")
    add("--dns-ttl", type=float, default=300.0, help="typical DNS record TTL, seconds")
    add("--worker-rate", type=float,
        help="pages/s of one worker's CPU in the grid (default: as measured in part 2)")
    add("--seed", type=int, default=4, help="seed of the synthetic web's latencies")
    args = parser.parse_args()
    quick = args.quick
    args.pairs = args.pairs or (2_000 if quick else 4_000)
    args.links = args.links or (20_000 if quick else 40_000)
    args.sim_seconds = args.sim_seconds or (6.0 if quick else 20.0)
    args.warmup = args.warmup if args.warmup is not None else (3.0 if quick else 8.0)
    args.worker_pages = 10 if quick else 20
    return args


def report_shard(args: argparse.Namespace, rates: measure.ShardRates, costs: ShardCosts) -> None:
    print("## 1. One shard (a RedisFrontier on one local redis-server)\n")
    lines = [("claim+fetched+ack, 1 a step", rates.pairs_small, "pairs"),
             (f"claim+fetched+ack, {args.batch} a step", rates.pairs_large, "pairs"),
             ("link check (add), 1 a call", rates.links_small, "links"),
             (f"link check (add), {args.page_links} a call", rates.links_large, "links"),
             ("content check, one Redis (MGET + check script), a page", rates.content, "pages"),
             ("content check, Redis Cluster index (2 pipelines), a page: all shards", rates.content_split,
              "pages")]
    print(fmt_table(
        ["operation", "measured", "Redis CPU / item", "items/s per shard (1 / CPU)", "one client, items/s"],
        [[name, f"{line.items:,} {unit}", f"{1e6 * line.cpu / line.items:.1f} µs",
          f"{line.items / line.cpu:,.0f}", f"{line.items / line.wall:,.0f}"] for name, line, unit in lines]))
    us = {name: f"{1e6 * getattr(costs, name):.1f}" for name in vars(costs)}
    print(f"\n- fitted shard CPU, µs a call + µs an item: claim {us['claim_call']} + {us['claim_item']}, "
          f"fetched {us['report_call']} + {us['report_item']}, ack {us['ack_call']} + {us['ack_item']}, "
          f"add {us['link_call']} + {us['link_item']}; content check (split) {us['content']} a page, spread "
          f"over the shards; loopback round trip (PING) {1e6 * rates.rtt:.0f} µs")
    print(f"- seen set (exact): {rates.seen_bytes_per_url:.1f} bytes/URL "
          f"(`MEMORY USAGE`, {args.links:,} URLs)\n")


def report_validation(real: measure.Crawl, sim: Result, page_rate: float) -> float:
    overlaps, short = real.politeness(GAP)
    error = (sim.span_rate - real.rate) / real.rate
    print("## 3. Validation: 3 redis-server shards x 4 workers, real against model\n")
    print(f"- test web: {HOSTS} hosts, {sum(power_law_sizes(HOSTS, SMALLEST, 1.2, LARGEST))} pages "
          f"({SMALLEST} to {LARGEST} a host, power law), {1e3 * LATENCY:.0f} ms answers; "
          f"POLITENESS_MIN_DELAY {GAP:g} s (factor 0); CONCURRENT_REQUESTS {SLOTS} a worker; "
          "REDIS_URL = 3 servers; worker starts (s after the first request): "
          f"{', '.join(f'{s:.2f}' for s in real.starts)}")
    print(f"- model given: these starts, the shard costs of part 1, {page_rate:.1f} pages/s a worker "
          "(part 2), the measured mean fetch time + round trip, 3 link checks a page\n")
    print(fmt_table(
        ["", "pages", "span s", "pages/s", "overlaps", "short gaps"],
        [["measured (web log)", f"{real.pages:,}", f"{real.span:.2f}", f"{real.rate:.2f}", str(overlaps),
          str(short)],
         ["model", f"{sim.fetches:,}", f"{sim.fetches / sim.span_rate:.2f}", f"{sim.span_rate:.2f}",
          str(sim.overlaps), str(sim.short_gaps)]]))
    print(f"\nvalidation: measured {real.rate:.2f} pages/s, model {sim.span_rate:.2f} pages/s, "
          f"error {error:+.1%} ({'within' if abs(error) <= 0.15 else 'OUTSIDE'} 15%)\n")
    return error


def report_grid(args: argparse.Namespace, web: Web, costs: ShardCosts,
                page_rate: float) -> tuple[int, int] | None:
    print("## 4. The model at scale\n")
    calls = "one add call a page" if args.link_batch else "one add call a link"
    print(f"- web: {len(web.sizes):,} hosts, {web.pages:,} pages (10 to 100,000 a host, power law 1.2), "
          f"fetch times lognormal (median 0.5 s, sigma 0.5); default politeness (min "
          f"{defaults.POLITENESS_MIN_DELAY:g} s, {defaults.POLITENESS_DELAY_FACTOR:g} x fetch, max "
          f"{defaults.POLITENESS_MAX_DELAY:g} s)")
    source = "--worker-rate" if args.worker_rate else "part 2"
    print(f"- each worker: {page_rate:.1f} pages/s of CPU ({source}), CONCURRENT_REQUESTS "
          f"{args.concurrency}; {args.page_links} link checks a page, {calls}; round trip "
          f"{1e3 * args.rtt:.1f} ms; "
          f"simulated {args.sim_seconds:g} s, measured after {args.warmup:g} s (hosts first due spread "
          "over those seconds: a crawl in full swing)\n")
    rows = grid(args, web, costs, page_rate)
    print(fmt_table(
        ["shards N", "workers M", "fetches/s", "shard use max", "shard use mean", "worker thread busy",
         "violations", "claim calls/fetch"],
        [[str(n), str(m), f"{r.fetch_rate:,.0f}", f"{max(r.shard_utilisation):.0%}",
          f"{sum(r.shard_utilisation) / n:.0%}", f"{r.worker_utilisation:.0%}", str(r.violations),
          f"{r.claim_calls / max(1, r.fetches):.2f}"] for n, m, r, _ in rows]))
    reached = [(n + m, n, m, r) for n, m, r, _ in rows if r.fetch_rate >= args.target]
    if not reached:
        print(f"\nsmallest N x M: none of the grid reaches {args.target:,.0f} fetches/s")
        return None
    _, n, m, r = min(reached, key=lambda x: (x[0], x[1]))
    print(f"\nsmallest N x M reaching {args.target:,.0f} fetches/s: {n} shards x {m} workers "
          f"({r.fetch_rate:,.0f} fetches/s, shards at most {max(r.shard_utilisation):.0%} busy)")
    return n, m


def report_plan(args: argparse.Namespace, n: int, m: int, rates: measure.ShardRates,
                costs: ShardCosts) -> None:
    seen_bytes_per_url = rates.seen_bytes_per_url
    sized = plan(Target(pages=TARGET.pages, classes=TARGET.classes, workers=m, dns_ttl=args.dns_ttl))
    stored = args.target * args.stored_kb * 1e3
    files = stored / defaults.STORE_ROLL_BYTES  # WARC files rolled at STORE_ROLL_BYTES
    parts = stored / (16 * 2**20)  # multipart uploads in 16 MiB parts (crawler/store/s3.py)
    print(f"\n## 5. Plan figures for {n} shards x {m} workers\n")
    print(f"- seen set of {TARGET.urls:,.0f} URLs (`scrapy plan --pages 1e10 --change 100%:5`): exact at "
          f"{seen_bytes_per_url:.1f} B/URL (part 1): {TARGET.urls * seen_bytes_per_url / n / 1e9:.2f} GB a "
          f"shard; Bloom at {TARGET.false_positive_rate:.0%}: {sized.seen_bloom / n / 1e9:.2f} GB a shard")
    print(f"- bandwidth: {sized.bandwidth * 8 / 1e9:.1f} Gbit/s in all, "
          f"{sized.bandwidth * 8 / 1e6 / m:.0f} Mbit/s a worker ({TARGET.page_bytes / 1e3:.0f} KB pages)")
    print(f"- S3: {args.stored_kb:g} KB stored a page: {stored / 1e6:,.0f} MB/s, {files:.1f} WARC files/s "
          f"of {defaults.STORE_ROLL_BYTES / 2**20:.0f} MiB, about {parts + 2 * files:.0f} PUT requests/s "
          "(parts + create + complete), and as many metadata files")
    print(f"- DNS (`scrapy plan --pages 1e10 --change 100%:5 --workers {m} --dns-ttl {args.dns_ttl:g}`): "
          f"{sized.dns_per_worker:,.0f} lookups/s with a cache in each worker, {sized.dns_shared:,.0f}/s "
          "through one cache shared by all")
    one = rates.content.cpu / rates.content.items
    print(f"- content checks, {args.target:,.0f}/s: on Redis Cluster split over the {n} shards, "
          f"{1e6 * costs.content:.0f} µs a page (part 1) = {args.target * costs.content:.0%} of one Redis "
          f"CPU in all, {args.target * costs.content / n:.1%} of a shard (in the grid above); with a "
          f"REDIS_URL list, one Redis's index on its first server: {1e6 * one:.0f} µs a page = "
          f"{args.target * one:.0%} of that one server")


def main() -> None:
    args = options()
    began = time.monotonic()
    print(f"# Scale model: N shards x M workers for {args.target:,.0f} fetches/s\n\n- {machine()}; "
          "the machine's 2 cores are shared with other work, so rates are noisy: ratios within a run count\n")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for part in ("shard", "worker", "validation"):
            (root / part).mkdir()
        rates = measure.shard_rates(root / "shard", args.pairs, args.links, args.batch, args.page_links)
        costs = rates.costs()
        cpu = measure.worker_rate(root / "worker", 100, args.worker_pages, 16, args.run_timeout)
        real, sim, _, _ = validation(args, root / "validation", cpu.rate, costs, rates.rtt)
    report_shard(args, rates, costs)
    print("## 2. One worker process\n")
    print(f"- `scrapy crawl web`, local Redis frontier, 100 hosts x {args.worker_pages} pages, no latency, "
          f"no gap, 16 concurrent: {cpu.pages:,} pages in {cpu.span:.1f} s = **{cpu.rate:.1f} pages/s**"
          + (" (timed out)" if cpu.timed_out else "") + "\n")
    report_validation(real, sim, cpu.rate)
    web = synthetic_web(args.target, PolitenessPolicy(), args.seed)
    worker = args.worker_rate or cpu.rate
    smallest = report_grid(args, web, costs, worker)
    if smallest:
        report_plan(args, *smallest, rates, costs)
    print(f"\n({'quick run, ' if args.quick else ''}{time.monotonic() - began:.0f} s in all)")


if __name__ == "__main__":
    main()
