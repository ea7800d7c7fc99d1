"""The page index: URL fingerprint -> where the page's latest metadata record lies.

``GET /pages`` and ``find_indexed`` read one row and one ranged read of the store, never a
scan of ``meta/``. The index is a SQLite file on the local disk (``STORE_INDEX_DIR``) for
local and S3 stores alike: each row names its store, so an index may serve several
stores, and several crawl processes may write one index (WAL, waits for the lock).
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from crawler.store.files import Location, TornRecord, iter_members
from crawler.store.space import is_sqlite_full
from crawler.urls.keys import url_fingerprint

if TYPE_CHECKING:
    from crawler.store.files import LocalStore
    from crawler.store.s3 import S3Store

logger = logging.getLogger(__name__)

INDEX_FILE = "pages.sqlite"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS pages (
    fp INTEGER PRIMARY KEY,  -- 64-bit fingerprint of the normalised URL, signed
    url TEXT NOT NULL,
    store TEXT NOT NULL,     -- the store's root: a local directory or s3://bucket/prefix
    file TEXT NOT NULL,      -- the metadata record's gzip member in that store
    offset INTEGER NOT NULL,
    length INTEGER NOT NULL
);
"""


def _signed(fp: int) -> int:
    return fp - (1 << 64) if fp >= 1 << 63 else fp


class PageIndex:
    """The index file in ``directory`` (made if missing); ``add`` keeps a URL's latest row."""

    def __init__(self, directory: str | Path) -> None:
        path = Path(directory) / INDEX_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        # Crawl processes write it together: each waits up to 30 s for the others' commits.
        self.db = sqlite3.connect(str(path), timeout=30, check_same_thread=False)
        self.db.executescript("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;" + _SCHEMA)
        self.full = False  # its last commit found no room
        self._waiting: list[tuple[int, str, str, str, int, int]] = []  # rows not yet committed

    def add(self, rows: Iterable[tuple[str, str, Location]]) -> None:
        """Index (url, store root, metadata record location) rows, committed at once. With no
        room on its disk the commit is rolled back and the rows wait, in order, for the next
        ``add`` (or ``close``) that finds room: said once at WARNING."""
        self._waiting += [(_signed(url_fingerprint(url)), url, store, loc.file, loc.offset, loc.length)
                          for url, store, loc in rows]
        try:
            self.db.executemany("INSERT OR REPLACE INTO pages (fp, url, store, file, offset, length) "
                                "VALUES (?, ?, ?, ?, ?, ?)", self._waiting)
            self.db.commit()
        except sqlite3.OperationalError as error:
            if not is_sqlite_full(error):
                raise
            self.db.rollback()
            if not self.full:
                logger.warning("Page index %s has no room (%s): its rows wait in memory until it has",
                               self.path, error)
            self.full = True
            return
        if self.full:
            logger.info("Page index %s can be written again: %d rows that waited are indexed", self.path,
                        len(self._waiting))
        self.full, self._waiting = False, []

    def find(self, url: str) -> tuple[str, Location] | None:
        """(store root, metadata record location) of the normalised ``url``, or None."""
        row = self.db.execute("SELECT url, store, file, offset, length FROM pages WHERE fp = ?",
                              (_signed(url_fingerprint(url)),)).fetchone()
        if row is None or row[0] != url:  # a fingerprint collision is not this URL
            return None
        return row[1], Location(row[2], row[3], row[4])

    def close(self) -> None:
        if self._waiting:
            self.add([])
        if self._waiting:
            logger.warning("Page index %s still has no room: %d pages stored are not indexed",
                           self.path, len(self._waiting))
        self.db.close()


def read_metadata(store: LocalStore | S3Store, location: Location) -> dict:
    """The metadata record at ``location``: one ranged read, one gzip member;
    ``TornRecord`` if that member is incomplete."""
    data = store.read_range(location.file, location.offset, location.length)
    for member in iter_members(data, location.file):
        return json.loads(member)
    raise TornRecord(f"{location.file} at offset {location.offset}: incomplete record")
