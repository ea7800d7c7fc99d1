"""``scrapy plan``: the sizes a crawl target needs (the arithmetic is :mod:`crawler.plan.sizing`)."""

from __future__ import annotations

import argparse
import math

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from crawler.plan.sizing import Target, parse_classes, plan, report

# pages/s of one crawl process over the whole page path (bench/crawl_speed.py, docs/benchmarks.md).
MEASURED_WORKER_RATE = 228.3


class Command(ScrapyCommand):
    """Prints the fetch rate, connections in flight, back queues, bandwidth, seen-set
    memory and workers a crawl target needs. The defaults size a worked example:
    a billion pages, 10% changing daily, 30% weekly, 60% monthly, 100 KB pages, 0.5 s
    fetches, a 10x gap, 10 billion URLs seen, 1% Bloom false positives."""

    requires_project = False
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "[options]"

    def short_desc(self) -> str:
        return "Size a crawl: fetch rate, connections, back queues, bandwidth, seen set, workers"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        d = Target()
        parser.add_argument("--pages", type=float, default=d.pages, help="pages kept fresh (default 1e9)")
        parser.add_argument(
            "--change",
            default="10%:1,30%:7,60%:30",
            help="share of the pages : days between visits, comma-separated "
            "(default 10%%:1,30%%:7,60%%:30: 10%% change daily)",
        )
        parser.add_argument(
            "--page-kb", type=float, default=d.page_bytes / 1e3, help="average page, KB (100)"
        )
        parser.add_argument("--latency", type=float, default=d.latency, help="seconds per fetch (0.5)")
        parser.add_argument(
            "--gap-factor",
            type=float,
            default=d.gap_factor,
            help="gap after a fetch, x its duration (POLITENESS_DELAY_FACTOR, 10)",
        )
        parser.add_argument(
            "--min-gap", type=float, default=d.min_gap, help="shortest gap, seconds (POLITENESS_MIN_DELAY, 1)"
        )
        parser.add_argument("--urls", type=float, default=d.urls, help="distinct URLs seen (default 1e10)")
        parser.add_argument("--url-bytes", type=float, default=d.url_bytes, help="average URL length (80)")
        parser.add_argument(
            "--fp-rate",
            type=float,
            default=d.false_positive_rate,
            help="Bloom seen set's false-positive rate (SEEN_SET_ERROR_RATE, 0.01)",
        )
        parser.add_argument(
            "--worker-rate",
            type=float,
            default=MEASURED_WORKER_RATE,
            help=f"pages/s one worker sustains, as you measured it (default {MEASURED_WORKER_RATE}: "
            "bench/crawl_speed.py on a 2-core machine)",
        )

        parser.add_argument("--workers", type=int, default=0,
                            help="worker processes, if known (default: rate / worker rate)")
        parser.add_argument("--dns-ttl", type=float, default=d.dns_ttl,
                            help="a typical DNS record's TTL, seconds (300)")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if args:
            raise UsageError("scrapy plan takes options only (see --help)")
        try:
            classes = parse_classes(opts.change)
        except ValueError as error:
            raise UsageError(f"--change {opts.change!r}: {error}") from None
        checks = [(f"--{name}", value, value > 0, "above 0") for name, value in (
            ("pages", opts.pages), ("page-kb", opts.page_kb), ("latency", opts.latency), ("urls", opts.urls),
            ("url-bytes", opts.url_bytes), ("worker-rate", opts.worker_rate))]
        checks += [(f"--{name}", value, 0 <= value < math.inf, "0 or more") for name, value in (
            ("workers", opts.workers), ("dns-ttl", opts.dns_ttl), ("gap-factor", opts.gap_factor),
            ("min-gap", opts.min_gap))]
        checks.append(("--fp-rate", opts.fp_rate, 0 < opts.fp_rate < 1, "between 0 and 1"))
        bad = [f"{option} {value:g}: must be {wanted}" for option, value, ok, wanted in checks
               if not ok or math.isnan(value)]
        if bad:
            raise UsageError("out of range: " + "; ".join(bad))
        target = Target(
            pages=opts.pages,
            classes=classes,
            page_bytes=opts.page_kb * 1e3,
            latency=opts.latency,
            gap_factor=opts.gap_factor,
            min_gap=opts.min_gap,
            urls=opts.urls,
            url_bytes=opts.url_bytes,
            false_positive_rate=opts.fp_rate,
            worker_rate=opts.worker_rate,
            workers=opts.workers,
            dns_ttl=opts.dns_ttl,
        )
        print("\n".join(report(target, plan(target))))
