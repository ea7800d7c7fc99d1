"""``scrapy deadletters CRAWL_ID [--requeue]``: the URLs a crawl gave up, and a way back."""

from __future__ import annotations

import json
import sys
import time
from typing import TYPE_CHECKING

from scrapy.commands import ScrapyCommand

from crawler.commands import check_command_settings, crawl_frontier
from crawler.scheduling.codec import ATTEMPTS_META, with_attempts_reset

if TYPE_CHECKING:
    import argparse


class Command(ScrapyCommand):
    """Prints a crawl's dead letters, one JSON object a line (url, attempts, error, at:
    UTC ISO time), oldest first: URLs that failed every try of ``FRONTIER_RETRY_DELAYS``.
    ``--requeue`` queues them again with a fresh retry chain; the crawl (or a rerun of
    its command) then fetches them. An embedded crawl must not be running; a Redis
    crawl (``-s REDIS_URL=...``) may be."""

    requires_project = False
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "[--requeue] <crawl id>"

    def short_desc(self) -> str:
        return "List a crawl's dead letters, or queue them again"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--requeue", action="store_true", help="queue every dead letter again")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        settings = self.settings
        assert settings is not None  # Scrapy's cmdline sets them before run()
        check_command_settings(settings)
        frontier = crawl_frontier(args, settings)
        try:
            letters = frontier.dead_letters()
            if not letters:
                print(f"crawl {args[0]} has no dead letters", file=sys.stderr)
            for letter in letters:
                request = json.loads(letter.request)
                print(json.dumps({
                    "url": request["url"], "attempts": request.get("meta", {}).get(ATTEMPTS_META, 0),
                    "error": letter.error,
                    "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(letter.at))}))
            if opts.requeue:
                queued = sum(frontier.requeue_dead(letter, with_attempts_reset(letter.request))
                             for letter in letters)
                print(f"{queued} dead letters queued again")
            frontier.commit()
        finally:
            frontier.close()
