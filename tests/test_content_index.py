"""The content-seen state: one contract, kept in memory, in a real redis-server, or split
over the shards of a real 3-master Redis Cluster."""

from __future__ import annotations

import hashlib
import logging
import random

import pytest
import redis
from redis_cluster import RedisClusterNodes
from redis_server import RedisServer
from scrapy.utils.test import get_crawler

from crawler.dedup.index import Match, MemoryContentIndex, RedisContentIndex
from crawler.dedup.split import ClusterContentIndex
from crawler.frontier.backends.redis.cluster import shard_tags
from crawler.items import Page
from crawler.middlewares.content_seen import ContentSeenMiddleware


@pytest.fixture(scope="module")
def cluster_nodes(tmp_path_factory):
    nodes = RedisClusterNodes(tmp_path_factory.mktemp("cluster")).start()
    yield nodes
    nodes.stop()


@pytest.fixture
def cluster_client(cluster_nodes):
    for port in cluster_nodes.masters_ports():
        redis.Redis(port=port).flushall()
    client = redis.RedisCluster.from_url(cluster_nodes.url)
    yield client
    client.close()


@pytest.fixture(params=["memory", "redis", "cluster"])
def make_index(request):
    """A factory of indexes sharing one state: two workers of one crawl."""
    if request.param == "memory":
        index = MemoryContentIndex(3)
        return lambda: index
    if request.param == "cluster":
        client = request.getfixturevalue("cluster_client")
        return lambda: ClusterContentIndex(client, shard_tags("crawl-a", 16), 3)
    client = request.getfixturevalue("client")
    return lambda: RedisContentIndex(client, "crawl-a", 3)


@pytest.fixture(params=["redis", "cluster"])
def shared_index(request):
    """An index shared by the workers of a crawl: one Redis's, or split over a cluster."""
    if request.param == "cluster":
        return ClusterContentIndex(request.getfixturevalue("cluster_client"), shard_tags("crawl-b", 16), 3)
    return RedisContentIndex(request.getfixturevalue("client"), "crawl-b", 3)


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


def test_redis_answers_like_the_memory_index_on_random_fingerprints(shared_index):
    """The Lua scan (32-bit halves, popcount by bit tricks), or the split index's records
    and rounds, against NearDupIndex."""
    rng = random.Random(5)
    memory, shared = MemoryContentIndex(3), shared_index
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


class FlakyIndex:
    """An index that fails or answers, in the order given: a cluster with a master away,
    where pages whose shards all answer pass now and then."""

    def __init__(self, answers):
        self.answers = iter(answers)

    def check_and_add(self, *page):
        answer = next(self.answers)
        if isinstance(answer, Exception):
            raise answer
        return answer


def test_an_outage_coming_back_soon_after_the_last_is_said_at_info(caplog):
    crawler = get_crawler()
    crawler.stats.open_spider()
    down = redis.ConnectionError("node away")
    middleware = ContentSeenMiddleware(crawler.stats, 3, 20, FlakyIndex([down, None, down, down]))
    text = " ".join(f"word{i}" for i in range(50))
    with caplog.at_level(logging.INFO):
        for i in range(4):
            page = Page(url=f"http://a.test/{i}", status=200, fetched_at=0.0, depth=0, html=b"", text=text)
            assert middleware.check(page) is False
    said = [(r.levelname, r.getMessage().split(",")[0]) for r in caplog.records
            if "Content index" in r.getMessage()]
    assert said == [("WARNING", "Content index unreachable"), ("INFO", "Content index answers again"),
                    ("INFO", "Content index unreachable")]
    assert crawler.stats.get_value("dedup/index_errors") == 3


def test_the_middleware_uses_redis_when_the_crawl_does(redis_server, client):
    crawler = get_crawler(settings_dict={"REDIS_URL": redis_server.url, "CRAWL_ID": "mw"})
    middleware = ContentSeenMiddleware.from_crawler(crawler)
    middleware.calls.stop()  # its I/O thread, ended by the reactor's shutdown in a crawl
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


