"""The page store's segment files: gzip members readable alone, rolled by size."""

from __future__ import annotations

import gzip
import shutil
import subprocess

import pytest

from crawler.store.files import LocalStore, SegmentWriter, iter_members, open_store


def test_each_record_reads_back_alone_from_its_location(tmp_path):
    store = LocalStore(tmp_path)
    writer = SegmentWriter(store, "html", "seg", "html.gz", roll_bytes=0, level=2)
    payloads = [f"<p>page {i}</p>".encode() * (i + 1) for i in range(5)]
    locations = [writer.append(p) for p in payloads]
    writer.close()
    for payload, location in zip(payloads, locations, strict=True):
        member = store.read_range(location.file, location.offset, location.length)
        assert gzip.decompress(member) == payload
    # The file as a whole is one valid gzip stream.
    assert gzip.decompress((tmp_path / locations[0].file).read_bytes()) == b"".join(payloads)


@pytest.mark.parametrize("level", [0, 1, 2, 3])
def test_stock_gzip_reads_what_we_write(tmp_path, level):
    store = LocalStore(tmp_path)
    writer = SegmentWriter(store, "meta", "seg", "jsonl.gz", roll_bytes=0, level=level)
    payloads = [b"", b"x", bytes(range(256)) * 400, "caf\u00e9\n".encode() * 5000]
    for payload in payloads:
        writer.append(payload)
    writer.close()
    path = tmp_path / writer.file_name
    assert gzip.decompress(path.read_bytes()) == b"".join(payloads)  # Python's gzip (zlib)
    if shutil.which("gzip"):  # GNU gzip: every member, and the integrity check
        unzipped = subprocess.run(["gzip", "-dc", str(path)], capture_output=True, check=True).stdout
        assert unzipped == b"".join(payloads)
        subprocess.run(["gzip", "-t", str(path)], check=True)


def test_segments_roll_at_the_size_limit(tmp_path):
    store = LocalStore(tmp_path)
    writer = SegmentWriter(store, "text", "seg", "txt.gz", roll_bytes=100, level=1)
    locations = [writer.append(bytes(range(256))) for _ in range(4)]
    writer.close()
    assert len({loc.file for loc in locations}) == 4
    assert store.list("text") == sorted(loc.file for loc in locations)


def test_a_member_cut_short_ends_iteration_without_error():
    data = gzip.compress(b"one", mtime=0) + gzip.compress(b"two", mtime=0)
    cut = data + gzip.compress(b"three", mtime=0)[:10]
    assert list(iter_members(data)) == [b"one", b"two"]
    assert list(iter_members(cut)) == [b"one", b"two"]


def test_store_uri_schemes(tmp_path):
    assert open_store(str(tmp_path)).root == tmp_path
    assert open_store(f"file://{tmp_path}").root == tmp_path
    with pytest.raises(ValueError, match="unsupported scheme"):
        open_store("ftp://example.com/x")
