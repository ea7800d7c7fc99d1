"""Fetches as WARC/1.1 (ISO 28500) through warcio: the archive format crawl users' tools read.

Each record is its own gzip member in a ``.warc.gz`` file, so one page's record reads
back alone with one ranged read of (offset, length), as Common Crawl's index allows.
Per fetch a ``response`` (or ``revisit``) record holds what the server sent, as sent
(:mod:`crawler.store.wire`), and a ``request`` record what was sent; a page adds a
``conversion`` record, its cleaned text. Each file starts with a ``warcinfo`` record and
gets its CDXJ index (:mod:`crawler.store.cdxj`) under ``indexes/`` when it closes.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import io
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from crawler.store.cdxj import INDEXED_TYPES, cdxj_line
from crawler.store.files import GzipMembers, Location, RollingFile, TornRecord, iter_members, iter_records
from crawler.store.wire import Exchange, decode_content

if TYPE_CHECKING:
    from typing import BinaryIO

    from warcio.recordloader import ArcWarcRecord

    from crawler.store.files import LocalStore
    from crawler.store.s3 import S3Store

# Revisit profiles of our own: our duplicates are pages whose extracted *text* equals
# (or nearly equals) an earlier page's, while their payloads differ, so WARC 1.1's
# identical-payload-digest profile would not be true of them.
SAME_TEXT_PROFILE = "urn:politecrawler:revisit/same-text"
NEAR_TEXT_PROFILE = "urn:politecrawler:revisit/near-text"
# WARC 1.1's: a revisit answered 304, and one whose payload is byte for byte an earlier one.
NOT_MODIFIED_PROFILE = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
IDENTICAL_PROFILE = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
CONFORMS_TO = "http://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/"
INDEX_DIR = "indexes"


def payload_digest(body: bytes) -> str:
    """WARC-Payload-Digest of ``body``: base32 SHA-1, as warcio and Common Crawl write it."""
    return "sha1:" + base64.b32encode(hashlib.sha1(body).digest()).decode("ascii")


def index_name(warc_name: str) -> str:
    """``indexes/<stem>.cdxj``: where the CDXJ index of ``warc/<stem>.warc.gz`` goes."""
    stem = warc_name.rsplit("/", 1)[-1].removesuffix(".warc.gz")
    return f"{INDEX_DIR}/{stem}.cdxj"


class RawHead(StatusAndHeaders):
    """An HTTP head written to the WARC as the bytes it was: warcio's own head would be
    re-encoded, and percent-encoded where a header is not ASCII. Parsed as Latin-1 (every
    byte one character) for the readers that ask for a header."""

    def __init__(self, raw: bytes, is_request: bool = False) -> None:
        lines = raw.decode("latin-1").rstrip("\r\n").split("\r\n")
        headers = [(k.strip(), v.strip()) for k, sep, v in (line.partition(":") for line in lines[1:]) if sep]
        first, _, rest = lines[0].partition(" ")
        super().__init__(rest, headers, protocol=first)
        self.raw = raw

    def compute_headers_buffer(self, header_filter: object = None) -> None:
        self.headers_buff = self.raw


@dataclass(frozen=True)
class Referent:
    """The record a revisit repeats: its URL, and its date and record id where known."""

    url: str
    date: str = ""
    record_id: str | None = None


@dataclass(frozen=True)
class Archived:
    """Where a fetch's response (or revisit) record went, and what it is."""

    location: Location
    record_id: str
    digest: str | None
    date: str
    request_length: int  # bytes of its request record (0: none written)
    holder: Referent | None  # the record that holds its payload: itself, or what it repeats


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


