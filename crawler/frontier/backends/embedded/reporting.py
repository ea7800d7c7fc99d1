"""The embedded frontier's counts and views: what is left to crawl, what is done, the gauges
published as stats, and where its state is for log lines."""

from __future__ import annotations

from crawler.frontier.backends.embedded.store import DONE, REVISIT


class EmbeddedReporting:
    """Counts of ``EmbeddedFrontier``'s state (mixed into it: it reads its connection, hosts,
    leases and counters)."""

    @property
    def leased(self) -> int:
        return len(self._leases)

    def pending_counts(self) -> tuple[int, int, int, int]:
        return self.queued, len(self._leases), self.waiting, self.revisits  # one thread: one instant

    def has_pending(self) -> bool:
        return any(self.pending_counts()[:3])

    def done_count(self) -> int:
        return self.db.execute("SELECT count(*) FROM urls WHERE state IN (?, ?)",
                               (DONE, REVISIT)).fetchone()[0]

    def gauges(self, now: float) -> dict[str, int]:
        """Hosts with queued URLs (active), of them waiting out a gap, and URLs queued/leased."""
        active = [h for h in self._hosts.values() if any(h.queued)]
        return {
            "hosts/active": len(active),
            "hosts/waiting": sum(1 for h in active if not h.group.busy and h.group.next_allowed > now),
            "hosts/held": sum(1 for h in active if h.held),
            "fetching": sum(1 for lease in self._leases.values() if lease.fetching),
            "hosts/backing_off": sum(1 for h in active if h.group.times.backoff),
            "queued": self.queued,
            "waiting": self.waiting,
            "revisits": self.revisits,
            "leased": self.leased,
        }

    def describe(self) -> str:
        """Where the state is, for log lines."""
        return str(self.db_path.parent)
