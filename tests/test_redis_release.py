"""The release after a fetch decides from the group's times its claim read, and only while
they still hold: a Crawl-delay or a backoff set since is read and decided again."""

from __future__ import annotations

import pytest
import redis
from redis_server import RedisServer

from crawler.frontier.api import Entry, Fetch
from crawler.frontier.policy import PolitenessPolicy
from crawler.frontier.redis import RedisFrontier


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
