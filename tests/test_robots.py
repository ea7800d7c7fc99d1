"""robots.txt under RFC 9309 over real loopback HTTP, with a server that counts hits."""

from __future__ import annotations

import dataclasses
import itertools

import pytest
from testweb import RESET, Site, TestWeb

from crawler.robots.cache import RobotsCachePolicy, RobotsEntry, RobotsLru
from crawler.robots.rules import RobotsRules

BOT = {"USER_AGENT": "TestBot/1.0 (+http://example.test/bot)", "ROBOTSTXT_OBEY": True,
       "ROBOTSTXT_RETRY_DELAY": 0.3, "ROBOTSTXT_RETRY_TIMES": 2}
FORBID_2 = "User-agent: *\nDisallow: /p/2.html\n"


def crawl_site(crawl, tmp_path, site: Site, *others: Site, **settings):
    with TestWeb([site, *others]) as web:
        result = crawl(web, tmp_path, "seeds=" + web.url(site.host), **{**BOT, **settings})
        hits = sorted(web.hits(), key=lambda r: r.start)
    assert result.returncode == 0, result.log[-3000:]
    return result, hits


def pages(hits, host: str = "r.test") -> set[str]:
    return {r.path for r in hits if r.host == host and r.path != "/robots.txt"}


def robots_hits(hits, host: str = "r.test") -> list:
    return [r for r in hits if r.host == host and r.path == "/robots.txt"]


ALL_PAGES = {"/", "/p/1.html", "/p/2.html", "/p/3.html"}


def test_2xx_rules_apply_and_robots_txt_comes_first(crawl, tmp_path):
    result, hits = crawl_site(crawl, tmp_path, Site("r.test", pages=4, robots_txt=FORBID_2),
                              POLITENESS_MIN_DELAY=0.3)
    assert hits[0].path == "/robots.txt" and len(robots_hits(hits)) == 1
    assert hits[1].start - hits[0].end >= 0.3 - 0.005  # robots.txt was a fetch: the gap holds
    assert pages(hits) == ALL_PAGES - {"/p/2.html"}
    assert not any(r["url"].endswith("/p/2.html") for r in result.records)
    assert result.stats["robotstxt/forbidden"] == 1
    assert result.stats["robotstxt/forbidden/2xx"] == 1


def test_the_group_is_chosen_by_exact_product_token(crawl, tmp_path):
    robots = ("User-agent: TestBotX\nDisallow: /\n\n"
              "User-agent: testbot\nDisallow: /p/3.html\n\nUser-agent: *\nDisallow: /\n")
    _, hits = crawl_site(crawl, tmp_path, Site("r.test", pages=4, robots_txt=robots))
    assert pages(hits) == ALL_PAGES - {"/p/3.html"}


@pytest.mark.parametrize("hops, obeyed", [(5, True), (6, False)])
def test_redirects_are_followed_five_times_across_hosts(crawl, tmp_path, hops, obeyed):
    chain = ["/robots.txt"] + [f"/hop{i}" for i in range(1, hops)]
    redirects = dict(itertools.pairwise(chain))
    redirects[chain[-1]] = "http://rules.test:{port}/robots.txt"
    site = Site("r.test", pages=4, redirects=redirects)
    rules = Site("rules.test", pages=1, robots_txt=FORBID_2)
    with TestWeb([site, rules]) as web:
        site.redirects[chain[-1]] = web.url("rules.test", "/robots.txt")
        # robots.txt redirects to another test host: both are on loopback.
        result = crawl(web, tmp_path, "seeds=" + web.url("r.test"), NETWORK_ALLOW="127.0.0.0/8", **BOT)
        hits = web.hits()
    assert result.returncode == 0, result.log[-3000:]
    fetched = {r.path for r in hits if r.host == "r.test"}
    assert set(chain) <= fetched
    assert ("/p/2.html" in fetched) is not obeyed  # more than 5: unavailable, all allowed
    # After five redirects the sixth is not followed; page links into the chain stay in scope.
    assert {r.path for r in hits if r.host == "rules.test"} == ({"/robots.txt"} if obeyed else set())


