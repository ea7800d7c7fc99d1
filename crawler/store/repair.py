"""Crash repair of store files: cut a torn final gzip member.

A writer killed mid-record leaves the file's last gzip member cut short. Its page
was never acked (a page is acked only once its records are whole and fsync'd), so
it is fetched again; the torn bytes are only in the way: stock ``gzip -t`` and
``zcat`` reject the whole file, and a new member appended after them would be
unreadable. So a crawl opening the store truncates each file a dead writer left
open to its last complete member, saying at WARNING what it cut.

Which files: a local writer marks each file it appends to (``.writing/<name>``
under the store root) while it holds an exclusive ``flock`` on the file, and
removes the mark once the file is closed whole. A mark whose file nobody locks
belongs to a dead writer. An S3 spool directory whose lock is free is a dead
run's as a whole (``crawler.store.s3``), so each of its files is checked.
"""

from __future__ import annotations

import fcntl
import logging
import os
import zlib
from pathlib import Path
from typing import BinaryIO

logger = logging.getLogger(__name__)

WRITING_DIR = ".writing"  # under a local store's root: marks of the files being written
_CHUNK = 1 << 20  # bytes read, and at most decompressed, at a time


def complete_length(file: BinaryIO) -> int:
    """Bytes from the start of ``file`` that are whole gzip members (their CRC
    checked): where a torn tail, if any, begins. Reads the file once, in chunks."""
    file.seek(0)
    good = offset = 0  # end of the last whole member; file offset of ``data``
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    data = b""
    while True:  # each pass consumes input or yields output: ends at the file's end
        if not data:
            data = file.read(_CHUNK)
            if not data:
                return good
        try:
            inflater.decompress(data, _CHUNK)
        except zlib.error:
            return good
        if inflater.eof:
            good = offset + len(data) - len(inflater.unused_data)
            data, offset = inflater.unused_data, good
            inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        else:
            rest = inflater.unconsumed_tail
            offset += len(data) - len(rest)
            data = rest


def cut_torn_tail(file: BinaryIO, name: str) -> int:
    """Truncate ``file`` (open for update) to its whole members, durably; the bytes cut."""
    size = os.fstat(file.fileno()).st_size
    keep = complete_length(file)
    if keep < size:
        file.truncate(keep)
        os.fsync(file.fileno())
        logger.warning("Cut %d bytes off the end of %s at offset %d: a gzip member torn by a "
                       "crash (its page was not acked, and is fetched again)", size - keep, name, keep)
    return size - keep


def mark_writing(root: Path, name: str) -> None:
    """``name`` (its file already locked by the caller) is being written."""
    mark = root / WRITING_DIR / name
    mark.parent.mkdir(parents=True, exist_ok=True)
    mark.touch()


def unmark_writing(root: Path, name: str) -> None:
    """``name`` is closed whole."""
    (root / WRITING_DIR / name).unlink(missing_ok=True)


def repair_local(root: Path) -> int:
    """Cut the torn tails of the files dead writers left open under ``root``; the files
    cut. A file still locked is a live writer's and is left alone."""
    marks = root / WRITING_DIR
    if not marks.is_dir():
        return 0
    repaired = 0
    for mark in sorted(p for p in marks.rglob("*") if p.is_file()):
        name = mark.relative_to(marks).as_posix()
        path = root / name
        if path.is_file():
            with path.open("r+b") as file:
                try:
                    fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue  # a running writer's
                repaired += cut_torn_tail(file, name) > 0
        mark.unlink(missing_ok=True)
    return repaired


def repair_spool(directory: Path, names: list[str]) -> int:
    """Cut the torn tails of ``names``, the files of a dead run's spool ``directory``
    (its lock already taken by the caller); the files cut."""
    repaired = 0
    for name in names:
        with (directory / name).open("r+b") as file:
            repaired += cut_torn_tail(file, name) > 0
    return repaired
