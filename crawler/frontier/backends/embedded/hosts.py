"""The embedded frontier's in-memory records: politeness groups, hosts, leases, and the
hosts ready to be claimed, one heap per priority level."""

from __future__ import annotations

import heapq
import itertools
import logging
from dataclasses import dataclass, field

from crawler.frontier.api import Claim
from crawler.frontier.backends.embedded.store import UrlStore
from crawler.frontier.policy import HostBudget, HostTimes, PriorityLevels

logger = logging.getLogger(__name__)


@dataclass
class Group:
    """A politeness key: one host, or every host on one IP address. At most one
    fetch in flight per group, and the policy's gap between its fetches."""

    key: str
    times: HostTimes
    next_allowed: float = 0.0
    busy: int = 0  # fetches in flight: one, or more only where keys merged mid-fetch
    members: set[str] = field(default_factory=set)


@dataclass
class Host:
    """A host's record: its queued URLs per level, budget, and place in the ready heaps."""

    id: int
    name: str
    group: Group
    fetched: int = 0
    queued: list[int] = field(default_factory=list)  # per level
    cursor: int = 0  # its position in the level cycle (PriorityLevels.next_level)
    held: bool = False  # not to be fetched yet (its politeness key is not known)
    left: int | None = None  # pages it may still fetch (HostBudget.left; None: no limit)
    pinned: bool = False  # demoted: its URLs all go to the lowest level
    unanswered: int = 0  # its fetches in a row that got no answer
    in_heap: bool = False
    heap_level: int = -1  # the ready heap it is in, while in_heap
    ticket: int = 0  # its latest heap entry's: older ones are stale

    @property
    def best_level(self) -> int | None:
        """The most urgent level with a URL queued; None: nothing queued."""
        return next((level for level, n in enumerate(self.queued) if n), None)


@dataclass
class Lease:
    """A claimed URL's lease: its host, the token that holds it, and when it expires."""

    host: str
    token: int
    expires: float
    fetching: bool = True  # the fetch has not been reported yet


class ReadyHosts:
    """Hosts that may be claimed, by allowed time, in the heap of their best queued URL's
    level (so the policy can choose a level first, then the earliest host of it). A host
    moved to another heap leaves a stale entry behind, skipped by its ticket."""

    def __init__(self, levels: int, hosts: dict[str, Host]) -> None:
        self.heaps: list[list[tuple[float, int, str]]] = [[] for _ in range(levels)]
        self.hosts = hosts

    def push(self, host: Host, allowed: float, level: int) -> None:
        host.ticket += 1
        host.in_heap, host.heap_level = True, level
        heapq.heappush(self.heaps[level], (allowed, host.ticket, host.name))

    def top(self, level: int) -> float | None:
        """The earliest allowed time in ``level``'s heap (stale entries dropped); None: empty."""
        heap = self.heaps[level]
        while heap:
            allowed, ticket, name = heap[0]
            host = self.hosts[name]
            if host.in_heap and host.heap_level == level and host.ticket == ticket:
                return allowed
            heapq.heappop(heap)
        return None

    def pop(self, level: int) -> tuple[float, Host]:
        """The earliest entry of ``level``'s heap (``top`` found it valid), out of the heap."""
        allowed, _, name = heapq.heappop(self.heaps[level])
        host = self.hosts[name]
        host.in_heap = False
        return allowed, host


