"""The release after a fetch decides from the group's times its claim read, and only while
they still hold: a Crawl-delay or a backoff set since is read and decided again."""

from __future__ import annotations

import pytest
import redis
from redis_server import RedisServer

from crawler.frontier.api import Entry, Fetch
from crawler.frontier.backends.redis.single import RedisFrontier
from crawler.frontier.policy import PolitenessPolicy


@pytest.fixture
def frontier(tmp_path):
    server = RedisServer(tmp_path).start()
    yield RedisFrontier(redis.Redis.from_url(server.url), "release",
                        policy=PolitenessPolicy(min_delay=1.0, delay_factor=0))
    server.stop()


def test_a_crawl_delay_set_between_claim_and_release_sets_the_gap(frontier):
    frontier.add([Entry(1, "a.test", 0, "{}"), Entry(2, "a.test", 0, "{}"), Entry(3, "b.test", 0, "{}")])
    claims, _ = frontier.claim_many(100.0, 2)
    assert {c.host for c in claims} == {"a.test", "b.test"}
    frontier.set_crawl_delay("a.test", 30.0)  # robots.txt, read while the page was fetched
    gaps = frontier.fetched_many([Fetch(c.fp, c.token, 100.0, 0.1, 200) for c in claims])
    assert sorted(gaps) == [1.0, 30.0]  # b.test as claimed; a.test read again
    assert frontier.claim_many(129.0, 5)[0] == []  # a.test waits out its Crawl-delay
    assert [c.host for c in frontier.claim_many(130.5, 5)[0]] == ["a.test"]


def test_a_release_as_claimed_keeps_the_backoff_going(frontier):
    frontier.add([Entry(1, "a.test", 0, "{}"), Entry(2, "a.test", 0, "{}")])
    (first,), _ = frontier.claim_many(100.0, 1)
    assert frontier.fetched_many([Fetch(first.fp, first.token, 100.0, 0.1, 503)]) == [2.0]
    (second,), _ = frontier.claim_many(102.5, 1)
    assert frontier.fetched_many([Fetch(second.fp, second.token, 102.5, 0.1, 503)]) == [4.0]  # doubled
    assert frontier.fetched_many([Fetch(second.fp, second.token, 103.0, 0.1, 200)]) == [None]  # stale


def test_after_a_stall_that_held_every_beat_no_live_worker_is_taken_for_dead(tmp_path):
    server = RedisServer(tmp_path).start()
    try:
        client = redis.Redis.from_url(server.url)
        a, b, c = (RedisFrontier(client, "beats", worker_id=name, worker_timeout=15) for name in "abc")
        a.add([Entry(1, "a.test", 0, "{}"), Entry(2, "b.test", 0, "{}")])
        for worker in (a, b, c):
            assert worker.heartbeat(100.0) == []
        (held,), _ = b.claim_many(100.0, 1)
        assert c.heartbeat(103.0) == []  # c dies after this beat; then Redis stalls 20 s
        # The first beats after it: each worker's own last beat is older than the timeout, so
        # none judges for two beat intervals (10 s), though b's first beat comes late.
        assert a.heartbeat(125.0) == [] and a.heartbeat(125.1) == [] and a.heartbeat(130.0) == []
        assert b.heartbeat(134.0) == []
        found = a.heartbeat(135.5)  # b beat since: alive; c has not for 32 s: dead
        assert [(worker, leases) for worker, leases, _ in found] == [("c", 0)]
        assert a.reap(135.5) == 0 and b.ack(held.fp, held.token)  # b's lease held throughout
    finally:
        server.stop()
