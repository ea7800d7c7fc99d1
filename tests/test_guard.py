"""The address guard in real crawls over the loopback test web: every spelling of the
operator's own network refused, by link and by redirect, counted by reason; the seed
host's pages all crawled; NETWORK_ALLOW opens more; a proxy never sees a refused target."""

from __future__ import annotations

import subprocess
from collections import Counter

import pytest
from crawling import CrawlResult, crawl_command
from scrapy import Request
from scrapy.exceptions import CannotResolveHostError, IgnoreRequest
from scrapy.utils.test import get_crawler
from testweb import Site, TestWeb

from crawler.middlewares.address_guard import AddressGuardMiddleware
from crawler.net.addresses import AddressPolicy
from crawler.net.dnscache import DnsCache
from crawler.net.resolver import GuardedResolver
from crawler.store.files import LocalStore

# (URL template, reason): {port} is the test web's, so a leak would reach it and be seen.
ATTACKS = [
    ("http://169.254.169.254/latest/meta-data/", "metadata"),
    ("http://[fd00:ec2::254]/latest/meta-data/", "metadata"),
    ("http://10.0.0.1/", "private"),
    ("http://192.168.0.1/", "private"),
    ("http://100.64.0.1/", "shared"),
    ("http://[fe80::1]/", "link_local"),
    ("http://0.0.0.0:{port}/", "unspecified"),
    ("http://224.0.0.1/", "multicast"),
    ("http://240.0.0.1/", "reserved"),
    ("http://127.0.0.2:{port}/", "loopback"),
    ("http://localhost:{port}/", "loopback"),
    ("http://2130706433:{port}/", "loopback"),
    ("http://0x7f000001:{port}/", "loopback"),
    ("http://0177.0.0.1:{port}/", "loopback"),
    ("http://127.1:{port}/", "loopback"),
    ("http://[::1]:{port}/", "loopback"),
    ("http://[::ffff:127.0.0.1]:{port}/", "loopback"),
    ("http://other.test:{port}/", "loopback"),  # a name that resolves to loopback, not a seed
]
# Redirect targets differ from the links' (the frontier would drop a URL already seen).
REDIRECTS = {f"/r/{i}": url + "redirected" for i, (url, _) in enumerate(ATTACKS)}


def run(web: TestWeb, tmp_path, *seeds: str, env_extra: dict[str, str] | None = None,
        **settings: object) -> CrawlResult:
    command, env = crawl_command(web, tmp_path, "seeds=" + ",".join(seeds), "scope=all",
                                 ROBOTSTXT_OBEY=False, **settings)
    env.update(env_extra or {})
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
                          check=False)
    return CrawlResult(done.returncode, done.stdout + done.stderr, LocalStore(tmp_path / "store"))


def refused(result: CrawlResult) -> Counter:
    prefix = "address_guard/refused/"
    return Counter({k[len(prefix):]: v for k, v in result.stats.items() if k.startswith(prefix)})


def attack_page(port: int) -> bytes:
    links = "".join(f'<a href="{url.format(port=port)}">x</a>\n' for url, _ in ATTACKS)
    return f"<html><head><title>links</title></head><body>{links}</body></html>".encode()


def test_links_and_redirects_to_the_operators_network_are_refused_by_reason(tmp_path):
    site = Site("seed.test", pages=6, redirects=dict(REDIRECTS))
    with TestWeb([site, Site("other.test", pages=2)]) as web:
        site.redirects = {path: url.format(port=web.port) for path, url in REDIRECTS.items()}
        site.files = {"/links.html": ("text/html; charset=utf-8", attack_page(web.port))}
        result = run(web, tmp_path, web.url("seed.test"), web.url("seed.test", "/links.html"))
        hosts = {r.host for r in web.hits()}
    assert result.returncode == 0, result.log[-3000:]
    assert hosts == {"seed.test"}  # nothing else reached the server
    stored = {r["url"] for r in result.records}
    assert {web.page_url("seed.test", i) for i in range(6)} <= stored  # the seed host's pages all crawled
    expected = Counter(reason for _, reason in ATTACKS)
    assert refused(result) == expected + expected  # once by link, once by redirect
    refusals = [line for line in result.log.splitlines() if "Address guard refused" in line]
    # Once per host: 2130706433, 0x7f000001, 0177.0.0.1 and 127.1 are all 127.0.0.1.
    assert len(refusals) == len(ATTACKS) - 3
    assert all(" INFO: " in line for line in refusals)
    assert "Traceback" not in result.log


