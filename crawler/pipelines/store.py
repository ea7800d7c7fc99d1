"""Write each page to the page store: WARC records and a metadata record."""

from __future__ import annotations

import json
import logging
import socket
from collections import OrderedDict
from http import HTTPStatus
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import TYPE_CHECKING, Any

import scrapy
from scrapy.utils.defer import deferred_from_coro

from crawler import defaults
from crawler import signals as crawler_signals
from crawler.context.crawl import CrawlContext
from crawler.context.outcomes import PageOutcomes
from crawler.freshness.revisit import NOT_MODIFIED, UNCHANGED
from crawler.items import Page
from crawler.paths import data_path
from crawler.pipelines.space import StoreSpaceWatch
from crawler.scheduling.codec import requeue
from crawler.stages import StageClock
from crawler.store.durable import FsyncBatches
from crawler.store.files import LocalStore, Location, SegmentWriter, open_store, segment_name
from crawler.store.index import PageIndex
from crawler.store.space import StoreFull, is_no_space
from crawler.store.warc import (
    CONFORMS_TO,
    IDENTICAL_PROFILE,
    NEAR_TEXT_PROFILE,
    NOT_MODIFIED_PROFILE,
    SAME_TEXT_PROFILE,
    Archived,
    Referent,
    WarcFileWriter,
    payload_digest,
)
from crawler.store.wire import Exchange, iso_time

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.settings import BaseSettings
    from scrapy.signalmanager import SignalManager
    from scrapy.statscollectors import StatsCollector

    from crawler.store.s3 import S3Store

logger = logging.getLogger(__name__)


#: Payloads stored by this process, by digest, that an identical one may point to (LRU).
PAYLOADS_REMEMBERED = 50_000


def _version() -> str:
    try:
        return version("scrapy-polite-crawler")
    except PackageNotFoundError:  # run from a checkout that is not installed
        return "unknown"


def warcinfo(settings: BaseSettings, crawl_id: str) -> dict[str, str]:
    """The fields of each WARC file's ``warcinfo`` record (application/warc-fields)."""
    info = {
        "software": f"politecrawler/{_version()} (Scrapy {scrapy.__version__})",
        "format": "WARC File Format 1.1",
        "conformsTo": CONFORMS_TO,
        "hostname": socket.gethostname(),
        "operator": settings.get("CRAWLER_CONTACT") or "",
        "http-header-user-agent": settings.get("USER_AGENT") or "",
        "robots": "obey" if settings.getbool("ROBOTSTXT_OBEY") else "ignore",
        "isPartOf": crawl_id,
    }
    return {k: v for k, v in info.items() if v}


def page_exchange(page: Page) -> Exchange:
    """A page captured without its wire exchange (no ``WireCaptureMiddleware``): its
    response as Scrapy decoded it, no request record."""
    try:
        reason = HTTPStatus(page.status).phrase
    except ValueError:
        reason = ""
    lines = [f"HTTP/1.1 {page.status} {reason}".rstrip()]
    lines += [f"{k}: {v}" for k, v in page.http_headers
              if k.lower() not in ("content-encoding", "transfer-encoding", "content-length")]
    lines.append(f"Content-Length: {len(page.html)}")
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1", "replace")
    return Exchange(page.fetched_url or page.url, b"", b"", page.status, head, page.html, None,
                    iso_time(page.fetched_at))


def page_record(page: Page, warc: dict, text: dict | None, digest: str | None) -> dict:
    """The metadata record of a stored page (one JSON line in ``meta/``)."""
    state = page.revisit_state
    return {
        "url": page.url,
        "status": page.status,
        "fetched_at": iso_time(page.fetched_at),
        "depth": page.depth,
        "title": page.title,
        "content_type": page.content_type,
        "content_sha256": page.content_sha256,
        "simhash": None if page.simhash is None else f"{page.simhash:016x}",
        "duplicate_of": page.duplicate_of,
        "soft_404": page.soft_404,
        "etag": page.etag,
        "last_modified": page.last_modified,
        "links": page.links,
        "sitemap_lastmod": page.sitemap_lastmod,
        "canonical": page.canonical,
        "fetched_url": page.fetched_url,
        "meta_robots": page.meta_robots,
        "lang": page.lang,
        "published": page.published,
        "revisit": page.revisit,
        "next_visit": None if state is None else iso_time(state["next_visit"]),
        "revisit_interval": None if state is None else state["interval"],
        "payload_digest": digest,
        "warc": warc,
        "text": text,
    }


