"""The embedded frontier's counts and views: what is left to crawl, what is done, the gauges
published as stats, and where its state is for log lines."""

from __future__ import annotations

from crawler.frontier.backends.embedded.hosts import HostRecords
from crawler.frontier.backends.embedded.parked import ParkedUrls
from crawler.frontier.backends.embedded.store import UrlStore


class EmbeddedReporting:
    """Counts of ``EmbeddedFrontier``'s state, read from its store, host records and parked URLs."""

    def __init__(self, store: UrlStore, hosts: HostRecords, parked: ParkedUrls) -> None:
        self.store = store
        self.hosts = hosts
        self.parked = parked

    def pending_counts(self) -> tuple[int, int, int, int]:
        # one thread: one instant
        return self.hosts.queued, len(self.hosts.leases), self.parked.waiting, self.parked.revisits

    def has_pending(self) -> bool:
        return bool(self.hosts.queued or self.hosts.leases or self.parked.waiting)

    def done_count(self) -> int:
        return self.store.done_count()

    def gauges(self, now: float) -> dict[str, int]:
        """Hosts with queued URLs (active), of them waiting out a gap, and URLs queued/leased."""
        active = [h for h in self.hosts.hosts.values() if any(h.queued)]
        leases = self.hosts.leases
        return {
            "hosts/active": len(active),
            "hosts/waiting": sum(1 for h in active if not h.group.busy and h.group.next_allowed > now),
            "hosts/held": sum(1 for h in active if h.held),
            "fetching": sum(1 for lease in leases.values() if lease.fetching),
            "hosts/backing_off": sum(1 for h in active if h.group.times.backoff),
            "queued": self.hosts.queued,
            "waiting": self.parked.waiting,
            "revisits": self.parked.revisits,
            "leased": len(leases),
        }

    def describe(self) -> str:
        """Where the state is, for log lines."""
        return str(self.store.path.parent)
