"""How long a host's robots.txt answer holds, how many hosts' rules a worker keeps,
and where a Redis crawl shares them."""

from __future__ import annotations

import logging
from collections import OrderedDict
from dataclasses import dataclass
from typing import cast

from redis import Redis, RedisCluster, RedisError
from redis.typing import EncodableT, FieldT

from crawler import defaults
from crawler.iothread import SparedCalls
from crawler.robots.rules import RobotsRules

logger = logging.getLogger(__name__)


@dataclass
class RobotsEntry:
    """A host's robots.txt as last fetched, and when to fetch it again."""

    rules: RobotsRules
    status_class: str  # "2xx", "4xx", "5xx", "unreachable", "redirects"
    expires: float
    failures: int = 0  # consecutive unreachable fetches


@dataclass(frozen=True)
class RobotsCachePolicy:
    """How long a robots.txt answer holds (RFC 9309 2.4), no I/O.

    A 2xx or 4xx answer holds ``ttl`` seconds. An unreachable one (5xx, 429, no
    response) means complete disallow and is retried after ``retry`` seconds,
    doubling per consecutive failure up to ``ttl``; if an earlier good copy is
    cached, that copy keeps applying meanwhile (2.4: "unless ... unreachable").
    """

    ttl: float = defaults.ROBOTSTXT_CACHE_TTL
    retry: float = defaults.ROBOTSTXT_RETRY_DELAY

    def after_fetch(self, previous: RobotsEntry | None, rules: RobotsRules | None, status_class: str,
                    now: float) -> RobotsEntry:
        """The entry after a fetch; ``rules`` None means unreachable."""
        if rules is not None:
            return RobotsEntry(rules, status_class, now + self.ttl)
        failures = (previous.failures if previous else 0) + 1
        wait = min(self.ttl, self.retry * 2 ** (failures - 1))
        if previous is not None and previous.rules.kind != "disallow_all":
            return RobotsEntry(previous.rules, previous.status_class, now + wait, failures)
        return RobotsEntry(RobotsRules.disallow_all(), status_class, now + wait, failures)


class RobotsLru:
    """The parsed rules of at most ``size`` hosts (their bodies are not kept), least
    recently used dropped first: a dropped host's robots.txt is fetched again when
    it comes back. Hand-written on an OrderedDict: functools' LRU caches calls, not
    entries set from outside."""

    def __init__(self, size: int) -> None:
        self.size = max(1, size)
        self._entries: OrderedDict[str, RobotsEntry] = OrderedDict()

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, origin: str) -> RobotsEntry | None:
        entry = self._entries.get(origin)
        if entry is not None:
            self._entries.move_to_end(origin)
        return entry

    def put(self, origin: str, entry: RobotsEntry) -> None:
        self._entries[origin] = entry
        self._entries.move_to_end(origin)
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)


class SharedRobotsCache:
    """robots.txt answers shared by the workers of a Redis crawl, so a host's robots.txt
    is fetched once for the crawl, not once per worker: ``crawl:{<id>}:robots:<origin>``
    hashes that expire with the answer, holding the robots.txt body that each worker
    parses. Redis errors are logged and ignored (each worker then fetches for itself).
    ``lookup`` and ``keep`` call Redis off the reactor (``calls``): a Redis that stops
    answering delays no request past ``REDIS_STALL_SECONDS``."""

    def __init__(self, client: Redis | RedisCluster, prefix: str, calls: SparedCalls | None = None) -> None:
        self.redis = client
        self.prefix = prefix
        self.calls = calls

    async def lookup(self, origin: str, token: str) -> RobotsEntry | None:
        """``load``, off the reactor; None while Redis is unreachable or stalled."""
        if self.calls is None:
            return self.load(origin, token)
        try:
            return await self.calls.call(self.load, origin, token)
        except RedisError as error:
            logger.warning("Shared robots.txt cache unreachable: %s", error)
            return None

    def keep(self, origin: str, entry: RobotsEntry, body: bytes | None) -> None:
        """``save``, off the reactor, without waiting for it."""
        if self.calls is None:
            self.save(origin, entry, body)
        else:
            self.calls.io.run(self.save, origin, entry, body)

    def load(self, origin: str, token: str) -> RobotsEntry | None:
        try:
            # The crawl's clients leave replies as bytes (no decode_responses).
            stored = cast("dict[bytes, bytes]", self.redis.hgetall(self.prefix + origin))
        except RedisError as error:
            logger.warning("Shared robots.txt cache unreachable: %s", error)
            return None
        if not stored:
            return None
        body, kind = stored.get(b"body"), stored[b"kind"]
        if kind == b"disallow_all":
            rules = RobotsRules.disallow_all()
        elif kind == b"allow_all":
            rules = RobotsRules.allow_all()
        elif body is not None:
            rules = RobotsRules.parse(body, token)
        else:
            return None  # parsed rules whose body went with an earlier answer: fetch afresh
        return RobotsEntry(rules, stored[b"status_class"].decode(), float(stored[b"expires"]),
                           int(stored[b"failures"]))

    def save(self, origin: str, entry: RobotsEntry, body: bytes | None) -> None:
        """Store ``entry``; ``body`` is the robots.txt it was parsed from (None: keep the
        stored one, as when a failed refresh keeps the earlier rules)."""
        fields: dict[FieldT, EncodableT] = {"kind": entry.rules.kind, "status_class": entry.status_class,
                  "expires": entry.expires, "failures": entry.failures}
        if body is not None:
            fields["body"] = body
        try:
            pipe = self.redis.pipeline()
            if body is not None or entry.rules.kind != "parsed":
                pipe.delete(self.prefix + origin)
            pipe.hset(self.prefix + origin, mapping=fields)
            pipe.expireat(self.prefix + origin, int(entry.expires) + 1)
            pipe.execute()
        except RedisError as error:
            logger.warning("Shared robots.txt cache unreachable: %s", error)
