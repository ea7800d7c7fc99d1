"""The three content indexes give the same verdicts: the same sequences of (URL, text)
observations run through the in-process index, the one-Redis script and the index split
over a real 3-master Redis Cluster, each step's verdict (new, exact or near, and the
original's URL) the one the table says. The one-Redis script repeats in Lua the rule
``judge`` and ``MemoryContentIndex`` say in Python; these tables show both agree."""

from __future__ import annotations

import hashlib
import uuid

import pytest
import redis

from crawler.dedup.index import MemoryContentIndex, RedisContentIndex
from crawler.dedup.split import ClusterContentIndex
from crawler.frontier.backends.redis.cluster import shard_tags


def flipped(fp: int, *bits: int) -> int:
    for bit in bits:
        fp ^= 1 << bit
    return fp


A1, A2, B = 0x0123_4567_89AB_CDEF, 0xFEDC_BA98_7654_3210, 0x0F0F_0F0F_0F0F_0F0F  # 32 bits apart or more
# Each text's simhash: "~n" texts are near copies n bits from their source, "s" texts short
# pages compared exactly only (their simhash unused).
SIMHASH = {
    "a1": A1, "a2": A2, "b": B,
    "a1~2": flipped(A1, 1, 20), "a1~3": flipped(A1, 1, 20, 40), "a1~4": flipped(A1, 1, 20, 40, 60),
    "a1~4~1": flipped(A1, 1, 20, 40, 60, 50), "a2~1": flipped(A2, 7), "s1": 5, "s2": 6,
}

NEW = None
# Each table: (URL, text, verdict) steps; a verdict is NEW or ("exact" | "near", original's URL).
TABLES = {
    "new pages and exact copies": [
        ("/1", "a1", NEW), ("/2", "b", NEW), ("/3", "a1", ("exact", "/1")),
        ("/1", "a1", NEW),  # fetched again unchanged: no copy of itself
        ("/3", "a1", ("exact", "/1")),
    ],
    "near copies within 3 bits": [
        ("/1", "a1", NEW), ("/2", "a1~2", ("near", "/1")), ("/3", "a1~3", ("near", "/1")),
        ("/4", "a1~4", NEW),  # 4 bits: an original
        ("/5", "a1~4~1", ("near", "/4")),  # 1 bit from /4, 5 from /1
    ],
    "a URL whose text changes": [
        ("/1", "a1", NEW), ("/1", "a2", NEW),
        ("/2", "a1", NEW),  # /1's old text is nobody's now
        ("/3", "a2", ("exact", "/1")), ("/4", "a1~2", ("near", "/2")), ("/5", "a2~1", ("near", "/1")),
    ],
    "a URL changing back": [
        ("/1", "a1", NEW), ("/1", "a2", NEW), ("/1", "a1", NEW),
        ("/2", "a1", ("exact", "/1")),
        ("/3", "a2", NEW),  # the version /1 left
        ("/4", "a2~1", ("near", "/3")),
    ],
    "a page changed a little": [
        ("/1", "a1", NEW), ("/1", "a1~2", NEW),  # near its own old version: recorded anew
        ("/2", "a1", ("near", "/1")),  # the old text's exact entry gone, its near one is /1's new
        ("/3", "a1~2", ("exact", "/1")),
    ],
    "a copy of a version since replaced": [
        ("/1", "a1", NEW), ("/2", "a1", ("exact", "/1")), ("/1", "a2", NEW),
        ("/2", "a1", NEW),  # fetched again: the text is /2's own now
        ("/3", "a1", ("exact", "/2")), ("/4", "a1~3", ("near", "/2")), ("/5", "a2", ("exact", "/1")),
    ],
    "short pages and pages turning short": [
        ("/1", "s1", NEW), ("/1", "s2", NEW), ("/2", "s1", NEW), ("/3", "s2", ("exact", "/1")),
        ("/4", "a1", NEW), ("/4", "s1", ("exact", "/2")),  # a copy keeps its old version...
        ("/5", "a1~2", ("near", "/4")),
        ("/4", "b", NEW),  # ...until it changes: a1 leaves the exact and the near tables
        ("/6", "a1~2", NEW),
    ],
}


@pytest.fixture(params=["memory", "redis", "cluster"])
def make_index(request):
    """A fresh index of each backend: its own crawl in a shared server."""
    crawl = uuid.uuid4().hex
    if request.param == "memory":
        yield lambda: MemoryContentIndex(3)
    elif request.param == "redis":
        yield lambda: RedisContentIndex(request.getfixturevalue("client"), crawl, 3)
    else:
        client = redis.RedisCluster.from_url(request.getfixturevalue("cluster_url"))
        yield lambda: ClusterContentIndex(client, shard_tags(crawl, 16), 3)
        client.close()


@pytest.mark.parametrize("table", TABLES)
def test_each_backend_gives_the_verdicts_of_the_table(make_index, table):
    index = make_index()
    verdicts = []
    for path, text, _ in TABLES[table]:
        sha = hashlib.sha256(text.encode()).digest()
        found = index.check_and_add(sha, SIMHASH[text], f"http://site.test{path}", "site.test",
                                    not text.startswith("s"))
        verdicts.append(None if found is None else (found.kind, found.original.removeprefix("http://site.test")))
    assert verdicts == [verdict for _, _, verdict in TABLES[table]]

