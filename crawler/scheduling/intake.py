"""Requests into the frontier: checked, stored as JSON, sent as adds (or requeues)."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from scrapy.utils.httpobj import urlparse_cached

from crawler.freshness.revisit import RevisitPolicy, lastmod_time
from crawler.frontier.api import Entry
from crawler.frontier.policy import PriorityLevels
from crawler.scheduling.codec import LEASE_META, request_to_json
from crawler.scheduling.fetches import FETCH_META

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.statscollectors import StatsCollector

    from crawler.scheduling.client import FrontierClient

logger = logging.getLogger(__name__)


class Intake:
    """The engine's requests into the frontier, through ``client``; a retry of
    the URL its lease holds is requeued. A request the frontier cannot store durably (its
    callback is not the spider's, or its meta or cb_kwargs are not JSON: Scrapy's shell,
    parse and check make such requests) goes to ``keep``, held in memory by this process.
    ``hastened`` hears of a revisit made due by a sitemap's <lastmod>, ``added`` of each
    add done (new hosts may wait for their politeness key)."""

    def __init__(self, fingerprinter: Any, levels: PriorityLevels, stats: StatsCollector,
                 client: FrontierClient, hastened: Callable[[], None],
                 added: Callable[[], None], keep: Callable[[Request], None]) -> None:
        self.fingerprinter = fingerprinter
        self.levels = levels
        self.stats = stats
        self.client = client
        self.hastened = hastened
        self.added = added
        self.keep = keep
        self.warned: set[str] = set()
        self.kept: set[int] = set()  # fingerprints of the requests kept in memory

    def enqueue(self, request: Request, spider: Spider | None) -> bool:
        """Always True once the request is stored to be sent: whether its URL is new is the
        frontier's answer, which comes later, off the reactor (``frontier/enqueued``)."""
        fp = int.from_bytes(self.fingerprinter.fingerprint(request)[:8], "big")
        inherited = request.meta.pop(LEASE_META, None)
        request.meta.pop(FETCH_META, None)
        try:
            data, dropped = request_to_json(request, spider)
        except ValueError as error:  # its callback or errback is not a method of the spider
            callback = getattr(request.callback, "__qualname__", request.callback)
            return self._not_durable(request, fp, f"callback:{callback}", str(error))
        if dropped:
            names = ", ".join(map(repr, dropped))
            return self._not_durable(request, fp, f"meta:{names}",
                                     f"meta or cb_kwargs {names} cannot be stored as JSON")
        host = urlparse_cached(request).hostname or ""
        entry = Entry(fp, host, self.levels.level(request.meta.get("depth", 0), request.priority), data)
        add = (entry, request.dont_filter, request.meta.get("sitemap_lastmod"))
        # A retry of the URL its lease holds goes back to the queue; that lease ends.
        if inherited is not None and inherited[0] == fp:
            self.client.requeue(fp, inherited[1], data).addCallback(self._requeued, add)
        else:
            self._add(*add)
        return True

    def _not_durable(self, request: Request, fp: int, kind: str, why: str) -> bool:
        """Fetched all the same, from memory, once per URL unless ``dont_filter``; a
        crawl resumed later does not have it."""
        if fp in self.kept and not request.dont_filter:
            self.stats.inc_value("frontier/dropped/seen")
            return False
        self.kept.add(fp)
        self.stats.inc_value("frontier/not_durable")
        if kind not in self.warned and len(self.warned) < 1000:
            self.warned.add(kind)
            logger.debug("Request for %s is kept in memory, not in the frontier (this process fetches "
                         "it; a resumed crawl would not): %s", request.url, why)
        self.keep(request)
        return True

    def _requeued(self, requeued: bool, add: tuple[Entry, bool, str | None]) -> None:
        if requeued:
            self.stats.inc_value("frontier/requeued")
        else:  # its lease had ended: an add as any other
            self._add(*add)

    def _add(self, entry: Entry, force: bool, lastmod: str | None) -> None:
        self.client.add([entry], force).addCallback(self._added, entry, force, lastmod)

    def _added(self, added: list[bool], entry: Entry, force: bool, lastmod: str | None) -> None:
        if added[0]:
            self.stats.inc_value("frontier/enqueued")
        else:
            if force and "dont_filter" not in self.warned:  # Scrapy would fetch it again: say why not
                self.warn_once("dont_filter", "Request for %s has dont_filter, but the URL is queued, "
                               "being fetched, waiting for a retry or given up already: the frontier "
                               "never holds a URL twice, so it is dropped (counted in "
                               "frontier/dropped/seen; a URL done is queued again)",
                               json.loads(entry.request).get("url"))
            if lastmod:
                self._sitemap_says_changed(entry.fp, entry.host, lastmod)
        self.added()

    def _sitemap_says_changed(self, fp: int, host: str, lastmod: str) -> None:
        """A sitemap's <lastmod> later than a URL's last fetch makes its revisit due now."""

        def read(scheduled: tuple[float, float] | None) -> None:
            if scheduled and RevisitPolicy.due_by_lastmod(scheduled[1], lastmod_time(lastmod)):
                self.client.hasten_revisit(fp, host, time.time()).addCallback(made_due)

        def made_due(done: bool) -> None:
            if done:
                self.stats.inc_value("revisit/lastmod")
                self.hastened()

        self.client.revisit_at(fp, host).addCallback(read)

    def warn_once(self, key: str, message: str, *args: Any) -> None:
        """One WARNING per kind, not one per URL."""
        if key not in self.warned and len(self.warned) < 1000:
            self.warned.add(key)
            logger.warning(message, *args)
