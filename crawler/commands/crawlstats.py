"""``scrapy crawlstats CRAWL_ID``: a crawl's frontier counts, read while it runs or after."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING

from scrapy.commands import ScrapyCommand

from crawler.commands import check_command_settings, embedded_state, redis_crawl
from crawler.context.connection import uses_redis
from crawler.frontier.backends.embedded.store import read_counts

if TYPE_CHECKING:
    import argparse


class Command(ScrapyCommand):
    """Prints a crawl's frontier counts as JSON. Embedded (the default): URLs seen,
    queued, leased, done, hosts, hosts/active, from its state file. Redis (``REDIS_URL``):
    the crawl-wide counters (fetched, failed, stored, queued, leased, seen, dropped/*,
    backoffs, leases/expired) and gauges (ready hosts)."""

    requires_project = False
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "<crawl id>"

    def short_desc(self) -> str:
        return "Print a crawl's frontier counts (embedded or Redis)"

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        settings = self.settings
        assert settings is not None  # Scrapy's cmdline sets them before run()
        check_command_settings(settings)
        if uses_redis(settings):
            _, frontier = redis_crawl(args, settings)
            counts = {**frontier.counters, **frontier.gauges(time.time())}
        else:
            counts = read_counts(embedded_state(args, settings))
        print(json.dumps(counts, indent=2, sort_keys=True))
