"""The embedded frontier's SQLite file: its schema, URL states, the store that owns the file
while its crawl runs, and read-only readers of it (crawl counts and host queues, readable while
its crawl runs)."""

from __future__ import annotations

import fcntl
import sqlite3
from pathlib import Path
from typing import BinaryIO

from crawler.frontier.api import CrawlStateInUse, FrontierFull
from crawler.store.space import is_sqlite_full

QUEUED, LEASED, DONE, WAITING, DEAD, REVISIT = 0, 1, 2, 3, 4, 5

SCHEMA = """
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


def signed(fp: int) -> int:
    """A 64-bit unsigned fingerprint as the signed integer SQLite keeps."""
    return fp - (1 << 64) if fp >= 1 << 63 else fp


def unsigned(fp: int) -> int:
    """A fingerprint read from SQLite, as the contract's unsigned 64-bit integer."""
    return fp % (1 << 64)


class UrlStore:
    """The state file of one crawl, owned by this process (a lock beside it): one SQLite
    connection (WAL) whose writes are committed by ``commit`` only, the URLs' rows and
    their states, the hosts' durable times, and the counters summed over runs.

    Fingerprints passed in and returned are unsigned; each method turns them to SQLite's
    signed integers itself."""

    def __init__(self, path: str | Path, cache_kib: int) -> None:
        self.path = Path(path)
        self.lock: BinaryIO | None = None
        if str(path) != ":memory:":
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.lock = self.path.with_suffix(".lock").open("ab")
            try:
                fcntl.flock(self.lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                self.lock.close()
                raise CrawlStateInUse(str(self.path.parent)) from None
        self.db = sqlite3.connect(str(path), isolation_level="DEFERRED", check_same_thread=False)
        self.db.executescript(
            "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA journal_size_limit=67108864;"
            f" PRAGMA cache_size=-{cache_kib};"
        )
        self.db.executescript(SCHEMA)
        self.seq: int = self.db.execute("SELECT coalesce(max(seq), 0) FROM urls").fetchone()[0]
        self.counters: dict[str, int] = {}  # this run's
        self._unsaved: dict[str, int] = {}  # added since the last commit

    def next_seq(self) -> int:
        """The next arrival number: a URL queued with it goes to the back of its level."""
        self.seq += 1
        return self.seq

    def count(self, key: str, n: int = 1) -> None:
        """Add to a counter (this run's, and summed over runs in the file at the next commit)."""
        self.counters[key] = self.counters.get(key, 0) + n
        self._unsaved[key] = self._unsaved.get(key, 0) + n

    # ---------------------------------------------------------------- URLs

    def recover_leases(self, top: int) -> int:
        """URLs leased by a run that died are queued again, and levels above ``top`` (the
        levels setting may have shrunk since) clamped to it; how many were leased."""
        recovered: int = self.db.execute("UPDATE urls SET state = ? WHERE state = ?",
                                         (QUEUED, LEASED)).rowcount
        self.db.execute("UPDATE urls SET level = ? WHERE level > ? AND state = ?", (top, top, QUEUED))
        return recovered

    def insert(self, fp: int, host_id: int, level: int, request: str) -> bool:
        """Queue a URL never seen; False if it was."""
        return bool(self.db.execute(
            "INSERT OR IGNORE INTO urls (fp, host_id, level, state, seq, request) VALUES (?,?,?,?,?,?)",
            (signed(fp), host_id, level, QUEUED, self.next_seq(), request),
        ).rowcount)

    def revive(self, fp: int, level: int, request: str) -> bool:
        """Queue again a URL that is done (or done until its revisit); False if it is not."""
        return bool(self.db.execute(
            "UPDATE urls SET state = ?, level = ?, seq = ?, request = ? WHERE fp = ? AND state IN (?, ?)",
            (QUEUED, level, self.next_seq(), request, signed(fp), DONE, REVISIT),
        ).rowcount)

    def take(self, host_id: int, level: int) -> tuple[int, str]:
        """The oldest URL queued of a host at ``level``, now leased: (fp, request)."""
        fp, request = self.db.execute(
            "SELECT fp, request FROM urls WHERE host_id = ? AND state = 0 AND level = ? ORDER BY seq LIMIT 1",
            (host_id, level),
        ).fetchone()
        self.db.execute("UPDATE urls SET state = ? WHERE fp = ?", (LEASED, fp))
        return unsigned(fp), request

    def queue_again(self, fp: int, request: str) -> int:
        """Queue a leased URL again at the back of its level, as ``request``; its level."""
        level: int = self.db.execute("SELECT level FROM urls WHERE fp = ?", (signed(fp),)).fetchone()[0]
        self.db.execute("UPDATE urls SET state = ?, seq = ?, request = ? WHERE fp = ?",
                        (QUEUED, self.next_seq(), request, signed(fp)))
        return level

    def request_of(self, fp: int) -> str:
        request: str = self.db.execute("SELECT request FROM urls WHERE fp = ?", (signed(fp),)).fetchone()[0]
        return request

    def finish(self, fp: int) -> None:
        """The URL is done: only its row stays, as seen."""
        self.db.execute("UPDATE urls SET state = ?, request = NULL WHERE fp = ?", (DONE, signed(fp)))

    def park(self, fp: int, state: int, request: str) -> None:
        """The URL leaves the queues for a parked ``state`` (waiting, revisit, dead), as ``request``."""
        self.db.execute("UPDATE urls SET state = ?, request = ? WHERE fp = ?", (state, request, signed(fp)))

    def drop_queued(self, host_id: int) -> int:
        """A host's queued URLs are dropped (kept as seen); how many."""
        dropped: int = self.db.execute(
            "UPDATE urls SET state = ?, request = NULL WHERE host_id = ? AND state = ?",
            (DONE, host_id, QUEUED),
        ).rowcount
        return dropped

    def demote(self, host_id: int, pages: int, level: int) -> int:
        """A host may fetch ``pages`` in all, and its queued URLs move to ``level``; how many."""
        self.db.execute("INSERT OR REPLACE INTO demoted VALUES (?, ?)", (host_id, pages))
        moved: int = self.db.execute(
            "UPDATE urls SET level = ? WHERE host_id = ? AND state = ? AND level < ?",
            (level, host_id, QUEUED, level)).rowcount
        return moved

    def done_count(self) -> int:
        done: int = self.db.execute("SELECT count(*) FROM urls WHERE state IN (?, ?)",
                                    (DONE, REVISIT)).fetchone()[0]
        return done

    # ---------------------------------------------------------------- hosts

    def add_host(self, name: str) -> int:
        """A host seen for the first time; its id."""
        host_id = self.db.execute("INSERT INTO hosts (name) VALUES (?)", (name,)).lastrowid
        assert host_id is not None  # an INSERT into a rowid table sets it
        return host_id

    def save_host(self, host_id: int, next_allowed: float, backoff: float, last_gap: float,
                  fetched: int) -> None:
        self.db.execute(
            "UPDATE hosts SET next_allowed = ?, backoff = ?, last_gap = ?, fetched = ? WHERE id = ?",
            (next_allowed, backoff, last_gap, fetched, host_id),
        )

    def save_next_allowed(self, host_id: int, next_allowed: float) -> None:
        self.db.execute("UPDATE hosts SET next_allowed = ? WHERE id = ?", (next_allowed, host_id))

    def hosts(self) -> list[tuple[int, str, float, float, float, int]]:
        """(id, name, next allowed, backoff, last gap, fetched) of every host."""
        return self.db.execute(
            "SELECT id, name, next_allowed, backoff, last_gap, fetched FROM hosts").fetchall()

    def queued_by_level(self) -> list[tuple[int, int, int]]:
        """(host id, level, URLs queued) of every host and level with some."""
        return self.db.execute(
            "SELECT host_id, level, count(*) FROM urls WHERE state = 0 GROUP BY host_id, level").fetchall()

    def demoted(self) -> list[tuple[int, int]]:
        """(host id, pages it may fetch in all) of every demoted host."""
        return self.db.execute("SELECT host_id, pages FROM demoted").fetchall()

    # ---------------------------------------------------------------- lifecycle

    def commit(self) -> None:
        """Write the counters added since the last commit, and commit every write so far.
        ``FrontierFull`` when the disk has no room: every write since the last commit is
        rolled back (the counters are written at the next commit)."""
        try:
            if self._unsaved:
                self.db.executemany("INSERT INTO counters (name, value) VALUES (?, ?) ON CONFLICT (name) "
                                    "DO UPDATE SET value = value + excluded.value", self._unsaved.items())
            self.db.commit()
        except sqlite3.OperationalError as error:
            if not is_sqlite_full(error):
                raise
            self.db.rollback()
            raise FrontierFull(f"{self.path}: {error}") from error
        self._unsaved = {}

    def close(self) -> None:
        """Close the file, its writes since the last commit dropped (``commit`` first)."""
        self.db.close()
        if self.lock is not None:
            self.lock.close()  # releases the lock


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
