"""The WARC files as an archivist reads them: what went over the wire, with warcio and cdxj-indexer."""

from __future__ import annotations

import gzip
import http.client
import io
import json
import shutil
import socket
import subprocess
import sys
import zipfile
from collections import Counter
from importlib.metadata import version

import pytest
from archive_site import PAGES, PDF, ROBOTS, crawl_site, run_crawl, scrapy_env
from archive_tools import Browser, Wayback, tool
from raw_http import BODY, RawServer
from scrapy import __version__ as scrapy_version
from scrapy.settings import Settings
from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeadersParser

from crawler.service.backends import LocalBackend
from crawler.service.service import CrawlService
from crawler.store.cdxj import index_warc
from crawler.store.files import LocalStore
from crawler.store.wacz import replay_lines
from crawler.store.warc import (
    IDENTICAL_PROFILE,
    NOT_MODIFIED_PROFILE,
    WarcFileWriter,
    index_name,
    payload_digest,
    read_record,
)
from crawler.store.wire import Exchange
from crawler.urls.canonical import header_canonical


@pytest.fixture(scope="module")
def archive(tmp_path_factory):
    crawl = crawl_site(tmp_path_factory.mktemp("archive"))
    yield crawl
    crawl.site.stop()


def all_records(archive) -> list:
    records = []
    for path in archive.warc_files():
        with path.open("rb") as f:
            for record in ArchiveIterator(f):
                record.raw = record.raw_stream.read()
                record.file = path.name
                records.append(record)
    return records


def list_records(path) -> list:
    """The request and response records of one WARC file as stored, unparsed: each with
    ``head`` (its HTTP head, up to the blank line), ``raw`` (its payload) and
    ``http_headers`` (that head parsed)."""
    records = []
    with path.open("rb") as f:
        for record in ArchiveIterator(f, no_record_parse=True):
            if record.rec_type in ("request", "response"):
                head, _, record.raw = record.raw_stream.read().partition(b"\r\n\r\n")
                record.head = head + b"\r\n\r\n"
                record.http_headers = StatusAndHeadersParser([], verify=False).parse(io.BytesIO(record.head))
                records.append(record)
    return records


def served(archive, path: str) -> tuple[bytes, bytes]:
    """(Content-Encoding, body as sent) of ``path`` asked for as the crawler asks."""
    connection = http.client.HTTPConnection("127.0.0.1", archive.site.port, timeout=10)
    try:
        connection.request("GET", path, headers={"Accept-Encoding": "gzip, deflate, br, zstd"})
        answer = connection.getresponse()
        return (answer.getheader("Content-Encoding") or "").encode(), answer.read()
    finally:
        connection.close()


def test_the_crawl_ends_without_a_traceback(archive):
    assert "Traceback" not in archive.log, archive.log[-3000:]
    assert "UnicodeEncodeError" not in archive.log


def test_every_file_passes_warcio_check_and_index(archive):
    files = archive.warc_files()
    assert len(files) >= 2
    warcio = [sys.executable, "-m", "warcio.cli"]
    for path in files:
        subprocess.run([*warcio, "check", str(path)], check=True, capture_output=True, timeout=60)
        index = subprocess.run([*warcio, "index", str(path)], check=True, capture_output=True, text=True,
                               timeout=60).stdout
        assert '"warc-type": "warcinfo"' in index


def path_of(record) -> str:
    return "/" + record.rec_headers.get_header("WARC-Target-URI").split("/", 3)[3]


