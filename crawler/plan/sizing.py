"""How big a crawl must be to meet its target: pure arithmetic, no I/O.

From the target (pages kept fresh, how often shares of them change, page size, fetch
latency, politeness gap, URLs discovered, Bloom false-positive rate) to the rates
and sizes that bound it: fetch rate, connections in flight (Little's law: rate x
latency), back queues (rate x gap: hosts that must be ready at once, each serving
one page per gap), bandwidth, the seen set's memory, workers at a measured
per-worker rate, and DNS lookups.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from crawler import defaults

__all__ = ["Plan", "Target", "parse_classes", "plan", "report"]

SECONDS_PER_DAY = 86_400
FINGERPRINT_BYTES = 8  # the seen set's exact encoding: one 64-bit fingerprint per URL


def parse_classes(text: str) -> tuple[tuple[float, float], ...]:
    """``"10%:1,30%:7,60%:30"`` (share of the pages : days between visits) as
    ((0.1, 1.0), (0.3, 7.0), (0.6, 30.0)); shares may be fractions (``0.1:1``)."""
    classes = []
    for part in text.split(","):
        share, _, days = part.strip().partition(":")
        try:
            value, interval = float(share.rstrip("%")) / (100 if share.endswith("%") else 1), float(days)
        except ValueError:  # a share or a number of days that is no number
            value = interval = math.nan
        if not (interval > 0 and 0 < value <= 1):  # NaN fails both
            raise ValueError(f"class {part.strip()!r}: want SHARE:DAYS, e.g. 10%:1")
        classes.append((value, interval))
    if abs(sum(share for share, _ in classes) - 1) > 1e-6:
        raise ValueError(f"shares add up to {sum(s for s, _ in classes):.0%}, not 100%")
    return tuple(classes)


@dataclass(frozen=True)
class Target:
    """What the crawl must do. The defaults size a worked example: a billion pages kept
    fresh, 10% changing daily, 30% weekly and 60% monthly."""

    pages: float = 1e9  # pages kept fresh
    classes: tuple[tuple[float, float], ...] = ((0.1, 1.0), (0.3, 7.0), (0.6, 30.0))  # (share, days)
    page_bytes: float = 100e3  # average page (HTML)
    latency: float = 0.5  # seconds per fetch, DNS cached, connection setup included
    gap_factor: float = 10.0  # POLITENESS_DELAY_FACTOR
    min_gap: float = 1.0  # POLITENESS_MIN_DELAY
    urls: float = 10e9  # distinct URLs discovered (the seen set's size)
    url_bytes: float = 80.0  # an average URL, for the set of strings
    false_positive_rate: float = 0.01  # SEEN_SET_ERROR_RATE of a Bloom seen set
    worker_rate: float = 0.0  # pages/s one worker sustains, as measured (0: not given)
    workers: int = 0  # worker processes, when known (0: rate / worker_rate)
    dns_ttl: float = 300.0  # a typical DNS record's TTL, seconds


@dataclass(frozen=True)
class Plan:
    """The sizes a :class:`Target` needs (rates per second, sizes in bytes)."""

    fetches_per_day: float
    fetch_rate: float
    connections: float
    gap: float
    back_queues: float
    bandwidth: float
    seen_strings: float
    seen_exact: float
    bloom_bits_per_url: float
    seen_bloom: float
    workers: int | None
    dns_shared: float  # lookups/s through one cache shared by every worker
    dns_per_worker: float | None  # lookups/s when each worker process keeps its own cache


def dns_lookups(rate: float, cycle: float, caches: int, ttl: float) -> float:
    """Lookups/s when the fetches of a host (one every ``cycle`` seconds) are spread over
    ``caches`` caches: a cache sees the host every ``caches x cycle`` seconds and asks
    again at the first visit after its answer expired, so once every ttl + caches x cycle
    seconds; the hosts in cycle at once are rate x cycle (Little's law)."""
    kept = min(max(ttl, defaults.DNS_MIN_TTL), defaults.DNS_MAX_TTL)
    return rate * cycle * caches / (kept + caches * cycle)


def plan(target: Target) -> Plan:
    fetches_per_day = sum(target.pages * share / days for share, days in target.classes)
    rate = fetches_per_day / SECONDS_PER_DAY
    gap = max(target.min_gap, target.gap_factor * target.latency)
    bits = -math.log(target.false_positive_rate) / math.log(2) ** 2  # optimal Bloom filter
    workers = target.workers or (math.ceil(rate / target.worker_rate) if target.worker_rate > 0 else None)
    cycle = gap + target.latency
    return Plan(
        fetches_per_day=fetches_per_day,
        fetch_rate=rate,
        connections=rate * target.latency,
        gap=gap,
        back_queues=rate * gap,
        bandwidth=rate * target.page_bytes,
        seen_strings=target.urls * target.url_bytes,
        seen_exact=target.urls * FINGERPRINT_BYTES,
        bloom_bits_per_url=bits,
        seen_bloom=target.urls * bits / 8,
        workers=workers,
        dns_shared=dns_lookups(rate, cycle, 1, target.dns_ttl),
        dns_per_worker=dns_lookups(rate, cycle, workers, target.dns_ttl) if workers else None,
    )


def _bytes(n: float) -> str:
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("KB", 1e3)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n:.0f} B"


