"""One crawl spread over a Redis Cluster: ``REDIS_SHARDS`` hash tags, each a ``RedisFrontier``.

Every shard's keys start with ``crawl:{<crawl id>:<n>}:`` (one hash slot), so a host's
queue, politeness state, leases and its URLs' seen entries sit together on one node and
every claim, release and ack is one script on one node; the shards' slots are spread
evenly over the slot space, so each master of a cluster holds about as many shards as
any other. The content index is split over the same tags by fingerprint
(``crawler.dedup.split``). The crawl's remaining keys (pushed seeds, robots.txt cache,
trap evidence, the shard count) keep the crawl's own tag ``crawl:{<crawl id>}:``.
"""

from __future__ import annotations

import functools
import itertools
import logging
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar, cast

from redis import RedisCluster, RedisError
from redis.crc import REDIS_CLUSTER_HASH_SLOTS, key_slot

from crawler import defaults
from crawler.context.keys import CrawlKeys
from crawler.frontier.api import Claim
from crawler.frontier.backends.redis.errors import raises_unavailable
from crawler.frontier.backends.redis.reporting import forget_keys
from crawler.frontier.backends.redis.shard_steps import BufferedShard, ShardPauses
from crawler.frontier.backends.redis.sharded import ShardedRedisFrontier
from crawler.frontier.backends.redis.single import RedisFrontier, default_worker_id

logger = logging.getLogger(__name__)

T = TypeVar("T")


def shard_tags(crawl_id: str, shards: int) -> list[str]:
    """Shard n's hash tag: ``<crawl id>:<n>``, else ``<crawl id>:<n>.<k>`` for the first k
    whose slot falls in the n-th of ``shards`` equal ranges of the 16,384 slots. Masters
    made by ``redis-cli --cluster create`` hold equal ranges, so each gets ``shards / masters``
    shards (16 random tags would leave about a third of 16 masters empty: (15/16)^16 = 0.36)."""
    if not 1 <= shards <= REDIS_CLUSTER_HASH_SLOTS:
        raise ValueError(f"REDIS_SHARDS must be 1..{REDIS_CLUSTER_HASH_SLOTS}, not {shards}")
    tags = []
    for n in range(shards):
        low, high = n * REDIS_CLUSTER_HASH_SLOTS // shards, (n + 1) * REDIS_CLUSTER_HASH_SLOTS // shards
        for k in itertools.count():
            tag = f"{crawl_id}:{n}" if k == 0 else f"{crawl_id}:{n}.{k}"
            if low <= key_slot(tag.encode()) < high:
                tags.append(tag)
                break
    return tags


