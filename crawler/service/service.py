"""The crawl service's operations, apart from HTTP: start, list, describe and stop crawls,
find stored pages, and a watcher thread that follows each crawl to its end."""

from __future__ import annotations

import json
import logging
import secrets
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from crawler import defaults
from crawler.commands import crawl_frontier
from crawler.extensions.bound import stats_snapshot_dir
from crawler.net.resolver import policy_from_settings
from crawler.paths import data_path
from crawler.scheduling.codec import with_attempts_reset
from crawler.service.backends import LocalBackend
from crawler.service.counts import FrontierReader, recent_problems
from crawler.service.crawl_stats import CrawlStats, read_crawl_stats
from crawler.service.registry import ENDED, Crawl, Registry
from crawler.service.security import check_seed_addresses
from crawler.service.security import seed_resolver as seed_resolver_of
from crawler.service.spec import parse_spec
from crawler.store.files import TornRecord, open_store
from crawler.store.index import PageIndex, read_metadata
from crawler.store.warc import read_page
from crawler.urls.normalize import UrlNormalizer

if TYPE_CHECKING:
    import dns.resolver
    from scrapy.settings import BaseSettings

    from crawler.net.addresses import AddressPolicy
    from crawler.service.backends import ScrapydBackend
    from crawler.store.files import LocalStore
    from crawler.store.s3 import S3Store

logger = logging.getLogger(__name__)
SAMPLES_SHOWN = 300
LOG_LINES_SHOWN = 40


class NotFound(LookupError):
    """No such crawl or page (HTTP 404)."""


class Conflict(RuntimeError):
    """The crawl is not in a state that allows it (HTTP 409)."""


class TooManyCrawls(RuntimeError):
    """``SERVE_MAX_CRAWLS`` run and ``SERVE_MAX_QUEUED`` wait already (HTTP 429)."""


def new_crawl_id() -> str:
    """``20261203-154500-3fa9c1``: sortable by start, unique, safe as a file name."""
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + secrets.token_hex(3)


def iso(seconds: float | None) -> str | None:
    return None if seconds is None else time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


