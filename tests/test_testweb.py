"""Tests of the multi-host loopback test web (tests/testweb.py), over real HTTP."""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import deque
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # also importable when tests/ becomes a package
    sys.path.insert(0, str(HERE))

from testweb import (  # noqa: E402
    LoopbackResolver,
    Site,
    TestWeb,
    canonical,
    demo_web,
    is_loopback,
    loopback_address,
    parse_addresses,
    relative_href,
)

from crawler.net.addresses import AddressPolicy  # noqa: E402

# No proxies (an http_proxy in the environment must not see test traffic), no redirects.
_OPENER = urllib.request.build_opener(
    urllib.request.ProxyHandler({}),
    type(
        "NoRedirect",
        (urllib.request.HTTPRedirectHandler,),
        {"redirect_request": lambda *args, **kwargs: None},
    ),
)


def fetch(
    web: TestWeb, url: str, method: str = "GET", headers: dict[str, str] | None = None
) -> tuple[int, Any, bytes]:
    """Fetch ``url`` from the web with urllib, sending its host in the Host header."""
    parts = urlsplit(url)
    site = web.site_for(parts.hostname or "")
    address = site.address if site else "127.0.0.1"
    target = f"http://{address}:{web.port}{parts.path or '/'}"
    if parts.query:
        target += "?" + parts.query
    request = urllib.request.Request(
        target, method=method, headers={"Host": parts.netloc, **(headers or {})}
    )
    try:
        with _OPENER.open(request, timeout=10) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        with error:
            return error.code, error.headers, error.read()


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self.hrefs += [v for k, v in attrs if k == "href" and v]


def hrefs_of(body: bytes) -> list[str]:
    parser = _Links()
    parser.feed(body.decode("utf-8"))
    return parser.hrefs


def crawl(
    web: TestWeb,
    seeds: list[str],
    scope: set[str] | None = None,
    trap_depth: int = 3,
    limit: int = 3000,
) -> set[str]:
    """A tiny BFS crawler over real HTTP; returns canonical URLs of 200 HTML pages."""
    queue = deque((canonical(s), 0) for s in seeds)
    seen = {url for url, _ in queue}
    found: set[str] = set()
    fetches = 0
    while queue:
        url, depth = queue.popleft()
        parts = urlsplit(url)
        if parts.port != web.port or (scope is not None and parts.hostname not in scope):
            continue
        fetches += 1
        assert fetches <= limit, "crawl did not terminate"
        status, headers, body = fetch(web, url)
        if 300 <= status < 400:
            hrefs = [headers["Location"]]
        elif status == 200 and headers["Content-Type"].startswith("text/html"):
            found.add(url)
            hrefs = hrefs_of(body)
        else:
            continue
        for href in hrefs:
            target = canonical(urljoin(url, href))
            target_depth = depth + 1 if web.is_trap(target) else 0
            if target not in seen and target_depth <= trap_depth:
                seen.add(target)
                queue.append((target, target_depth))
    return found


@pytest.fixture
def web_factory():
    webs: list[TestWeb] = []

    def make(sites: list[Site]) -> TestWeb:
        web = TestWeb(sites).start()
        webs.append(web)
        return web

    yield make
    for web in webs:
        web.stop()


# ----------------------------------------------------------------------------- pure


def test_relative_href_resolves_with_urljoin() -> None:
    assert relative_href("/", "/p/5.html") == "p/5.html"
    assert relative_href("/p/3.html", "/p/5.html") == "5.html"
    assert relative_href("/p/3.html", "/") == "../"
    assert relative_href("/", "/") == "./"
    assert relative_href("/hidden/1.html", "/p/2.html") == "../p/2.html"
    sources = ["/", "/p/3.html", "/hidden/0.html", "/cal/2024/1", "/loop/loop/"]
    targets = ["/", "/p/5.html", "/hidden/2.html", "/cal/2024/3", "/loop/"]
    for src in sources:
        for tgt in targets:
            base = "http://a.test:1234" + src
            assert urljoin(base, relative_href(src, tgt)) == "http://a.test:1234" + tgt


