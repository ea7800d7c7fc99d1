"""A crawl's own Scrapy stats, as its processes leave them in ``DATA_DIR/crawl-stats/<crawl
id>/`` (``crawler.extensions.bound``), and what the service makes of them: status codes,
bytes, refusals, duplicates, and the bound verdict, computed here from the measures."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from crawler.bound.verdict import Interval, Thresholds, verdict
from crawler.extensions.bound import stats_snapshot_dir

# Counters of each run, summed over the crawl's runs and workers (each is one file).
_SUMMED = ("downloader/", "frontier/retries", "robotstxt/", "address_guard/", "content/dropped",
           "store/duplicates", "dedup/", "response_received_count", "item_scraped_count")
_STATUS = "downloader/response_status_count/"


@dataclass
class CrawlStats:
    """The crawl's stats: summed counters, and the newest running process's last window."""

    counters: dict[str, int] = field(default_factory=dict)
    interval: dict | None = None  # the newest snapshot's measures, while its process runs
    thresholds: dict | None = None
    written_at: float | None = None
    live_pid: int | None = None  # the process writing the newest snapshot, while it runs
    finish_reason: str | None = None  # Scrapy's, once the newest snapshot's run has closed

    def status_codes(self) -> dict[str, int]:
        return {k[len(_STATUS):]: v for k, v in sorted(self.counters.items()) if k.startswith(_STATUS)}

    def prefixed(self, prefix: str) -> dict[str, int]:
        return {k[len(prefix):]: v for k, v in sorted(self.counters.items()) if k.startswith(prefix)}

    def summary(self) -> dict:
        """The console's figures."""
        c = self.counters
        return {"status_codes": self.status_codes(), "bytes": c.get("downloader/response_bytes", 0),
                "requests": c.get("downloader/request_count", 0), "retries": c.get("frontier/retries", 0),
                "dropped": self.prefixed("content/dropped/"),
                "dropped_types": self.prefixed("content/dropped_type/"),
                "robots_refused": c.get("robotstxt/forbidden", 0),
                "guard_refused": sum(self.prefixed("address_guard/refused/").values()),
                "guard_refusals": self.prefixed("address_guard/refused/"),
                "duplicates": c.get("store/duplicates", 0), "stats_at": self.written_at}

    def bound(self) -> dict | None:
        """What bounds the crawl now, from its newest window, or None when no process of
        it runs (or none has written a window yet)."""
        if self.interval is None:
            return None
        found = verdict(Interval(**self.interval), Thresholds(**(self.thresholds or {})))
        return {"bound": found.bound, "detail": found.detail}


def read_crawl_stats(settings: object, crawl_id: str, live_within: float) -> CrawlStats:
    """Sum the snapshots of every process of the crawl; the verdict's window comes from
    the newest one written within ``live_within`` seconds by a process still running."""
    result = CrawlStats()
    newest: dict | None = None
    try:
        paths = sorted(stats_snapshot_dir(settings, crawl_id).glob("*.json"))  # type: ignore[arg-type]
    except OSError:
        return result
    for path in paths:
        try:
            snapshot = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, ValueError):  # gone, or being replaced: the next poll reads it
            continue
        for name, value in snapshot.get("stats", {}).items():
            if isinstance(value, int) and name.startswith(_SUMMED):
                result.counters[name] = result.counters.get(name, 0) + value
        if newest is None or snapshot["written_at"] > newest["written_at"]:
            newest = snapshot
    if newest is not None:
        result.written_at = newest["written_at"]
        if newest.get("closed"):
            result.finish_reason = newest["stats"].get("finish_reason")
        elif time.time() - newest["written_at"] <= live_within:
            result.interval, result.thresholds = newest["interval"], newest.get("thresholds")
            result.live_pid = newest.get("pid")
    return result
