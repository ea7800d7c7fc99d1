"""The embedded frontier's SQLite file: its schema, URL states, and read-only readers of it
(crawl counts and host queues, readable while its crawl runs)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

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
    return fp - (1 << 64) if fp >= 1 << 63 else fp


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
