"""Where the content-seen decision keeps its state: in this process, or in Redis for all workers.

Every backend answers one question, "which earlier page has this text (exactly or
within the simhash distance), and if none, remember this one as an original", and keeps
per-host page and duplicate counts. Which answer that is, given what the state holds,
is ``judge``'s (pure); the in-process and one-Redis backends answer atomically, the
Redis Cluster one (``crawler.dedup.split``) shard by shard. Which pages are compared
how is ``ContentSeenMiddleware``'s.
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from typing import Any, Protocol

import numpy as np
from redis import Redis

from crawler.context.keys import CrawlKeys
from crawler.dedup.near import NearDupIndex, blocks, nearest

# (sha-256 digest, simhash, url, host, near): the arguments of check_and_add
PageKeys = tuple[bytes, int, str, str, bool]
ScriptArg = bytes | str | int


@dataclass(frozen=True)
class Match:
    """The earlier page a page duplicates: ``kind`` is "exact" or "near"."""

    kind: str
    original: str


def judge(url: str, exact: str | None, near: str | None) -> tuple[Match | None, bool]:
    """The rule, given what the index holds for a page at `url`: `exact`, the URL recorded
    with its text, and `near`, the URL of the nearest simhash within the distance (looked
    up only when `exact` is None). Returns (the earlier page it duplicates, whether to
    record it as an original). The page itself is no duplicate of itself: fetched again
    unchanged it is already recorded; changed a little it is recorded anew."""
    if exact == url:
        return None, False
    if exact is not None:
        return Match("exact", exact), False
    if near is not None and near != url:
        return Match("near", near), False
    return None, True


def lua(name: str) -> str:
    """A script of ``crawler/dedup/lua/`` (installed with the package), after
    ``versions.lua``: the rule of one version per URL both Redis indexes run."""
    folder = resources.files("crawler.dedup").joinpath("lua")
    return "".join(folder.joinpath(part).read_text(encoding="utf-8") for part in ("versions.lua", name))


def packed_fingerprints(data: bytes | None, record: int = 8) -> array:
    """The big-endian 64-bit simhashes that start each `record`-byte record of `data`,
    as an ``array('Q')`` for ``nearest``."""
    values = np.frombuffer(data or b"", ">u8").reshape(-1, record // 8)[:, 0]
    return array("Q", values.astype(np.uint64).tobytes())


class ContentIndex(Protocol):
    def check_and_add(self, sha: bytes, simhash: int, url: str, host: str, near: bool) -> Match | None:
        """The earlier page (another URL) with text `sha`, or with a simhash within the
        index's distance when `near`; else None, and the page is recorded as an original
        (its simhash indexed when `near`). Also counts the page, and the duplicate, for `host`."""

    def duplicate_rate(self, host: str) -> float:
        """Share of `host`'s pages that were duplicates (0 when none seen)."""


class MemoryContentIndex:
    """This process's pages: a dict of SHA-256 digests and a ``NearDupIndex``, one
    version per URL (a page's new text replaces its old one)."""

    def __init__(self, max_distance: int = 3) -> None:
        self.exact: dict[bytes, str] = {}
        self.near = NearDupIndex(max_distance)
        self.versions: dict[str, tuple[bytes, int | None]] = {}  # url -> its recorded text
        self.pages: Counter[str] = Counter()
        self.duplicates: Counter[str] = Counter()

    def check_and_add(self, sha: bytes, simhash: int, url: str, host: str, near: bool) -> Match | None:
        self.pages[host] += 1
        exact = self.exact.get(sha)
        match, record = judge(url, exact, self.near.find(simhash) if near and exact is None else None)
        if match is not None:
            self.duplicates[host] += 1
        if record:
            self._forget_version(url, sha)
            self.exact[sha] = url
            self.versions[url] = (sha, simhash if near else None)
            if near:
                self.near.add(simhash, url)
        return match

    def _forget_version(self, url: str, sha: bytes) -> None:
        """A page's new text replaces its old one: the index holds one version per URL."""
        old = self.versions.get(url)
        if old is None or old[0] == sha:
            return
        if self.exact.get(old[0]) == url:
            del self.exact[old[0]]
        if old[1] is not None:
            self.near.remove(old[1], url)

    def duplicate_rate(self, host: str) -> float:
        pages = self.pages[host]
        return self.duplicates[host] / pages if pages else 0.0


