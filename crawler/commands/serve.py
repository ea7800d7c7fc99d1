"""``scrapy serve [--bind ADDRESS] [--port PORT]``: the crawl service (API, dashboard, metrics)."""

from __future__ import annotations

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
from crawler.net.resolver import policy_from_settings
from crawler.spiders.web import WebSpider

if TYPE_CHECKING:
    import argparse

    from scrapy.settings import BaseSettings

    from crawler.service.service import CrawlService

logger = logging.getLogger(__name__)


def forwarded_settings(settings: BaseSettings) -> dict[str, str]:
    """The service's own ``-s`` settings that its crawls get too (``REDIS_URL``, a resolver),
    except its own (``SERVE_*``: the token stays out of the crawls' command lines) and
    logging's (``--logfile``, ``--nolog``): the service reads each crawl's own log."""
    return {name: str(settings[name]) for name in settings
            if settings.getpriority(name) == SETTINGS_PRIORITIES["cmdline"]
            and not name.startswith(("SERVE_", "LOG_")) and name not in ("CRAWL_ID", "DATA_DIR")}


def max_crawls(settings: BaseSettings) -> int:
    """``SERVE_MAX_CRAWLS``, or the machine's cores (at least 2) when 0."""
    return settings.getint("SERVE_MAX_CRAWLS", defaults.SERVE_MAX_CRAWLS) or max(2, os.cpu_count() or 1)


class Command(ScrapyCommand):
    """Serves the crawl API (``POST /crawls``, ``GET /crawls[/{id}]``, ``POST
    /crawls/{id}/stop`` and ``/resume``, dead letters, ``GET /pages?url=``, its OpenAPI
    document at ``/openapi.json``), the operator's console at ``/`` and Prometheus
    ``/metrics``, behind a token. Each crawl runs as ``scrapy crawl web`` in a child
    process (or a scrapyd job with ``SERVE_SCRAPYD_URL``) with the project's settings, this
    command's ``-s`` settings and what its request allows; crawls are kept in
    ``DATA_DIR/serve/``."""

    requires_project = False
    requires_crawler_process = False

    def syntax(self) -> str:
        return "[--bind ADDRESS] [--port PORT]"

    def short_desc(self) -> str:
        return "Serve the crawl API, console and metrics"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--bind", help=f"address to listen on (default {defaults.SERVE_BIND})")
        parser.add_argument("--port", type=int, help=f"port to listen on (default {defaults.SERVE_PORT})")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        # The service's web stack (FastAPI, pydantic, uvicorn) is imported only to serve:
        # Scrapy imports every command module for every command, `scrapy crawl` included.
        from crawler.service.app import create_app
        from crawler.service.backends import ScrapydBackend
        from crawler.service.security import Gate, is_loopback, service_token
        from crawler.service.server import listen, serve

        if args:
            raise UsageError(f"unexpected argument(s): {' '.join(args)}")
        s = self.settings
        assert s is not None  # set by Scrapy before run()
        check_command_settings(s)
        configure_logging(s)
        bind = opts.bind or s.get("SERVE_BIND", defaults.SERVE_BIND)
        port = s.getint("SERVE_PORT", defaults.SERVE_PORT) if opts.port is None else opts.port
        setting = s.get("SERVE_TOKEN", defaults.SERVE_TOKEN)
        if not is_loopback(bind) and setting == "":
            raise UsageError(f"--bind {bind} is not a loopback address: a token is required there; "
                             "leave SERVE_TOKEN unset (one is made) or set one", print_help=False)
        data_dir = Path(s.get("DATA_DIR") or os.getcwd()).resolve()
        try:
            sock = listen(bind, port)
        except (OSError, OverflowError) as error:  # OverflowError: a port outside 0-65535
            said = getattr(error, "strerror", None) or str(error).removeprefix("bind(): ")
            raise UsageError(f"cannot listen on {bind}:{port}: {said}", print_help=False) from None
        port = sock.getsockname()[1]
        service = self._service(s, data_dir)
        token, made = service_token(setting, data_dir / "serve")
        url = f"http://{'[' + bind + ']' if ':' in bind else bind}:{port}/"
        if not token:
            logger.warning("SERVE_TOKEN is empty: any program on this machine, and any web page its "
                           "browsers open, may use the API on %s", url)
        elif made:
            logger.info("A token was made for the service (kept in %s): open %s#token=%s", data_dir / "serve",
                        url, token)
        else:
            logger.info("The service's token is in %s", data_dir / "serve" / "token")
        gate = Gate(bind, port, s.getlist("SERVE_ALLOWED_HOSTS", defaults.SERVE_ALLOWED_HOSTS))
        app = create_app(service, gate, token,
                         s.getint("SERVE_MAX_BODY_BYTES", defaults.SERVE_MAX_BODY_BYTES),
                         s.getint("SERVE_THREADS", defaults.SERVE_THREADS))
        service.start()
        logger.info("Serving crawls on %s (data in %s, crawls run %s, %d at once)", url, data_dir,
                    f"on scrapyd {service.backend.url}" if isinstance(service.backend, ScrapydBackend)
                    else "as child processes", service.max_crawls)
        try:
            serve(app, sock, s.getfloat("SERVE_READ_TIMEOUT", defaults.SERVE_READ_TIMEOUT),
                  s.getfloat("SERVE_IDLE_TIMEOUT", defaults.SERVE_IDLE_TIMEOUT),
                  s.getint("SERVE_MAX_CONNECTIONS", defaults.SERVE_MAX_CONNECTIONS))
        finally:
            logger.info("Service stopped; its crawls go on and a restarted service finds them")
            sock.close()
            service.close()

    @staticmethod
    def _service(s: BaseSettings, data_dir: Path) -> CrawlService:
        from crawler.service.backends import LocalBackend, ScrapydBackend
        from crawler.service.security import seed_resolver
        from crawler.service.service import CrawlService

        settings = s.copy()
        settings.set("DATA_DIR", str(data_dir), priority="cmdline")
        forwarded = forwarded_settings(s)
        scrapyd = s.get("SERVE_SCRAPYD_URL", defaults.SERVE_SCRAPYD_URL)
        backend: LocalBackend | ScrapydBackend
        if scrapyd:
            backend = ScrapydBackend(scrapyd, s.get("SERVE_SCRAPYD_PROJECT", defaults.SERVE_SCRAPYD_PROJECT),
                                     data_dir, forwarded)
        else:
            if inside_project():  # its crawls run with this project's settings
                check_web_spider(s)
            backend = LocalBackend(data_dir / "serve", data_dir, forwarded)
        return CrawlService(settings, data_dir, backend,
                            s.getfloat("SERVE_POLL_INTERVAL", defaults.SERVE_POLL_INTERVAL), max_crawls(s),
                            s.getint("SERVE_MAX_QUEUED", defaults.SERVE_MAX_QUEUED),
                            policy_from_settings(s), seed_resolver(s))


def check_web_spider(settings: BaseSettings) -> None:
    """The local backend runs ``scrapy crawl web`` in this project: a usage error at start,
    not a failed crawl per request, when the project's spiders do not include it."""
    if WebSpider.name not in get_spider_loader(settings).list():
        package = WebSpider.__module__.rpartition(".")[0]
        raise UsageError(f"scrapy serve starts the {WebSpider.name!r} spider, and this project's "
                         f"SPIDER_MODULES do not include {package}: add it (SPIDER_MODULES = "
                         f"[..., {package!r}], or -s SPIDER_MODULES=...,{package})", print_help=False)
