"""Page-level robots directives: <meta name=robots> and X-Robots-Tag."""

from __future__ import annotations

import pytest
from testweb import Site, TestWeb, page_path

from crawler.robots.meta import PageDirectives, page_directives


@pytest.mark.parametrize(("meta", "headers", "expected"), [
    (None, [], PageDirectives()),
    ("index, follow", [], PageDirectives()),
    ("NOINDEX", [], PageDirectives(noindex=True)),
    ("noindex,nofollow", [], PageDirectives(True, True)),
    ("none", [], PageDirectives(True, True)),
    (None, ["nofollow"], PageDirectives(nofollow=True)),
    (None, ["otherbot: noindex"], PageDirectives()),
    (None, ["PoliteCrawler: noindex"], PageDirectives(noindex=True)),
    (None, ["*: nofollow"], PageDirectives(nofollow=True)),
    (None, ["noindex, unavailable_after: 25 Jun 2030 15:00:00 PST"], PageDirectives(noindex=True)),
])
def test_directives_are_read_from_the_tag_and_the_header(meta, headers, expected):
    assert page_directives(meta, headers, "politecrawler") == expected


def test_the_web_spider_honours_noindex_and_nofollow(crawl, tmp_path):
    site = Site("meta.test", pages=7, statuses={
        page_path(1): (200, {"X-Robots-Tag": "nofollow"}),
        page_path(2): (200, {"X-Robots-Tag": "otherbot: noindex"}),
        page_path(3): (200, {"X-Robots-Tag": "noindex"}),
    })
    with TestWeb([site]) as web:
        result = crawl(web, tmp_path, "seeds=" + web.url("meta.test"), ROBOTSTXT_OBEY=False)
        fetched = {r.path for r in web.hits("meta.test")}
    assert result.returncode == 0, result.log[-3000:]
    stored = {r["url"] for r in result.records}
    assert fetched == {page_path(i) for i in range(4)}  # 4, 5 and 6 are linked from page 1 only
    assert stored == {web.url("meta.test", page_path(i)) for i in range(3)}  # page 3: noindex
    assert result.stats["robots/meta/nofollow"] == 1 and result.stats["robots/meta/noindex"] == 1
