"""A torn final gzip member: the readers skip it, the repair at start cuts it."""

from __future__ import annotations

import gzip
import logging
import os
import shutil
import subprocess

import pytest
from scrapy.settings import Settings

from crawler.service.service import CrawlService, NotFound
from crawler.store.files import LocalStore, Location, SegmentWriter, TornRecord, iter_members, torn_tails
from crawler.store.index import read_metadata
from crawler.store.repair import WRITING_DIR, complete_length, cut_torn_tail, repair_local
from crawler.store.warc import WarcFileWriter, read_record
from crawler.store.wire import Exchange

RECORDS = [b'{"url": "http://a.test/%d"}\n' % i for i in range(3)]
LAST = b'{"url": "http://a.test/last", "title": "' + b"x" * 40 + b'"}\n'


def members(*payloads: bytes) -> list[bytes]:
    return [gzip.compress(p, mtime=0) for p in payloads]


def gzip_t(path) -> None:
    """Stock gzip accepts the file whole (skipped where gzip is missing)."""
    if shutil.which("gzip"):
        subprocess.run(["gzip", "-t", str(path)], check=True)


def every_cut():
    """(whole members, the last member) for each cut inside the last member."""
    whole = b"".join(members(*RECORDS))
    last = members(LAST)[0]
    return whole, last, range(1, len(last))


def test_readers_skip_a_last_member_torn_at_every_byte_offset():
    whole, last, cuts = every_cut()
    for cut in cuts:
        assert list(iter_members(whole + last[:cut], f"meta/cut-{cut}")) == RECORDS, cut
    assert list(iter_members(whole + last)) == [*RECORDS, LAST]


def test_a_torn_tail_is_counted_and_logged_once_per_file(caplog):
    whole, last, _ = every_cut()
    name = "meta/logged-once.jsonl.gz"
    with caplog.at_level(logging.WARNING, logger="crawler.store.files"):
        for _ in range(3):
            assert list(iter_members(whole + last[:9], name)) == RECORDS
    assert torn_tails[name] == 3
    said = [r.getMessage() for r in caplog.records if name in r.getMessage()]
    assert len(said) == 1 and f"at offset {len(whole)}" in said[0]


def test_readers_skip_a_torn_member_larger_than_their_window():
    big = os.urandom(200_000)  # incompressible: its member spans several 64 KiB windows
    data = b"".join(members(b"first", big))
    assert list(iter_members(data)) == [b"first", big]
    for cut in (25, 70_000, len(data) - 5):
        assert list(iter_members(data[:cut])) == [b"first"]


def test_repair_cuts_a_tail_torn_at_every_byte_offset_and_gzip_accepts_the_file(tmp_path):
    whole, last, cuts = every_cut()
    path = tmp_path / "cut.jsonl.gz"
    for cut in cuts:
        path.write_bytes(whole + last[:cut])
        with path.open("r+b") as f:
            assert complete_length(f) == len(whole), cut
            assert cut_torn_tail(f, path.name) == cut
        assert path.read_bytes() == whole
    gzip_t(path)
    with path.open("ab") as f:  # what a rerun appends after the repair reads back
        f.write(last)
    assert gzip.decompress(path.read_bytes()) == b"".join([*RECORDS, LAST])
    gzip_t(path)


def test_repair_cuts_zeros_a_power_loss_left_and_keeps_a_whole_file(tmp_path, caplog):
    whole, _, _ = every_cut()
    path = tmp_path / "zeros.jsonl.gz"
    path.write_bytes(whole + bytes(4096))
    with caplog.at_level(logging.WARNING), path.open("r+b") as f:
        assert cut_torn_tail(f, "meta/zeros.jsonl.gz") == 4096
    assert "Cut 4096 bytes off the end of meta/zeros.jsonl.gz at offset" in caplog.text
    path.write_bytes(whole)
    with path.open("r+b") as f:
        assert cut_torn_tail(f, "whole") == 0
    assert path.read_bytes() == whole


def test_opening_the_store_repairs_a_dead_writers_files_and_leaves_live_ones(tmp_path):
    dead, live, closed = (LocalStore(tmp_path) for _ in range(3))
    done = SegmentWriter(closed, "meta", "closed", "jsonl.gz", roll_bytes=0, level=2)
    done.append(RECORDS[0])
    done.close()  # closed whole: no mark left
    assert not (tmp_path / WRITING_DIR / done.file_name).exists()
    running = SegmentWriter(live, "meta", "live", "jsonl.gz", roll_bytes=0, level=2)
    running.append(RECORDS[0])
    running.current().write(members(LAST)[0][:10])  # mid-write, and still locked
    killed = SegmentWriter(dead, "meta", "dead", "jsonl.gz", roll_bytes=0, level=2)
    killed.append(RECORDS[0])
    killed.current().write(members(LAST)[0][:10])
    killed.current().flush()
    killed._file.close()  # its process dies: the lock goes, the mark stays
    LocalStore(tmp_path).recover()
    assert gzip.decompress((tmp_path / killed.file_name).read_bytes()) == RECORDS[0]
    gzip_t(tmp_path / killed.file_name)
    assert not (tmp_path / WRITING_DIR / killed.file_name).exists()
    running.current().flush()
    assert (tmp_path / running.file_name).stat().st_size > len(members(RECORDS[0])[0])  # untouched
    assert (tmp_path / WRITING_DIR / running.file_name).exists()
    running.close()
    assert repair_local(tmp_path) == 0


def test_a_torn_record_read_by_its_location_is_said_so(tmp_path):
    store = LocalStore(tmp_path)
    meta = SegmentWriter(store, "meta", "seg", "jsonl.gz", roll_bytes=0, level=2)
    location = meta.append(b'{"url": "http://a.test/"}\n')
    warc = WarcFileWriter(store, "seg", roll_bytes=0, info={"software": "test"})
    exchange = Exchange("http://a.test/", b"GET / HTTP/1.1\r\nHost: a.test\r\n\r\n", b"", 200,
                        b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n", b"<p>hi</p>", None,
                        "2026-01-01T00:00:00Z")
    record = warc.exchange(exchange).location
    meta.close()
    warc.close()
    assert read_metadata(store, location) == {"url": "http://a.test/"}
    assert read_record(store, record).payload == b"<p>hi</p>"
    for read, loc in ((read_metadata, location), (read_record, record)):
        with (tmp_path / loc.file).open("r+b") as f:
            f.truncate(loc.offset + loc.length - 3)
        with pytest.raises(TornRecord, match="incomplete record"):
            read(store, Location(loc.file, loc.offset, loc.length))


def test_the_services_page_lookup_answers_not_found_for_a_torn_record(tmp_path):
    settings = Settings({"DATA_DIR": str(tmp_path)})
    store = LocalStore(tmp_path / "crawl-data")
    meta = SegmentWriter(store, "meta", "seg", "jsonl.gz", roll_bytes=0, level=2)
    location = meta.append(b'{"url": "http://a.test/", "duplicate_of": null}\n')
    meta.close()
    service = CrawlService(settings, tmp_path, backend=None, poll_interval=1)
    service.index.add([("http://a.test/", str(store.root), location)])
    assert service.page("http://a.test/", None)[0]["url"] == "http://a.test/"
    with (store.root / location.file).open("r+b") as f:
        f.truncate(location.offset + location.length - 1)
    with pytest.raises(NotFound, match="its stored record is incomplete"):
        service.page("http://a.test/", None)
    service.registry.close()
    service.index.close()
