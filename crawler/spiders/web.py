"""The ``web`` spider: from seed URLs, fetch HTML pages, keep their text, follow their links."""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any
from weakref import WeakSet

import scrapy
from lxml import etree
from scrapy import signals
from scrapy.exceptions import CloseSpider
from scrapy.http import HtmlResponse
from scrapy.utils.sitemap import Sitemap

from crawler import defaults
from crawler import signals as crawler_signals
from crawler.addon import scrapy_tool
from crawler.context.connection import uses_redis
from crawler.extract.html import parse_html
from crawler.extract.page import extract_page, not_modified_page, page_text
from crawler.items import Page, ProbeAnswer
from crawler.middlewares.decompression import CUT_FLAG, DECODED_KEEP_PREFIX, DECODED_MAXSIZE
from crawler.middlewares.traps import TrapsMiddleware
from crawler.net.decoding import DecodingError, decode
from crawler.robots.meta import PageDirectives, page_directives
from crawler.robots.rules import product_token
from crawler.scheduling.codec import KEEP_LEASE_META
from crawler.spiders.arguments import (
    SEED_FILE_SUFFIXES,
    ArgumentError,
    check_arguments,
    parse_seeds,
    seed_problem,
)
from crawler.spiders.pushed_seeds import PushedSeeds
from crawler.stages import StageClock
from crawler.urls.canonical import header_canonical, page_canonical
from crawler.urls.keys import registered_domain, url_host
from crawler.urls.links import LinkFollower, Scope
from crawler.urls.normalize import UrlNormalizer

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response

# The arguments' checks and the pushed seeds live in their own modules; their names are
# still importable from here.
__all__ = [
    "SEED_FILE_SUFFIXES", "ArgumentError", "PushedSeeds", "WebSpider", "check_arguments", "parse_seeds",
]


def _sitemap_priority(value: str | None) -> float | None:
    """A sitemap entry's <priority> (0.0 to 1.0), or None when absent or not a number."""
    try:
        priority = float(value) if value else None
    except ValueError:
        return None
    return priority if priority is not None and 0.0 <= priority <= 1.0 else None


def _freeze_the_process() -> None:
    """Keep what exists now (modules, settings, the spider) out of the collector's full
    passes for the crawl's life (``gc.freeze``): they then walk only what the crawl makes
    (~70 ms a pass over the ~120,000 objects of a started crawl, every second or so), and
    the process's exit skips them too. What an earlier crawl of this process froze is
    garbage by now: unfrozen and collected first."""
    if gc.get_freeze_count():
        gc.unfreeze()
        gc.collect()
    gc.freeze()