def test_canonical() -> None:
    assert canonical("HTTP://A.Test:81/p/1.html?utm_source=x#top") == "http://a.test:81/p/1.html"
    assert canonical("http://a.test:81") == "http://a.test:81/"
    assert canonical("http://a.test:80/x") == "http://a.test/x"
    assert canonical("http://a.test:81/s/?sessionid=3&utm_medium=y") == (
        "http://a.test:81/s/?sessionid=3"
    )
    assert canonical("http://a.test:81/s/?sessionid=3", r"sessionid|utm_.*") == (
        "http://a.test:81/s/"
    )


def test_site_validation() -> None:
    with pytest.raises(ValueError):
        Site("a.test", address="10.0.0.1")
    with pytest.raises(ValueError):
        Site("a.test", address="0.0.0.0")
    with pytest.raises(ValueError):
        TestWeb([Site("a.test"), Site("A.test")])
    with pytest.raises(ValueError):
        TestWeb([Site("m.test", mirror_of="nope.test")])


# ----------------------------------------------------------------------------- pages/links


def test_link_forms_all_resolve_to_canonical_pages(web_factory) -> None:
    web = web_factory([Site("a.test", pages=60, nav_links=24, extra_links=6)])
    pages = {web.page_url("a.test", i) for i in range(60)}
    for path, relative_form in (("/", "p/5.html"), ("/p/3.html", "5.html")):
        status, headers, body = fetch(web, web.url("a.test", path))
        assert status == 200
        assert headers["Content-Type"] == "text/html; charset=utf-8"
        assert int(headers["Content-Length"]) == len(body)
        hrefs = hrefs_of(body)
        assert len(hrefs) >= 24 + 3 + 6
        assert relative_form in hrefs
        assert any(h.startswith(f"http://a.test:{web.port}/p/") for h in hrefs)
        assert any(h.startswith("/p/") for h in hrefs)
        assert any("#" in h for h in hrefs)
        assert any("utm_source=x" in h for h in hrefs)
        base = web.url("a.test", path)
        for href in hrefs:
            assert canonical(urljoin(base, href)) in pages, href


def test_bfs_over_http_matches_ground_truth(web_factory) -> None:
    a = Site(
        "a.test",
        pages=40,
        extra_links=5,
        nav_links=10,
        cross_links=["b.test"],
        unlinked_pages=2,
        broken_links=2,
        binary_links=True,
        redirects={"/old/1.html": "/p/2.html", "/old/2.html": "/hidden/0.html"},
        statuses={"/p/7.html": 404},
    )
    b = Site("b.test", pages=12, fanout=2, cross_links=["nowhere.test", "a.test"])
    c = Site("c.test", pages=5)
    web = web_factory([a, b, c])
    seeds = [web.url("a.test")]
    truth = web.reachable(seeds)
    assert crawl(web, seeds) == truth
    url = web.url
    assert url("a.test", "/hidden/0.html") in truth  # redirect target
    assert url("a.test", "/hidden/1.html") not in truth  # unlinked
    assert url("a.test", "/old/1.html") not in truth  # redirect source
    assert url("a.test", "/p/7.html") not in truth
    assert not any("/missing/" in u or "/files/" in u for u in truth)
    assert web.page_url("b.test", 11) in truth
    assert not any("c.test" in u or "nowhere.test" in u for u in truth)
    only_a = web.reachable(seeds, {"a.test"})
    assert only_a == {u for u in truth if urlsplit(u).hostname == "a.test"}
    assert crawl(web, seeds, {"a.test"}) == only_a
    # Page 7 is a 404, so its tree children are reachable only through other links.
    assert len(only_a) < 40 + 1


def test_link_heavy_site(web_factory) -> None:
    web = web_factory([Site("heavy.test", pages=300, nav_links=280, extra_links=20)])
    for i in (0, 150, 299):
        status, _, body = fetch(web, web.page_url("heavy.test", i))
        assert status == 200
        assert len(hrefs_of(body)) >= 300
    truth = web.reachable([web.url("heavy.test")])
    assert truth == {web.page_url("heavy.test", i) for i in range(300)}


def test_default_vhost_and_unknown_host(web_factory) -> None:
    web = web_factory([Site("a.test", pages=3), Site("b.test", pages=3)])
    _, _, page = fetch(web, web.url("a.test"))
    for name in ("127.0.0.1", "localhost"):
        status, _, body = fetch(web, web.url(name))
        assert status == 200
        assert body == page
    status, _, body = fetch(web, web.url("unknown.test"))
    assert status == 404
    assert web.hits("unknown.test")[0].status == 404
    assert fetch(web, web.url("a.test", "/p/3.html"))[0] == 404  # pages 0..2 only
    assert fetch(web, web.url("a.test", "/p/0.html"))[0] == 404  # page 0 lives at /