_CHECK_AND_ADD = lua("check_and_add.lua")


class RedisContentIndex:
    """Pages of every worker of a Redis crawl, under ``crawl:{<crawl id>}:content:``.

    A near lookup reads the 4 buckets of the simhash's 16-bit blocks (one MGET) and
    finds the nearest fingerprint here, with C-level iteration as ``NearDupIndex``
    does, rather than in Lua (~1 us a candidate in Redis, so ~9,000 lookups/s at a
    million pages). Then one Lua script decides and adds: it checks the SHA, scans only
    what was appended to those buckets since the read (the buckets only grow), and
    records the page as an original when nothing matched, so of two workers fetching
    copies of one page at once exactly one keeps it. A page costs its 4 x 8 bytes in
    the buckets, one simhash -> SHA entry, one SHA -> URL entry and one URL -> version
    entry (``bench/dedup.py`` measures bytes and lookups/s): one version per URL, its
    new text replacing its old one. Only the first 16 bytes of the SHA-256 are kept:
    128 bits, no collision in practice.
    """

    def __init__(self, client: Redis, crawl_id: str, max_distance: int = 3) -> None:
        if not 0 <= max_distance <= 3:
            raise ValueError(f"SIMHASH_MAX_DISTANCE must be 0..3, got {max_distance}")
        self.redis = client
        self.prefix = CrawlKeys(crawl_id).key("content:")
        self.max_distance = max_distance
        self._script = client.register_script(_CHECK_AND_ADD)

    def _bucket_keys(self, simhash: int) -> list[str]:
        """The 4 buckets of `simhash`, then the count of cuts they are read with."""
        return [*(f"{self.prefix}n{t}:{block:04x}" for t, block in enumerate(blocks(simhash))),
                self.prefix + "cuts"]

    def _nearest(self, simhash: int, read: list[Any]) -> list[ScriptArg]:
        """Script arguments for what the caller saw: nearest simhash, its distance, bucket
        lengths, the count of cuts."""
        buckets, cuts = read[:4], read[4]
        hit = nearest(simhash, map(packed_fingerprints, buckets), self.max_distance + 1)
        best: list[ScriptArg] = ([b"", self.max_distance + 1] if hit is None
                                 else [hit[1].to_bytes(8, "big"), hit[0]])
        return [*best, *(len(data or b"") for data in buckets), cuts or b"0"]

    def _args(self, page: PageKeys, buckets: list[Any] | None) -> list[ScriptArg]:
        sha, simhash, url, host, near = page
        args: list[ScriptArg] = [sha[:16], simhash.to_bytes(8, "big"), url, host, int(near),
                                 self.max_distance]
        return args + self._nearest(simhash, buckets) if near and buckets is not None else args

    @staticmethod
    def _match(found: list[bytes] | None) -> Match | None:
        return None if found is None else Match(found[0].decode(), found[1].decode())

    def check_and_add(self, sha: bytes, simhash: int, url: str, host: str, near: bool) -> Match | None:
        buckets = self.redis.mget(self._bucket_keys(simhash)) if near else None
        args = self._args((sha, simhash, url, host, near), buckets)
        return self._match(self._script(keys=[self.prefix], args=args))

    def check_and_add_many(self, pages: Iterable[PageKeys]) -> list[Match | None]:
        """``check_and_add`` for each of `pages`, in order, in two round trips (bulk loads)."""
        pages = list(pages)
        reads = self.redis.pipeline(transaction=False)
        for _, simhash, _, _, near in pages:
            if near:
                reads.mget(self._bucket_keys(simhash))
        seen = iter(reads.execute())
        writes = self.redis.pipeline(transaction=False)
        for page in pages:
            args = self._args(page, next(seen) if page[4] else None)
            self._script(keys=[self.prefix], args=args, client=writes)
        return [self._match(found) for found in writes.execute()]

    def duplicate_rate(self, host: str) -> float:
        pipe = self.redis.pipeline(transaction=False)
        pipe.hget(self.prefix + "pages", host)
        pipe.hget(self.prefix + "dups", host)
        pages, duplicates = pipe.execute()
        return int(duplicates or 0) / int(pages) if pages else 0.0
