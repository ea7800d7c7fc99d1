"""The content-seen state: one contract, kept in memory or in a real redis-server."""

from __future__ import annotations

import hashlib
import logging
import random

import pytest
import redis
from redis_server import RedisServer
from scrapy.utils.test import get_crawler

from crawler.dedup.index import Match, MemoryContentIndex, RedisContentIndex
from crawler.items import Page
from crawler.middlewares.content_seen import ContentSeenMiddleware


@pytest.fixture(scope="module")
def redis_server(tmp_path_factory):
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    yield server
    server.stop()


@pytest.fixture
def client(redis_server):
    client = redis.Redis.from_url(redis_server.url)
    client.flushdb()
    yield client
    client.close()


@pytest.fixture(params=["memory", "redis"])
def make_index(request):
    """A factory of indexes sharing one state: two workers of one crawl."""
    if request.param == "memory":
        index = MemoryContentIndex(3)
        return lambda: index
    client = request.getfixturevalue("client")
    return lambda: RedisContentIndex(client, "crawl-a", 3)


def sha(text: str) -> bytes:
    return hashlib.sha256(text.encode()).digest()


def flip(fp: int, *bits: int) -> int:
    for bit in bits:
        fp ^= 1 << bit
    return fp


def test_an_exact_copy_under_another_url_is_found(make_index):
    index = make_index()
    assert index.check_and_add(sha("a"), 0x1234, "http://a.test/", "a.test", True) is None
    other_worker = make_index()
    assert other_worker.check_and_add(sha("a"), 0x1234, "http://m.test/", "m.test", True) == Match(
        "exact", "http://a.test/")
    assert index.check_and_add(sha("a"), 0x1234, "http://a.test/", "a.test", True) is None  # refetched


def test_a_near_copy_is_found_through_each_block_and_a_far_one_is_not(make_index):
    index = make_index()
    fp = 0x0123_4567_89AB_CDEF
    index.check_and_add(sha("original"), fp, "http://a.test/o", "a.test", True)
    for n, untouched in enumerate(range(4)):  # 3 bits flipped in 3 blocks: one block matches
        bits = [16 * block + 5 for block in range(4) if block != untouched]
        found = index.check_and_add(sha(f"near {n}"), flip(fp, *bits), f"http://a.test/{n}", "a.test", True)
        assert found == Match("near", "http://a.test/o")
    far = flip(fp, 1, 17, 33, 49)  # distance 4
    assert index.check_and_add(sha("far"), far, "http://a.test/far", "a.test", True) is None
    assert index.check_and_add(sha("far2"), flip(far, 2), "http://b.test/", "b.test", True) == Match(
        "near", "http://a.test/far")  # the far page became an original


def test_pages_without_near_are_compared_exactly_only(make_index):
    index = make_index()
    assert index.check_and_add(sha("short one"), 77, "http://a.test/1", "a.test", False) is None
    assert index.check_and_add(sha("short two"), 77, "http://a.test/2", "a.test", False) is None
    assert index.check_and_add(sha("long"), 77, "http://a.test/3", "a.test", True) is None
    assert index.check_and_add(sha("short one"), 5, "http://a.test/4", "a.test", False) == Match(
        "exact", "http://a.test/1")


def test_a_page_fetched_again_with_small_changes_is_not_its_own_duplicate(make_index):
    index = make_index()
    index.check_and_add(sha("v1"), 0xFFFF, "http://a.test/news", "a.test", True)
    assert index.check_and_add(sha("v2"), 0xFFFE, "http://a.test/news", "a.test", True) is None
    assert index.check_and_add(sha("v3"), 0xFFFC, "http://b.test/", "b.test", True) == Match(
        "near", "http://a.test/news")


def test_duplicate_rates_per_host(make_index):
    index = make_index()
    index.check_and_add(sha("x"), 1, "http://a.test/1", "a.test", True)
    for i in range(3):
        index.check_and_add(sha("x"), 1, f"http://m.test/{i}", "m.test", True)
    index.check_and_add(sha("y"), 0xF0F0_F0F0_F0F0_F0F0, "http://m.test/y", "m.test", True)
    assert make_index().duplicate_rate("m.test") == 0.75
    assert make_index().duplicate_rate("a.test") == 0.0
    assert make_index().duplicate_rate("never.test") == 0.0