def test_network_allow_opens_hosts_and_networks(tmp_path):
    sites = [Site("seed.test", pages=3, cross_links=["other.test", "third.test"]),
             Site("other.test", pages=2), Site("third.test", pages=2, address="127.0.0.3")]
    with TestWeb(sites) as web:
        result = run(web, tmp_path, web.url("seed.test"), NETWORK_ALLOW="other.test,127.0.0.3/32")
        hosts = {r.host for r in web.hits()}
    assert result.returncode == 0, result.log[-3000:]
    assert hosts == {"seed.test", "other.test", "third.test"}
    assert refused(result) == Counter()


def test_a_host_outside_the_seeds_is_refused_and_its_pages_never_fetched(tmp_path):
    sites = [Site("seed.test", pages=3, cross_links=["other.test"]), Site("other.test", pages=2)]
    with TestWeb(sites) as web:
        result = run(web, tmp_path, web.url("seed.test"))
        hosts = {r.host for r in web.hits()}
    assert hosts == {"seed.test"}
    assert refused(result) == Counter(loopback=1)


def test_the_seed_exception_is_its_origin_not_every_port_of_its_host(tmp_path):
    # A crawl seeded at 127.0.0.1:<port> must not reach the operator's other services on
    # 127.0.0.1 (the crawl service's own API on 6080, say); NETWORK_ALLOW can open one.
    with TestWeb([Site("service.test", pages=2)]) as service:
        seed = Site("seed.test", pages=2)
        with TestWeb([seed]) as web:
            link = f'<html><body><a href="http://127.0.0.1:{service.port}/">api</a></body></html>'
            seed.files = {"/links.html": ("text/html", link.encode())}
            start = f"http://127.0.0.1:{web.port}/links.html"
            (tmp_path / "closed").mkdir()
            (tmp_path / "opened").mkdir()
            result = run(web, tmp_path / "closed", start)
            assert service.hits() == [] and refused(result) == Counter(loopback=1)
            opened = run(web, tmp_path / "opened", start, NETWORK_ALLOW="127.0.0.1/32")
            assert len(service.hits()) > 0 and refused(opened) == Counter()
    for crawl in (result, opened):
        assert crawl.returncode == 0 and "Traceback" not in crawl.log and "] ERROR:" not in crawl.log


def test_with_a_proxy_the_target_is_checked_before_it_goes_to_the_proxy(tmp_path):
    # The test web answers absolute-form requests too, so it is the proxy here.
    site = Site("seed.test", pages=3, cross_links=["other.test"], redirects={"/r/0": "http://10.0.0.1/"})
    with TestWeb([site, Site("other.test", pages=2)]) as web:
        proxy = f"http://127.0.0.1:{web.port}"
        result = run(web, tmp_path, web.url("seed.test"), env_extra={"http_proxy": proxy})
        proxied = web.hits()
    assert result.returncode == 0, result.log[-3000:]
    assert {r.host for r in proxied} == {"seed.test"}  # the proxy saw the seed host only
    assert any(r.headers.get("Host", "").startswith("seed.test") for r in proxied)
    assert refused(result) == Counter(loopback=1, private=1)


def test_the_guard_can_be_switched_off(tmp_path):
    sites = [Site("seed.test", pages=2, cross_links=["other.test"]), Site("other.test", pages=2)]
    with TestWeb(sites) as web:
        result = run(web, tmp_path, web.url("seed.test"), NETWORK_GUARD=False)
        hosts = {r.host for r in web.hits()}
    assert hosts == {"seed.test", "other.test"} and refused(result) == Counter()


def test_a_refusal_at_connection_time_becomes_a_counted_ignore_request():
    # The answer changed between the middleware's check and the connection (rebinding):
    # the resolver refused, Scrapy raised CannotResolveHostError, the guard names why.
    crawler = get_crawler()
    crawler.stats.open_spider()
    resolver = GuardedResolver(None, DnsCache(10, 60, 60, 60), AddressPolicy(), clock=lambda: 0.0)
    resolver.cache.put("rebound.example", ["127.0.0.1"], 60, now=0.0)
    middleware = AddressGuardMiddleware(crawler, resolver.policy, resolver)
    request = Request("http://rebound.example/x")
    with pytest.raises(IgnoreRequest):
        middleware.process_exception(request, CannotResolveHostError("no results"))
    assert crawler.stats.get_value("address_guard/refused/loopback") == 1
    assert middleware.process_exception(Request("http://gone.example/"), CannotResolveHostError("x")) is None