class HostRecords:
    """Every host and politeness group of the crawl, in memory, with their URLs queued, the
    ready heaps, this process's claim cursor and its leases: what picks the next URL and
    keeps a key to one fetch at a time. Host rows and the URLs themselves are in ``store``;
    a host new to it is held (with ``hold_new``) until its politeness key is known, and
    listed in ``new_hosts``."""

    def __init__(self, store: UrlStore, levels: PriorityLevels, budget: HostBudget, hold_new: bool) -> None:
        self.store = store
        self.levels = levels
        self.budget = budget
        self.hold_new = hold_new
        self.new_hosts: list[str] = []  # hosts first seen since the caller last emptied this
        self.hosts: dict[str, Host] = {}
        self.groups: dict[str, Group] = {}
        self.ready = ReadyHosts(levels.levels, self.hosts)
        self.cursor = 0  # this frontier's position in the level cycle (PriorityLevels.host_level)
        self.leases: dict[int, Lease] = {}
        self.tokens = itertools.count(1)
        self.queued = 0  # URLs queued, every host's

    def load(self) -> None:
        """Rebuild every host's record and the heaps from ``store`` (records, heaps and
        leases dropped first; a lease's token never holds again)."""
        self.hosts.clear()
        self.groups.clear()
        self.leases.clear()
        self.ready.heaps = [[] for _ in self.ready.heaps]
        self.new_hosts, self.queued = [], 0
        for hid, name, next_allowed, backoff, last_gap, fetched in self.store.hosts():
            host = self._new_host(hid, name, HostTimes(backoff=backoff, last_gap=last_gap))
            host.group.next_allowed, host.fetched = next_allowed, fetched
            host.left = self.budget.left(fetched)
        by_id = self.by_id()
        for hid, level, count in self.store.queued_by_level():
            by_id[hid].queued[level] += count
            self.queued += count
        for hid, pages in self.store.demoted():
            host = by_id[hid]
            host.left, host.pinned = HostBudget(pages).left(host.fetched), True
        for host in self.hosts.values():
            self.schedule(host)

    def _new_host(self, hid: int, name: str, times: HostTimes) -> Host:
        group = self.groups.get(name)  # an IP literal may join its address's group
        if group is None:
            group = self.groups[name] = Group(name, times)
        group.members.add(name)
        host = Host(hid, name, group, queued=[0] * self.levels.levels, held=self.hold_new,
                    left=self.budget.left(0))
        self.hosts[name] = host
        if self.hold_new:
            self.new_hosts.append(name)
        return host

    def host(self, name: str) -> Host:
        """Host ``name``'s record, made (and stored) when it is new."""
        host = self.hosts.get(name)
        if host is None:
            host = self._new_host(self.store.add_host(name), name, HostTimes())
        return host

    def by_id(self) -> dict[int, Host]:
        return {h.id: h for h in self.hosts.values()}

    # ---------------------------------------------------------------- queues

    def add_queued(self, host: Host, level: int, n: int = 1) -> None:
        """``n`` more URLs of ``host`` queued at ``level`` (``schedule`` it after)."""
        host.queued[level] += n
        self.queued += n

    def clear_queued(self, host: Host) -> int:
        """``host``'s URLs are no longer queued; how many were."""
        queued = sum(host.queued)
        self.queued -= queued
        host.queued = [0] * len(host.queued)
        return queued

    def schedule(self, host: Host) -> None:
        """Put ``host`` in the ready heap of its best queued URL's level if it can be fetched
        from, at its group's allowed time (moved, if its best level changed)."""
        level = host.best_level
        if host.held or host.group.busy or level is None or (host.in_heap and host.heap_level == level):
            return
        if host.left == 0:
            self.drop_queued(host)
            return
        self.ready.push(host, host.group.next_allowed, level)

    def drop_queued(self, host: Host) -> None:
        """A host over its page budget: its queued URLs are dropped (kept as seen)."""
        dropped = self.store.drop_queued(host.id)
        self.clear_queued(host)
        self.store.count("dropped/budget", dropped)
        logger.info("Host %s reached its page budget after %d fetches: %d URLs dropped", host.name,
                    host.fetched, dropped)

    def release(self, group: Group) -> None:
        """The group's fetch is over: its hosts may be scheduled again."""
        group.busy = max(0, group.busy - 1)
        if group.busy:
            return
        for name in group.members:
            self.schedule(self.hosts[name])

    # ---------------------------------------------------------------- leases

    def claim(self, now: float, lease_seconds: float) -> Claim | float | None:
        """Lease a URL from a due host, the level chosen by the policy (``host_level``), the
        earliest allowed of that level first; else the seconds until one is allowed; else
        None (nothing queued, or every host busy)."""
        levels = range(self.levels.levels)
        while True:
            tops = [self.ready.top(level) for level in levels]
            level = self.levels.host_level(self.cursor, [t is not None and t <= now for t in tops])
            if level is None:
                waits = [t for t in tops if t is not None]
                return min(waits) - now if waits else None
            allowed, host = self.ready.pop(level)
            if host.held or host.group.busy or not any(host.queued):
                continue
            if host.group.next_allowed > allowed:  # another host of its group fetched since
                self.schedule(host)
                continue
            self.cursor = (self.cursor + 1) % len(self.levels.cycle)
            return self._lease(host, now + lease_seconds)

    def _lease(self, host: Host, expires: float) -> Claim:
        level, host.cursor = self.levels.next_level(host.queued, host.cursor)
        fp, request = self.store.take(host.id, level)
        host.queued[level] -= 1
        self.queued -= 1
        host.group.busy += 1
        host.fetched += 1
        if host.left is not None:
            host.left -= 1
        token = next(self.tokens)
        self.leases[fp] = Lease(host.name, token, expires)
        return Claim(fp, host.name, token, request)

    def held(self, fp: int, token: int) -> Lease | None:
        """The lease of ``fp``, if ``token`` holds it."""
        lease = self.leases.get(fp)
        return lease if lease is not None and lease.token == token else None

    def end_lease(self, fp: int, token: int) -> Lease | None:
        """The lease of ``fp`` if ``token`` holds it, ended: its host is free again."""
        lease = self.held(fp, token)
        if lease is None:
            return None
        del self.leases[fp]
        host = self.hosts[lease.host]
        if lease.fetching:
            self.release(host.group)
        else:
            self.schedule(host)
        return lease