class PageStorePipeline:
    """Stores every :class:`~crawler.items.Page` under ``STORE_URI``.

    ``warc/<segment>.warc.gz`` (:mod:`crawler.store.warc`): per page its ``response``
    record (the HTTP response as received, Content-Encoding kept), its ``request``
    record and a ``conversion`` record (the cleaned text); for a duplicate, or a revisit
    that found the page unchanged, a ``revisit`` record pointing at the record it
    repeats; for every other fetch (robots.txt, redirects, error pages) its request and
    response. Each record is its own gzip member; each file starts with a ``warcinfo``
    record and gets its CDXJ index in ``indexes/`` when it closes.
    ``meta/<segment>.jsonl.gz``: one JSON record per page with where its records are
    (file, offset, length). Files roll at ``STORE_ROLL_BYTES`` or
    ``STORE_ROLL_SECONDS``; with an ``s3://`` store each complete file is uploaded.
    Compressed by ISA-L at ``STORE_GZIP_LEVEL``. A page is safe, and its URL acked to
    the frontier and indexed in ``STORE_INDEX_DIR`` (``crawler.store.index``), only once
    its records are durable: on a local disk once fsync'd (in batches, every
    ``STORE_FSYNC_INTERVAL`` seconds: ``crawler.store.durable``), with S3 once both its
    files are uploaded. Opening the store first repairs what a killed run left
    (``crawler.store.repair``).
    Stats: ``store/pages``, ``store/duplicates``, ``store/revisits``, ``store/fetches``
    (other fetches archived), ``store/html_bytes``, ``store/warc_bytes``,
    ``store/request_bytes``, ``store/fsync_batches``.
    """

    def __init__(self, store: LocalStore | S3Store, stats: StatsCollector, roll_bytes: int,
                 roll_seconds: float = 0, signals: SignalManager | None = None,
                 gzip_level: int = defaults.STORE_GZIP_LEVEL, index: PageIndex | None = None,
                 fsync_interval: float = defaults.STORE_FSYNC_INTERVAL,
                 info: dict[str, str] | None = None, space: StoreSpaceWatch | None = None,
                 outcomes: PageOutcomes | None = None) -> None:
        self.store = store
        self.outcomes = outcomes if outcomes is not None else PageOutcomes()
        self.space = space
        self.index = index
        self.root = str(store.root if store.remote else Path(store.root).resolve())
        # Index rows waiting for their pages to be safe (names of the uploads or fsync
        # batches still to come, row).
        self._unindexed: list[tuple[set[str], tuple[str, str, Location]]] = []
        self.signals = signals
        if store.remote:
            store.on_uploaded = self._safe
        self.fsync_interval = fsync_interval
        self._batches: FsyncBatches | None = None
        self.stats = stats
        self.clock = StageClock(stats)
        self.roll_bytes = roll_bytes
        self.roll_seconds = roll_seconds
        self.gzip_level = gzip_level
        self.info = info or {"software": "politecrawler", "format": "WARC File Format 1.1"}
        self._warc: WarcFileWriter | None = None
        self._meta: SegmentWriter | None = None
        # Payload digest -> the response record that holds it: an identical payload
        # is written as a revisit pointing there (WARC 1.1's identical-payload-digest).
        self._payloads: OrderedDict[str, Referent] = OrderedDict()
        self.crawler: Crawler | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> PageStorePipeline:
        settings = crawler.settings
        pipeline = cls(
            open_store(data_path(settings, "STORE_URI"), settings),
            crawler.stats,
            settings.getint("STORE_ROLL_BYTES", defaults.STORE_ROLL_BYTES),
            settings.getfloat("STORE_ROLL_SECONDS", defaults.STORE_ROLL_SECONDS),
            crawler.signals,
            settings.getint("STORE_GZIP_LEVEL", defaults.STORE_GZIP_LEVEL),
            PageIndex(data_path(settings, "STORE_INDEX_DIR")),
            settings.getfloat("STORE_FSYNC_INTERVAL", defaults.STORE_FSYNC_INTERVAL),
            outcomes=CrawlContext.of(crawler).outcomes,
        )
        pipeline.space = StoreSpaceWatch(
            pipeline.store.writes_to, crawler.stats, crawler.signals,
            settings.getfloat("STORE_FULL_PROBE_INTERVAL", defaults.STORE_FULL_PROBE_INTERVAL),
            settings.getfloat("STORE_FULL_TIMEOUT", defaults.STORE_FULL_TIMEOUT),
            lambda reason: deferred_from_coro(crawler.engine.close_spider_async(reason=reason)),
            settings.getint("STORE_MIN_FREE", defaults.STORE_MIN_FREE),
        )
        pipeline.crawler = crawler  # its settings and crawl id name each WARC file (warcinfo)
        crawler.signals.connect(pipeline.page_captured, signal=crawler_signals.page_captured)
        crawler.signals.connect(pipeline.fetch_captured, signal=crawler_signals.fetch_captured)
        return pipeline

    def _safe(self, name: str) -> None:
        """The pages in ``name`` (a file uploaded to S3, or an fsync batch) are safe: index
        those that wait for nothing more, then tell the scheduler (it acks their URLs)."""
        ready: list[tuple[set[str], tuple[str, str, Location]]] = []
        waiting: list[tuple[set[str], tuple[str, str, Location]]] = []
        for files, row in self._unindexed:
            files.discard(name)
            (waiting if files else ready).append((files, row))
        self._unindexed = waiting
        if ready and self.index is not None:
            self.index.add(row for _, row in ready)
        if self.signals is not None:
            self.signals.send_catch_log(crawler_signals.store_safe, name=name)

    def _synced(self, name: str) -> None:
        self.stats.inc_value("store/fsync_batches")
        self._safe(name)

    def page_captured(self, page: Page, response: Response) -> None:
        """A page captured from another spider's response is stored like a yielded one."""
        try:
            self.process_item(page)
        except StoreFull:
            if response.request is not None:
                requeue(response.request)

    def fetch_captured(self, exchange: Exchange) -> None:
        """A fetch that is no page (robots.txt, a redirect, an error page): archived as is,
        unless the store has no room (``store/fetches_unarchived``)."""
        if self._warc is None:
            return
        if self.space is not None and not self.space.has_room():
            self.stats.inc_value("store/fetches_unarchived")
            return
        try:
            archived = self._warc.exchange(exchange)
        except OSError as error:
            if not is_no_space(error) or self.space is None:
                raise
            self._warc.abandon()
            self.space.became_full(error.strerror or str(error))
            self.stats.inc_value("store/fetches_unarchived")
            return
        self._warc.mark_whole()
        self._count(archived)
        self.stats.inc_value("store/fetches")

    def open_spider(self) -> None:
        self.store.recover()
        name = segment_name()
        if self.crawler is not None:
            self.info = warcinfo(self.crawler.settings, CrawlContext.of(self.crawler).crawl_id)
        self._warc = WarcFileWriter(self.store, name, self.roll_bytes, self.info, self.roll_seconds,
                                    self.gzip_level)
        self._meta = SegmentWriter(self.store, "meta", name, "jsonl.gz", self.roll_bytes,
                                   self.gzip_level, self.roll_seconds)
        if not self.store.remote:  # with S3 a page is safe once uploaded
            self._batches = FsyncBatches([self._warc, self._meta], self.fsync_interval, self._synced)
            self._batches.start()
        logger.info("Storing pages under %s", self.store.root)

    async def close_spider(self) -> None:
        if self._batches is not None:
            self._batches.stop()
        warc, meta = self._files()
        warc.close()
        meta.close()
        await self.store.wait()
        if self.index is not None:
            self.index.close()
        for key, value in self.store.counts().items():
            self.stats.set_value(f"store/{key}", value)

    def process_item(self, item: Any) -> Any:
        if not isinstance(item, Page):
            return item
        if self.space is not None and not self.space.has_room():
            raise StoreFull(f"not stored, the store has no room: {item.url}")
        warc, meta = self._files()
        start = self.clock.now()
        try:
            awaiting = self._store(item)
        except OSError as error:
            if not is_no_space(error) or self.space is None:
                raise
            # What this page wrote is cut off; the next page starts new files.
            warc.abandon()
            meta.abandon()
            self.space.became_full(error.strerror or str(error))
            raise StoreFull(f"not stored, the store has no room: {item.url}") from None
        warc.mark_whole()
        meta.mark_whole()
        self.outcomes.stored(item, awaiting, item.revisit_state)
        self.clock.add("store", start)
        return item

    def _files(self) -> tuple[WarcFileWriter, SegmentWriter]:
        """The WARC and metadata writers, which ``open_spider`` makes."""
        if self._warc is None or self._meta is None:
            raise RuntimeError("the page store is not open: open_spider makes its files")
        return self._warc, self._meta

    def _count(self, archived: Archived, more: int = 0) -> None:
        self.stats.inc_value("store/warc_bytes", archived.location.length + archived.request_length + more)
        self.stats.inc_value("store/request_bytes", archived.request_length)

    def _remember(self, digest: str | None, referent: Referent) -> None:
        if digest is None:
            return
        self._payloads[digest] = referent
        self._payloads.move_to_end(digest)
        if len(self._payloads) > PAYLOADS_REMEMBERED:
            self._payloads.popitem(last=False)

    @staticmethod
    def _last_referent(item: Page) -> Referent | None:
        """The record holding the payload of the page's last visit, as its state keeps it."""
        record = (item.last_visit or {}).get("record")
        if not (isinstance(record, list) and len(record) == 3):
            return None
        return Referent(*record)

    def _archive(self, item: Page, exchange: Exchange, digest: str) -> tuple[Archived, Location | None]:
        """Write the page's records: (its response or revisit record, its text's record)."""
        warc, _ = self._files()
        if item.revisit in (NOT_MODIFIED, UNCHANGED):  # its text is stored under its last visit
            if item.revisit == NOT_MODIFIED:
                profile = NOT_MODIFIED_PROFILE
            elif (item.last_visit or {}).get("digest") == digest:
                profile = IDENTICAL_PROFILE
            else:
                profile = SAME_TEXT_PROFILE
            self.stats.inc_value("store/revisits")
            return warc.revisit(exchange, profile, self._last_referent(item)), None
        if item.duplicate_of:  # its text is stored under the page it repeats
            original = self._payloads.get(digest)
            if original is not None:
                profile = IDENTICAL_PROFILE
            else:
                profile = SAME_TEXT_PROFILE if item.duplicate_kind == "exact" else NEAR_TEXT_PROFILE
                original = Referent(item.duplicate_of, "")
            self.stats.inc_value("store/duplicates")
            return warc.revisit(exchange, profile, original), None
        archived = warc.exchange(exchange)
        self._remember(archived.digest, Referent(exchange.url, archived.date, archived.record_id))
        text = warc.conversion(exchange.url, item.text, archived)
        self.stats.inc_value("store/pages")
        self.stats.inc_value("store/html_bytes", len(item.html))
        return archived, text

    def _store(self, item: Page) -> set[str]:
        """Write the page's records; what it waits for to be safe (uploads, an fsync batch)."""
        exchange = item.wire or page_exchange(item)
        item.wire = None  # its bytes are written: not held with the item
        digest = payload_digest(exchange.body)
        archived, text = self._archive(item, exchange, digest)
        self._count(archived, text.length if text else 0)
        item.stored = page_record(item, archived.location.as_dict(), text.as_dict() if text else None,
                                  None if item.duplicate_of and item.revisit not in (NOT_MODIFIED, UNCHANGED)
                                  else digest)
        if item.revisit_state is not None:  # the next visit compares its payload with this one
            last = item.last_visit or {}
            item.revisit_state["digest"] = last.get("digest") if item.revisit == NOT_MODIFIED else digest
            holder = archived.holder  # where a revisit finding it unchanged points
            item.revisit_state["record"] = None if holder is None else [
                holder.url, holder.date, holder.record_id]
        line = json.dumps(item.stored, ensure_ascii=False, separators=(",", ":")) + "\n"
        meta = self._files()[1].append(line.encode("utf-8"))
        # An unchanged revisit stays out of the index: the version it points to holds the body.
        row = None if item.revisit in (NOT_MODIFIED, UNCHANGED) else (item.url, self.root, meta)
        if self._batches is None:  # S3: safe once its files are uploaded (a roll may split them)
            awaiting = {item.stored["warc"]["file"], meta.file, *([text.file] if text else [])}
        else:
            batch = self._batches.written()
            awaiting = {batch} if batch else set()
        if row is not None and awaiting:
            self._unindexed.append((set(awaiting), row))
        elif row is not None and self.index is not None:
            self.index.add([row])
        return awaiting