def report(target: Target, result: Plan) -> list[str]:
    """The plan as the lines ``scrapy plan`` prints."""
    rows = [
        (
            "fetches per day",
            f"{result.fetches_per_day:,.0f}",
            "pages x share / days, summed over the change classes",
        ),
        ("fetch rate", f"{result.fetch_rate:,.0f} pages/s", "fetches per day / 86,400"),
        (
            "connections in flight",
            f"{result.connections:,.0f}",
            f"Little's law: rate x latency ({target.latency:g} s)",
        ),
        (
            "politeness gap",
            f"{result.gap:g} s",
            f"max(min gap {target.min_gap:g} s, {target.gap_factor:g} x latency)",
        ),
        ("back queues", f"{result.back_queues:,.0f}", "hosts ready at once: rate x gap"),
        (
            "bandwidth",
            f"{_bytes(result.bandwidth)}/s = {result.bandwidth * 8 / 1e9:.2f} Gbit/s",
            f"rate x page size ({_bytes(target.page_bytes)})",
        ),
        (
            "seen set, URL strings",
            _bytes(result.seen_strings),
            f"{target.urls:,.0f} URLs x {target.url_bytes:g} B",
        ),
        (
            "seen set, exact",
            _bytes(result.seen_exact),
            f"{FINGERPRINT_BYTES}-byte fingerprints (SEEN_SET = exact)",
        ),
        (
            "seen set, Bloom",
            _bytes(result.seen_bloom),
            f"{result.bloom_bits_per_url:.2f} bits/URL at {target.false_positive_rate:.2%} false positives "
            f"(about {target.urls * target.false_positive_rate:,.0f} new URLs skipped)",
        ),
    ]
    if result.workers is not None:
        why = "given" if target.workers else f"rate / {target.worker_rate:g} pages/s per worker (measured)"
        rows.append(("workers", f"{result.workers:,}", why))
    rows.append(
        (
            "DNS lookups, one cache",
            f"{result.dns_shared:,.0f}/s",
            f"a host in cycle asked once per TTL ({target.dns_ttl:g} s) + a cycle; one cache for all workers",
        )
    )
    if result.dns_per_worker is not None:
        rows.append(
            (
                "DNS lookups, a cache each",
                f"{result.dns_per_worker:,.0f}/s",
                f"each of the {result.workers:,} workers keeping its own cache (GuardedResolver)",
            )
        )
    width = max(len(name) for name, _, _ in rows)
    value_width = max(len(value) for _, value, _ in rows)
    return [f"{name:<{width}}  {value:>{value_width}}   {why}" for name, value, why in rows]
