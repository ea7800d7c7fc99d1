"""``GET /metrics``: every crawl's frontier counts and stats in Prometheus's text format,
with the service process's own (prometheus-client's process and platform collectors).

A custom collector reads the counts at scrape time, so the numbers are the frontier's and
the crawl's stats snapshots, never a copy that could drift; the crawl id is a label.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, PlatformCollector, ProcessCollector, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric

from crawler.service.counts import histogram
from crawler.service.registry import STATES

if TYPE_CHECKING:
    from crawler.service.registry import Crawl

Row = tuple["Crawl", dict, dict, "str | None"]  # crawl, frontier counts, stats counters, bound

# name, help, type, frontier count key
_SERIES = (
    ("crawler_fetched", "Fetches that got a response", "counter", "fetched"),
    ("crawler_failed", "Fetches that got no response (timeouts, refused connections)", "counter", "failed"),
    ("crawler_stored", "Pages stored", "counter", "stored"),
    ("crawler_queued", "URLs queued", "gauge", "queued"),
    ("crawler_leased", "URLs being fetched (in flight)", "gauge", "leased"),
    ("crawler_waiting", "URLs waiting for a retry", "gauge", "waiting"),
    ("crawler_seen", "URLs the frontier knows", "gauge", "seen"),
    ("crawler_dead_letters", "URLs given up after every retry", "gauge", "dead_letters"),
    ("crawler_hosts_active", "Hosts with URLs queued", "gauge", "hosts_active"),
)
# name, help, stats counter: from the crawl's own stats (summed over its runs)
_STATS_SERIES = (
    ("crawler_response_bytes", "Bytes of responses downloaded", "downloader/response_bytes"),
    ("crawler_requests", "Requests sent by the downloader", "downloader/request_count"),
    ("crawler_retries", "Fetches retried by the frontier's retry chain", "frontier/retries"),
    ("crawler_robots_refused", "Requests robots.txt forbade", "robotstxt/forbidden"),
    ("crawler_duplicates", "Pages stored as duplicates of another", "store/duplicates"),
)
_PREFIXED = (  # name, help, label, stats prefix
    ("crawler_responses", "Responses by HTTP status", "status", "downloader/response_status_count/"),
    ("crawler_guard_refused", "Connections the address guard refused, by reason", "reason",
     "address_guard/refused/"),
    ("crawler_content_dropped", "Responses dropped by content, by reason", "reason", "content/dropped/"),
    ("crawler_content_dropped_types", "Responses dropped by content, by MIME type", "type",
     "content/dropped_type/"),
)


class CrawlCollector:
    """Collects from ``rows()``: (crawl, counts, stats counters, bound or None) per crawl."""

    def __init__(self, rows: Callable[[], list[Row]]) -> None:
        self.rows = rows

    def collect(self) -> Iterator[Metric]:
        rows = self.rows()
        for name, doc, kind, key in _SERIES:
            family = (CounterMetricFamily if kind == "counter" else GaugeMetricFamily)(
                name, doc, labels=["crawl_id"])
            for crawl, counts, _, _ in rows:
                family.add_metric([crawl.crawl_id], counts[key])
            yield family
        for name, doc, key in _STATS_SERIES:
            counter = CounterMetricFamily(name, doc, labels=["crawl_id"])
            for crawl, _, stats, _ in rows:
                counter.add_metric([crawl.crawl_id], stats.get(key, 0))
            yield counter
        for name, doc, label, prefix in _PREFIXED:
            counter = CounterMetricFamily(name, doc, labels=["crawl_id", label])
            for crawl, _, stats, _ in rows:
                for key, value in sorted(stats.items()):
                    if key.startswith(prefix):
                        counter.add_metric([crawl.crawl_id, key[len(prefix):]], value)
            yield counter
        yield from self._per_crawl(rows)

    @staticmethod
    def _per_crawl(rows: list[Row]) -> Iterator[Metric]:
        state = GaugeMetricFamily("crawler_crawl_state", "1 for the crawl's current state",
                                  labels=["crawl_id", "state"])
        latency = HistogramMetricFamily("crawler_fetch_seconds", "Fetch time, from request to response",
                                        labels=["crawl_id"])
        bound = GaugeMetricFamily("crawler_bound", "1 for what bounds a running crawl now",
                                  labels=["crawl_id", "bound"])
        started = GaugeMetricFamily("crawler_started_time_seconds", "When the crawl (last) started, "
                                    "Unix time", labels=["crawl_id"])
        for crawl, counts, _, verdict in rows:
            for name in STATES:
                state.add_metric([crawl.crawl_id, name], float(name == crawl.state))
            buckets, total = histogram(counts["fetch_seconds"])
            latency.add_metric([crawl.crawl_id], buckets, total)
            if verdict is not None:
                bound.add_metric([crawl.crawl_id, verdict], 1.0)
            if crawl.started_at is not None:
                started.add_metric([crawl.crawl_id], crawl.started_at)
        yield from (state, latency, bound, started)


def metrics_registry(rows: Callable[[], list[Row]]) -> CollectorRegistry:
    """The crawls' collector with the process's (CPU, memory, file descriptors, threads
    are read from /proc) and the platform's (Python version)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(CrawlCollector(rows))
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    return registry


def metrics_text(registry: CollectorRegistry) -> bytes:
    return generate_latest(registry)
