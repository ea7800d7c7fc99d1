"""The crawl service's operations, apart from HTTP: start, list, describe and stop crawls,
find stored pages, and a watcher thread that follows each crawl to its end."""

from __future__ import annotations

import logging
import secrets
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from crawler.paths import data_path
from crawler.service.counts import FrontierReader, latest_bound, recent_problems
from crawler.service.registry import ENDED, Crawl, Registry
from crawler.service.spec import parse_spec
from crawler.store.files import TornRecord, open_store
from crawler.store.index import PageIndex, read_metadata
from crawler.store.warc import read_page
from crawler.urls.normalize import UrlNormalizer

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

    from crawler.service.backends import LocalBackend, ScrapydBackend
    from crawler.store.files import LocalStore
    from crawler.store.s3 import S3Store

logger = logging.getLogger(__name__)
SAMPLES_SHOWN = 300


class NotFound(LookupError):
    """No such crawl or page (HTTP 404)."""


def new_crawl_id() -> str:
    """``20261203-154500-3fa9c1``: sortable by start, unique, safe as a file name."""
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + secrets.token_hex(3)


def iso(seconds: float | None) -> str | None:
    return None if seconds is None else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


class CrawlService:
    """The crawls under one data directory, run by ``backend``."""

    def __init__(self, settings: BaseSettings, data_dir: Path, backend: LocalBackend | ScrapydBackend,
                 poll_interval: float) -> None:
        self.settings = settings  # with DATA_DIR set to data_dir
        self.data_dir = data_dir
        self.backend = backend
        self.poll_interval = poll_interval
        self.registry = Registry(data_dir / "serve" / "registry.sqlite")
        self.reader = FrontierReader(settings)
        self.index = PageIndex(data_path(settings, "STORE_INDEX_DIR"))
        self.normalize = UrlNormalizer.from_settings(settings)
        self._stores: dict[str, LocalStore | S3Store] = {}
        self._ended_counts: dict[str, dict] = {}  # counts of ended crawls do not change
        self._starting: set[str] = set()
        self._stop = threading.Event()
        self._watcher = threading.Thread(target=self._watch, name="crawl-watcher", daemon=True)

    # ---------------------------------------------------------------- crawls

    def start_crawl(self, body: bytes) -> Crawl:
        """Check the request (``BadRequest``) and start its crawl."""
        crawl = Crawl(new_crawl_id(), parse_spec(body, self.settings))
        self._starting.add(crawl.crawl_id)  # the watcher leaves it alone until it has started
        try:
            self.registry.add(crawl)
            values = self.backend.start(crawl)
            self.registry.update(crawl.crawl_id, started_at=time.time(), **values)
        except (OSError, RuntimeError, ValueError) as error:
            self.registry.update(crawl.crawl_id, state="failed", error=f"could not start: {error}",
                                 finished_at=time.time())
            raise
        finally:
            self._starting.discard(crawl.crawl_id)
        logger.info("Crawl %s started (%s): %s", crawl.crawl_id, self.backend.name, crawl.spec["seeds"])
        return self.crawl(crawl.crawl_id)

    def crawl(self, crawl_id: str) -> Crawl:
        crawl = self.registry.get(crawl_id)
        if crawl is None:
            raise NotFound(f"no crawl {crawl_id!r}")
        return crawl

    def stop_crawl(self, crawl_id: str) -> Crawl:
        crawl = self.crawl(crawl_id)
        if crawl.state not in ENDED:
            self.registry.update(crawl_id, stop_requested=1)
            self.backend.stop(crawl)
        return self.crawl(crawl_id)

    def counts(self, crawl: Crawl) -> dict:
        if crawl.crawl_id in self._ended_counts:
            return self._ended_counts[crawl.crawl_id]
        counts = self.reader.counts(crawl.crawl_id)
        if crawl.state in ENDED:
            self._ended_counts[crawl.crawl_id] = counts
        return counts

    def describe(self, crawl: Crawl) -> dict:
        """The JSON of ``GET /crawls/{id}``."""
        counts = {k: v for k, v in self.counts(crawl).items() if k != "fetch_seconds"}
        return {"crawl_id": crawl.crawl_id, "state": crawl.state, "backend": self.backend.name,
                **counts, "seeds": crawl.spec["seeds"], "scope": crawl.spec["scope"],
                "max_pages": crawl.spec["max_pages"], "settings": crawl.spec["settings"],
                "created_at": iso(crawl.created_at), "started_at": iso(crawl.started_at),
                "finished_at": iso(crawl.finished_at), "exit_status": crawl.exit_status,
                "error": crawl.error}

    def activity(self, crawl_id: str) -> dict:
        """What the dashboard shows of a crawl beyond its counts: fetches over time, the
        busiest hosts, what bounds it (its log's last verdict), recent errors."""
        crawl = self.crawl(crawl_id)
        samples = self.registry.samples(crawl_id, SAMPLES_SHOWN)
        log = self.backend.log(crawl)
        return {"crawl_id": crawl_id,
                "samples": [{"at": at, "fetched": fetched, "stored": stored}
                            for at, fetched, stored in samples],
                "hosts": self.reader.host_queues(crawl_id),
                "bound": latest_bound(log), "errors": recent_problems(log)}

    def metrics_rows(self) -> list[tuple[str, str, dict, str | None]]:
        """(crawl id, state, counts, bound verdict of a running crawl) of every crawl."""
        rows = []
        for crawl in self.registry.all():
            bound = latest_bound(self.backend.log(crawl)) if crawl.state == "running" else None
            rows.append((crawl.crawl_id, crawl.state, self.counts(crawl), bound and bound["bound"]))
        return rows

    # ---------------------------------------------------------------- pages

    def page(self, raw_url: str, content: str | None) -> tuple[dict, bytes | str | None]:
        """(metadata record, its HTML or text when asked for) of a URL, as normalised by the crawler."""
        url = self.normalize(raw_url)
        if url is None:
            raise ValueError(f"not an http(s) URL: {raw_url!r}")
        found = self.index.find(url)
        if found is None:
            raise NotFound(f"{url} is not stored")
        store = self._store(found[0])
        try:
            record = read_metadata(store, found[1])
            if content is None:
                return {**record, "store": found[0]}, None
            if record["duplicate_of"]:  # its body is the page it repeats
                original = self.index.find(record["duplicate_of"])
                if original is not None:
                    record = read_metadata(self._store(original[0]), original[1])
                    store = self._store(original[0])
            html, text = read_page(store, record)
        except TornRecord as error:  # a crash cut it: the crawl fetches the page again
            raise NotFound(f"{url}: its stored record is incomplete ({error})") from error
        return record, html if content == "html" else text

    def _store(self, root: str) -> LocalStore | S3Store:
        """The store an index row names; a local one only inside the data directory."""
        if root not in self._stores:
            if "://" not in root and not Path(root).resolve().is_relative_to(self.data_dir):
                raise NotFound(f"the page is in {root}, outside the service's data directory")
            self._stores[root] = open_store(root, self.settings)
        return self._stores[root]

    # ---------------------------------------------------------------- watcher

    def start(self) -> None:
        """Catch up with crawls that ended while the service was down, then watch."""
        self._check_active()
        self._watcher.start()

    def _watch(self) -> None:
        while not self._stop.wait(self.poll_interval):
            try:
                self._check_active()
            except Exception:  # the watcher must outlive one bad reading
                logger.exception("Watching the crawls failed; trying again")

    def _check_active(self) -> None:
        for crawl in self.registry.active():
            if crawl.crawl_id in self._starting:
                continue
            counts = self.reader.counts(crawl.crawl_id)
            last = self.registry.samples(crawl.crawl_id, 1)
            if not last or last[0][1:] != (counts["fetched"], counts["stored"]):
                self.registry.add_sample(crawl.crawl_id, time.time(), counts["fetched"], counts["stored"])
            ended = self.backend.poll(crawl)
            if ended is None:
                continue
            if ended.get("state") in ENDED:
                ended["finished_at"] = time.time()
                logger.info("Crawl %s %s", crawl.crawl_id, ended["state"])
            self.registry.update(crawl.crawl_id, **ended)

    def close(self) -> None:
        self._stop.set()
        if self._watcher.is_alive():
            self._watcher.join(timeout=10)
        self.registry.close()
        self.index.close()