def test_every_fetch_has_a_request_and_a_response_record_with_the_servers_address(archive):
    records = all_records(archive)
    answers = {r.rec_headers.get_header("WARC-Record-ID"): r for r in records
               if r.rec_type in ("response", "revisit")}
    requests = [r for r in records if r.rec_type == "request"]
    tied = Counter(r.rec_headers.get_header("WARC-Concurrent-To") for r in requests)
    assert set(tied) == set(answers) and set(tied.values()) == {1}  # one request each, one answer each
    # Each request nginx answered the crawler, as many times as it did, and nothing else.
    archived = Counter((path_of(answer), answer.http_headers.get_statuscode()) for answer in answers.values())
    assert archived == Counter(archive.fetches)
    assert len(archive.fetches) >= 20 and ("/gone.html", "404") in archived
    for request in requests:
        answer = answers[request.rec_headers.get_header("WARC-Concurrent-To")]
        assert request.rec_headers.get_header("WARC-Target-URI") == answer.rec_headers.get_header(
            "WARC-Target-URI")
        assert request.http_headers.protocol == "GET"
        assert request.http_headers.get_header("Host") == f"127.0.0.1:{archive.site.port}"
        assert "gzip" in request.http_headers.get_header("Accept-Encoding")
        assert request.http_headers.get_header("User-Agent").startswith("politecrawler")
    for answer in answers.values():  # Scrapy gives no address for a download it stopped
        if not answer.rec_headers.get_header("WARC-Truncated"):
            assert answer.rec_headers.get_header("WARC-IP-Address") == "127.0.0.1"
        assert answer.rec_headers.get_header("WARC-Block-Digest")
    conversions = [r for r in records if r.rec_type == "conversion"]
    assert conversions
    for conversion in conversions:
        assert conversion.rec_headers.get_header("WARC-Concurrent-To") in answers


def test_each_stored_payload_is_the_servers_gzip_bytes(archive):
    """Every response record holds the entity body as nginx sends it (gzip for the pages,
    robots.txt and the 404 page; nginx sends its 301 page unencoded), and every revisit
    of identical payload has the digest of those bytes."""
    checked = Counter()
    for record in all_records(archive):
        if record.rec_type == "revisit":
            if record.rec_headers.get_header("WARC-Profile") == IDENTICAL_PROFILE:
                _, body = served(archive, path_of(record))
                assert record.rec_headers.get_header("WARC-Payload-Digest") == payload_digest(body)
                checked["revisit"] += 1
            continue
        if record.rec_type != "response" or record.rec_headers.get_header("WARC-Truncated"):
            continue
        status = record.http_headers.get_statuscode()
        encoding, body = served(archive, path_of(record))
        assert encoding == (b"" if status == "301" else b"gzip"), path_of(record)
        assert (record.http_headers.get_header("Content-Encoding") or "").encode() == encoding
        assert record.raw == body, path_of(record)
        assert int(record.http_headers.get_header("Content-Length")) == len(body)
        assert record.rec_headers.get_header("WARC-Payload-Digest") == payload_digest(body)
        checked[status] += 1
    # the pages, the home page, robots.txt; the redirect, the missing page; the copy, daily.html
    assert checked["200"] >= 7 and checked["301"] == checked["404"] == 1 and checked["revisit"] >= 2, checked


def test_robots_txt_the_redirect_and_the_error_page_are_archived(archive):
    records = all_records(archive)
    by_path = Counter()
    for record in records:
        if record.rec_type == "response":
            url = record.rec_headers.get_header("WARC-Target-URI")
            by_path[url.split("/", 3)[3]] += 1
            if url.endswith("/robots.txt"):
                assert gzip.decompress(record.raw) == ROBOTS
            if url.endswith("/old.html"):
                assert record.http_headers.get_statuscode() == "301"
                assert record.http_headers.get_header("Location").endswith("/a.html")
            if url.endswith("/gone.html"):
                assert record.http_headers.get_statuscode() == "404"
                assert b"404 Not Found" in gzip.decompress(record.raw)
    assert by_path["robots.txt"] >= 1
    assert by_path["old.html"] >= 1
    assert by_path["gone.html"] >= 1


