"""Pages as WARC/1.1 (ISO 28500) through warcio: the archive format crawl users' tools read.

Each record is its own gzip member in a ``.warc.gz`` file, so one page's record reads
back alone with one ranged read of (offset, length), as Common Crawl's index allows.
"""

from __future__ import annotations

import base64
import hashlib
import io
from dataclasses import dataclass
from typing import TYPE_CHECKING

from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from crawler.store.files import GzipMembers, Location, RollingFile, TornRecord, iter_members, iter_records

if TYPE_CHECKING:
    from typing import BinaryIO

    from warcio.recordloader import ArcWarcRecord

    from crawler.store.files import LocalStore
    from crawler.store.s3 import S3Store

# Headers describing the bytes on the wire, not the decoded body stored here.
_WIRE_HEADERS = frozenset({"content-encoding", "transfer-encoding", "content-length"})
# Revisit profiles of our own: our duplicates are pages whose extracted *text* equals
# (or nearly equals) an earlier page's, while their HTML payloads may differ, so
# WARC 1.1's identical-payload-digest profile would not be true of them.
SAME_TEXT_PROFILE = "urn:politecrawler:revisit/same-text"
NEAR_TEXT_PROFILE = "urn:politecrawler:revisit/near-text"
# WARC 1.1's: a revisit answered 304, and one whose payload is byte for byte the last one.
NOT_MODIFIED_PROFILE = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
IDENTICAL_PROFILE = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"


def payload_digest(body: bytes) -> str:
    """WARC-Payload-Digest of ``body``: base32 SHA-1, as warcio and Common Crawl write it."""
    return "sha1:" + base64.b32encode(hashlib.sha1(body).digest()).decode("ascii")


@dataclass(frozen=True)
class WarcPage:
    """What a page's records are made from."""

    url: str
    status: int
    reason: str
    headers: list[tuple[str, str]]
    body: bytes
    fetched_at: str  # ISO 8601 UTC, the WARC-Date


class _BodyReader:
    """A seekable stream over a body that reads out memoryview slices: warcio digests and
    writes the body from it without a copy (a BytesIO read copies each chunk)."""

    def __init__(self, body: bytes) -> None:
        self._view = memoryview(body)
        self._pos = 0

    def read(self, size: int = -1) -> memoryview:
        start = self._pos
        end = len(self._view) if size < 0 else min(start + size, len(self._view))
        self._pos = end
        return self._view[start:end]

    def tell(self) -> int:
        return self._pos

    def seek(self, pos: int, whence: int = 0) -> int:
        self._pos = pos if whence == 0 else (self._pos + pos if whence == 1 else len(self._view) + pos)
        return self._pos


def _http_headers(page: WarcPage) -> StatusAndHeaders:
    """The HTTP response head for the decoded body: wire-level encodings are dropped
    (Scrapy decoded them) and Content-Length is the stored body's."""
    headers = [(k, v) for k, v in page.headers if k.lower() not in _WIRE_HEADERS]
    headers.append(("Content-Length", str(len(page.body))))
    return StatusAndHeaders(f"{page.status} {page.reason}".strip(), headers, protocol="HTTP/1.1")