def cluster_keys(nodes: RedisClusterNodes) -> dict[int, list[bytes]]:
    return {port: list(redis.Redis(port=port).scan_iter(match="crawl:*")) for port in nodes.masters_ports()}


def test_the_split_index_spreads_over_the_masters(cluster_nodes, cluster_client):
    index = ClusterContentIndex(cluster_client, shard_tags("spread", 16), 3)
    rng = random.Random(8)
    pages = [(sha(f"page {i}"), rng.getrandbits(64), f"http://h{i % 5}.test/{i}", f"h{i % 5}.test", True)
             for i in range(60)]
    assert index.check_and_add_many(pages) == [None] * 60
    keys = cluster_keys(cluster_nodes)
    assert sum(1 for held in keys.values() if held) == 3, keys  # every master holds a part
    tags = {key.split(b"}")[0] + b"}" for held in keys.values() for key in held}
    assert len(tags) > 8  # over most of the 16 shard tags, not one
    for kind in (b"x:", b"n0:", b"n3:"):  # exact entries and band tables alike
        assert sum(1 for held in keys.values() if any(kind in key for key in held)) >= 2, kind


def test_copies_checked_at_once_on_a_cluster_keep_one_exact_and_may_keep_two_near(cluster_client):
    """What splitting costs: no script sees every table at once. Two copies of one text
    checked at the same instant still keep one (the SHA's shard decides); two near copies
    are both kept (at least once), and a later near copy finds one of them."""
    index = ClusterContentIndex(cluster_client, shard_tags("race", 16), 3)
    fp = 0x0123_4567_89AB_CDEF
    at_once = [(sha("same"), 7, "http://a.test/1", "a.test", True),
               (sha("same"), 7, "http://b.test/1", "b.test", True),
               (sha("v1"), fp, "http://a.test/2", "a.test", True),
               (sha("v2"), flip(fp, 3), "http://b.test/2", "b.test", True)]
    assert index.check_and_add_many(at_once) == [None, Match("exact", "http://a.test/1"), None, None]
    later = index.check_and_add(sha("v3"), flip(fp, 3, 40), "http://c.test/", "c.test", True)
    assert later in (Match("near", "http://a.test/2"), Match("near", "http://b.test/2"))
    assert index.duplicate_rate("b.test") == 0.5


def test_a_master_away_lets_pages_pass_as_originals_said_once(tmp_path, caplog):
    nodes = RedisClusterNodes(tmp_path / "cluster", full_coverage=False).start()
    try:
        settings = {"REDIS_URL": nodes.url, "REDIS_CLUSTER": True, "CRAWL_ID": "away"}
        crawler = get_crawler(settings_dict=settings)
        crawler.stats.open_spider()
        middleware = ContentSeenMiddleware.from_crawler(crawler)
        middleware.calls.stop()  # its I/O thread, ended by the reactor's shutdown in a crawl
        assert isinstance(middleware.index, ClusterContentIndex)
        assert middleware.index.prefixes == [f"crawl:{{{tag}}}:content:" for tag in shard_tags("away", 16)]
        text = " ".join(f"word{i}" for i in range(50))
        pages = [Page(url=f"http://a.test/{i}", status=200, fetched_at=0.0, depth=0, html=b"", text=text)
                 for i in range(4)]
        assert middleware.check(pages[0]) is False
        assert middleware.check(pages[1]) is True  # an exact copy, found across shards
        nodes.kill(nodes.master_of(middleware.index._exact_key(bytes.fromhex(pages[0].content_sha256))))
        with caplog.at_level(logging.INFO):
            assert middleware.check(pages[2]) is False  # its shard away: taken as an original
            assert middleware.check(pages[3]) is False
        assert crawler.stats.get_value("dedup/index_errors") == 2
        assert len([r for r in caplog.records if "Content index unreachable" in r.getMessage()]) == 1
    finally:
        nodes.stop()
