"""The inputs of the crawl model (``scale_sim``): the web, drawn deterministically, the
shards' costs and the crawl's setup."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

from crawler.frontier.policy import PolitenessPolicy


@dataclass(frozen=True)
class Web:
    """Hosts: pages of each, seconds per fetch of each; each page links to up to
    ``fanout`` new pages of its host (page 0 is the seed)."""

    sizes: tuple[int, ...]
    latencies: tuple[float, ...]
    fanout: int = 3

    @property
    def pages(self) -> int:
        return sum(self.sizes)


def power_law_sizes(hosts: int, min_pages: int, alpha: float, max_pages: int) -> tuple[int, ...]:
    """Pages per host with a Pareto (Zipf-like) tail: the host at quantile u has
    ``min_pages x u^(-1/alpha)`` pages (capped), largest first. Deterministic."""
    return tuple(min(max_pages, math.ceil(min_pages * ((i + 0.5) / hosts) ** (-1 / alpha)))
                 for i in range(hosts))


def lognormal_latencies(hosts: int, median: float, sigma: float, seed: int) -> tuple[float, ...]:
    """Seconds per fetch of each host: lognormal quantiles, shuffled with ``seed``."""
    values = [median * math.exp(sigma * _normal_quantile((i + 0.5) / hosts)) for i in range(hosts)]
    random.Random(seed).shuffle(values)
    return tuple(values)


def _normal_quantile(p: float) -> float:
    """The standard normal's quantile (Acklam's rational approximation, error < 1.2e-9)."""
    a = (-3.969683028665376e01, 2.209460984245205e02, -2.759285104469687e02, 1.383577518672690e02,
         -3.066479806614716e01, 2.506628277459239e00)
    b = (-5.447609879822406e01, 1.615858368580409e02, -1.556989798598866e02, 6.680131188771972e01,
         -1.328068155288572e01)
    c = (-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e00, -2.549732539343734e00,
         4.374664141464968e00, 2.938163982698783e00)
    d = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e00, 3.754408661907416e00)
    if p < 0.02425 or p > 1 - 0.02425:
        q = math.sqrt(-2 * math.log(min(p, 1 - p)))
        x = (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) / \
            ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1)
        return x if p < 0.5 else -x
    q = p - 0.5
    r = q * q
    return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q / \
        (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1)


@dataclass(frozen=True)
class ShardCosts:
    """Seconds of a shard's CPU per request: a fixed part per call and a part per item.
    ``claim``: a claim script; ``report``: the fetched step (times read + written, two
    scripts); ``ack``: an ack script; ``link``: an add (seen-set check) script; ``content``:
    a page's content check, all its rounds (0: not modelled)."""

    claim_call: float = 0.0
    claim_item: float = 0.0
    report_call: float = 0.0
    report_item: float = 0.0
    ack_call: float = 0.0
    ack_item: float = 0.0
    link_call: float = 0.0
    link_item: float = 0.0
    content: float = 0.0


@dataclass(frozen=True)
class Setup:
    """The crawl's shape: shards, workers and how they talk."""

    shards: int
    workers: int
    concurrency: int  # CONCURRENT_REQUESTS of each worker
    page_rate: float  # pages/s one worker's CPU sustains
    links: int = 0  # link checks a page sends to the shards
    link_batch: bool = False  # one add call per page, not per link
    rtt: float = 0.0  # seconds for a round trip worker <-> shard
    starts: tuple[float, ...] = ()  # when each worker asks first (default: all at 0)
    ramp: float = 0.0  # hosts first fall due spread over this many seconds (0: all at once)
    policy: PolitenessPolicy = field(default_factory=PolitenessPolicy)
