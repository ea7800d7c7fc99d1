"""The content index of a Redis Cluster crawl, split over the crawl's shard tags by fingerprint,
so that its load, one check a page, is spread over every master instead of one.

Layout, under ``crawl:{<tag>}:content:`` for the tag a fingerprint picks among the
frontier's ``REDIS_SHARDS`` tags (``shard_tags``):

- ``x:<hex of the SHA's first 2 bytes>``, a hash SHA -> URL, on tag
  ``int(SHA's first 2 bytes) % shards``: the exact entries;
- ``n<t>:<hex of block t>``, for t = 0..3, a string of 24-byte records (the 8-byte
  big-endian simhash, then its page's 16-byte SHA), on tag ``(t << 16 | block t) %
  shards``: each simhash band table entry on the shard its band value picks;
- ``v:<first 3 hex of sha1(URL)>``, a hash URL -> the version it holds (SHA, then
  simhash when compared near), on tag ``int(those 3 hex) % shards``;
- ``pages`` and ``dups``, hashes host -> count, on tag ``crc32(host) % shards``.

A check is a few rounds, each one cluster pipeline (one round trip per node it touches,
the nodes in parallel): read the page's exact entry and 4 buckets (and count the page);
look up the URL of the nearest simhash found, or record an original: claim its text
(HSETNX of its SHA), swap its version in and append its 4 records, all in one round;
then forget the version it replaces (its exact entry if still the URL's, its 4 records
cut), or count a duplicate. The version rule is ``versions.lua``'s, the one-Redis
script's, run here as single-key scripts on each entry's own shard.

What is lost against one Redis's script: the check is no longer atomic. Two copies of
one text checked at once still keep one (the HSETNX on the SHA's shard decides), but two
near copies checked at once by two workers (within the round trip between one's read and
the other's write) may both be kept as originals: at least once, never a page lost. A
copy that loses the claim to another URL's check at the same instant holds the text as
its version all the same (its old one forgotten, its records equal to the winner's), so
every URL still holds one version and one set of records.
"""

from __future__ import annotations

import contextlib
import hashlib
import zlib
from collections.abc import Generator, Iterable
from typing import TYPE_CHECKING, Any

from redis import RedisError
from redis.exceptions import ClusterError, NoScriptError

from crawler import defaults
from crawler.context.keys import tagged
from crawler.dedup.index import Match, PageKeys, judge, lua, packed_fingerprints
from crawler.dedup.near import blocks, nearest
from crawler.frontier.backends.redis.cluster import shard_tags

if TYPE_CHECKING:
    from redis import Redis, RedisCluster
    from scrapy.settings import BaseSettings

RECORD = 24  # a bucket record: simhash (8 bytes, big-endian), then the page's SHA (16 bytes)

# A page's check: it yields each round's commands, is sent their replies, returns its answer.
Check = Generator[list[tuple[Any, ...]], list[Any], "Match | None"]


def _text(value: bytes | None) -> str | None:
    return None if value is None else value.decode()


class ShardScript:
    """A single-key script of ``crawler/dedup/lua/``, called by its SHA in a round."""

    def __init__(self, name: str) -> None:
        self.text = lua(name)
        self.sha = hashlib.sha1(self.text.encode()).hexdigest()

    def call(self, key: str, *args: Any) -> tuple[Any, ...]:
        return ("EVALSHA", self.sha, 1, key, *args)


SWAP_VERSION = ShardScript("swap_version.lua")
FORGET_EXACT = ShardScript("forget_exact.lua")
CUT_RECORD = ShardScript("cut_record.lua")


