"""Where pages go: append-only files of gzip members under a store URI.

Each record is its own gzip member, so a file is a valid gzip stream (``zcat``
reads it whole) and any one record reads back alone from its (file, offset,
length), with one ranged read, as Common Crawl's WARC files allow. A store is a
local directory (``LocalStore``) or an S3 bucket (``crawler.store.s3.S3Store``):
files are written locally, and ``finish(name)`` is called when one is complete.

Crash consistency: a record is a whole member once ``append`` returns; ``sync``
fsyncs it (the pipeline acks a page only after that), a closed file is fsync'd
whole, and a member torn by a crash is cut when the store is next opened
(``crawler.store.repair``) and skipped, once logged, by the readers here.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import socket
import time
import zlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, ClassVar, Literal
from urllib.parse import urlsplit

from isal import isal_zlib
from scrapy.settings import BaseSettings, Settings

from crawler.store.repair import mark_writing, repair_local, unmark_writing

if TYPE_CHECKING:
    from crawler.store.s3 import S3Store

logger = logging.getLogger(__name__)

#: Torn final members the readers skipped, by file name (each logged once per process).
torn_tails: Counter[str] = Counter()
_WINDOW = 1 << 16  # input bytes handed to zlib at a time by the readers


class TornRecord(LookupError):
    """A record's gzip member is incomplete: torn by a crash (its page was never acked)."""


@dataclass(frozen=True)
class Location:
    """Where one record's gzip member lies in the store."""

    file: str  # path relative to the store root, with "/" separators
    offset: int
    length: int

    def as_dict(self) -> dict:
        return {"file": self.file, "offset": self.offset, "length": self.length}


class LocalStore:
    """A store on the local disk, rooted at a directory."""

    def __init__(self, root: str | os.PathLike) -> None:
        self.root = Path(root)

    def open_append(self, name: str) -> BinaryIO:
        """``name`` to append to, locked and marked as being written (``recover``)."""
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        file = path.open("ab")
        fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fsync_directory(path.parent)  # the new file's entry survives a power loss too
        mark_writing(self.root, name)
        return file

    #: Pages are safe once fsync'd to the local disk.
    remote: ClassVar[Literal[False]] = False  # a literal: tells the two stores apart for mypy

    def finish(self, name: str) -> None:
        """The file is closed whole: no longer one to repair."""
        unmark_writing(self.root, name)

    @property
    def writes_to(self) -> Path:
        """The local directory files are written in (where room may run out)."""
        return self.root

    def cut(self, name: str, size: int) -> None:
        """Cut ``name`` back to its first ``size`` bytes (a write that failed halfway)."""
        os.truncate(self.root / name, size)

    def discard(self, name: str) -> None:
        """Remove ``name``, a file that could not be written whole."""
        (self.root / name).unlink(missing_ok=True)
        unmark_writing(self.root, name)

    def recover(self) -> None:
        """Cut the torn tails of the files a killed run left open (``crawler.store.repair``)."""
        repair_local(self.root)

    def counts(self) -> dict[str, int]:
        return {}

    async def wait(self) -> None:
        """Until every finished file is safely stored: at once, here."""

    def read_range(self, name: str, offset: int, length: int) -> bytes:
        with (self.root / name).open("rb") as f:
            f.seek(offset)
            return f.read(length)

    def read(self, name: str) -> bytes:
        return (self.root / name).read_bytes()

    def list(self, prefix: str) -> list[str]:
        """Names of the files under ``prefix`` (a directory), sorted."""
        base = self.root / prefix
        if not base.is_dir():
            return []
        return sorted(f"{prefix}/{p.name}" for p in base.iterdir() if p.is_file())


def checked_store_uri(uri: str) -> str:
    """``STORE_URI`` as given, when its scheme is one a store is opened for (none or
    ``file``: a local directory; ``s3``); else ValueError naming it."""
    scheme = urlsplit(uri).scheme
    if scheme not in ("", "file", "s3"):
        raise ValueError(f"STORE_URI {uri!r}: unsupported scheme {scheme!r}; "
                         "use a local directory or s3://bucket/prefix")
    return uri


def open_store(uri: str, settings: BaseSettings | None = None) -> LocalStore | S3Store:
    """The store for ``STORE_URI``: a local directory (a path or ``file://``) or
    ``s3://bucket/prefix`` (Scrapy's ``AWS_*`` settings, ``STORE_SPOOL_DIR``)."""
    parts = urlsplit(checked_store_uri(uri))
    if parts.scheme in ("", "file"):
        return LocalStore(parts.path if parts.scheme == "file" else uri)
    from crawler.store.s3 import S3Store  # boto3 is imported only by crawls that use S3

    return S3Store.from_settings(uri, settings or Settings())