def test_bodies_deterministic_and_page_like(web_factory) -> None:
    web = web_factory([Site("a.test", pages=5, page_bytes=8000)])
    first = fetch(web, web.page_url("a.test", 2))[2]
    assert fetch(web, web.page_url("a.test", 2))[2] == first
    assert len(first) >= 8000
    text = first.decode()
    for tag in ("<title>", "<h1>", "<nav>", "<footer>", "<script>", "<style>", "<p>"):
        assert tag in text
    other = fetch(web, web.page_url("a.test", 3))[2].decode()
    assert text.split("<main>")[1][:300] != other.split("<main>")[1][:300]


def test_head(web_factory) -> None:
    web = web_factory([Site("a.test", pages=3)])
    _, get_headers, body = fetch(web, web.url("a.test"))
    status, headers, head_body = fetch(web, web.url("a.test"), method="HEAD")
    assert status == 200
    assert head_body == b""
    assert headers["Content-Length"] == get_headers["Content-Length"] == str(len(body))
    assert web.hits("a.test")[-1].method == "HEAD"
    assert web.hits("a.test")[-1].bytes_sent == 0


def test_binary_files(web_factory) -> None:
    web = web_factory([Site("a.test", pages=2, binary_links=True), Site("b.test", pages=2)])
    status, headers, body = fetch(web, web.url("a.test", "/files/doc.pdf"), method="HEAD")
    assert (status, headers["Content-Type"], body) == (200, "application/pdf", b"")
    assert 150_000 <= int(headers["Content-Length"]) <= 250_000
    status, headers, body = fetch(web, web.url("a.test", "/files/doc.pdf"))
    assert len(body) == int(headers["Content-Length"])
    assert body.startswith(b"%PDF-")
    status, headers, body = fetch(web, web.url("a.test", "/files/img.png"))
    assert (status, headers["Content-Type"]) == (200, "image/png")
    assert body.startswith(b"\x89PNG\r\n\x1a\n")
    assert len(body) == int(headers["Content-Length"])
    assert fetch(web, web.url("b.test", "/files/doc.pdf"))[0] == 404
    assert {"/files/doc.pdf", "/files/img.png"} <= set(hrefs_of(fetch(web, web.url("a.test"))[2]))


# ----------------------------------------------------------------------------- statuses


def test_status_override_and_sequence(web_factory) -> None:
    site = Site(
        "a.test",
        pages=10,
        statuses={"/p/7.html": (429, {"Retry-After": "2"}), "/p/8.html": (200, {"X-A": "1"})},
        status_sequences={"/p/4.html": [503, (503, {"Retry-After": "1"})]},
    )
    web = web_factory([site])
    status, headers, _ = fetch(web, web.page_url("a.test", 7))
    assert (status, headers["Retry-After"]) == (429, "2")
    assert fetch(web, web.page_url("a.test", 7))[0] == 429  # persistent
    status, headers, body = fetch(web, web.page_url("a.test", 8))
    assert (status, headers["X-A"]) == (200, "1")
    assert "a.test page 8" in body.decode()
    url4 = web.page_url("a.test", 4)
    assert fetch(web, url4)[0] == 503
    status, headers, _ = fetch(web, url4)
    assert (status, headers["Retry-After"]) == (503, "1")
    status, _, body = fetch(web, url4)
    assert status == 200
    assert "a.test page 4" in body.decode()
    assert fetch(web, url4)[0] == 200
    assert [r.status for r in web.hits("a.test", "/p/4.html")] == [503, 503, 200, 200]
    web.reset()
    assert web.log == []
    assert fetch(web, url4)[0] == 503
    truth = web.reachable([web.url("a.test")])
    assert url4 in truth  # a sequence counts as its final answer
    assert web.page_url("a.test", 7) not in truth


