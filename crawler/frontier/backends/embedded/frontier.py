"""The embedded frontier: one process, no server, durable in a SQLite file.

Queued URLs live on disk (SQLite, stdlib: transactions, an index per host and a
bounded page cache, which a hand-written log would have to reinvent), so a frontier
of millions of URLs costs disk, not RAM. In memory: one small record per host and,
per priority level, a heap of hosts keyed by earliest-allowed time (``embedded_hosts``).

The frontier composes its parts, each given what it needs: the store (``UrlStore``: the
file, URL rows, counters), the host records (``HostRecords``: hosts, groups, ready heaps,
leases), per-host controls, parked URLs and reporting; it implements the contract by
delegating to them.

Crash safety: all writes go through one connection and are committed every
``commit_interval`` seconds, in order. A kill -9 loses at most the last interval,
and what it loses is consistent: a page's ack is never committed before the links
found on it were, so a lost ack means the page is fetched again and its links
found again. URLs leased by a dead run are queued again when the crawl reopens.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterable
from pathlib import Path

from crawler.frontier.api import Claim, DeadLetter, Entry, Fetch, FrontierFull, Revisit
from crawler.frontier.backends.embedded.controls import HostControls
from crawler.frontier.backends.embedded.hosts import HostRecords
from crawler.frontier.backends.embedded.parked import ParkedUrls
from crawler.frontier.backends.embedded.reporting import EmbeddedReporting
from crawler.frontier.backends.embedded.store import UrlStore
from crawler.frontier.policy import (
    HostBudget,
    PolitenessPolicy,
    PriorityLevels,
    RetryPolicy,
    allowed_after_leave,
)

logger = logging.getLogger(__name__)


class EmbeddedFrontier:
    """Frontier state for one process, in SQLite at ``path`` (``":memory:"`` for tests).

    ``add``/``next``/``fetched``/``ack``/``reap`` keep the contract in DESIGN.md:
    a host is never leased twice at once, and after a fetch it waits the policy's gap.
    With ``hold_new_hosts`` a host is not fetched until ``set_politeness_key`` gives
    its key (per-IP politeness: the caller resolves it first); ``new_hosts`` lists
    the hosts that need one.
    """

    shared = False

    def __init__(
        self,
        path: str | Path,
        policy: PolitenessPolicy | None = None,
        levels: PriorityLevels | None = None,
        budget: HostBudget | None = None,
        lease_seconds: float = 600.0,
        cache_kib: int = 65536,
        hold_new_hosts: bool = False,
    ) -> None:
        self.policy = policy or PolitenessPolicy()
        self.levels = levels or PriorityLevels()
        self.budget = budget or HostBudget()
        self.lease_seconds = lease_seconds
        self.hold_new_hosts = hold_new_hosts
        self.store = UrlStore(path, cache_kib)
        self.hosts = HostRecords(self.store, self.levels, self.budget, hold_new_hosts)
        self.controls = HostControls(self.store, self.hosts)
        self.parked = ParkedUrls(self.store, self.hosts)
        self.reporting = EmbeddedReporting(self.store, self.hosts, self.parked)
        recovered = self.store.recover_leases(self.levels.levels - 1)
        if recovered:
            self.count("leases/recovered", recovered)
            logger.info("Frontier: %d URLs leased by a previous run are queued again", recovered)
        self.hosts.load()
        self.db.commit()

    # ---------------------------------------------------------------- state

    @property
    def db(self) -> sqlite3.Connection:
        """The state file's connection (``UrlStore``)."""
        return self.store.db

    @property
    def db_path(self) -> Path:
        return self.store.path

    @property
    def new_hosts(self) -> list[str]:
        return self.hosts.new_hosts

    @new_hosts.setter
    def new_hosts(self, names: list[str]) -> None:
        self.hosts.new_hosts = names

    @property
    def counters(self) -> dict[str, int]:
        """This run's counters."""
        return self.store.counters

    @property
    def queued(self) -> int:
        return self.hosts.queued

    @property
    def leased(self) -> int:
        return len(self.hosts.leases)

    @property
    def waiting(self) -> int:
        return self.parked.waiting

    @property
    def revisits(self) -> int:
        return self.parked.revisits

    def count(self, key: str, n: int = 1) -> None:
        """Add to a counter (reported in stats as ``frontier/<key>``; summed over runs in
        the state file at the next commit)."""
        self.store.count(key, n)

    # ---------------------------------------------------------------- contract

    def add(self, entries: Iterable[Entry], force: bool = False) -> list[bool]:
        """Queue each URL not seen before; returns, per entry, whether it was queued.

        With ``force`` a URL already done is queued again (a deliberate revisit);
        a URL queued or leased is never queued twice.
        """
        added = []
        hosts, store = self.hosts, self.store
        lowest = self.levels.lowest
        for entry in entries:
            host = hosts.host(entry.host)
            if host.left == 0:
                store.count("dropped/budget")
                added.append(False)
                continue
            level = lowest if host.pinned else entry.level
            queued = store.insert(entry.fp, host.id, level, entry.request)
            if not queued and force and store.revive(entry.fp, level, entry.request):
                self.parked.forget_revisit(entry.fp)
                queued = True
            if not queued:
                store.count("dropped/seen")
                added.append(False)
                continue
            hosts.add_queued(host, level)
            hosts.schedule(host)
            added.append(True)
        return added

    def requeue(self, fp: int, token: int, request: str) -> bool:
        """Queue a leased URL again (a retry): its lease ends, its place is the back
        of its level. False if ``token`` is not the URL's current lease."""
        lease = self.hosts.held(fp, token)
        if lease is None:
            return False
        level = self.store.queue_again(fp, request)
        self.hosts.add_queued(self.hosts.hosts[lease.host], level)
        self.hosts.end_lease(fp, token)  # queued first, so the freed host is scheduled with it
        return True

    def next(self, now: float) -> Claim | float | None:
        """Lease a URL from a due host (``HostRecords.claim``); else the seconds until one is
        allowed; else None (nothing queued, or every host busy)."""
        return self.hosts.claim(now, self.lease_seconds)

    def claim_many(self, now: float, limit: int) -> tuple[list[Claim], float | None]:
        claims: list[Claim] = []
        while len(claims) < limit:
            result = self.hosts.claim(now, self.lease_seconds)
            if not isinstance(result, Claim):
                return claims, result
            claims.append(result)
        return claims, None

    def fetched_many(self, fetches: list[Fetch]) -> list[float | None]:
        return [self.fetched(f.fp, f.token, f.now, f.fetch_seconds, f.status, f.retry_after, f.hold_until)
                for f in fetches]

    def ack_many(self, leases: list[tuple[int, int]]) -> list[bool]:
        return [self.ack(fp, token) for fp, token in leases]

    def fetched(
        self, fp: int, token: int, now: float, fetch_seconds: float, status: int | None,
        retry_after: float | None = None, hold_until: float = 0.0,
    ) -> float | None:
        """The fetch of a leased URL ended (``status`` None: no response). Sets its
        host's next allowed time by the policy; returns the gap, or None for a stale token."""
        lease = self.hosts.leases.get(fp)
        if lease is None or lease.token != token or not lease.fetching:
            return None
        lease.fetching = False
        self.store.count("failed" if status is None else "fetched")
        host = self.hosts.hosts[lease.host]
        if status is not None:
            host.unanswered = 0
        group = host.group
        was_backing_off = group.times.backoff > 0
        gap = self.policy.after_fetch(group.times, fetch_seconds, status, retry_after)
        if group.times.backoff and not was_backing_off:
            self.store.count("backoffs")
            logger.info("Host %s answered %s: backing off %.1f s", host.name, status or "no response", gap)
        group.next_allowed = max(now + gap, hold_until)
        self.store.save_host(host.id, group.next_allowed, group.times.backoff, group.times.last_gap,
                             host.fetched)
        self.hosts.release(group)
        return gap

    def ack(self, fp: int, token: int) -> bool:
        """The URL is done (its page stored, or nothing to store): its lease ends for good."""
        if self.hosts.end_lease(fp, token) is None:
            return False
        self.store.finish(fp)
        return True

    def renew(self, fp: int, token: int, expires: float) -> None:
        """Extend a lease its holder still works on."""
        lease = self.hosts.held(fp, token)
        if lease is not None:
            lease.expires = expires

    def reap(self, now: float) -> int:
        """Queue again the URLs whose lease expired unacked; returns how many."""
        expired = [(fp, lease) for fp, lease in self.hosts.leases.items() if lease.expires <= now]
        for fp, lease in expired:
            self.requeue(fp, lease.token, self.store.request_of(fp))
        if expired:
            self.count("leases/expired", len(expired))
            logger.warning("Frontier: %d leases expired unacked; their URLs are queued again", len(expired))
        return len(expired)

    def heartbeat(self, now: float) -> list[tuple[str, int, float]]:
        """One process holds the state (its lock): no other worker can die. A run that
        died leaves its leases to the next, which queues them again on open."""
        return []

    def leave(self, now: float, retry: RetryPolicy) -> int:
        """The leases still held are queued again now (as the next run would on open); each
        host keeps its hold (``allowed_after_leave``). Returns how many."""
        leases = list(self.hosts.leases.items())
        for fp, lease in leases:
            host = self.hosts.hosts[lease.host]
            group = host.group
            group.next_allowed = allowed_after_leave(group.next_allowed, now, lease.fetching,
                                                     group.times.last_gap, retry.hold_again(host.unanswered))
            self.store.save_next_allowed(host.id, group.next_allowed)
            self.requeue(fp, lease.token, self.store.request_of(fp))
        return len(leases)

    def commit(self) -> None:
        """Commit every write so far. ``FrontierFull`` when the disk has no room: the writes
        since the last commit are rolled back and the memory reloaded from the file
        (``reload``), so the two agree; commit again later."""
        try:
            self.store.commit()
        except FrontierFull:
            self.reload()
            raise

    def reload(self) -> None:
        """Rebuild the memory from the file, as a restart does: its leases (this run's) are
        queued again, and each host still in it keeps what only memory knew (its politeness
        key, whether it waits for one, its Crawl-delay, its fetches unanswered)."""
        known = {name: (host.held, host.group.key, host.group.times.crawl_delay, host.unanswered)
                 for name, host in self.hosts.hosts.items()}
        waiting_keys = self.hosts.new_hosts
        self.store.recover_leases(self.levels.levels - 1)
        self.hosts.load()
        for name, (held, key, crawl_delay, unanswered) in known.items():
            host = self.hosts.hosts.get(name)
            if host is None:  # first seen since the last commit: found again with its links
                continue
            host.unanswered = unanswered
            if not held:
                self.controls.set_politeness_key(name, key)
            host.group.times.crawl_delay = crawl_delay
        self.hosts.new_hosts = [name for name in waiting_keys if name in self.hosts.hosts]
        self.parked.load()

    def close(self) -> None:
        """Commit and close; with no room on the disk, what the file holds is what the next
        run finds (as after a kill -9: it fetches some pages again)."""
        try:
            self.store.commit()
        except FrontierFull as full:
            logger.error("Frontier state %s has no room to save its last steps (%s): the next run "
                         "fetches the pages since its last commit again", self.describe(), full.__cause__)
        self.store.close()

    # ---------------------------------------------------------------- parts

    def retry_later(self, fp: int, token: int, request: str, due: float) -> bool:
        return self.parked.retry_later(fp, token, request, due)

    def due_retries(self, now: float) -> int:
        return self.parked.due_retries(now)

    def dead_letter(self, fp: int, token: int, request: str, error: str, now: float) -> bool:
        return self.parked.dead_letter(fp, token, request, error, now)

    def dead_letters(self) -> list[DeadLetter]:
        return self.parked.dead_letters()

    def requeue_dead(self, letter: DeadLetter, request: str) -> bool:
        return self.parked.requeue_dead(letter, request)

    def dead_letter_host(self, name: str, error: str, now: float) -> int:
        return self.parked.dead_letter_host(name, error, now)

    def revisit_many(self, revisits: list[Revisit]) -> list[bool]:
        return self.parked.revisit_many(revisits)

    def due_revisits(self, now: float, limit: int = 10_000) -> int:
        return self.parked.due_revisits(now, limit)

    def revisit_at(self, fp: int, host: str) -> tuple[float, float] | None:
        return self.parked.revisit_at(fp, host)

    def hasten_revisit(self, fp: int, host: str, due: float) -> bool:
        return self.parked.hasten_revisit(fp, host, due)

    def next_revisit(self) -> float | None:
        return self.parked.next_revisit()

    def set_politeness_key(self, name: str, key: str) -> None:
        self.controls.set_politeness_key(name, key)

    def defer(self, name: str, until: float) -> bool:
        return self.controls.defer(name, until)

    def set_crawl_delay(self, name: str, delay: float) -> None:
        self.controls.set_crawl_delay(name, delay)

    def demote(self, name: str, margin: int) -> int:
        return self.controls.demote(name, margin)

    def host_queued(self, name: str) -> int:
        return self.controls.host_queued(name)

    def unanswered(self, name: str) -> int:
        return self.controls.unanswered(name)

    def pending_counts(self) -> tuple[int, int, int, int]:
        return self.reporting.pending_counts()

    def has_pending(self) -> bool:
        return self.reporting.has_pending()

    def done_count(self) -> int:
        return self.reporting.done_count()

    def gauges(self, now: float) -> dict[str, int]:
        return self.reporting.gauges(now)

    def describe(self) -> str:
        return self.reporting.describe()
