"""Where the traps' per-host learned state lives: a SQLite file beside the embedded
frontier's, or Redis keys under the crawl's prefix for every worker of a Redis crawl.

The state: per host, the parameters settled (learned irrelevant, or found relevant),
the texts seen per parameter value (the evidence), the soft-404 probe's answer, the
duplicate outcomes of its latest pages, and whether it was demoted. The rules that
read it are in ``crawler.traps.params`` and ``crawler.traps.content``; a store only
keeps state, and each step that must happen once across workers (settle a parameter,
claim a probe, demote a host) answers whether this call was the one.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from importlib import resources
from pathlib import Path
from typing import Protocol, cast

from redis import Redis, RedisCluster

from crawler.context.keys import CrawlKeys
from crawler.store.space import is_sqlite_full
from crawler.traps.content import Probe

logger = logging.getLogger(__name__)


class TrapStore(Protocol):
    def learned(self, host: str) -> frozenset[str]:
        """The parameters learned irrelevant for ``host``."""

    def settled(self, host: str) -> frozenset[str]:
        """The parameters of ``host`` learned or found relevant: no more evidence is needed."""

    def settle(self, host: str, name: str, irrelevant: bool) -> bool:
        """Settle parameter ``name`` of ``host``; True if this call settled it."""

    def observe(self, host: str, name: str, rest: str, value: str, digest: str,
                most: int) -> dict[str, str]:
        """Record that ``name=value`` over ``rest`` (the URL without it) gave text
        ``digest`` (kept for at most ``most`` values); every value -> digest so far."""

    def seen_without(self, host: str, name: str, rest: str) -> bool:
        """Whether a page of ``rest`` with some value of ``name`` was observed."""

    def keep_bare(self, host: str, key: str, digest: str) -> None:
        """Page ``key`` of ``host``, a URL without parameters, gave text ``digest``."""

    def bare(self, host: str, key: str) -> str | None:
        """The text ``keep_bare`` kept for page ``key`` of ``host``, if any."""

    def claim_probe(self, host: str) -> bool:
        """True for the first caller only: that one fetches the host's probe."""

    def set_probe(self, host: str, probe: Probe) -> None:
        """The host answered 2xx at its probe path with this text."""

    def probe(self, host: str) -> Probe | None: ...

    def record_page(self, host: str, duplicate: bool, window: int) -> list[bool]:
        """Add a page's outcome; the last ``window`` outcomes, newest first."""

    def demote(self, host: str) -> bool:
        """Mark ``host`` demoted; True if this call did."""

    def close(self) -> None: ...


_SCHEMA = """
CREATE TABLE IF NOT EXISTS params (host TEXT, name TEXT, irrelevant INTEGER NOT NULL,
                                   PRIMARY KEY (host, name));
CREATE TABLE IF NOT EXISTS evidence (host TEXT, name TEXT, rest TEXT, value TEXT, digest TEXT,
                                     PRIMARY KEY (host, name, rest, value));
CREATE TABLE IF NOT EXISTS bare (host TEXT, key TEXT, digest TEXT, PRIMARY KEY (host, key));
CREATE TABLE IF NOT EXISTS probes (host TEXT PRIMARY KEY, url TEXT, sha256 TEXT, simhash TEXT);
CREATE TABLE IF NOT EXISTS recent (host TEXT PRIMARY KEY, outcomes TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS demoted (host TEXT PRIMARY KEY);
"""


class EmbeddedTrapStore:
    """The state in SQLite at ``path`` (``traps.sqlite`` beside ``frontier.sqlite``;
    ``":memory:"`` in tests), every step committed as it is made."""

    def __init__(self, path: str | Path) -> None:
        if str(path) != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
        self.db.executescript("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;" + _SCHEMA)
        self.path = path
        self.full = False  # its last write found no room

    def _write(self, sql: str, params: tuple[object, ...]) -> int:
        """One step, committed; the rows it changed. With no room on the disk the step is not
        kept (0: the traps learn from later pages) and that is said once at WARNING."""
        try:
            changed: int = self.db.execute(sql, params).rowcount
        except sqlite3.OperationalError as error:
            if not is_sqlite_full(error):
                raise
            if not self.full:
                logger.warning("Trap state %s has no room (%s): what pages teach the traps is not kept "
                               "until it has", self.path, error)
            self.full = True
            return 0
        self.full = False
        return changed

    def _names(self, host: str, where: str) -> frozenset[str]:
        rows = self.db.execute(f"SELECT name FROM params WHERE host = ? {where}", (host,))
        return frozenset(name for (name,) in rows)

    def learned(self, host: str) -> frozenset[str]:
        return self._names(host, "AND irrelevant = 1")

    def settled(self, host: str) -> frozenset[str]:
        return self._names(host, "")

    def settle(self, host: str, name: str, irrelevant: bool) -> bool:
        return bool(self._write("INSERT OR IGNORE INTO params VALUES (?, ?, ?)",
                                (host, name, int(irrelevant))))

    def observe(self, host: str, name: str, rest: str, value: str, digest: str,
                most: int) -> dict[str, str]:
        key = (host, name, rest)
        query = "SELECT value, digest FROM evidence WHERE host = ? AND name = ? AND rest = ?"
        texts = dict(self.db.execute(query, key).fetchall())
        if value not in texts and len(texts) < most:
            self._write("INSERT INTO evidence VALUES (?, ?, ?, ?, ?)", (*key, value, digest))
            texts[value] = digest
        return texts

    def seen_without(self, host: str, name: str, rest: str) -> bool:
        return self.db.execute("SELECT 1 FROM evidence WHERE host = ? AND name = ? AND rest = ? LIMIT 1",
                               (host, name, rest)).fetchone() is not None

    def keep_bare(self, host: str, key: str, digest: str) -> None:
        self._write("INSERT OR REPLACE INTO bare VALUES (?, ?, ?)", (host, key, digest))

    def bare(self, host: str, key: str) -> str | None:
        row = self.db.execute("SELECT digest FROM bare WHERE host = ? AND key = ?", (host, key)).fetchone()
        return None if row is None else str(row[0])

    def claim_probe(self, host: str) -> bool:
        return bool(self._write("INSERT OR IGNORE INTO probes (host) VALUES (?)", (host,)))

    def set_probe(self, host: str, probe: Probe) -> None:
        self._write("INSERT OR REPLACE INTO probes VALUES (?, ?, ?, ?)",
                    (host, probe.url, probe.sha256, f"{probe.simhash:016x}"))

    def probe(self, host: str) -> Probe | None:
        row = self.db.execute("SELECT url, sha256, simhash FROM probes WHERE host = ? AND url IS NOT NULL",
                              (host,)).fetchone()
        return None if row is None else Probe(row[0], row[1], int(row[2], 16))

    def record_page(self, host: str, duplicate: bool, window: int) -> list[bool]:
        row = self.db.execute("SELECT outcomes FROM recent WHERE host = ?", (host,)).fetchone()
        outcomes = ("1" if duplicate else "0") + (row[0] if row else "")
        outcomes = outcomes[:window]
        self._write("INSERT OR REPLACE INTO recent VALUES (?, ?)", (host, outcomes))
        return [c == "1" for c in outcomes]

    def demote(self, host: str) -> bool:
        return bool(self._write("INSERT OR IGNORE INTO demoted VALUES (?)", (host,)))

    def close(self) -> None:
        self.db.close()


