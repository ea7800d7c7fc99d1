"""Tests of the multi-host loopback test web (tests/testweb.py), over real HTTP: its sites, links,
pages, statuses, robots.txt, traps and ground truth (its server and its resolver have test files
of their own: test_testweb_server.py, test_testweb_loopback.py)."""

from __future__ import annotations

import sys
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # also importable when tests/ becomes a package
    sys.path.insert(0, str(HERE))

from testweb import Site, TestWeb, canonical, relative_href  # noqa: E402
from testweb_fetch import crawl, fetch, hrefs_of  # noqa: E402

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