class WebSpider(scrapy.Spider):
    """Crawls HTML from seed URLs, staying in scope, yielding one :class:`Page` per page.

    Arguments (``-a``): ``seeds`` (URLs, comma-separated, or a file), ``scope``
    (``host``, ``domain`` or ``all``; setting ``CRAWL_SCOPE``), ``max_pages``
    (setting ``CRAWL_MAX_PAGES``). Links are followed through :class:`LinkFollower`,
    which skips links already seen before any Request is built. Its page requests name
    no callback (Scrapy calls ``parse``): the frontier stores them without Scrapy's
    lookup of a callback's name among the spider's members (~25 us a request).
    """

    name = "web"
    # Its -a arguments, as `scrapy crawl -h` lists them.
    arguments = {
        "seeds": "URL[,URL...] or a file of URLs, one per line (# comments)",
        "scope": "host (the seeds' hosts, default), domain (their registered domains) or all;"
                 " setting CRAWL_SCOPE",
        "max_pages": "stop after this many pages are stored (0: no cap); setting CRAWL_MAX_PAGES",
    }
    # It yields its own Page items: PageCaptureMiddleware leaves its responses alone.
    yields_pages = True

    def __init__(
        self,
        seeds: str | list[str] | None = None,
        scope: str | None = None,
        max_pages: int | str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self._seeds_arg = seeds if seeds is not None else getattr(self, "start_urls", None)
        self._scope_arg = scope
        self._max_pages_arg = max_pages
        self.pages = 0
        self.pushed_seeds: PushedSeeds | None = None
        self._duplicates: WeakSet[Response] = WeakSet()  # responses whose page repeats another

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> WebSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        spider._configure(crawler)
        crawler.signals.connect(spider._prepare, signal=signals.spider_opened)
        crawler.signals.connect(spider._page_duplicate, signal=crawler_signals.page_duplicate)
        crawler.signals.connect(spider._frontier_reloaded, signal=crawler_signals.frontier_reloaded)
        _freeze_the_process()
        if crawler.settings.getbool("SITEMAP_FOLLOW", defaults.SITEMAP_FOLLOW):
            crawler.signals.connect(spider.sitemaps_found, signal=crawler_signals.sitemaps_found)
        if uses_redis(crawler.settings):
            spider.pushed_seeds = PushedSeeds.from_crawler(crawler, spider)
        return spider

    def _configure(self, crawler: Crawler) -> None:
        settings = crawler.settings
        self.seed_urls: list[str]
        if not self._seeds_arg and scrapy_tool(type(self), settings):
            # scrapy parse, check or fetch gives its own URL: no seeds, every link in scope.
            self.seed_urls, scope, self.max_pages = [], self._scope_arg or "all", 0
        else:
            self.seed_urls, scope, self.max_pages = check_arguments(
                self._seeds_arg, self._scope_arg, self._max_pages_arg, settings
            )
        normalize = UrlNormalizer.from_settings(settings)
        self._normalize = normalize
        self.depth_limit = settings.getint("DEPTH_LIMIT")
        self.sitemap_maxsize = settings.getint("SITEMAP_MAXSIZE", defaults.SITEMAP_MAXSIZE)
        self.feed_html = settings.getbool("FEED_PAGE_HTML", defaults.FEED_PAGE_HTML)
        self.text_mode = settings.get("TEXT_EXTRACTION", defaults.TEXT_EXTRACTION)
        self.scope = scope
        self.allowed_domains: list[str] | None = None
        # Redirects bypass the link follower: Scrapy's OffsiteMiddleware keeps them in scope
        # (for scope=host it also admits subdomains of the seed hosts).
        hosts = {url_host(u).removeprefix("www.") for u in self.seed_urls}
        if scope == "host":
            self.allowed_domains = sorted(hosts)
        elif scope == "domain":
            self.allowed_domains = sorted({registered_domain(h) for h in hosts})
        self.logger.info(
            "Crawling %d seed(s), scope=%s, max_pages=%s", len(self.seed_urls), scope,
            self.max_pages or "none",
        )

    def _prepare(self) -> None:
        """At spider_opened, not in from_crawler: Crawler.stats exists only once the crawl
        starts; not in start() either, which scrapy parse and check replace."""
        settings = self.crawler.settings
        traps = self.crawler.get_spider_middleware(TrapsMiddleware)
        self.links = LinkFollower(
            self._normalize,
            Scope(self.scope, (url_host(u) for u in self.seed_urls)),
            self.crawler.stats,
            max_url_length=settings.getint("URLLENGTH_LIMIT", defaults.URLLENGTH_LIMIT),
            segment_repeats=settings.getint("TRAP_SEGMENT_REPEATS", defaults.TRAP_SEGMENT_REPEATS),
            cache_size=settings.getint("LINK_CACHE_SIZE", defaults.LINK_CACHE_SIZE),
            rewrite=traps.rewrite_link if traps is not None else None,
        )
        self.clock = StageClock(self.crawler.stats)
        # <meta name=robots> and X-Robots-Tag, matched by our robots.txt product token.
        self.meta_robots_token = product_token(
            settings.get("ROBOTSTXT_USER_AGENT") or settings.get("USER_AGENT") or ""
        ) if settings.getbool("ROBOTS_META_OBEY", defaults.ROBOTS_META_OBEY) else None

    def _frontier_reloaded(self) -> None:
        """The frontier lost the links sent since its last commit: their pages, fetched
        again, send them again."""
        self.links.forget()

    async def start(self) -> AsyncIterator[scrapy.Request]:
        for url in self.seed_urls:
            self.links.mark_seen(url)
        gc.freeze()  # the crawl's components, built since from_crawler: kept as long
        for url in self.seed_urls:
            yield scrapy.Request(url)

    def add_seeds(self, urls: list[str]) -> None:
        """Seeds that arrive while the crawl runs (pushed into Redis): scope widened to
        their hosts, each scheduled; a bad one is logged and counted."""
        for raw in urls:
            url = self._normalize(raw) if isinstance(raw, str) else None
            problem = seed_problem(str(raw), url)
            if problem:
                self.logger.warning("Pushed seed %r rejected: %s", raw, problem)
                self.crawler.stats.inc_value("seeds/rejected")
                continue
            assert url is not None  # seed_problem names a problem for a URL that does not normalise
            host = url_host(url)
            self.links.scope.add_host(host)
            if self.allowed_domains is not None and self.scope != "all":
                domain = host.removeprefix("www.") if self.scope == "host" else registered_domain(host)
                self.allowed_domains = sorted({*self.allowed_domains, domain})
            self.links.mark_seen(url)
            self.crawler.stats.inc_value("seeds/pushed")
            # A seed, as the start requests are: the address guard allows its host.
            seed = scrapy.Request(url, meta={"is_start_request": True})
            self.crawler.engine.crawl(seed)

    def parse(self, response: Response) -> Iterator[Page | scrapy.Request]:
        stats = self.crawler.stats
        if response.status == 304:  # a revisit's conditional GET: not modified, nothing to parse
            yield not_modified_page(response, self._normalize(response.url) or response.url)
            return
        if not isinstance(response, HtmlResponse):
            stats.inc_value("content/dropped/not_html")
            return
        if self.max_pages and self.pages >= self.max_pages:
            response.meta[KEEP_LEASE_META] = True  # not stored: fetched again on resume
            return
        depth = response.meta.get("depth", 0)
        page, hrefs, base = extract_page(response, self._normalize(response.url) or response.url, self.clock,
                                         self.text_mode)
        self._canonical(page, response)
        asks = PageDirectives()
        if self.meta_robots_token is not None:
            tags = [v.decode("latin-1") for v in response.headers.getlist(b"X-Robots-Tag")]
            asks = page_directives(page.meta_robots, tags, self.meta_robots_token)
        if asks.noindex:
            stats.inc_value("robots/meta/noindex")  # not stored; its links still count
        else:
            self.pages += 1
            page.feed_html = self.feed_html
            yield page
        if asks.nofollow:
            stats.inc_value("robots/meta/nofollow")
        else:
            yield from self._follow(response, hrefs, base, depth)
        if self.max_pages and self.pages >= self.max_pages:
            raise CloseSpider("max_pages")  # after its links are queued: a resume goes on from there

    def _canonical(self, page: Page, response: Response) -> None:
        """rel=canonical on the page's host: the page is stored under its canonical URL,
        which then counts as handled (no link to it is followed). When that URL was
        handled already, content seen tells whether the page copies it. A canonical on
        another host is only recorded."""
        header = header_canonical(v.decode("latin-1") for v in response.headers.getlist(b"Link"))
        page.canonical, same_host = page_canonical(page.url, page.canonical, header, self._normalize)
        canonical = page.canonical
        if not same_host or canonical is None or canonical == page.url:
            return
        self.crawler.stats.inc_value("links/canonical")
        if self.links.claim(canonical):
            page.url, page.fetched_url = canonical, page.url

    def parse_probe(self, response: Response) -> Iterator[ProbeAnswer]:
        """A host's answer at its soft-404 probe path (``TrapsMiddleware``): its text, never a page."""
        if isinstance(response, HtmlResponse):
            # The same text as a page's, so that a page like the probe's answer is found.
            tree = parse_html(response.body, response.encoding)
            yield ProbeAnswer(response.url, page_text(tree, self.text_mode).text)

    def _page_duplicate(self, response: Response | None) -> None:
        """``page_duplicate``: the links of ``response`` are not followed."""
        if response is not None:
            self._duplicates.add(response)

    def _follow(self, response: Response, hrefs: list[str], base: str,
                depth: int) -> Iterator[scrapy.Request]:
        if response in self._duplicates:
            # Said (page_duplicate) as its page passed the middlewares: its links are not
            # followed, nor handed to the link follower, which would remember them as handled.
            return
        if self.depth_limit and depth + 1 > self.depth_limit:
            self.crawler.stats.inc_value("traps/dropped/depth", len(hrefs))
            return
        start = self.clock.now()
        urls = self.links.new_links(base, hrefs)
        self.clock.add("normalise", start)
        for url in urls:
            yield scrapy.Request(url)

    def sitemaps_found(self, sitemaps: list[str], robots_url: str) -> None:
        """Schedule the in-scope sitemaps a robots.txt lists (``SITEMAP_FOLLOW``)."""
        for url in sitemaps:
            accepted = self.links.accept(url)
            if accepted:
                self.crawler.engine.crawl(self._sitemap_request(accepted))

    def _sitemap_request(self, url: str) -> scrapy.Request:
        # Decoded as far as SITEMAP_MAXSIZE, so that one over it is said to be too large.
        return scrapy.Request(url, callback=self.parse_sitemap, meta={
            "html_only": False, DECODED_MAXSIZE: self.sitemap_maxsize, DECODED_KEEP_PREFIX: True})

    def parse_sitemap(self, response: Response) -> Iterator[scrapy.Request]:
        """Follow a sitemap index's sitemaps and a sitemap's page URLs, keeping <lastmod>."""
        stats = self.crawler.stats
        body, cut = response.body, CUT_FLAG in response.flags
        if body[:2] == b"\x1f\x8b" and not cut:  # a .xml.gz file, sent as it is
            try:
                decoded = decode(body, [b"gzip"], self.sitemap_maxsize)
            except DecodingError:
                body = b""
            else:
                body, cut = decoded.body, decoded.cut
        if cut:
            stats.inc_value("sitemap/too_large")
            self.logger.info("Sitemap too large: %s decodes to more than %d bytes (SITEMAP_MAXSIZE)",
                             response.url, self.sitemap_maxsize)
            return
        try:
            sitemap = Sitemap(body)
        except (etree.XMLSyntaxError, StopIteration, ValueError):
            stats.inc_value("sitemap/invalid")
            self.logger.info("Not a sitemap: %s", response.url)
            return
        stats.inc_value(f"sitemap/{sitemap.type}")
        for entry in sitemap:
            url = self.links.accept(entry["loc"])
            if url is None:
                continue
            if sitemap.type == "sitemapindex":
                yield self._sitemap_request(url)
            else:
                stats.inc_value("sitemap/urls")
                yield scrapy.Request(url, meta={
                    "sitemap_lastmod": entry.get("lastmod"),
                    "sitemap_priority": _sitemap_priority(entry.get("priority"))})
