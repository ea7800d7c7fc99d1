"""The service's durable list of crawls: ids, arguments, state and exit status, in SQLite.

A restarted ``scrapy serve`` reads it back, so it still knows every crawl it started and
can tell which of those it thought running have died meanwhile.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

# A crawl's life: queued (accepted, not yet running), running, then one of the last three.
STATES = ("queued", "running", "finished", "stopped", "failed")
ENDED = ("finished", "stopped", "failed")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS crawls (
    crawl_id TEXT PRIMARY KEY,
    spec TEXT NOT NULL,          -- JSON: seeds, scope, max_pages, settings
    state TEXT NOT NULL,
    pid INTEGER,                 -- the child process (local back end)
    job TEXT,                    -- the scrapyd job id (scrapyd back end)
    exit_status INTEGER,
    error TEXT,                  -- why it failed: the tail of its log
    stop_requested INTEGER NOT NULL DEFAULT 0,
    created_at REAL NOT NULL,
    started_at REAL,
    finished_at REAL
);
-- The watcher's readings of running crawls: the dashboard's fetch rate over time.
CREATE TABLE IF NOT EXISTS samples (crawl_id TEXT NOT NULL, at REAL NOT NULL, fetched INTEGER NOT NULL,
                                    stored INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS samples_crawl ON samples (crawl_id, at);
"""


@dataclass
class Crawl:
    """One row of the registry."""

    crawl_id: str
    spec: dict
    state: str = "queued"
    pid: int | None = None
    job: str | None = None
    exit_status: int | None = None
    error: str | None = None
    stop_requested: bool = False
    created_at: float = field(default_factory=time.time)
    started_at: float | None = None
    finished_at: float | None = None


class Registry:
    """The crawls of one service, in ``path`` (made if missing). Thread-safe: the HTTP
    server's threads and the watcher share it."""

    def __init__(self, path: str | Path) -> None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), check_same_thread=False, timeout=30)
        self._db.executescript("PRAGMA journal_mode=WAL;" + _SCHEMA)
        self._lock = threading.Lock()

    def add(self, crawl: Crawl) -> None:
        row = asdict(crawl)
        row["spec"] = json.dumps(crawl.spec)
        with self._lock, self._db:
            self._db.execute(f"INSERT INTO crawls ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
                             list(row.values()))

    def update(self, crawl_id: str, **values: object) -> None:
        with self._lock, self._db:
            self._db.execute(f"UPDATE crawls SET {', '.join(f'{k} = ?' for k in values)} WHERE crawl_id = ?",
                             [*values.values(), crawl_id])

    def get(self, crawl_id: str) -> Crawl | None:
        found = self._select("WHERE crawl_id = ?", (crawl_id,))
        return found[0] if found else None

    def all(self) -> list[Crawl]:
        """Every crawl, newest first."""
        return self._select("ORDER BY created_at DESC", ())

    def active(self) -> list[Crawl]:
        """Crawls queued or running."""
        return self._select("WHERE state IN ('queued', 'running') ORDER BY created_at", ())

    def add_sample(self, crawl_id: str, at: float, fetched: int, stored: int) -> None:
        with self._lock, self._db:
            self._db.execute("INSERT INTO samples VALUES (?, ?, ?, ?)", (crawl_id, at, fetched, stored))

    def samples(self, crawl_id: str, limit: int) -> list[tuple[float, int, int]]:
        """The last ``limit`` (time, fetched, stored) readings of a crawl, oldest first."""
        with self._lock:
            rows = self._db.execute("SELECT at, fetched, stored FROM samples WHERE crawl_id = ? "
                                    "ORDER BY at DESC LIMIT ?", (crawl_id, limit)).fetchall()
        return rows[::-1]

    def _select(self, where: str, args: tuple) -> list[Crawl]:
        with self._lock:
            cursor = self._db.execute(f"SELECT * FROM crawls {where}", args)
            names = [d[0] for d in cursor.description]
            rows = cursor.fetchall()
        crawls = []
        for row in rows:
            values = dict(zip(names, row, strict=True))
            values["spec"] = json.loads(values["spec"])
            values["stop_requested"] = bool(values["stop_requested"])
            crawls.append(Crawl(**values))
        return crawls

    def close(self) -> None:
        self._db.close()