def test_a_noindex_page_is_archived_but_not_stored_as_a_page(archive):
    hidden = [r for r in all_records(archive) if r.rec_type == "response"
              and r.rec_headers.get_header("WARC-Target-URI").endswith("/hidden.html")]
    assert hidden and gzip.decompress(hidden[0].raw) == PAGES["hidden.html"]
    assert not any(r["url"].endswith("/hidden.html") for r in archive.records)


def test_a_file_stopped_at_its_headers_is_archived_as_truncated(archive):
    pdf = [r for r in all_records(archive) if r.rec_type == "response"
           and r.rec_headers.get_header("WARC-Target-URI").endswith("/paper.pdf")]
    assert len(pdf) == 1
    assert pdf[0].rec_headers.get_header("WARC-Truncated") == "unspecified"
    assert pdf[0].http_headers.get_header("Content-Type") == "application/pdf"
    assert pdf[0].http_headers.get_header("Content-Length") == str(len(PDF))  # as announced
    assert len(pdf[0].raw) < len(PDF)


def test_an_identical_copy_and_an_unchanged_page_are_revisits_with_their_referents(archive):
    records = all_records(archive)
    by_id = {r.rec_headers.get_header("WARC-Record-ID"): r for r in records}
    revisits = [r for r in records if r.rec_type == "revisit"]
    kinds = Counter((path_of(r), r.rec_headers.get_header("WARC-Profile"),
                     path_of(by_id[r.rec_headers.get_header("WARC-Refers-To")])) for r in revisits)
    # The exact copy refers to the page it repeats (whichever came first); the page served
    # whole again, to itself.
    copies = [kinds[one, IDENTICAL_PROFILE, other] for one, other in (("/copy.html", "/b.html"),
                                                                       ("/b.html", "/copy.html"))]
    assert sum(copies) == 1, kinds
    assert kinds["/daily.html", IDENTICAL_PROFILE, "/daily.html"] >= 1, kinds
    assert kinds["/a.html", NOT_MODIFIED_PROFILE, "/a.html"] >= 1, kinds
    for revisit in revisits:
        headers = revisit.rec_headers
        original = by_id[headers.get_header("WARC-Refers-To")]
        assert original.rec_type == "response"
        assert headers.get_header("WARC-Refers-To-Target-URI") == original.rec_headers.get_header(
            "WARC-Target-URI")
        assert headers.get_header("WARC-Refers-To-Date") == original.rec_headers.get_header("WARC-Date")
        if headers.get_header("WARC-Profile") == IDENTICAL_PROFILE:
            assert headers.get_header("WARC-Payload-Digest") == original.rec_headers.get_header(
                "WARC-Payload-Digest")
        else:
            assert revisit.http_headers.get_statuscode() == "304"


def test_a_non_ascii_header_byte_is_stored_as_received(archive):
    records = all_records(archive)
    odd = [r for r in records if r.rec_type == "response"
           and r.rec_headers.get_header("WARC-Target-URI").endswith("/odd.html")]
    assert odd
    for record in odd:  # its head, as the archive holds it
        assert record.http_headers.get_header("Link") == "</u/\xff>; rel=canonical"
    whole = b"".join(gzip.decompress(path.read_bytes()) for path in archive.warc_files())
    assert b"\r\nLink: </u/\xff>; rel=canonical\r\n" in whole
    stored = [r for r in archive.records
              if (r["fetched_url"] or r["url"]).endswith("/odd.html") and r["text"] is not None]
    assert stored  # stored, under the canonical its Link header names (its byte percent-encoded)
    assert {r["canonical"] for r in stored} == {archive.site.url + "u/%FF"}


def test_each_files_cdxj_index_equals_cdxj_indexers(archive):
    from cdxj_indexer.main import CDXJIndexer

    for path in archive.warc_files():
        ours = (archive.tmp / "store" / index_name(f"warc/{path.name}")).read_text()
        theirs = io.StringIO()
        CDXJIndexer(output=theirs, inputs=[str(path)], sort=True).process_all()
        assert ours.splitlines() == sorted(theirs.getvalue().splitlines())
        assert ours  # not empty: each file holds responses
        with path.open("rb") as f:  # and a file left without its index is indexed alike
            assert sorted(index_warc(f, path.name)) == ours.splitlines()


