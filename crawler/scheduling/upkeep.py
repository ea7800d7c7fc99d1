"""The scheduler's reads and upkeep of the frontier, run off the reactor (``calls``), and
the answer to "anything pending?" kept from the last read."""

from __future__ import annotations

import logging
import sys
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from crawler.context.crawl_id import fresh_crawl_command
from crawler.frontier.api import Claim, Frontier, FrontierUnavailable, SharedFrontier

if TYPE_CHECKING:
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)


@dataclass
class Counts:
    """What is left in the frontier, crawl-wide."""

    queued: int
    leased: int
    waiting: int
    revisits: int

    @classmethod
    def read(cls, frontier: Frontier) -> Counts:
        return cls(*frontier.pending_counts())


@dataclass
class Opening:
    """The frontier as a worker finds it."""

    promoted: int  # revisits due since the last run, queued
    done: int
    pending: bool
    counts: Counts
    next_revisit: float | None
    description: str  # where the state is
    shared: bool  # in Redis (``Frontier.shared``), else in the directory ``description`` names

    @classmethod
    def read(cls, frontier: Frontier, now: float) -> Opening:
        """In the I/O thread: queue the revisits due (a rerun revisits what has fallen due
        since), then read."""
        promoted = frontier.due_revisits(now)
        counts = Counts.read(frontier)
        return cls(promoted, frontier.done_count(), frontier.has_pending(), counts,
                   frontier.next_revisit() if counts.revisits else None, frontier.describe(),
                   frontier.shared)

    def say_finished(self, crawl_id: str) -> None:
        """A WARNING: this crawl is finished, what a rerun revisits, and how to crawl afresh."""
        fresh = fresh_crawl_command(sys.argv, crawl_id, time.strftime("%Y%m%d-%H%M%S"))
        if not self.shared:
            how = f"delete {self.description} and run the same command again, or run:\n  {fresh}"
        else:
            how = (f"run `scrapy forget {crawl_id} -s REDIS_URL=...` and the same command again, "
                   f"or run:\n  {fresh}")
        later = ""
        if self.next_revisit is not None:
            next_at = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(self.next_revisit))
            later = (f"; {self.counts.revisits} URLs are revisited as they fall due (the next at "
                     f"{next_at}): rerun then, or crawl with -s CRAWL_CONTINUOUS=True")
        logger.warning("Crawl %s already finished (%d URLs done, state in %s): URLs seen then are not "
                       "fetched again, but for requests marked dont_filter (a spider's start "
                       "requests)%s. To crawl afresh, %s",
                       crawl_id, self.done, self.description, later, how)


@dataclass
class Upkeep:
    """One round of housekeeping: what it found."""

    dead_workers: list[tuple[str, int, float]]
    due_retries: int
    due_revisits: int
    next_revisit: float | None
    gauges: dict[str, int]
    counters: dict[str, int]
    counts: Counts
    at: float = field(default_factory=time.monotonic)

    def say_dead_workers(self) -> None:
        """A WARNING for each worker found dead, whose leases went back to the queues."""
        for worker, leases, silent in self.dead_workers:
            logger.warning("Worker %s has been silent for %.0f s: its %d leased URLs are queued "
                           "again and their hosts freed", worker, silent, leases)

    def publish(self, stats: StatsCollector) -> None:
        """The frontier's gauges and counters as this worker's ``frontier/*`` stats."""
        for key, value in {**self.gauges, **self.counters}.items():
            stats.set_value(f"frontier/{key}", value)


def upkeep(frontier: Frontier, leases: list[tuple[int, int]]) -> Upkeep:
    """In the I/O thread: renew this worker's leases (its requests may wait long: robots.txt,
    slow pipelines; reaping is for the dead's), beat, reap, promote due retries and revisits,
    and read the gauges. The beat is timed as it is sent, not as the job was asked for:
    calls waiting before it (a stalled Redis) would make it look older than it is."""
    expires = time.time() + frontier.lease_seconds
    for fp, token in leases:
        frontier.renew(fp, token, expires)
    now = time.time()  # after the renewals, which a stalled Redis may hold up
    dead = frontier.heartbeat(now)
    frontier.reap(now)
    due_retries = frontier.due_retries(now)
    due_revisits = frontier.due_revisits(now)
    return Upkeep(dead, due_retries, due_revisits, frontier.next_revisit(), frontier.gauges(now),
                  frontier.counters, Counts.read(frontier))


def promote_revisits(frontier: Frontier, now: float) -> tuple[int, float | None]:
    """In the I/O thread: queue the revisits due; (how many, when the next falls due)."""
    return frontier.due_revisits(now), frontier.next_revisit()


def claim_due(frontier: Frontier, limit: int) -> tuple[list[Claim], float | None]:
    """In the I/O thread: up to ``limit`` claims of the hosts due now (now as the call runs)."""
    return frontier.claim_many(time.time(), limit)


def forget_if_finished(frontier: SharedFrontier, crawl_id: str) -> None:
    """In the I/O thread, ``SCHEDULER_PERSIST = False``: a finished crawl's keys go with
    its last worker."""
    try:
        if not frontier.has_pending():
            logger.info("Crawl %s finished: %d keys deleted (SCHEDULER_PERSIST = False)",
                        crawl_id, frontier.forget())
    except FrontierUnavailable as error:
        logger.warning("Could not delete the finished crawl's keys: %s", error)


def take_new_hosts(frontier: Frontier) -> list[str]:
    """In the I/O thread (where adds append to it): the hosts added that wait for their keys."""
    names, frontier.new_hosts = frontier.new_hosts, []
    return names


class PendingCounts:
    """The last read of the frontier's counts, and whether it still holds: a read issued
    before this worker's latest write does not (``written`` counts the writes). The engine
    asks "anything pending?" many times a second; it is answered from here, never by a
    Redis call on the reactor."""

    def __init__(self, max_age: float = 0.25) -> None:
        self.max_age = max_age
        self.counts: Counts | None = None
        self._read_at = -1e9
        self._written = -1
        self.reading = False

    def stale(self, written: int) -> bool:
        return (self.counts is None or written != self._written
                or time.monotonic() - self._read_at > self.max_age)

    def start(self) -> float:
        self.reading = True
        return time.monotonic()

    def update(self, counts: Counts, written: int, started: float) -> None:
        self.reading = False
        self.counts, self._written, self._read_at = counts, written, started

    def holds(self, written: int) -> bool:
        """Whether the last read came after this worker's latest write."""
        return self.counts is not None and written == self._written
