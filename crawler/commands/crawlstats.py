"""``scrapy crawlstats CRAWL_ID``: a Redis crawl's counters, read while it runs."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING

from scrapy.commands import ScrapyCommand

from crawler.commands import redis_crawl

if TYPE_CHECKING:
    import argparse


class Command(ScrapyCommand):
    """Prints the crawl-wide counters of a Redis crawl as JSON: fetched, failed, stored,
    queued, leased, seen, dropped/*, backoffs, leases/expired, ready hosts."""

    requires_project = False
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "<crawl id>"

    def short_desc(self) -> str:
        return "Print a Redis crawl's counters"

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        _, frontier = redis_crawl(args, self.settings)
        print(json.dumps({**frontier.counters, **frontier.gauges(time.time())}, indent=2, sort_keys=True))
