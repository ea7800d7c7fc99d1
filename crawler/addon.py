"""``PoliteCrawler``: the one line that turns a Scrapy project into a polite crawler.

``ADDONS = {"crawler.addon.PoliteCrawler": 0}`` installs the frontier scheduler, the
RFC 9309 robots.txt middleware, the HTML-only filter, content-seen deduplication and
the page store, and applies every default of :mod:`crawler.defaults` at add-on
priority: a value the project, the spider or ``-s`` sets still wins.

Scrapy's own tools (``fetch``, ``view``, ``shell``, ``parse``, ``check``, ``bench``) fetch what
the operator names, once: for them the add-on keeps the fetch policy (robots.txt, safe
redirects, the user agent) and leaves out every part that keeps crawl state.
"""

from __future__ import annotations

import logging
from importlib import metadata
from typing import TYPE_CHECKING

from scrapy.downloadermiddlewares.httpcompression import HttpCompressionMiddleware
from scrapy.downloadermiddlewares.redirect import MetaRefreshMiddleware, RedirectMiddleware
from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware
from scrapy.settings import SETTINGS_PRIORITIES
from scrapy.utils.misc import load_object

from crawler import defaults
from crawler.config import SettingError, check_settings

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)

SCHEDULER = "crawler.scheduling.scheduler.FrontierScheduler"
# The product token of the default USER_AGENT.
AGENT = "politecrawler"
# Scrapy's own, for a run of one of its tools: memory queues, no state (without JOBDIR).
MEMORY_SCHEDULER = "scrapy.core.scheduler.Scheduler"
REQUEST_FINGERPRINTER_CLASS = "crawler.urls.fingerprinter.UrlFingerprinter"
TWISTED_DNS_RESOLVER = "crawler.net.resolver.GuardedResolver"
DOWNLOAD_HANDLER = "crawler.net.download.PromptDownloadHandler"
ASYNCIO_REACTOR = "twisted.internet.asyncioreactor.AsyncioSelectorReactor"
# Scrapy's extension that REMOTE_CONTROL_ENABLED switches on; it imports aiohttp.
REMOTE_CONTROL = "scrapy.extensions.remote_control.RemoteControl"
# What the resolver reads; only these are process-level (the spider exists before add-ons run).
RESOLVER_SETTINGS = ("NETWORK_GUARD", "NETWORK_ALLOW", "DNSCACHE_SIZE", "DNS_TIMEOUT", "DNS_MIN_TTL",
                     "DNS_MAX_TTL", "DNS_NEGATIVE_TTL", "DNS_NAMESERVERS")
# Components by setting, with their order; a project that sets one to None keeps it off.
COMPONENTS = {
    "DOWNLOADER_MIDDLEWARES": {
        # Last to see responses and exceptions: the guard has had its say (a refused
        # address is not retried), and Scrapy's RetryMiddleware, were it on, retried first.
        "crawler.middlewares.retry.FrontierRetryMiddleware": 80,
        # Before robots.txt: a refused host gets no robots.txt fetch either.
        "crawler.middlewares.address_guard.AddressGuardMiddleware": 90,
        # A URL queued before its host learned an irrelevant parameter: before robots.txt.
        "crawler.middlewares.traps.LearnedParamsMiddleware": 95,
        "crawler.middlewares.robots.RobotsMiddleware": 100,
        "crawler.middlewares.redirect.SafeMetaRefreshMiddleware": 580,
        # Before decoding and the page's own checks: a response refused for its headers is not read.
        "crawler.middlewares.header_limit.HeaderLimitMiddleware": 595,
        # In the place of Scrapy's HttpCompressionMiddleware, which it replaces.
        "crawler.middlewares.decompression.BoundedDecompressionMiddleware": 590,
        "crawler.middlewares.redirect.SafeRedirectMiddleware": 600,
        "crawler.middlewares.content.HtmlOnlyMiddleware": 650,
        # Above HttpCompressionMiddleware (590) and the redirects (600): each response as
        # received; above the header setters (UserAgent 500, DefaultHeaders 400): the request as sent.
        "crawler.middlewares.wire_capture.WireCaptureMiddleware": 800,
    },
    "SPIDER_MIDDLEWARES": {
        # Nearest the engine: a response that leaves the spider middlewares as no page is archived.
        "crawler.middlewares.wire_capture.UnstoredFetchMiddleware": 50,
        # After content seen (outputs go from high to low): pages carry their fingerprints.
        "crawler.middlewares.traps.TrapsMiddleware": 940,
        "crawler.middlewares.content_seen.ContentSeenMiddleware": 950,
        "crawler.middlewares.capture.PageCaptureMiddleware": 960,
    },
    "EXTENSIONS": {
        "crawler.extensions.bound.BoundMonitor": 500,
        # Sends crawl_closing: the downloads in flight end promptly (PromptDownloadHandler).
        "crawler.extensions.closing.ClosingAnnouncer": 500,
    },
    "ITEM_PIPELINES": {
        "crawler.pipelines.fingerprint.ContentHashPipeline": 300,
        "crawler.pipelines.revisit.RevisitPipeline": 700,
        "crawler.pipelines.store.PageStorePipeline": 800,
    },
}
# Schedulers the add-on replaces even when a project names them: they are what it fixes.
REPLACED_SCHEDULERS = {"scrapy_redis.scheduler.Scheduler"}
# What a run of one of Scrapy's tools leaves out: the parts that keep crawl state (frontier,
# store, content seen, learned traps) or exist for them (the frontier's retry chain), and
# the HTML-only filter (`scrapy fetch` of a PDF prints it, as in plain Scrapy).
STATEFUL_COMPONENTS = {
    "crawler.middlewares.retry.FrontierRetryMiddleware", "crawler.middlewares.traps.LearnedParamsMiddleware",
    "crawler.middlewares.content.HtmlOnlyMiddleware", "crawler.middlewares.traps.TrapsMiddleware",
    "crawler.middlewares.content_seen.ContentSeenMiddleware", "crawler.extensions.bound.BoundMonitor",
    "crawler.pipelines.revisit.RevisitPipeline", "crawler.pipelines.store.PageStorePipeline",
}