def test_warcinfo_says_who_what_and_which_crawl(archive):
    agents = {record.http_headers.get_header("User-Agent") for record in all_records(archive)
              if record.rec_type == "request"}
    assert len(agents) == 1
    software = f"politecrawler/{version('scrapy-polite-crawler')} (Scrapy {scrapy_version})"
    for path in archive.warc_files():
        with path.open("rb") as f:
            first = next(iter(ArchiveIterator(f)))
            fields = dict(line.split(": ", 1) for line in first.content_stream().read().decode().splitlines())
        assert first.rec_type == "warcinfo"
        assert fields["isPartOf"] == "archive-test"
        assert fields["operator"] == "mailto:archive@example.org"
        assert fields["robots"] == "obey"
        assert fields["format"] == "WARC File Format 1.1"
        assert fields["conformsTo"].endswith("/warc-1.1/")
        assert fields["http-header-user-agent"] == next(iter(agents))  # the one the requests sent
        assert fields["software"] == software
        assert fields["hostname"] == socket.gethostname()


def test_scrapy_page_prints_the_decoded_html(archive):
    done = subprocess.run([sys.executable, "-m", "scrapy", "page", "--html", archive.site.url + "a.html",
                           "-s", f"STORE_URI={archive.tmp / 'store'}"], cwd=archive.tmp, env=scrapy_env(),
                          capture_output=True, timeout=60, check=True)
    assert done.stdout == PAGES["a.html"]


def test_the_services_page_lookup_gives_the_decoded_html_and_text(archive, tmp_path):
    """What ``GET /pages?url=`` answers (``CrawlService.page``) from records holding gzip."""
    settings = Settings()
    settings.setmodule("crawler.settings")
    settings.set("DATA_DIR", str(archive.tmp))
    service = CrawlService(settings, archive.tmp, LocalBackend(tmp_path, archive.tmp, {}), poll_interval=1)
    try:
        for name in ("index.html", "a.html", "daily.html", "copy.html"):  # the copy: b.html's
            url = archive.site.url + ("" if name == "index.html" else name)
            _, html = service.page(url, "html")
            assert html == PAGES[name], name
            _, text = service.page(url, "text")
            assert text.startswith(html.split(b"<h1>")[1].split(b"</h1>")[0].decode()), (name, text[:80])
    finally:
        service.close()


def test_a_link_header_canonical_is_parsed_from_its_bytes():
    assert header_canonical([b"</u/\xff>; rel=canonical"]) == "/u/%FF"
    assert header_canonical(["</u/\xff>; rel=canonical"]) == "/u/%FF"  # decoded as Latin-1


def test_a_head_of_any_bytes_is_written_and_read_back_as_it_was(tmp_path):
    store = LocalStore(tmp_path)
    writer = WarcFileWriter(store, "seg", roll_bytes=0, info={"software": "test"})
    head = (b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nLink: </u/\xff>; rel=canonical\r\n"
            b"X-Odd: caf\xc3\xa9 \x80\x01\r\nContent-Length: 9\r\n\r\n")
    exchange = Exchange("http://a.test/", b"GET / HTTP/1.1\r\nHost: a.test\r\n\r\n", b"", 200, head,
                        b"<p>hi</p>", "127.0.0.1", "2026-01-01T00:00:00Z")
    archived = writer.exchange(exchange)
    writer.close()
    data = gzip.decompress((tmp_path / archived.location.file).read_bytes())
    assert head + b"<p>hi</p>" in data
    record = read_record(store, archived.location)
    assert record.payload == b"<p>hi</p>"
    assert record.http_headers.get_header("Link") == "</u/\xff>; rel=canonical"
    subprocess.run([sys.executable, "-m", "warcio.cli", "check", str(tmp_path / archived.location.file)],
                   check=True, capture_output=True, timeout=60)


