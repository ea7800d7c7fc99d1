"""How long a host's robots.txt answer holds, and where a Redis crawl shares it."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from redis import Redis, RedisError

from crawler import defaults
from crawler.robots.rules import RobotsRules

logger = logging.getLogger(__name__)


@dataclass
class RobotsEntry:
    """A host's robots.txt as last fetched, and when to fetch it again."""

    rules: RobotsRules
    status_class: str  # "2xx", "4xx", "5xx", "unreachable", "redirects"
    expires: float
    failures: int = 0  # consecutive unreachable fetches
    body: bytes | None = None  # the robots.txt the rules were parsed from (2xx)


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
                    now: float, body: bytes | None = None) -> RobotsEntry:
        """The entry after a fetch; ``rules`` None means unreachable."""
        if rules is not None:
            return RobotsEntry(rules, status_class, now + self.ttl, body=body)
        failures = (previous.failures if previous else 0) + 1
        wait = min(self.ttl, self.retry * 2 ** (failures - 1))
        if previous is not None and previous.rules.kind != "disallow_all":
            return RobotsEntry(previous.rules, previous.status_class, now + wait, failures, previous.body)
        return RobotsEntry(RobotsRules.disallow_all(), status_class, now + wait, failures)


class SharedRobotsCache:
    """robots.txt answers shared by the workers of a Redis crawl, so a host's robots.txt
    is fetched once for the crawl, not once per worker: ``crawl:{<id>}:robots:<origin>``
    hashes that expire with the answer. Redis errors are logged and ignored (each worker
    then fetches for itself)."""

    def __init__(self, client: Redis, prefix: str) -> None:
        self.redis = client
        self.prefix = prefix

    def load(self, origin: str, token: str) -> RobotsEntry | None:
        try:
            stored = self.redis.hgetall(self.prefix + origin)
        except RedisError as error:
            logger.warning("Shared robots.txt cache unreachable: %s", error)
            return None
        if not stored:
            return None
        body = stored.get(b"body")
        if stored[b"kind"] == b"disallow_all":
            rules = RobotsRules.disallow_all()
        elif body is not None:
            rules = RobotsRules.parse(body, token)
        else:
            rules = RobotsRules.allow_all()
        return RobotsEntry(rules, stored[b"status_class"].decode(), float(stored[b"expires"]),
                           int(stored[b"failures"]), body)

    def save(self, origin: str, entry: RobotsEntry) -> None:
        fields = {"kind": entry.rules.kind, "status_class": entry.status_class,
                  "expires": entry.expires, "failures": entry.failures}
        if entry.body is not None:
            fields["body"] = entry.body
        try:
            pipe = self.redis.pipeline()
            pipe.delete(self.prefix + origin)
            pipe.hset(self.prefix + origin, mapping=fields)
            pipe.expireat(self.prefix + origin, int(entry.expires) + 1)
            pipe.execute()
        except RedisError as error:
            logger.warning("Shared robots.txt cache unreachable: %s", error)
