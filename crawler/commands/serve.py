"""``scrapy serve [--bind ADDRESS] [--port PORT]``: the crawl service (API, dashboard, metrics)."""

from __future__ import annotations

import ipaddress
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError
from scrapy.settings import SETTINGS_PRIORITIES
from scrapy.spiderloader import get_spider_loader
from scrapy.utils.log import configure_logging
from scrapy.utils.project import inside_project

from crawler import defaults
from crawler.commands import check_command_settings
from crawler.service.backends import LocalBackend, ScrapydBackend
from crawler.service.server import ServiceServer
from crawler.service.service import CrawlService
from crawler.spiders.web import WebSpider

if TYPE_CHECKING:
    import argparse

    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)


def is_loopback(address: str) -> bool:
    if address == "localhost":
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def forwarded_settings(settings: BaseSettings) -> dict[str, str]:
    """The service's own ``-s`` settings that its crawls get too (``REDIS_URL``, a resolver),
    except its own (``SERVE_*``: the token stays out of the crawls' command lines) and
    logging's (``--logfile``, ``--nolog``): the service reads each crawl's own log."""
    return {name: str(settings[name]) for name in settings
            if settings.getpriority(name) == SETTINGS_PRIORITIES["cmdline"]
            and not name.startswith(("SERVE_", "LOG_")) and name not in ("CRAWL_ID", "DATA_DIR")}


class Command(ScrapyCommand):
    """Serves the crawl API (``POST /crawls``, ``GET /crawls[/{id}]``, ``POST
    /crawls/{id}/stop``, ``GET /pages?url=``), the live dashboard at ``/`` and Prometheus
    ``/metrics``. Each crawl runs as ``scrapy crawl web`` in a child process (or a scrapyd
    job with ``SERVE_SCRAPYD_URL``) with the project's settings, this command's ``-s``
    settings and what its request allows; crawls are kept in ``DATA_DIR/serve/``."""

    requires_project = False
    requires_crawler_process = False

    def syntax(self) -> str:
        return "[--bind ADDRESS] [--port PORT]"

    def short_desc(self) -> str:
        return "Serve the crawl API, dashboard and metrics"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--bind", help=f"address to listen on (default {defaults.SERVE_BIND})")
        parser.add_argument("--port", type=int, help=f"port to listen on (default {defaults.SERVE_PORT})")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if args:
            raise UsageError(f"unexpected argument(s): {' '.join(args)}")
        check_command_settings(self.settings)
        s = self.settings
        configure_logging(s)
        bind = opts.bind or s.get("SERVE_BIND", defaults.SERVE_BIND)
        port = s.getint("SERVE_PORT", defaults.SERVE_PORT) if opts.port is None else opts.port
        token = s.get("SERVE_TOKEN", defaults.SERVE_TOKEN)
        if not is_loopback(bind) and not token:
            raise UsageError(f"--bind {bind} is not a loopback address: set SERVE_TOKEN "
                             "(-s SERVE_TOKEN=...) so that requests must carry it", print_help=False)
        data_dir = Path(s.get("DATA_DIR") or os.getcwd()).resolve()
        settings = s.copy()
        settings.set("DATA_DIR", str(data_dir), priority="cmdline")
        forwarded = forwarded_settings(s)
        scrapyd = s.get("SERVE_SCRAPYD_URL", defaults.SERVE_SCRAPYD_URL)
        if scrapyd:
            backend = ScrapydBackend(scrapyd, s.get("SERVE_SCRAPYD_PROJECT", defaults.SERVE_SCRAPYD_PROJECT),
                                     data_dir, forwarded)
        else:
            if inside_project():  # its crawls run with this project's settings
                check_web_spider(s)
            backend = LocalBackend(data_dir / "serve", data_dir, forwarded)
        service = CrawlService(settings, data_dir, backend,
                               s.getfloat("SERVE_POLL_INTERVAL", defaults.SERVE_POLL_INTERVAL))
        try:
            server = ServiceServer((bind, port), service, token,
                                   s.getint("SERVE_MAX_BODY_BYTES", defaults.SERVE_MAX_BODY_BYTES))
        except (OSError, OverflowError) as error:  # OverflowError: a port outside 0-65535
            service.close()
            said = getattr(error, "strerror", None) or str(error).removeprefix("bind(): ")
            raise UsageError(f"cannot listen on {bind}:{port}: {said}", print_help=False) from None
        service.start()
        logger.info("Serving crawls on http://%s:%d/ (data in %s, crawls run %s)", bind, server.server_port,
                    data_dir, f"on scrapyd {scrapyd}" if scrapyd else "as child processes")
        try:
            server.serve_forever(poll_interval=0.5)
        except KeyboardInterrupt:
            logger.info("Service stopped; its crawls go on and a restarted service finds them")
        finally:
            server.server_close()
            service.close()


def check_web_spider(settings: BaseSettings) -> None:
    """The local backend runs ``scrapy crawl web`` in this project: a usage error at start,
    not a failed crawl per request, when the project's spiders do not include it."""
    if WebSpider.name not in get_spider_loader(settings).list():
        package = WebSpider.__module__.rpartition(".")[0]
        raise UsageError(f"scrapy serve starts the {WebSpider.name!r} spider, and this project's "
                         f"SPIDER_MODULES do not include {package}: add it (SPIDER_MODULES = "
                         f"[..., {package!r}], or -s SPIDER_MODULES=...,{package})", print_help=False)