@pytest.mark.parametrize("status", [404, 403, 401])
def test_4xx_means_no_rules(crawl, tmp_path, status):
    site = Site("r.test", pages=4, robots_txt="User-agent: *\nDisallow: /\n", robots_status=status)
    result, hits = crawl_site(crawl, tmp_path, site)
    assert pages(hits) == ALL_PAGES
    assert len(result.records) == 4


@pytest.mark.parametrize("answer, kind", [(500, "5xx"), (503, "5xx"), (429, "429"), (RESET, "connection")],
                         ids=["500", "503", "429", "reset"])
def test_unreachable_robots_disallows_the_whole_host(crawl, tmp_path, answer, kind):
    site = Site("r.test", pages=4, statuses={"/robots.txt": answer})
    result, hits = crawl_site(crawl, tmp_path, site, ROBOTSTXT_RETRY_TIMES=3)
    assert pages(hits) == set()
    assert len(robots_hits(hits)) == 3  # exactly ROBOTSTXT_RETRY_TIMES attempts
    gaps = [b.start - a.end for a, b in itertools.pairwise(robots_hits(hits))]
    assert gaps[0] >= 0.3 - 0.01 and gaps[1] >= 0.6 - 0.01  # retried with doubling backoff
    assert result.records == []
    assert result.stats["robotstxt/given_up"] == 1  # the seed: a dead letter of the frontier
    assert result.stats["frontier/dead_letters"] == 1
    assert result.stats[f"robotstxt/error/{kind}"] == 3
    warnings = [line for line in result.log.splitlines() if "[crawler.middlewares.robots] WARNING" in line]
    assert len(warnings) == 3 and "attempt 3 of 3" in warnings[-1]


def test_the_default_four_attempts_are_four_fetches(crawl, tmp_path):
    site = Site("r.test", pages=2, statuses={"/robots.txt": 503})
    _, hits = crawl_site(crawl, tmp_path, site, ROBOTSTXT_RETRY_TIMES=4, ROBOTSTXT_RETRY_DELAY=0.05)
    assert len(robots_hits(hits)) == 4


def test_an_html_error_page_under_503_is_not_parsed_as_rules(crawl, tmp_path):
    site = Site("r.test", pages=4, robots_txt="<html><body>Service Unavailable</body></html>",
                robots_status=503)
    _, hits = crawl_site(crawl, tmp_path, site)
    assert pages(hits) == set()


def test_a_timeout_is_unreachable(crawl, tmp_path):
    site = Site("r.test", pages=2, path_latency={"/robots.txt": 2.0})
    _, hits = crawl_site(crawl, tmp_path, site, DOWNLOAD_TIMEOUT=0.5, ROBOTSTXT_RETRY_TIMES=0)
    assert pages(hits) == set()


def test_robots_comes_back_after_an_outage_and_the_host_is_crawled(crawl, tmp_path):
    site = Site("r.test", pages=4, robots_txt=FORBID_2,
                status_sequences={"/robots.txt": [503, 503]})
    result, hits = crawl_site(crawl, tmp_path, site, ROBOTSTXT_RETRY_TIMES=4)
    # (page 0 also links to /robots.txt, so it may be fetched once more as a page)
    assert [r.status for r in robots_hits(hits)[:3]] == [503, 503, 200]
    first_page = min(r.start for r in hits if r.path != "/robots.txt")
    assert first_page > robots_hits(hits)[2].end
    assert pages(hits) == ALL_PAGES - {"/p/2.html"}
    assert len(result.records) == 3