class ClusterContentIndex:
    """The ``ContentIndex`` of a Redis Cluster crawl: its state split over ``tags`` by
    fingerprint (see the module's docstring), its rule ``judge``'s, as in one Redis."""

    def __init__(self, client: RedisCluster | Redis, tags: list[str], max_distance: int = 3) -> None:
        if not 0 <= max_distance <= 3:
            raise ValueError(f"SIMHASH_MAX_DISTANCE must be 0..3, got {max_distance}")
        self.redis = client
        self.prefixes = [tagged(tag) + "content:" for tag in tags]
        self.max_distance = max_distance

    def _exact_key(self, sha: bytes) -> str:
        head = int.from_bytes(sha[:2], "big")
        return f"{self.prefixes[head % len(self.prefixes)]}x:{head:04x}"

    def _bucket_keys(self, simhash: int) -> list[str]:
        shards = len(self.prefixes)
        return [f"{self.prefixes[(t << 16 | block) % shards]}n{t}:{block:04x}"
                for t, block in enumerate(blocks(simhash))]

    def _version_key(self, url: str) -> str:
        head = hashlib.sha1(url.encode()).hexdigest()[:3]
        return f"{self.prefixes[int(head, 16) % len(self.prefixes)]}v:{head}"

    def _host_prefix(self, host: str) -> str:
        return self.prefixes[zlib.crc32(host.encode()) % len(self.prefixes)]

    def _nearest_sha(self, simhash: int, buckets: list[bytes | None]) -> bytes | None:
        """The SHA recorded with the nearest simhash within the distance, if any (the first
        of equals in bucket order, as ``nearest`` picks)."""
        arrays = [packed_fingerprints(data, RECORD) for data in buckets]
        hit = nearest(simhash, arrays, self.max_distance + 1)
        if hit is None:
            return None
        data, values = next((data, values) for data, values in zip(buckets, arrays, strict=True)
                            if hit[1] in values)
        at = RECORD * values.index(hit[1])
        return data[at + 8:at + RECORD]  # type: ignore[index]

    def _check(self, page: PageKeys) -> Check:
        sha, simhash, url, host, near = page
        sha = sha[:16]
        counts, exact_key = self._host_prefix(host), self._exact_key(sha)
        buckets = self._bucket_keys(simhash) if near else []
        read = yield [("HINCRBY", counts + "pages", host, 1), ("HGET", exact_key, sha),
                      *(("GET", key) for key in buckets)]
        exact = _text(read[1])
        found = None
        if exact is None and near:
            best = self._nearest_sha(simhash, read[2:])
            if best is not None:
                found = _text((yield [("HGET", self._exact_key(best), best)])[0])
        match, record = judge(url, exact, found)
        last: list[tuple[Any, ...]] = []  # the last round's commands
        if record:
            fp = simhash.to_bytes(8, "big") if near else b""
            claimed = yield [("HSETNX", exact_key, sha, url), ("HGET", exact_key, sha),
                             SWAP_VERSION.call(self._version_key(url), url, sha + fp),
                             *(("APPEND", key, fp + sha) for key in buckets)]
            match, _ = judge(url, _text(claimed[1]), None)  # another worker's copy recorded first?
            if claimed[2] is not None:
                last += self._forgetting(claimed[2], url)
            if not claimed[0] and match is None:  # this URL's text, recorded by a check of it at once
                last += [CUT_RECORD.call(key, fp + sha) for key in buckets]
        if match is not None:
            last.append(("HINCRBY", counts + "dups", host, 1))
        if last:
            yield last
        return match

    def _forgetting(self, old: bytes, url: str) -> list[tuple[Any, ...]]:
        """The calls that forget `url`'s replaced version `old`, as ``versions.lua`` says:
        its exact entry if it still names `url`, its 4 band records."""
        old_sha, old_fp = old[:16], old[16:]
        old_buckets = self._bucket_keys(int.from_bytes(old_fp, "big")) if old_fp else []
        return [FORGET_EXACT.call(self._exact_key(old_sha), old_sha, url),
                *(CUT_RECORD.call(key, old_fp + old_sha) for key in old_buckets)]

    def _send(self, rounds: dict[int, list[tuple[Any, ...]]]) -> list[Any]:
        commands = [command for round_commands in rounds.values() for command in round_commands]
        replies = self._execute(commands)
        missing = [i for i, reply in enumerate(replies) if isinstance(reply, NoScriptError)]
        if missing:  # a master that has not run the scripts yet (new, restarted, promoted)
            for script in (SWAP_VERSION, FORGET_EXACT, CUT_RECORD):
                self.redis.script_load(script.text)
            for i, reply in zip(missing, self._execute([commands[i] for i in missing]), strict=True):
                replies[i] = reply
        error = next((reply for reply in replies if isinstance(reply, Exception)), None)
        if error is not None:
            raise error
        return replies

    def _execute(self, commands: list[tuple[Any, ...]]) -> list[Any]:
        """`commands` in one cluster pipeline; errors of single commands among the replies."""
        pipe = self.redis.pipeline(transaction=False)
        for command in commands:
            pipe.execute_command(*command)
        try:
            return pipe.execute(raise_on_error=False)
        except AttributeError as error:  # redis-py's topology bug, as CrawlCluster raises it
            with contextlib.suppress(RedisError, AttributeError):
                self.redis.nodes_manager.initialize()  # type: ignore[union-attr]
            raise ClusterError(f"cluster topology changing: {error}") from error

    def check_and_add_many(self, pages: Iterable[PageKeys]) -> list[Match | None]:
        """``check_and_add`` for each of `pages`, all in the same rounds: at most 4 cluster
        pipelines whatever their number. Pages of one call are checked as at once: two
        near copies among them are both kept, two exact copies one."""
        checks = [self._check(page) for page in pages]
        answers: list[Match | None] = [None] * len(checks)
        rounds = {i: next(check) for i, check in enumerate(checks)}
        while rounds:
            replies = iter(self._send(rounds))
            following = {}
            for i, commands in rounds.items():
                try:
                    following[i] = checks[i].send([next(replies) for _ in commands])
                except StopIteration as done:
                    answers[i] = done.value
            rounds = following
        return answers

    def check_and_add(self, sha: bytes, simhash: int, url: str, host: str, near: bool) -> Match | None:
        return self.check_and_add_many([(sha, simhash, url, host, near)])[0]

    def duplicate_rate(self, host: str) -> float:
        counts = self._host_prefix(host)
        pipe = self.redis.pipeline(transaction=False)
        pipe.hget(counts + "pages", host)
        pipe.hget(counts + "dups", host)
        pages, duplicates = pipe.execute()
        return int(duplicates or 0) / int(pages) if pages else 0.0


def cluster_content_index(client: RedisCluster, settings: BaseSettings, crawl_id: str,
                          max_distance: int) -> ClusterContentIndex:
    """The index over the frontier's own shard tags (``REDIS_SHARDS``: a worker whose count
    differs from the crawl's is refused by the frontier when it opens)."""
    shards = settings.getint("REDIS_SHARDS", defaults.REDIS_SHARDS)
    return ClusterContentIndex(client, shard_tags(crawl_id, shards), max_distance)