class WarcFileWriter(RollingFile):
    """Appends records to ``warc/<name>-<seq>.warc.gz``; each file starts with a warcinfo
    record of ``info`` (application/warc-fields), rolls as ``RollingFile`` says, and on
    closing gets its CDXJ index. Every record goes through ``_write``: the one place a
    caller may wrap to handle a failed write."""

    def __init__(self, store: LocalStore | S3Store, name: str, roll_bytes: int, info: dict[str, str],
                 roll_seconds: float = 0, level: int = 2) -> None:
        super().__init__(store, "warc", name, "warc.gz", roll_bytes, roll_seconds)
        self.info = info
        self.level = level
        self._writer: WARCWriter | None = None
        self._index: list[str] = []

    def opened(self, file: BinaryIO) -> None:
        # warcio builds the records; each is compressed as its own member by ISA-L
        # (warcio's own gzip is zlib at level 9: 2 ms a 50 KB page, against 0.1 ms).
        self._writer = WARCWriter(GzipMembers(file, self.level), gzip=False, warc_version="WARC/1.1")
        self._index = []
        self._whole_lines = 0
        self._write(self._writer.create_warcinfo_record(self.file_name.rsplit("/", 1)[1], self.info))

    def close(self) -> None:
        """Close the file, then write its CDXJ index (sorted, as pywb reads it)."""
        name, lines = self.file_name, self._index
        was_open = self._file is not None
        super().close()
        if was_open:
            self._index = []
            write_index(self.store, index_name(name), lines)

    def mark_whole(self) -> None:
        super().mark_whole()
        self._whole_lines = len(self._index)

    def abandon(self) -> None:
        """Cut back to the last whole page (``RollingFile.abandon``), its index with it; an
        index the full disk does not take is made again by ``scrapy wacz``."""
        name, lines = self.file_name, self._index[: self._whole_lines]
        was_open = self._file is not None
        super().abandon()
        if was_open:
            self._index = []
            with contextlib.suppress(OSError):
                write_index(self.store, index_name(name), lines)

    def _write(self, record: ArcWarcRecord) -> Location:
        file = self.current()  # opening a file makes its writer (``opened``)
        assert self._writer is not None
        offset = file.tell()
        self._writer.write_record(record)
        file.flush()
        location = Location(self.file_name, offset, file.tell() - offset)
        headers = record.rec_headers
        if record.rec_type in INDEXED_TYPES:
            self._index.append(cdxj_line(
                record.rec_type, headers.get_header("WARC-Target-URI"), headers.get_header("WARC-Date"),
                record.http_headers, headers.get_header("WARC-Payload-Digest"), offset, location.length,
                self.file_name.rsplit("/", 1)[1]))
        return location

    def _headers(self, exchange: Exchange, extra: dict[str, str]) -> dict[str, str]:
        headers = {"WARC-Date": exchange.fetched_at, **extra}
        if exchange.ip_address:
            headers["WARC-IP-Address"] = exchange.ip_address
        if exchange.truncated:
            headers["WARC-Truncated"] = "unspecified"
        return headers

    def exchange(self, exchange: Exchange) -> Archived:
        """Write the ``response`` record of ``exchange`` (its entity as received) and its
        ``request`` record (WARC-Concurrent-To the response)."""
        record = self._builder().create_warc_record(
            exchange.url, "response", payload=_BodyReader(exchange.body), length=len(exchange.body),
            http_headers=RawHead(exchange.response_head), warc_headers_dict=self._headers(exchange, {}))
        archived = self._with_request(exchange, record)
        return replace(archived, holder=Referent(exchange.url, archived.date, archived.record_id))

    def revisit(self, exchange: Exchange, profile: str, refers_to: Referent | None) -> Archived:
        """Write a ``revisit`` record of ``exchange`` (its head only) under ``profile``,
        pointing at the record it repeats where known, and its ``request`` record. Its
        payload digest is given but for a 304, which has no payload."""
        extra = {"WARC-Profile": profile}
        if profile != NOT_MODIFIED_PROFILE:
            extra["WARC-Payload-Digest"] = payload_digest(exchange.body)
        if refers_to is not None:
            extra["WARC-Refers-To-Target-URI"] = refers_to.url
            if refers_to.date:
                extra["WARC-Refers-To-Date"] = refers_to.date
            if refers_to.record_id:
                extra["WARC-Refers-To"] = refers_to.record_id
        record = self._builder().create_warc_record(
            exchange.url, "revisit", http_headers=RawHead(exchange.response_head),
            warc_headers_dict=self._headers(exchange, extra))
        holder = refers_to if refers_to is not None and refers_to.date and profile in (
            IDENTICAL_PROFILE, NOT_MODIFIED_PROFILE) else None
        return replace(self._with_request(exchange, record), holder=holder)

    def _with_request(self, exchange: Exchange, record: ArcWarcRecord) -> Archived:
        headers = record.rec_headers
        record_id = headers.get_header("WARC-Record-ID")
        location = self._write(record)
        request_length = 0
        if exchange.request_head:
            request = self._builder().create_warc_record(
                exchange.url, "request", payload=_BodyReader(exchange.request_body),
                length=len(exchange.request_body), http_headers=RawHead(exchange.request_head, True),
                warc_headers_dict=self._headers(exchange, {"WARC-Concurrent-To": record_id}))
            request_length = self._write(request).length
        return Archived(location, record_id, headers.get_header("WARC-Payload-Digest"), exchange.fetched_at,
                        request_length, None)

    def conversion(self, url: str, text: str, refers_to: Archived) -> Location:
        """Write the cleaned text as a conversion record of the response ``refers_to``."""
        data = text.encode("utf-8")
        record = self._builder().create_warc_record(
            url, "conversion", payload=_BodyReader(data), length=len(data),
            warc_content_type="text/plain; charset=utf-8",
            warc_headers_dict={"WARC-Refers-To": refers_to.record_id,
                               "WARC-Concurrent-To": refers_to.record_id, "WARC-Date": refers_to.date},
        )
        return self._write(record)

    def _builder(self) -> WARCWriter:
        self.current()  # a record is built by the writer of the file it will go to
        return self._writer