def test_redirects(web_factory) -> None:
    site = Site("a.test", pages=5, redirects={"/old.html": "/p/3.html", "/p/4.html": "/"})
    web = web_factory([site])
    status, headers, _ = fetch(web, web.url("a.test", "/old.html"))
    assert (status, headers["Location"]) == (301, "/p/3.html")
    status, headers, _ = fetch(web, web.url("a.test", "/p/4.html"), method="HEAD")
    assert (status, headers["Location"]) == (301, "/")
    assert "/old.html" in hrefs_of(fetch(web, web.url("a.test"))[2])
    truth = web.reachable([web.url("a.test")])
    assert web.url("a.test", "/old.html") not in truth
    assert web.page_url("a.test", 4) not in truth
    assert web.page_url("a.test", 3) in truth


def test_robots(web_factory) -> None:
    robots = "User-agent: *\nDisallow: /p/\nAllow: /p/2.html\n\nUser-agent: mybot\nDisallow: /\n"
    web = web_factory(
        [
            Site("a.test", pages=8, robots_txt=robots),
            Site("b.test", pages=3),
            Site("c.test", pages=3, robots_txt="User-agent: *\nDisallow:\n", robots_status=503),
        ]
    )
    status, headers, body = fetch(web, web.url("a.test", "/robots.txt"))
    assert (status, body.decode()) == (200, robots)
    assert headers["Content-Type"].startswith("text/plain")
    assert fetch(web, web.url("b.test", "/robots.txt"))[0] == 404
    assert fetch(web, web.url("c.test", "/robots.txt"))[0] == 503
    seeds = [web.url("a.test")]
    polite = web.reachable(seeds, obey_robots=True)
    assert polite == {web.url("a.test"), web.page_url("a.test", 2)}
    assert web.reachable(seeds, obey_robots=True, user_agent="MyBot/1.0") == set()
    assert len(web.reachable(seeds)) == 8


def test_robots_rule_matching() -> None:
    web = TestWeb(
        [Site("a.test", robots_txt="User-agent: *\nDisallow: /*.pdf$\nDisallow: /x\nAllow: /x/y")]
    )
    site = web.sites[0]
    assert not web._allowed(site, "/files/doc.pdf", "", "*")
    assert web._allowed(site, "/files/doc.pdf", "v=1", "*")
    assert not web._allowed(site, "/x/z", "", "*")
    assert web._allowed(site, "/x/y/z", "", "*")
    assert web._allowed(site, "/", "", "*")


# ----------------------------------------------------------------------------- traps, mirror


def test_traps(web_factory) -> None:
    site = Site("a.test", pages=4, calendar_trap=True, session_trap=True, repeat_trap=True)
    web = web_factory([site])
    _, _, body = fetch(web, web.url("a.test", "/cal/2024/12"))
    assert "/cal/2025/1" in hrefs_of(body)
    assert fetch(web, web.url("a.test", "/cal/2024/13"))[0] == 404
    _, _, body = fetch(web, web.url("a.test", "/s/?sessionid=41"))
    assert "/s/?sessionid=42" in hrefs_of(body)
    deep = "/" + "loop/" * 12
    status, _, body = fetch(web, web.url("a.test", deep))
    assert status == 200
    assert urljoin(web.url("a.test", deep), "loop/") == web.url("a.test", deep + "loop/")
    assert "loop/" in hrefs_of(fetch(web, web.url("a.test"))[2])
    seeds = [web.url("a.test")]
    for depth in (0, 2):
        truth = web.reachable(seeds, trap_depth=depth)
        assert crawl(web, seeds, trap_depth=depth) == truth
        assert len([u for u in truth if web.is_trap(u)]) == 3 * depth
    assert web.url("a.test", "/loop/loop/") in web.reachable(seeds, trap_depth=2)
    assert not web.is_trap(web.page_url("a.test", 1))
    off = web_factory([Site("b.test", pages=4)])
    assert fetch(off, off.url("b.test", "/cal/2024/1"))[0] == 404
    assert fetch(off, off.url("b.test", "/loop/"))[0] == 404


def test_mirror(web_factory) -> None:
    web = web_factory(
        [Site("a.test", pages=20, nav_links=6, extra_links=3), Site("m.test", mirror_of="a.test")]
    )
    for i in (0, 3, 19):
        original = fetch(web, web.page_url("a.test", i))[2]
        assert fetch(web, web.page_url("m.test", i))[2] == original
        assert "http://a.test" not in original.decode()
    seeds = [web.url("m.test")]
    truth = web.reachable(seeds)
    assert truth == {web.page_url("m.test", i) for i in range(20)}
    assert crawl(web, seeds) == truth


