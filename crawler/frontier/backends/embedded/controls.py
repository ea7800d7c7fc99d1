"""The embedded frontier's controls of one host: its politeness key, a hold until a time, its
Crawl-delay, its demotion (and the budget drop it may cause), its counts, and what a leaving
worker gives back to it."""

from __future__ import annotations

import logging

from crawler.frontier.backends.embedded.hosts import Group, Host
from crawler.frontier.backends.embedded.store import DONE, QUEUED, signed
from crawler.frontier.policy import RetryPolicy, allowed_after_leave

logger = logging.getLogger(__name__)


class HostControls:
    """Per-host controls of ``EmbeddedFrontier`` (mixed into it: it uses its connection,
    hosts, groups and scheduling)."""

    def set_politeness_key(self, name: str, key: str) -> None:
        """Put host ``name`` under politeness key ``key`` (e.g. its IP address) and let
        it be fetched. Hosts with one key share one fetch at a time and one gap. A host
        keeps the first key it is given (workers may get other addresses from round-robin
        DNS); a fetch in flight moves with it to its key."""
        host = self._host(name)
        old = host.group
        if old.key != key and old.key == name:
            group = self._groups.get(key)
            if group is None:
                group = self._groups[key] = Group(key, old.times, old.next_allowed)
            old.members.discard(name)
            group.members.add(name)
            host.group = group
            group.busy, old.busy = group.busy + old.busy, 0  # its own group: only its fetch
        host.held = False
        self._schedule(host)

    def leave(self, now: float, retry: RetryPolicy) -> int:
        """The leases still held are queued again now (as the next run would on open); each
        host keeps its hold (``allowed_after_leave``). Returns how many."""
        leases = list(self._leases.items())
        for fp, lease in leases:
            host = self._hosts[lease.host]
            group = host.group
            group.next_allowed = allowed_after_leave(group.next_allowed, now, lease.fetching,
                                                     group.times.last_gap, retry.hold_again(host.unanswered))
            self.db.execute("UPDATE hosts SET next_allowed = ? WHERE id = ?", (group.next_allowed, host.id))
            row = self.db.execute("SELECT request FROM urls WHERE fp = ?", (signed(fp),)).fetchone()
            self.requeue(fp, lease.token, row[0])
        return len(leases)

    def _drop_queued(self, host: Host) -> None:
        """A host over its page budget: its queued URLs are dropped (kept as seen)."""
        dropped = self.db.execute(
            "UPDATE urls SET state = ?, request = NULL WHERE host_id = ? AND state = ?",
            (DONE, host.id, QUEUED),
        ).rowcount
        self.queued -= sum(host.queued)
        host.queued = [0] * len(host.queued)
        self.count("dropped/budget", dropped)
        logger.info("Host %s reached its page budget after %d fetches: %d URLs dropped", host.name,
                    host.fetched, dropped)

    def defer(self, name: str, until: float) -> bool:
        """Fetch nothing from host ``name``'s politeness key before ``until``."""
        host = self._hosts.get(name)
        if host is None:
            return False
        host.group.next_allowed = max(host.group.next_allowed, until)
        return True

    def set_crawl_delay(self, name: str, delay: float) -> None:
        """robots.txt's Crawl-delay for host ``name``: a floor on its key's gap."""
        self._host(name).group.times.crawl_delay = delay

    def demote(self, name: str, margin: int) -> int:
        """Host ``name``'s queued URLs go to the lowest level (later ones too), and its
        pages left become ``margin`` more from its claims so far, within the crawl's budget
        (``HostBudget.demoted_left``); returns how many URLs moved."""
        host = self._host(name)
        host.left, host.pinned = self.budget.demoted_left(host.fetched, margin), True
        self.db.execute("INSERT OR REPLACE INTO demoted VALUES (?, ?)", (host.id, host.fetched + host.left))
        top = self.levels.lowest
        moved = self.db.execute("UPDATE urls SET level = ? WHERE host_id = ? AND state = ? AND level < ?",
                                (top, host.id, QUEUED, top)).rowcount
        host.queued = [0] * top + [sum(host.queued)]
        if self._exhausted(host):
            self._drop_queued(host)
        self._schedule(host)  # into the lowest level's heap
        return moved

    def host_queued(self, name: str) -> int:
        host = self._hosts.get(name)
        return sum(host.queued) if host else 0

    def unanswered(self, name: str) -> int:
        host = self._host(name)
        host.unanswered += 1
        return host.unanswered
