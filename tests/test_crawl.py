"""End to end: `scrapy crawl web` over real loopback HTTP on a generated multi-host web."""

from __future__ import annotations

import gc
import hashlib
import weakref
from collections import Counter

from crawling import crawl_command
from testweb import Site, TestWeb

from crawler.extract.html import normalize_whitespace
from crawler.spiders.web import _freeze_the_process
from crawler.store.index import PageIndex, read_metadata
from crawler.store.warc import payload_digest, read_page, read_record


def three_host_web() -> TestWeb:
    return TestWeb([
        Site("a.test", pages=160, fanout=4, extra_links=10, nav_links=20, unlinked_pages=5,
             broken_links=3, binary_links=True, cross_links=["b.test", "out.test"]),
        Site("b.test", pages=100, fanout=3, extra_links=5, cross_links=["c.test", "out.test"],
             cross_links_every_page=True),
        Site("c.test", pages=60, fanout=2, nav_links=5, redirects={"/old": "/p/7.html"},
             cross_links=["a.test"]),
        Site("out.test", pages=20),
    ])


def test_every_reachable_in_scope_page_is_stored_exactly_once(crawl, tmp_path):
    with three_host_web() as web:
        web.sites[2].redirects["/away"] = web.url("out.test", "/p/3.html")  # leaves the scope
        seeds = [web.url("a.test"), web.url("b.test"), web.url("c.test")]
        result = crawl(web, tmp_path, "seeds=" + ",".join(seeds))
        expected = web.reachable(seeds, scope_hosts={"a.test", "b.test", "c.test"})
        out_of_scope_hits = web.hits("out.test")
        pdf_hits = web.hits("a.test", "/files/doc.pdf")
    assert result.returncode == 0, result.log[-3000:]
    assert len(expected) >= 300

    stored = Counter(record["url"] for record in result.records)
    assert set(stored) == expected
    assert max(stored.values()) == 1
    assert out_of_scope_hits == []  # neither by link nor by redirect
    assert len(pdf_hits) == 1
    stats = result.stats
    assert stats["store/pages"] == len(expected)
    assert stats["content/dropped/not_html"] == 2  # the PDF and the PNG, stopped at headers
    assert stats["links/dropped/offsite"] >= 1


def test_records_and_files_read_back(crawl, tmp_path):
    with TestWeb([Site("a.test", pages=30, broken_links=2, unlinked_pages=2)]) as web:
        result = crawl(web, tmp_path, "seeds=" + web.url("a.test"))
    assert result.returncode == 0, result.log[-3000:]
    records = result.records
    assert len(records) == 30
    for record in records:
        assert record["status"] == 200
        assert record["fetched_at"].endswith("Z")
        html, text = read_page(result.store, record)
        response = read_record(result.store, record["warc"])
        assert response.rec_type == "response"
        assert response.rec_headers.get_header("WARC-Target-URI") == record["url"]
        assert response.http_headers.get_statuscode() == "200"
        assert response.rec_headers.get_header("WARC-Payload-Digest") == payload_digest(html)
        assert record["payload_digest"] == payload_digest(html)
        conversion = read_record(result.store, record["text"])
        assert conversion.rec_type == "conversion"
        assert conversion.rec_headers.get_header("WARC-Refers-To") == response.rec_headers.get_header(
            "WARC-Record-ID")
        assert html.lstrip().startswith(b"<")
        assert text
        assert "<" not in text.split("\n")[0]
        digest = hashlib.sha256(normalize_whitespace(text).encode("utf-8")).hexdigest()
        assert record["content_sha256"] == digest
    depths = {r["url"]: r["depth"] for r in records}
    assert depths[web.url("a.test")] == 0
    assert not any("/hidden/" in url or "/missing/" in url for url in depths)
    index = PageIndex(tmp_path / "crawl-index")  # relative to the crawl's working directory
    for record in records:
        root, location = index.find(record["url"])
        assert root == str(result.store.root.resolve())
        assert read_metadata(result.store, location) == record
    assert index.find(web.url("a.test", "/hidden/")) is None


def test_max_pages_caps_the_crawl(crawl, tmp_path):
    with TestWeb([Site("a.test", pages=80)]) as web:
        result = crawl(web, tmp_path, "seeds=" + web.url("a.test"), "max_pages=25")
    assert result.returncode == 0, result.log[-3000:]
    assert len(result.records) == 25
    assert "max_pages" in result.log


def test_traps_are_cut_by_depth_and_repeated_segments(crawl, tmp_path):
    with TestWeb([Site("a.test", pages=5, calendar_trap=True, repeat_trap=True)]) as web:
        result = crawl(web, tmp_path, "seeds=" + web.url("a.test"), DEPTH_LIMIT=6)
        paths = [r.path for r in web.hits("a.test")]
    assert result.returncode == 0, result.log[-3000:]
    assert not any(path.count("loop/") >= 3 for path in paths)
    calendar = [p for p in paths if p.startswith("/cal/")]
    assert 0 < len(calendar) <= 6
    stats = result.stats
    assert stats["traps/dropped/repeated_segments"] >= 1
    assert stats["traps/dropped/depth"] >= 1


