"""The embedded frontier: one process, no server, durable in a SQLite file.

Queued URLs live on disk (SQLite, stdlib: transactions, an index per host and a
bounded page cache, which a hand-written log would have to reinvent), so a frontier
of millions of URLs costs disk, not RAM. In memory: one small record per host and a
heap of hosts keyed by earliest-allowed time.

Crash safety: all writes go through one connection and are committed every
``commit_interval`` seconds, in order. A kill -9 loses at most the last interval,
and what it loses is consistent: a page's ack is never committed before the links
found on it were, so a lost ack means the page is fetched again and its links
found again. URLs leased by a dead run are queued again when the crawl reopens.
"""

from __future__ import annotations

import fcntl
import heapq
import itertools
import logging
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from crawler.frontier.api import Claim, DeadLetter, Entry, Fetch, Revisit
from crawler.frontier.policy import HostBudget, HostTimes, PolitenessPolicy, PriorityLevels

logger = logging.getLogger(__name__)

QUEUED, LEASED, DONE, WAITING, DEAD, REVISIT = 0, 1, 2, 3, 4, 5

_SCHEMA = """
CREATE TABLE IF NOT EXISTS hosts (
    id INTEGER PRIMARY KEY,
    name TEXT UNIQUE NOT NULL,
    next_allowed REAL NOT NULL DEFAULT 0,
    backoff REAL NOT NULL DEFAULT 0,
    last_gap REAL NOT NULL DEFAULT 0,
    fetched INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS urls (
    fp INTEGER PRIMARY KEY,         -- 64-bit URL fingerprint, as a signed integer
    host_id INTEGER NOT NULL,
    level INTEGER NOT NULL,
    state INTEGER NOT NULL,         -- 0 queued, 1 leased, 2 done, 3 waiting to retry, 4 dead,
                                -- 5 done until its revisit
    seq INTEGER NOT NULL,           -- arrival order: FIFO within a level
    request TEXT                    -- JSON; dropped once done (the row stays as "seen")
);
CREATE INDEX IF NOT EXISTS urls_queued ON urls (host_id, level, seq) WHERE state = 0;
CREATE TABLE IF NOT EXISTS waiting (fp INTEGER PRIMARY KEY, due REAL NOT NULL);
CREATE INDEX IF NOT EXISTS waiting_due ON waiting (due);
CREATE TABLE IF NOT EXISTS revisits (fp INTEGER PRIMARY KEY, due REAL NOT NULL, fetched_at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS revisits_due ON revisits (due);
CREATE TABLE IF NOT EXISTS dead_letters (fp INTEGER PRIMARY KEY, error TEXT NOT NULL, at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS demoted (host_id INTEGER PRIMARY KEY, pages INTEGER NOT NULL);
-- Counters summed over every run (fetched, failed, stored, ...): read by crawlstats and the service.
CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
"""


def _signed(fp: int) -> int:
    return fp - (1 << 64) if fp >= 1 << 63 else fp


@dataclass
class _Group:
    """A politeness key: one host, or every host on one IP address. At most one
    fetch in flight per group, and the policy's gap between its fetches."""

    key: str
    times: HostTimes
    next_allowed: float = 0.0
    busy: int = 0  # fetches in flight: one, or more only where keys merged mid-fetch
    members: set[str] = field(default_factory=set)


@dataclass
class _Host:
    id: int
    name: str
    group: _Group
    fetched: int = 0
    queued: list[int] = field(default_factory=list)  # per level
    credit: list[int] = field(default_factory=list)  # weighted round robin state
    held: bool = False  # not to be fetched yet (its politeness key is not known)
    in_heap: bool = False
    budget: HostBudget | None = None  # its own, once demoted
    unanswered: int = 0  # its fetches in a row that got no answer


@dataclass
class _Lease:
    host: str
    token: int
    expires: float
    fetching: bool = True  # the fetch has not been reported yet