class WarcFileWriter(RollingFile):
    """Appends records to ``warc/<name>-<seq>.warc.gz``; each file starts with a
    warcinfo record and rolls as ``RollingFile`` says."""

    def __init__(self, store: LocalStore | S3Store, name: str, roll_bytes: int, software: str,
                 roll_seconds: float = 0, level: int = 2) -> None:
        super().__init__(store, "warc", name, "warc.gz", roll_bytes, roll_seconds)
        self.software = software
        self.level = level
        self._writer: WARCWriter | None = None

    def opened(self, file: BinaryIO) -> None:
        # warcio builds the records; each is compressed as its own member by ISA-L
        # (warcio's own gzip is zlib at level 9: 2 ms a 50 KB page, against 0.1 ms).
        self._writer = WARCWriter(GzipMembers(file, self.level), gzip=False, warc_version="WARC/1.1")
        info = self._writer.create_warcinfo_record(
            self.file_name.rsplit("/", 1)[1], {"software": self.software, "format": "WARC File Format 1.1"}
        )
        self._writer.write_record(info)

    def _write(self, record: ArcWarcRecord) -> tuple[Location, str]:
        file = self.current()
        offset = file.tell()
        self._writer.write_record(record)
        file.flush()
        location = Location(self.file_name, offset, file.tell() - offset)
        return location, record.rec_headers.get_header("WARC-Record-ID")

    def response(self, page: WarcPage) -> tuple[Location, str, str]:
        """Write the response record; (location, record id, payload digest)."""
        record = self._builder().create_warc_record(
            page.url, "response", payload=_BodyReader(page.body), length=len(page.body),
            http_headers=_http_headers(page),
            warc_headers_dict={"WARC-Date": page.fetched_at},
        )
        location, record_id = self._write(record)
        return location, record_id, record.rec_headers.get_header("WARC-Payload-Digest")

    def revisit(self, page: WarcPage, refers_to_uri: str, profile: str, digest: str) -> Location:
        """Write a revisit record (a duplicate, or a page unchanged since its last visit):
        its HTTP head only, pointing at the page it repeats under ``profile``; ``digest``
        is of its own (unstored) payload (:func:`payload_digest`)."""
        headers = {"WARC-Date": page.fetched_at, "WARC-Profile": profile,
                   "WARC-Refers-To-Target-URI": refers_to_uri}
        if profile != NOT_MODIFIED_PROFILE:  # a 304 has no payload to digest
            headers["WARC-Payload-Digest"] = digest
        record = self._builder().create_warc_record(
            page.url, "revisit", http_headers=_http_headers(page), warc_headers_dict=headers)
        return self._write(record)[0]

    def conversion(self, url: str, text: str, refers_to: str, fetched_at: str) -> Location:
        """Write the cleaned text as a conversion record of the response ``refers_to``."""
        data = text.encode("utf-8")
        record = self._builder().create_warc_record(
            url, "conversion", payload=_BodyReader(data), length=len(data),
            warc_content_type="text/plain; charset=utf-8",
            warc_headers_dict={"WARC-Refers-To": refers_to, "WARC-Date": fetched_at},
        )
        return self._write(record)[0]

    def _builder(self) -> WARCWriter:
        self.current()  # a record is built by the writer of the file it will go to
        return self._writer


def read_record(store: LocalStore, location: dict | Location) -> ArcWarcRecord:
    """The WARC record at ``location``, read with one ranged read; its ``payload`` is
    read into ``record.payload`` (bytes) and the stream is closed. ``TornRecord`` if
    its gzip member is incomplete (warcio would read a cut record without a word)."""
    if isinstance(location, dict):
        location = Location(**location)
    data = store.read_range(location.file, location.offset, location.length)
    for member in iter_members(data, location.file):
        record = next(iter(ArchiveIterator(io.BytesIO(member))))
        record.payload = record.content_stream().read()
        return record
    raise TornRecord(f"{location.file} at offset {location.offset}: incomplete record")


def read_page(store: LocalStore, record: dict) -> tuple[bytes | None, str | None]:
    """(HTML as stored, cleaned text) of a page's metadata record; (None, None) for a
    duplicate, whose record says which page holds its text (``duplicate_of``)."""
    if record.get("text") is None:
        return None, None
    html = read_record(store, record["warc"]).payload
    return html, read_record(store, record["text"]).payload.decode("utf-8")


def find_record(store: LocalStore, url: str) -> dict | None:
    """The latest metadata record of the normalised ``url`` (a scan of ``meta/``)."""
    versions = find_versions(store, url)
    return versions[-1] if versions else None


def find_versions(store: LocalStore, url: str) -> list[dict]:
    """Every metadata record of the normalised ``url``, oldest first: one per visit (a
    revisit that found no change has a record without text of its own)."""
    return [record for record in iter_records(store) if record["url"] == url]
