"""``scrapy crawl`` that rejects bad spider arguments with a plain message and exit code 2."""

from __future__ import annotations

import argparse
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

import scrapy
from scrapy.commands import ScrapyHelpFormatter
from scrapy.commands.crawl import Command as ScrapyCrawlCommand
from scrapy.exceptions import UsageError

from crawler.commands import check_command_settings, check_redis, lock_holder, process_command
from crawler.context.connection import uses_redis
from crawler.context.crawl_id import derive_crawl_id
from crawler.paths import data_path, embedded_frontier_path
from crawler.spiders.arguments import ArgumentError, check_argument_names, check_arguments
from crawler.spiders.web import WebSpider

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings
    from scrapy.spiderloader import SpiderLoaderProtocol

logger = logging.getLogger(__name__)
NOTHING_FETCHED = ", nothing was fetched"


class _HelpFormatter(argparse.RawDescriptionHelpFormatter, ScrapyHelpFormatter):
    """Scrapy's help layout, with the description's lines kept as written."""


class Command(ScrapyCrawlCommand):
    """Scrapy's ``crawl``, checking the settings and a :class:`WebSpider`'s seeds, scope
    and page cap before the crawl starts, so a bad value is reported as a usage error
    naming it rather than a traceback. Registered by the package's entry point."""

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.formatter_class = _HelpFormatter

    def long_desc(self) -> str:
        lines = [f"  -a {name + '=...':<14}{text}" for name, text in WebSpider.arguments.items()]
        return (f"{super().long_desc()}\n\nArguments of the {WebSpider.name!r} spider:\n"
                + "\n".join(lines))

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        settings = self.settings
        assert settings is not None  # Scrapy's cmdline sets them before run()
        spidercls: type[scrapy.Spider] | None = None
        if len(args) == 1 and self.crawler_process is not None:
            spidercls = _spider_class(self.crawler_process.spider_loader, args[0])
            settings = settings.copy()
            spidercls.update_settings(settings)  # its custom_settings, as its crawl sees them
        check_command_settings(settings, NOTHING_FETCHED)
        check_redis(settings, NOTHING_FETCHED)
        if spidercls is not None and issubclass(spidercls, WebSpider):
            spargs = opts.spargs
            try:
                check_argument_names(spargs, spidercls.name, spidercls.arguments,
                                     lambda name: hasattr(spidercls, name))
                check_arguments(
                    spargs.get("seeds", getattr(spidercls, "start_urls", None)),
                    spargs.get("scope"),
                    spargs.get("max_pages"),
                    settings,
                )
            except ArgumentError as e:
                raise UsageError(str(e), print_help=False) from None
        job = os.environ.get("SCRAPY_JOB") or opts.spargs.get("_job")  # scrapyd 1.6 passes -a _job
        if spidercls is not None and not uses_redis(settings):
            self._refuse_a_crawl_in_use(spidercls, opts.spargs, settings, bool(job))
        if job and not settings.get("DATA_DIR"):
            say_where_data_goes(settings)
        super().run(args, opts)

    @staticmethod
    def _refuse_a_crawl_in_use(spidercls: type[scrapy.Spider], spargs: dict, settings: BaseSettings,
                               job: bool) -> None:
        """A usage error naming the crawl, the process that runs it and what to set, when
        its embedded state is held (the frontier would refuse it after the crawl started,
        as a traceback); under scrapyd also one ERROR line in the job's log."""
        jobdir = settings.get("JOBDIR")
        crawl_id = settings.get("CRAWL_ID") or (jobdir and Path(jobdir).resolve().name)
        if not crawl_id and issubclass(spidercls, WebSpider):
            seeds, scope, _ = check_arguments(spargs.get("seeds", getattr(spidercls, "start_urls", None)),
                                              spargs.get("scope"), spargs.get("max_pages"), settings)
            crawl_id = derive_crawl_id(spidercls.name, seeds, scope)
        elif not crawl_id and spidercls.__init__ is scrapy.Spider.__init__:  # its start_urls are the class's
            crawl_id = derive_crawl_id(spidercls.name, getattr(spidercls, "start_urls", None) or [],
                                       getattr(spidercls, "scope", "") or "")
        holder = lock_holder(embedded_frontier_path(settings, crawl_id)) if crawl_id else None
        if holder is None:
            return
        message = (f"crawl {crawl_id} is running in {process_command(holder)}, nothing was fetched: "
                   "wait for it to end, or set -s CRAWL_ID=<another id> to run a second crawl of the "
                   "same seeds")
        if job:
            logger.error(message)
        raise UsageError(message, print_help=False)


def _spider_class(loader: SpiderLoaderProtocol, name: str) -> type[scrapy.Spider]:
    """The spider called ``name``, or a usage error saying which spiders there are and,
    with none, how to find the ``web`` spider (Scrapy's loader raises a KeyError)."""
    try:
        return loader.load(name)
    except KeyError:
        known = sorted(loader.list())
        where = (f"the spiders here are {', '.join(known)}" if known else
                 "no spider is known here: run scrapy from a directory with a scrapy.cfg whose "
                 f"settings list {WebSpider.__module__.rpartition('.')[0]} in SPIDER_MODULES, "
                 "or set SCRAPY_SETTINGS_MODULE=crawler.settings")
        raise UsageError(f"no spider called {name!r}: {where}", print_help=False) from None



def say_where_data_goes(settings: BaseSettings) -> None:
    """A scrapyd job without ``DATA_DIR``: its relative paths land in scrapyd's working
    directory, which nothing else names; one WARNING says where."""
    names = ("FRONTIER_DIR", "STORE_URI", "STORE_INDEX_DIR", "STORE_SPOOL_DIR")
    there = [f"{name} {os.path.abspath(value)}" for name in names
             if not os.path.isabs(value := data_path(settings, name)) and "://" not in value]
    if there:
        logger.warning("DATA_DIR is not set: this scrapyd job keeps its data in scrapyd's working "
                       "directory (%s); set DATA_DIR to an absolute directory", ", ".join(there))
