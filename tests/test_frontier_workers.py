"""The frontier with several workers (heartbeats, leaving, shared Redis state) and what is
particular to one backend (the embedded file, shards, the Bloom seen set, signatures)."""

from __future__ import annotations

import uuid

import pytest
import redis
from frontier_cases import POLICY, claim, entry, finish

from crawler.frontier.api import Claim, CrawlStateInUse, Fetch, fetch_seconds_counts
from crawler.frontier.backends.embedded.frontier import EmbeddedFrontier
from crawler.frontier.backends.embedded.store import read_counts
from crawler.frontier.backends.redis.cluster import ClusterFrontier
from crawler.frontier.backends.redis.sharded import ShardedRedisFrontier
from crawler.frontier.backends.redis.single import RedisFrontier
from crawler.frontier.policy import PriorityLevels, RetryPolicy


def test_workers_sharing_a_redis_frontier_never_fetch_one_host_at_once(redis_url):
    crawl_id = uuid.uuid4().hex
    one, two = (RedisFrontier(redis.Redis.from_url(redis_url), crawl_id, policy=POLICY) for _ in range(2))
    one.add([entry(f"http://a.test/{i}") for i in range(3)])
    assert two.add([entry("http://a.test/0")]) == [False]  # seen by the whole crawl
    c = claim(one, 0.0)
    assert two.next(0.0) is None  # a.test is in flight at the other worker
    assert one.fetched(c.fp, c.token, 0.5, 0.01, 200) == 1.0
    assert two.next(1.0) == pytest.approx(0.5)  # and its gap holds across workers
    assert claim(two, 1.5).host == "a.test"


def test_workers_count_one_run_of_unanswered_fetches_per_host(redis_url):
    crawl_id = uuid.uuid4().hex
    one, two = (RedisFrontier(redis.Redis.from_url(redis_url), crawl_id, policy=POLICY) for _ in range(2))
    runs = [worker.unanswered("dead.test") for worker in (one, two, one)]
    assert runs == [1, 2, 3]


def test_a_dead_workers_lease_is_given_to_another_after_it_expires(redis_url):
    crawl_id = uuid.uuid4().hex
    dead = RedisFrontier(redis.Redis.from_url(redis_url), crawl_id, policy=POLICY, lease_seconds=30)
    alive = RedisFrontier(redis.Redis.from_url(redis_url), crawl_id, policy=POLICY, lease_seconds=30)
    dead.add([entry("http://a.test/1")])
    lost = claim(dead, 0.0)  # ...and the worker is killed
    assert alive.next(10.0) is None and alive.has_pending()
    assert alive.reap(31.0) == 1
    again = claim(alive, 31.0)
    assert again.fp == lost.fp
    assert alive.ack(again.fp, again.token) and not alive.has_pending()


def test_a_silent_workers_leases_go_back_at_the_next_beat_of_another(redis_url):
    client = redis.Redis.from_url(redis_url)
    alive = RedisFrontier(client, "beats", worker_id="alive", worker_timeout=15)
    dead = RedisFrontier(client, "beats", worker_id="dead", worker_timeout=15)
    alive.add([entry("http://a.test/1"), entry("http://b.test/1")])
    assert dead.heartbeat(100.0) == [] and alive.heartbeat(100.0) == []
    held = claim(dead, 100.0)
    mine = claim(alive, 100.0)
    assert alive.heartbeat(114.0) == [] and alive.reap(114.0) == 0  # 14 s: not yet dead
    assert alive.heartbeat(116.0) == [("dead", 1, 16.0)]
    assert alive.reap(116.0) == 1
    again = claim(alive, 116.0)  # its host is free, its URL queued again
    assert (again.fp, again.host) == (held.fp, held.host)
    assert not dead.ack(held.fp, held.token)  # the dead worker's lease is gone
    assert alive.ack(mine.fp, mine.token) and alive.ack(again.fp, again.token)
    assert not alive.has_pending() and alive.counters["workers/lost"] == 1


RETRY = RetryPolicy((5.0, 20.0))