class RollingFile:
    """Appends to ``<kind>/<name>-<seq>.<suffix>`` under a store, starting a new file
    once the current one reaches ``roll_bytes`` or ``roll_seconds`` of age (0: no
    limit), and handing each complete file to the store (``finish``)."""

    def __init__(self, store: LocalStore | S3Store, kind: str, name: str, suffix: str,
                 roll_bytes: int, roll_seconds: float = 0) -> None:
        self.store = store
        self.kind, self.name, self.suffix = kind, name, suffix
        self.roll_bytes = roll_bytes
        self.roll_seconds = roll_seconds
        self.sequence = 0
        self.file_name = ""
        self._file: BinaryIO | None = None
        self._opened_at = 0.0
        self._whole = 0  # bytes of the current file that are whole records

    def current(self) -> BinaryIO:
        """The file to append to now (a new one when the last is full or old)."""
        file = self._file
        if (file is None or (self.roll_bytes and file.tell() >= self.roll_bytes)
                or (self.roll_seconds and time.monotonic() - self._opened_at >= self.roll_seconds)):
            self.close()
            self.file_name = f"{self.kind}/{self.name}-{self.sequence:05d}.{self.suffix}"
            self.sequence += 1
            file = self._file = self.store.open_append(self.file_name)
            self._opened_at = time.monotonic()
            self._whole = 0
            self.opened(file)
            self.mark_whole()
        return file

    def opened(self, file: BinaryIO) -> None:
        """A new file was started (a subclass may write a header record)."""

    def mark_whole(self) -> None:
        """What the current file holds now is whole records: a write that fails later is
        cut back to here (``abandon``)."""
        if self._file is not None:
            self._whole = self._file.tell()

    def abandon(self) -> None:
        """After a write that failed (no room): the current file is closed, cut back to its
        last whole record and handed to the store; the next write starts a new file, with
        a new compressor (one that failed halfway through a member stays unusable)."""
        file, self._file = self._file, None
        if file is None:
            return
        with contextlib.suppress(OSError):  # the buffer's flush may fail again: cut below it
            file.close()
        self.store.cut(self.file_name, self._whole)
        self.store.finish(self.file_name)

    def sync(self) -> None:
        """Make what was written to the current file durable (fsync)."""
        if self._file is not None:
            self._file.flush()
            os.fsync(self._file.fileno())

    def close(self) -> None:
        """Close the current file, fsync'd whole, and hand it to the store."""
        if self._file is not None:
            self.sync()
            self._file.close()
            self._file = None
            self.store.finish(self.file_name)


def fsync_directory(path: Path) -> None:
    """fsync a directory, so the files just made in it are durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def gzip_member(data: bytes | memoryview, level: int) -> bytes:
    """``data`` as one gzip member (mtime 0), compressed by ISA-L: the format stock gzip
    and zlib read, at ~10x zlib's speed for a slightly larger output (level 0-3)."""
    compressor = isal_zlib.compressobj(level, isal_zlib.DEFLATED, 16 + isal_zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush()


class GzipMembers:
    """A write-only stream over ``file`` that makes each flushed run of writes one gzip
    member (ISA-L): what a writer writes up to ``flush()`` reads back alone."""

    def __init__(self, file: BinaryIO, level: int) -> None:
        self.file = file
        self.level = level
        self._compressor: isal_zlib.Compress | None = None

    def write(self, data: bytes | memoryview) -> int:
        if self._compressor is None:
            self._compressor = isal_zlib.compressobj(self.level, isal_zlib.DEFLATED, 16 + isal_zlib.MAX_WBITS)
        self.file.write(self._compressor.compress(data))
        return len(data)

    def flush(self) -> None:
        if self._compressor is not None:
            self.file.write(self._compressor.flush())
            self._compressor = None
        self.file.flush()


class SegmentWriter(RollingFile):
    """Appends each record as one gzip member; files roll as ``RollingFile`` says."""

    def __init__(self, store: LocalStore | S3Store, kind: str, name: str, suffix: str,
                 roll_bytes: int, level: int, roll_seconds: float = 0) -> None:
        super().__init__(store, kind, name, suffix, roll_bytes, roll_seconds)
        self.level = level

    def append(self, data: bytes) -> Location:
        """Write ``data`` as one gzip member; flushed to the OS before returning."""
        file = self.current()
        member = gzip_member(data, self.level)
        offset = file.tell()
        file.write(member)
        file.flush()
        return Location(self.file_name, offset, len(member))


def segment_name() -> str:
    """A name no other run or worker uses: UTC start time, host name, process id."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    return f"{stamp}-{socket.gethostname()}-{os.getpid()}"


def iter_members(data: bytes, name: str = "") -> Iterator[bytes]:
    """The decompressed gzip members of ``data`` (the file ``name``); a torn last member
    (a writer killed mid-write, or one still writing) ends the iteration instead of
    failing it: counted in ``torn_tails`` and logged once per file. Linear in the size
    of ``data``: input goes to zlib in windows, never as the whole rest of the file."""
    view = memoryview(data)
    offset = 0
    while offset < len(view):
        start, parts = offset, []
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            while not inflater.eof and offset < len(view):
                window = view[offset:offset + _WINDOW]
                parts.append(inflater.decompress(window))
                offset += len(window) - len(inflater.unused_data)
        except zlib.error:
            pass
        if not inflater.eof:
            _torn(name, start, len(view) - start)
            return
        yield b"".join(parts)


def _torn(name: str, offset: int, size: int) -> None:
    torn_tails[name] += 1
    if torn_tails[name] == 1:
        logger.warning("Skipped the last %d bytes of %s at offset %d: an incomplete gzip member "
                       "(torn by a crash, or still being written)", size, name or "a store file", offset)


def iter_records(store: LocalStore | S3Store) -> Iterator[dict]:
    """Every page record of the store, file by file, in write order."""
    for name in store.list("meta"):
        for member in iter_members(store.read(name), name):
            for line in member.splitlines():
                if line.strip():
                    yield json.loads(line)