def write_index(store: LocalStore | S3Store, name: str, lines: list[str]) -> None:
    """Write a CDXJ file of ``lines``, sorted, as one complete file of ``store``. A write
    that fails (no room) removes the file: an index cut short would hide the pages it
    lost from every replay, where ``scrapy wacz`` indexes a WARC file without one by
    reading it."""
    try:
        file = store.open_append(name)
        try:
            file.write("".join(line + "\n" for line in sorted(lines)).encode("utf-8"))
            file.flush()
        finally:
            file.close()
    except OSError:
        store.discard(name)
        raise
    store.finish(name)


def read_record(store: LocalStore | S3Store, location: dict | Location) -> ArcWarcRecord:
    """The WARC record at ``location``, read with one ranged read: ``record.raw_payload``
    is its entity as stored, ``record.payload`` that entity with its Content-Encoding
    undone, and the stream is closed. ``TornRecord`` if its gzip member is incomplete
    (warcio would read a cut record without a word)."""
    if isinstance(location, dict):
        location = Location(**location)
    data = store.read_range(location.file, location.offset, location.length)
    for member in iter_members(data, location.file):
        record = next(iter(ArchiveIterator(io.BytesIO(member))))
        record.raw_payload = record.raw_stream.read()
        encoding = record.http_headers.get_header("Content-Encoding") if record.http_headers else None
        record.payload = (decode_content(record.raw_payload, encoding.encode("latin-1"))
                          if encoding and record.rec_type == "response" else record.raw_payload)
        return record
    raise TornRecord(f"{location.file} at offset {location.offset}: incomplete record")


def read_page(store: LocalStore | S3Store, record: dict) -> tuple[bytes | None, str | None]:
    """(HTML, decoded as served, and cleaned text) of a page's metadata record; (None,
    None) for a duplicate, whose record says which page holds its text (``duplicate_of``)."""
    if record.get("text") is None:
        return None, None
    html = read_record(store, record["warc"]).payload
    return html, read_record(store, record["text"]).payload.decode("utf-8")


def find_record(store: LocalStore | S3Store, url: str) -> dict | None:
    """The latest metadata record of the normalised ``url`` (a scan of ``meta/``)."""
    versions = find_versions(store, url)
    return versions[-1] if versions else None


def find_versions(store: LocalStore | S3Store, url: str) -> list[dict]:
    """Every metadata record of the normalised ``url``, oldest first: one per visit (a
    revisit that found no change has a record without text of its own)."""
    return [record for record in iter_records(store) if record["url"] == url]