def test_leaving_queues_again_what_is_still_leased(make_frontier):
    f = make_frontier()
    f.add([entry("http://a.test/1"), entry("http://b.test/1")])
    held = claim(f, 0.0)
    finish(f, claim(f, 0.0), 0.0)
    assert f.leave(1.0, RETRY) == 1
    again = claim(f, 1.0)
    assert (again.fp, again.host) == (held.fp, held.host)
    finish(f, again, 1.0)
    assert not f.has_pending()


def test_leaving_keeps_a_held_hosts_hold_and_its_run_of_unanswered_fetches(make_frontier):
    f = make_frontier()
    f.add([entry(f"http://down.test/{i}") for i in range(3)])
    first = claim(f, 0.0)
    assert f.unanswered("down.test") == 1
    f.fetched_many([Fetch(first.fp, first.token, 0.0, 0.01, None, hold_until=5.0)])
    assert f.leave(1.0, RETRY) == 1  # left before its retry was written: the hold stands
    assert f.next(4.0) == pytest.approx(1.0)
    probe = claim(f, 5.0)
    assert f.leave(6.0, RETRY) == 1  # the probe given back unreported: held 5 s again
    assert f.next(10.0) == pytest.approx(1.0)
    assert f.unanswered("down.test") == 2  # no probe counted for it
    assert claim(f, 11.0).host == probe.host


def test_a_worker_that_leaves_gives_its_leases_back_at_once(redis_url):
    client = redis.Redis.from_url(redis_url)
    going = RedisFrontier(client, "leave", worker_id="going", worker_timeout=15)
    staying = RedisFrontier(client, "leave", worker_id="staying", worker_timeout=15)
    going.add([entry("http://a.test/1")])
    assert going.heartbeat(100.0) == [] and staying.heartbeat(100.0) == []
    held = claim(going, 100.0)
    assert staying.next(101.0) is None
    assert going.leave(101.0, RETRY) == 1
    again = claim(staying, 101.0)  # not 15 s later: its host free, its URL queued again
    assert (again.fp, again.host) == (held.fp, held.host)
    assert staying.ack(again.fp, again.token) and not staying.has_pending()
    assert staying.heartbeat(200.0) == []  # gone, not dead
    assert "workers/lost" not in staying.counters


def test_two_processes_cannot_share_one_embedded_crawl_state(tmp_path):
    first = EmbeddedFrontier(tmp_path / "frontier.sqlite")
    with pytest.raises(CrawlStateInUse, match="in use by another process"):
        EmbeddedFrontier(tmp_path / "frontier.sqlite")
    first.close()
    EmbeddedFrontier(tmp_path / "frontier.sqlite").close()


def test_fewer_priority_levels_on_resume_keep_every_url(tmp_path):
    f = EmbeddedFrontier(tmp_path / "frontier.sqlite", levels=PriorityLevels(levels=4), policy=POLICY)
    f.add([entry(f"http://a.test/{i}", level=i) for i in range(4)])
    f.close()
    again = EmbeddedFrontier(tmp_path / "frontier.sqlite", levels=PriorityLevels(levels=2), policy=POLICY)
    now, seen = 0.0, 0
    while again.has_pending():
        c = claim(again, now)
        finish(again, c, now)
        now, seen = now + 1.0, seen + 1
    assert seen == 4


def test_consistent_hashing_spreads_hosts_and_moves_few_when_a_shard_is_added():
    from crawler.frontier.backends.redis.sharded import ShardedRedisFrontier

    def ring(n: int) -> ShardedRedisFrontier:  # clients that never connect: only the ring is used
        return ShardedRedisFrontier([RedisFrontier(redis.Redis(port=1), "x") for _ in range(n)])

    hosts = [f"host{i}.example" for i in range(10_000)]
    three, four = ring(3), ring(4)
    before = [three.shard_of(h) for h in hosts]
    after = [four.shard_of(h) for h in hosts]
    assert before == [three.shard_of(h) for h in hosts]  # stable
    for shard in range(3):
        assert 0.2 < before.count(shard) / len(hosts) < 0.47
    moved = sum(b != a for b, a in zip(before, after, strict=True)) / len(hosts)
    assert 0.15 < moved < 0.35  # about 1/4 of the hosts move to the new shard
    assert all(a == 3 for b, a in zip(before, after, strict=True) if b != a)