def scrapy_tool(spidercls: type | None, settings: BaseSettings) -> str | None:
    """The Scrapy command whose one-off run this crawler is (``fetch``, ``parse``, ...), or None.

    ``fetch``, ``view``, ``parse`` and ``check`` replace the spider's ``start`` with a function
    of their own module, ``bench`` runs a spider of its own, and ``shell`` sets its
    ``DUPEFILTER_CLASS`` at command priority: Scrapy names the command nowhere else."""
    for owner in (getattr(spidercls, "start", None), spidercls) if spidercls is not None else ():
        module = getattr(owner, "__module__", None) or ""
        if module.startswith("scrapy.commands."):
            return module.rpartition(".")[2]
    if (settings.getpriority("DUPEFILTER_CLASS") == SETTINGS_PRIORITIES["command"]
            and settings.get("DUPEFILTER_CLASS") == "scrapy.dupefilters.BaseDupeFilter"):
        return "shell"
    return None


def user_agent(contact: str) -> str:
    """``politecrawler/<version> (+<contact>)``: the product token robots.txt groups are
    matched on, this package's version, and how to reach the operator."""
    try:
        version = metadata.version("scrapy-polite-crawler")
    except metadata.PackageNotFoundError:  # run from a checkout that is not installed
        version = "0"
    return f"{AGENT}/{version}" + (f" (+{contact})" if contact else "")


def default_names() -> list[str]:
    """Every setting :mod:`crawler.defaults` defines."""
    return [name for name in vars(defaults) if name.isupper()]