def test_scrapy_wacz_packages_the_crawl_and_wacz_validate_accepts_it(archive):
    output = archive.tmp / "crawl.wacz"
    done = subprocess.run([sys.executable, "-m", "scrapy", "wacz", "archive-test", "-o", str(output),
                           "-s", f"STORE_URI={archive.tmp / 'store'}"], cwd=archive.tmp, env=scrapy_env(),
                          capture_output=True, text=True, timeout=120, check=True)
    assert "WARC file(s)" in done.stderr
    with zipfile.ZipFile(output) as wacz:
        names = wacz.namelist()
        assert {f"archive/{p.name}" for p in archive.warc_files()} <= set(names)
        warcs = [name for name in names if name.endswith(".warc.gz")]
        assert all(wacz.getinfo(name).compress_type == zipfile.ZIP_STORED for name in warcs)
        pages = [json.loads(line) for line in wacz.read("pages/pages.jsonl").splitlines()]
        index = wacz.read("indexes/index.cdx").decode().splitlines()
    assert pages[0]["format"] == "json-pages-1.0"
    urls = [page["url"] for page in pages[1:]]
    # Each page stored with its text, once: not the copy (a duplicate), nor the noindex page.
    assert sorted(urls) == sorted(archive.site.url + name for name in ("", "a.html", "b.html", "odd.html",
                                                                       "daily.html"))
    assert index == sorted(index)  # the text conversion records are not in the replay index
    assert not any('"mime": "text/plain"' in line for line in index if "/robots.txt" not in line)
    checked = subprocess.run([tool("wacz"), "validate", "-f", str(output)], capture_output=True, text=True,
                             timeout=300, check=False)
    assert checked.returncode == 0 and "is valid" in checked.stdout, checked.stdout + checked.stderr
    missing = subprocess.run([sys.executable, "-m", "scrapy", "wacz", "no-such-crawl",
                              "-s", f"STORE_URI={archive.tmp / 'store'}"], cwd=archive.tmp, env=scrapy_env(),
                             capture_output=True, text=True, timeout=60, check=False)
    assert missing.returncode == 1 and "no WARC file of crawl 'no-such-crawl'" in missing.stderr


def test_a_wacz_of_files_a_killed_crawl_left_without_their_index_has_the_same_index(archive, tmp_path):
    store = tmp_path / "store"
    shutil.copytree(archive.tmp / "store", store)
    for index in (store / "indexes").iterdir():  # as if the crawl died before closing its files
        index.unlink()
    outputs = {}
    for name, root in (("whole", archive.tmp / "store"), ("unindexed", store)):
        outputs[name] = tmp_path / f"{name}.wacz"
        subprocess.run([sys.executable, "-m", "scrapy", "wacz", "archive-test", "-o", str(outputs[name]),
                        "-s", f"STORE_URI={root}"], cwd=tmp_path, env=scrapy_env(), capture_output=True,
                       timeout=120, check=True)
    with zipfile.ZipFile(outputs["whole"]) as whole, zipfile.ZipFile(outputs["unindexed"]) as unindexed:
        assert whole.read("indexes/index.cdx") == unindexed.read("indexes/index.cdx")


@pytest.fixture(scope="module")
def browser():
    with Browser() as browser:
        yield browser


def our_index(archive) -> list[str]:
    return [line for path in archive.warc_files()
            for line in (archive.tmp / "store" / index_name(f"warc/{path.name}")).read_text().splitlines()]


def html_captures(archive, index: list[str]) -> list[tuple[str, str, str]]:
    """(URL, timestamp, status) of each capture in ``index`` of a URL that nginx answered the
    crawler with HTML (not robots.txt, nor the PDF cut short): all of them, checked."""
    captures = []
    for line in index:
        _, timestamp, fields = line.split(" ", 2)
        fields = json.loads(fields)
        if fields["mime"] in ("text/html", "warc/revisit"):
            captures.append((fields["url"], timestamp, fields.get("status")))
    html = {archive.site.url + path[1:] for path, _ in archive.fetches
            if path not in ("/robots.txt", "/paper.pdf")}
    assert {url for url, _, _ in captures} == html
    return captures


