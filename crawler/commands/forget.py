"""``scrapy forget CRAWL_ID``: delete a finished crawl's keys from Redis."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from scrapy.commands import ScrapyCommand

from crawler.commands import check_command_settings, redis_crawl

if TYPE_CHECKING:
    import argparse


class Command(ScrapyCommand):
    """Deletes every key of a crawl (``crawl:{<CRAWL_ID>}:*``) from ``REDIS_URL``.
    Workers never delete shared state when they close; this is how it goes. A crawl
    with URLs still queued or leased is kept unless ``--force``."""

    requires_project = False
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "[--force] <crawl id>"

    def short_desc(self) -> str:
        return "Delete a finished Redis crawl's keys"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--force", action="store_true", help="also a crawl with work left")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        settings = self.settings
        assert settings is not None  # Scrapy's cmdline sets them before run()
        check_command_settings(settings)
        crawl_id, frontier = redis_crawl(args, settings)
        if frontier.has_pending() and not opts.force:
            print(f"crawl {crawl_id!r} has {frontier.queued} URLs queued and {frontier.leased} leased; "
                  "not deleted (use --force)", file=sys.stderr)
            self.exitcode = 1
            return
        deleted = frontier.forget()
        print(f"deleted {deleted} keys of crawl {crawl_id!r}")
