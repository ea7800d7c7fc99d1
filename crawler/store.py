"""Where pages go: append-only segment files of gzip members under a store URI.

Each record is its own gzip member, so a file is a valid gzip stream (``zcat``
reads it whole) and any one record reads back alone from its (file, offset,
length), with one ranged read, as Common Crawl's WARC files allow.
"""

from __future__ import annotations

import gzip
import json
import os
import socket
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO
from urllib.parse import urlsplit


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
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        return path.open("ab")

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


def open_store(uri: str) -> LocalStore:
    """The store for ``STORE_URI``: a local directory (a path or ``file://``)."""
    parts = urlsplit(uri)
    if parts.scheme in ("", "file"):
        return LocalStore(parts.path if parts.scheme == "file" else uri)
    raise ValueError(f"STORE_URI {uri!r}: unsupported scheme {parts.scheme!r}; use a local directory")


class SegmentWriter:
    """Appends gzip members to ``<kind>/<name>-<seq>.<suffix>``, rolling files at a size."""

    def __init__(
        self, store: LocalStore, kind: str, name: str, suffix: str, roll_bytes: int, level: int
    ) -> None:
        self.store = store
        self.kind, self.name, self.suffix = kind, name, suffix
        self.roll_bytes = roll_bytes
        self.level = level
        self.sequence = 0
        self._file: BinaryIO | None = None
        self._file_name = ""
        self._size = 0

    def append(self, data: bytes) -> Location:
        """Write ``data`` as one gzip member; flushed to the OS before returning."""
        if self._file is None or (self.roll_bytes and self._size >= self.roll_bytes):
            self._roll()
        member = gzip.compress(data, compresslevel=self.level, mtime=0)
        offset = self._size
        self._file.write(member)
        self._file.flush()
        self._size += len(member)
        return Location(self._file_name, offset, len(member))

    def _roll(self) -> None:
        self.close()
        self._file_name = f"{self.kind}/{self.name}-{self.sequence:05d}.{self.suffix}"
        self.sequence += 1
        self._file = self.store.open_append(self._file_name)
        self._size = self._file.tell()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def segment_name() -> str:
    """A name no other run or worker uses: UTC start time, host name, process id."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    return f"{stamp}-{socket.gethostname()}-{os.getpid()}"


def iter_members(data: bytes) -> Iterator[bytes]:
    """The decompressed gzip members of ``data``; a member cut short (a writer killed
    mid-write) ends the iteration instead of failing it."""
    while data:
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            member = inflater.decompress(data)
        except zlib.error:
            return
        if not inflater.eof:
            return
        yield member
        data = inflater.unused_data


def iter_records(store: LocalStore) -> Iterator[dict]:
    """Every page record of the store, file by file, in write order."""
    for name in store.list("meta"):
        for member in iter_members(store.read(name)):
            for line in member.splitlines():
                if line.strip():
                    yield json.loads(line)