@raises_unavailable
class ClusterFrontier(ShardedRedisFrontier):
    """A crawl's frontier over one Redis Cluster client: hosts go to shards as in
    ``ShardedRedisFrontier`` (consistent hashing), each shard a hash tag.

    A claim round costs two passes whatever the shard count: one pipelined read of every
    shard's ready sets (grouped by node by the cluster pipeline), then the claim scripts of
    the shards the policy planned claims on, run at once (so priority levels and then
    earliest-allowed order hold across the whole crawl, as on one Redis). The shard count
    is fixed for the crawl at its first start (``crawl:{<id>}:shards``): a worker started
    with another one is refused, as it would place hosts on other shards and break
    politeness.
    """

    shards: Sequence[BufferedShard]

    def __init__(self, client: RedisCluster, crawl_id: str, shards: int, **options: Any) -> None:
        self.client = client
        self.crawl_id = crawl_id
        self.prefix = CrawlKeys(crawl_id).prefix
        options.setdefault("worker_id", default_worker_id())
        options["expected_urls"] = max(1, int(options.get("expected_urls", 10_000_000)) // shards)
        self._pauses = ShardPauses(self._describe_shard)
        super().__init__([BufferedShard(client, tag, index, self._pauses, **options)
                          for index, tag in enumerate(shard_tags(crawl_id, shards))])
        self._pool = ThreadPoolExecutor(max_workers=min(8, shards), thread_name_prefix="cluster-claim")
        self._count_turn = 0

    def _describe_shard(self, index: int) -> str:
        prefix = self.shards[index].prefix
        try:
            node = self.client.get_node_from_key(prefix)
            return f"{index} ({prefix}, node {node.host}:{node.port})"
        except RedisError:
            return f"{index} ({prefix})"

    # ---------------------------------------------------------------- claims

    def _peek(self, now: float, limit: int) -> dict[int, list[list[tuple[bytes, float]]]]:
        """The first ``limit`` hosts of each level's ready set of each usable shard, by
        allowed time: one pipeline, sent to each node once."""
        usable = [i for i in range(len(self.shards)) if self._pauses.usable(i)]
        pipe = self.client.pipeline(transaction=False)
        for index in usable:
            for key in self.shards[index].ready_keys:
                pipe.zrange(key, 0, limit - 1, withscores=True)
        heads: dict[int, list[list[tuple[bytes, float]]]] = {}
        failed: dict[int, Exception] = {}
        levels = self.levels.levels
        try:
            results = pipe.execute(raise_on_error=False)
            results = [results[n * levels:(n + 1) * levels] for n in range(len(usable))]
        except (RedisError, AttributeError):  # a node down fails the whole pipeline: shard by shard
            results = [self._pool.submit(self._read_heads, index, limit) for index in usable]
            results = [future.result() for future in results]
        for index, result in zip(usable, results, strict=True):
            error = result if isinstance(result, Exception) else next(
                (r for r in result if isinstance(r, Exception)), None)
            if error is not None:
                failed[index] = error
            else:
                heads[index] = result
        if failed:
            self._pauses.failed(list(failed), next(iter(failed.values())))
            if not heads:
                raise next(iter(failed.values()))
        return heads

    def _read_heads(self, index: int, limit: int) -> list[list[tuple[bytes, float]]] | Exception:
        try:
            keys = self.shards[index].ready_keys
            return [cast(list[tuple[bytes, float]], self.client.zrange(key, 0, limit - 1, withscores=True))
                    for key in keys]
        except RedisError as error:
            return error

    def _claim_shards(self, now: float, plan: dict[int, list[int]]
                      ) -> dict[int, tuple[list[Claim], float | None]]:
        """Each planned shard's claim script at once; a shard that fails is paused, its
        claims left for a later round."""
        futures = {index: self._pool.submit(self.shards[index].claim_in_order, now, len(order), order)
                   for index, order in plan.items()}
        answers = {}
        for index, future in futures.items():
            try:
                answers[index] = future.result()
            except RedisError as error:
                self._pauses.failed([index], error)
        return answers

    def _each(self, calls: dict[int, Callable[[], T]], partial: bool = False) -> dict[int, T]:
        """Each shard's call at once (a batch of acks, fetch reports or links costs one
        round trip, not one per shard); see ``ShardedRedisFrontier._each``."""
        futures = {index: self._pool.submit(call) for index, call in calls.items()}
        answers, errors = {}, []
        for index, future in futures.items():
            try:
                answers[index] = future.result()
            except RedisError as error:
                errors.append(error)
        if errors and (not partial or not answers):
            raise errors[0]
        return answers

    def _pending_sums(self, read: Callable[[RedisFrontier], tuple[int, ...]]) -> tuple[int, ...]:
        """Each count of ``read`` summed over the shards that answer, plus one for each shard
        that does not (its master is away): the crawl is not taken for finished while a shard
        is away. At least one shard answers, or ``_each`` raises."""
        calls: dict[int, Callable[[], tuple[int, ...]]] = {
            index: functools.partial(read, shard) for index, shard in enumerate(self.shards)}
        answers = self._each(calls, partial=True)
        away = len(self.shards) - len(answers)
        return tuple(sum(column) + away for column in zip(*answers.values(), strict=True))

    def _pending_sum(self, read: Callable[[RedisFrontier], int]) -> int:
        """``read`` summed as ``_pending_sums`` sums a count."""
        return self._pending_sums(lambda shard: (read(shard),))[0]

    @property
    def queued(self) -> int:
        return self._pending_sum(lambda shard: shard.queued)

    @property
    def leased(self) -> int:
        return self._pending_sum(lambda shard: shard.leased)

    @property
    def waiting(self) -> int:
        return self._pending_sum(lambda shard: shard.waiting)

    @property
    def revisits(self) -> int:
        return self._pending_sum(lambda shard: shard.revisits)

    def pending_counts(self) -> tuple[int, int, int, int]:
        """Each shard's read at one instant, summed as ``_pending_sums`` sums."""
        queued, leased, waiting, revisits = self._pending_sums(lambda shard: shard.pending_counts())
        return queued, leased, waiting, revisits

    def has_pending(self) -> bool:
        return bool(self._pending_sum(lambda shard: int(shard.has_pending())))

    def commit(self) -> None:
        """Send the writes kept for shards whose master did not answer, if it does now."""
        for shard in self.shards:
            shard.flush()

    # ---------------------------------------------------------------- the rest

    def count(self, key: str, n: int = 1) -> None:
        """Crawl-wide counters are per shard (summed on read): each call goes to the next
        shard, so no node takes every increment."""
        self._count_turn = (self._count_turn + 1) % len(self.shards)
        self.shards[self._count_turn].count(key, n)

    def forget(self) -> int:
        """Every shard's keys and the crawl's own (``crawl:{<id>}:*``)."""
        return super().forget() + forget_keys(self.client, self.prefix)

    def close(self) -> None:
        kept = sum(len(shard.kept) for shard in self.shards if not shard.flush(force=True))
        if kept:
            logger.error("%d frontier steps could not reach their Redis Cluster shards; their URLs will be "
                         "fetched again once their leases expire", kept)
        self._pool.shutdown(wait=True)
        self.client.close()

    def describe(self) -> str:
        return (f"Redis Cluster, {len(self.shards)} shards, keys crawl:{{{self.crawl_id}:<n>}}:* "
                f"and {self.prefix}*")


def shard_count(client: RedisCluster, crawl_id: str, wanted: int | None) -> int:
    """The crawl's shard count: the one stored at its first start, else ``wanted`` (then
    stored: a worker starts the crawl). A different ``wanted`` is refused; None (a
    command reading a crawl) takes the stored one, or ``REDIS_SHARDS``' default."""
    key = CrawlKeys(crawl_id).key("shards")
    if wanted is None:
        return int(client.get(key) or defaults.REDIS_SHARDS)
    client.set(key, wanted, nx=True)
    stored = int(cast(bytes, client.get(key)))  # set just above, if not before
    if stored != wanted:
        raise ValueError(f"Crawl {crawl_id} was started with REDIS_SHARDS = {stored}, not {wanted}: every "
                         f"worker of a crawl must use the same count (or forget the crawl first)")
    return stored