class EmbeddedFrontier:
    """Frontier state for one process, in SQLite at ``path`` (``":memory:"`` for tests).

    ``add``/``next``/``fetched``/``ack``/``reap`` keep the contract in DESIGN.md:
    a host is never leased twice at once, and after a fetch it waits the policy's gap.
    With ``hold_new_hosts`` a host is not fetched until ``set_politeness_key`` gives
    its key (per-IP politeness: the caller resolves it first); ``new_hosts`` lists
    the hosts that need one.
    """

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
                raise RuntimeError(f"crawl state {self.db_path.parent} is in use by another process; "
                                   "set another CRAWL_ID or FRONTIER_DIR to run a second crawl") from None
        self.db = sqlite3.connect(str(path), isolation_level="DEFERRED", check_same_thread=False)
        self.db.executescript(
            "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA journal_size_limit=67108864;"
            f" PRAGMA cache_size=-{cache_kib};"
        )
        self.db.executescript(_SCHEMA)
        self.hold_new_hosts = hold_new_hosts
        self.new_hosts: list[str] = []  # hosts first seen since the caller last emptied this
        self._hosts: dict[str, _Host] = {}
        self._groups: dict[str, _Group] = {}
        self._heap: list[tuple[float, str]] = []
        self._leases: dict[int, _Lease] = {}
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
        names = {h.id: h for h in self._hosts.values()}
        for hid, level, count in self.db.execute(
            "SELECT host_id, level, count(*) FROM urls WHERE state = 0 GROUP BY host_id, level"
        ):
            host = names[hid]
            host.queued[level] += count
            self.queued += count
        for hid, pages in self.db.execute("SELECT host_id, pages FROM demoted"):
            names[hid].budget = HostBudget(pages)
        for host in self._hosts.values():
            self._schedule(host)
        self.db.commit()

    def _new_host(self, hid: int, name: str, times: HostTimes) -> _Host:
        n = self.levels.levels
        group = self._groups.get(name)  # an IP literal may join its address's group
        if group is None:
            group = self._groups[name] = _Group(name, times)
        group.members.add(name)
        host = _Host(hid, name, group, queued=[0] * n, credit=[0] * n, held=self.hold_new_hosts)
        self._hosts[name] = host
        if self.hold_new_hosts:
            self.new_hosts.append(name)
        return host

    def _host(self, name: str) -> _Host:
        host = self._hosts.get(name)
        if host is None:
            cur = self.db.execute("INSERT INTO hosts (name) VALUES (?)", (name,))
            host = self._new_host(cur.lastrowid, name, HostTimes())
        return host

    def _schedule(self, host: _Host) -> None:
        """Put ``host`` in the heap if it can be fetched from, at its group's allowed time."""
        if host.held or host.group.busy or host.in_heap or not any(host.queued):
            return
        if self._exhausted(host):
            self._drop_queued(host)
            return
        host.in_heap = True
        heapq.heappush(self._heap, (host.group.next_allowed, host.name))

    def _release(self, group: _Group) -> None:
        """The group's fetch is over: its hosts may be scheduled again."""
        group.busy = max(0, group.busy - 1)
        if group.busy:
            return
        for name in group.members:
            self._schedule(self._hosts[name])

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
                group = self._groups[key] = _Group(key, old.times, old.next_allowed)
            old.members.discard(name)
            group.members.add(name)
            host.group = group
            group.busy, old.busy = group.busy + old.busy, 0  # its own group: only its fetch
        host.held = False
        self._schedule(host)

    def _exhausted(self, host: _Host) -> bool:
        return (host.budget or self.budget).exhausted(host.fetched)

    def _drop_queued(self, host: _Host) -> None:
        """A host over its page budget: its queued URLs are dropped (kept as seen)."""
        dropped = self.db.execute(
            "UPDATE urls SET state = ?, request = NULL WHERE host_id = ? AND state = ?",
            (DONE, host.id, QUEUED),
        ).rowcount
        self.queued -= sum(host.queued)
        host.queued = [0] * len(host.queued)
        self.count("dropped/budget", dropped)
        logger.info("Host %s reached its budget of %d pages: %d URLs dropped", host.name,
                    (host.budget or self.budget).pages, dropped)

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
        budget becomes its fetches so far plus ``margin``; returns how many URLs moved."""
        host = self._host(name)
        host.budget = self.budget.demoted(host.fetched, margin)
        self.db.execute("INSERT OR REPLACE INTO demoted VALUES (?, ?)", (host.id, host.budget.pages))
        top = len(host.queued) - 1
        moved = self.db.execute("UPDATE urls SET level = ? WHERE host_id = ? AND state = ? AND level < ?",
                                (top, host.id, QUEUED, top)).rowcount
        host.queued = [0] * top + [sum(host.queued)]
        if self._exhausted(host):
            self._drop_queued(host)
        return moved

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
            fp = _signed(entry.fp)
            level = self.levels.levels - 1 if host.budget else entry.level
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

    def _held(self, fp: int, token: int) -> _Lease | None:
        """The lease of ``fp``, if ``token`` holds it."""
        lease = self._leases.get(fp)
        return lease if lease is not None and lease.token == token else None

    def _end_lease(self, fp: int, token: int) -> _Lease | None:
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

    def retry_later(self, fp: int, token: int, request: str, due: float) -> bool:
        """A leased URL failed: keep it (``request``, with its attempts) and queue it again
        at ``due``. False if ``token`` is not its lease."""
        if self._end_lease(fp, token) is None:
            return False
        self.db.execute("UPDATE urls SET state = ?, request = ? WHERE fp = ?",
                        (WAITING, request, _signed(fp)))
        self.db.execute("INSERT OR REPLACE INTO waiting (fp, due) VALUES (?, ?)", (_signed(fp), due))
        self.waiting += 1
        return True

    def due_retries(self, now: float) -> int:
        """Queue again the URLs whose retry time has come; returns how many."""
        due = self._queue_parked("waiting", now, -1)
        self.waiting -= due
        return due

    def _queue_parked(self, table: str, now: float, limit: int) -> int:
        """Queue the URLs of ``table`` (waiting, revisits) whose time has come."""
        rows = self.db.execute(f"SELECT p.fp, u.host_id, u.level FROM {table} p JOIN urls u ON u.fp = p.fp "
                               "WHERE p.due <= ? ORDER BY p.due LIMIT ?", (now, limit)).fetchall()
        by_id = {h.id: h for h in self._hosts.values()} if rows else {}
        for fp, hid, level in rows:
            self._seq += 1
            self.db.execute("UPDATE urls SET state = ?, seq = ? WHERE fp = ?", (QUEUED, self._seq, fp))
            self.db.execute(f"DELETE FROM {table} WHERE fp = ?", (fp,))
            host = by_id[hid]
            host.queued[level] += 1
            self.queued += 1
            self._schedule(host)
        return len(rows)

    def revisit_many(self, revisits: list[Revisit]) -> list[bool]:
        done = []
        for r in revisits:
            if self._end_lease(r.fp, r.token) is None:
                done.append(False)
                continue
            fp = _signed(r.fp)
            self.db.execute("UPDATE urls SET state = ?, request = ? WHERE fp = ?", (REVISIT, r.request, fp))
            self.revisits += self.db.execute(
                "INSERT OR REPLACE INTO revisits (fp, due, fetched_at) VALUES (?, ?, ?)",
                (fp, r.due, r.fetched_at)).rowcount
            done.append(True)
        return done

    def due_revisits(self, now: float, limit: int = 10_000) -> int:
        due = self._queue_parked("revisits", now, limit)
        self.revisits -= due
        return due

    def revisit_at(self, fp: int, host: str) -> tuple[float, float] | None:
        row = self.db.execute("SELECT due, fetched_at FROM revisits WHERE fp = ?", (_signed(fp),)).fetchone()
        return None if row is None else (row[0], row[1])

    def hasten_revisit(self, fp: int, host: str, due: float) -> bool:
        return bool(self.db.execute("UPDATE revisits SET due = min(due, ?) WHERE fp = ?",
                                    (due, _signed(fp))).rowcount)

    def next_revisit(self) -> float | None:
        return self.db.execute("SELECT min(due) FROM revisits").fetchone()[0]

    def dead_letter(self, fp: int, token: int, request: str, error: str, now: float) -> bool:
        """A leased URL failed its last try: keep it as a dead letter (``dead_letters``)."""
        if self._end_lease(fp, token) is None:
            return False
        self.db.execute("UPDATE urls SET state = ?, request = ? WHERE fp = ?", (DEAD, request, _signed(fp)))
        self.db.execute("INSERT OR REPLACE INTO dead_letters (fp, error, at) VALUES (?, ?, ?)",
                        (_signed(fp), error, now))
        self.count("dead_letters")
        return True

    def dead_letters(self) -> list[DeadLetter]:
        return [DeadLetter(fp % (1 << 64), name, level, request, error, at)
                for fp, name, level, request, error, at in self.db.execute(
                    "SELECT d.fp, h.name, u.level, u.request, d.error, d.at FROM dead_letters d "
                    "JOIN urls u ON u.fp = d.fp JOIN hosts h ON h.id = u.host_id ORDER BY d.at")]

    def requeue_dead(self, letter: DeadLetter, request: str) -> bool:
        """Queue a dead letter again, as ``request`` (its attempts reset by the caller)."""
        fp = _signed(letter.fp)
        if not self.db.execute("DELETE FROM dead_letters WHERE fp = ?", (fp,)).rowcount:
            return False
        self._seq += 1
        self.db.execute("UPDATE urls SET state = ?, seq = ?, request = ? WHERE fp = ?",
                        (QUEUED, self._seq, request, fp))
        host = self._host(letter.host)
        host.queued[letter.level] += 1
        self.queued += 1
        self._schedule(host)
        return True

    def dead_letter_host(self, name: str, error: str, now: float) -> int:
        host = self._hosts.get(name)
        if host is None or not any(host.queued):
            return 0
        self.db.execute("INSERT OR REPLACE INTO dead_letters (fp, error, at) SELECT fp, ?, ? FROM urls "
                        "WHERE host_id = ? AND state = ?", (error, now, host.id, QUEUED))
        dead = self.db.execute("UPDATE urls SET state = ? WHERE host_id = ? AND state = ?",
                               (DEAD, host.id, QUEUED)).rowcount
        self.queued -= sum(host.queued)
        host.queued = [0] * len(host.queued)
        self.count("dead_letters", dead)
        return dead

    def host_queued(self, name: str) -> int:
        host = self._hosts.get(name)
        return sum(host.queued) if host else 0

    def unanswered(self, name: str) -> int:
        host = self._host(name)
        host.unanswered += 1
        return host.unanswered

    def requeue(self, fp: int, token: int, request: str) -> bool:
        """Queue a leased URL again (a retry): its lease ends, its place is the back
        of its level. False if ``token`` is not the URL's current lease."""
        lease = self._held(fp, token)
        if lease is None:
            return False
        row = self.db.execute("SELECT level FROM urls WHERE fp = ?", (_signed(fp),)).fetchone()
        self._seq += 1
        self.db.execute(
            "UPDATE urls SET state = ?, seq = ?, request = ? WHERE fp = ?",
            (QUEUED, self._seq, request, _signed(fp)),
        )
        self._hosts[lease.host].queued[row[0]] += 1
        self.queued += 1
        self._end_lease(fp, token)  # queued first, so the freed host is scheduled with it
        return True

    def next(self, now: float) -> Claim | float | None:
        """Lease a URL from the host that has been allowed longest; else the seconds
        until one is allowed; else None (nothing queued, or every host busy)."""
        heap = self._heap
        while heap:
            allowed, name = heap[0]
            host = self._hosts[name]
            if allowed > now:
                return allowed - now
            heapq.heappop(heap)
            host.in_heap = False
            if host.held or host.group.busy or not any(host.queued):
                continue
            if host.group.next_allowed > allowed:  # another host of its group fetched since
                self._schedule(host)
                continue
            return self._lease(host, now)
        return None

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

    def _lease(self, host: _Host, now: float) -> Claim:
        level = self.levels.pick([q > 0 for q in host.queued], host.credit)
        fp, request = self.db.execute(
            "SELECT fp, request FROM urls WHERE host_id = ? AND state = 0 AND level = ? ORDER BY seq LIMIT 1",
            (host.id, level),
        ).fetchone()
        self.db.execute("UPDATE urls SET state = ? WHERE fp = ?", (LEASED, fp))
        host.queued[level] -= 1
        self.queued -= 1
        host.group.busy += 1
        host.fetched += 1
        token = next(self._tokens)
        ufp = fp % (1 << 64)
        self._leases[ufp] = _Lease(host.name, token, now + self.lease_seconds)
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
        self.db.execute("UPDATE urls SET state = ?, request = NULL WHERE fp = ?", (DONE, _signed(fp)))
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
            row = self.db.execute("SELECT request FROM urls WHERE fp = ?", (_signed(fp),)).fetchone()
            self.requeue(fp, lease.token, row[0])
        if expired:
            self.count("leases/expired", len(expired))
            logger.warning("Frontier: %d leases expired unacked; their URLs are queued again", len(expired))
        return len(expired)

    def heartbeat(self, now: float) -> list[tuple[str, int, float]]:
        """One process holds the state (its lock): no other worker can die. A run that
        died leaves its leases to the next, which queues them again on open."""
        return []

    # ---------------------------------------------------------------- reporting

    @property
    def leased(self) -> int:
        return len(self._leases)

    def has_pending(self) -> bool:
        return bool(self.queued or self._leases or self.waiting)

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



