"""One crawl's Redis frontier split over several Redis servers (``REDIS_URL`` lists them)."""

from __future__ import annotations

import bisect
import functools
import hashlib
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

from redis import RedisError

from crawler.frontier.api import Claim, DeadLetter, Entry, Fetch, Revisit
from crawler.frontier.backends.redis.errors import raises_unavailable
from crawler.frontier.backends.redis.single import RedisFrontier
from crawler.frontier.policy import RetryPolicy, plan_claims

T = TypeVar("T")
I = TypeVar("I")  # noqa: E741 - an item of a batch


@raises_unavailable
class ShardedRedisFrontier:
    """One crawl's frontier split over several Redis servers by consistent hashing of
    the host: a host's queues, politeness state, leases and its URLs' seen entries all
    live on its shard, so no step spans two servers and adding a server moves only
    about 1/N of the hosts. (Per-IP politeness holds within a shard.)

    A claim round reads the head of every shard's ready sets (a pipeline per shard), and
    the policy plans it across the shards (``plan_claims``: the most urgent level first,
    with its biased share for low ones, the earliest-allowed host of a level first); then
    each shard with claims planned runs one claim script following its part of the plan.

    The shard is part of each lease token (``token * shards + shard``), so the calls
    that take a lease find their server without a lookup.
    """

    VNODES = 64  # points per server on the ring: an even spread of hosts
    shared = True

    def __init__(self, shards: Sequence[RedisFrontier]) -> None:
        if not shards:
            raise ValueError("no Redis shards")
        self.shards = shards
        self.policy = shards[0].policy
        self.levels = shards[0].levels
        self._cursor = 0  # this worker's position in the level cycle (PriorityLevels.host_level)
        self.lease_seconds = shards[0].lease_seconds
        ring = sorted(
            (int.from_bytes(hashlib.blake2b(f"{i}:{v}".encode(), digest_size=8).digest(), "big"), i)
            for i in range(len(shards)) for v in range(self.VNODES)
        )
        self._points = [point for point, _ in ring]
        self._owners = [owner for _, owner in ring]

    def shard_of(self, host: str) -> int:
        point = int.from_bytes(hashlib.blake2b(host.encode(), digest_size=8).digest(), "big")
        index = bisect.bisect(self._points, point) % len(self._points)
        return self._owners[index]

    def _by_token(self, token: int) -> tuple[RedisFrontier, int]:
        return self.shards[token % len(self.shards)], token // len(self.shards)

    @property
    def new_hosts(self) -> list[str]:
        return [host for shard in self.shards for host in shard.new_hosts]

    @new_hosts.setter
    def new_hosts(self, value: list[str]) -> None:
        for shard in self.shards:
            shard.new_hosts = list(value)

    def _each(self, calls: dict[int, Callable[[], T]], partial: bool = False) -> dict[int, T]:
        """Each shard's call, one after another (``ClusterFrontier``: all at once). An
        error is raised once every call has ended; ``partial``: only if no shard answered,
        the others' answers are returned (a view for housekeeping, not a count to close on)."""
        answers, errors = {}, []
        for index, call in calls.items():
            try:
                answers[index] = call()
            except RedisError as error:
                errors.append(error)
        if errors and (not partial or not answers):
            raise errors[0]
        return answers

    def _over_all(self, read: Callable[[RedisFrontier], T], partial: bool = False) -> list[T]:
        """``read`` of every shard (``partial``: of those that answer), in shard order."""
        return list(self._each({index: functools.partial(read, shard)
                                for index, shard in enumerate(self.shards)}, partial).values())

    def _scatter(self, items: list[I], shard_of: Callable[[I], int],
                 call: Callable[[RedisFrontier, list[I]], list[T]], default: T) -> list[T]:
        """``call`` once per shard with its items (in order), the answers put back in the
        items' order: one script per shard for a whole batch."""
        groups: dict[int, list[int]] = {}
        for position, item in enumerate(items):
            groups.setdefault(shard_of(item), []).append(position)
        answers = self._each({index: functools.partial(call, self.shards[index], [items[p] for p in group])
                              for index, group in groups.items()})
        results = [default] * len(items)
        for index, positions in groups.items():
            for position, answer in zip(positions, answers[index], strict=True):
                results[position] = answer
        return results

    def add(self, entries: Iterable[Entry], force: bool = False) -> list[bool]:
        return self._scatter(list(entries), lambda e: self.shard_of(e.host),
                             lambda shard, group: shard.add(group, force), False)

    def next(self, now: float) -> Claim | float | None:
        claims, wait = self.claim_many(now, 1)
        return claims[0] if claims else wait

    def fetched(self, fp: int, token: int, now: float, fetch_seconds: float, status: int | None,
                retry_after: float | None = None, hold_until: float = 0.0) -> float | None:
        shard, local = self._by_token(token)
        return shard.fetched(fp, local, now, fetch_seconds, status, retry_after, hold_until)

    def _peek(self, now: float, limit: int) -> dict[int, list[list[tuple[bytes, float]]]]:
        """Each shard's first ``limit`` hosts of each level's ready set, by allowed time."""
        def heads(shard: RedisFrontier) -> list[list[tuple[bytes, float]]]:
            pipe = shard.redis.pipeline(transaction=False)
            for key in shard.ready_keys:
                pipe.zrange(key, 0, limit - 1, withscores=True)
            return pipe.execute()
        return dict(enumerate(self._over_all(heads)))

    def _claim_shards(self, now: float, plan: dict[int, list[int]]
                      ) -> dict[int, tuple[list[Claim], float | None]]:
        """Each planned shard's claims, following its levels (``ClusterFrontier``: at once)."""
        return self._each({index: functools.partial(self.shards[index].claim_in_order, now, len(order), order)
                           for index, order in plan.items()})

    def claim_many(self, now: float, limit: int) -> tuple[list[Claim], float | None]:
        """Up to ``limit`` claims across the shards as the policy plans them from the heads
        of their ready sets; when fewer, the seconds until one is due (None: none queued)."""
        heads = self._peek(now, limit)
        due = {(index, level): [(score, host) for host, score in head if score <= now]
               for index, shard_heads in heads.items() for level, head in enumerate(shard_heads)}
        plan = plan_claims(self.levels, self._cursor, due, limit)
        waits = [min(head[0][1] for head in shard_heads if head) - now
                 for index, shard_heads in heads.items() if index not in plan and any(shard_heads)]
        claims: list[Claim] = []
        count = len(self.shards)
        for index, (got, wait) in self._claim_shards(now, plan).items():
            for claim in got:
                claim.token = claim.token * count + index
            claims += got
            if wait is not None:
                waits.append(wait)
            elif sum(len(due[index, level]) for level in range(self.levels.levels)) > len(got):
                waits.append(0.0)  # more were due there than it was asked for
        self._cursor = (self._cursor + len(claims)) % len(self.levels.cycle)
        if len(claims) >= limit:
            return claims, None
        return claims, min(waits) if waits else None

    def fetched_many(self, fetches: list[Fetch]) -> list[float | None]:
        """Each shard's fetches in one batch (two round trips a shard)."""
        count = len(self.shards)
        def local(f: Fetch) -> Fetch:
            return Fetch(f.fp, f.token // count, f.now, f.fetch_seconds, f.status, f.retry_after,
                         f.hold_until)
        return self._scatter(fetches, lambda f: f.token % count,
                             lambda shard, group: shard.fetched_many([local(f) for f in group]), None)

    def ack_many(self, leases: list[tuple[int, int]]) -> list[bool]:
        """One ack script per shard, for all of its leases."""
        count = len(self.shards)
        return self._scatter(leases, lambda lease: lease[1] % count, lambda shard, group: shard.ack_many(
            [(fp, token // count) for fp, token in group]), False)

    def ack(self, fp: int, token: int) -> bool:
        shard, local = self._by_token(token)
        return shard.ack(fp, local)

    def requeue(self, fp: int, token: int, request: str) -> bool:
        shard, local = self._by_token(token)
        return shard.requeue(fp, local, request)

    def renew(self, fp: int, token: int, expires: float) -> None:
        shard, local = self._by_token(token)
        shard.renew(fp, local, expires)

    def reap(self, now: float) -> int:
        return sum(self._over_all(lambda shard: shard.reap(now), partial=True))

    def heartbeat(self, now: float) -> list[tuple[str, int, float]]:
        """One line per dead worker, however many shards held its leases."""
        found: dict[str, tuple[int, float]] = {}
        for dead_on_shard in self._over_all(lambda shard: shard.heartbeat(now), partial=True):
            for worker, leases, silent in dead_on_shard:
                held, _ = found.get(worker, (0, 0.0))
                found[worker] = (held + leases, silent)
        return [(worker, held, silent) for worker, (held, silent) in found.items()]

    def leave(self, now: float, retry: RetryPolicy) -> int:
        return sum(self._over_all(lambda shard: shard.leave(now, retry), partial=True))

    def retry_later(self, fp: int, token: int, request: str, due: float) -> bool:
        shard, local = self._by_token(token)
        return shard.retry_later(fp, local, request, due)

    def due_retries(self, now: float) -> int:
        return sum(self._over_all(lambda shard: shard.due_retries(now), partial=True))

    def revisit_many(self, revisits: list[Revisit]) -> list[bool]:
        """One revisit script per shard, for all of its leases."""
        count = len(self.shards)
        return self._scatter(revisits, lambda r: r.token % count, lambda shard, group: shard.revisit_many(
            [Revisit(r.fp, r.token // count, r.request, r.due, r.fetched_at) for r in group]), False)

    def due_revisits(self, now: float, limit: int = 10_000) -> int:
        """Due revisits queued, up to ``limit``, shard by shard; a shard that does not answer
        is left for the next call (raised only when none answers)."""
        queued, errors = 0, []
        for shard in self.shards:
            if queued < limit:
                try:
                    queued += shard.due_revisits(now, limit - queued)
                except RedisError as error:
                    errors.append(error)
        if errors and len(errors) == len(self.shards):
            raise errors[0]
        return queued

    def revisit_at(self, fp: int, host: str) -> tuple[float, float] | None:
        return self.shards[self.shard_of(host)].revisit_at(fp, host)

    def hasten_revisit(self, fp: int, host: str, due: float) -> bool:
        return self.shards[self.shard_of(host)].hasten_revisit(fp, host, due)

    def next_revisit(self) -> float | None:
        times = [t for t in self._over_all(lambda shard: shard.next_revisit(), partial=True) if t is not None]
        return min(times) if times else None

    @property
    def revisits(self) -> int:
        return sum(self._over_all(lambda shard: shard.revisits))

    def dead_letter(self, fp: int, token: int, request: str, error: str, now: float) -> bool:
        shard, local = self._by_token(token)
        return shard.dead_letter(fp, local, request, error, now)

    def dead_letters(self) -> list[DeadLetter]:
        return sorted((d for shard in self.shards for d in shard.dead_letters()), key=lambda d: d.at)

    def requeue_dead(self, letter: DeadLetter, request: str) -> bool:
        return self.shards[self.shard_of(letter.host)].requeue_dead(letter, request)

    def dead_letter_host(self, name: str, error: str, now: float) -> int:
        return self.shards[self.shard_of(name)].dead_letter_host(name, error, now)

    def host_queued(self, name: str) -> int:
        return self.shards[self.shard_of(name)].host_queued(name)

    def unanswered(self, name: str) -> int:
        return self.shards[self.shard_of(name)].unanswered(name)

    @property
    def waiting(self) -> int:
        return sum(self._over_all(lambda shard: shard.waiting))

    def set_politeness_key(self, name: str, key: str) -> None:
        self.shards[self.shard_of(name)].set_politeness_key(name, key)

    def defer(self, name: str, until: float) -> bool:
        return self.shards[self.shard_of(name)].defer(name, until)

    def set_crawl_delay(self, name: str, delay: float) -> None:
        self.shards[self.shard_of(name)].set_crawl_delay(name, delay)

    def demote(self, name: str, margin: int) -> int:
        return self.shards[self.shard_of(name)].demote(name, margin)

    @property
    def counters(self) -> dict[str, int]:
        total: dict[str, int] = {}
        for counters in self._over_all(lambda shard: shard.counters, partial=True):
            for key, value in counters.items():
                total[key] = total.get(key, 0) + value
        return total

    @property
    def queued(self) -> int:
        return sum(self._over_all(lambda shard: shard.queued))

    @property
    def leased(self) -> int:
        return sum(self._over_all(lambda shard: shard.leased))

    def pending_counts(self) -> tuple[int, int, int, int]:
        """Summed over the shards, each read at one instant (a URL stays on its host's shard)."""
        queued, leased, waiting, revisits = map(
            sum, zip(*self._over_all(lambda shard: shard.pending_counts()), strict=True))
        return queued, leased, waiting, revisits

    def has_pending(self) -> bool:
        return any(self._over_all(lambda shard: shard.has_pending()))

    def done_count(self) -> int:
        return sum(self._over_all(lambda shard: shard.done_count()))

    def gauges(self, now: float) -> dict[str, int]:
        total: dict[str, int] = {}
        for gauges in self._over_all(lambda shard: shard.gauges(now), partial=True):
            for key, value in gauges.items():
                total[key] = total.get(key, 0) + value
        return total

    def count(self, key: str, n: int = 1) -> None:
        self.shards[0].count(key, n)

    def host_queues(self, limit: int) -> list[tuple[str, int]]:
        merged = [item for shard in self.shards for item in shard.host_queues(limit)]
        return sorted(merged, key=lambda item: (-item[1], item[0]))[:limit]

    def host_details(self, hosts: list[str]) -> list[tuple[int, float | None, float, int]]:
        return [self.shards[self.shard_of(host)].host_details([host])[0] for host in hosts]

    def forget(self) -> int:
        return sum(shard.forget() for shard in self.shards)

    def commit(self) -> None:
        """Every step is already in Redis."""

    def close(self) -> None:
        for shard in self.shards:
            shard.close()

    def describe(self) -> str:
        return f"Redis, {len(self.shards)} shards, keys {self.shards[0].prefix}*"
