"""The shared frontier: one crawl's state in Redis, for many workers on many machines.

Same contract and same policy as ``EmbeddedFrontier``; the state lives under keys
``crawl:{<crawl id>}:...`` (one hash slot: a crawl fits one Redis Cluster node), and
every step that reads and writes it (add-if-unseen, claim, release after a fetch,
ack, requeue, reap) is one Lua script, so workers never see half a step. Across all
workers a politeness key has at most one fetch in flight, and the leases of a worker
whose heartbeat stops are given out again once it is ``worker_timeout`` seconds old
(a lease that expires is the safety net for a live worker stuck on a fetch). Requests
are stored as JSON, never pickles.

Layout (P = ``crawl:{id}:``): ``P seen:<bucket>`` hashes holding the seen
fingerprints compactly (``seen_bucket_bits``), or ``P bloom:<i>`` bitmaps in Bloom
mode; ``P q:<host>:<level>`` lists of queued entries (fingerprint, then request);
``P host:<host>`` hash (group key, ``n<level>`` URLs queued per level, ``cur`` its cursor
in the level cycle, ``left`` pages left under its budget, ``level`` the one level of a
demoted host, ``rl`` the ready set it was last put in, ``ua`` its run of unanswered
fetches), and the times of the politeness key of that name (next_allowed, backoff,
last_gap, crawl_delay, busy: a host that is its own key is one hash), and
``P members:<key>`` set of the key's hosts; ``P ready:<level>`` sorted sets of claimable hosts
by allowed time, a host in that of its best queued URL's level; ``P lease:<fp>`` hash and
``P leases`` sorted set by expiry; ``P workers`` sorted set of worker ids by last
heartbeat and ``P worker:<id>`` set of the fingerprints each one leases; ``P counters`` hash.
"""

from __future__ import annotations

import json
import os
import socket
import uuid
from collections.abc import Iterable
from typing import Any, cast

from redis import Redis, RedisCluster
from redis.commands.core import Script

from crawler.context.keys import tagged
from crawler.frontier.api import Claim, DeadLetter, Entry, Fetch, Revisit
from crawler.frontier.backends.redis import scripts
from crawler.frontier.backends.redis.errors import raises_unavailable
from crawler.frontier.backends.redis.reporting import RedisReporting
from crawler.frontier.backends.redis.seen import BloomGeometry, seen_bucket_bits
from crawler.frontier.policy import (
    HostBudget,
    HostTimes,
    PolitenessPolicy,
    PriorityLevels,
    RetryPolicy,
    allowed_after_leave,
    beat_interval,
)

#: Claims' times kept for their fetch reports at most; past it they are forgotten (and read
#: again when reported): leases that end without a fetch (requeued, closed) leave theirs.
_CLAIM_TIMES_KEPT = 100_000
#: Claims a claim script makes at most (its leases are written with one ZADD, within Lua's unpack limit).
_MOST_CLAIMS = 2000

#: An argument of a Lua script, as redis-py encodes it.
ScriptArg = bytes | str | int | float


def default_worker_id() -> str:
    """host-pid-random: unique per worker process, readable in logs."""
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


