"""Pages stored in S3, over a real S3-protocol server (moto's standalone server)."""

from __future__ import annotations

import gzip
import http.client
import socket
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import boto3
from botocore.client import BaseClient
from botocore.config import Config
from testweb import Site, TestWeb

from crawler.store.files import iter_records
from crawler.store.index import PageIndex, read_metadata
from crawler.store.s3 import S3Store
from crawler.store.wacz import warc_info, write_wacz
from crawler.store.warc import index_name, payload_digest, read_page, read_record

CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
               "AWS_REGION_NAME": "us-east-1"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class FlakyProxy(ThreadingHTTPServer):
    """Forwards to the S3 server, answering 503 to the first ``failures`` uploads and
    holding every upload ``delay`` seconds (a slow store)."""

    daemon_threads = True

    def __init__(self, target: str, failures: int, delay: float = 0.0) -> None:
        self.target = target.removeprefix("http://")
        self.failures = failures
        self.delay = delay
        self.failed = 0
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Forward)


class _Forward(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: FlakyProxy

    def log_message(self, *args: object) -> None:
        pass

    def _relay(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        with self.server.lock:
            fail = self.command in ("PUT", "POST") and self.server.failed < self.server.failures
            self.server.failed += fail
        if self.command in ("PUT", "POST") and self.server.delay:
            time.sleep(self.server.delay)
        if fail:
            message = b"<Error><Code>SlowDown</Code><Message>try later</Message></Error>"
            self.send_response(503)
            self.send_header("Content-Length", str(len(message)))
            self.end_headers()
            self.wfile.write(message)
            return
        upstream = http.client.HTTPConnection(self.server.target, timeout=30)
        upstream.request(self.command, self.path, body, dict(self.headers.items()))
        answer = upstream.getresponse()
        data = answer.read()
        self.send_response(answer.status)
        for name, value in answer.getheaders():
            if name.lower() not in ("content-length", "transfer-encoding", "connection"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        upstream.close()

    do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _relay


def s3_client(endpoint: str, attempts: int = 3) -> BaseClient:
    return boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="testing",
                        aws_secret_access_key="testing", region_name="us-east-1",
                        config=Config(retries={"max_attempts": attempts, "mode": "standard"}))


def make_bucket(endpoint: str, name: str) -> None:
    s3_client(endpoint).create_bucket(Bucket=name)


def check_store(store: S3Store, expected: set[str], index: PageIndex) -> None:
    """Every expected page is in S3, readable, and found through the page index."""
    records = list(iter_records(store))
    assert {r["url"] for r in records} == expected
    for record in records:
        html, text = read_page(store, record)
        assert text and record["payload_digest"] == payload_digest(html)
        assert read_record(store, record["warc"]).rec_type == "response"
        root, location = index.find(record["url"])
        assert root == store.root
        assert read_metadata(store, location) == record


def test_pages_are_written_to_s3_and_read_back_with_ranged_reads(crawl, tmp_path, moto):
    make_bucket(moto, "pages")
    with TestWeb([Site("a.test", pages=40, page_bytes=6000)]) as web:
        result = crawl(web, tmp_path, "seeds=" + web.url("a.test"), STORE_URI="s3://pages/crawl-1",
                       AWS_ENDPOINT_URL=moto, STORE_ROLL_BYTES=40_000,
                       STORE_SPOOL_DIR=tmp_path / "spool", **CREDENTIALS)
        expected = web.reachable([web.url("a.test")])
    assert result.returncode == 0, result.log[-3000:]
    assert result.stats["store/uploaded_files"] >= 4  # rolled: several WARC and meta files
    assert result.stats["store/upload_failures"] == 0
    assert not any(p.is_file() for p in (tmp_path / "spool").rglob("*"))  # all left the spool
    store = S3Store("s3://pages/crawl-1", s3_client(moto), tmp_path / "reader-spool")
    assert all(name.startswith("warc/") for name in store.list("warc"))
    # Each WARC file's CDXJ index is uploaded with it.
    assert {index_name(name) for name in store.list("warc")} == set(store.list("indexes"))
    check_store(store, expected, PageIndex(tmp_path / "crawl-index"))
    crawl_id = warc_info(store, store.list("warc")[0])["isPartOf"]  # and a WACZ of it, from S3
    summary = write_wacz(store, crawl_id, tmp_path / "crawl.wacz", "test")
    assert summary.files == len(store.list("warc")) and summary.pages == len(expected)


def test_failing_uploads_are_retried_and_lose_nothing(crawl, tmp_path, moto):
    make_bucket(moto, "flaky")
    proxy = FlakyProxy(moto, failures=3)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    endpoint = f"http://127.0.0.1:{proxy.server_address[1]}"
    try:
        with TestWeb([Site("a.test", pages=20)]) as web:
            result = crawl(web, tmp_path, "seeds=" + web.url("a.test"), STORE_URI="s3://flaky/c",
                           AWS_ENDPOINT_URL=endpoint,
                           STORE_SPOOL_DIR=tmp_path / "spool", **CREDENTIALS)
            expected = web.reachable([web.url("a.test")])
    finally:
        proxy.shutdown()
    assert result.returncode == 0, result.log[-3000:]
    assert proxy.failed == 3
    assert result.stats["store/s3_retries"] == 3 and "retried (attempt 2 of 9)" in result.log
    assert result.stats["store/upload_failures"] == 0
    check_store(S3Store("s3://flaky/c", s3_client(moto), tmp_path / "reader-spool"), expected,
                PageIndex(tmp_path / "crawl-index"))


def test_a_file_whose_upload_gives_up_stays_spooled_and_is_uploaded_next_time(tmp_path, moto):
    make_bucket(moto, "later")
    dead = S3Store("s3://later/p", s3_client(f"http://127.0.0.1:{free_port()}", 1), tmp_path)
    member = gzip.compress(b"page bytes", mtime=0)
    with dead.open_append("meta/x.jsonl.gz") as f:
        f.write(member)
    assert not dead.upload("meta/x.jsonl.gz")
    assert dead.read("meta/x.jsonl.gz") == member  # still readable, from the spool
    with dead.open_append("meta/x.jsonl.gz") as f:
        f.write(gzip.compress(b"the next page", mtime=0)[:12])  # killed mid-record
    running = S3Store("s3://later/p", s3_client(moto), tmp_path)
    with running.open_append("meta/busy.jsonl.gz") as f:
        f.write(b"being written")
    dead._lock.close()  # its process ends; the running one goes on
    alive = S3Store("s3://later/p", s3_client(moto), tmp_path)
    alive.recover()
    assert not dead.spool.exists()  # uploaded, then the dead run's spool removed
    assert (running.spool / "meta" / "busy.jsonl.gz").read_bytes() == b"being written"  # untouched
    assert alive.list("meta") == ["meta/x.jsonl.gz"]
    assert alive.read("meta/x.jsonl.gz") == member  # its torn tail cut before the upload
    assert gzip.decompress(alive.read_range("meta/x.jsonl.gz", 0, len(member))) == b"page bytes"


def test_a_page_is_done_only_once_its_files_are_uploaded(crawl, tmp_path, moto):
    make_bucket(moto, "acks")
    dead = f"http://127.0.0.1:{free_port()}"
    options = {"STORE_URI": "s3://acks/c", "STORE_SPOOL_DIR": tmp_path / "spool", **CREDENTIALS}
    with TestWeb([Site("a.test", pages=8)]) as web:
        first = crawl(web, tmp_path, "seeds=" + web.url("a.test"), AWS_ENDPOINT_URL=dead,
                      STORE_UPLOAD_RETRIES=0, **options)
        second = crawl(web, tmp_path, "seeds=" + web.url("a.test"), AWS_ENDPOINT_URL=moto, **options)
        expected = web.reachable([web.url("a.test")])
    assert first.returncode == 0 and second.returncode == 0, second.log[-3000:]
    assert first.stats["store/upload_failures"] >= 1
    assert first.stats["frontier/leased"] == len(expected)  # stored locally, never acked
    assert "Resuming the crawl" in second.log and second.stats["frontier/leased"] == 0
    records = list(iter_records(S3Store("s3://acks/c", s3_client(moto), tmp_path / "reader")))
    stored = Counter(r["url"] for r in records)
    assert set(stored) == expected and max(stored.values()) <= 2  # the spool, and the refetch