# ----------------------------------------------------------------------------- log/timing


def test_latency_and_log(web_factory) -> None:
    web = web_factory([Site("slow.test", pages=3, latency=0.15)])
    before = time.monotonic()
    status, _, body = fetch(web, web.page_url("slow.test", 1))
    elapsed = time.monotonic() - before
    assert status == 200
    assert elapsed >= 0.15
    (record,) = web.hits("slow.test")
    assert before <= record.start <= record.end <= time.monotonic()
    assert record.end - record.start >= 0.15
    assert (record.host, record.path, record.method, record.status) == (
        "slow.test",
        "/p/1.html",
        "GET",
        200,
    )
    assert record.bytes_sent == len(body)
    assert record.client_port > 0
    assert record.headers["Host"] == f"slow.test:{web.port}"
    fetch(web, web.url("slow.test", "/p/2.html?utm_source=x"))
    assert web.hits(path="/p/2.html")[0].query == "utm_source=x"
    assert web.max_in_flight("slow.test") == 1
    assert web.min_gap("slow.test") >= 0
    assert web.min_start_gap("slow.test") >= 0.15


def test_concurrency_measures(web_factory) -> None:
    web = web_factory([Site("slow.test", pages=5, latency=0.3)])
    threads = [
        threading.Thread(target=fetch, args=(web, web.page_url("slow.test", i))) for i in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert len(web.hits("slow.test")) == 4
    assert web.max_in_flight("slow.test") >= 2
    assert web.min_gap("slow.test") < 0
    assert web.max_in_flight("other.test") == 0


def test_keep_alive_and_stop(web_factory) -> None:
    web = web_factory([Site("a.test", pages=3)])
    conn = http.client.HTTPConnection("127.0.0.1", web.port, timeout=5)
    try:
        for i in (1, 2):
            conn.request("GET", f"/p/{i}.html", headers={"Host": "a.test"})
            response = conn.getresponse()
            assert response.status == 200
            response.read()
        for _ in range(40):
            conn.request("HEAD", "/", headers={"Host": "a.test"})
            conn.getresponse().read()
        ports = {r.client_port for r in web.hits("a.test")}
        assert len(ports) == 1
        assert web.max_in_flight("a.test") == 1  # sequential requests never overlap
        assert web.min_gap("a.test") >= 0
        assert [r.method for r in web.log] == ["GET", "GET"] + ["HEAD"] * 40
        web.stop()
        with pytest.raises((OSError, http.client.HTTPException)):
            conn.request("GET", "/", headers={"Host": "a.test"})
            conn.getresponse().read()
    finally:
        conn.close()


def test_second_loopback_address(web_factory) -> None:
    try:
        web = web_factory([Site("a.test", pages=2), Site("b.test", pages=2, address="127.0.0.2")])
    except OSError as error:  # pragma: no cover - platform without 127.0.0.0/8 routing
        pytest.skip(f"cannot bind 127.0.0.2: {error}")
    assert web.addresses == ["127.0.0.1", "127.0.0.2"]
    assert fetch(web, web.url("b.test"))[0] == 200
    assert web.hits("b.test")[0].server_address == "127.0.0.2"
    env = web.subprocess_env({"PYTHONPATH": "/x", "http_proxy": "http://proxy:1"})
    assert env["PYTHONPATH"].split(os.pathsep) == [str(HERE), "/x"]
    assert "http_proxy" not in env
    assert json.loads(env["TESTWEB_ADDRESSES"])["b.test"] == "127.0.0.2"


# ----------------------------------------------------------------------------- resolver


def test_loopback_address_decisions() -> None:
    assert loopback_address("a.test") == "127.0.0.1"
    assert loopback_address("A.Test.") == "127.0.0.1"
    assert loopback_address("localhost") == "127.0.0.1"
    assert loopback_address("b.test", {"b.test": "127.0.0.2"}) == "127.0.0.2"
    assert loopback_address("127.0.0.5") == "127.0.0.5"
    assert loopback_address("example.com") is None  # needs a lookup, then checked
    assert loopback_address("10.0.0.1") is None
    with pytest.raises(ValueError):
        loopback_address("b.test", {"b.test": "192.168.0.1"})
    assert is_loopback("127.255.0.1")
    assert not is_loopback("128.0.0.1")
    assert not is_loopback("::1")
    assert not is_loopback("a.test")
    assert parse_addresses('{"B.test": "127.0.0.2"}') == {"b.test": "127.0.0.2"}
    assert parse_addresses(None) == {}
    with pytest.raises(ValueError):
        parse_addresses('{"b.test": "8.8.8.8"}')


def _result(deferred: Any) -> Any:
    box: list[Any] = []
    deferred.addBoth(box.append)
    assert box, "deferred did not fire synchronously"
    return box[0]


def test_loopback_resolver_without_reactor(monkeypatch) -> None:
    from twisted.internet.error import DNSLookupError
    from twisted.python.failure import Failure

    monkeypatch.setenv("TESTWEB_ADDRESSES", '{"b.test": "127.0.0.2"}')
    resolver = LoopbackResolver(object(), policy=AddressPolicy(allow=["127.0.0.0/8"]))
    assert _result(resolver.addresses("a.test")) == ["127.0.0.1"]
    assert _result(resolver.addresses("b.test")) == ["127.0.0.2"]
    assert _result(resolver.addresses("127.0.0.9")) == ["127.0.0.9"]
    for name in ("10.1.2.3", "0x0a010203", "8.8.8.8", "example.com"):
        failure = _result(resolver.addresses(name))
        assert isinstance(failure, Failure)
        assert failure.check(DNSLookupError)


_PROBE = """
import json, sys
import scrapy
from scrapy.crawler import CrawlerProcess

port = int(sys.argv[1])
out = []

class Probe(scrapy.Spider):
    name = "probe"

    async def start(self):
        for url in (f"http://a.test:{port}/", f"http://b.test:{port}/p/1.html",
                    "http://10.255.255.1/"):
            yield scrapy.Request(url, errback=self.failed, dont_filter=True)

    def parse(self, response):
        out.append([response.url, response.status])

    def failed(self, failure):
        out.append([failure.request.url, type(failure.value).__name__])

process = CrawlerProcess({
    "TWISTED_DNS_RESOLVER": "testweb.LoopbackResolver", "LOG_LEVEL": "ERROR",
    "NETWORK_ALLOW": ["127.0.0.0/8"],  # the test web's hosts, loopback all
    "ROBOTSTXT_OBEY": False, "RETRY_ENABLED": False, "TELNETCONSOLE_ENABLED": False,
})
process.crawl(Probe)
process.start()
print(json.dumps(sorted(out)))
"""


def test_scrapy_subprocess_uses_loopback_resolver(web_factory, tmp_path) -> None:
    web = web_factory([Site("a.test", pages=3), Site("b.test", pages=3)])
    script = tmp_path / "probe.py"
    script.write_text(_PROBE)
    result = subprocess.run(
        [sys.executable, str(script), str(web.port)],
        env=web.subprocess_env(),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    out = dict(json.loads(result.stdout.strip().splitlines()[-1]))
    assert out[web.url("a.test")] == 200
    assert out[web.page_url("b.test", 1)] == 200
    assert out["http://10.255.255.1/"] != 200  # refused, never sent off the machine
    assert {r.host for r in web.log} == {"a.test", "b.test"}


# ----------------------------------------------------------------------------- demo / CLI


def test_demo_web() -> None:
    with demo_web(0) as web:
        assert [s.host for s in web.sites] == ["127.0.0.1", "b.test", "c.test"]
        truth = web.reachable([web.url("127.0.0.1")], {"127.0.0.1"})
        assert len(truth) == 100
        assert fetch(web, web.url("127.0.0.1", "/p/99.html"))[0] == 200
        assert len(web.reachable([web.url("127.0.0.1")])) == 200


def test_cli_serves_and_exits_on_sigterm() -> None:
    process = subprocess.Popen(
        [sys.executable, str(HERE / "testweb.py"), "--port", "0", "--hosts", "2", "--pages", "10"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        lines = [process.stdout.readline() for _ in range(2)]
        seed = lines[1].split("seed: ", 1)[1].strip()
        assert seed.startswith("http://127.0.0.1:")
        with _OPENER.open(seed, timeout=10) as response:
            assert response.status == 200
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=5)