class RedisTrapStore:
    """The state of every worker of a Redis crawl, under ``crawl:{<crawl id>}:traps:``:
    ``params:<host>`` (name -> 1 learned, 0 relevant), ``ev:<host>:<name>:<rest>``
    (value -> digest), ``bare:<host>`` (page key -> digest), ``probes`` (host -> JSON, ""
    while fetching), ``recent:<host>`` (list of 1/0, newest first) and ``demoted`` (set of
    hosts)."""

    def __init__(self, client: Redis | RedisCluster, crawl_id: str) -> None:
        self.redis = client
        self.prefix = CrawlKeys(crawl_id).key("traps:")
        self._observe = client.register_script(
            resources.files("crawler.traps").joinpath("lua", "observe.lua").read_text(encoding="utf-8"))

    def _params(self, host: str) -> dict[str, bool]:
        # The crawl's clients leave replies as bytes (no decode_responses).
        raw = cast("dict[bytes, bytes]", self.redis.hgetall(f"{self.prefix}params:{host}"))
        return {k.decode(): v == b"1" for k, v in raw.items()}

    def learned(self, host: str) -> frozenset[str]:
        return frozenset(name for name, irrelevant in self._params(host).items() if irrelevant)

    def settled(self, host: str) -> frozenset[str]:
        return frozenset(self._params(host))

    def settle(self, host: str, name: str, irrelevant: bool) -> bool:
        return bool(self.redis.hsetnx(f"{self.prefix}params:{host}", name, int(irrelevant)))

    def _evidence_key(self, host: str, name: str, rest: str) -> str:
        return f"{self.prefix}ev:{host}:{name}:{rest}"

    def observe(self, host: str, name: str, rest: str, value: str, digest: str,
                most: int) -> dict[str, str]:
        flat = self._observe(keys=[self._evidence_key(host, name, rest)], args=[value, digest, most])
        return {flat[i].decode(): flat[i + 1].decode() for i in range(0, len(flat), 2)}

    def seen_without(self, host: str, name: str, rest: str) -> bool:
        return bool(self.redis.exists(self._evidence_key(host, name, rest)))

    def keep_bare(self, host: str, key: str, digest: str) -> None:
        self.redis.hset(f"{self.prefix}bare:{host}", key, digest)

    def bare(self, host: str, key: str) -> str | None:
        raw = cast("bytes | None", self.redis.hget(f"{self.prefix}bare:{host}", key))
        return None if raw is None else raw.decode()

    def claim_probe(self, host: str) -> bool:
        return bool(self.redis.hsetnx(self.prefix + "probes", host, ""))

    def set_probe(self, host: str, probe: Probe) -> None:
        self.redis.hset(self.prefix + "probes", host, json.dumps([probe.url, probe.sha256, probe.simhash]))

    def probe(self, host: str) -> Probe | None:
        raw = self.redis.hget(self.prefix + "probes", host)
        return Probe(*json.loads(raw)) if raw else None

    def record_page(self, host: str, duplicate: bool, window: int) -> list[bool]:
        key = f"{self.prefix}recent:{host}"
        pipe = self.redis.pipeline(transaction=True)
        pipe.lpush(key, int(duplicate))
        pipe.ltrim(key, 0, window - 1)
        pipe.lrange(key, 0, -1)
        return [v == b"1" for v in pipe.execute()[2]]

    def demote(self, host: str) -> bool:
        return bool(self.redis.sadd(self.prefix + "demoted", host))

    def close(self) -> None:
        """Nothing to close: the client is the crawl's (``CrawlContext`` closes it)."""