class PoliteCrawler:
    """Scrapy add-on: the whole crawler, on any spider of the project."""

    def __init__(self, crawler: Crawler | None = None) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> PoliteCrawler:
        return cls(crawler)

    @classmethod
    def update_pre_crawler_settings(cls, settings: BaseSettings) -> None:
        """Process-level settings: the resolver (address guard, DNS TTLs), which is built
        from these settings before any crawler exists."""
        for name in RESOLVER_SETTINGS:
            settings.set(name, getattr(defaults, name), priority="addon")
        if scrapy_tool(None, settings) == "shell":  # it builds its crawler before the resolver
            settings.set("NETWORK_GUARD", False, priority="addon")
        if settings.get("TWISTED_REACTOR") != ASYNCIO_REACTOR:
            logger.warning("PoliteCrawler: TWISTED_REACTOR is not the asyncio reactor; the guarded "
                           "resolver (%s) is not installed", TWISTED_DNS_RESOLVER)
            return
        settings.set("TWISTED_DNS_RESOLVER", TWISTED_DNS_RESOLVER, priority="addon")

    def update_settings(self, settings: BaseSettings) -> None:
        # A script or a runner that skips the crawl command gets the same plain message,
        # before any value is read here.
        try:
            check_settings(settings)
        except SettingError as error:  # Scrapy shows it as a traceback: the log says it plainly first
            logger.error("%s", error)
            raise
        for name in default_names():
            settings.set(name, getattr(defaults, name), priority="addon")
        # The frontier never lets two fetches to one host overlap; a lower per-domain
        # limit would only queue requests inside the downloader.
        settings.set("CONCURRENT_REQUESTS_PER_DOMAIN", settings.getint("CONCURRENT_REQUESTS"),
                     priority="addon")
        settings.set("REQUEST_FINGERPRINTER_CLASS", REQUEST_FINGERPRINTER_CLASS, priority="addon")
        self._take_over_download_delay(settings)
        tool = scrapy_tool(self.crawler.spidercls, settings) if self.crawler is not None else None
        self._install_scheduler(settings, MEMORY_SCHEDULER if tool else SCHEDULER)
        self._install_download_handler(settings)
        # Ours replaces Scrapy's: both would fetch robots.txt, and Scrapy's obeys a 5xx page.
        settings.set_in_component_priority_dict("DOWNLOADER_MIDDLEWARES", RobotsTxtMiddleware, None)
        # Ours skip and count a redirect to javascript: or a malformed host; Scrapy's raise.
        settings.set_in_component_priority_dict("DOWNLOADER_MIDDLEWARES", RedirectMiddleware, None)
        settings.set_in_component_priority_dict("DOWNLOADER_MIDDLEWARES", MetaRefreshMiddleware, None)
        # Ours caps what every body decodes to; Scrapy's is uncapped when download_maxsize is 0.
        settings.set_in_component_priority_dict("DOWNLOADER_MIDDLEWARES", HttpCompressionMiddleware, None)
        for name, components in COMPONENTS.items():
            for path, order in components.items():
                if tool is None or path not in STATEFUL_COMPONENTS:
                    settings.setdefault_in_component_priority_dict(name, load_object(path), order)
        self._leave_out_remote_control(settings)
        self._name_the_crawler(settings, warn=tool is None)
        if tool is not None:
            self._for_tool(settings, tool)

    @staticmethod
    def _leave_out_remote_control(settings: BaseSettings) -> None:
        """While ``REMOTE_CONTROL_ENABLED`` is off, Scrapy's RemoteControl is not loaded at all:
        loading it imports aiohttp (about 90 ms of CPU at start) only for it to raise
        NotConfigured. It goes from ``EXTENSIONS_BASE``: Scrapy loads every key of
        ``EXTENSIONS`` to compare it with the base's, a key set to None there included."""
        if not settings.getbool("REMOTE_CONTROL_ENABLED"):
            settings["EXTENSIONS_BASE"].set(REMOTE_CONTROL, None, priority="addon")

    @staticmethod
    def _name_the_crawler(settings: BaseSettings, warn: bool) -> None:
        """The default ``USER_AGENT``: the crawler, its version and ``CRAWLER_CONTACT``, which
        robots.txt is matched on by its product token; a WARNING while no contact is set."""
        if (settings.getpriority("USER_AGENT") or 0) > SETTINGS_PRIORITIES["addon"]:
            return  # the project's own
        contact = str(settings.get("CRAWLER_CONTACT") or "").strip()
        settings.set("USER_AGENT", user_agent(contact), priority="addon")
        if not contact and warn:
            logger.warning("CRAWLER_CONTACT is not set: sites see %r and cannot reach whoever runs this "
                           "crawl; set it to a URL or an e-mail (-s CRAWLER_CONTACT=https://example.org/bot)",
                           settings.get("USER_AGENT"))

    @staticmethod
    def _for_tool(settings: BaseSettings, tool: str) -> None:
        """A run of ``scrapy <tool>``: Scrapy's scheduler in memory, and no crawl state
        written; the URLs it fetches are the operator's own, so the address guard is off
        (as any setting here, a project's own value wins)."""
        settings.set("NETWORK_GUARD", False, priority="addon")
        logger.debug("PoliteCrawler: a run of scrapy %s keeps no crawl state", tool)

    @staticmethod
    def _take_over_download_delay(settings: BaseSettings) -> None:
        """A project's ``DOWNLOAD_DELAY`` (Scrapy's template sets 1) becomes the frontier's
        minimum gap: Scrapy's slot delay on top would block other hosts' requests."""
        delay, priority = settings.getfloat("DOWNLOAD_DELAY"), _priority(settings, "DOWNLOAD_DELAY")
        if not delay or priority <= SETTINGS_PRIORITIES["addon"]:
            return
        if _priority(settings, "POLITENESS_MIN_DELAY") <= SETTINGS_PRIORITIES["addon"]:
            settings.set("POLITENESS_MIN_DELAY", delay, priority=priority)
        settings.set("DOWNLOAD_DELAY", 0, priority=priority)
        logger.info("PoliteCrawler: DOWNLOAD_DELAY = %s is kept by the frontier as the minimum gap "
                    "between fetches to a host (POLITENESS_MIN_DELAY = %s)",
                    delay, settings.getfloat("POLITENESS_MIN_DELAY"))

    @staticmethod
    def _install_download_handler(settings: BaseSettings) -> None:
        """Scrapy's HTTP/1.1 handler with downloads that end promptly when the crawl closes,
        for http and https, unless the project names its own handler for them."""
        handlers = settings["DOWNLOAD_HANDLERS"]
        for scheme in ("http", "https"):
            if handlers.get(scheme) is None:
                handlers.set(scheme, DOWNLOAD_HANDLER, priority="addon")

    @staticmethod
    def _install_scheduler(settings: BaseSettings, scheduler: str) -> None:
        current = settings.get("SCHEDULER")
        current_path = current if isinstance(current, str) else f"{current.__module__}.{current.__qualname__}"
        if current_path in REPLACED_SCHEDULERS:
            logger.info("PoliteCrawler replaces SCHEDULER %s with its polite frontier "
                        "(REDIS_URL and SCHEDULER_* settings keep their meaning)", current_path)
            settings.set("SCHEDULER", scheduler, priority=_priority(settings, "SCHEDULER"))
        else:
            settings.set("SCHEDULER", scheduler, priority="addon")


def _priority(settings: BaseSettings, name: str) -> int:
    """The priority a setting's value was set with; Scrapy's lowest ("default") for one not set."""
    priority = settings.getpriority(name)
    return SETTINGS_PRIORITIES["default"] if priority is None else priority
