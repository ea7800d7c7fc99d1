"""``scrapy crawl`` that rejects bad spider arguments with a plain message and exit code 2."""

from __future__ import annotations

import argparse

from scrapy.commands import ScrapyHelpFormatter
from scrapy.commands.crawl import Command as ScrapyCrawlCommand
from scrapy.exceptions import UsageError

from crawler.commands import check_command_settings, check_redis
from crawler.spiders.arguments import ArgumentError, check_argument_names, check_arguments
from crawler.spiders.web import WebSpider

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
        settings, spidercls = self.settings, None
        if len(args) == 1 and self.crawler_process is not None:
            spidercls = self._spider_class(args[0])
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
        super().run(args, opts)

    def _spider_class(self, name: str) -> type:
        """The spider called ``name``, or a usage error saying which spiders there are and,
        with none, how to find the ``web`` spider (Scrapy's loader raises a KeyError)."""
        loader = self.crawler_process.spider_loader
        try:
            return loader.load(name)
        except KeyError:
            known = sorted(loader.list())
            where = (f"the spiders here are {', '.join(known)}" if known else
                     "no spider is known here: run scrapy from a directory with a scrapy.cfg whose "
                     f"settings list {WebSpider.__module__.rpartition('.')[0]} in SPIDER_MODULES, "
                     "or set SCRAPY_SETTINGS_MODULE=crawler.settings")
            raise UsageError(f"no spider called {name!r}: {where}", print_help=False) from None

