"""What the crawl's other parts learn of a host, written to the frontier as host state."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from crawler import signals as crawler_signals
from crawler.frontier.policy import PolitenessPolicy

if TYPE_CHECKING:
    from crawler.scheduling.client import FrontierClient


class HostNews:
    """One job of the scheduler: robots.txt's Crawl-delay and its fetch time, a demotion
    and a host unavailable for a while (signals of ``crawler.signals``) become frontier
    steps through ``client`` (the scheduler's)."""

    def __init__(self, client: FrontierClient, policy: PolitenessPolicy) -> None:
        self.client, self.policy = client, policy

    def connect(self, signals: Any) -> None:
        for handler, signal in (
            (self.crawl_delay, crawler_signals.robots_crawl_delay),
            (self.unavailable, crawler_signals.host_unavailable),
            (self.robots_fetched, crawler_signals.robots_fetched),
            (self.demoted, crawler_signals.host_demoted),
        ):
            signals.connect(handler, signal=signal)

    def crawl_delay(self, host: str, delay: float) -> None:
        self.client.set_crawl_delay(host, delay)

    def robots_fetched(self, host: str, seconds: float) -> None:
        """robots.txt was the host's fetch: its next one waits the policy's gap."""
        self.client.defer(host, time.time() + self.policy.adaptive_gap(seconds))

    def demoted(self, host: str, margin: int) -> None:
        self.client.demote(host, margin)

    def unavailable(self, host: str, until: float) -> None:
        """Hold the host's URLs until ``until``."""
        self.client.defer(host, until)
