"""URLs strangers wrote: redirects and links to non-HTTP schemes, malformed hosts, ports
and IPv6 literals are counted (urls/rejected/<reason>) and skipped, never a traceback.
Fuzzed with Hypothesis (a bounded number of examples), then crawled for real."""

from __future__ import annotations

import subprocess

from crawling import CrawlResult, crawl_command
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scrapy import Request
from scrapy.exceptions import IgnoreRequest
from scrapy.http import HtmlResponse, Response
from scrapy.utils.response import get_meta_refresh
from scrapy.utils.test import get_crawler
from testweb import Site, TestWeb

from crawler.middlewares.redirect import SafeMetaRefreshMiddleware, SafeRedirectMiddleware, may_refresh
from crawler.store.files import LocalStore
from crawler.urls.links import LinkFollower, Scope
from crawler.urls.normalize import normalize_url
from crawler.urls.rejects import REASONS, rejection_reason

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# URL-shaped text: the parts strangers get wrong, glued in any order.
_PIECES = st.sampled_from(
    [
        "http:",
        "https:",
        "javascript:",
        "mailto:",
        "data:",
        "file:",
        "ftp:",
        "//",
        "/",
        "[",
        "]",
        "::1",
        "::ffff:127.0.0.1",
        "v1.x",
        ":",
        ":99999",
        ":80",
        ":x",
        "@",
        "%",
        "%zz",
        "%41",
        "?",
        "#",
        ".",
        "..",
        "a.test",
        "xn--",
        "-",
        " ",
        "\t",
        "\n",
        "\x00",
        "é",
        "例え",
        "0x7f000001",
        "2130706433",
        "127.1",
    ]
)
URLISH = st.one_of(st.lists(_PIECES, max_size=12).map("".join), st.text(max_size=40))


def crawler_with_stats():
    crawler = get_crawler()
    crawler.stats.open_spider()
    return crawler


@FUZZ
@given(hrefs=st.lists(URLISH, max_size=8))
def test_fuzzed_links_never_raise_and_yield_only_fetchable_urls(hrefs):
    crawler = crawler_with_stats()
    follower = LinkFollower(normalize_url, Scope("all", ["a.test"]), crawler.stats)
    for url in follower.new_links("http://a.test/dir/page.html", hrefs):
        assert normalize_url(url) == url and url.startswith(("http://", "https://"))
    rejected = [k.rpartition("/")[2] for k in crawler.stats.get_stats() if k.startswith("urls/rejected/")]
    assert set(rejected) <= set(REASONS)


@FUZZ
@given(url=URLISH)
def test_every_url_gets_a_known_reason(url):
    assert rejection_reason(url) in REASONS


@FUZZ
@given(location=URLISH, status=st.sampled_from([301, 302, 303, 307, 308]))
def test_fuzzed_redirects_are_followed_or_skipped_never_raised(location, status):
    crawler = crawler_with_stats()
    middleware = SafeRedirectMiddleware.from_crawler(crawler)
    request = Request("http://a.test/from")
    response = Response(
        request.url, status=status, headers={"Location": location.encode("utf-8")}, request=request
    )
    try:
        result = middleware.process_response(request, response)
    except IgnoreRequest:
        # Skipped for its target, or as a loop (a Location that names the page itself).
        counted = ("urls/rejected/", "redirect/dropped/")
        assert sum(v for k, v in crawler.stats.get_stats().items() if k.startswith(counted)) == 1
    else:
        assert isinstance(result, Request | Response)


@FUZZ
@given(target=URLISH)
def test_fuzzed_meta_refreshes_are_followed_or_skipped_never_raised(target):
    crawler = crawler_with_stats()
    middleware = SafeMetaRefreshMiddleware.from_crawler(crawler)
    request = Request("http://a.test/from")
    quoted = target.replace('"', "&quot;")
    body = f'<html><head><meta http-equiv="refresh" content="0; url={quoted}"></head></html>'.encode()
    response = HtmlResponse(request.url, body=body, encoding="utf-8", request=request)
    try:
        result = middleware.process_response(request, response)
    except IgnoreRequest:
        pass
    else:
        assert isinstance(result, Request | Response)