def test_only_the_first_500_kib_are_read(crawl, tmp_path):
    padding = "# " + "x" * 98 + "\n"
    robots = "User-agent: *\nDisallow: /p/1.html\n" + padding * 6200 + "Disallow: /p/2.html\n"
    assert len(robots) > 600 * 1024
    result, hits = crawl_site(crawl, tmp_path, Site("r.test", pages=4, robots_txt=robots))
    assert pages(hits) == ALL_PAGES - {"/p/1.html"}  # the rule past 500 KiB is not applied
    assert result.stats["robotstxt/truncated"] == 1


def test_fifty_concurrent_requests_to_a_new_host_wait_for_one_fetch(crawl, tmp_path):
    site = Site("r.test", pages=60, fanout=60, robots_txt="User-agent: *\nDisallow: /p/1\n")
    with TestWeb([site]) as web:
        seeds = ",".join(web.page_url("r.test", i) for i in range(1, 51))
        result = crawl(web, tmp_path, f"seeds={seeds}",
                       SCHEDULER="scrapy.core.scheduler.Scheduler", CONCURRENT_REQUESTS=50,
                       CONCURRENT_REQUESTS_PER_DOMAIN=50, **BOT)
        hits = web.hits()
    assert result.returncode == 0, result.log[-3000:]
    forbidden = {f"/p/{i}.html" for i in [1, *range(10, 20)]}
    assert len(robots_hits(hits)) == 1
    assert not pages(hits) & forbidden
    assert result.stats["robotstxt/forbidden"] == len(forbidden)


def test_crawl_delay_spaces_fetches_on_the_server_side(crawl, tmp_path):
    site = Site("r.test", pages=4, robots_txt="User-agent: *\nCrawl-delay: 0.6\n")
    _, hits = crawl_site(crawl, tmp_path, site, POLITENESS_MIN_DELAY=0.05)
    page_hits = [r for r in hits if r.path != "/robots.txt"]
    assert len(page_hits) == 4
    for a, b in itertools.pairwise(page_hits):
        assert b.start - a.end >= 0.6 - 0.005


def test_crawl_delay_can_be_switched_off(crawl, tmp_path):
    site = Site("r.test", pages=4, robots_txt="User-agent: *\nCrawl-delay: 5\n")
    _, hits = crawl_site(crawl, tmp_path, site, ROBOTSTXT_CRAWL_DELAY=False)
    page_hits = [r for r in hits if r.path != "/robots.txt"]
    assert page_hits[-1].start - page_hits[0].start < 2


def test_rules_expire_after_the_ttl(crawl, tmp_path):
    site = Site("r.test", pages=5, fanout=1, robots_txt=FORBID_2)
    _, hits = crawl_site(crawl, tmp_path, site, ROBOTSTXT_CACHE_TTL=0.5, POLITENESS_MIN_DELAY=0.3)
    assert len(robots_hits(hits)) >= 2


# --- the cache policy, on a fake clock ------------------------------------------------

POLICY = RobotsCachePolicy(ttl=86400, retry=60)


def test_fresh_rules_hold_for_the_ttl():
    entry = POLICY.after_fetch(None, RobotsRules.allow_all(), "2xx", now=1000.0)
    assert entry.expires == 1000.0 + 86400


def test_unreachable_without_a_copy_disallows_and_retries_with_doubling():
    first = POLICY.after_fetch(None, None, "5xx", now=0.0)
    assert first.rules.kind == "disallow_all" and first.expires == 60
    second = POLICY.after_fetch(first, None, "5xx", now=60.0)
    assert second.expires == 60 + 120 and second.failures == 2


def test_unreachable_refresh_keeps_the_cached_copy():
    good = RobotsEntry(RobotsRules.parse(FORBID_2.encode(), "TestBot"), "2xx", expires=86400)
    refreshed = POLICY.after_fetch(good, None, "unreachable", now=86400.0)
    assert refreshed.rules is good.rules
    assert refreshed.expires == 86400 + 60
    assert not refreshed.rules.allowed("http://r.test/p/2.html")
    assert refreshed.rules.allowed("http://r.test/p/3.html")