def test_a_bad_seed_stops_the_crawl_before_any_fetch(crawl, tmp_path):
    with TestWeb([Site("a.test", pages=3)]) as web:
        result = crawl(web, tmp_path, f"seeds={web.url('a.test')},ftp://files.test/x,www.example")
        hits = web.hits()
    assert result.returncode == 2
    assert "'ftp://files.test/x': scheme 'ftp' is not http or https" in result.log
    assert "'www.example': no scheme" in result.log
    assert hits == []
    assert result.records == []


def test_scrapy_page_prints_a_stored_page(crawl, tmp_path):
    import json
    import subprocess
    import sys

    with TestWeb([Site("a.test", pages=3)]) as web:
        result = crawl(web, tmp_path, "seeds=" + web.url("a.test"))
        _, env = crawl_command(web, tmp_path)
        url = web.page_url("a.test", 2)
    assert result.returncode == 0, result.log[-3000:]

    def page(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "scrapy", "page", *args, "-s",
                               f"STORE_URI={tmp_path / 'store'}"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=60, check=False)

    meta = page(url.replace("a.test", "A.Test") + "#top")  # any spelling of the URL
    assert meta.returncode == 0, meta.stderr
    assert json.loads(meta.stdout)["url"] == url
    # ...normalised as the crawl normalises, URL_DROP_PARAMS included.
    dropped = page(url + "?ref=mail", "-s", "URL_DROP_PARAMS=^ref$")
    assert dropped.returncode == 0 and json.loads(dropped.stdout)["url"] == url, dropped.stderr
    text = page("--text", url)
    stored = next(r for r in result.records if r["url"] == url)
    assert text.stdout.strip() and stored["content_sha256"] == hashlib.sha256(
        normalize_whitespace(text.stdout).encode()).hexdigest()
    assert page("--html", url).stdout.lstrip().startswith("<")
    missing = page(web.url("a.test", "/nowhere.html"))
    assert missing.returncode == 1 and "is not in" in missing.stderr


def test_a_capped_crawl_resumed_without_the_cap_stores_every_page_once(crawl, tmp_path):
    with TestWeb([Site("a.test", pages=40, fanout=4)]) as web:
        first = crawl(web, tmp_path, "seeds=" + web.url("a.test"), "max_pages=10")
        second = crawl(web, tmp_path, "seeds=" + web.url("a.test"))
        expected = web.reachable([web.url("a.test")])
    assert first.returncode == 0 and second.returncode == 0, second.log[-3000:]
    stored = Counter(r["url"] for r in second.records)
    assert set(stored) == expected and max(stored.values()) == 1


def test_a_bad_setting_stops_the_crawl_naming_it(crawl, tmp_path):
    with TestWeb([Site("a.test", pages=3)]) as web:
        result = crawl(web, tmp_path, "seeds=" + web.url("a.test"), POLITENESS_MIN_DELAY="fast")
        hits = web.hits()
    assert result.returncode == 2, result.log[-2000:]
    assert "POLITENESS_MIN_DELAY = 'fast': must be a number >= 0" in result.log
    assert "Traceback" not in result.log and "Engine slot" not in result.log
    assert hits == []


def test_pages_export_through_a_feed_with_their_html_as_base64_when_asked(crawl, tmp_path):
    import base64
    import json

    with TestWeb([Site("a.test", pages=3)]) as web:
        result = crawl(web, tmp_path, "seeds=" + web.url("a.test"), FEEDS=json.dumps(
            {str(tmp_path / "pages.jsonl"): {"format": "jsonlines"}}), FEED_PAGE_HTML=True)
    assert result.returncode == 0, result.log[-3000:]
    assert "Traceback" not in result.log
    exported = [json.loads(line) for line in (tmp_path / "pages.jsonl").read_text().splitlines()]
    assert sorted(p["url"] for p in exported) == sorted(r["url"] for r in result.records)
    assert all(base64.b64decode(p["html"]).lstrip().startswith(b"<") for p in exported)


def test_a_later_crawl_collects_what_an_earlier_one_froze():
    class Cycle:
        pass

    gc.unfreeze()
    try:
        cycle = Cycle()
        cycle.me = cycle
        ref = weakref.ref(cycle)
        _freeze_the_process()  # a crawl starts: what exists is out of the full passes
        del cycle
        gc.collect()
        assert ref() is not None
        _freeze_the_process()  # the next crawl of the process: the first one's garbage goes
        assert ref() is None
    finally:
        gc.unfreeze()