class CrawlService:
    """The crawls under one data directory, run by ``backend``: at most ``max_crawls`` at
    once, ``max_queued`` more waiting their turn (state ``queued``, not yet started)."""

    def __init__(self, settings: BaseSettings, data_dir: Path, backend: LocalBackend | ScrapydBackend,
                 poll_interval: float, max_crawls: int = 2,
                 max_queued: int = defaults.SERVE_MAX_QUEUED, seed_policy: AddressPolicy | None = None,
                 seed_resolver: dns.resolver.Resolver | None = None) -> None:
        self.settings = settings  # with DATA_DIR set to data_dir
        self.data_dir = data_dir
        self.backend = backend
        self.poll_interval = poll_interval
        self.max_crawls = max_crawls
        self.max_queued = max_queued
        self.seed_policy = seed_policy or policy_from_settings(settings)
        self.seed_resolver = seed_resolver or seed_resolver_of(settings)
        self.registry = Registry(data_dir / "serve" / "registry.sqlite")
        self.reader = FrontierReader(settings)
        self.index = PageIndex(data_path(settings, "STORE_INDEX_DIR"))
        self.normalize = UrlNormalizer.from_settings(settings)
        self._stores: dict[str, LocalStore | S3Store] = {}
        self._admission = threading.Lock()  # one decision at a time on who runs
        self._stop = threading.Event()
        self._watcher = threading.Thread(target=self._watch, name="crawl-watcher", daemon=True)

    # ---------------------------------------------------------------- crawls

    def start_crawl(self, body: bytes) -> Crawl:
        """Check the request (``BadRequest``, seeds through the address guard) and start its
        crawl, or queue it when ``max_crawls`` run (``TooManyCrawls`` past ``max_queued``)."""
        spec = parse_spec(body, self.settings)
        self.backend.check(spec)
        check_seed_addresses(spec["seeds"], self.seed_policy, self.seed_resolver)
        crawl = Crawl(new_crawl_id(), spec)
        with self._admission:
            if self._waiting() >= self.max_queued and self._running() >= self.max_crawls:
                raise TooManyCrawls(f"{self.max_crawls} crawls run and {self.max_queued} wait already "
                                    "(SERVE_MAX_CRAWLS, SERVE_MAX_QUEUED): try again when one ends")
            self.registry.add(crawl)
            self._admit()
        logger.info("Crawl %s accepted (%s): %s", crawl.crawl_id, self.backend.name, spec["seeds"])
        return self.crawl(crawl.crawl_id)

    def _running(self) -> int:
        """Crawls handed to the back end and not ended (a scrapyd job may still be pending)."""
        return sum(c.started_at is not None for c in self.registry.active())

    def _waiting(self) -> int:
        return sum(c.started_at is None for c in self.registry.active())

    def _admit(self) -> None:
        """Start the oldest waiting crawls while fewer than ``max_crawls`` run (under the lock)."""
        for crawl in self.registry.active():
            if self._running() >= self.max_crawls:
                return
            if crawl.started_at is not None:
                continue
            try:
                values = self.backend.start(crawl)
            except (OSError, RuntimeError, ValueError) as error:
                logger.error("Crawl %s could not start: %s", crawl.crawl_id, error)
                self.registry.update(crawl.crawl_id, state="failed", error=f"could not start: {error}",
                                     finished_at=time.time())
                continue
            self.registry.update(crawl.crawl_id, started_at=time.time(), **values)
            logger.info("Crawl %s started", crawl.crawl_id)

    def crawl(self, crawl_id: str) -> Crawl:
        crawl = self.registry.get(crawl_id)
        if crawl is None:
            raise NotFound(f"no crawl {crawl_id!r}")
        return crawl

    def stop_crawl(self, crawl_id: str) -> Crawl:
        with self._admission:
            crawl = self.crawl(crawl_id)
            if crawl.state not in ENDED:
                if crawl.started_at is None:  # still waiting its turn: it never runs
                    self.registry.update(crawl_id, state="stopped", stop_requested=1, finished_at=time.time())
                else:
                    self.registry.update(crawl_id, stop_requested=1)
                    self.backend.stop(crawl)
        return self.crawl(crawl_id)

    def resume_crawl(self, crawl_id: str) -> Crawl:
        """Run an ended crawl again with its id, seeds and settings: its frontier goes on
        where it stopped (a queue slot like a new crawl; ``Conflict`` while it is active)."""
        with self._admission:
            crawl = self.crawl(crawl_id)
            if crawl.state not in ENDED:
                raise Conflict(f"crawl {crawl_id} is {crawl.state}: only an ended crawl can be resumed")
            if self._waiting() >= self.max_queued and self._running() >= self.max_crawls:
                raise TooManyCrawls(f"{self.max_crawls} crawls run and {self.max_queued} wait already")
            self.registry.update(crawl_id, state="queued", stop_requested=0, error=None, exit_status=None,
                                 pid=None, job=None, started_at=None, finished_at=None)
            self._admit()
        logger.info("Crawl %s resumed", crawl_id)
        return self.crawl(crawl_id)

    def requeue(self, crawl_id: str, urls: list[str] | None) -> int:
        """Queue dead letters again (those of ``urls``, or all) with a fresh retry chain;
        how many. An embedded crawl's frontier is locked while it runs: ``Conflict``."""
        crawl = self.crawl(crawl_id)
        if not self.reader.redis and crawl.state not in ENDED:
            raise Conflict(f"crawl {crawl_id} is {crawl.state}: stop it first (its state file is in use), "
                           "requeue, then resume it")
        try:
            frontier = crawl_frontier([crawl_id], self.settings)
        except Exception as error:  # UsageError: no state yet, or held by a crawl started elsewhere
            raise Conflict(str(error)) from None
        try:
            wanted = None if urls is None else set(urls)
            queued = sum(frontier.requeue_dead(letter, with_attempts_reset(letter.request))
                         for letter in frontier.dead_letters()
                         if wanted is None or _letter_url(letter.request) in wanted)
            frontier.commit()
        finally:
            frontier.close()
        logger.info("Crawl %s: %d dead letters queued again", crawl_id, queued)
        return queued

    def counts(self, crawl: Crawl) -> dict:
        return self.reader.counts(crawl.crawl_id)

    def describe(self, crawl: Crawl) -> dict:
        """The JSON of ``GET /crawls/{id}``: read afresh each time, so a crawl resumed
        outside the service (``scrapy crawl web -s CRAWL_ID=...``) shows its numbers."""
        counts = {k: v for k, v in self.counts(crawl).items() if k != "fetch_seconds"}
        end = crawl.finished_at or time.time()
        return {"crawl_id": crawl.crawl_id, "state": crawl.state, "backend": self.backend.name,
                **counts, "seeds": crawl.spec["seeds"], "scope": crawl.spec["scope"],
                "max_pages": crawl.spec["max_pages"], "settings": crawl.spec["settings"],
                "created_at": iso(crawl.created_at), "started_at": iso(crawl.started_at),
                "finished_at": iso(crawl.finished_at), "exit_status": crawl.exit_status,
                "error": crawl.error,
                "elapsed": None if crawl.started_at is None else round(end - crawl.started_at, 1)}

    def _stats(self, crawl_id: str) -> CrawlStats:
        return read_crawl_stats(self.settings, crawl_id, live_within=max(10.0, 5 * self.poll_interval))

    def activity(self, crawl_id: str) -> dict:
        """What the console shows of a crawl beyond its counts: fetches over time, its
        stats (status codes, bytes, refusals, duplicates), what bounds it (computed from
        its measures), the top hosts, its dead letters and the tail of its log."""
        crawl = self.crawl(crawl_id)
        samples = self.registry.samples(crawl_id, SAMPLES_SHOWN)
        log = self.backend.log(crawl)
        stats = self._stats(crawl_id)
        return {"crawl_id": crawl_id,
                "samples": [{"at": at, "fetched": fetched, "stored": stored}
                            for at, fetched, stored in samples],
                "stats": stats.summary(), "bound": stats.bound(),
                "hosts": self.reader.hosts(crawl_id), "dead_letters": self.reader.dead_letters(crawl_id),
                "errors": recent_problems(log), "log": log.splitlines()[-LOG_LINES_SHOWN:]}

    def metrics_rows(self) -> list[tuple[Crawl, dict, dict, str | None]]:
        """(crawl, frontier counts, stats counters, bound verdict while it runs) of every crawl."""
        rows = []
        for crawl in self.registry.all():
            stats = self._stats(crawl.crawl_id)
            bound = stats.bound()
            verdict = None if bound is None else bound["bound"]
            rows.append((crawl, self.counts(crawl), stats.counters, verdict))
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
        self._follow_outside_runs()
        for crawl in self.registry.active():
            if crawl.started_at is None:  # waiting its turn
                continue
            counts = self.reader.counts(crawl.crawl_id)
            last = self.registry.samples(crawl.crawl_id, 1)
            if not last or last[0][1:] != (counts["fetched"], counts["stored"]):
                self.registry.add_sample(crawl.crawl_id, time.time(), counts["fetched"], counts["stored"])
            ended = self.backend.poll(crawl)
            if ended is None:
                continue
            if ended.get("state") == "failed":  # its own stats may know better than the log
                reason = self._stats(crawl.crawl_id).finish_reason
                if reason is not None:
                    ended |= {"state": "finished" if reason != "shutdown" else "stopped", "error": None}
            if ended.get("state") in ENDED:
                ended["finished_at"] = time.time()
                logger.info("Crawl %s %s", crawl.crawl_id, ended["state"])
            self.registry.update(crawl.crawl_id, **ended)
        with self._admission:
            self._admit()

    def _follow_outside_runs(self) -> None:
        """An ended crawl run again outside the service (``scrapy crawl web -s
        CRAWL_ID=<id>``, as docs/service.md says) is running again: its process writes
        fresh stats snapshots. The service follows it as its own, so Stop works on it."""
        if not isinstance(self.backend, LocalBackend):
            return
        for crawl in self.registry.all():
            if crawl.state not in ENDED or not self._written_since(crawl):
                continue
            pid = self._stats(crawl.crawl_id).live_pid
            if pid is None or pid == crawl.pid or not self.backend.runs(crawl.crawl_id, pid):
                continue
            logger.info("Crawl %s runs again outside the service (pid %d): following it", crawl.crawl_id, pid)
            self.registry.update(crawl.crawl_id, state="running", pid=pid, stop_requested=0, error=None,
                                 exit_status=None, started_at=time.time(), finished_at=None)

    def _written_since(self, crawl: Crawl) -> bool:
        """Whether a snapshot of the crawl was written after it ended (a cheap stat of its
        directory, which each atomic replace touches), before any file is read."""
        try:
            changed = stats_snapshot_dir(self.settings, crawl.crawl_id).stat().st_mtime
        except OSError:
            return False
        return changed > (crawl.finished_at or 0) - 1

    def close(self) -> None:
        self._stop.set()
        if self._watcher.is_alive():
            self._watcher.join(timeout=10)
        self.registry.close()
        self.index.close()


def _letter_url(request: str) -> str:
    return json.loads(request)["url"]