def test_redis_answers_like_the_memory_index_on_random_fingerprints(client):
    """The Lua scan (32-bit halves, popcount by bit tricks) against NearDupIndex."""
    rng = random.Random(5)
    memory, shared = MemoryContentIndex(3), RedisContentIndex(client, "crawl-b", 3)
    originals: list[int] = []
    for i in range(3000):
        if originals and rng.random() < 0.5:
            fp = flip(rng.choice(originals), *rng.sample(range(64), rng.randint(0, 5)))
        else:
            fp = rng.getrandbits(64) if rng.random() < 0.8 else rng.getrandbits(16) << 48
        args = (sha(f"page {i}"), fp, f"http://h{i % 7}.test/{i}", f"h{i % 7}.test", True)
        expected = memory.check_and_add(*args)
        assert shared.check_and_add(*args) == expected, (i, hex(fp))
        if expected is None:
            originals.append(fp)
    assert len(originals) > 1000


def test_crawls_are_kept_apart(client):
    RedisContentIndex(client, "one", 3).check_and_add(sha("t"), 9, "http://a.test/", "a.test", True)
    assert RedisContentIndex(client, "two", 3).check_and_add(sha("t"), 9, "http://b.test/", "b.test",
                                                              True) is None
    assert all(key.startswith(b"crawl:{") for key in client.scan_iter())


def test_distance_beyond_the_four_blocks_is_refused(client):
    with pytest.raises(ValueError, match="SIMHASH_MAX_DISTANCE"):
        RedisContentIndex(client, "c", 4)


def test_an_unreachable_redis_loses_no_page(tmp_path, caplog):
    crawler = get_crawler()
    crawler.stats.open_spider()
    down = RedisServer(tmp_path)  # never started: its port refuses connections
    index = RedisContentIndex(redis.Redis.from_url(down.url, socket_connect_timeout=1), "c", 3)
    middleware = ContentSeenMiddleware(crawler.stats, 3, 20, index)
    page = Page(url="http://a.test/", status=200, fetched_at=0.0, depth=0, html=b"",
                text=" ".join(f"word{i}" for i in range(50)))
    with caplog.at_level(logging.WARNING):
        assert middleware.check(page) is False  # an original: stored, links followed
        assert middleware.check(page) is False
    assert page.simhash and page.content_sha256
    assert crawler.stats.get_value("dedup/index_errors") == 2
    assert len([r for r in caplog.records if "Content index unreachable" in r.getMessage()]) == 1


def test_the_middleware_uses_redis_when_the_crawl_does(redis_server, client):
    crawler = get_crawler(settings_dict={"REDIS_URL": redis_server.url, "CRAWL_ID": "mw"})
    middleware = ContentSeenMiddleware.from_crawler(crawler)
    assert isinstance(middleware.index, RedisContentIndex)
    assert middleware.index.prefix == "crawl:{mw}:content:"
    assert isinstance(ContentSeenMiddleware.from_crawler(get_crawler()).index, MemoryContentIndex)


def test_many_pages_at_once_answer_like_one_at_a_time(client):
    """All buckets are read before any page is added: the second page is found near the
    first only by the script's scan of what was appended since (as for two workers)."""
    pages = [
        (sha("a"), 1, "http://a.test/1", "a.test", True),
        (sha("b"), 3, "http://a.test/2", "a.test", True),
        (sha("a"), 1 << 63, "http://m.test/1", "m.test", True),
        (sha("c"), 0xFFFF_0000_FFFF_0000, "http://a.test/3", "a.test", True),
    ]
    assert RedisContentIndex(client, "bulk", 3).check_and_add_many(pages) == [
        None, Match("near", "http://a.test/1"), Match("exact", "http://a.test/1"), None]
