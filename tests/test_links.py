"""The per-link path: keys, scope, trap rules, and skipping links already handled."""

from __future__ import annotations

import pytest
from scrapy.utils.test import get_crawler

from crawler.urls.links import LinkFollower, Scope
from crawler.urls.normalize import absolute_reference, normalize_url


def follower(scope: str = "host", seeds=("example.com",), **kwargs) -> LinkFollower:
    crawler = get_crawler()
    crawler.stats.open_spider()
    return LinkFollower(normalize_url, Scope(scope, seeds), crawler.stats, **kwargs)


@pytest.mark.parametrize(
    "href",
    ["c.html", "../c.html#sec2", "./x/../y?b=1&a=2", "/root?q", "//other.org/p", "?page=2",
     "https://Example.com:443/a/./b", "sub/dir/", "..", ".", "a:b/c", "./a:b", "x?y#z"],
)
def test_absolute_reference_normalises_like_the_resolved_link(href):
    # RFC 3986 section 5.2: the link's key, normalised, is the resolved link, normalised.
    base = "https://example.com/docs/guide/page.html?x=1#top"
    key = absolute_reference(href, base)
    assert normalize_url(key) == normalize_url(href, base)


def test_same_page_links_have_no_key():
    assert absolute_reference("", "http://example.com/a") is None
    assert absolute_reference("#section", "http://example.com/a") is None


def test_links_already_handled_are_returned_once():
    f = follower()
    base = "http://example.com/a/b.html"
    first = f.new_links(base, ["c.html", "/a/c.html", "http://EXAMPLE.com:80/a/c.html#x", "d.html"])
    assert first == ["http://example.com/a/c.html", "http://example.com/a/d.html"]
    assert f.new_links("http://example.com/a/other.html", ["c.html", "d.html#z"]) == []


def test_links_to_sections_of_a_page_are_normalised_once():
    f = follower()
    normalised = []
    accept = f.accept
    f.accept = lambda key: normalised.append(key) or accept(key)
    hrefs = ["c.html#one", "c.html#two", "c.html", "c.html?q=1#x", "c.html?q=1#y", "d.html #x", "d.html#x"]
    assert f.new_links("http://example.com/a/b.html", hrefs) == [
        "http://example.com/a/c.html", "http://example.com/a/c.html?q=1", "http://example.com/a/d.html%20",
        "http://example.com/a/d.html",
    ]
    # A space before the fragment is kept in the key: normalising strips it only at the end.
    assert normalised == ["http://example.com/a/c.html", "http://example.com/a/c.html?q=1",
                          "http://example.com/a/d.html #x", "http://example.com/a/d.html"]


def test_seeds_marked_seen_are_not_returned():
    f = follower()
    f.mark_seen("http://example.com/")
    assert f.new_links("http://example.com/x", ["/", "http://www.example.com/"]) == [
        "http://www.example.com/"
    ]


def test_offsite_and_non_http_links_are_dropped_and_counted():
    f = follower()
    found = f.new_links("http://example.com/", ["http://other.org/", "mailto:a@b.c",
                                                "javascript:void(0)", "http://www.example.com/x"])
    assert found == ["http://www.example.com/x"]
    assert f.stats.get_value("links/dropped/offsite") == 1
    assert f.stats.get_value("urls/rejected/scheme") == 2


def test_malformed_hosts_ports_and_ipv6_literals_are_rejected_by_reason():
    f = follower()
    hrefs = ["http://[::1/", "http://[zz]/", "http://example.com:99999/", "http://example.com:x/",
             "http://exa mple.com/", "http:///x"]
    assert f.new_links("http://example.com/", hrefs) == []
    stats = f.stats.get_stats()
    assert {k: v for k, v in stats.items() if k.startswith("urls/rejected/")} == {
        "urls/rejected/bad_ipv6": 2, "urls/rejected/bad_port": 2,
        "urls/rejected/bad_host": 1, "urls/rejected/no_host": 1}


def test_url_length_cap_drops_long_urls():
    f = follower(max_url_length=60)
    long_path = "/" + "x" * 80
    assert f.new_links("http://example.com/", [long_path, "/short"]) == ["http://example.com/short"]
    assert f.stats.get_value("traps/dropped/url_length") == 1


def test_repeated_path_segments_are_dropped():
    f = follower()
    found = f.new_links("http://example.com/", ["/a/b/a/b/", "/a/b/a/b/a/b/c", "/loop/loop/loop/"])
    assert found == ["http://example.com/a/b/a/b/"]
    assert f.stats.get_value("traps/dropped/repeated_segments") == 2


def test_domain_scope_follows_subdomains_of_the_registered_domain():
    f = follower("domain", seeds=("docs.example.co.uk",))
    found = f.new_links("http://docs.example.co.uk/", ["http://shop.example.co.uk/",
                                                       "http://example.org/"])
    assert found == ["http://shop.example.co.uk/"]


def test_all_scope_follows_every_host():
    f = follower("all")
    assert f.new_links("http://example.com/", ["http://example.org/"]) == ["http://example.org/"]


def test_unknown_scope_is_refused():
    with pytest.raises(ValueError, match="scope must be one of"):
        Scope("world", ["example.com"])


def test_caches_stay_bounded():
    f = follower(cache_size=100)
    for page in range(50):
        f.new_links("http://example.com/", [f"/p/{page}/{i}" for i in range(20)])
    assert len(f._keys.current) <= 100 and len(f._keys.previous) <= 100
    assert len(f._fingerprints.current) <= 100
