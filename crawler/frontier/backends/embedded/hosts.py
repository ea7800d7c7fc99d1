"""The embedded frontier's in-memory records: politeness groups, hosts, leases, and the
hosts ready to be claimed, one heap per priority level."""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field

from crawler.frontier.policy import HostTimes


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
