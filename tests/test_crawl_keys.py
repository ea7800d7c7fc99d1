"""The one key layout of a crawl in Redis."""

from __future__ import annotations

from crawler.context.keys import ANY_CRAWL, CrawlKeys, tagged


def test_a_crawl_s_keys_share_its_hash_tag():
    keys = CrawlKeys("web-1a2b")
    assert keys.prefix == "crawl:{web-1a2b}:" == tagged("web-1a2b")
    assert keys.key("traps:") == "crawl:{web-1a2b}:traps:"
    assert keys.key("robots", "http://a.test") == "crawl:{web-1a2b}:robots:http://a.test"
    assert tagged("web-1a2b:3") == "crawl:{web-1a2b:3}:"  # a Cluster shard's own tag


def test_the_crawl_of_a_key_is_read_back():
    assert CrawlKeys.crawl_of(CrawlKeys("a-b").key("counters")) == "a-b"
    assert CrawlKeys.crawl_of("crawl:{x:2}:ready:0") == "x:2"
    assert CrawlKeys.crawl_of("other") is None and CrawlKeys.crawl_of("crawl:{}:x") is None
    assert ANY_CRAWL == "crawl:{*}:"
