"""The hostile test web (tests/hostileweb.py): bombs, endless bodies, odd headers, loops
and a UTF-16 robots.txt end bounded, counted, said once, never as a traceback."""

from __future__ import annotations

import gzip
import signal
import subprocess
import time

import pytest
from crawling import CrawlResult, crawl_command, run_crawl
from hostileweb import HostileWeb
from testweb import Site

from crawler.store.files import LocalStore

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
    stored = {record["url"] for record in result.records}
    # Every robots.txt bomb is parsed as far as 500 KiB once decoded: its host's pages are fetched.
    assert stats["robotstxt/truncated"] == len(ROBOTS_BOMBS)
    for host in ROBOTS_BOMBS:
        assert hostile.url(host, "/one") in stored
    # Three page bombs, a 50 MB close-delimited body and an endless chunked one: dropped, not failed.
    assert stats["content/dropped/too_large"] == 5
    assert stats.get("frontier/retries", 0) == 0 and stats.get("frontier/dead_letters", 0) == 0
    assert stats["sitemap/too_large"] == 2 and "Not a sitemap" not in result.log
    # Their hosts go on: their other pages are stored.
    assert {hostile.url("page-bomb", "/one"), hostile.url("no-length", "/one")} <= stored
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
    warc = b"".join(gzip.decompress(result.store.read(name)) for name in result.store.list("warc"))
    assert b"\r\nLink: </u/\xff>; rel=canonical\r\n" in warc and b"\r\nX-Note: caf\xe9 \x80\xfe\r\n" in warc
    # Said once a host, at INFO.
    assert result.log.count("said once per host") <= 8
    # Memory bounded whatever the ratio: each bomb decodes to 1 GiB.
    assert stats["memusage/max"] < 600 * MB, stats["memusage/max"] / MB


def _run_to_exit(web, tmp_path, *spider_args: str, interrupt_when=None,
                 **settings) -> tuple[CrawlResult, float]:
    """A crawl run to its end, and the seconds from its decision to close (its "Closing
    spider" line, seen as it is written, or the SIGINT sent once ``interrupt_when()``) to
    its exit."""
    command, env = crawl_command(web, tmp_path, *spider_args, **settings)
    log = tmp_path / "crawl.log"
    closing = None
    with log.open("w") as out:
        process = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 120
            while process.poll() is None and time.monotonic() < deadline:  # bounded in time
                if closing is None and interrupt_when is not None and interrupt_when():
                    process.send_signal(signal.SIGINT)
                    closing = time.monotonic()
                elif closing is None and "Closing spider" in log.read_text(errors="replace"):
                    closing = time.monotonic()
                time.sleep(0.05)
            exited = time.monotonic()
            returncode = process.wait(timeout=1)
        finally:
            process.kill()
    assert closing is not None, log.read_text()[-3000:]
    return CrawlResult(returncode, log.read_text(), LocalStore(tmp_path / "store")), exited - closing


@pytest.mark.parametrize("close_by", ["max_pages", "sigint"])
def test_a_stalled_download_does_not_hold_the_end_of_a_crawl(web_factory, hostile, tmp_path, close_by):
    web = web_factory([Site("calm.test", pages=40)])
    seeds = f"seeds={hostile.url('stall')},http://calm.test:{web.port}/"
    hostile.hits.clear()

    def stalled() -> set[str]:
        return {path for _, host, path in hostile.hits if host == "stall"} - {"/", "/robots.txt"}

    if close_by == "max_pages":
        result, seconds = _run_to_exit(web, tmp_path, seeds, "max_pages=8")
    else:
        result, seconds = _run_to_exit(web, tmp_path, seeds, interrupt_when=lambda: bool(stalled()),
                                       POLITENESS_MIN_DELAY=0.2)
    assert result.returncode == 0, result.log[-3000:]
    _no_traceback(result.log)
    assert seconds <= 10, seconds  # DOWNLOAD_CLOSE_GRACE is 5 s; DOWNLOAD_TIMEOUT 30 s, Scrapy's 180 s
    assert result.stats["download/cancelled_at_close"] == 1
    assert result.stats.get("frontier/retries", 0) == 0
    # The URL cancelled in flight spent no attempt and is fetched again on resume.
    (cancelled,) = stalled()
    hostile.hits.clear()
    resumed = run_crawl(web, tmp_path, seeds, DOWNLOAD_TIMEOUT=1, FRONTIER_RETRY_DELAYS="0.5")
    assert resumed.returncode == 0, resumed.log[-3000:]
    assert "Traceback" not in resumed.log
    assert cancelled in stalled()