def read_counts(path: str | Path) -> dict[str, int]:
    """Counts of an embedded frontier's state file, read-only, while its crawl runs or
    after: URLs seen, queued, leased (in flight, or left by a run that died) and done,
    and hosts known and with URLs queued; and the counters summed over its runs
    (fetched, failed, stored, dropped/*, fetch_seconds/*) as of the last commit."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        counters = dict(db.execute("SELECT name, value FROM counters").fetchall()) if db.execute(
            "SELECT 1 FROM sqlite_master WHERE name = 'counters'").fetchone() else {}
        by_state = dict(db.execute("SELECT state, count(*) FROM urls GROUP BY state").fetchall())
        hosts = db.execute("SELECT count(*) FROM hosts").fetchone()[0]
        active = db.execute("SELECT count(DISTINCT host_id) FROM urls WHERE state = ?",
                            (QUEUED,)).fetchone()[0]
    finally:
        db.close()
    return {
        **counters,
        "seen": sum(by_state.values()),
        "queued": by_state.get(QUEUED, 0),
        "leased": by_state.get(LEASED, 0),
        "done": by_state.get(DONE, 0) + by_state.get(REVISIT, 0),
        "revisits": by_state.get(REVISIT, 0),
        "waiting": by_state.get(WAITING, 0),
        "dead_letters": by_state.get(DEAD, 0),
        "hosts": hosts,
        "hosts/active": active,
    }


def read_host_queues(path: str | Path, limit: int) -> list[tuple[str, int]]:
    """The ``limit`` hosts with the most URLs queued, with how many, read-only."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return db.execute("SELECT h.name, count(*) AS n FROM urls u JOIN hosts h ON h.id = u.host_id "
                          "WHERE u.state = ? GROUP BY u.host_id ORDER BY n DESC, h.name LIMIT ?",
                          (QUEUED, limit)).fetchall()
    finally:
        db.close()
