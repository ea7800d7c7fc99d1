"""The hostile test web (tests/hostileweb.py): bombs, endless bodies, odd headers, loops
and a UTF-16 robots.txt end bounded, counted, said once, never as a traceback."""

from __future__ import annotations

from datetime import datetime

import pytest
from hostileweb import HostileWeb
from testweb import Site

MB = 1 << 20
ROBOTS_BOMBS = ("br-bomb", "gzgz-bomb", "deflate-bomb")


@pytest.fixture(scope="module")
def hostile():
    with HostileWeb() as web:
        yield web


def _no_traceback(log: str) -> None:
    assert "Traceback" not in log, log[log.index("Traceback") - 2000:][:6000]
    errors = [line for line in log.splitlines() if "] ERROR:" in line]
    assert not errors, errors[:5]


def test_every_hostile_host_ends_bounded_counted_and_quiet(crawl, web_factory, hostile, tmp_path):
    web = web_factory([Site("calm.test", pages=40)])
    seeds = [hostile.url(host) for host in (*ROBOTS_BOMBS, "page-bomb", "no-length", "big-headers",
                                            "odd-headers", "loops", "utf16")]
    seeds.append(f"http://calm.test:{web.port}/")
    result = crawl(web, tmp_path, "seeds=" + ",".join(seeds), timeout=240,
                   SITEMAP_FOLLOW=True, MEMUSAGE_CHECK_INTERVAL_SECONDS=0.5)
    assert result.returncode == 0, result.log[-3000:]
    _no_traceback(result.log)
    stats = result.stats
    # Every robots.txt bomb is parsed as far as 500 KiB once decoded: its host's pages are fetched.
    assert stats["robotstxt/truncated"] == len(ROBOTS_BOMBS)
    stored = {record["url"] for record in result.records}
    for host in ROBOTS_BOMBS:
        assert hostile.url(host, "/one") in stored
    # Three page bombs, a 50 MB close-delimited body and an endless chunked one: dropped, not failed.
    assert stats["content/dropped/too_large"] == 5
    assert stats.get("frontier/retries", 0) == 0 and stats.get("frontier/dead_letters", 0) == 0
    assert stats["sitemap/too_large"] == 2
    assert stats["download/bad_response/headers_too_large"] == 1
    assert stats["redirect/dropped/loop"] == 1
    assert stats["redirect/dropped/max_hops"] == 1
    # The UTF-16 robots.txt is read by its BOM: its Disallow holds.
    assert stats["robotstxt/encoding/utf-16-le"] == 1
    assert not [hit for hit in hostile.hits if hit[1] == "utf16" and hit[2].startswith("/private/")]
    assert hostile.url("utf16", "/one") in stored
    assert len([url for url in stored if "calm.test" in url]) == 40
    # Header bytes that are not ASCII are stored as received (WARC header blocks are bytes).
    odd = [record for record in result.records if "odd-headers" in record["url"]]
    assert len(odd) == 1, (odd, stored)
    odd = odd[0]
    assert odd["canonical"] == hostile.url("odd-headers", "/u/%FF")
    # Said once a host, at INFO.
    assert result.log.count("said once per host") <= 8
    # Memory bounded whatever the ratio: each bomb decodes to 1 GiB.
    assert stats["memusage/max"] < 600 * MB, stats["memusage/max"] / MB


def _log_time(log: str, marker: str) -> datetime:
    line = next(line for line in log.splitlines() if marker in line)
    return datetime.strptime(line[:19], "%Y-%m-%d %H:%M:%S")


def test_a_stalled_download_does_not_hold_the_end_of_a_crawl(crawl, web_factory, hostile, tmp_path):
    web = web_factory([Site("calm.test", pages=40)])
    seeds = f"{hostile.url('stall')},http://calm.test:{web.port}/"
    result = crawl(web, tmp_path, f"seeds={seeds}", "max_pages=8", timeout=120)
    assert result.returncode == 0, result.log[-3000:]
    _no_traceback(result.log)
    closing = _log_time(result.log, "Closing spider (max_pages)")
    closed = _log_time(result.log, "Spider closed (max_pages)")
    assert (closed - closing).total_seconds() <= 10  # DOWNLOAD_TIMEOUT is 30 s, Scrapy's 180 s
    assert result.stats["download/cancelled_at_close"] == 1
    assert result.stats.get("frontier/retries", 0) == 0