@raises_unavailable
class RedisFrontier(RedisReporting):
    """Frontier state in Redis, shared by every worker of crawl ``crawl_id``.

    The policy runs in the worker: after a fetch, the worker holding the host's only
    lease reads the host's times, applies ``PolitenessPolicy`` and writes the result
    back in the release script, so no two workers ever update one host at once.
    """

    shared = True

    def __init__(
        self,
        client: Redis | RedisCluster,
        crawl_id: str,
        policy: PolitenessPolicy | None = None,
        levels: PriorityLevels | None = None,
        budget: HostBudget | None = None,
        lease_seconds: float = 600.0,
        hold_new_hosts: bool = False,
        worker_id: str = "",
        worker_timeout: float = 15.0,
        expected_urls: int = 10_000_000,
        seen_set: str = "exact",
        bloom_error: float = 0.01,
    ) -> None:
        if seen_set not in ("exact", "bloom"):
            raise ValueError(f"SEEN_SET must be 'exact' or 'bloom', not {seen_set!r}")
        self.redis = client
        self.bloom = BloomGeometry.for_urls(expected_urls, bloom_error) if seen_set == "bloom" else None
        self.bucket_bits = seen_bucket_bits(expected_urls)
        self._field_bytes = (64 - self.bucket_bits + 7) // 8
        self._field_mask = (1 << (64 - self.bucket_bits)) - 1
        self.prefix = tagged(crawl_id)
        self.policy = policy or PolitenessPolicy()
        self.levels = levels or PriorityLevels()
        # The ready sets, one per level: hosts by allowed time, each in its best queued URL's level's.
        self.ready_keys = [self.prefix + f"ready:{level}" for level in range(self.levels.levels)]
        self.budget = budget or HostBudget()
        self.lease_seconds = lease_seconds
        self.hold_new_hosts = hold_new_hosts
        self.worker_id = worker_id or default_worker_id()
        self.worker_timeout = worker_timeout
        self.new_hosts: list[str] = []
        self.scripts = scripts.FrontierScripts.register(client, bloom=bool(self.bloom))
        self._known_hosts: set[str] = set()
        self._cursor = 0  # this worker's position in the level cycle (PriorityLevels.host_level)
        # (fp, token): its group's times as its claim read them ('backoff last_gap crawl_delay'),
        # until its fetch is reported.
        self._claim_times: dict[tuple[int, int], bytes] = {}
        if self.bloom:  # allocate each new bitmap whole: grown bit by bit, Redis doubles it
            allocate = client.register_script(scripts.lua("bloom_allocate.lua"))
            for i in range(self.bloom.bitmaps):
                allocate(keys=[self.prefix + f"bloom:{i}"], args=[self.bloom.bits - 1])

    def _call(self, script: Script, args: tuple[ScriptArg, ...]) -> object:
        left = self.budget.left(0)
        base: list[ScriptArg] = [self.levels.levels, "" if left is None else left]
        return script(keys=[self.prefix], args=[*base, *args])

    # The Lua scripts' replies are typed here, once: redis-py types a script's reply as Any
    # (or an Awaitable of it); each script replies with a list, or with one integer.

    def _run(self, script: Script, *args: ScriptArg) -> list[Any]:
        """Run ``script``, whose reply is a list (of integers, bulk strings, lists)."""
        return cast(list[Any], self._call(script, args))

    def _run_int(self, script: Script, *args: ScriptArg) -> int:
        """Run ``script``, whose reply is one integer."""
        return cast(int, self._call(script, args))

    @staticmethod
    def _fp(fp: int) -> bytes:
        return fp.to_bytes(8, "big")

    # ---------------------------------------------------------------- contract

    def add(self, entries: Iterable[Entry], force: bool = False) -> list[bool]:
        """Queue each URL the crawl has not seen; with ``force`` (Scrapy's ``dont_filter``)
        a URL seen is queued again if it is done or parked for a revisit (a second step,
        for those only)."""
        entries = list(entries)
        if not entries:
            return []
        args: list[ScriptArg] = ["1" if self.hold_new_hosts else "0"]
        shift = 64 - self.bucket_bits
        seen: str | bytes
        for e in entries:
            if self.bloom:
                key, seen = self.bloom.locate(e.fp)
            else:
                key, seen = e.fp >> shift, (e.fp & self._field_mask).to_bytes(self._field_bytes, "big")
            args += [key, seen, self._fp(e.fp).hex(), e.host, min(e.level, self.levels.lowest), e.request]
            if self.hold_new_hosts and e.host not in self._known_hosts:
                self._known_hosts.add(e.host)
                if self.redis.hget(self.prefix + f"host:{e.host}", "held") != b"0":
                    self.new_hosts.append(e.host)
        added = [bool(flag) for flag in self._run(self.scripts.add, *args)]
        again = [i for i, flag in enumerate(added) if force and not flag]
        if again:
            forced = self._run(self.scripts.force, *[a for i in again for a in (
                self._fp(entries[i].fp).hex(), entries[i].host, min(entries[i].level, self.levels.lowest),
                entries[i].request)])
            for i, flag in zip(again, forced, strict=True):
                added[i] = bool(flag)
        return added

    def next(self, now: float) -> Claim | float | None:
        claims, wait = self.claim_many(now, 1)
        return claims[0] if claims else wait

    def claim_many(self, now: float, limit: int) -> tuple[list[Claim], float | None]:
        """Up to ``limit`` claims, one per due host, in one round trip; and, when fewer,
        the seconds until the next host is due (None: nothing queued)."""
        return self.claim_in_order(now, limit, None)

    def claim_in_order(self, now: float, limit: int, order: list[int] | None
                       ) -> tuple[list[Claim], float | None]:
        """``claim_many``, claim k preferring hosts of level ``order[k]`` (the rule:
        PriorityLevels.host_level); None: this worker's next positions of the level cycle
        (a sharded frontier plans its own order across its shards)."""
        most = min(limit, _MOST_CLAIMS)
        cycle = self.levels.cycle
        if order is None:
            order = [cycle[(self._cursor + k) % len(cycle)] for k in range(min(most, len(cycle)))]
        result = self._run(self.scripts.claim, now, now + self.lease_seconds, most, self.worker_id,
                           len(order), len(cycle), *order, *cycle)
        wait = result[0].decode()
        claims = [Claim(int(result[i], 16), result[i + 2].decode(), int(result[i + 1]),
                        result[i + 3].decode()) for i in range(1, len(result), 5)]
        if len(self._claim_times) > _CLAIM_TIMES_KEPT:  # leases that ended without a fetch
            self._claim_times.clear()
        for claim, i in zip(claims, range(1, len(result), 5), strict=True):
            self._claim_times[claim.fp, claim.token] = result[i + 4]
        self._cursor = (self._cursor + len(claims)) % len(cycle)
        return claims, (float(wait) if wait else None) if len(claims) < limit else None

    def fetched(self, fp: int, token: int, now: float, fetch_seconds: float, status: int | None,
                retry_after: float | None = None, hold_until: float = 0.0) -> float | None:
        return self.fetched_many([Fetch(fp, token, now, fetch_seconds, status, retry_after, hold_until)])[0]

    def fetched_many(self, fetches: list[Fetch]) -> list[float | None]:
        """Each fetch that ended: the policy's gap computed here from its group's times, as the
        claim read them, and written with the host's release in one script, which checks the
        times still hold; those read at no claim, or changed since (a Crawl-delay, another
        worker's backoff), are read again (one more round trip) and decided again."""
        if not fetches:
            return []
        gaps: list[float | None] = [None] * len(fetches)
        times = {i: self._claim_times.pop((f.fp, f.token)) for i, f in enumerate(fetches)
                 if (f.fp, f.token) in self._claim_times}
        unread = [i for i in range(len(fetches)) if i not in times]
        entering_backoff = 0
        for attempt in range(3):
            if unread:
                read = self._run(self.scripts.times, *[a for i in unread for a in (
                    self._fp(fetches[i].fp).hex(), fetches[i].token)])
                times.update((i, r[1]) for i, r in zip(unread, read, strict=True) if int(r[0]))
            decided: list[tuple[int, float, bool]] = []
            args: list[ScriptArg] = []
            for i, stored in times.items():
                f = fetches[i]
                backoff, last_gap, crawl_delay = (float(v) for v in stored.split())
                host = HostTimes(backoff=backoff, crawl_delay=crawl_delay, last_gap=last_gap)
                gap = self.policy.after_fetch(host, f.fetch_seconds, f.status, f.retry_after)
                args += [self._fp(f.fp).hex(), f.token, max(f.now + gap, f.hold_until), host.backoff,
                         host.last_gap, "failed" if f.status is None else "fetched",
                         stored if attempt < 2 else ""]  # the last: as read
                decided.append((i, gap, bool(host.backoff and not backoff)))
            written = self._run(self.scripts.fetched, *args) if args else []
            times, unread = {}, []
            for (i, gap, entering), outcome in zip(decided, written, strict=True):
                if int(outcome) == 2:
                    unread.append(i)
                elif int(outcome) == 1:
                    gaps[i] = gap
                    entering_backoff += entering
            if not unread:
                break
        if entering_backoff:
            self.redis.hincrby(self.prefix + "counters", "backoffs", entering_backoff)
        return gaps

    def ack_many(self, leases: list[tuple[int, int]]) -> list[bool]:
        """Ack each (fp, token) lease: one script, one round trip."""
        if not leases:
            return []
        args = [a for fp, token in leases for a in (self._fp(fp).hex(), token)]
        return [bool(r) for r in self._run(self.scripts.ack, *args)]

    def ack(self, fp: int, token: int) -> bool:
        return self.ack_many([(fp, token)])[0]

    def requeue(self, fp: int, token: int, request: str) -> bool:
        return bool(self._run_int(self.scripts.requeue, self._fp(fp).hex(), token, "1", request))

    def retry_later(self, fp: int, token: int, request: str, due: float) -> bool:
        return bool(self._run_int(self.scripts.requeue, self._fp(fp).hex(), token, "2", request, due))

    def due_retries(self, now: float) -> int:
        return self._run_int(self.scripts.due, now, "waiting", -1)

    def revisit_many(self, revisits: list[Revisit]) -> list[bool]:
        """End each lease, keeping the URL for its revisit: one script, one round trip."""
        if not revisits:
            return []
        args = [a for r in revisits for a in (self._fp(r.fp).hex(), r.token, r.request, r.due, r.fetched_at)]
        return [bool(flag) for flag in self._run(self.scripts.revisit, *args)]

    def due_revisits(self, now: float, limit: int = 10_000) -> int:
        return self._run_int(self.scripts.due, now, "revisits", limit)

    def revisit_at(self, fp: int, host: str) -> tuple[float, float] | None:
        key = self._fp(fp).hex()
        pipe = self.redis.pipeline(transaction=False)  # one round trip for both
        pipe.zscore(self.prefix + "revisits", key)
        pipe.hget(self.prefix + f"retry:{key}", "fetched")
        due, fetched = pipe.execute()
        return None if due is None or fetched is None else (float(due), float(fetched))

    def hasten_revisit(self, fp: int, host: str, due: float) -> bool:
        key = self._fp(fp).hex()
        if self.redis.zscore(self.prefix + "revisits", key) is None:
            return False
        self.redis.zadd(self.prefix + "revisits", {key: due}, xx=True, lt=True)
        return True

    def next_revisit(self) -> float | None:
        first = self.redis.zrange(self.prefix + "revisits", 0, 0, withscores=True)
        return float(first[0][1]) if first else None

    def dead_letter(self, fp: int, token: int, request: str, error: str, now: float) -> bool:
        return bool(self._run_int(self.scripts.requeue, self._fp(fp).hex(), token, "3", request, error, now))

    def dead_letters(self) -> list[DeadLetter]:
        letters = []
        for fp, record in self.redis.hgetall(self.prefix + "dead").items():
            host, level, request, error, at = json.loads(record)
            letters.append(DeadLetter(int(fp, 16), host, int(level), request, error, float(at)))
        return sorted(letters, key=lambda letter: letter.at)

    def requeue_dead(self, letter: DeadLetter, request: str) -> bool:
        return bool(self._run_int(self.scripts.requeue_dead, self._fp(letter.fp).hex(), request))

    def dead_letter_host(self, name: str, error: str, now: float) -> int:
        return self._run_int(self.scripts.dead_host, name, error, now)

    def host_queued(self, name: str) -> int:
        fields = [f"n{level}" for level in range(self.levels.levels)]
        counts = self.redis.hmget(self.prefix + f"host:{name}", fields)
        return sum(int(n or 0) for n in counts)

    def unanswered(self, name: str) -> int:
        return self._run_int(self.scripts.unanswered, name)

    def renew(self, fp: int, token: int, expires: float) -> None:
        """Extend a lease its holder still works on."""
        key = self._fp(fp).hex()
        if self.redis.hget(self.prefix + f"lease:{key}", "token") == str(token).encode():
            self.redis.zadd(self.prefix + "leases", {key: expires}, xx=True)

    def reap(self, now: float) -> int:
        return self._run_int(self.scripts.reap, now)

    def heartbeat(self, now: float) -> list[tuple[str, int, float]]:
        """This worker is alive; the leases of workers silent for ``worker_timeout`` end
        (``reap`` then queues their URLs again). Returns (worker, leases, seconds silent)
        for each worker found dead. A worker whose own last beat is older than the timeout
        less one beat interval judges none at this beat: it was silent too (a stalled Redis
        holds every worker's beats), and the others' first beats since may not be in yet;
        older than the timeout, it judges none for two beat intervals."""
        interval = beat_interval(self.worker_timeout)
        found = self._run(self.scripts.heartbeat, now, self.worker_id, self.worker_timeout,
                          self.worker_timeout - interval, 2 * interval)
        return [(w.decode(), int(n), float(silent)) for w, n, silent in found]

    def leave(self, now: float, retry: RetryPolicy) -> int:
        """Two scripts: one reads this worker's leases as Redis holds them (after a failover,
        some this worker no longer knows of), the policy decides each host's allowed time here,
        and one gives back each lease still held as read."""
        triples = []
        held = self._run(self.scripts.leaving, self.worker_id)
        for fp, token, fetching, unanswered, next_allowed, last_gap in held:
            allowed = allowed_after_leave(float(next_allowed), now, fetching == b"1", float(last_gap),
                                          retry.hold_again(int(unanswered)))
            triples += [fp, token, allowed]
        return self._run_int(self.scripts.leave, self.worker_id, *triples)

    def set_politeness_key(self, name: str, key: str) -> None:
        self._run_int(self.scripts.key, name, key, "key")

    def defer(self, name: str, until: float) -> bool:
        self._run_int(self.scripts.key, name, until, "defer")
        return True

    def set_crawl_delay(self, name: str, delay: float) -> None:
        self._run_int(self.scripts.key, name, delay, "delay")

    def demote(self, name: str, margin: int) -> int:
        claimed = int(self.redis.hget(self.prefix + f"host:{name}", "claims") or 0)
        pages = self.budget.demoted_left(claimed, margin)
        return self._run_int(self.scripts.demote, name, pages, self.levels.lowest)

    def pending_counts(self) -> tuple[int, int, int, int]:
        queued, leased, waiting, revisits = self._run(self.scripts.counts)
        return int(queued), int(leased), int(waiting), int(revisits)

    def has_pending(self) -> bool:
        return any(self.pending_counts()[:3])

    def commit(self) -> None:
        """Every step is already durable in Redis (as durable as its persistence)."""

    def close(self) -> None:
        self.redis.close()

    def describe(self) -> str:
        """Where the state is, for log lines."""
        return f"Redis, keys {self.prefix}*"