def test_sitemap_index_with_gzip_children_feeds_the_frontier(crawl, tmp_path):
    import gzip

    site = Site("r.test", pages=3, unlinked_pages=3)
    with TestWeb([site, Site("other.test", pages=1)]) as web:
        def urlset(urls: list[tuple[str, str]]) -> bytes:
            entries = "".join(f"<url><loc>{u}</loc><lastmod>{m}</lastmod></url>" for u, m in urls)
            return (f'<?xml version="1.0" encoding="UTF-8"?><urlset '
                    f'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</urlset>').encode()

        index = ('<?xml version="1.0" encoding="UTF-8"?><sitemapindex '
                 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
                 f"<sitemap><loc>{web.url('r.test', '/sm1.xml.gz')}</loc></sitemap>"
                 f"<sitemap><loc>{web.url('r.test', '/sm2.xml.gz')}</loc></sitemap>"
                 "</sitemapindex>").encode()
        sitemap_line = f"Sitemap: {web.url('r.test', '/index.xml')}\n"
        site.robots_txt = "User-agent: *\nDisallow: /hidden/2.html\n" + sitemap_line
        site.files = {
            "/index.xml": ("application/xml", index),
            "/sm1.xml.gz": ("application/gzip", gzip.compress(urlset([
                (web.url("r.test", "/hidden/0.html"), "2026-11-01"),
                (web.url("other.test", "/"), "2026-11-02")]))),
            "/sm2.xml.gz": ("application/gzip", gzip.compress(urlset([
                (web.url("r.test", "/hidden/1.html"), "2026-11-03"),
                (web.url("r.test", "/hidden/2.html"), "2026-11-04")]))),
        }
        result = crawl(web, tmp_path, "seeds=" + web.url("r.test"), SITEMAP_FOLLOW=True, **BOT)
        fetched = {r.path for r in web.hits("r.test")}
        other = web.hits("other.test")
    assert result.returncode == 0, result.log[-3000:]
    assert {"/index.xml", "/sm1.xml.gz", "/sm2.xml.gz", "/hidden/0.html", "/hidden/1.html"} <= fetched
    assert "/hidden/2.html" not in fetched  # still obeys robots.txt
    assert other == []  # out of scope
    lastmod = {r["url"].rsplit("/", 1)[1]: r["sitemap_lastmod"] for r in result.records}
    assert lastmod["0.html"] == "2026-11-01" and lastmod["1.html"] == "2026-11-03"
    assert result.stats["sitemap/urls"] == 3  # /hidden/2.html queued, then refused at fetch time
    assert result.stats["robotstxt/forbidden/2xx"] == 1


def test_the_rules_cache_keeps_the_most_recently_used_hosts_only():
    cache = RobotsLru(2)
    entries = {host: RobotsEntry(RobotsRules.allow_all(), "4xx", 1.0) for host in "abc"}
    cache.put("a", entries["a"])
    cache.put("b", entries["b"])
    assert cache.get("a") is entries["a"]  # a is now the most recent
    cache.put("c", entries["c"])
    assert len(cache) == 2 and cache.get("b") is None and cache.get("a") is entries["a"]


def test_cached_entries_hold_parsed_rules_not_bodies():
    assert "body" not in {f.name for f in dataclasses.fields(RobotsEntry)}


def test_a_refused_connection_is_an_error_of_its_kind_logged_at_warning(crawl, tmp_path):
    from redis_server import free_port

    with TestWeb([Site("r.test", pages=1)]) as web:
        closed = f"http://r.test:{free_port()}/"  # nothing listens there
        result = crawl(web, tmp_path, "seeds=" + closed, **{**BOT, "ROBOTSTXT_RETRY_TIMES": 1})
    assert result.returncode == 0, result.log[-3000:]
    assert result.stats["robotstxt/error/refused"] == 1
    assert result.stats["robotstxt/given_up"] == 1
    assert any("WARNING" in line and "unreachable (refused, attempt 1 of 1)" in line
               for line in result.log.splitlines())
