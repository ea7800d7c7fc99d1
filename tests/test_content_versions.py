"""The content-seen index holds one text version per URL: a page's new version replaces
its old one, in memory, in a real redis-server and split over a real 3-master Redis
Cluster, so a continuous crawl of a fixed set of URLs keeps a flat index however often
its pages change."""

from __future__ import annotations

import hashlib
import random

import pytest
import redis

from crawler.dedup.index import Match, MemoryContentIndex, RedisContentIndex
from crawler.dedup.split import SWAP_VERSION, ClusterContentIndex
from crawler.frontier.backends.redis.cluster import shard_tags


@pytest.fixture
def cluster_client(cluster_url):
    client = redis.RedisCluster.from_url(cluster_url)
    client.flushall()  # on every master
    yield client
    client.close()


@pytest.fixture(params=["memory", "redis", "cluster"])
def index(request):
    if request.param == "memory":
        return MemoryContentIndex(3)
    if request.param == "cluster":
        return ClusterContentIndex(request.getfixturevalue("cluster_client"), shard_tags("crawl-v", 16), 3)
    return RedisContentIndex(request.getfixturevalue("client"), "crawl-v", 3)


def sha(text: str) -> bytes:
    return hashlib.sha256(text.encode()).digest()


def size(index) -> tuple[int, int, int]:
    """(entries, bytes of simhash buckets, keys) the index holds: in Redis the fields of
    its hashes, the bytes of its strings and its keys (how many keys they take depends
    on how the random fingerprints fall into buckets)."""
    if isinstance(index, MemoryContentIndex):
        entries = len(index.exact) + len(index.near) + len(index.versions)
        return entries, 0, entries
    client = index.redis
    keys = [k for k in client.scan_iter(match="crawl:*:content:*", count=1000) if not k.endswith(b"cuts")]
    fields = sum(client.hlen(k) for k in keys if client.type(k) == b"hash")
    strings = sum(client.strlen(k) for k in keys if client.type(k) == b"string")
    return fields, strings, len(keys)


def test_a_new_version_replaces_the_old_one(index):
    url = "http://a.test/news"
    index.check_and_add(sha("v1"), 0x0123_4567_89AB_CDEF, url, "a.test", True)
    assert index.check_and_add(sha("v2"), 0x7E57_0000_FFFF_1111, url, "a.test", True) is None
    # The old text belongs to no page any more: another URL with it is an original...
    assert index.check_and_add(sha("v1"), 0x0123_4567_89AB_CDEF, "http://b.test/", "b.test", True) is None
    # ...and the new one is the page's: a copy of it is found, exactly and near.
    assert index.check_and_add(sha("v2"), 0x7E57_0000_FFFF_1111, "http://c.test/", "c.test", True) == Match(
        "exact", url)
    near_copy = index.check_and_add(sha("v2 near"), 0x7E57_0000_FFFF_1113, "http://d.test/", "d.test", True)
    assert near_copy == Match("near", url)


def test_key_counts_stay_flat_over_many_versions(index):
    rng = random.Random(38)
    urls = [f"http://h{n % 5}.test/p{n}" for n in range(40)]
    sizes = []
    for version in range(30):
        for n, url in enumerate(urls):
            near = n % 4 != 0  # short pages are compared exactly only
            index.check_and_add(sha(f"{url} {version}"), rng.getrandbits(64), url, url[7:15], near)
        sizes.append(size(index))
    # 40 URLs x 30 versions hold what 40 x 1 held: as many entries and bucket bytes,
    # about as many keys (4 a version, were versions kept)
    assert {entries_and_bytes[:2] for entries_and_bytes in sizes} == {sizes[0][:2]}, sizes
    assert max(keys for _, _, keys in sizes) < 1.2 * sizes[0][2], sizes


def test_a_version_cut_while_another_worker_read_the_buckets_loses_no_near_copy(client):
    """Checks in a batch read every bucket first: a cut made after the read moves the
    bytes a tail scan starts from, so the script rescans the buckets whole."""
    index = RedisContentIndex(client, "crawl-v", 3)
    first = 0x1111_2222_3333_ABCD
    index.check_and_add(sha("a1"), first, "http://a.test/", "a.test", True)
    other = 0x4444_5555_6666_ABCD  # same block 0, far from `first`
    near_other = other ^ (1 << 40)
    found = index.check_and_add_many([
        (sha("a2"), 0x7777_8888_9999_0000, "http://a.test/", "a.test", True),  # cuts `first`
        (sha("d"), other, "http://d.test/", "d.test", True),  # appended where `first` was
        (sha("c"), near_other, "http://c.test/", "c.test", True),
    ])
    assert found == [None, None, Match("near", "http://d.test/")]


def test_a_cluster_master_without_the_scripts_is_given_them(cluster_client):
    """A master restarted or promoted has an empty script cache: its NOSCRIPT commands
    (which ran nothing) are sent again once the scripts are loaded."""
    index = ClusterContentIndex(cluster_client, shard_tags("crawl-s", 16), 3)
    url = "http://a.test/news"
    index.check_and_add(sha("v1"), 0x0123_4567_89AB_CDEF, url, "a.test", True)
    cluster_client.script_flush()  # on every master
    assert cluster_client.script_exists(SWAP_VERSION.sha) == [False]
    assert index.check_and_add(sha("v2"), 0x7E57_0000_FFFF_1111, url, "a.test", True) is None
    assert index.check_and_add(sha("v1"), 0x0123_4567_89AB_CDEF, "http://b.test/", "b.test", True) is None
    # 2 URLs: their exact and version entries, 2 hosts' page counts, their 4 records each
    assert size(index)[:2] == (2 + 2 + 2, 2 * 4 * 24)


def test_one_page_checked_twice_at_once_is_kept_once(index):
    """Two checks of one URL's new text in the same rounds (on a cluster both claim it at
    once): one version, one set of band records, as for a single check."""
    url = "http://a.test/news"
    index.check_and_add(sha("v1"), 0x0123_4567_89AB_CDEF, url, "a.test", True)
    twice = [(sha("v2"), 0x7E57_0000_FFFF_1111, url, "a.test", True)] * 2
    if isinstance(index, MemoryContentIndex):
        assert [index.check_and_add(*page) for page in twice] == [None, None]
    else:
        assert index.check_and_add_many(twice) == [None, None]
    # what one check keeps: the exact, near (one Redis: simhash -> SHA) and version entries
    # and the host's page count (in Redis), 4 band records
    kept = {MemoryContentIndex: (3, 0), RedisContentIndex: (4, 4 * 8), ClusterContentIndex: (3, 4 * 24)}
    assert size(index)[:2] == kept[type(index)]
