"""The embedded frontier's controls of one host: its politeness key, a hold until a time, its
Crawl-delay, its demotion (and the budget drop it may cause) and its counts."""

from __future__ import annotations

from crawler.frontier.backends.embedded.hosts import Group, HostRecords
from crawler.frontier.backends.embedded.store import UrlStore


class HostControls:
    """Per-host controls of ``EmbeddedFrontier``, on its host records and their rows in ``store``."""

    def __init__(self, store: UrlStore, hosts: HostRecords) -> None:
        self.store = store
        self.hosts = hosts

    def set_politeness_key(self, name: str, key: str) -> None:
        """Put host ``name`` under politeness key ``key`` (e.g. its IP address) and let
        it be fetched. Hosts with one key share one fetch at a time and one gap. A host
        keeps the first key it is given (workers may get other addresses from round-robin
        DNS); a fetch in flight moves with it to its key."""
        host = self.hosts.host(name)
        old = host.group
        groups = self.hosts.groups
        if old.key != key and old.key == name:
            group = groups.get(key)
            if group is None:
                group = groups[key] = Group(key, old.times, old.next_allowed)
            else:  # the host's own gap still binds the key it joins
                group.next_allowed = max(group.next_allowed, old.next_allowed)
            old.members.discard(name)
            group.members.add(name)
            host.group = group
            group.busy, old.busy = group.busy + old.busy, 0  # its own group: only its fetch
        host.held = False
        self.hosts.schedule(host)

    def defer(self, name: str, until: float) -> bool:
        """Fetch nothing from host ``name``'s politeness key before ``until``."""
        host = self.hosts.hosts.get(name)
        if host is None:
            return False
        host.group.next_allowed = max(host.group.next_allowed, until)
        self.store.save_next_allowed(host.id, host.group.next_allowed)  # a restart keeps the hold
        return True

    def set_crawl_delay(self, name: str, delay: float) -> None:
        """robots.txt's Crawl-delay for host ``name``: a floor on its key's gap."""
        self.hosts.host(name).group.times.crawl_delay = delay

    def demote(self, name: str, margin: int) -> int:
        """Host ``name``'s queued URLs go to the lowest level (later ones too), and its
        pages left become ``margin`` more from its claims so far, within the crawl's budget
        (``HostBudget.demoted_left``); returns how many URLs moved."""
        host = self.hosts.host(name)
        host.left, host.pinned = self.hosts.budget.demoted_left(host.fetched, margin), True
        top = self.hosts.levels.lowest
        moved = self.store.demote(host.id, host.fetched + host.left, top)
        host.queued = [0] * top + [sum(host.queued)]
        if host.left == 0:
            self.hosts.drop_queued(host)
        self.hosts.schedule(host)  # into the lowest level's heap
        return moved

    def host_queued(self, name: str) -> int:
        host = self.hosts.hosts.get(name)
        return sum(host.queued) if host else 0

    def unanswered(self, name: str) -> int:
        host = self.hosts.host(name)
        host.unanswered += 1
        return host.unanswered
