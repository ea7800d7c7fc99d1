"""Where the content-seen decision keeps its state: in this process, or in Redis for all workers.

Both backends answer one question atomically, "which earlier page has this text (exactly
or within the simhash distance), and if none, remember this one as an original", and
keep per-host page and duplicate counts. The rule itself (which pages are compared how)
is ``ContentSeenMiddleware``'s; the backends only keep state.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from redis import Redis

from crawler.simhash import NearDupIndex


@dataclass(frozen=True)
class Match:
    """The earlier page a page duplicates: ``kind`` is "exact" or "near"."""

    kind: str
    original: str


class ContentIndex(Protocol):
    def check_and_add(self, sha: bytes, simhash: int, url: str, host: str, near: bool) -> Match | None:
        """The earlier page (another URL) with text `sha`, or with a simhash within the
        index's distance when `near`; else None, and the page is recorded as an original
        (its simhash indexed when `near`). Also counts the page, and the duplicate, for `host`."""

    def duplicate_rate(self, host: str) -> float:
        """Share of `host`'s pages that were duplicates (0 when none seen)."""


class MemoryContentIndex:
    """This process's pages: a dict of SHA-256 digests and a ``NearDupIndex``."""

    def __init__(self, max_distance: int = 3) -> None:
        self.exact: dict[bytes, str] = {}
        self.near = NearDupIndex(max_distance)
        self.pages: Counter[str] = Counter()
        self.duplicates: Counter[str] = Counter()

    def check_and_add(self, sha: bytes, simhash: int, url: str, host: str, near: bool) -> Match | None:
        self.pages[host] += 1
        original = self.exact.get(sha)
        if original == url:  # the same page fetched again, unchanged: already indexed
            return None
        match = Match("exact", original) if original is not None else None
        if match is None and near:
            original = self.near.find(simhash)
            if original is not None and original != url:
                match = Match("near", original)
        if match is not None:
            self.duplicates[host] += 1
            return match
        self.exact.setdefault(sha, url)
        if near:
            self.near.add(simhash, url)
        return None

    def duplicate_rate(self, host: str) -> float:
        pages = self.pages[host]
        return self.duplicates[host] / pages if pages else 0.0


# KEYS[1] = the index prefix P; ARGV = sha (16 bytes), simhash (8 bytes, big-endian), url,
# host, near ('1' or '0'), k. Returns {kind, original} or nil. Layout: P x:<hex of sha's first
# 2 bytes> hash sha -> url; P n<t>:<hex of block t> string of 8-byte simhashes whose block t
# has that value (t = 0..3, block 0 the least significant 16 bits); P s:<hex of block 0>
# hash simhash -> sha; P pages and P dups hashes host -> count.
_CHECK_AND_ADD = """
local P, sha, fp, url, host = KEYS[1], ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local near, k = ARGV[5] == '1', tonumber(ARGV[6])
local band, rshift, bxor = bit.band, bit.rshift, bit.bxor
local function hex2(s, i) return string.format('%02x%02x', s:byte(i, i + 1)) end
local function popcount(x)
  x = x - band(rshift(x, 1), 0x55555555)
  x = band(x, 0x33333333) + band(rshift(x, 2), 0x33333333)
  x = band(x + rshift(x, 4), 0x0F0F0F0F)
  x = x + rshift(x, 8)
  return band(x + rshift(x, 16), 0x3F)
end
redis.call('HINCRBY', P .. 'pages', host, 1)
local exact_key = P .. 'x:' .. hex2(sha, 1)
local original = redis.call('HGET', exact_key, sha)
if original == url then return nil end
if original then
  redis.call('HINCRBY', P .. 'dups', host, 1)
  return {'exact', original}
end
if near then
  local hi, lo = struct.unpack('>I4I4', fp)
  local best_distance, best = k + 1, nil
  for t = 0, 3 do
    local bucket = redis.call('GET', P .. 'n' .. t .. ':' .. hex2(fp, 7 - 2 * t))
    if bucket then
      for i = 1, #bucket, 8 do
        local a, b = struct.unpack('>I4I4', bucket, i)
        local distance = popcount(bxor(hi, a)) + popcount(bxor(lo, b))
        if distance < best_distance then
          best_distance, best = distance, string.sub(bucket, i, i + 7)
          if distance == 0 then break end
        end
      end
    end
    if best_distance == 0 then break end
  end
  if best then
    local best_sha = redis.call('HGET', P .. 's:' .. hex2(best, 7), best)
    original = redis.call('HGET', P .. 'x:' .. hex2(best_sha, 1), best_sha)
    if original ~= url then
      redis.call('HINCRBY', P .. 'dups', host, 1)
      return {'near', original}
    end
  end
end
redis.call('HSETNX', exact_key, sha, url)
if near then
  for t = 0, 3 do redis.call('APPEND', P .. 'n' .. t .. ':' .. hex2(fp, 7 - 2 * t), fp) end
  redis.call('HSET', P .. 's:' .. hex2(fp, 7), fp, sha)
end
return nil
"""


class RedisContentIndex:
    """Pages of every worker of a Redis crawl, under ``crawl:{<crawl id>}:content:``.

    One Lua script checks and adds, so of two workers fetching copies of one page at
    once exactly one keeps it as the original. A near lookup reads the same 4 buckets
    as ``NearDupIndex`` (the 16-bit blocks of the simhash) and compares their 8-byte
    fingerprints inside Redis; a page costs its 4 x 8 bytes there, one simhash -> SHA
    entry, and one SHA -> URL entry (``bench/dedup.py`` measures bytes and lookups/s).
    Only the first 16 bytes of the SHA-256 are kept: 128 bits, no collision in practice.
    """

    def __init__(self, client: Redis, crawl_id: str, max_distance: int = 3) -> None:
        if not 0 <= max_distance <= 3:
            raise ValueError(f"SIMHASH_MAX_DISTANCE must be 0..3, got {max_distance}")
        self.redis = client
        self.prefix = f"crawl:{{{crawl_id}}}:content:"
        self.max_distance = max_distance
        self._script = client.register_script(_CHECK_AND_ADD)

    def _args(self, sha: bytes, simhash: int, url: str, host: str, near: bool) -> list[object]:
        return [sha[:16], simhash.to_bytes(8, "big"), url, host, int(near), self.max_distance]

    @staticmethod
    def _match(found: list[bytes] | None) -> Match | None:
        return None if found is None else Match(found[0].decode(), found[1].decode())

    def check_and_add(self, sha: bytes, simhash: int, url: str, host: str, near: bool) -> Match | None:
        return self._match(self._script(keys=[self.prefix], args=self._args(sha, simhash, url, host, near)))

    def check_and_add_many(self, pages: Iterable[tuple[bytes, int, str, str, bool]]) -> list[Match | None]:
        """``check_and_add`` for each of `pages`, in order, in one round trip (bulk loads)."""
        pipe = self.redis.pipeline(transaction=False)
        for page in pages:
            self._script(keys=[self.prefix], args=self._args(*page), client=pipe)
        return [self._match(found) for found in pipe.execute()]

    def duplicate_rate(self, host: str) -> float:
        pipe = self.redis.pipeline(transaction=False)
        pipe.hget(self.prefix + "pages", host)
        pipe.hget(self.prefix + "dups", host)
        pages, duplicates = pipe.execute()
        return int(duplicates or 0) / int(pages) if pages else 0.0
