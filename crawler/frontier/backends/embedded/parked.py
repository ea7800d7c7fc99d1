"""The embedded frontier's parked URLs: retries waiting their delay, revisits waiting their
time, and dead letters, each a SQLite table beside ``urls`` (``embedded_store``)."""

from __future__ import annotations

from crawler.frontier.api import DeadLetter, Revisit
from crawler.frontier.backends.embedded.hosts import HostRecords
from crawler.frontier.backends.embedded.store import (
    DEAD,
    QUEUED,
    REVISIT,
    WAITING,
    UrlStore,
    signed,
    unsigned,
)


class ParkedUrls:
    """Retries, revisits and dead letters of ``EmbeddedFrontier``: their tables in ``store``,
    and how many wait. A URL is parked as its lease ends (``hosts``) and queued again into
    its host's record."""

    def __init__(self, store: UrlStore, hosts: HostRecords) -> None:
        self.store = store
        self.db = store.db
        self.hosts = hosts
        self.waiting = self.revisits = 0
        self.load()

    def load(self) -> None:
        """How many URLs wait, as ``store`` has them."""
        self.waiting = self.db.execute("SELECT count(*) FROM waiting").fetchone()[0]
        self.revisits = self.db.execute("SELECT count(*) FROM revisits").fetchone()[0]

    def retry_later(self, fp: int, token: int, request: str, due: float) -> bool:
        """A leased URL failed: keep it (``request``, with its attempts) and queue it again
        at ``due``. False if ``token`` is not its lease."""
        if self.hosts.end_lease(fp, token) is None:
            return False
        self.store.park(fp, WAITING, request)
        self.db.execute("INSERT OR REPLACE INTO waiting (fp, due) VALUES (?, ?)", (signed(fp), due))
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
        by_id = self.hosts.by_id() if rows else {}
        for fp, hid, level in rows:
            self.db.execute("UPDATE urls SET state = ?, seq = ? WHERE fp = ?",
                            (QUEUED, self.store.next_seq(), fp))
            self.db.execute(f"DELETE FROM {table} WHERE fp = ?", (fp,))
            host = by_id[hid]
            self.hosts.add_queued(host, level)
            self.hosts.schedule(host)
        return len(rows)

    def revisit_many(self, revisits: list[Revisit]) -> list[bool]:
        done = []
        for r in revisits:
            if self.hosts.end_lease(r.fp, r.token) is None:
                done.append(False)
                continue
            self.store.park(r.fp, REVISIT, r.request)
            self.revisits += self.db.execute(
                "INSERT OR REPLACE INTO revisits (fp, due, fetched_at) VALUES (?, ?, ?)",
                (signed(r.fp), r.due, r.fetched_at)).rowcount
            done.append(True)
        return done

    def forget_revisit(self, fp: int) -> None:
        """The URL is queued again before its revisit (a forced add): it has none now."""
        self.revisits -= self.db.execute("DELETE FROM revisits WHERE fp = ?", (signed(fp),)).rowcount

    def due_revisits(self, now: float, limit: int = 10_000) -> int:
        due = self._queue_parked("revisits", now, limit)
        self.revisits -= due
        return due

    def revisit_at(self, fp: int, host: str) -> tuple[float, float] | None:
        row = self.db.execute("SELECT due, fetched_at FROM revisits WHERE fp = ?", (signed(fp),)).fetchone()
        return None if row is None else (row[0], row[1])

    def hasten_revisit(self, fp: int, host: str, due: float) -> bool:
        return bool(self.db.execute("UPDATE revisits SET due = min(due, ?) WHERE fp = ?",
                                    (due, signed(fp))).rowcount)

    def next_revisit(self) -> float | None:
        due: float | None = self.db.execute("SELECT min(due) FROM revisits").fetchone()[0]
        return due

    def dead_letter(self, fp: int, token: int, request: str, error: str, now: float) -> bool:
        """A leased URL failed its last try: keep it as a dead letter (``dead_letters``)."""
        if self.hosts.end_lease(fp, token) is None:
            return False
        self.store.park(fp, DEAD, request)
        self.db.execute("INSERT OR REPLACE INTO dead_letters (fp, error, at) VALUES (?, ?, ?)",
                        (signed(fp), error, now))
        self.store.count("dead_letters")
        return True

    def dead_letters(self) -> list[DeadLetter]:
        return [DeadLetter(unsigned(fp), name, level, request, error, at)
                for fp, name, level, request, error, at in self.db.execute(
                    "SELECT d.fp, h.name, u.level, u.request, d.error, d.at FROM dead_letters d "
                    "JOIN urls u ON u.fp = d.fp JOIN hosts h ON h.id = u.host_id ORDER BY d.at")]

    def requeue_dead(self, letter: DeadLetter, request: str) -> bool:
        """Queue a dead letter again, as ``request`` (its attempts reset by the caller)."""
        fp = signed(letter.fp)
        if not self.db.execute("DELETE FROM dead_letters WHERE fp = ?", (fp,)).rowcount:
            return False
        self.db.execute("UPDATE urls SET state = ?, seq = ?, request = ? WHERE fp = ?",
                        (QUEUED, self.store.next_seq(), request, fp))
        host = self.hosts.host(letter.host)
        self.hosts.add_queued(host, letter.level)
        self.hosts.schedule(host)
        return True

    def dead_letter_host(self, name: str, error: str, now: float) -> int:
        host = self.hosts.hosts.get(name)
        if host is None:
            return 0
        self.db.execute("INSERT OR REPLACE INTO dead_letters (fp, error, at) SELECT fp, ?, ? FROM urls "
                        "WHERE host_id = ? AND state IN (?, ?)", (error, now, host.id, QUEUED, WAITING))
        self.db.execute("DELETE FROM waiting WHERE fp IN "
                        "(SELECT fp FROM urls WHERE host_id = ? AND state = ?)", (host.id, WAITING))
        dead: int = self.db.execute("UPDATE urls SET state = ? WHERE host_id = ? AND state IN (?, ?)",
                                    (DEAD, host.id, QUEUED, WAITING)).rowcount
        queued = self.hosts.clear_queued(host)
        self.waiting -= dead - queued
        if dead:
            self.store.count("dead_letters", dead)
        return dead
