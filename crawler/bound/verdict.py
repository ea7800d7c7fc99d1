"""The bound verdict: what holds a crawl's rate down, so that a frontier with too few
hosts due for its fetch slots (queues sized below rate x gap) shows as such. Pure code, no I/O.

Over one interval: how busy the downloader's slots were, how late the reactor ran, how
much CPU the process took, how the upload backlog moved, and how many hosts had URLs.
The first that holds, in this order, is the bound:

- **storage**: pages waiting for their files to be stored grew, or they are all the
  crawl has left to wait for (nothing queued, nothing fetching);
- **cpu**: the reactor ran late (``lag``) or the process used nearly a whole core;
- **network**: the slots were nearly all busy, waiting on responses;
- **politeness**: slots were free while URLs were queued: too few hosts are due (each
  waits its gap), and Little's law says how many hosts would fill the slots;
- **idle**: nothing queued, nothing fetching.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from crawler import defaults

STORAGE, CPU, NETWORK, POLITENESS, IDLE = "storage", "cpu", "network", "politeness", "idle"


@dataclass(frozen=True)
class Interval:
    """What was measured over one interval."""

    slots: int  # CONCURRENT_REQUESTS
    busy: float  # mean requests in the downloader
    lag: float  # mean seconds the reactor ran late on a periodic call
    cpu: float  # process CPU seconds per wall second (1.0: one core)
    queued: int  # URLs queued in the frontier
    hosts: int  # hosts with URLs queued
    backlog_growth: int = 0  # pages awaiting upload, now minus at the interval's start
    backlog: int = 0  # pages awaiting upload now


@dataclass(frozen=True)
class Verdict:
    bound: str
    detail: str


@dataclass(frozen=True)
class Thresholds:
    lag: float = defaults.BOUND_LAG
    cpu: float = 0.9
    busy_share: float = 0.8


def verdict(m: Interval, t: Thresholds | None = None) -> Verdict:
    t = t or Thresholds()
    busy = f"{m.busy:.1f} of {m.slots} slots busy"
    if m.backlog_growth > 0:
        return Verdict(STORAGE, f"upload backlog grew by {m.backlog_growth} pages; {busy}")
    if m.backlog and not m.queued and m.busy < 1:
        return Verdict(STORAGE, f"nothing to fetch, waiting for {m.backlog} pages to be stored; {busy}")
    if m.lag > t.lag or m.cpu >= t.cpu:
        return Verdict(CPU, f"reactor {m.lag * 1000:.0f} ms late, CPU {m.cpu:.0%} of a core; {busy}")
    if m.busy >= t.busy_share * m.slots:
        return Verdict(NETWORK, f"{busy}, waiting on responses")
    if m.queued:
        return Verdict(POLITENESS, f"{busy}, {m.queued} URLs queued on {m.hosts} hosts waiting their "
                                   f"gaps; about {hosts_to_fill(m)} hosts would fill the slots")
    return Verdict(IDLE, f"nothing queued; {busy}")


def hosts_to_fill(m: Interval) -> int:
    """Little's law: each host keeps ``busy / hosts`` slots busy on average, so filling
    every slot takes ``slots / (busy / hosts)`` hosts."""
    if m.hosts <= 0:
        return m.slots
    per_host = m.busy / m.hosts
    return m.slots if per_host <= 0 else max(m.hosts, math.ceil(m.slots / per_host))
