"""``scrapy wacz CRAWL_ID``: package a crawl's WARC files, index and page list as a WACZ."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import scrapy
from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from crawler.commands import check_command_settings
from crawler.paths import data_path
from crawler.store.files import open_store
from crawler.store.wacz import write_wacz

if TYPE_CHECKING:
    import argparse


class Command(ScrapyCommand):
    """Writes ``<CRAWL_ID>.wacz`` (or ``-o PATH``) from the WARC files of ``STORE_URI``
    whose warcinfo names the crawl (``isPartOf``): the files, their CDXJ index and
    ``pages.jsonl``, as replayweb.page opens and ``wacz validate`` checks."""

    requires_project = False
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "[-o FILE.wacz] <crawl id>"

    def short_desc(self) -> str:
        return "Package a crawl's WARC files as a WACZ"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("-o", "--output", metavar="FILE", help="the WACZ to write (<crawl id>.wacz)")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        settings = self.settings
        assert settings is not None  # Scrapy's cmdline sets them before run()
        check_command_settings(settings)
        if len(args) != 1:
            raise UsageError("give one crawl id")
        crawl_id = args[0]
        output = Path(opts.output or f"{crawl_id}.wacz")
        store = open_store(data_path(settings, "STORE_URI"), settings)
        try:
            summary = write_wacz(store, crawl_id, output, f"politecrawler (Scrapy {scrapy.__version__})")
        except LookupError as error:
            print(f"{error}; a crawl's files name it in their warcinfo (isPartOf)", file=sys.stderr)
            self.exitcode = 1
            return
        finally:
            asyncio.run(store.wait())  # an S3 store's spool directory, unused here, goes
        print(f"{output}: {summary.files} WARC file(s), {summary.index_lines} index lines, "
              f"{summary.pages} pages", file=sys.stderr)
