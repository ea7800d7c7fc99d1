"""The traps' learned state: one contract, run on the embedded store and on Redis."""

from __future__ import annotations

import uuid

import pytest
import redis
from redis_server import RedisServer

from crawler.traps.content import Probe
from crawler.traps.store import EmbeddedTrapStore, RedisTrapStore


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory):
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    yield server.url
    server.stop()


@pytest.fixture(params=["embedded", "redis"])
def make_store(request, tmp_path):
    crawl_id = uuid.uuid4().hex

    def make():
        if request.param == "embedded":
            return EmbeddedTrapStore(tmp_path / "traps.sqlite")
        return RedisTrapStore(redis.Redis.from_url(request.getfixturevalue("redis_url")), crawl_id)
    return make


def test_a_parameter_is_settled_once_and_only_learned_ones_are_stripped(make_store):
    store = make_store()
    assert store.settle("a.test", "sid", True)
    assert not store.settle("a.test", "sid", False)  # settled already, by whichever worker
    assert store.settle("a.test", "page", False)
    assert store.learned("a.test") == {"sid"}
    assert store.settled("a.test") == {"sid", "page"}
    assert store.learned("b.test") == frozenset()


def test_evidence_keeps_at_most_the_values_asked_for(make_store):
    store = make_store()
    assert store.observe("a.test", "sid", "r1", "x", "h1", most=3) == {"x": "h1"}
    assert store.observe("a.test", "sid", "r1", "x", "h9", most=3) == {"x": "h1"}  # first text kept
    store.observe("a.test", "sid", "r1", "y", "h1", most=3)
    store.observe("a.test", "sid", "r1", "z", "h1", most=3)
    assert store.observe("a.test", "sid", "r1", "w", "h1", most=3) == {"x": "h1", "y": "h1", "z": "h1"}
    assert store.seen_without("a.test", "sid", "r1")
    assert not store.seen_without("a.test", "sid", "r2")
    assert not store.seen_without("a.test", "id", "r1")


def test_a_bare_page_text_is_kept_per_host_and_replaced_by_the_latest(make_store):
    store = make_store()
    assert store.bare("a.test", "k1") is None
    store.keep_bare("a.test", "k1", "h1")
    store.keep_bare("a.test", "k1", "h2")
    assert store.bare("a.test", "k1") == "h2"
    assert store.bare("b.test", "k1") is None


def test_the_probe_is_claimed_once_and_its_answer_kept(make_store):
    store = make_store()
    assert store.claim_probe("a.test")
    assert not store.claim_probe("a.test")
    assert store.probe("a.test") is None  # claimed, not answered
    probe = Probe("http://a.test/zz", "ab" * 32, 2**64 - 1)
    store.set_probe("a.test", probe)
    assert store.probe("a.test") == probe


def test_recent_outcomes_are_a_window_newest_first_and_demotion_happens_once(make_store):
    store = make_store()
    for duplicate in (True, False, True, True):
        recent = store.record_page("a.test", duplicate, window=3)
    assert recent == [True, True, False]
    assert store.record_page("b.test", False, window=3) == [False]
    assert store.demote("a.test")
    assert not store.demote("a.test")


def test_the_state_outlives_the_store_object(make_store):
    store = make_store()
    store.settle("a.test", "sid", True)
    store.set_probe("a.test", Probe("http://a.test/zz", "cd" * 32, 7))
    store.close()
    again = make_store()
    assert again.learned("a.test") == {"sid"}
    assert again.probe("a.test").simhash == 7
