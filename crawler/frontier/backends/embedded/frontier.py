"""The embedded frontier: one process, no server, durable in a SQLite file.

Queued URLs live on disk (SQLite, stdlib: transactions, an index per host and a
bounded page cache, which a hand-written log would have to reinvent), so a frontier
of millions of URLs costs disk, not RAM. In memory: one small record per host and,
per priority level, a heap of hosts keyed by earliest-allowed time (``embedded_hosts``).

Crash safety: all writes go through one connection and are committed every
``commit_interval`` seconds, in order. A kill -9 loses at most the last interval,
and what it loses is consistent: a page's ack is never committed before the links
found on it were, so a lost ack means the page is fetched again and its links
found again. URLs leased by a dead run are queued again when the crawl reopens.
"""

from __future__ import annotations

import fcntl
import itertools
import logging
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO

from crawler.frontier.api import Claim, CrawlStateInUse, Entry, Fetch
from crawler.frontier.backends.embedded.controls import HostControls
from crawler.frontier.backends.embedded.hosts import Group, Host, Lease, ReadyHosts
from crawler.frontier.backends.embedded.parked import ParkedUrls
from crawler.frontier.backends.embedded.reporting import EmbeddedReporting
from crawler.frontier.backends.embedded.store import DONE, LEASED, QUEUED, REVISIT, SCHEMA, signed
from crawler.frontier.policy import HostBudget, HostTimes, PolitenessPolicy, PriorityLevels

logger = logging.getLogger(__name__)