_REFRESH_TAGS = st.sampled_from(["meta", "META", "Meta", "<", ">", '"', "=", " ", "\n", "&#114;", "&#x72;",
                                  "http-equiv", "HTTP-EQUIV", "content", "0; url=/x", "Refresh", "rEfReSh",
                                  "refresh", "efresh", "r", "script", "noscript", "é", "\u00a0", "\x1b(B",
                                  '<meta http-equiv="refresh" content="0; url=/x">',
                                  "<META HTTP-EQUIV=REFRESH CONTENT='1;URL=/y'>", '<meta http-equiv="re'])


@FUZZ
@given(pieces=st.lists(_REFRESH_TAGS, max_size=30),
       encoding=st.sampled_from(["utf-8", "cp1252", "latin-1", "utf-16", "iso-2022-jp", "shift_jis"]))
def test_pages_skipped_without_decoding_hold_no_meta_refresh(pieces, encoding):
    # Scrapy's own check decides on every page may_refresh lets through; it must find
    # nothing on every page may_refresh skips.
    body = ("<html><head>" + "".join(pieces) + "</head></html>").encode(encoding, "replace")
    response = HtmlResponse("http://a.test/p", body=body, encoding=encoding)
    if not may_refresh(response):
        assert get_meta_refresh(response) == (None, None)


def test_meta_refresh_is_looked_for_only_where_the_bytes_allow_one():
    def page(body: bytes, encoding: str = "utf-8") -> HtmlResponse:
        return HtmlResponse("http://a.test/p", body=body, encoding=encoding)

    assert not may_refresh(page(b"<html><p>no redirect here</p></html>"))
    assert may_refresh(page(b'<meta http-equiv="REFRESH" content="0; url=/x">'))
    # UTF-16 writes "refresh" with other bytes between its letters: always decoded.
    assert may_refresh(page('<meta http-equiv="refresh" content="0; url=/x">'.encode("utf-16"), "utf-16"))
    request = Request("http://a.test/p")
    body = b'<html><head><meta http-equiv="Refresh" content="0; url=/there"></head></html>'
    redirected = SafeMetaRefreshMiddleware.from_crawler(crawler_with_stats()).process_response(
        request, HtmlResponse(request.url, body=body, encoding="utf-8", request=request))
    assert redirected.url == "http://a.test/there"


BAD = {
    "/r/js": ("javascript:alert(1)", "scheme"),
    "/r/mailto": ("mailto:someone@a.test", "scheme"),
    "/r/data": ("data:text/html,hi", "scheme"),
    "/r/v6": ("http://[::1/x", "bad_ipv6"),
    "/r/v6b": ("http://[zz]/x", "bad_ipv6"),
    "/r/port": ("http://a.test:99999/x", "bad_port"),
    "/r/portx": ("http://a.test:x/", "bad_port"),
    "/r/host": ("http://exa mple.test/", "bad_host"),
}
BAD_LINKS = [
    "javascript:void(0)",
    "mailto:a@b.test",
    "http://[::1/",
    "http://a.test:123456/",
    "http://a..test/",
    "ftp://a.test/file",
]


def test_a_crawl_skips_bad_redirects_and_links_counting_each(tmp_path):
    links = "".join(f'<a href="{href}">x</a>' for href in BAD_LINKS)
    site = Site(
        "a.test",
        pages=3,
        redirects={path: url for path, (url, _) in BAD.items()},
        files={"/links.html": ("text/html", f"<html><body>{links}</body></html>".encode())},
    )
    with TestWeb([site]) as web:
        command, env = crawl_command(
            web,
            tmp_path,
            f"seeds={web.url('a.test')},{web.url('a.test', '/links.html')}",
            ROBOTSTXT_OBEY=False,
        )
        done = subprocess.run(
            command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False
        )
        hits = {r.path for r in web.hits()}
    result = CrawlResult(done.returncode, done.stdout + done.stderr, LocalStore(tmp_path / "store"))
    assert result.returncode == 0, result.log[-3000:]
    assert set(BAD) <= hits  # each redirect was fetched, and its target skipped
    assert "Traceback" not in result.log and "ERROR" not in result.log
    rejected = {k: v for k, v in result.stats.items() if k.startswith("urls/rejected/")}
    assert rejected == {
        "urls/rejected/scheme": 3 + 3,
        "urls/rejected/bad_ipv6": 2 + 1,
        "urls/rejected/bad_port": 2 + 1,
        "urls/rejected/bad_host": 1 + 1,
    }
    assert len(result.records) == 4  # the three pages and the links page