def test_bloom_seen_set_keeps_its_false_positive_rate(redis_url):
    f = RedisFrontier(redis.Redis.from_url(redis_url), uuid.uuid4().hex, seen_set="bloom",
                      expected_urls=20_000, bloom_error=0.01)
    urls = [f"http://h{i % 50}.test/{i}" for i in range(20_000)]
    added = []
    for start in range(0, len(urls), 1000):
        added += f.add([entry(u) for u in urls[start:start + 1000]])
    lost = added.count(False) / len(urls)  # new URLs taken for seen: the false positives
    assert lost < 0.01
    assert not any(f.add([entry(u) for u in urls[:1000]]))  # seen ones are always seen
    size = sum(f.redis.strlen(key) for key in f.redis.keys(f.prefix + "bloom:*"))
    assert size < 1.3 * len(urls)  # ~1.2 bytes a URL


@pytest.mark.parametrize("backend", [EmbeddedFrontier, RedisFrontier, ShardedRedisFrontier, ClusterFrontier])
def test_every_backend_has_the_contract_with_its_signatures(backend):
    import inspect

    from crawler.frontier.api import Frontier

    for name, member in vars(Frontier).items():
        if name.startswith("_") or not callable(member):
            continue
        ours = getattr(backend, name, None)
        assert callable(ours), f"{backend.__name__} lacks {name}"
        assert list(inspect.signature(ours).parameters) == list(inspect.signature(member).parameters), name


def test_both_backends_are_frontiers(tmp_path, redis_url):
    from crawler.frontier.api import Frontier

    assert isinstance(EmbeddedFrontier(":memory:"), Frontier)
    assert isinstance(RedisFrontier(redis.Redis.from_url(redis_url), "proto"), Frontier)


def test_a_sharded_frontier_claims_and_acks_in_batches_across_its_shards(redis_url):
    base = redis_url.rsplit("/", 1)[0]
    shards = [RedisFrontier(redis.Redis.from_url(f"{base}/{db}"), uuid.uuid4().hex, policy=POLICY)
              for db in (2, 3)]
    f = ShardedRedisFrontier(shards)
    f.add([entry(f"http://h{i}.test/1") for i in range(8)])
    assert {f.shard_of(f"h{i}.test") for i in range(8)} == {0, 1}  # both shards hold hosts
    claims, _ = f.claim_many(0.0, 8)
    assert len(claims) == 8
    assert f.fetched_many([Fetch(c.fp, c.token, 0.0, 0.01, 200) for c in claims]) == [1.0] * 8
    assert f.ack_many([(c.fp, c.token) for c in reversed(claims)]) == [True] * 8
    assert not f.has_pending() and f.done_count() == 8


def test_embedded_counters_are_summed_over_runs_in_the_state_file(tmp_path):
    path = tmp_path / "frontier.sqlite"
    for run in range(2):
        f = EmbeddedFrontier(path, policy=POLICY)
        f.add([entry(f"http://a.test/{run}")])
        c = claim(f, 100.0 * run)
        f.fetched(c.fp, c.token, 100.0 * run, 0.1, 200)
        f.count("stored")
        f.ack(c.fp, c.token)
        f.close()
    counts = read_counts(path)
    assert (counts["fetched"], counts["stored"], counts["done"]) == (2, 2, 2)


def test_fetch_seconds_counts_put_each_fetch_in_one_bucket():
    fetches = [Fetch(1, 1, 0.0, seconds, 200) for seconds in (0.01, 0.05, 0.3, 0.3, 60.0)]
    assert fetch_seconds_counts(fetches) == {
        "fetch_seconds/0.05": 2, "fetch_seconds/0.5": 2, "fetch_seconds/inf": 1,
        "fetch_seconds/sum_ms": 60660}


def test_a_host_held_by_defer_is_still_held_after_a_restart(tmp_path):
    path = tmp_path / "frontier.sqlite"
    frontier = EmbeddedFrontier(path)
    frontier.add([entry("http://a.test/1")])
    assert frontier.defer("a.test", 500.0)  # robots.txt was its fetch, or it did not answer
    frontier.commit()
    frontier.close()
    again = EmbeddedFrontier(path)
    waited = again.next(100.0)
    assert waited == pytest.approx(400.0)  # not claimed before the hold ends
    assert isinstance(again.next(500.0), Claim)
    again.close()
