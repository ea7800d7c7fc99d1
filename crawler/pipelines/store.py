"""Write each page to the page store: WARC records and a metadata record."""

from __future__ import annotations

import json
import logging
import time
from http import HTTPStatus
from pathlib import Path
from typing import TYPE_CHECKING, Any

import scrapy

from crawler import defaults
from crawler import signals as crawler_signals
from crawler.frontier.revisit import NOT_MODIFIED, UNCHANGED
from crawler.items import Page
from crawler.paths import data_path
from crawler.stages import StageClock
from crawler.store.durable import FsyncBatches
from crawler.store.files import LocalStore, Location, SegmentWriter, open_store, segment_name
from crawler.store.index import PageIndex
from crawler.store.warc import (
    IDENTICAL_PROFILE,
    NEAR_TEXT_PROFILE,
    NOT_MODIFIED_PROFILE,
    SAME_TEXT_PROFILE,
    WarcFileWriter,
    WarcPage,
    payload_digest,
)

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.signalmanager import SignalManager
    from scrapy.statscollectors import StatsCollector

    from crawler.store.s3 import S3Store

logger = logging.getLogger(__name__)


def iso_time(seconds: float) -> str:
    """``2026-12-02T11:10:05.123Z``: UTC, milliseconds."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{int(seconds % 1 * 1000):03d}Z"


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

    ``warc/<segment>.warc.gz``: per page a WARC/1.1 ``response`` record (the HTTP
    response, body as decoded) and a ``conversion`` record (the cleaned text), or for a
    duplicate a ``revisit`` record pointing at the page it repeats; each record its own
    gzip member. ``meta/<segment>.jsonl.gz``: one JSON record per page with where its
    records are (file, offset, length). Files roll at ``STORE_ROLL_BYTES`` or
    ``STORE_ROLL_SECONDS``; with an ``s3://`` store each complete file is uploaded.
    Compressed by ISA-L at ``STORE_GZIP_LEVEL``. A page is safe, and its URL acked to
    the frontier and indexed in ``STORE_INDEX_DIR`` (``crawler.store.index``), only once
    its records are durable: on a local disk once fsync'd (in batches, every
    ``STORE_FSYNC_INTERVAL`` seconds: ``crawler.store.durable``), with S3 once both its
    files are uploaded. Opening the store first repairs what a killed run left
    (``crawler.store.repair``).
    Stats: ``store/pages``, ``store/duplicates``, ``store/html_bytes``,
    ``store/warc_bytes``, ``store/fsync_batches``.
    """

    def __init__(self, store: LocalStore | S3Store, stats: StatsCollector, roll_bytes: int,
                 roll_seconds: float = 0, signals: SignalManager | None = None,
                 gzip_level: int = defaults.STORE_GZIP_LEVEL, index: PageIndex | None = None,
                 fsync_interval: float = defaults.STORE_FSYNC_INTERVAL) -> None:
        self.store = store
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
        self._warc: WarcFileWriter | None = None
        self._meta: SegmentWriter | None = None

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
        )
        crawler.signals.connect(pipeline.page_captured, signal=crawler_signals.page_captured)
        return pipeline

    def _safe(self, name: str) -> None:
        """The pages in ``name`` (a file uploaded to S3, or an fsync batch) are safe: index
        those that wait for nothing more, then tell the scheduler (it acks their URLs)."""
        ready, waiting = [], []
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
        self.process_item(page)

    def open_spider(self) -> None:
        self.store.recover()
        name = segment_name()
        software = f"politecrawler (Scrapy {scrapy.__version__})"
        self._warc = WarcFileWriter(self.store, name, self.roll_bytes, software, self.roll_seconds,
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
        self._warc.close()
        self._meta.close()
        await self.store.wait()
        if self.index is not None:
            self.index.close()
        for key, value in self.store.counts().items():
            self.stats.set_value(f"store/{key}", value)

    def process_item(self, item: Any) -> Any:
        if not isinstance(item, Page):
            return item
        start = self.clock.now()
        self._store(item)
        self.clock.add("store", start)
        return item

    @staticmethod
    def _unchanged_profile(item: Page, digest: str) -> str:
        """A 304; a payload byte for byte the last visit's; else the same text only."""
        if item.revisit == NOT_MODIFIED:
            return NOT_MODIFIED_PROFILE
        if (item.last_visit or {}).get("digest") == digest:
            return IDENTICAL_PROFILE
        return SAME_TEXT_PROFILE

    def _store(self, item: Page) -> None:
        try:
            reason = HTTPStatus(item.status).phrase
        except ValueError:
            reason = ""
        fetched_at = iso_time(item.fetched_at)
        page = WarcPage(item.url, item.status, reason, item.http_headers, item.html, fetched_at)
        if item.revisit in (NOT_MODIFIED, UNCHANGED):  # its text is stored under its last visit
            digest = payload_digest(page.body)
            warc = self._warc.revisit(page, item.url, self._unchanged_profile(item, digest), digest)
            item.stored = page_record(item, warc.as_dict(), None, digest)
            self.stats.inc_value("store/revisits")
        elif item.duplicate_of:  # its text is stored under the page it repeats
            profile = SAME_TEXT_PROFILE if item.duplicate_kind == "exact" else NEAR_TEXT_PROFILE
            digest = payload_digest(page.body)
            warc = self._warc.revisit(page, item.duplicate_of, profile, digest)
            item.stored = page_record(item, warc.as_dict(), None, None)
            self.stats.inc_value("store/duplicates")
        else:
            warc, record_id, digest = self._warc.response(page)
            text = self._warc.conversion(item.url, item.text, record_id, page.fetched_at)
            item.stored = page_record(item, warc.as_dict(), text.as_dict(), digest)
            self.stats.inc_value("store/pages")
            self.stats.inc_value("store/html_bytes", len(item.html))
            self.stats.inc_value("store/warc_bytes", warc.length + text.length)
        if item.revisit_state is not None:  # the next visit compares its payload with this one
            item.revisit_state["digest"] = (
                (item.last_visit or {}).get("digest") if item.revisit == NOT_MODIFIED else digest)
        line = json.dumps(item.stored, ensure_ascii=False, separators=(",", ":")) + "\n"
        meta = self._meta.append(line.encode("utf-8"))
        # An unchanged revisit stays out of the index: the version it points to holds the body.
        row = None if item.revisit in (NOT_MODIFIED, UNCHANGED) else (item.url, self.root, meta)
        if self._batches is None:  # S3: safe once both files are uploaded
            awaiting = {item.stored["warc"]["file"], meta.file}
        else:
            batch = self._batches.written()
            awaiting = {batch} if batch else set()
        item.awaiting_store = sorted(awaiting)
        if row is None:
            return
        if awaiting:
            self._unindexed.append((awaiting, row))
        elif self.index is not None:
            self.index.add([row])
