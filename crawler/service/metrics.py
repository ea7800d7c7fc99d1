"""``GET /metrics``: every crawl's frontier counts in Prometheus's text format.

A custom collector (prometheus-client) reads the counts at scrape time, so the numbers
are the frontier's, never a copy that could drift; the crawl id is a label.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric

from crawler.service.counts import histogram
from crawler.service.registry import STATES

# name, help, type, count key
_SERIES = (
    ("crawler_fetched", "Fetches that got a response", "counter", "fetched"),
    ("crawler_failed", "Fetches that got no response (timeouts, refused connections)", "counter", "failed"),
    ("crawler_stored", "Pages stored", "counter", "stored"),
    ("crawler_queued", "URLs queued", "gauge", "queued"),
    ("crawler_dead_letters", "URLs given up after every retry", "gauge", "dead_letters"),
    ("crawler_hosts_active", "Hosts with URLs queued", "gauge", "hosts_active"),
)


class CrawlCollector:
    """Collects from ``crawls()``: (crawl id, state, counts, bound verdict or None) for each crawl."""

    def __init__(self, crawls: Callable[[], list[tuple[str, str, dict, str | None]]]) -> None:
        self.crawls = crawls

    def collect(self) -> Iterator[Metric]:
        crawls = self.crawls()
        for name, doc, kind, key in _SERIES:
            family = (CounterMetricFamily if kind == "counter" else GaugeMetricFamily)(
                name, doc, labels=["crawl_id"])
            for crawl_id, _, counts, _ in crawls:
                family.add_metric([crawl_id], counts[key])
            yield family
        state = GaugeMetricFamily("crawler_crawl_state", "1 for the crawl's current state",
                                  labels=["crawl_id", "state"])
        latency = HistogramMetricFamily("crawler_fetch_seconds", "Fetch time, from request to response",
                                        labels=["crawl_id"])
        bound = GaugeMetricFamily("crawler_bound", "1 for what bounds a running crawl now (its last verdict)",
                                  labels=["crawl_id", "bound"])
        for crawl_id, current, counts, verdict in crawls:
            for name in STATES:
                state.add_metric([crawl_id, name], float(name == current))
            buckets, total = histogram(counts["fetch_seconds"])
            latency.add_metric([crawl_id], buckets, total)
            if verdict is not None:
                bound.add_metric([crawl_id, verdict], 1.0)
        yield state
        yield latency
        yield bound


def metrics_text(crawls: Callable[[], list[tuple[str, str, dict, str | None]]]) -> bytes:
    """The exposition text of the crawls' metrics."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(CrawlCollector(crawls))
    return generate_latest(registry)
