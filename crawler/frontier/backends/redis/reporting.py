"""The Redis frontier's counts and views: crawl-wide counters, reads of a crawl's state that
decide nothing (stats, gauges, the dashboard's host list) and deleting a crawl."""

from __future__ import annotations

import itertools

from redis import Redis, RedisCluster


def text(value: bytes | str) -> str:
    """A reply's string: redis-py gives bytes, or str from a client that decodes replies."""
    return value.decode() if isinstance(value, bytes) else value


def forget_keys(client: Redis | RedisCluster, prefix: str) -> int:
    """Delete every key that starts with ``prefix``, scanned and unlinked in batches; how many."""
    deleted = 0
    batch = []
    for key in client.scan_iter(match=prefix.replace("{", "\\{").replace("}", "\\}") + "*", count=1000):
        batch.append(key)
        if len(batch) == 1000:
            deleted += client.unlink(*batch)
            batch.clear()
    if batch:
        deleted += client.unlink(*batch)
    return deleted


class RedisReporting:
    """Counts of ``RedisFrontier``'s state under ``prefix``, read with plain commands."""

    redis: Redis | RedisCluster
    prefix: str
    ready_keys: list[str]

    @property
    def waiting(self) -> int:
        return int(self.redis.zcard(self.prefix + "waiting"))

    @property
    def revisits(self) -> int:
        return int(self.redis.zcard(self.prefix + "revisits"))

    @property
    def counters(self) -> dict[str, int]:
        raw = self.redis.hgetall(self.prefix + "counters")
        return {text(k): int(v) for k, v in raw.items() if k not in (b"queued", b"seen")}

    @property
    def queued(self) -> int:
        return int(self.redis.hget(self.prefix + "counters", "queued") or 0)

    @property
    def leased(self) -> int:
        return int(self.redis.zcard(self.prefix + "leases"))

    def done_count(self) -> int:
        seen = int(self.redis.hget(self.prefix + "counters", "seen") or 0)
        dead = int(self.redis.hlen(self.prefix + "dead"))
        return max(0, seen - self.queued - self.leased - self.waiting - dead)

    def gauges(self, now: float) -> dict[str, int]:
        pipe = self.redis.pipeline(transaction=False)
        for key in self.ready_keys:
            pipe.zcard(key)
            pipe.zcount(key, "-inf", now)
        sizes = pipe.execute()
        return {"queued": self.queued, "leased": self.leased, "waiting": self.waiting,
                "revisits": self.revisits,
                "hosts/active": sum(sizes[0::2]) + self.leased,
                "hosts/ready": sum(sizes[1::2])}

    def count(self, key: str, n: int = 1) -> None:
        """Add to a crawl-wide counter (readable while the crawl runs: ``scrapy crawlstats``)."""
        self.redis.hincrby(self.prefix + "counters", key, n)

    def host_queues(self, limit: int, scan_keys: int = 10_000) -> list[tuple[str, int]]:
        """The ``limit`` hosts with the most URLs queued (a scan of at most ``scan_keys``
        queue keys: a view for the dashboard, not a count)."""
        pattern = self.prefix.replace("{", "\\{").replace("}", "\\}") + "q:*"
        keys = list(itertools.islice(self.redis.scan_iter(match=pattern, count=1000), scan_keys))
        pipe = self.redis.pipeline(transaction=False)
        for key in keys:
            pipe.llen(key)
        sizes: dict[str, int] = {}
        for key, n in zip(keys, pipe.execute(), strict=True):
            host = text(key)[len(self.prefix) + 2:].rsplit(":", 1)[0]
            sizes[host] = sizes.get(host, 0) + n
        return sorted(sizes.items(), key=lambda item: (-item[1], item[0]))[:limit]

    def host_details(self, hosts: list[str]) -> list[tuple[int, float | None, float, int]]:
        """For each host: (fetches in flight, next allowed fetch in epoch seconds, backoff in
        seconds, URLs waiting for a retry), from its politeness key's times (a view for the
        dashboard: two pipelined round trips)."""
        pipe = self.redis.pipeline(transaction=False)
        for host in hosts:
            pipe.hget(self.prefix + "host:" + host, "group")
            pipe.scard(self.prefix + "hwait:" + host)
        replies = pipe.execute()
        groups = [text(group or host.encode()) for host, group in zip(hosts, replies[::2], strict=True)]
        for group in groups:
            pipe.hmget(self.prefix + "host:" + group, "busy", "next_allowed", "backoff")
        out = []
        for (busy, next_allowed, backoff), waiting in zip(pipe.execute(), replies[1::2], strict=True):
            out.append((int(busy or 0), float(next_allowed) if next_allowed else None, float(backoff or 0),
                        int(waiting)))
        return out

    def forget(self) -> int:
        """Delete every key of this crawl; returns how many."""
        return forget_keys(self.redis, self.prefix)