def assert_replayed_as_live(browser, wayback, captures, live: dict[str, str]) -> None:
    for url, timestamp, status in captures:
        if url not in live:
            live[url] = browser.visible_text(url)
        replayed = browser.visible_text(wayback.replay_url(timestamp, url))
        assert live[url] and replayed == live[url], (url, timestamp, status, replayed[:300])


@pytest.mark.browser
def test_pywb_replays_every_capture_as_the_live_site_shows_it(archive, browser, tmp_path):
    """Every capture of a page: its first fetch (200), the redirect (301), the missing page
    (404), the identical copy and the page fetched again whole (identical-payload revisits),
    and the revisits answered 304, replayed by pywb from the index our WACZ holds, in
    chromium, shows the live site's text. (The WACZ index leaves the 304 lines out, so their
    time replays the version they confirmed; with them pywb serves the empty 304.)"""
    index = our_index(archive)
    captures = html_captures(archive, index)
    kinds = Counter((url.rsplit("/", 1)[1], status) for url, _, status in captures)
    assert kinds["copy.html", "200"] + kinds["b.html", "200"] >= 2 and kinds["daily.html", "200"] >= 2, kinds
    assert kinds["a.html", "304"] >= 1 and kinds["old.html", "301"] == 1 and kinds["gone.html", "404"] == 1
    with Wayback(tmp_path / "pywb", archive.warc_files(), replay_lines(index)) as wayback:
        assert_replayed_as_live(browser, wayback, captures, {})


@pytest.mark.browser
def test_pywb_replays_the_crawl_it_indexes_itself(archive, browser, tmp_path):
    """The WARC files given to pywb as its guide says (``wb-manager add``, which indexes them
    with pywb's own indexer): each page, the redirect, the missing page, the exact copy and
    the page served whole again replay at the time of each capture with the live site's
    text. A revisit answered 304 replays as the empty 304 it was (docs/storage.md)."""
    captures = [capture for capture in html_captures(archive, our_index(archive)) if capture[2] != "304"]
    with Wayback(tmp_path / "pywb", archive.warc_files()) as wayback:
        indexed = (wayback.directory / "collections" / "crawl" / "indexes" / "index.cdxj").read_text()
        assert indexed.count('"mime": "warc/revisit"') >= 2  # pywb's own lines, with the revisits
        assert_replayed_as_live(browser, wayback, captures, {})


def test_the_request_record_is_the_bytes_sent_and_a_chunked_body_is_stored_dechunked(tmp_path):
    with RawServer() as server:
        log = run_crawl(f"http://127.0.0.1:{server.port}/page", tmp_path, CRAWL_CONTINUOUS=False)
    assert "Traceback" not in log
    records = []
    for path in sorted((tmp_path / "store" / "warc").glob("*.warc.gz")):
        records += list_records(path)
    by_type = {}
    for record in records:
        by_type.setdefault((record.rec_type, record.rec_headers.get_header("WARC-Target-URI")), record)
    url = f"http://127.0.0.1:{server.port}/page"
    assert by_type[("request", url)].head == server.requests["/page"]  # byte for byte
    robots = f"http://127.0.0.1:{server.port}/robots.txt"
    assert by_type[("request", robots)].head == server.requests["/robots.txt"]
    response = by_type[("response", url)]
    assert response.raw == BODY  # the gzip bytes, without the chunk framing
    assert response.http_headers.get_header("Transfer-Encoding") is None
    assert response.http_headers.get_header("Content-Length") == str(len(BODY))
    assert by_type[("response", robots)].http_headers.get_statuscode() == "404"
