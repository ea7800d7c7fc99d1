"""Traps that end themselves, end to end: redirects under the link rules, and crawls of
the trap hosts and of the precision web (tests/trapweb.py) over loopback HTTP."""

from __future__ import annotations

from collections import Counter

import pytest
from redis_server import RedisServer
from scrapy import Request
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response
from scrapy.utils.test import get_crawler
from trapweb import clock_web, precision_web, trap_web

from crawler.middlewares.redirect import SafeRedirectMiddleware
from crawler.urls.links import LinkFollower, Scope
from crawler.urls.normalize import normalize_url


def redirected(location: str, links: LinkFollower, crawler) -> Request:
    crawler.spider = type("Spider", (), {"links": links})()
    middleware = SafeRedirectMiddleware.from_crawler(crawler)
    request = Request("http://a.test/from")
    response = Response(request.url, status=301, headers={"Location": location}, request=request)
    return middleware.process_response(request, response)


@pytest.mark.parametrize(("location", "reason"), [
    ("/a/b/a/b/a/b/", "traps/dropped/repeated_segments"),
    ("/" + "x" * 100, "traps/dropped/url_length"),
    ("http://elsewhere.test/", "links/dropped/offsite"),
])
def test_a_redirect_target_goes_through_the_link_rules(location, reason):
    crawler = get_crawler()
    crawler.stats.open_spider()
    links = LinkFollower(normalize_url, Scope("host", ["a.test"]), crawler.stats, max_url_length=80)
    with pytest.raises(IgnoreRequest):
        redirected(location, links, crawler)
    assert crawler.stats.get_value(reason) == 1


def test_a_redirect_target_is_fetched_in_its_normal_form_once():
    crawler = get_crawler()
    crawler.stats.open_spider()
    links = LinkFollower(normalize_url, Scope("host", ["a.test"]), crawler.stats)
    assert redirected("/B/./c?utm_source=x", links, crawler).url == "http://a.test/B/c"
    with pytest.raises(IgnoreRequest):  # seen: fetched already, or on its way
        redirected("/B/c", links, crawler)


@pytest.fixture(params=["embedded", "redis"])
def backend(request, tmp_path):
    if request.param == "embedded":
        yield {}
        return
    (tmp_path / "redis").mkdir()
    server = RedisServer(tmp_path / "redis").start()
    yield {"REDIS_URL": server.url, "CRAWL_ID": "traps", "SCHEDULER_IDLE_BEFORE_CLOSE": 1}
    server.stop()


def test_a_crawl_of_the_trap_hosts_ends_by_itself_within_the_bounds(crawl, tmp_path, backend):
    with trap_web() as web:
        seeds = ",".join(web.url(site.host) for site in web.sites)
        result = crawl(web, tmp_path, f"seeds={seeds}", TRAP_SOFT_404_PROBE=True, **backend)
        per_path = Counter(r.path for r in web.hits("sid.test") if r.path != "/robots.txt")
        records = result.records
        soft = [r for r in records if web.truth(r["url"])[0] == "soft_404"]
    assert result.returncode == 0, result.log[-3000:]
    assert max(per_path.values()) <= 3, per_path
    assert len(per_path) == 11 + 1  # the 11 real pages and the probe
    assert soft and all(r["soft_404"] and r["duplicate_of"] for r in soft)
    stats = result.stats
    assert stats["traps/params_learned"] == 1
    assert stats["traps/probes"] == 4 and stats["traps/soft_404_hosts"] == 1
    assert "parameter 'sid' learned as irrelevant" in result.log


def test_a_session_host_with_a_clock_line_is_learned_within_three_fetches_a_path(crawl, tmp_path):
    # Its pages differ on every fetch ("Page generated 12:04:05 for visitor 8231"): as
    # exact texts the sid parameter was never learned; as the same page (near) it is.
    with clock_web() as web:
        result = crawl(web, tmp_path, f"seeds={web.url('clock.test')}", TRAP_SOFT_404_PROBE=False)
        per_path = Counter(r.path for r in web.hits("clock.test") if r.path != "/robots.txt")
    assert result.returncode == 0, result.log[-3000:]
    # TRAP_PARAM_EVIDENCE values a path, the seed's bare '/' one of them
    assert len(per_path) == 12 and max(per_path.values()) <= 3, per_path
    assert result.stats["traps/params_learned"] == 1
    assert "parameter 'sid' learned as irrelevant" in result.log


def test_no_real_page_is_lost_to_a_trap_rule_and_copies_are_flagged(crawl, tmp_path):
    with precision_web() as web:
        seeds = ",".join(web.url(site.host) for site in web.sites)
        result = crawl(web, tmp_path, f"seeds={seeds}", TRAP_SOFT_404_PROBE=True, TRAP_DUPLICATE_WINDOW=10)
        truth = [(r, web.truth(r.get("fetched_url") or r["url"])) for r in result.records]
        real = web.real_pages()
    assert result.returncode == 0, result.log[-3000:]
    stored = {key for r, (kind, key) in truth if kind == "page" and not r["duplicate_of"]}
    assert stored == real
    assert all(r["soft_404"] == (kind == "soft_404") for r, (kind, _) in truth)
    learned = set(result.log.split("parameter '")[1:])
    assert {line.split("'")[0] for line in learned} == {"sid", "ref"}
    assert "Host blog.test demoted" in result.log and result.stats["traps/hosts_demoted"] == 1
    canonical = [r for r, _ in truth if r["fetched_url"]]
    assert canonical and all(r["url"].startswith(web.url("shop.test", "/item?id=")) for r in canonical)