class EmbeddedFrontier(HostControls, ParkedUrls, EmbeddedReporting):
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
        self.db_path = Path(path)
        self._lock: BinaryIO | None = None
        if str(path) != ":memory:":
            self.db_path.parent.mkdir(parents=True, exist_ok=True)
            self._lock = self.db_path.with_suffix(".lock").open("ab")
            try:
                fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                self._lock.close()
                raise CrawlStateInUse(str(self.db_path.parent)) from None
        self.db = sqlite3.connect(str(path), isolation_level="DEFERRED", check_same_thread=False)
        self.db.executescript(
            "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA journal_size_limit=67108864;"
            f" PRAGMA cache_size=-{cache_kib};"
        )
        self.db.executescript(SCHEMA)
        self.hold_new_hosts = hold_new_hosts
        self.new_hosts: list[str] = []  # hosts first seen since the caller last emptied this
        self._hosts: dict[str, Host] = {}
        self._groups: dict[str, Group] = {}
        self._ready = ReadyHosts(self.levels.levels, self._hosts)
        self._cursor = 0  # this frontier's position in the level cycle (PriorityLevels.host_level)
        self._leases: dict[int, Lease] = {}
        self._tokens = itertools.count(1)
        self.queued = 0
        self.counters: dict[str, int] = {}  # this run's
        self._unsaved: dict[str, int] = {}  # added since the last commit
        self._seq = self.db.execute("SELECT coalesce(max(seq), 0) FROM urls").fetchone()[0]
        self.waiting = self.db.execute("SELECT count(*) FROM waiting").fetchone()[0]
        self.revisits = self.db.execute("SELECT count(*) FROM revisits").fetchone()[0]
        self._load()

    # ---------------------------------------------------------------- state

    def _load(self) -> None:
        """Rebuild the in-memory hosts and heap; requeue leases of a run that died."""
        recovered = self.db.execute("UPDATE urls SET state = ? WHERE state = ?", (QUEUED, LEASED)).rowcount
        top = self.levels.levels - 1  # FRONTIER_PRIORITY_LEVELS may have shrunk since
        self.db.execute("UPDATE urls SET level = ? WHERE level > ? AND state = ?", (top, top, QUEUED))
        if recovered:
            self.count("leases/recovered", recovered)
            logger.info("Frontier: %d URLs leased by a previous run are queued again", recovered)
        for hid, name, next_allowed, backoff, last_gap, fetched in self.db.execute(
            "SELECT id, name, next_allowed, backoff, last_gap, fetched FROM hosts"
        ):
            host = self._new_host(hid, name, HostTimes(backoff=backoff, last_gap=last_gap))
            host.group.next_allowed, host.fetched = next_allowed, fetched
            host.left = self.budget.left(fetched)
        names = {h.id: h for h in self._hosts.values()}
        for hid, level, count in self.db.execute(
            "SELECT host_id, level, count(*) FROM urls WHERE state = 0 GROUP BY host_id, level"
        ):
            host = names[hid]
            host.queued[level] += count
            self.queued += count
        for hid, pages in self.db.execute("SELECT host_id, pages FROM demoted"):
            host = names[hid]
            host.left, host.pinned = HostBudget(pages).left(host.fetched), True
        for host in self._hosts.values():
            self._schedule(host)
        self.db.commit()

    def _new_host(self, hid: int, name: str, times: HostTimes) -> Host:
        n = self.levels.levels
        group = self._groups.get(name)  # an IP literal may join its address's group
        if group is None:
            group = self._groups[name] = Group(name, times)
        group.members.add(name)
        host = Host(hid, name, group, queued=[0] * n, held=self.hold_new_hosts, left=self.budget.left(0))
        self._hosts[name] = host
        if self.hold_new_hosts:
            self.new_hosts.append(name)
        return host

    def _host(self, name: str) -> Host:
        host = self._hosts.get(name)
        if host is None:
            cur = self.db.execute("INSERT INTO hosts (name) VALUES (?)", (name,))
            host = self._new_host(cur.lastrowid, name, HostTimes())
        return host

    def _schedule(self, host: Host) -> None:
        """Put ``host`` in the ready heap of its best queued URL's level if it can be fetched
        from, at its group's allowed time (moved, if its best level changed)."""
        level = host.best_level
        if host.held or host.group.busy or level is None or (host.in_heap and host.heap_level == level):
            return
        if self._exhausted(host):
            self._drop_queued(host)
            return
        self._ready.push(host, host.group.next_allowed, level)

    def _release(self, group: Group) -> None:
        """The group's fetch is over: its hosts may be scheduled again."""
        group.busy = max(0, group.busy - 1)
        if group.busy:
            return
        for name in group.members:
            self._schedule(self._hosts[name])

    @staticmethod
    def _exhausted(host: Host) -> bool:
        return host.left == 0

    def count(self, key: str, n: int = 1) -> None:
        """Add to a counter (reported in stats as ``frontier/<key>``; summed over runs in
        the state file at the next commit)."""
        self.counters[key] = self.counters.get(key, 0) + n
        self._unsaved[key] = self._unsaved.get(key, 0) + n

    # ---------------------------------------------------------------- contract

    def add(self, entries: Iterable[Entry], force: bool = False) -> list[bool]:
        """Queue each URL not seen before; returns, per entry, whether it was queued.

        With ``force`` a URL already done is queued again (a deliberate revisit);
        a URL queued or leased is never queued twice.
        """
        added = []
        for entry in entries:
            host = self._host(entry.host)
            if self._exhausted(host):
                self.count("dropped/budget")
                added.append(False)
                continue
            self._seq += 1
            fp = signed(entry.fp)
            level = self.levels.lowest if host.pinned else entry.level
            cur = self.db.execute(
                "INSERT OR IGNORE INTO urls (fp, host_id, level, state, seq, request) VALUES (?,?,?,?,?,?)",
                (fp, host.id, level, QUEUED, self._seq, entry.request),
            )
            if not cur.rowcount and force:
                cur = self.db.execute(
                    "UPDATE urls SET state = ?, level = ?, seq = ?, request = ? "
                    "WHERE fp = ? AND state IN (?, ?)",
                    (QUEUED, level, self._seq, entry.request, fp, DONE, REVISIT),
                )
                if cur.rowcount:
                    self.revisits -= self.db.execute("DELETE FROM revisits WHERE fp = ?", (fp,)).rowcount
            if not cur.rowcount:
                self.count("dropped/seen")
                added.append(False)
                continue
            host.queued[level] += 1
            self.queued += 1
            self._schedule(host)
            added.append(True)
        return added

    def _held(self, fp: int, token: int) -> Lease | None:
        """The lease of ``fp``, if ``token`` holds it."""
        lease = self._leases.get(fp)
        return lease if lease is not None and lease.token == token else None

    def _end_lease(self, fp: int, token: int) -> Lease | None:
        """The lease of ``fp`` if ``token`` holds it, ended: its host is free again."""
        lease = self._held(fp, token)
        if lease is None:
            return None
        del self._leases[fp]
        host = self._hosts[lease.host]
        if lease.fetching:
            self._release(host.group)
        else:
            self._schedule(host)
        return lease

    def requeue(self, fp: int, token: int, request: str) -> bool:
        """Queue a leased URL again (a retry): its lease ends, its place is the back
        of its level. False if ``token`` is not the URL's current lease."""
        lease = self._held(fp, token)
        if lease is None:
            return False
        row = self.db.execute("SELECT level FROM urls WHERE fp = ?", (signed(fp),)).fetchone()
        self._seq += 1
        self.db.execute(
            "UPDATE urls SET state = ?, seq = ?, request = ? WHERE fp = ?",
            (QUEUED, self._seq, request, signed(fp)),
        )
        self._hosts[lease.host].queued[row[0]] += 1
        self.queued += 1
        self._end_lease(fp, token)  # queued first, so the freed host is scheduled with it
        return True

    def next(self, now: float) -> Claim | float | None:
        """Lease a URL from a due host, the level chosen by the policy (``host_level``), the
        earliest allowed of that level first; else the seconds until one is allowed; else
        None (nothing queued, or every host busy)."""
        levels = range(self.levels.levels)
        while True:
            tops = [self._ready.top(level) for level in levels]
            level = self.levels.host_level(self._cursor, [t is not None and t <= now for t in tops])
            if level is None:
                waits = [t for t in tops if t is not None]
                return min(waits) - now if waits else None
            allowed, host = self._ready.pop(level)
            if host.held or host.group.busy or not any(host.queued):
                continue
            if host.group.next_allowed > allowed:  # another host of its group fetched since
                self._schedule(host)
                continue
            self._cursor = (self._cursor + 1) % len(self.levels.cycle)
            return self._lease(host, now)

    def claim_many(self, now: float, limit: int) -> tuple[list[Claim], float | None]:
        claims: list[Claim] = []
        while len(claims) < limit:
            result = self.next(now)
            if not isinstance(result, Claim):
                return claims, result
            claims.append(result)
        return claims, None

    def fetched_many(self, fetches: list[Fetch]) -> list[float | None]:
        return [self.fetched(f.fp, f.token, f.now, f.fetch_seconds, f.status, f.retry_after, f.hold_until)
                for f in fetches]

    def ack_many(self, leases: list[tuple[int, int]]) -> list[bool]:
        return [self.ack(fp, token) for fp, token in leases]

    def _lease(self, host: Host, now: float) -> Claim:
        level, host.cursor = self.levels.next_level(host.queued, host.cursor)
        fp, request = self.db.execute(
            "SELECT fp, request FROM urls WHERE host_id = ? AND state = 0 AND level = ? ORDER BY seq LIMIT 1",
            (host.id, level),
        ).fetchone()
        self.db.execute("UPDATE urls SET state = ? WHERE fp = ?", (LEASED, fp))
        host.queued[level] -= 1
        self.queued -= 1
        host.group.busy += 1
        host.fetched += 1
        if host.left is not None:
            host.left -= 1
        token = next(self._tokens)
        ufp = fp % (1 << 64)
        self._leases[ufp] = Lease(host.name, token, now + self.lease_seconds)
        return Claim(ufp, host.name, token, request)

    def fetched(
        self, fp: int, token: int, now: float, fetch_seconds: float, status: int | None,
        retry_after: float | None = None, hold_until: float = 0.0,
    ) -> float | None:
        """The fetch of a leased URL ended (``status`` None: no response). Sets its
        host's next allowed time by the policy; returns the gap, or None for a stale token."""
        lease = self._leases.get(fp)
        if lease is None or lease.token != token or not lease.fetching:
            return None
        lease.fetching = False
        self.count("failed" if status is None else "fetched")
        host = self._hosts[lease.host]
        if status is not None:
            host.unanswered = 0
        group = host.group
        was_backing_off = group.times.backoff > 0
        gap = self.policy.after_fetch(group.times, fetch_seconds, status, retry_after)
        if group.times.backoff and not was_backing_off:
            self.count("backoffs")
            logger.info("Host %s answered %s: backing off %.1f s", host.name, status or "no response", gap)
        group.next_allowed = max(now + gap, hold_until)
        self.db.execute(
            "UPDATE hosts SET next_allowed = ?, backoff = ?, last_gap = ?, fetched = ? WHERE id = ?",
            (group.next_allowed, group.times.backoff, group.times.last_gap, host.fetched, host.id),
        )
        self._release(group)
        return gap

    def ack(self, fp: int, token: int) -> bool:
        """The URL is done (its page stored, or nothing to store): its lease ends for good."""
        if self._end_lease(fp, token) is None:
            return False
        self.db.execute("UPDATE urls SET state = ?, request = NULL WHERE fp = ?", (DONE, signed(fp)))
        return True

    def renew(self, fp: int, token: int, expires: float) -> None:
        """Extend a lease its holder still works on."""
        lease = self._leases.get(fp)
        if lease is not None and lease.token == token:
            lease.expires = expires

    def reap(self, now: float) -> int:
        """Queue again the URLs whose lease expired unacked; returns how many."""
        expired = [(fp, lease) for fp, lease in self._leases.items() if lease.expires <= now]
        for fp, lease in expired:
            row = self.db.execute("SELECT request FROM urls WHERE fp = ?", (signed(fp),)).fetchone()
            self.requeue(fp, lease.token, row[0])
        if expired:
            self.count("leases/expired", len(expired))
            logger.warning("Frontier: %d leases expired unacked; their URLs are queued again", len(expired))
        return len(expired)

    def heartbeat(self, now: float) -> list[tuple[str, int, float]]:
        """One process holds the state (its lock): no other worker can die. A run that
        died leaves its leases to the next, which queues them again on open."""
        return []

    def commit(self) -> None:
        if self._unsaved:
            self.db.executemany("INSERT INTO counters (name, value) VALUES (?, ?) ON CONFLICT (name) "
                                "DO UPDATE SET value = value + excluded.value", self._unsaved.items())
            self._unsaved = {}
        self.db.commit()

    def close(self) -> None:
        self.commit()
        self.db.close()
        if self._lock is not None:
            self._lock.close()  # releases the lock


